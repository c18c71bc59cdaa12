"""Precision of verl-lint on five public verl projects, scored against hand-made labels.

    python bench/precision.py --clones DIR [--verl-lint CMD] [--repo NAME]... [--json]
                              [--min-error-precision PCT] [--min-warning-precision PCT]

DIR holds one clone per repository of bench/precision_pins.toml, named like the repository
(`git clone https://github.com/Jiayi-Pan/TinyZero` gives DIR/TinyZero) or owner+name. For each
clone found, the pinned commit is linted as it is (when the clone sits at the pin with no
modified tracked file) or from a `git archive` of the pin in a temp dir, so the clone is never
changed. The linted files are the *.sh files tracked at the pin, passed explicitly, from the
repository root, with the pin's `args`.

Errors and warnings are matched to bench/precision_labels.csv on (repo, path, line, code, key);
info findings are counted, not scored. Printed: per repository and severity the reported,
labelled real/false and unlabelled counts and precision = real / labelled; the labelled findings
no longer reported (a `real` one is a lost true finding); the unlabelled ones.

A measurement, not a gate: exit 0 unless the usage or an input is bad (2), or a
--min-*-precision is given and the total precision is below it (1). Standard library only;
the linter runs as a subprocess (default: this interpreter's `-m verl_lint.cli`).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import shlex
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10: the backport verl-lint itself uses there
    import tomli as tomllib

HERE = Path(__file__).resolve().parent
PINS = HERE / "precision_pins.toml"
LABELS = HERE / "precision_labels.csv"
SCORED = ("error", "warning")
VERDICTS = ("real", "false")
LABEL_COLUMNS = ["repo", "path", "line", "code", "key", "verdict", "reason"]

Key = tuple[str, str, int, str, str]  # repo, path, line, code, key


class BenchError(Exception):
    """A bad input: reported as one `precision: error: ...` line, exit 2."""


@dataclass(frozen=True)
class Label:
    verdict: str
    reason: str


def finding_key(repo: str, finding: dict) -> Key:
    return (repo, finding["path"], int(finding["line"]), finding["code"], finding.get("key") or "")


def load_labels(path: Path) -> dict[Key, Label]:
    """The labels file, checked: known columns, real/false verdicts, a reason, no duplicate key."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BenchError(f"{path}: cannot read labels ({exc.strerror})") from None
    rows = csv.DictReader(io.StringIO(text))
    if rows.fieldnames != LABEL_COLUMNS:
        raise BenchError(f"{path}: header must be {','.join(LABEL_COLUMNS)}, got {rows.fieldnames}")
    labels: dict[Key, Label] = {}
    for row in rows:
        where = f"{path}:{rows.line_num}"
        if None in row or any(v is None for v in row.values()):
            raise BenchError(f"{where}: expected {len(LABEL_COLUMNS)} columns")
        if row["verdict"] not in VERDICTS:
            raise BenchError(f"{where}: verdict must be real or false, got {row['verdict']!r}")
        if not row["reason"].strip():
            raise BenchError(f"{where}: empty reason")
        try:
            line = int(row["line"])
        except ValueError:
            raise BenchError(f"{where}: line must be a number, got {row['line']!r}") from None
        key = (row["repo"], row["path"], line, row["code"], row["key"])
        if key in labels:
            raise BenchError(f"{where}: duplicate label for {key}")
        labels[key] = Label(row["verdict"], row["reason"].strip())
    return labels


def score(reports: dict[str, list[dict]], labels: dict[Key, Label]) -> dict:
    """Score the findings of the repositories in `reports` (repo -> verl-lint JSON findings).

    Labels of repositories not in `reports` (skipped) are ignored."""
    table: dict[str, dict[str, dict]] = {}
    new: list[dict] = []
    seen: set[Key] = set()
    for repo, findings in reports.items():
        rows = {sev: {"reported": 0, "real": 0, "false": 0, "unlabelled": 0} for sev in SCORED}
        rows["info"] = {"reported": 0}
        for f in findings:
            sev = f["severity"]
            if sev not in rows:
                continue
            rows[sev]["reported"] += 1
            if sev not in SCORED:
                continue
            key = finding_key(repo, f)
            seen.add(key)
            label = labels.get(key)
            if label is None:
                rows[sev]["unlabelled"] += 1
                new.append(
                    {"repo": repo, **{k: f.get(k) for k in ("path", "line", "code", "key", "severity", "message")}}
                )
            else:
                rows[sev][label.verdict] += 1
        table[repo] = rows
    totals = {}
    for sev in SCORED:
        t = {k: sum(table[r][sev][k] for r in table) for k in ("reported", "real", "false", "unlabelled")}
        totals[sev] = t
    for rows in [*table.values(), totals]:
        for sev in SCORED:
            labelled = rows[sev]["real"] + rows[sev]["false"]
            rows[sev]["precision"] = rows[sev]["real"] / labelled if labelled else None
    lost = [
        {"repo": k[0], "path": k[1], "line": k[2], "code": k[3], "key": k[4], "verdict": v.verdict, "reason": v.reason}
        for k, v in sorted(labels.items())
        if k[0] in reports and k not in seen
    ]
    return {"repos": table, "totals": totals, "lost": lost, "new": new}


