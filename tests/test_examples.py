"""The bundled examples: `verl-lint check examples/` prints, in every output format, byte for byte
what examples/expected/ records (scripts/regen_golden.py records it); good ones have no error or
warning (an info line may say what was not checked), bad ones have findings."""

from __future__ import annotations

import json
import sys

import pytest
from conftest import NEWEST
from golden import FORMATS, GOLDEN, run_examples


def _recorded(fmt: str) -> str:
    return (GOLDEN / FORMATS[fmt]).read_text(encoding="utf-8")


@pytest.mark.parametrize("fmt", FORMATS)
def test_examples_print_what_is_recorded(verl_trees, fmt):
    verl_trees[NEWEST]  # the release the repository's settings pin, in the test download cache
    rc, out = run_examples(fmt)
    assert rc == 1  # the bad examples have errors
    assert out == _recorded(fmt), f"`verl-lint check examples/ --output-format {fmt}` differs from {FORMATS[fmt]}"


def test_the_recorded_examples_are_good_and_bad():
    *findings, summary = json.loads(_recorded("json"))
    assert summary["files"]["linted"] == 7 and summary["launches"]["not_analysable"] == 0
    by_file: dict[str, list[str]] = {}
    for f in findings:
        by_file.setdefault(f["path"], []).append(f["severity"])
    assert all(set(sev) == {"info"} for path, sev in by_file.items() if path.startswith("examples/good/"))
    bad = {path for path in by_file if path.startswith("examples/bad/")}
    assert len(bad) == 3 and all("error" in by_file[p] or "warning" in by_file[p] for p in bad)


@pytest.mark.slow
@pytest.mark.parametrize("fmt", FORMATS)
def test_the_program_prints_what_is_recorded(verl_trees, fmt):
    """The same run as a program (`python -m verl_lint`), as CI and pre-commit start it."""
    verl_trees[NEWEST]
    rc, out = run_examples(fmt, [sys.executable, "-m", "verl_lint"])
    assert (rc, out) == (1, _recorded(fmt))
