"""Snapshot of the text renderer on a bad example (regenerate: VERL_LINT_UPDATE_SNAPSHOTS=1)."""

from __future__ import annotations

import os
from pathlib import Path

from conftest import EXAMPLES, NEWEST
from verl_lint.compose import Composer
from verl_lint.pipeline import Options
from verl_lint.report import render_text
from verl_lint.runner import lint_file

SNAPSHOT = Path(__file__).parent / "data" / "grpo_sizes_typos.txt"


def test_text_report_snapshot(verl_trees):
    script = EXAMPLES / "bad" / "grpo_sizes_typos.sh"
    report = lint_file(script, Options(verl_tree=verl_trees[NEWEST]), Composer(cache=False))
    text = render_text([report]).replace(str(EXAMPLES), "examples")
    if os.environ.get("VERL_LINT_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(text)
    assert text == SNAPSHOT.read_text()
