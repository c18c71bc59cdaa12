"""Every rule's bad examples produce exactly that rule; its good examples produce nothing.

Run against every real release the rule applies to (its version range, and the evidence it
needs in that release's source).
"""

from __future__ import annotations

import pytest

from conftest import RELEASES, codes
from verl_lint.registry import REGISTRY
from verl_lint.registry import parse_version
from verl_lint.launch.locate import release_tree

CASES = []
for r in REGISTRY:
    for v in RELEASES:
        if not r.applies_to(parse_version(v)) or not r.holds_in(release_tree(v).root):
            continue
        for kind in ("bad", "good"):
            n = len(r.examples(kind, parse_version(v)))
            CASES += [pytest.param(r, v, i, kind, id=f"{r.code}-{v}-{kind}{i}") for i in range(n)]


def test_every_rule_has_examples_and_docs():
    for r in REGISTRY:
        assert r.live or (r.bad and r.good), f"{r.code} needs bad and good examples"
        doc = r.doc
        for heading in ("## What it does", "## Why is this bad?", "## Use instead"):
            assert heading in doc, f"{r.code} doc lacks {heading!r}"


@pytest.mark.parametrize("rule,version,index,kind", CASES)
def test_example(lint, rule, version, index, kind):
    script = rule.examples(kind, parse_version(version))[index]
    report = lint(script, version, **(rule.bad_options if kind == "bad" else {}))
    assert not report.errors, report.errors
    got = sorted(set(codes(report)))
    if kind == "bad":
        assert got == [rule.code], f"{rule.code} bad example on verl {version} gave {got}: {[d.message for d in report.diagnostics]}"
    else:
        assert got == [], f"{rule.code} good example on verl {version} gave {[(d.code, d.message) for d in report.diagnostics]}"
