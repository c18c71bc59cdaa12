"""`[tool.verl-lint]` settings through the real CLI: a bad one is one line and exit code 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NEWEST, json_findings

BAD_SIZES = "python3 -m verl.trainer.main_ppo data.train_batch_size=1000 actor_rollout_ref.rollout.n=5 trainer.nnodes=6 actor_rollout_ref.rollout.name=vllm\n"


def check(tmp_path: Path, settings: str, *flags: str) -> subprocess.CompletedProcess:
    (tmp_path / "pyproject.toml").write_text("[tool.verl-lint]\n" + settings + "\n", encoding="utf-8")
    (tmp_path / "run.sh").write_text(BAD_SIZES)
    cmd = [sys.executable, "-m", "verl_lint.cli", "check", "run.sh", "--verl", NEWEST, "--no-cache", *flags]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)


@pytest.mark.parametrize(
    "setting, says",
    [
        # Each of these ended in a Python traceback, a message not naming the setting, or was accepted.
        ('fail_on = "error"', 'unknown setting "fail_on" in [tool.verl-lint]; did you mean "fail-on"?'),
        ('fail-on = "errors"', 'fail-on = "errors": must be one of error, warning, info, never; did you mean "error"?'),
        ("per-file-ignores = 5", "per-file-ignores = 5: must be a table of glob = [rule codes]"),
        (
            'per-file-ignores = {"legacy/*.sh" = 3}',
            'per-file-ignores = {"legacy/*.sh": 3}: must be a string or a list of strings',
        ),
        ('per-file-ignores = {"legacy/*.sh" = ["VLX9"]}', 'unknown rule code or name "VLX9"'),
        ("severity = 3", 'severity = 3: must be a table of rule code = "error" | "warning" | "info"'),
        (
            'severity = {VL312 = "fatal"}',
            'severity = {"VL312": "fatal"}: the severity of VL312 must be one of error, warning, info',
        ),
        ('severity = {VL9999 = "error"}', 'unknown rule code or name "VL9999"'),
        ('severity = {VL3 = "error"}', '"VL3" is a prefix: name one rule'),
        ("exclude = 7", "exclude = 7: must be a string or a list of strings (path globs)"),
        ("select = [1]", "select = [1]: must be a string or a list of strings (rule codes, prefixes or names)"),
        (
            'ignore = ["unknown-config-keys"]',
            'unknown rule code or name "unknown-config-keys"; did you mean "unknown-config-key"?',
        ),
        ("extend-select = 5", "extend-select = 5: must be a string or a list of strings"),
        ('timeout = "soon"', 'timeout = "soon": must be a number >= 0 (seconds per launch; 0: no limit)'),
        ("max-file-size = -1", "max-file-size = -1: must be a number > 0 (MiB)"),
        ("verl-root = 5", "verl-root = 5: must be a non-empty string (quote it)"),
        ("verl-version = 0.9", "verl-version = 0.9: must be a non-empty string (quote it)"),  # 0.10 would read as 0.1
    ],
)
@pytest.mark.slow
def test_a_bad_setting_is_one_line_and_exit_2(tmp_path, setting, says):
    proc = check(tmp_path, setting)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith(f"verl-lint: error: {tmp_path / 'pyproject.toml'}: "), lines[0]
    assert says in lines[0], lines[0]


def test_a_retired_code_still_loads(tmp_path):
    """A setting written for an older verl-lint that ignores VL220 (now reported as VL233) loads."""
    proc = check(tmp_path, 'ignore = ["VL219", "VL220"]', "--select", "VL201,VL3")
    assert proc.returncode != 2 and "error" not in proc.stderr, proc.stderr


def test_a_bad_flag_code_names_the_flag(tmp_path):
    proc = check(tmp_path, "", "--select", "VL3,unknown-config-keys")
    assert proc.returncode == 2
    assert proc.stderr == (
        'verl-lint: error: --select: unknown rule code or name "unknown-config-keys"; '
        'did you mean "unknown-config-key"? (see `verl-lint rules`)\n'
    )


@pytest.mark.slow
def test_every_setting_of_the_readme_is_accepted_and_applied(tmp_path):
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.sh").write_text(BAD_SIZES)
    (tmp_path / "third_party").mkdir()
    (tmp_path / "third_party" / "x.sh").write_text(BAD_SIZES)
    settings = """
