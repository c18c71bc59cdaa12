"""The limits on analysing a script (limits.py): a budget counted in work, the same on every run,
and the wall clock only per launch, so that a script's findings do not depend on the machine's load."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
from conftest import OLDER

from verl_lint.limits import Timeout, expired, paused, time_limit

LAUNCH = "python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodez=1\n"
BRANCHED = 'if [ "$1" = big ]; then N=4; else N=2; fi\npython3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.nnodes=$N trainer.nnodez=1\n'


def located(report) -> list[tuple[str, int]]:
    return [(d.code, d.span.line) for d in report.diagnostics]


def test_the_launch_budget_keeps_what_was_analysed_and_reports_the_rest(lint):
    script = LAUNCH + BRANCHED + LAUNCH  # launches at lines 1, 3 (two variants: big or not) and 4
    whole = lint(script, max_launches=10)
    assert located(whole) == [("VL101", 1), ("VL101", 3), ("VL101", 4)] and whole.launches == 3
    cut = lint(script, max_launches=3)
    assert located(cut) == [("VL101", 1), ("VL101", 3), ("VL005", 4)] and cut.launches == 2
    assert (
        "more than 3 launch analyses" in cut.diagnostics[-1].message and cut.diagnostics[-1].help == "split the script"
    )
    # Cut between the variants of line 3: what one variant found is not reported as the command's.
    between = lint(script, max_launches=2)
    assert located(between) == [("VL101", 1), ("VL005", 3), ("VL005", 4)] and between.launches == 1


def test_the_time_limit_is_not_an_exception_code_under_it_could_swallow():
    caught = []
    with pytest.raises(Timeout):
        with time_limit(0.05):
            while True:
                try:
                    sum(range(10_000))
                except Exception as ex:  # noqa: BLE001 - what Hydra-calling code does
                    caught.append(ex)
    assert caught == []


def test_the_clock_stops_while_a_cached_index_is_built():
    """Work kept for the rest of the run (cache.memo) does not count against the step that pays
    for it; the step then has the time it had left. Read from the timer itself, not raced
    against it: the same on a busy machine."""
    handler = signal.getsignal(signal.SIGALRM)
    with time_limit(600):
        before, _ = signal.getitimer(signal.ITIMER_REAL)
        with paused():
            assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # stopped
        after, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 0 < after <= before  # running again, with what was left
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0) and signal.getsignal(signal.SIGALRM) is handler


class _Finalized:
    """Raises the alarm from its `__del__`, where Python swallows what the handler raises."""

    def __del__(self):
        signal.raise_signal(signal.SIGALRM)
        sum(range(10))  # the handler runs here, inside __del__


@pytest.mark.filterwarnings(
    "ignore::pytest.PytestUnraisableExceptionWarning"
)  # (Python's "Exception ignored in __del__")
def test_a_timeout_swallowed_where_it_fired_still_ends_the_step():
    """The alarm can fire inside a `__del__` or a collector callback, where Python only prints
    what the handler raises and the step runs on: `expired()` then says so (compose.py keeps
    nothing it composed meanwhile), and the step still ends in Timeout. The alarm is raised
    here at a chosen point instead of by a short timer, so nothing depends on timing."""
    steps = []
    with pytest.raises(Timeout):
        with time_limit(600):
            assert not expired()
            _Finalized()  # collected at once: the alarm fires in its __del__, swallowed
            steps.append(expired())
    assert steps == [True] and not expired()
    with time_limit(600):  # the next step starts afresh
        assert not expired()


@pytest.mark.slow
def test_a_long_script_gives_the_same_findings_alone_and_under_load(tmp_path, verl_trees):
    """70 launches, linted alone and then while two other lints run: the same findings, every
    launch analysed (a per-file wall clock dropped the whole file once the machine was busy)."""
    lines = ["#!/bin/bash"]
    for i in range(70):
        typo = " trainer.nnodez=1" if i % 7 == 0 else ""
        lines.append(
            f"python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm trainer.experiment_name=run{i} "
            f"data.train_batch_size={64 * (i % 4 + 1)} actor_rollout_ref.actor.ppo_mini_batch_size=32 "
            f"trainer.n_gpus_per_node=8 trainer.n_gpus_per_node={8 if i % 2 else 4}{typo}"
        )
    (tmp_path / "sweep.sh").write_text("\n".join(lines) + "\n")
    argv = [sys.executable, "-m", "verl_lint.cli", "check", "--no-cache", "--format", "json", "--exit-zero"]
    argv += ["--verl-root", str(verl_trees[OLDER].root), "sweep.sh"]
    env = dict(os.environ, NO_COLOR="1")

    def run() -> subprocess.Popen:
        return subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def result(proc: subprocess.Popen) -> list:
        out, err = proc.communicate(timeout=1200)
        assert proc.returncode == 0, err[-2000:]
        return json.loads(out)

    alone = result(run())
    *findings, summary = alone
    assert summary["launches"]["analysed"] == 70 and summary["files"]["not_analysed"] == 0, summary
    assert not [f for f in findings if f["code"] == "VL005"]
    assert {f["code"] for f in findings} >= {"VL101", "VL107"}  # the typos and the duplicated key
    procs = [run() for _ in range(3)]  # each one runs while the other two do
    assert all(result(p) == alone for p in procs)


def test_an_alarm_as_the_clock_starts_leaves_nothing_behind(monkeypatch):
    """The alarm may fire as soon as the clock is armed (a tiny `--timeout`): the step ends in
    Timeout and the next step starts clean, one without a limit included (the handler restored,
    `expired()` false). It once left both behind, and the next launch linted without a limit
    reported VL005. The alarm is raised at that point here instead of by a short timer."""
    real = signal.setitimer

    def arm(which, seconds, *rest):
        out = real(which, seconds, *rest)
        if seconds:
            signal.raise_signal(signal.SIGALRM)  # fires before the block starts
        return out

    handler = signal.getsignal(signal.SIGALRM)
    monkeypatch.setattr(signal, "setitimer", arm)
    with pytest.raises(Timeout):
        with time_limit(600):
            pass
    monkeypatch.undo()
    assert not expired() and signal.getsignal(signal.SIGALRM) is handler
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    with time_limit(0):  # no limit: nothing left over fires
        assert not expired()