def find_clone(clones: Path, repo: str, github: str) -> Path | None:
    for name in (repo, github.replace("/", "+")):
        if (clones / name / ".git").exists():
            return clones / name
    return None


def git(clone: Path, *args: str) -> bytes:
    done = subprocess.run(["git", "-C", str(clone), *args], capture_output=True)
    if done.returncode != 0:
        last = (done.stderr.decode(errors="replace").strip().splitlines() or ["no message"])[-1]
        raise BenchError(f"{clone}: git {args[0]} failed: {last}")
    return done.stdout


@contextmanager
def checkout(clone: Path, pin: str) -> Iterator[Path]:
    """The pinned tree: the clone itself when it sits at the pin unmodified, else a temp copy."""
    check = subprocess.run(["git", "-C", str(clone), "cat-file", "-e", f"{pin}^{{commit}}"], capture_output=True)
    if check.returncode != 0:
        raise BenchError(f"{clone}: pinned commit {pin} is not in this clone (git fetch it, or re-clone)")
    head = git(clone, "rev-parse", "HEAD").decode().strip()
    # Deleted files (a sparse or partial checkout) are tolerated; changed contents are not.
    changed = git(clone, "diff", "HEAD", "--name-only", "--diff-filter=AMRTC").strip()
    if head == pin and not changed:
        yield clone
        return
    with tempfile.TemporaryDirectory(prefix="verl-lint-precision-") as tmp:
        with tarfile.open(fileobj=io.BytesIO(git(clone, "archive", "--format=tar", pin))) as tar:
            # the "tar" filter (Python >= 3.10.12) refuses members that would land outside tmp
            tar.extractall(tmp, **({"filter": "tar"} if hasattr(tarfile, "tar_filter") else {}))
        yield Path(tmp)


def tracked_scripts(clone: Path, pin: str) -> list[str]:
    """`git ls-files '*.sh'` at the pin (blobs only: a submodule is not a file)."""
    out = git(clone, "ls-tree", "-r", "-z", pin).decode("utf-8", "surrogateescape")
    files = []
    for entry in out.split("\0"):
        if not entry:
            continue
        meta, path = entry.split("\t", 1)
        if meta.split()[1] == "blob" and fnmatch(path, "*.sh"):
            files.append(path)
    return sorted(files)


def lint(linter: list[str], root: Path, files: list[str], args: list[str]) -> tuple[list[dict], list[str]]:
    """verl-lint's JSON findings and its stderr lines (input errors) for these files."""
    cmd = [*linter, "check", *files, *args, "--format", "json", "--fail-on", "never"]
    done = subprocess.run(cmd, cwd=root, capture_output=True, text=True)
    try:
        findings = [f for f in json.loads(done.stdout) if f.get("type") != "summary"]  # the run's accounting is last
    except json.JSONDecodeError:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise BenchError(f"{root}: the linter gave no JSON report (exit {done.returncode}): {last}") from None
    return findings, done.stderr.splitlines()


def pct(p: float | None) -> str:
    return "-" if p is None else f"{100 * p:.1f}%"


