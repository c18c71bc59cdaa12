"""The command line end to end, as a user runs it (a real subprocess)."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NEWEST, json_findings

ROOT = Path(__file__).resolve().parent.parent


def cli(*args, cwd=None, cache=None):
    env = dict(os.environ, NO_COLOR="1")
    if cache:
        env["VERL_LINT_CACHE_DIR"] = str(cache)
    return subprocess.run(
        [sys.executable, "-m", "verl_lint.cli", *args], capture_output=True, text=True, cwd=cwd, env=env
    )


@pytest.fixture(scope="module")
def tree(verl_trees):
    return str(verl_trees[NEWEST].root)


@pytest.mark.slow
def test_wrong_key_exit_1_with_location_and_did_you_mean(tmp_path, tree):
    s = tmp_path / "run.sh"
    s.write_text(
        "#!/bin/bash\nTP=2\npython3 -m verl.trainer.main_ppo \\\n    trainer.nnodes=1 \\\n    actor_rollout_ref.rollout.tensor_parallel_size=$TP actor_rollout_ref.rollout.name=vllm\n"
    )
    r = cli("check", "--verl-root", tree, str(s))
    assert r.returncode == 1, r.stderr
    assert f"{s}:5:5: VL101" in r.stdout
    assert "did you mean `actor_rollout_ref.rollout.tensor_model_parallel_size`?" in r.stdout
    assert "^^^^" in r.stdout and "Found 1 finding (1 error, 0 warnings) in 1 of 1 script linted, 1 launch" in r.stdout


@pytest.mark.slow
def test_json_contract(tmp_path, tree):
    s = tmp_path / "run.sh"
    s.write_text("python3 -m verl.trainer.main_ppo +trainer.nnodes=2 actor_rollout_ref.rollout.name=vllm\n")
    r = cli("check", "--verl-root", tree, "--format", "json", str(s))
    assert r.returncode == 1
    [item] = json_findings(r.stdout)
    for field in (
        "code",
        "name",
        "severity",
        "message",
        "help",
        "path",
        "line",
        "column",
        "end_line",
        "end_column",
        "key",
    ):
        assert field in item
    assert (item["code"], item["line"], item["column"], item["end_column"], item["key"]) == (
        "VL103",
        1,
        34,
        51,
        "trainer.nnodes",
    )


@pytest.mark.slow
def test_command_after_double_dash(tree):
    r = cli(
        "check",
        "--verl-root",
        tree,
        "--",
        "python3",
        "-m",
        "verl.trainer.main_ppo",
        "trainer.nnodez=1",
        "actor_rollout_ref.rollout.name=vllm",
    )
    assert r.returncode == 1
    # Located by argument (argv[3]), with the argument as the code frame: never as a script line.
    assert "command line, argument 3: VL101" in r.stdout and "\n 3 | trainer.nnodez=1 \\\n" in r.stdout, r.stdout
    assert "`trainer.nnodes`" in r.stdout
    clean = cli(
        "check",
        "--verl-root",
        tree,
        "--",
        "python3",
        "-m",
        "verl.trainer.main_ppo",
        "trainer.nnodes=1",
        "actor_rollout_ref.rollout.name=vllm",
    )
    assert clean.returncode == 0, clean.stdout


@pytest.mark.slow
def test_bad_input_exit_2_and_others_still_linted(tmp_path, tree):
    good = tmp_path / "a.sh"
    good.write_text("python3 -m verl.trainer.main_ppo trainer.nnodez=1 actor_rollout_ref.rollout.name=vllm\n")
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
    s.write_text(
        f"N=$(touch {marker})\nM=`touch {marker}`\npython3 -m verl.trainer.main_ppo trainer.nnodes=$N trainer.n_gpus_per_node=$M actor_rollout_ref.rollout.name=vllm\n"
    )
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
    s.write_text(
        "python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.nnodes=2 actor_rollout_ref.rollout.name=vllm\n"
    )
    assert cli("check", "--verl-root", tree, str(s)).returncode == 0  # a warning is below the default fail level
    assert cli("check", "--verl-root", tree, "--fail-on", "warning", str(s)).returncode == 1
    assert cli("check", "--verl-root", tree, "--fail-on", "warning", "--ignore", "VL107", str(s)).returncode == 0
    assert cli("check", "--verl-root", tree, "--select", "VL9", str(s)).returncode == 2  # unknown code: usage error


@pytest.mark.slow
def test_summary_is_honest_when_an_input_could_not_be_read(tmp_path, tree):
    ok = tmp_path / "ok.sh"
    ok.write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodes=1 actor_rollout_ref.rollout.name=vllm\n"
    )
    r = cli("check", "--verl-root", tree, str(ok), str(tmp_path / "missing.sh"))
    assert r.returncode == 2
    assert "All clean" not in r.stdout
    assert "No findings in 1 script linted, 1 launch; 1 could not be read" in r.stdout


@pytest.mark.slow
def test_carets_follow_display_width_of_wide_characters_and_tabs(tmp_path, tree):
    s = tmp_path / "cjk.sh"
    s.write_text(
        '#!/bin/bash\npython3 -m verl.trainer.main_ppo\ttrainer.project_name="中文项目" trainer.nnodez=1 actor_rollout_ref.rollout.name=vllm\n'
    )
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
    s.write_text("#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodez=1 actor_rollout_ref.rollout.name=vllm\n")
    r = cli("check", "--verl-root", tree, "--diff", str(s))
    assert r.returncode == 0 and r.stdout == ""
    assert "No fixes available" in r.stderr


@pytest.mark.slow
def test_diff_headers_are_relative_to_the_working_directory(tmp_path, tree):
    (tmp_path / "sub").mkdir()
    s = tmp_path / "sub" / "run.sh"
    s.write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodes=2 trainer.nnodes=3 actor_rollout_ref.rollout.name=vllm\n"
    )
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
    s.write_text(
        "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodez=1 trainer.nnodez2=1 actor_rollout_ref.rollout.name=vllm\n"
    )
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


# ------------------------------------------------- ruff's conventions (issue #20) ----

DUPLICATE_AND_TYPO = "#!/bin/bash\npython3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.nnodes=2 trainer.nnodez=3 actor_rollout_ref.rollout.name=vllm\n"


def verl_lint(*args, cwd=None, env=None, stdin=None):
    """`python -m verl_lint ARGS`, as a user types it; NO_COLOR unless `env` says otherwise."""
    e = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    e.update(env if env is not None else {"NO_COLOR": "1"})
    return subprocess.run(
        [sys.executable, "-m", "verl_lint", *args], capture_output=True, text=True, cwd=cwd, env=e, input=stdin
    )


@pytest.fixture
def project(tmp_path):
    (tmp_path / "run.sh").write_text(DUPLICATE_AND_TYPO)
    return tmp_path


def test_python_dash_m_verl_lint_checks_the_current_directory_by_default(project, tree):
    r = verl_lint("check", "--verl-root", tree, cwd=project)
    assert r.returncode == 1, r.stderr
    assert "run.sh:2:68: VL101" in r.stdout and "1 of 1 script linted" in r.stdout


def test_stdin_is_linted_under_the_stdin_filename(project, tree):
    (project / "sub").mkdir()
    (project / "sub" / "verl-lint.toml").write_text('per-file-ignores = { "x.sh" = ["VL107"] }\n')
    r = verl_lint(
        "check", "--verl-root", tree, "-", "--stdin-filename", "sub/x.sh", cwd=project, stdin=DUPLICATE_AND_TYPO
    )
    assert r.returncode == 1, r.stderr
    # the name is the findings' path, and the settings found from it apply (VL107 ignored there)
    assert "sub/x.sh:2:68: VL101" in r.stdout and "VL107" not in r.stdout
    plain = verl_lint(
        "check", "--verl-root", tree, "-", "--output-format", "json", cwd=project, stdin=DUPLICATE_AND_TYPO
    )
    assert {(d["path"], d["code"]) for d in json_findings(plain.stdout)} == {("-", "VL101"), ("-", "VL107")}
    # stdin has no file to write a fix into
    r = verl_lint("check", "--verl-root", tree, "-", "--fix", cwd=project, stdin=DUPLICATE_AND_TYPO)
    assert (r.returncode, r.stderr) == (2, "verl-lint: error: --fix and --diff cannot fix stdin (`-`): give the file\n")
    r = verl_lint("check", "--verl-root", tree, "--stdin-filename", "x.sh", cwd=project, stdin="")
    assert r.returncode == 2 and "give `-` as the path" in r.stderr


def test_output_format_and_its_alias_and_help_with_allowed_values(project, tree):
    new = verl_lint("check", "--verl-root", tree, "--output-format", "json", cwd=project)
    old = verl_lint("check", "--verl-root", tree, "--format", "json", cwd=project)
    assert new.returncode == old.returncode == 1 and json_findings(new.stdout) == json_findings(old.stdout) != []
    help_text = " ".join(verl_lint("check", "--help").stdout.split())
    assert "--output-format {text,json,sarif,github,junit}, --format {text,json,sarif,github,junit}" in help_text
    assert (
        "--fail-on {error,warning,info,never} exit 1 on findings at or above this level: error, warning, info, never"
        in help_text
    )


def test_every_flag_of_every_command_has_help():
    from verl_lint import cli

    def walk(parser, where):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    yield from walk(sub, f"{where} {name}")
            elif action.option_strings or action.dest not in ("command", "cache_command"):
                yield where, action

    missing = [
        f"{where} {'/'.join(a.option_strings) or a.dest}" for where, a in walk(cli.parser(), "verl-lint") if not a.help
    ]
    assert missing == []


def test_statistics_counts_findings_per_rule(project, tree):
    (project / "two.sh").write_text(
        "python3 -m verl.trainer.main_ppo trainer.nnodez=1 trainer.nnodez2=1 actor_rollout_ref.rollout.name=vllm\n"
    )
    r = verl_lint("check", "--verl-root", tree, "--statistics", cwd=project)
    assert r.returncode == 1
    assert (
        r.stdout == "3  VL101  [*] unknown-config-key\n1  VL107  [*] duplicate-override\n"
    )  # a single did-you-mean: an unsafe rename
    j = verl_lint("check", "--verl-root", tree, "--statistics", "--output-format", "json", cwd=project)
    assert json.loads(j.stdout) == [
        {"code": "VL101", "name": "unknown-config-key", "count": 3, "fixable": True},
        {"code": "VL107", "name": "duplicate-override", "count": 1, "fixable": True},
    ]


def test_summary_counts_fixable_findings_and_show_fixes_lists_them(project, tree):
    r = verl_lint("check", "--verl-root", tree, "run.sh", cwd=project)
    assert r.stdout.endswith("in 1 of 1 script linted, 1 launch\n1 fixable with --fix (1 more with --unsafe-fixes)\n")
    r = verl_lint("check", "--verl-root", tree, "run.sh", "--show-fixes", cwd=project)
    assert r.stdout.endswith(
        "1 fixable with --fix (1 more with --unsafe-fixes)\n  run.sh:2:34: VL107 remove the shadowed override\n"
    )
    r = verl_lint("check", "--verl-root", tree, "run.sh", "--fix", "--show-fixes", cwd=project)
    assert "Fixed 1 finding in 1 file\n  run.sh:2:34: VL107 remove the shadowed override\n" in r.stderr
    assert "fixable" not in r.stdout and "trainer.nnodes=1 " not in (project / "run.sh").read_text()


def test_exit_zero_keeps_input_errors_at_2(project, tree):
    assert verl_lint("check", "--verl-root", tree, "--exit-zero", cwd=project).returncode == 0
    assert verl_lint("check", "--verl-root", tree, "--exit-zero", "run.sh", "missing.sh", cwd=project).returncode == 2


def test_quiet_prints_findings_only_and_verbose_says_what_was_used(project, tree):
    q = verl_lint("check", "--verl-root", tree, "-q", cwd=project)
    assert q.returncode == 1 and "VL101" in q.stdout and "Found" not in q.stdout and "fixable" not in q.stdout
    v = verl_lint("check", "--verl-root", tree, "-v", cwd=project)
    assert v.stdout == verl_lint("check", "--verl-root", tree, cwd=project).stdout
    assert "settings for 1 file: defaults (no settings file found)" in v.stderr
    assert f"verl: verl 0.9.1 from --verl-root ({os.path.realpath(tree)})" in v.stderr and "engines: " in v.stderr
    assert re.search(r"verl-lint: +\d+\.\d{3} s  run\.sh\n", v.stderr), v.stderr


def test_show_files_honours_the_ignore_files_and_lints_nothing(project, tree):
    (project / ".git").mkdir()
    (project / ".gitignore").write_text("skip/\n")
    for d in ("skip", "keep"):
        (project / d).mkdir()
        (project / d / "a.sh").write_text(DUPLICATE_AND_TYPO)
    r = verl_lint("check", "--show-files", cwd=project)
    assert (r.returncode, r.stdout) == (0, "run.sh\nkeep/a.sh\n")  # in the order they are linted
    r = verl_lint("check", "--show-files", "run.sh", "nope.sh", cwd=project)
    assert (r.returncode, r.stdout) == (2, "run.sh\n") and "nope.sh: error: no such file or directory" in r.stderr


@pytest.mark.parametrize(
    "env, flags, coloured",
    [
        ({"FORCE_COLOR": "1"}, [], True),
        ({"NO_COLOR": "1", "FORCE_COLOR": "1"}, [], False),
        ({}, [], False),  # stdout is a pipe
        ({"NO_COLOR": "1"}, ["--color", "always"], True),
        ({"FORCE_COLOR": "1"}, ["--color", "never"], False),
    ],
)
def test_force_color_and_no_color(project, tree, env, flags, coloured):
    r = verl_lint("check", "--verl-root", tree, *flags, cwd=project, env=env)
    assert ("\033[1;31m" in r.stdout) is coloured


@pytest.mark.slow
def test_cache_dir_flag(project, tree):
    r = verl_lint("check", "--verl-root", tree, "--cache-dir", "c", cwd=project)
    assert r.returncode == 1 and list((project / "c" / "bases").glob("*.pickle"))
    r = verl_lint("cache", "--cache-dir", "c", "dir", cwd=project)
    assert r.stdout == f"{project / 'c'}\n"
