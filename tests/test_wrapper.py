"""`verl-lint run [check options] -- <command...>`: lint, then exec the command only if clean.

The wrapper runs in a subprocess (it replaces itself with the command), as
`python -m verl_lint run`, as a user runs it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import NEWEST

from verl_lint import cli, wrapper
from verl_lint.wrapper import script_call

APPS = Path(__file__).resolve().parent / "apps"
BAD = [
    "data.train_batch_size=1000",
    "actor_rollout_ref.rollout.n=5",
    "trainer.nnodes=6",
    "actor_rollout_ref.rollout.name=vllm",
]
GOOD = [
    "data.train_batch_size=960",
    "actor_rollout_ref.rollout.n=5",
    "trainer.nnodes=6",
    "actor_rollout_ref.actor.ppo_mini_batch_size=192",
    "actor_rollout_ref.rollout.name=vllm",
]

# A launch script whose real work is guarded: with $MARKER set it only records that it ran.
SCRIPT = """#!/bin/bash
set -e
if [ -n "$MARKER" ]; then
  echo "ran with: $*" > "$MARKER"
  exit 3
fi
python3 -m verl.trainer.main_ppo \\
    actor_rollout_ref.rollout.n=5 actor_rollout_ref.rollout.name=vllm \\
    "$@"
