"""Snapshot of the text renderer on a bad example (regenerate: VERL_LINT_UPDATE_SNAPSHOTS=1)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import EXAMPLES, NEWEST

from verl_lint.config.compose import Composer
from verl_lint.report.render import render_text
from verl_lint.runner import lint_file
from verl_lint.runs import Options

SNAPSHOT = Path(__file__).parent / "data" / "grpo_sizes_typos.txt"


def test_text_report_snapshot(verl_trees):
    script = EXAMPLES / "bad" / "grpo_sizes_typos.sh"
    report = lint_file(script, Options(verl_tree=verl_trees[NEWEST]), Composer(cache=False))
    text = (
        render_text([report]).replace(str(EXAMPLES), "examples").replace(str(verl_trees[NEWEST].root), "<verl 0.9.1>")
    )
    if os.environ.get("VERL_LINT_UPDATE_SNAPSHOTS"):
        SNAPSHOT.write_text(text)
    assert text == SNAPSHOT.read_text()


# ------------------------------------------------------ hostile text ----

# verl-lint's own colours (--color=always) are the only escape sequences it may print.
OWN_COLOR = re.compile(r"\x1b\[(?:1;3[136]|0)m")
# Every C0 control but tab and newline, DEL, C1 controls, bidi embeddings/overrides/isolates and marks.
RAW_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def hostile_tree(tmp_path: Path) -> Path:
    """A script whose name and overrides carry ESC sequences, BEL, backspace, CR, a C1 CSI and
    bidi controls, plus a binary file and an undecodable file name (input errors)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    script = (
        "#!/bin/bash\n"
        "# \x1b[2J\x1b]0;pwned\x07 hidden\x08\r\n"
        "python3 -m verl.trainer.main_ppo \\\n"
        "    data.train_batch_size=1000 actor_rollout_ref.rollout.n=5 trainer.nnodes=6 \\\n"
        '    "trainer.project_name=a\x1b[31mred\x07\u202edone\x9b" \\\n'
        '    "+x\x1b[1mkey\u2066\r=1"\n'
    )
    (tree / "evil\x1b]0;pwned\x07\u202e\x08.sh").write_text(script, encoding="utf-8")
    (tree / "bin\x1b[31m.sh").write_bytes(b"\0\x1b[2J")
    (tree / os.fsdecode(b"raw\x9b31m.sh")).write_bytes(b"\0")  # not UTF-8: an 8-bit CSI printed raw
    return tree


@pytest.mark.slow
@pytest.mark.parametrize("fmt", ["text", "github"])
def test_control_characters_from_scanned_files_are_escaped(tmp_path, fmt):
    tree = hostile_tree(tmp_path)
    cmd = [sys.executable, "-m", "verl_lint.cli", "check", ".", "--verl", NEWEST, "--format", fmt, "--color", "always"]
    proc = subprocess.run(cmd, capture_output=True, cwd=tree, timeout=300)
    out = proc.stdout.decode("utf-8") + proc.stderr.decode("utf-8")  # strict: no raw undecodable byte either
    assert proc.returncode == 2, out  # the binary files are input errors
    assert "Traceback" not in out
    assert not RAW_CONTROL.findall(OWN_COLOR.sub("", out)), RAW_CONTROL.findall(OWN_COLOR.sub("", out))
    assert "evil\\x1b]0;pwned\\x07\\u202e\\x08.sh" in out and "raw\\x9b31m.sh" in out
    assert "bin\\x1b[31m.sh" in out and "binary file" in out
    assert "a\\x1b[31mred\\x07\\u202edone\\x9b" in out
    assert "VL301" in out
    if fmt == "text":
        assert "[\x1b[1;31merror\x1b[0m]" in out  # the own colours still work


@pytest.mark.slow
def test_carets_stay_under_escaped_text(tmp_path):
    tree = hostile_tree(tmp_path)
    cmd = [sys.executable, "-m", "verl_lint.cli", "check", ".", "--verl", NEWEST]
    out = subprocess.run(cmd, capture_output=True, text=True, cwd=tree, timeout=300).stdout
    lines = out.splitlines()
    src = next(i for i, line in enumerate(lines) if line.startswith(" 5 |") and "project_name" in line)
    code, caret = lines[src].split("| ", 1)[1], lines[src + 1].split("| ", 1)[1]
    # The finding spans the quoted word: the carets run from its opening to its closing quote.
    assert caret.strip("^ ") == "" and caret.index("^") == code.index('"')
    assert len(caret) == code.rindex('"') + 1, (code, caret)
