"""The limits on analysing one script, so that its findings depend on its input, not on how busy
the machine is.

The budget is counted in work, not seconds: a script's launches are analysed in order, at most
`Options.max_launches` of them (a command analysed once per branch value or loop iteration
counts once per variant; each such variant is bounded already: `shell.evaluator.MAX_VARIANTS`).
The wall clock is a last-resort safety net against a hang in the code verl-lint runs (Hydra,
OmegaConf): `Options.timeout` seconds for each step, the shell analysis of the file and each
launch, never for the file as a whole, so a long script of ordinary launches never reaches it.
The clock stops while a step builds what the rest of the run reuses from the cache (a verl
tree's reader index, its guards: `cache.memo`): that work is bounded by the tree, paid by
whichever launch comes first, and would otherwise put the first launch over the limit on a
busy machine. What was analysed before a limit is kept; the rest is reported as not analysed
(ANALYSIS_TIMEOUT).
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

MAX_LAUNCHES = 1000  # launch analyses per script: ~0.1 s each, so minutes at most


class Timeout(BaseException):
    """A step ran out of time. Not an `Exception`: no `except Exception` in the code a step runs
    may swallow it and carry on with half an answer. `report`: what was analysed before, when
    the caller kept it (pipeline.lint_text), never to be cached as the file's result."""

    def __init__(self, report=None):
        super().__init__()
        self.report = report


_FIRED = False  # the running step's time ran out (set by the alarm, cleared when a step starts)


@contextmanager
def time_limit(seconds: float):
    """Raise `Timeout` in the block after `seconds` of wall time (0: none; main thread only,
    where signals are delivered; elsewhere unbounded).

    The alarm raises wherever the step happens to be; where Python swallows what it raises (a
    `__del__`, a weakref or garbage-collector callback), the step could go on with half an
    answer: the block then still ends in `Timeout`, and `expired()` tells the code meanwhile
    that nothing it computed may be kept."""
    global _FIRED
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return
    import signal  # why: ~0.5 ms (its enums) that a Hydra job start, which arms no clock, never needs

    _FIRED = False
    old = signal.signal(signal.SIGALRM, _alarm)
    try:  # (from arming the clock on: an alarm that fires at once still restores everything)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)  # (an alarm pending here is delivered, and raises)
        finally:
            signal.signal(signal.SIGALRM, old)
            fired, _FIRED = _FIRED, False
    if fired:  # (the block ended normally: what the alarm raised was swallowed)
        raise Timeout()


def expired() -> bool:
    """The running step's time limit has fired (even where the `Timeout` it raised was swallowed)."""
    return _FIRED


def _alarm(signum, frame):
    global _FIRED
    _FIRED = True
    raise Timeout()


@contextmanager
def paused():
    """Stop the clock of `time_limit` for the block, then give the step the time it had left.
    Only our own clock: a timer of the process verl-lint runs in (the Hydra callback's job) is
    left alone."""
    import signal  # why: as in time_limit; paused only runs on a cache miss, which a warm job start has none of

    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGALRM) is not _alarm:
        yield
        return
    left, _ = signal.getitimer(signal.ITIMER_REAL)
    if not left:
        yield
        return
    signal.setitimer(signal.ITIMER_REAL, 0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, left)