"""


def wrap(tmp_path: Path, *args: str, env: dict | None = None):
    e = dict(os.environ, NO_COLOR="1", **(env or {}))
    return subprocess.run(
        [sys.executable, "-m", "verl_lint", "run", *args],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=e,
        timeout=300,
    )


@pytest.fixture
def script(tmp_path):
    p = tmp_path / "train.sh"
    p.write_text(SCRIPT)
    return p


# ------------------------------------------------------------ exec only when clean ----


@pytest.mark.slow
def test_clean_command_is_execd_with_its_own_exit_code(tmp_path):
    marker = tmp_path / "ran"
    code = f"import os, sys; open({str(marker)!r}, 'w').write(str(os.getpid())); sys.exit(7)"
    proc = subprocess.Popen(
        [sys.executable, "-m", "verl_lint", "run", "--", sys.executable, "-c", code],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 7, err  # the command's own exit code
    # exec, not a child process: the command ran in the wrapper's process.
    assert marker.read_text() == str(proc.pid)


@pytest.mark.slow
def test_bad_script_args_are_linted_as_its_dollar_at_and_not_run(tmp_path, script):
    marker = tmp_path / "ran"
    proc = wrap(tmp_path, "--verl", NEWEST, "--", "bash", "train.sh", *BAD, env={"MARKER": str(marker)})
    assert proc.returncode == 1, proc.stderr
    assert not marker.exists(), "the command ran"
    assert "VL301 [error]" in proc.stderr
    assert "verl-lint: not running: bash train.sh" in proc.stderr


@pytest.mark.slow
def test_clean_script_runs_with_its_args(tmp_path, script):
    marker = tmp_path / "ran"
    proc = wrap(tmp_path, "--verl", NEWEST, "--", "bash", "train.sh", *GOOD, env={"MARKER": str(marker)})
    assert proc.returncode == 3, proc.stderr  # the script's exit code
    assert marker.read_text().strip() == "ran with: " + " ".join(GOOD)


@pytest.mark.slow
def test_findings_on_arguments_point_into_the_command_line(tmp_path):
    proc = wrap(
        tmp_path, "--verl", NEWEST, "--dry-run", "--", "bash", "-c", 'python3 -m verl.trainer.main_ppo "$@"', "x", *BAD
    )
    assert proc.returncode == 1, proc.stderr
    command = ["bash", "-c", 'python3 -m verl.trainer.main_ppo "$@"', "x", *BAD]
    line = next(x for x in proc.stderr.splitlines() if "VL301" in x)
    n = int(line.removeprefix("command line, argument ").split(":")[0])  # located by argument, not as a script line
    assert command[n] in BAD and any(f"\n {n} | {command[n]}{end}" in proc.stderr for end in ("\n", " \\\n")), (
        proc.stderr
    )
    assert "would not run" in proc.stderr


@pytest.mark.slow
def test_dry_run_runs_nothing(tmp_path, script):
    marker = tmp_path / "ran"
    proc = wrap(tmp_path, "--verl", NEWEST, "--dry-run", "--", "bash", "train.sh", *GOOD, env={"MARKER": str(marker)})
    assert proc.returncode == 0, proc.stderr
    assert "verl-lint: would run: bash train.sh " in proc.stderr
    assert not marker.exists()


def test_fail_on_never_runs_despite_findings(tmp_path, script):
    marker = tmp_path / "ran"
    proc = wrap(
        tmp_path, "--verl", NEWEST, "--fail-on", "never", "--", "bash", "train.sh", *BAD, env={"MARKER": str(marker)}
    )
    assert proc.returncode == 3, proc.stderr
    assert marker.exists() and "VL301" in proc.stderr


@pytest.mark.slow
def test_hydra_app_file_runs_only_when_clean(tmp_path, verl_trees):
    """The test Hydra app, located statically from --config-dir/--config-name, composed, linted, run."""
    tree = verl_trees[NEWEST]
    marker = tmp_path / "marker.json"
    cmd = [
        sys.executable, str(APPS / "lint_app.py"),
        "--config-dir", str(tree.root / "verl" / "trainer" / "config"),
        "--config-name", "ppo_trainer",
        f"hydra.run.dir={tmp_path / 'out'}",
    ]  # fmt: skip
    proc = wrap(tmp_path, "--verl", NEWEST, "--", *cmd, *BAD, env={"LINT_APP_MARKER": str(marker)})
    assert proc.returncode == 1 and not marker.exists(), proc.stderr
    assert "VL301" in proc.stderr
    proc = wrap(tmp_path, "--verl", NEWEST, "--", *cmd, *GOOD, env={"LINT_APP_MARKER": str(marker)})
    assert proc.returncode == 0 and marker.exists(), proc.stdout + proc.stderr
    assert "TASK RAN" in proc.stdout


@pytest.mark.slow
def test_usage_and_missing_command(tmp_path):
    assert wrap(tmp_path).returncode == 2
    proc = wrap(tmp_path, "--", "no-such-command-verl-lint")
    assert proc.returncode == 127 and "command not found" in proc.stderr
    proc = wrap(tmp_path, "--select", "VL0000000", "--", "true")
    assert proc.returncode == 2 and "unknown rule code" in proc.stderr


@pytest.mark.slow
def test_missing_script_is_an_input_error(tmp_path):
    proc = wrap(tmp_path, "--", "bash", "nope.sh")
    assert proc.returncode == 2 and "nope.sh: error: cannot read: No such file or directory" in proc.stderr


# ---------------------------------------------------------------- fail-open ----


def _args(**kw) -> argparse.Namespace:
    ns = cli.parser().parse_args(["run"])
    for k, v in kw.items():
        setattr(ns, k, v)
    return ns


def test_internal_error_fails_open_unless_strict(monkeypatch, capsys):
    def boom(*a, **k):
        raise RuntimeError("linter bug")

    monkeypatch.setattr(wrapper, "lint_command", boom)
    assert wrapper.run(_args(dry_run=True), ["true"]) == 0
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: linter bug; running the command unchecked" in err and "would run: true" in err
    assert wrapper.run(_args(dry_run=True, strict=True), ["true"]) == 2
    assert "not running the command (--strict)" in capsys.readouterr().err


# ------------------------------------------------------------ command shapes ----


@pytest.mark.parametrize(
    "argv,expected",
    [
        (["bash", "run.sh", "a=1", "b=2"], ("run.sh", None, ["a=1", "b=2"], 2)),
        (["/bin/bash", "-x", "-o", "pipefail", "run.sh", "a=1"], ("run.sh", None, ["a=1"], 5)),
        (["sh", "--", "run.sh"], ("run.sh", None, [], 3)),
        (["bash", "-c", 'python3 -m m "$@"', "name", "a=1"], ("<bash -c>", 'python3 -m m "$@"', ["a=1"], 4)),
        (["bash", "-xc", "echo", "name"], ("<bash -c>", "echo", [], 4)),
        (["bash", "-s"], None),
        (["bash"], None),
        (["python3", "-m", "verl.trainer.main_ppo"], None),  # pyenv's python3 shim is a bash script
        (["train.sh", "a=1"], None),  # a bare name is looked up on PATH: not linted as a script
    ],
)
def test_script_call(argv, expected):
    got = script_call(argv)
    assert (None if got is None else (got.path, got.text, got.args, got.arg_index)) == expected


def test_executable_script_path(tmp_path, script):
    script.chmod(0o755)
    got = script_call([str(script), "a=1"])
    assert got is not None and got.path == str(script) and got.args == ["a=1"]
    shim = tmp_path / "bin" / "python3"
    shim.parent.mkdir()
    shim.write_text('#!/usr/bin/env bash\nexec pyenv exec python3 "$@"\n')
    assert script_call([str(shim), "-m", "verl.trainer.main_ppo"]) is None


@pytest.mark.slow
def test_executable_script_runs_and_is_linted(tmp_path, script):
    script.chmod(0o755)
    marker = tmp_path / "ran"
    proc = wrap(tmp_path, "--verl", NEWEST, "--", "./train.sh", *BAD, env={"MARKER": str(marker)})
    assert proc.returncode == 1 and not marker.exists() and "VL301" in proc.stderr, proc.stderr
    proc = wrap(tmp_path, "--verl", NEWEST, "--", "./train.sh", *GOOD, env={"MARKER": str(marker)})
    assert proc.returncode == 3 and marker.exists(), proc.stderr


# ------------------------------------------------- bounded: time, size, what is opened ----
# Each command prints "ran" only if it runs; the wrapper runs under a time and memory limit, so
# a regression that reads /dev/zero or blocks on a FIFO fails instead of hanging.

# A launch the linter analyses but bash never reaches.
RAN = '#!/bin/bash\nif [ -n "$VERL_LINT_TEST_NEVER_SET" ]; then\n  python3 -m verl.trainer.main_ppo trainer.nnodes=1 actor_rollout_ref.rollout.name=vllm\nfi\necho ran\n'


def bounded_wrap(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))

    return subprocess.run(
        [sys.executable, "-m", "verl_lint", "run", *args], capture_output=True, text=True, cwd=tmp_path,
        env=dict(os.environ, NO_COLOR="1"), timeout=120, preexec_fn=limit,
    )  # fmt: skip


@pytest.mark.slow
def test_analysis_over_the_time_limit_runs_the_command_unless_strict(tmp_path):
    (tmp_path / "train.sh").write_text(RAN)
    proc = bounded_wrap(tmp_path, "--verl", NEWEST, "--timeout", "1e-6", "--", "bash", "train.sh")
    assert proc.returncode == 0 and proc.stdout == "ran\n", proc.stderr
    assert proc.stderr == (
        "verl-lint: the analysis took longer than 1e-06 s (--timeout); running the command unchecked (--strict would stop it)\n"
    )
    proc = bounded_wrap(tmp_path, "--verl", NEWEST, "--timeout", "1e-6", "--strict", "--", "bash", "train.sh")
    assert proc.returncode == 2 and proc.stdout == "", proc.stderr
    assert (
        proc.stderr
        == "verl-lint: the analysis took longer than 1e-06 s (--timeout); not running the command (--strict)\n"
    )
    # Within the limit the launch is analysed, and the clean script runs.
    proc = bounded_wrap(tmp_path, "--verl", NEWEST, "--", "bash", "train.sh")
    assert proc.returncode == 0 and proc.stdout == "ran\n" and "1 launch" in proc.stderr, proc.stderr


@pytest.mark.slow
def test_linter_failure_on_a_real_script_runs_the_command_unless_strict(tmp_path):
    """Expansions nested 3000 deep exhaust the analyser's recursion: a linter failure, not the script's."""
    (tmp_path / "deep.sh").write_text('X="' + "${A:-" * 3000 + "a" + "}" * 3000 + '"\necho ran\n')
    proc = bounded_wrap(tmp_path, "--", "bash", "deep.sh")
    assert proc.returncode == 0 and proc.stdout == "ran\n", proc.stderr
    assert proc.stderr.startswith("verl-lint: internal error: RecursionError: ") and proc.stderr.count("\n") == 1
    assert proc.stderr.endswith("; running the command unchecked (--strict would stop it)\n")
    proc = bounded_wrap(tmp_path, "--strict", "--", "bash", "deep.sh")
    assert proc.returncode == 2 and proc.stdout == "" and proc.stderr.endswith("; not running the command (--strict)\n")


@pytest.mark.slow
def test_script_is_read_within_the_size_limit(tmp_path):
    (tmp_path / "big.sh").write_text("# padding\n" * 200 + "echo ran\n")  # 2 KiB
    proc = bounded_wrap(tmp_path, "--max-file-size", "0.001", "--", "bash", "big.sh")
    assert proc.returncode == 1 and proc.stdout == "", proc.stderr
    assert "big.sh:1:1: VL004 [error] the file is 2009 bytes, over the 1048 bytes limit; not analysed" in proc.stderr
    assert "verl-lint: not running: bash big.sh (1 finding at or above --fail-on=error)" in proc.stderr
    proc = bounded_wrap(tmp_path, "--", "bash", "big.sh")  # under the default 4 MiB: linted, clean, run
    assert proc.returncode == 0 and proc.stdout == "ran\n", proc.stderr


@pytest.mark.slow
def test_fifo_and_device_scripts_are_never_opened(tmp_path):
    """`bash fifo` would block the read forever, `bash /dev/zero` would never end: input errors."""
    os.mkfifo(tmp_path / "fifo.sh")
    os.symlink("/dev/zero", tmp_path / "zero.sh")
    for name, kind in (("fifo.sh", "FIFO"), ("zero.sh", "character device")):
        proc = bounded_wrap(tmp_path, "--", "bash", name)
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert f"{name}: error: not a regular file ({kind})" in proc.stderr
        assert f"verl-lint: not running: bash {name} (1 input error)" in proc.stderr
