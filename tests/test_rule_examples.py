"""Every rule's example fixtures (verl_lint/rules/examples/CODE/{bad,good}-N/) through the real
CLI: a bad example produces exactly its rule, at the place in its files the finding is about; a
good one produces nothing; and `verl-lint check` prints byte for byte the output recorded beside
it (scripts/regen_golden.py records it).

Run against every release in RELEASES the rule and the example apply to (its version range, and
the evidence it needs in that release's source); against 0.9.1 in the fast tier, the older ones
in `slow`.
"""

from __future__ import annotations

import re

import pytest
from conftest import NEWEST, cached_release
from golden import (
    FAIL_ON_0_5,
    FIXTURE_FILES,
    NEVER_RUN,
    OTHER_RELEASES,
    case_id,
    expected_file,
    expected_position,
    fixtures,
    problems,
    releases_of,
    run_fixture,
)

from verl_lint.examples import EXAMPLES_DIR
from verl_lint.registry import REGISTRY
from verl_lint.rules import pack  # noqa: F401 - registers every rule before CASES is built


def _marks(case: str, version: str) -> list:
    marks = [] if version == NEWEST else [pytest.mark.slow]  # older releases: the slow tier
    if version in OTHER_RELEASES:
        marks.append(pytest.mark.network)  # not among the releases the download test caches
    if case in FAIL_ON_0_5:
        marks.append(pytest.mark.xfail(strict=True, reason="does not hold on verl 0.5.0 (issue #19)"))
    return marks


CASES = []
for _rule, _ex in fixtures():
    for _v in releases_of(_rule, _ex):
        _tree = cached_release(_v)  # not downloaded yet: whether the rule holds is checked in the test
        if _tree is None or _rule.holds_in(_tree.root):
            _id = case_id(_ex, _v)
            CASES.append(pytest.param(_rule, _ex, _v, id=_id, marks=_marks(_id, _v)))


@pytest.mark.parametrize("rule,example,version", CASES)
def test_example(verl_trees, rule, example, version):
    if not rule.holds_in(verl_trees[version].root):
        pytest.skip(f"verl {version} lacks the source {rule.code} mirrors")
    rc, text, found, files = run_fixture(example, version)
    assert problems(rule, example, version, rc, found, files) == []
    expected = expected_file(example, version)
    assert text == expected.read_text(encoding="utf-8"), (
        f"`verl-lint check` output of {example.name} on verl {version} differs from {expected.name}; "
        "if the change is meant, `python scripts/regen_golden.py " + rule.code + "` and review the diff"
    )


def test_every_rule_has_examples_and_docs():
    for r in REGISTRY:
        assert r.live or (r.bad and r.good), f"{r.code} needs bad and good examples"
        for heading in ("## What it does", "## Why is this bad?", "## Use instead"):
            assert heading in r.doc, f"{r.code} doc lacks {heading!r}"


def test_fixture_directories_are_well_formed():
    """Each fixture is a directory of a registered rule's code, numbered from 1 in each kind,
    with run.sh and expected.txt and nothing the harness would not read."""
    for code_dir in EXAMPLES_DIR.iterdir():
        rule = REGISTRY.get(code_dir.name)
        assert rule is not None and rule.code == code_dir.name, f"{code_dir}: no rule {code_dir.name}"
        assert not rule.live, f"{code_dir}: {rule.code} is found only in a running process"
        for kind, examples in (("bad", rule.bad), ("good", rule.good)):
            assert [ex.index for ex in examples] == list(range(1, len(examples) + 1)), f"{rule.code} {kind}-N"
        assert {d.name for d in code_dir.iterdir()} == {ex.path.name for ex in (*rule.bad, *rule.good)}
        for ex in (*rule.bad, *rule.good):
            names = {p.name for p in ex.path.iterdir()}
            recorded = ex.name not in NEVER_RUN
            assert {"run.sh", *["expected.txt"] * recorded} <= names, f"{ex.name} lacks run.sh or expected.txt"
            versions = set(releases_of(rule, ex))
            for name in names - FIXTURE_FILES:
                m = re.fullmatch(r"expected-(.+)\.txt", name)
                assert m and m[1] in versions, f"{ex.name}/{name}: not a file of a fixture running on {versions}"


def test_never_run_lists_exactly_the_fixtures_no_release_at_hand_runs(verl_trees):
    """A fixture that runs nowhere tests nothing: only the known ones may (NEVER_RUN, with why)."""
    idle = set()
    for r, ex in fixtures():
        if not any(r.holds_in(verl_trees[v].root) for v in releases_of(r, ex) if v not in OTHER_RELEASES):
            idle.add(ex.name)
    assert idle - NEVER_RUN <= {ex.name for r, ex in fixtures() if set(releases_of(r, ex)) <= set(OTHER_RELEASES)}
    assert NEVER_RUN <= idle


def test_a_fixture_may_carry_a_project_config():
    """YAML examples: a fixture's config/*.yaml is linted with the script that launches it, and a
    finding in it is located at the file's line and column."""
    yaml = [ex for r, ex in fixtures() if any(n.startswith("config/") for n, _ in ex.files())]
    assert any(ex.kind == "bad" for ex in yaml) and any(ex.kind == "good" for ex in yaml)
    assert any(re.search(r"(?m)^config/\S+\.yaml:\d+:\d+: VL", expected_file(ex, NEWEST).read_text()) for ex in yaml)


def test_expected_position_reads_the_example():
    script = "#!/bin/bash\nexport VLLM_USE_V1=1\npython3 -m verl.trainer.main_ppo 'trainer.logger=[a]' \\\n  +trainer.nnodes=2\n"
    assert expected_position(script, "VL502", "VLLM_USE_V1") == (2, 8)
    assert expected_position(script, "VL102", "trainer.logger") == (3, 34)
    assert expected_position(script, "VL103", "trainer.nnodes") == (4, 3)
    assert expected_position(script, "VL010", "vllm") == (3, 12)
    assert expected_position(script, "VL101", "trainer.nnode") is None
    config = "defaults:\n  - ppo_trainer\ntrainer:\n  nnodez: 1\n"
    assert expected_position(config, "VL101", "trainer.nnodez", yaml=True) == (4, 3)


def test_an_output_that_breaks_an_example_is_refused(verl_trees):
    """What regen_golden.py will not record: a bad example's finding of another rule, a finding
    elsewhere than the place its script names, any finding of a good example."""
    verl_trees[NEWEST]
    vl101, vl102 = REGISTRY.get("VL101"), REGISTRY.get("VL102")
    [bad] = [ex for ex in vl101.bad if ex.index == 1]
    rc, _, found, files = run_fixture(bad, NEWEST)
    assert problems(vl101, bad, NEWEST, rc, found, files) == []
    assert problems(vl102, bad, NEWEST, rc, found, files) == [
        f"VL101/bad-1 on verl {NEWEST} gave ['VL101']: " + str([f["message"] for f in found])
    ]
    moved = [dict(f, column=f["column"] + 1) for f in found]
    assert "expected 2:34" in problems(vl101, bad, NEWEST, rc, moved, files)[0]
    good = vl101.good[0]
    assert problems(vl101, good, NEWEST, rc, found, files)[0].startswith("VL101/good-1 on verl")
