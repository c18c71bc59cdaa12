"""The bundled examples: good ones have no error or warning (an info line may say what was not
checked), bad ones give exactly their recorded findings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import EXAMPLES, NEWEST
from verl_lint.model import Options, Severity
from verl_lint.runner import lint_paths
from verl_lint.walk import collect
from verl_lint.settings import Settings


def findings(verl_trees) -> dict[str, list[list]]:
    files, errors = collect([str(EXAMPLES)], Settings())
    assert not errors
    reports = lint_paths(files, Options(verl_tree=verl_trees[NEWEST]), jobs=1)
    out = {}
    for r in reports:
        assert not r.errors, r.errors
        name = Path(r.path).relative_to(EXAMPLES).as_posix()
        out[name] = [[d.code, d.span.line] for d in r.diagnostics]
        if name.startswith("good/"):
            assert all(d.severity is Severity.INFO for d in r.diagnostics), f"{name} must lint clean, got {out[name]}"
    return out


@pytest.mark.slow
def test_examples_match_expectations(verl_trees):
    expected = json.loads((EXAMPLES / "expected.json").read_text())
    got = findings(verl_trees)
    assert set(got) == set(expected), "every example must have a recorded expectation"
    for path, items in got.items():
        assert items == expected[path], f"{path}: expected {expected[path]}, got {items}"
    assert any(expected[p] for p in expected if p.startswith("bad/"))
