"""Launch coverage: is every verl entry point a repository's scripts start analysed or reported?

    python bench/coverage.py REPO [PATH...] [--verl-root R | --verl V] [--name NAME] [--verl-lint CMD]

Three counts, compared per script:

1. the scripts: `git ls-files '*.sh'` under PATH (default: the whole repository; a tree that is
   not a git repository is walked instead, and the table says so), against what
   `verl-lint check PATH... --show-files` would lint;
2. the entry-point lines, counted INDEPENDENTLY of verl-lint's bash front end: a plain regex
   over each script's lines (comments, `echo` and `printf` lines skipped) for `-m MODULE` and
   `FILE.py`, where an entry point is a module or file of the repository (or the verl tree)
   whose source declares `@hydra.main`, or a verl/recipe module or `main_*.py` not found there;
3. verl-lint's JSON report: per script, launches analysed + VL007 (not analysable), from the
   report's closing summary object, + input errors located in the script (exit 2, on stderr).

Every script where 2 and 3 differ is printed with its lines, for a human to judge (a dropped
launch, a regex match that is no launch, a function called twice, a launch in a sourced
file). Then one markdown table row: repo | scripts (git) | scripts linted | EP lines |
analysed | VL007 | dropped, where dropped sums, per script, the entry-point lines verl-lint
does not account for. A measurement: exit 0, or 2 when the usage or an input is bad. Standard
library only; the linter runs as a subprocess (default: this interpreter's `-m verl_lint.cli`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

# `-m pkg.mod` (`grep -m 1` is no module: an entry point's source is checked), and a `something.py` word.
_MODULE = re.compile(r"(?<![\w-])-m\s+['\"]?([A-Za-z_]\w*(?:\.\w+)*)(?![\w.-])")
_FILE = re.compile(r"([^\s'\"=;|&()<>]*?([\w-]+\.py))(?![\w.])")
_MAIN_FILE = re.compile(r"^main_\w+\.py$")
_NOT_RUN = re.compile(r"^\s*(#|echo\b|printf\b)")
_HYDRA_MAIN = "hydra.main"
_INPUT_ERROR = re.compile(r"^(.+?):(\d+):\d+: error: ")
HEADER = (
    "| repo | scripts (git) | scripts linted | EP lines | analysed | VL007 | dropped "
    "|\n|---|---:|---:|---:|---:|---:|---:|"
)


class BenchError(Exception):
    """A bad usage or input: one line, exit 2."""


@dataclass
class Script:
    path: str  # relative to the repository
    entry_lines: list[tuple[int, str]] = field(default_factory=list)  # (line, text) per entry point
    analysed: int = 0
    not_analysable: list[int] = field(default_factory=list)  # VL007 lines
    input_errors: list[int] = field(default_factory=list)  # lines of `PATH:LINE:COL: error:` (exit 2)

    @property
    def accounted(self) -> int:
        return self.analysed + len(self.not_analysable) + len(self.input_errors)


def declares_hydra_main(path: Path) -> bool:
    try:
        return path.is_file() and _HYDRA_MAIN in path.read_text(errors="replace")
    except OSError:
        return False


def module_file(module: str, roots: list[Path]) -> Path | None:
    rel = Path(*module.split("."))
    for root in roots:
        for candidate in (root / rel.with_suffix(".py"), root / rel / "__main__.py"):
            if candidate.is_file():
                return candidate
    return None


def entry_points(text: str, script_dir: Path, roots: list[Path]) -> list[tuple[int, str]]:
    """The lines that start a verl entry point, by regex alone (one item per entry point)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if _NOT_RUN.match(line):
            continue
        for m in _MODULE.finditer(line):
            module = m.group(1)
            found = module_file(module, [*roots, script_dir])
            verl = module.split(".")[0] in ("verl", "recipe")
            if (verl and (found is None or declares_hydra_main(found))) or (found and declares_hydra_main(found)):
                out.append((n, line.strip()))
        for m in _FILE.finditer(line):
            word, base = m.group(1), m.group(2)
            found = (
                None if "$" in word else next((d / word for d in (script_dir, *roots) if (d / word).is_file()), None)
            )
            if (found is None and _MAIN_FILE.match(base)) or (found is not None and declares_hydra_main(found)):
                out.append((n, line.strip()))
    return out


def git_scripts(repo: Path, paths: list[str]) -> tuple[list[str], bool]:
    """The `*.sh` files git tracks under `paths`; a tree that is not a repository is walked."""
    done = subprocess.run(
        [
            "git",
            "-C",
            str(repo),
            "ls-files",
            "-z",
            "--",
            *[os.path.join(p, "*.sh") if p != "." else "*.sh" for p in paths],
        ],
        capture_output=True,
        text=True,
    )
    if done.returncode == 0:
        return sorted(os.path.normpath(p) for p in done.stdout.split("\0") if p), True
    found = []
    for p in paths:
        for dirpath, dirnames, files in os.walk(repo / p):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            found += [
                os.path.normpath(os.path.relpath(os.path.join(dirpath, f), repo)) for f in files if f.endswith(".sh")
            ]
    return sorted(found), False


