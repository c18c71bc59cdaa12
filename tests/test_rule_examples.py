"""Every rule's bad examples produce exactly that rule, at the place in the script the finding is
about; its good examples produce nothing.

Run against every release in RELEASES the rule applies to (its version range, and the evidence
it needs in that release's source); against 0.9.1 in the fast tier, the older ones in `slow`.
"""

from __future__ import annotations

import re

import pytest

from conftest import NEWEST, RELEASES, cached_release, codes
from verl_lint.registry import REGISTRY, parse_version
from verl_lint.rules import pack  # noqa: F401 - registers every rule before CASES is built

# Examples that do not hold on verl 0.5.0 yet (reported on issue #19: examples without a version
# specifier, or the linter); strict, so a fix shows up as a failing XPASS and leaves this list.
FAIL_ON_0_5 = {
    "VL010-0.5.0-good0",
    "VL106-0.5.0-bad0",
    "VL106-0.5.0-good0",
    "VL108-0.5.0-bad1",
    "VL108-0.5.0-good0",
    "VL110-0.5.0-bad0",
    "VL110-0.5.0-bad1",
    "VL231-0.5.0-bad0",
    "VL501-0.5.0-bad0",
    "VL501-0.5.0-bad1",
    "VL503-0.5.0-good0",
    "VL504-0.5.0-good0",
    "VL608-0.5.0-bad0",
    "VL610-0.5.0-bad0",
}


def _marks(case: str, version: str) -> list:
    marks = [] if version == NEWEST else [pytest.mark.slow]  # older releases: the slow tier
    if version in OTHER_RELEASES:
        marks.append(pytest.mark.network)  # not among the releases the download test caches
    if case in FAIL_ON_0_5:
        marks.append(pytest.mark.xfail(strict=True, reason="does not hold on verl 0.5.0 (issue #19)"))
    return marks


# A rule with examples for none of RELEASES (a record about the 0.6 line only) runs them on the
# first of these it has examples for, in the slow tier.
OTHER_RELEASES = ("0.6.1", "0.2.0.post2")


def _has_examples(r, v: str) -> bool:
    return bool(r.examples("bad", parse_version(v)) or r.examples("good", parse_version(v)))


ONLY_ELSEWHERE = {
    r.code: next(v for v in OTHER_RELEASES if _has_examples(r, v))
    for r in REGISTRY
    if not any(_has_examples(r, v) for v in RELEASES) and any(_has_examples(r, v) for v in OTHER_RELEASES)
}

CASES = []
for v in (*RELEASES, *OTHER_RELEASES):
    tree = cached_release(v)  # not downloaded yet: whether the rule holds is checked in the test
    for r in REGISTRY:
        if v in OTHER_RELEASES and ONLY_ELSEWHERE.get(r.code) != v:
            continue
        if not r.applies_to(parse_version(v)) or (tree and not r.holds_in(tree.root)):
            continue
        for kind in ("bad", "good"):
            n = len(r.examples(kind, parse_version(v)))
            ids = [f"{r.code}-{v}-{kind}{i}" for i in range(n)]
            CASES += [pytest.param(r, v, i, kind, id=ids[i], marks=_marks(ids[i], v)) for i in range(n)]

# What a finding points at when the script does not spell its key there (a regex, first match).
ANCHORS = {
    "VL001": r"(?m)^if ",  # the statement bash cannot parse
    "VL003": r"# verl-lint: disable",  # the suppression comment
    "VL004": r"\A",  # the whole file
    "VL005": r"\A",  # the whole file
    "VL006": "[\udc80-\udcff]",  # the first byte that is not UTF-8 (read with surrogateescape)
    "VL007": r"--config-path=\S*\$|\"python3",  # the word only known at run time
    "VL010": r"verl\.trainer\.main_ppo",  # the launch whose engine version is unknown
    "VL109": r"verl\.trainer\.main_ppo",  # the launch that leaves a mandatory value unset
    # the launch that leaves a micro batch size unset, or the global size the engine workers do not read
    "VL315": r"verl\.trainer\.main_ppo(?!.*rollout\.log_prob_micro_batch_size=)|(?<=\s)actor_rollout_ref\.rollout\.log_prob_micro_batch_size=",
    "VL011": r"\$\{?[a-z_]",  # the `$x` the script never assigns
}


def expected_position(script: str, code: str, key: str) -> tuple[int, int] | None:
    """(line, col) of what a finding of `code` about `key` points at in `script`: the anchor
    of `code`, else the start of the first word that names `key`."""
    if code in ANCHORS:
        m = re.search(ANCHORS[code], script)
        start = m.start() if m else None
    else:
        m = re.search(r"(?<![\w.])" + re.escape(key) + r"(?![\w.])", script) if key else None
        start = max(script.rfind(c, 0, m.start()) for c in " \t\n") + 1 if m else None
    if start is None:
        return None
    return script.count("\n", 0, start) + 1, start - (script.rfind("\n", 0, start) + 1) + 1


def test_every_rule_has_examples_and_docs():
    for r in REGISTRY:
        assert r.live or (r.bad and r.good), f"{r.code} needs bad and good examples"
        doc = r.doc
        for heading in ("## What it does", "## Why is this bad?", "## Use instead"):
            assert heading in doc, f"{r.code} doc lacks {heading!r}"


def test_expected_position_reads_the_example():
    script = "#!/bin/bash\nexport VLLM_USE_V1=1\npython3 -m verl.trainer.main_ppo 'trainer.logger=[a]' \\\n  +trainer.nnodes=2\n"
    assert expected_position(script, "VL502", "VLLM_USE_V1") == (2, 8)
    assert expected_position(script, "VL102", "trainer.logger") == (3, 34)
    assert expected_position(script, "VL103", "trainer.nnodes") == (4, 3)
    assert expected_position(script, "VL010", "vllm") == (3, 12)
    assert expected_position(script, "VL101", "trainer.nnode") is None


@pytest.mark.parametrize("rule,version,index,kind", CASES)
def test_example(lint, verl_trees, rule, version, index, kind):
    if not rule.holds_in(verl_trees[version].root):
        pytest.skip(f"verl {version} lacks the source {rule.code} mirrors")
    script = rule.examples(kind, parse_version(version))[index]
    report = lint(script, version, **(rule.bad_options if kind == "bad" else {}))
    assert not report.errors, report.errors
    got = sorted(set(codes(report)))
    if kind == "bad":
        assert got == [rule.code], (
            f"{rule.code} bad example on verl {version} gave {got}: {[d.message for d in report.diagnostics]}"
        )
        for d in report.diagnostics:
            where = expected_position(script, d.code, d.key)
            assert where is not None, (
                f"{rule.code} bad example on verl {version}: nothing in the script names {d.key!r}"
            )
            assert (d.span.line, d.span.col) == where, (
                f"{rule.code} on verl {version} at {d.span.line}:{d.span.col}, expected {where[0]}:{where[1]}: {d.message}"
            )
    else:
        assert got == [], (
            f"{rule.code} good example on verl {version} gave {[(d.code, d.message) for d in report.diagnostics]}"
        )
