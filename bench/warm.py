"""Warm and cold CLI runs, end to end, against Python's own start-up in the same run.

    python bench/warm.py                                   # the bundled examples/, verl 0.9.1
    python bench/warm.py --tree ../verl/examples --verl-root ../verl   # verl's own examples
    python bench/warm.py --runs 7 --json

Every run is a new process (`verl-lint check ...`, stdout discarded) with a private, empty
`VERL_LINT_CACHE_DIR` (a downloaded verl release is linked in, so nothing is downloaded), on a
copy of the tree (with a pyproject.toml marking it a project, as its repository would). It
measures, median of --runs:

* `python -c pass`: the floor any Python CLI pays;
* one script, cold (empty cache) and warm (its result cached);
* the whole tree, cold, warm, and warm after one script changed.

Targets (issue #20): a warm single-script check <= 150 ms and a warm re-run over the tree
<= 0.3 s; each figure is also printed as a ratio to `python -c pass`, which is what to compare
across machines. Exit 1 when a target is missed, 0 otherwise.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS = {"one script, warm": 0.150, "whole tree, warm": 0.300}


def _cli() -> list[str]:
    exe = Path(sys.executable).parent / "verl-lint"
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "verl_lint"]


def _time(argv: list[str], env: dict, cwd: Path) -> float:
    start = time.perf_counter()
    p = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - start
    if p.returncode not in (0, 1):
        raise SystemExit(f"bench: {' '.join(argv)} exited {p.returncode}: {p.stderr.strip()[-400:]}")
    return elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--tree", type=Path, default=REPO / "examples", help="the scripts to lint (default: the bundled examples/)"
    )
    ap.add_argument("--script", type=Path, help="the single script (default: the first .sh under --tree)")
    ap.add_argument("--verl", default="0.9.1", help="verl release to lint against (default 0.9.1)")
    ap.add_argument("--verl-root", type=Path, help="a verl checkout instead of --verl")
    ap.add_argument("--runs", type=int, default=5, help="runs per figure; the median is reported (default 5)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = ap.parse_args(argv)
    tree = args.tree.resolve()
    script = args.script or next(iter(sorted(tree.rglob("*.sh"))), None)
    if script is None:
        ap.error(f"no .sh script under {tree}")
    script = script.resolve()
    verl = ["--verl-root", str(args.verl_root.resolve())] if args.verl_root else ["--verl", args.verl]
    cli = _cli()

    with tempfile.TemporaryDirectory(prefix="verl-lint-warm-") as tmp:
        cache = Path(tmp) / "cache"
        env = dict(os.environ, VERL_LINT_CACHE_DIR=str(cache), NO_COLOR="1")
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # a user's Python keeps its bytecode: so does the benchmark
        if not args.verl_root:  # download once (or link the user's copy) outside the timings
            user = (
                Path(os.environ.get("VERL_LINT_CACHE_DIR") or Path.home() / ".cache/verl-lint")
                / "releases"
                / f"verl-{args.verl}"
            )
            if user.is_dir():
                (cache / "releases").mkdir(parents=True)
                os.symlink(user, cache / "releases" / user.name)
            else:
                _time([*cli, "check", str(script), *verl], env, tree)
        work = Path(tmp) / "tree"
        shutil.copytree(tree, work)  # edited below: never the user's files
        # The copy is its own project, as the tree is in its repository: nothing above it (the
        # temp directory, which other processes write to) is part of what a script depends on.
        if not (work / "pyproject.toml").exists():
            (work / "pyproject.toml").write_text("[project]\nname = 'verl-lint-bench-copy'\n")
        one = work / script.relative_to(tree) if script.is_relative_to(tree) else script

        def clear() -> None:
            for sub in ("results", "bases", "reader", "engine_args", "tables", "specifiers", "verl-allocator"):
                shutil.rmtree(cache / sub, ignore_errors=True)

        def median(label: str, argv: list[str], before=None) -> tuple[str, float]:
            times = []
            for _ in range(args.runs):
                if before:
                    before()
                times.append(_time(argv, env, work))
            return label, statistics.median(times)

        rows = [median("python -c pass", [sys.executable, "-c", "pass"])]
        rows.append(median("one script, cold", [*cli, "check", str(one), *verl], clear))
        _time([*cli, "check", str(one), *verl], env, work)
        rows.append(median("one script, warm", [*cli, "check", str(one), *verl]))
        rows.append(median("whole tree, cold", [*cli, "check", ".", *verl], clear))
        _time([*cli, "check", ".", *verl], env, work)
        rows.append(median("whole tree, warm", [*cli, "check", ".", *verl]))

        def touch() -> None:
            one.write_text(one.read_text() + "\n")

        rows.append(median("whole tree, one script changed", [*cli, "check", ".", *verl], touch))

    floor = rows[0][1]
    n = sum(1 for _ in tree.rglob("*.sh"))
    failed = [label for label, t in rows if label in TARGETS and t > TARGETS[label]]
    if args.json:
        print(
            json.dumps(
                {"scripts": n, "runs": args.runs, "seconds": dict(rows), "targets": TARGETS, "missed": failed}, indent=2
            )
        )
    else:
        print(f"{n} scripts under {tree}; median of {args.runs} runs; ratio = time / `python -c pass`")
        for label, t in rows:
            target = f"   target <= {TARGETS[label] * 1e3:.0f} ms" if label in TARGETS else ""
            print(f"  {label:34s} {t * 1e3:8.1f} ms  {t / floor:6.1f}x{target}")
        print("RESULT: " + ("PASS" if not failed else "MISSED " + ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