def run_linter(linter: list[str], repo: Path, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([*linter, "check", *args], cwd=repo, capture_output=True, text=True)


def measure(
    repo: Path, paths: list[str], verl_args: list[str], roots: list[Path], linter: list[str]
) -> tuple[dict, list[str]]:
    """The counts of one repository, and the lines a human should read."""
    tracked, is_git = git_scripts(repo, paths)
    shown = run_linter(linter, repo, [*paths, "--show-files"])
    linted = {os.path.normpath(p) for p in shown.stdout.splitlines() if p}
    done = run_linter(linter, repo, [*paths, *verl_args, "--format", "json", "--fail-on", "never"])
    try:
        *findings, summary = json.loads(done.stdout)
    except (ValueError, TypeError):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"{repo}: the linter gave no JSON report (exit {done.returncode}): {last}") from None
    if summary.get("type") != "summary":
        raise BenchError(f"{repo}: the JSON report does not end with its summary object")
    scripts: dict[str, Script] = {}

    def script(path: str) -> Script:
        rel = os.path.normpath(os.path.relpath(os.path.join(repo, path), repo))
        return scripts.setdefault(rel, Script(rel))

    for path in tracked:
        text = (repo / path).read_text(errors="replace")
        script(path).entry_lines = entry_points(text, (repo / path).parent, [repo, *roots])
    for path, counts in summary["launches"]["by_file"].items():
        script(path).analysed = counts["analysed"]
    for d in findings:
        if d["code"] == "VL007":
            script(d["path"]).not_analysable.append(d["line"])
    for err in done.stderr.splitlines():
        m = _INPUT_ERROR.match(err)
        if m and (repo / m.group(1)).is_file():
            script(m.group(1)).input_errors.append(int(m.group(2)))
    notes = [f"not a git repository: {len(tracked)} *.sh files found by walking"] if not is_git else []
    notes += [f"tracked but not linted: {p}" for p in sorted(set(tracked) - linted)]
    notes += [f"linted but not tracked: {p}" for p in sorted(linted - set(tracked))]
    notes += [line for line in (err for err in done.stderr.splitlines() if err.strip())][:20]
    dropped = 0
    for s in sorted(scripts.values(), key=lambda s: s.path):
        if len(s.entry_lines) == s.accounted:
            continue
        dropped += max(0, len(s.entry_lines) - s.accounted)
        notes.append(
            f"{s.path}: {len(s.entry_lines)} entry-point lines, verl-lint: {s.analysed} analysed, VL007 at "
            f"{s.not_analysable}, input errors at {s.input_errors}"
        )
        notes += [f"    {n}: {text[:160]}" for n, text in s.entry_lines]
    row = {
        "scripts_git": len(tracked),
        "scripts_linted": len(linted),
        "entry_lines": sum(len(s.entry_lines) for s in scripts.values()),
        "analysed": summary["launches"]["analysed"],
        "not_analysable": summary["launches"]["not_analysable"],
        "input_errors": sum(len(s.input_errors) for s in scripts.values()),
        "dropped": dropped,
        "reasons": summary["launches"]["reasons"],
        "git": is_git,
    }
    return row, notes


def table_row(name: str, row: dict) -> str:
    git = row["scripts_git"] if row["git"] else f"{row['scripts_git']} (walked)"
    done = row["analysed"] + row["not_analysable"]
    share = f" ({100 * row['analysed'] / done:.1f}%)" if done else ""
    errors = f" + {row['input_errors']} input error" if row["input_errors"] else ""
    return (
        f"| {name} | {git} | {row['scripts_linted']} | {row['entry_lines']} | {row['analysed']}{share} | "
        f"{row['not_analysable']}{errors} | {row['dropped']} |"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="coverage", description=__doc__.split("\n\n")[0])
    ap.add_argument("repo", type=Path)
    ap.add_argument("paths", nargs="*", default=["."], help="paths inside REPO to lint (default: all)")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--verl-root", help="passed to verl-lint (relative to REPO, as verl-lint sees it)")
    g.add_argument("--verl", help="passed to verl-lint: lint against this verl release")
    ap.add_argument("--name", help="the table's name for REPO (default: its directory name)")
    ap.add_argument("--verl-lint", default=None, help="linter command (default: this Python's -m verl_lint.cli)")
    ap.add_argument("--json", action="store_true", help="print the counts as JSON instead of the notes and the row")
    a = ap.parse_args(argv)
    linter = shlex.split(a.verl_lint) if a.verl_lint else [sys.executable, "-m", "verl_lint.cli"]
    repo = a.repo.resolve()
    try:
        if not repo.is_dir():
            raise BenchError(f"{a.repo}: not a directory")
        verl_args, roots = [], []
        if a.verl_root:
            verl_args, roots = ["--verl-root", a.verl_root], [repo / a.verl_root]
        elif a.verl:
            # The unpacked release verl-lint downloads, when there: where `-m verl.x` modules are read.
            verl_args = ["--verl", a.verl]
            roots = [p for p in [Path.home() / ".cache" / "verl-lint" / "releases" / f"verl-{a.verl}"] if p.is_dir()]
        row, notes = measure(repo, [os.path.normpath(p) for p in a.paths], verl_args, roots, linter)
    except (BenchError, OSError) as exc:
        print(f"coverage: error: {exc}", file=sys.stderr)
        return 2
    name = a.name or repo.name
    if a.json:
        print(json.dumps({name: row}, indent=2))
        return 0
    print("\n".join(notes))
    print(HEADER)
    print(table_row(name, row))
    return 0


if __name__ == "__main__":
    sys.exit(main())