select = ["VL1", "VL3"]
extend-select = "VL0"
ignore = ["VL107"]
per-file-ignores = { "legacy/*.sh" = ["VL3"] }
exclude = ["third_party/"]
fail-on = "warning"
verl-version = "0.9.1"
severity = { VL301 = "warning", "mini-batch-not-divisible-by-dp" = "info" }
max-file-size = 1
timeout = 0
"""
    (tmp_path / "pyproject.toml").write_text("[tool.verl-lint]\n" + settings, encoding="utf-8")
    (tmp_path / "run.sh").write_text(BAD_SIZES)
    cmd = [sys.executable, "-m", "verl_lint.cli", "check", ".", "--format", "json", "--no-cache"]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode == 1, proc.stderr  # fail-on = "warning" and VL301 lowered to a warning
    found = {(Path(d["path"]).name, d["code"], d["severity"]) for d in json_findings(proc.stdout)}
    assert found == {("run.sh", "VL301", "warning"), ("run.sh", "VL304", "info")}


# ------------------------------------------------ settings discovered per file ----

TWO_FINDINGS = "python3 -m verl.trainer.main_ppo trainer.nnodes=1 trainer.nnodes=2 trainer.nnodez=3 actor_rollout_ref.rollout.name=vllm\n"  # VL107, VL101


def verl_lint(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "verl_lint", "check", "--verl", NEWEST, *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, timeout=300)


@pytest.fixture
def nested(tmp_path):
    """root/pyproject.toml ignores VL107; nested/ has a pyproject without the table (it must not
    hide the root's settings); other/verl-lint.toml selects VL107 only and excludes skip.sh."""
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.verl-lint]\nignore = ["VL107"]\n')
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "pyproject.toml").write_text('[project]\nname = "nested"\n')
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "verl-lint.toml").write_text('select = ["VL107"]\nexclude = ["skip.sh"]\n')
    for script in ("run.sh", "nested/run.sh", "other/run.sh", "other/skip.sh"):
        (tmp_path / script).write_text(TWO_FINDINGS)
    return tmp_path


def found(proc: subprocess.CompletedProcess) -> set[tuple[str, str]]:
    assert proc.returncode in (0, 1), proc.stderr
    return {(d["path"], d["code"]) for d in json_findings(proc.stdout)}


def test_each_file_gets_the_closest_settings_in_one_run(nested):
    assert found(verl_lint(nested, ".", "--format", "json")) == {
        ("run.sh", "VL101"),
        ("nested/run.sh", "VL101"),
        ("other/run.sh", "VL107"),  # other/skip.sh: excluded there
    }
    # a nested pyproject without [tool.verl-lint] is passed over, also when its script is the first path
    assert found(verl_lint(nested, "nested/run.sh", "other/skip.sh", "--format", "json")) == {
        ("nested/run.sh", "VL101"),
        ("other/skip.sh", "VL107"),  # a path given by name is linted even if excluded
    }


def test_config_flag_applies_to_every_file(nested):
    assert found(verl_lint(nested, ".", "--config", "other/verl-lint.toml", "--format", "json")) == {
        ("run.sh", "VL107"),
        ("nested/run.sh", "VL107"),
        ("other/run.sh", "VL107"),
    }


def test_show_settings_says_where_each_value_comes_from(nested):
    proc = verl_lint(nested, "--show-settings", "nested/run.sh", "--fail-on", "warning")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == f"# settings for nested/run.sh: {nested / 'pyproject.toml'}"
    assert f'ignore = ["VL107"]  # {nested / "pyproject.toml"}' in lines
    assert 'fail-on = "warning"  # command line (--fail-on)' in lines
    assert "timeout = 20.0  # default" in lines and "verl-root = (not set)  # default" in lines
    other = verl_lint(nested, "other", "--show-settings", "--select", "VL1", "--ignore", "VL101")
    assert 'select = ["VL1"]  # command line (--select)' in other.stdout
    assert f'exclude = ["skip.sh"]  # {nested / "other" / "verl-lint.toml"}' in other.stdout
    assert 'ignore = ["VL101"]  # command line (--ignore)' in other.stdout


def test_a_bad_nested_settings_file_is_one_line_naming_it(nested):
    (nested / "other" / "verl-lint.toml").write_text('fail-on = "errors"\n')
    proc = verl_lint(nested, ".")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == (
        f'verl-lint: error: {nested / "other" / "verl-lint.toml"}: fail-on = "errors": '
        'must be one of error, warning, info, never; did you mean "error"?\n'
    )


@pytest.mark.slow
def test_fail_on_follows_each_files_settings(nested):
    (nested / "pyproject.toml").write_text('[tool.verl-lint]\nignore = ["VL107"]\nfail-on = "never"\n')
    (nested / "other" / "verl-lint.toml").write_text('select = ["VL107"]\nfail-on = "warning"\n')
    assert verl_lint(nested, "run.sh").returncode == 0  # its VL101 error: fail-on = "never"
    assert verl_lint(nested, "run.sh", "other/run.sh").returncode == 1  # VL107, a warning, fails under other/
    assert (
        verl_lint(nested, "run.sh", "other/run.sh", "--fail-on", "error").returncode == 1
    )  # the flag wins: run.sh's error
    assert verl_lint(nested, "other/run.sh", "--fail-on", "error").returncode == 0
