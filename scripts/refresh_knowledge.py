#!/usr/bin/env python3
"""Check the hand-written knowledge tables against every verl release on the package index.

Each record of rules/ineffective_keys.yaml and rules/removed_keys.yaml rests on `requires:`
facts that verl-lint checks in the tree it lints (a file contains / lacks a text, a key is read,
a dataclass field exists, the config has a key). The record's `verl:` range (ineffective keys)
or `removed:` release (removed keys) is only the fallback for a tree without source, so it must
say exactly where the facts hold. This script downloads each release's wheel (no dependencies,
into the verl-lint cache), composes its default `ppo_trainer` config with Hydra, evaluates every
record's facts there, and prints each record whose fallback disagrees, with the range the facts
give; and the releases newer than the tables' `verified_through`.

    python scripts/refresh_knowledge.py                     # every release from 0.4.0 on
    python scripts/refresh_knowledge.py --since 0.7.0       # fewer downloads
    python scripts/refresh_knowledge.py --write             # rewrite the fallbacks that disagree

Exit 0 when everything agrees, 1 when something is printed as changed, 2 on bad usage or a
download failure.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from packaging.version import Version  # noqa: E402

from verl_lint import download  # noqa: E402
from verl_lint.config.context import config_has  # noqa: E402
from verl_lint.knowledge import HEADER, load_table, table  # noqa: E402
from verl_lint.launch.locate import LocateError, release_tree  # noqa: E402
from verl_lint.rules.tables import facts_hold, release_in  # noqa: E402
from verl_lint.table_records import RemovedRecord  # noqa: E402

TABLES = ("ineffective_keys.yaml", "removed_keys.yaml")


def default_config_keys(root: Path):
    """`has_key` for the release's default ppo_trainer config, composed by Hydra."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(root / "verl/trainer/config"), version_base=None):
        cfg = compose("ppo_trainer")
    return lambda key: config_has(cfg, key)


def _holds(rec, root: Path, has_key) -> bool | None:
    """The record's facts, and (for an ineffective key) its `when:` keys in the release's
    config: where one is missing the record cannot fire, whatever the code says."""
    found = {facts_hold(rec, root, has_key, k.rsplit(".", 1)[-1]) for k in rec.keys or [""]}  # `{name}` per key
    if len(found) != 1:
        return None  # true for some of its keys only: judged per launch
    facts = found.pop()
    if facts is None or isinstance(rec, RemovedRecord):
        return facts
    composes = all(has_key(k) for k, _ in rec.when)
    return facts and composes


def derived(rec, holds: dict[Version, bool]) -> str | None:
    """The fallback the facts give (`>=A`, `>=A,<B`, or a removal release), None if not one range."""
    ordered = sorted(holds)
    on = [v for v in ordered if holds[v]]
    if not on:
        return "<0" if not isinstance(rec, RemovedRecord) else None  # holds nowhere
    first, last = ordered.index(on[0]), ordered.index(on[-1])
    if not all(holds[v] for v in ordered[first : last + 1]):
        return None  # holds, stops, holds again: not one range
    if isinstance(rec, RemovedRecord):
        return str(on[0]) if last == len(ordered) - 1 else None
    return f">={on[0]}" + (f",<{ordered[last + 1]}" if last < len(ordered) - 1 else "")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--since", default="0.4.0", help="the oldest release to check (default 0.4.0)")
    ap.add_argument("--write", action="store_true", help="rewrite the `verl:`/`removed:` fallbacks that disagree")
    args = ap.parse_args(argv)
    try:
        versions = [v for v in download.releases("verl") if v >= Version(args.since)]
        trees = {v: release_tree(str(v)) for v in versions}
    except (download.DownloadError, LocateError) as ex:
        print(f"refresh_knowledge: {ex}", file=sys.stderr)
        return 2
    print(f"verl releases checked: {', '.join(map(str, versions))}")
    keys = {v: default_config_keys(t.root) for v, t in trees.items()}
    changed = 0
    for name in TABLES:
        through = Version(table(name).verified_through["verl"])
        newer = [v for v in versions if v > through]
        if newer:
            changed += 1
            print(f"{name}: {HEADER} verl {through}; newer on the index: {', '.join(map(str, newer))}")
        text = (REPO / "rules" / name).read_text(encoding="utf-8")
        for rec in load_table(name):
            holds = {v: _holds(rec, trees[v].root, keys[v]) for v in versions}
            if any(h is None for h in holds.values()):
                continue  # no facts, or facts true for some of its keys only
            says = {v: release_in(rec.fallback, v) for v in versions}
            if says == holds:
                continue
            changed += 1
            gives = derived(rec, holds)
            where = ", ".join(f"{v} {'holds' if holds[v] else 'does not'}" for v in versions if says[v] != holds[v])
            print(
                f"rules/{name}:{rec.line}: {rec.code} {rec.name}: fallback {rec.fallback!r} disagrees with the facts "
                f"({where}); the facts give {gives or 'no single range'}"
            )
            if args.write and gives:
                text = _rewrite(text, rec, gives)
        if args.write:
            (REPO / "rules" / name).write_text(text, encoding="utf-8")
    print(
        "everything agrees"
        if not changed
        else f"{changed} change(s)" + ("" if args.write else " (--write rewrites the fallbacks)")
    )
    return 1 if changed else 0


def _rewrite(text: str, rec, gives: str) -> str:
    """The record's `verl:`/`removed:` line (the first after its `code:` line) set to `gives`."""
    lines = text.splitlines(keepends=True)
    field = "removed" if isinstance(rec, RemovedRecord) else "verl"
    for i in range(rec.line - 1, len(lines)):
        m = re.match(rf"(\s*{field}:\s*)(\S.*?)(\s*(#.*)?)$", lines[i].rstrip("\n"))
        if m:
            lines[i] = f'{m.group(1)}"{gives}"{m.group(3)}\n'
            break
    return "".join(lines)


if __name__ == "__main__":
    sys.exit(main())
