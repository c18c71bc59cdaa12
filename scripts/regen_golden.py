"""Record the golden CLI output: each rule example fixture's (verl_lint/rules/examples/CODE/
{bad,good}-N/expected*.txt) and the bundled examples' in every output format (examples/expected/).

    python scripts/regen_golden.py                 # everything
    python scripts/regen_golden.py VL101 VL3       # the fixtures of these codes or code prefixes
    python scripts/regen_golden.py --examples      # examples/expected/ only

It runs `verl-lint check` exactly as tests/test_rule_examples.py and tests/test_examples.py do
(tests/golden.py), in a private cache like the test session's. It refuses to record an output
that breaks an example's meaning (a bad example giving anything but its rule, at the place its
script names; a good one giving anything): it names them and exits 1. Review the diff after.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import conftest  # noqa: E402 - the test session's private cache and NO_COLOR, before verl-lint runs
import golden  # noqa: E402


def regen_fixture(r, ex) -> list[str]:
    outputs, broken = {}, []
    for v in golden.releases_of(r, ex):
        tree = conftest.release_tree(v)  # downloaded once into the shared cache
        if not r.holds_in(tree.root):
            continue
        rc, text, found, files = golden.run_fixture(ex, v)
        wrong = golden.problems(r, ex, v, rc, found, files)
        if wrong and golden.case_id(ex, v) not in golden.FAIL_ON_0_5:
            broken += wrong
        elif not wrong:
            outputs[v] = text
    if broken or not outputs:
        return broken or [f"{ex.name}: runs on no release at hand"]
    base = next(iter(outputs.values()))
    for old in ex.path.glob("expected*.txt"):
        old.unlink()
    (ex.path / "expected.txt").write_text(base, encoding="utf-8")
    for v, text in outputs.items():
        if text != base:
            (ex.path / f"expected-{v}.txt").write_text(text, encoding="utf-8")
    return []


def regen_examples() -> None:
    golden.GOLDEN.mkdir(exist_ok=True)
    for fmt, name in golden.FORMATS.items():
        _, text = golden.run_examples(fmt)
        (golden.GOLDEN / name).write_text(text, encoding="utf-8")


def main(argv: list[str]) -> int:
    codes = [a.upper() for a in argv if a != "--examples"]
    broken = []
    if "--examples" not in argv or codes:
        for r, ex in golden.fixtures():
            if not codes or any(r.code.startswith(c) for c in codes):
                broken += regen_fixture(r, ex)
    if not codes:
        regen_examples()
    conftest.pytest_unconfigure()  # the private cache
    for line in broken:
        print(line, file=sys.stderr)
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
