"""verl-lint inside the launch: a Hydra callback that lints the job before it starts.

Enable it without editing verl, on the command line of any verl Hydra app:

    python3 -m verl.trainer.main_ppo ... \\
        +hydra.callbacks.verl_lint._target_=verl_lint.callback.VerlLintCallback

or in a primary config:

    hydra:
      callbacks:
        verl_lint:
          _target_: verl_lint.callback.VerlLintCallback
          fail_on: error

Parameters (each also as `+hydra.callbacks.verl_lint.NAME=VALUE`):
  fail_on      error | warning | info | never (default error): findings at or above it
               stop the job before the task function runs.
  select       codes/prefixes/names to run (list or comma-separated string); the rules that
               read the whole verl tree (keys nobody reads, ...: their pages say so) run here
               only when selected.
  ignore       codes/prefixes/names to skip.
  report_path  also write the JSON report (the `--format json` list) to this file.
  strict       false (default): if verl-lint itself fails or a parameter here is bad, warn
               in one line and let the job run. true: stop the job instead. A bool, or one
               of the strings true/false/yes/no/1/0.
  plugins      modules to import first (e.g. ones that register extra rules).

`on_job_start` sees the real composed config (with Hydra's `hydra` node; a value that does not
resolve, e.g. `${oc.env:UNSET}`, is Unknown to the rules that read it) and the real
environment. It runs every config rule, the environment rules on `os.environ` plus the
config's Ray `runtime_env.env_vars`, and the live allocator check.

The lint itself is `verl_lint.live` (the adapter from a live config to the lint core).

Aborting must bypass Hydra: hydra 1.3 catches any `Exception` a callback raises and turns
it into a warning (`hydra/_internal/callbacks.py`, `Callbacks._notify`), and the job runs
anyway. So a blocking finding prints its report and raises `SystemExit(1)`, which Hydra
does not catch. verl-lint's own failures are caught here with `except Exception`, per
stage (plugins, config rules, live check, report) and per rule: each is one warning line
and the rest still runs (a linter bug never blocks training); `strict=true` turns them into
`SystemExit(2)` with the traceback.

Only the standard library, Hydra (already imported by the app) and light verl_lint modules are
imported when this module loads; the lint core (`verl_lint.live`) when a job starts.
"""

from __future__ import annotations

import gc
import importlib
import json
import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback

from .files import write_atomic
from .model import Severity, in_config_file
from .terminal import safe  # findings quote config values, which may come from any YAML file

log = logging.getLogger("verl_lint")

EXIT_FINDINGS, EXIT_INTERNAL = 1, 2
ENABLE_LINE = "+hydra.callbacks.verl_lint._target_=verl_lint.callback.VerlLintCallback"


# -------------------------------------------------------------- callback ----


def _codes(value) -> tuple[str, ...]:
    if value is None:
        return ()
    items = [value] if isinstance(value, str) else list(value)
    return tuple(x.strip() for item in items for x in str(item).split(",") if x.strip())


_FLAGS = {"true": True, "yes": True, "1": True, "false": False, "no": False, "0": False}


def _flag(value: Any) -> bool | None:
    """A boolean parameter as Hydra hands it over, or None if it is not one.

    `strict=false` arrives as a bool, `strict='false'` (or YAML `strict: 'no'`) as a string,
    `strict=1` as an int: bool('false') would be True."""
    if isinstance(value, bool):
        return value
    return _FLAGS.get(str(value).strip().lower()) if isinstance(value, (int, str)) else None