def render(result: dict, skipped: list[str]) -> str:
    out = []
    head = f"{'repository':<14}{'severity':<9}{'reported':>9}{'real':>6}{'false':>6}{'unlab.':>7}{'precision':>11}"
    out += [head, "-" * len(head)]
    for repo, rows in [*result["repos"].items(), ("TOTAL", result["totals"])]:
        for sev in SCORED:
            r = rows[sev]
            out.append(
                f"{repo:<14}{sev:<9}{r['reported']:>9}{r['real']:>6}{r['false']:>6}{r['unlabelled']:>7}{pct(r['precision']):>11}"
            )
        if repo != "TOTAL":
            out.append(f"{repo:<14}{'info':<9}{rows['info']['reported']:>9}   (not scored)")
    out += [f"{repo:<14}skipped (no clone)" for repo in skipped]
    lost = result["lost"]
    real_lost = [x for x in lost if x["verdict"] == "real"]
    out.append(f"\nLabelled findings no longer reported: {len(lost)} ({len(real_lost)} real)")
    for x in lost:
        flag = "LOST TRUE FINDING " if x["verdict"] == "real" else "fixed false positive "
        out.append(f"  {flag}{x['repo']}/{x['path']}:{x['line']} {x['code']} {x['key']} ({x['reason']})")
    out.append(f"\nNew unlabelled findings: {len(result['new'])}")
    for x in result["new"]:
        out.append(f"  {x['repo']}/{x['path']}:{x['line']} {x['code']} [{x['severity']}] {x['key']} {x['message']}")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="precision", description=__doc__.split("\n\n")[0])
    ap.add_argument("--clones", required=True, type=Path, help="directory with one clone per repository")
    ap.add_argument("--verl-lint", default=None, help="linter command (default: this Python's -m verl_lint.cli)")
    ap.add_argument("--repo", action="append", help="only this repository (repeatable)")
    ap.add_argument("--labels", type=Path, default=LABELS)
    ap.add_argument("--pins", type=Path, default=PINS)
    ap.add_argument("--save-reports", type=Path, help="also write each repository's JSON report here")
    ap.add_argument("--json", action="store_true", help="machine-readable result on stdout")
    ap.add_argument("--min-error-precision", type=float, metavar="PCT")
    ap.add_argument("--min-warning-precision", type=float, metavar="PCT")
    a = ap.parse_args(argv)
    linter = shlex.split(a.verl_lint) if a.verl_lint else [sys.executable, "-m", "verl_lint.cli"]
    try:
        if not a.clones.is_dir():
            raise BenchError(f"{a.clones}: not a directory")
        pins = tomllib.loads(a.pins.read_text(encoding="utf-8"))
        unknown = set(a.repo or ()) - set(pins)
        if unknown:
            raise BenchError(f"unknown repository {sorted(unknown)}; known: {', '.join(pins)}")
        labels = load_labels(a.labels)
        reports: dict[str, list[dict]] = {}
        skipped: list[str] = []
        for repo, pin in pins.items():
            if a.repo and repo not in a.repo:
                continue
            clone = find_clone(a.clones, repo, pin["github"])
            if clone is None:
                skipped.append(repo)
                continue
            print(f"linting {repo} at {pin['commit'][:12]} ...", file=sys.stderr, flush=True)
            with checkout(clone, pin["commit"]) as root:
                files = tracked_scripts(clone, pin["commit"])
                findings, errors = lint(linter, root, files, list(pin.get("args", [])))
            for line in errors:
                print(f"  {repo}: {line}", file=sys.stderr)
            reports[repo] = findings
            if a.save_reports:
                a.save_reports.mkdir(parents=True, exist_ok=True)
                (a.save_reports / f"{repo}.json").write_text(json.dumps(findings, indent=1))
    except (BenchError, OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        msg = exc.args[0] if isinstance(exc, BenchError) else f"{type(exc).__name__}: {exc}"
        print(f"precision: error: {msg}", file=sys.stderr)
        return 2
    if not reports:
        print(f"precision: skipped: no clone of {', '.join(skipped)} in {a.clones}")
        return 0
    result = score(reports, labels)
    result["skipped"] = skipped
    print(json.dumps(result, indent=1) if a.json else render(result, skipped))
    below = [
        f"{sev} precision {pct(result['totals'][sev]['precision'])} < {limit}%"
        for sev, limit in (("error", a.min_error_precision), ("warning", a.min_warning_precision))
        # None: nothing labelled was reported, so nothing to hold against the limit
        if limit is not None
        and result["totals"][sev]["precision"] is not None
        and result["totals"][sev]["precision"] * 100 < limit
    ]
    for line in below:
        print(f"precision: {line}", file=sys.stderr)
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
