"""The command line end to end, as a user runs it (a real subprocess)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import NEWEST

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, cwd=None, cache=None):
    env = dict(os.environ, NO_COLOR="1")
    if cache:
        env["VERL_LINT_CACHE_DIR"] = str(cache)
    return subprocess.run([sys.executable, "-m", "verl_lint.cli", *args], capture_output=True, text=True, cwd=cwd, env=env)


@pytest.fixture(scope="module")
def tree(verl_trees):
    return str(verl_trees[NEWEST].root)


@pytest.mark.slow
def test_wrong_key_exit_1_with_location_and_did_you_mean(tmp_path, tree):
    s = tmp_path / "run.sh"
    s.write_text("#!/bin/bash\nTP=2\npython3 -m verl.trainer.main_ppo \\\n    trainer.nnodes=1 \\\n    actor_rollout_ref.rollout.tensor_parallel_size=$TP\n")
    r = cli("check", "--verl-root", tree, str(s))
    assert r.returncode == 1, r.stderr
    assert f"{s}:5:5: VL101" in r.stdout
    assert "did you mean `actor_rollout_ref.rollout.tensor_model_parallel_size`?" in r.stdout
    assert "^^^^" in r.stdout and "Found 1 finding (1 error, 0 warnings) in 1 of 1 script linted, 1 launch" in r.stdout


@pytest.mark.slow
def test_json_contract(tmp_path, tree):
    s = tmp_path / "run.sh"
    s.write_text("python3 -m verl.trainer.main_ppo +trainer.nnodes=2\n")
    r = cli("check", "--verl-root", tree, "--format", "json", str(s))
    assert r.returncode == 1
    [item] = json.loads(r.stdout)
    for field in ("code", "name", "severity", "message", "help", "path", "line", "column", "end_line", "end_column", "key"):
        assert field in item
    assert (item["code"], item["line"], item["column"], item["end_column"], item["key"]) == ("VL103", 1, 34, 51, "trainer.nnodes")


@pytest.mark.slow
def test_command_after_double_dash(tree):
    r = cli("check", "--verl-root", tree, "--", "python3", "-m", "verl.trainer.main_ppo", "trainer.nnodez=1")
    assert r.returncode == 1
    assert "<command>:1:" in r.stdout and "VL101" in r.stdout and "`trainer.nnodes`" in r.stdout
    clean = cli("check", "--verl-root", tree, "--", "python3", "-m", "verl.trainer.main_ppo", "trainer.nnodes=1")
    assert clean.returncode == 0, clean.stdout


@pytest.mark.slow
def test_bad_input_exit_2_and_others_still_linted(tmp_path, tree):
    good = tmp_path / "a.sh"
    good.write_text("python3 -m verl.trainer.main_ppo trainer.nnodez=1\n")
    binary = tmp_path / "b.sh"
    binary.write_bytes(b"\x7fELF\x00\x00\x01")
    unknown = tmp_path / "c.sh"
    unknown.write_text("python3 -m verl.trainer.no_such_app a=1\n")
    r = cli("check", "--verl-root", tree, str(good), str(binary), str(unknown), str(tmp_path / "missing.sh"))
    assert r.returncode == 2
    assert "VL101" in r.stdout  # the good file was still linted
    lines = [l for l in r.stdout.splitlines() if ": error: " in l]
    assert any("binary file" in l for l in lines)
    # A module the tree does not have is a located finding on its launch (issue: coverage), not bad input.
    assert f"{unknown}:1:12: VL009" in r.stdout and "module verl.trainer.no_such_app is not in verl" in r.stdout
    assert any("no such file" in l for l in lines)
    assert "Traceback" not in r.stdout + r.stderr


@pytest.mark.slow
def test_no_execution_of_command_substitution(tmp_path, tree):
    marker = tmp_path / "SOMEFILE"
    s = tmp_path / "run.sh"
    s.write_text(f"N=$(touch {marker})\nM=`touch {marker}`\npython3 -m verl.trainer.main_ppo trainer.nnodes=$N trainer.n_gpus_per_node=$M\n")
    r = cli("check", "--verl-root", tree, str(s))
    assert r.returncode == 0, r.stdout
    assert not marker.exists()


@pytest.mark.slow
def test_rules_listing_and_doc():
    r = cli("rules", "--format", "json")
    rules = json.loads(r.stdout)
    assert len(rules) >= 40 and all(x["code"].startswith("VL") for x in rules)
    d = cli("rule", "VL301")
    assert d.returncode == 0 and "## Why is this bad?" in d.stdout and "Bad example" in d.stdout


@pytest.mark.slow
def test_select_ignore_fail_on(tmp_path, tree):
    s = tmp_path / "run.sh"
    s.write_text("python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.nnodes=2\n")
    assert cli("check", "--verl-root", tree, str(s)).returncode == 0  # a warning is below the default fail level
    assert cli("check", "--verl-root", tree, "--fail-on", "warning", str(s)).returncode == 1
    assert cli("check", "--verl-root", tree, "--fail-on", "warning", "--ignore", "VL107", str(s)).returncode == 0
    assert cli("check", "--verl-root", tree, "--select", "VL9", str(s)).returncode == 2  # unknown code: usage error


@pytest.mark.slow
def test_summary_is_honest_when_an_input_could_not_be_read(tmp_path, tree):
    ok = tmp_path / "ok.sh"
    ok.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodes=1\n")
    r = cli("check", "--verl-root", tree, str(ok), str(tmp_path / "missing.sh"))
    assert r.returncode == 2
    assert "All clean" not in r.stdout
    assert "No findings in 1 script linted, 1 launch; 1 could not be read" in r.stdout


@pytest.mark.slow
def test_carets_follow_display_width_of_wide_characters_and_tabs(tmp_path, tree):
    s = tmp_path / "cjk.sh"
    s.write_text('#!/bin/bash\npython3 -m verl.trainer.main_ppo\ttrainer.project_name="中文项目" trainer.nnodez=1\n')
    r = cli("check", "--verl-root", tree, str(s))
    lines = r.stdout.splitlines()
    i = next(i for i, l in enumerate(lines) if l.startswith(f"{s}:2:") and "VL101" in l)
    src, caret = lines[i + 2], lines[i + 3]
    assert "\t" not in src  # a tab is shown as spaces, so the caret line can line up under it
    # The caret starts under the `t` of `trainer.nnodez`, counted in terminal columns (each
    # of the four CJK characters takes two).
    ascii_part = ' 2 | python3 -m verl.trainer.main_ppo    trainer.project_name="" '
    assert caret.index("^") == len(ascii_part) + 8  # 4 wide characters, 2 columns each
    assert caret.count("^") == len("trainer.nnodez=1")


@pytest.mark.slow
def test_diff_with_nothing_to_fix_says_so_and_exits_0(tmp_path, tree):
    s = tmp_path / "run.sh"
    s.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodez=1\n")
    r = cli("check", "--verl-root", tree, "--diff", str(s))
    assert r.returncode == 0 and r.stdout == ""
    assert "No fixes available" in r.stderr


@pytest.mark.slow
def test_diff_headers_are_relative_to_the_working_directory(tmp_path, tree):
    (tmp_path / "sub").mkdir()
    s = tmp_path / "sub" / "run.sh"
    s.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodes=2 trainer.nnodes=3\n")
    r = cli("check", "--verl-root", tree, "--diff", str(s), cwd=tmp_path)
    assert r.returncode == 1, r.stderr
    assert r.stdout.splitlines()[:2] == ["--- a/sub/run.sh", "+++ b/sub/run.sh"]
    other = tmp_path / "elsewhere"
    other.mkdir()
    r = cli("check", "--verl-root", tree, "--diff", str(s), cwd=other)
    assert r.stdout.splitlines()[:2] == [f"--- {s}", f"+++ {s}"]


@pytest.mark.slow
def test_baseline_says_how_many_findings_it_hides(tmp_path, tree):
    s = tmp_path / "run.sh"
    s.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodez=1 trainer.nnodez2=1\n")
    base = tmp_path / "baseline.json"
    assert cli("check", "--verl-root", tree, "--write-baseline", str(base), str(s)).returncode == 0
    r = cli("check", "--verl-root", tree, "--baseline", str(base), str(s))
    assert r.returncode == 0, r.stdout
    assert "2 findings hidden by the baseline" in r.stdout


def test_cache_dir_prints_only_the_path(tmp_path):
    r = cli("cache", "dir", cache=tmp_path / "c")
    assert r.returncode == 0 and r.stdout == f"{tmp_path / 'c'}\n"
    r = cli("cache", "info", cache=tmp_path / "c")
    assert r.returncode == 0 and r.stdout.startswith(f"{tmp_path / 'c'}\n")