class VerlLintCallback(Callback):
    """Lint the job's config and environment in `on_job_start`, before the task function runs."""

    def __init__(
        self,
        fail_on: str = "error",
        select: Any = None,
        ignore: Any = None,
        report_path: str | None = None,
        strict: bool = False,
        plugins: Any = None,
    ) -> None:
        # A bad parameter must not stop the job (unless strict): it is kept as one line for
        # on_job_start, where logging is set up, and a safe value stands in for it. The
        # messages come from verl_lint.settings, imported only then (a clean start skips it).
        self.problems: list[tuple[str, str]] = []  # (what is wrong, what stands in for it)
        flag = False if strict is None else _flag(strict)
        if flag is None:
            from .settings import show  # only a bad parameter needs its messages

            self.problems.append((f"strict={show(strict)}: must be true or false (or yes/no, 1/0)", "Taken as false"))
        self.strict = bool(flag)
        self.fail_on = "error" if fail_on is None else str(fail_on).strip().lower()
        if self.fail_on != "never" and self.fail_on.upper() not in Severity.__members__:  # settings.FAIL_ON
            from .settings import FAIL_ON, choice_problem, show  # only a bad parameter needs its messages

            problem = choice_problem(self.fail_on, FAIL_ON)
            self.problems.append((f"fail_on={show(fail_on)}: {problem}", "Findings are only logged"))
            self.fail_on = "never"
        self.select = _codes(select)
        self.ignore = _codes(ignore)
        self.report_path = str(report_path) if report_path else None
        self.plugins = _codes(plugins)
        self.diagnostics: list = []  # the last job's findings
        self.elapsed = 0.0  # seconds spent in the last on_job_start
        self.skipped: list[str] = []  # stages or rules of the last job that failed open

    # Hydra calls this after composing, configuring logging and creating the output dir,
    # immediately before the task function (hydra/core/utils.py, run_job).
    def on_job_start(self, config, **kwargs: Any) -> None:
        # The lint runs with the collector paused, and it is left as it was: a collection landing
        # in it walks the whole job's heap (Hydra, OmegaConf, everything imported so far), ~25 ms,
        # more than the lint itself; what the lint leaves behind is collected with the job's own
        # garbage later.
        enabled = gc.isenabled()
        gc.disable()
        try:
            self._lint(config, **kwargs)
        finally:
            if enabled:
                gc.enable()

    def _lint(self, config, **kwargs: Any) -> None:
        start = time.perf_counter()
        task = kwargs.get("task_function")
        task_file = getattr(getattr(task, "__code__", None), "co_filename", None)
        self.skipped = []
        # Each stage fails open on its own: a broken plugin, rule or live check is one warning
        # line and the other stages still run (and may still stop a bad job).
        for name in self.plugins:  # first: a plugin may register rules that select/ignore name
            self._guard(f"plugin {name}", importlib.import_module, name)
        for problem, instead in self.problems + (self._guard("select/ignore", self._code_problems) or []):
            self._bad_setting(problem, instead)
        # The lint core (rules, Hydra config reading) loads only when a job starts; a broken
        # installation is one more stage that fails open.
        live = self._guard("lint core", importlib.import_module, "verl_lint.live")
        diags = []
        if live is not None:
            found = self._guard(
                "config rules",
                live.lint_config,
                config,
                None,
                os.environ,
                select=self.select,
                ignore=self.ignore,
                task_file=task_file,
                on_error=self._rule_error,
            )
            running = self._guard("live allocator check", live.live_findings, config, task_file, os.environ)
            diags = live.merge(found or [], running or [], self.select, self.ignore)
        if self.report_path:
            self._guard(f"report {self.report_path}", self._write_report, diags)
        self.elapsed = time.perf_counter() - start
        self.diagnostics = diags
        self._act(diags)

    def _guard(self, what: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as ex:  # noqa: BLE001 - a linter bug must never block training
            self._internal_error(what, ex)
            return None

    def _rule_error(self, rule, ex: Exception) -> None:
        self._internal_error(f"rule {rule.code} ({rule.name})", ex)

    def _code_problems(self) -> list[tuple[str, str]]:
        if not (self.select or self.ignore):
            return []
        from .settings import code_problem  # only select/ignore need the rule names checked

        named = [("select", c) for c in self.select] + [("ignore", c) for c in self.ignore]
        return [(f"{name}: {problem}", "It matches no rule") for name, code in named if (problem := code_problem(code))]

    def _bad_setting(self, problem: str, instead: str) -> None:
        """One line for a bad parameter: a warning and the job runs, or (strict) the job stops."""
        if self.strict:
            _flush_logs()
            sys.stderr.write(f"verl-lint: bad setting {problem}. Stopping the job (strict=true)\n")
            sys.stderr.flush()
            raise SystemExit(EXIT_INTERNAL)
        log.warning("verl-lint: bad setting %s. %s; the job continues (strict=true would stop it)", problem, instead)

    def _write_report(self, diags) -> None:

        path = Path(self.report_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps([d.to_json() for d in diags], indent=2, ensure_ascii=False) + "\n")

    def _blocking(self, d) -> bool:

        return self.fail_on != "never" and d.severity >= Severity.parse(self.fail_on)

    def _act(self, diags) -> None:

        blocking = [d for d in diags if self._blocking(d)]
        if blocking:
            others = [d for d in diags if not self._blocking(d)]
            _flush_logs()
            sys.stderr.write(format_block(blocking, others, self.fail_on))
            sys.stderr.flush()
            raise SystemExit(EXIT_FINDINGS)  # a BaseException: Hydra's callback runner does not swallow it
        for d in diags:
            level = logging.WARNING if d.severity >= Severity.WARNING else logging.INFO
            log.log(level, "verl-lint: %s", _one_line(d))
        if diags:
            log.info(
                "verl-lint: %d finding(s), none blocks the job (fail_on=%s)%s (%.1f ms)",
                len(diags),
                self.fail_on,
                f", {len(self.skipped)} check(s) skipped (see above)" if self.skipped else "",
                self.elapsed * 1000,
            )
        elif not self.skipped:
            log.info("verl-lint: config and environment clean (%.1f ms)", self.elapsed * 1000)
        else:
            log.info(
                "verl-lint: no findings, but %d check(s) skipped (see above) (%.0f ms)",
                len(self.skipped),
                self.elapsed * 1000,
            )

    def _internal_error(self, what: str, ex: Exception) -> None:
        self.skipped.append(what)
        text = str(ex).strip().splitlines()[0] if str(ex).strip() else ""
        name = f"{type(ex).__name__}: {text}" if text else type(ex).__name__
        if self.strict:
            _flush_logs()
            sys.stderr.write(f"verl-lint: internal error in {what}, stopping the job (strict=true): {name}\n")
            traceback.print_exception(type(ex), ex, ex.__traceback__, file=sys.stderr)
            sys.stderr.flush()
            raise SystemExit(EXIT_INTERNAL) from ex
        log.warning(
            "verl-lint: internal error in %s: %s; skipped it, the job continues (strict=true would stop it)", what, name
        )


def _one_line(d) -> str:
    key = f" {d.key}:" if d.key else ""
    return safe(f"{d.code} [{d.severity}]{key} {d.message}" + (f" (help: {d.help})" if d.help else ""))


def format_block(blocking: list, others: list, fail_on: str) -> str:
    """The report printed when the job is stopped: code, key, message and help of each finding."""
    n = len(blocking)
    lines = [
        "",
        f"verl-lint: stopped the job before it started: {n} finding{'s' * (n != 1)} at or above fail_on={fail_on}",
        "",
    ]
    for d in list(blocking) + list(others):
        at = f"  at {d.span.path}:{d.span.line}:{d.span.col}" if in_config_file(d.span) else ""
        lines.append(f"  {d.code} [{d.severity}] {safe(d.key or '-')}{safe(at)}")
        lines.append(f"      {safe(d.message)}")
        if d.help:
            lines.append(f"      help: {safe(d.help)}")
        lines.append("")
    lines.append(
        "Fix the config, or let the job run anyway with "
        "+hydra.callbacks.verl_lint.fail_on=never (findings are then logged as warnings)."
    )
    return "\n".join(lines) + "\n"


def _flush_logs() -> None:
    for h in logging.getLogger().handlers:
        try:
            h.flush()
        except Exception:  # noqa: BLE001
            pass
