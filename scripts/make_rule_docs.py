"""Write docs/rules/: one markdown page per rule and an index, generated from the registry.

Run after changing a rule: `python scripts/make_rule_docs.py`. tests/test_rule_docs.py fails
while the committed pages differ from what the registry generates (`--check` does the same).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from verl_lint.registry import REGISTRY
from verl_lint.rules import pack  # noqa: F401 - registers the rule pack

DOCS = Path(__file__).resolve().parent.parent / "docs" / "rules"


def pages() -> dict[str, str]:
    """{file name: text} of every page docs/rules/ should hold."""
    out = {f"{r.code}.md": r.page() for r in REGISTRY}
    rows = [f"| [{r.code}]({r.code}.md) | {r.name} | {r.severity} | {r.summary.replace('|', '∣')} |" for r in REGISTRY]
    out["README.md"] = "\n".join(
        [
            "# verl-lint rules",
            "",
            "Generated from the rule registry by `scripts/make_rule_docs.py`; do not edit by hand.",
            "",
            "| Code | Name | Severity | Summary |",
            "|---|---|---|---|",
            *rows,
            "",
        ]
    )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/rules/ is not what the registry generates")
    args = ap.parse_args(argv)
    want = pages()
    have = {p.name: p.read_text(encoding="utf-8") for p in DOCS.glob("*.md")} if DOCS.is_dir() else {}
    stale = sorted(n for n in want.keys() | have.keys() if want.get(n) != have.get(n))
    if args.check:
        for name in stale:
            print(f"docs/rules/{name} is out of date (run scripts/make_rule_docs.py)")
        return 1 if stale else 0
    DOCS.mkdir(parents=True, exist_ok=True)
    for name in stale:
        if name in want:
            (DOCS / name).write_text(want[name], encoding="utf-8")
        else:
            (DOCS / name).unlink()  # a page of a rule that no longer exists
    print(f"docs/rules/: {len(stale)} page(s) written or removed, {len(want)} in all")
    return 0


if __name__ == "__main__":
    sys.exit(main())
