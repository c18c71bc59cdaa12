"""Recall on mistakes verl fixed in its own scripts: lint each launch script as it was before and
after every commit of a verl clone that says it fixes something and edits an override line.

    python bench/history.py VERL_CLONE [--since 2024-01-01] [--limit N] [--out DIR] [--verl-lint CMD]

For each such commit and each `examples/` or `recipe/` script it changes (a `key=value` line
removed or added), the script before and the script after are linted against the verl tree of
the commit's parent (`git archive` into a temporary directory, `--verl-root .`, run from the
tree's root as verl's scripts are), in JSON. A pair is *caught* when the fix removes a finding
(same code and message, numbers aside). The output lists every pair, caught or not, with the
override lines the fix changed, for a human to judge which uncaught fixes were statically
visible mistakes (a renamed key, a size verl asserts on) and which were not (a reward function's
path, a memory setting tuned by hand); then one line of totals. A measurement: exit 0, or 2 when
the usage or an input is bad. Standard library only; the linter runs as a subprocess (default:
this interpreter's `-m verl_lint.cli`). Nothing of the clone is copied anywhere but the temporary
trees, which are removed. Results are kept per commit in --out (default: a temporary directory),
so a second run only lints the commits it has not seen.
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

_OVERRIDE_LINE = re.compile(r"^[+-]\s*[+~]{0,2}[A-Za-z_][\w.]*\.[\w.]+=")
_SCRIPTS = ("examples/*.sh", "recipe/*.sh", "examples/**/*.sh", "recipe/**/*.sh")


def _git(clone: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(clone), *args], capture_output=True, text=True, check=False).stdout


def fix_commits(clone: Path, since: str) -> list[tuple[str, str]]:
    """(commit, subject) of the commits that say they fix something and touch a launch script."""
    out = _git(clone, "log", "--format=%H %s", "-i", "--grep=fix", f"--since={since}", "--", *_SCRIPTS)
    return [tuple(line.split(" ", 1)) for line in out.splitlines() if " " in line]  # type: ignore[misc]


def changed_scripts(clone: Path, commit: str) -> dict[str, list[str]]:
    """The scripts the commit changes an override line of, with those lines (`-old`, `+new`)."""
    names = _git(clone, "diff", "--name-only", f"{commit}^", commit, "--", "*.sh").split()
    found = {}
    for name in names:
        if not name.startswith(("examples/", "recipe/")):
            continue
        diff = _git(clone, "diff", "-U0", f"{commit}^", commit, "--", name).splitlines()
        lines = [x for x in diff if x[:1] in "+-" and not x.startswith(("+++", "---")) and _OVERRIDE_LINE.match(x)]
        if lines:
            found[name] = lines
    return found


def lint_pair(clone: Path, commit: str, scripts: list[str], linter: list[str]) -> dict[str, dict]:
    """Each script's findings before and after the commit, on the parent's tree."""
    tmp = Path(tempfile.mkdtemp(prefix="verl-history-"))
    try:
        archive = subprocess.run(["git", "-C", str(clone), "archive", f"{commit}^"], capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(tmp)], input=archive.stdout, check=True)
        result = {}
        for name in scripts:
            sides = {}
            for side, rev in (("before", f"{commit}^"), ("after", commit)):
                text = _git(clone, "show", f"{rev}:{name}")
                if not text:
                    sides[side] = None  # the script is new, or the fix removed it
                    continue
                (tmp / name).parent.mkdir(parents=True, exist_ok=True)
                (tmp / name).write_text(text, encoding="utf-8")
                args = [*linter, "check", name, "--verl-root", ".", "--cwd", ".", "--output-format", "json"]
                run = subprocess.run([*args, "--exit-zero", "-q"], cwd=tmp, capture_output=True, text=True, check=False)
                try:
                    sides[side] = [f for f in json.loads(run.stdout) if "code" in f]
                except json.JSONDecodeError:
                    sides[side] = {"error": run.stderr.strip().splitlines()[-1:] or ["no output"]}
            result[name] = sides
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _finding(f: dict) -> tuple[str, str]:
    return f["code"], re.sub(r"\d+", "#", f["message"])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("clone", type=Path, help="a git clone of verl (full history)")
    ap.add_argument("--since", default="2024-01-01")
    ap.add_argument("--limit", type=int, default=0, help="the newest N commits only (0: all)")
    ap.add_argument("--out", type=Path, help="keep each commit's result here (default: a temporary directory)")
    ap.add_argument("--verl-lint", default=f"{sys.executable} -m verl_lint.cli", help="the linter's command")
    args = ap.parse_args(argv)
    if not (args.clone / "HEAD").exists() and not (args.clone / ".git").exists():
        print(f"history: {args.clone} is not a git clone", file=sys.stderr)
        return 2
    out = args.out or Path(tempfile.mkdtemp(prefix="verl-history-out-"))
    out.mkdir(parents=True, exist_ok=True)
    commits = fix_commits(args.clone, args.since)[: args.limit or None]
    pairs = caught = 0
    for commit, subject in commits:
        scripts = changed_scripts(args.clone, commit)
        if not scripts:
            continue
        kept = out / f"{commit[:12]}.json"
        if kept.exists():
            result = json.loads(kept.read_text(encoding="utf-8"))
        else:
            result = lint_pair(args.clone, commit, sorted(scripts), shlex.split(args.verl_lint))
            kept.write_text(json.dumps(result), encoding="utf-8")
        for name, sides in result.items():
            before, after = sides.get("before"), sides.get("after")
            if not isinstance(before, list) or not isinstance(after, list):
                continue  # a new or removed script, or the linter stopped: no pair to compare
            pairs += 1
            removed = sorted({_finding(f) for f in before} - {_finding(f) for f in after})
            caught += bool(removed)
            print(f"## {commit[:9]} {'CAUGHT' if removed else 'missed'} {name}: {subject[:100]}")
            for line in scripts[name][:12]:
                print(f"    {line[:150]}")
            for code, message in removed:
                print(f"    removed by the fix: {code} {message[:150]}")
    print(f"{len(commits)} fix commits, {pairs} script pairs, {caught} where the fix removes a finding")
    return 0


if __name__ == "__main__":
    sys.exit(main())
