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
  select       codes/prefixes/names to run (list or comma-separated string); VL230/VL231
               (keys nobody reads) run here only when selected.
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

Aborting must bypass Hydra: hydra 1.3 catches any `Exception` a callback raises and turns
it into a warning (`hydra/_internal/callbacks.py`, `Callbacks._notify`), and the job runs
anyway. So a blocking finding prints its report and raises `SystemExit(1)`, which Hydra
does not catch. verl-lint's own failures are caught here with `except Exception`, per
stage (plugins, config rules, live check, report) and per rule: each is one warning line
and the rest still runs (a linter bug never blocks training); `strict=true` turns them into
`SystemExit(2)` with the traceback.

The adapter gives the rules a Launch at "<hydra>" (no script: `launch.env` stays empty, the
process environment is `ctx.env`), a Composition whose config is the config Hydra passes (its
`hydra` node stays: rules read keys by path, and copying verl's config would cost as much as the
lint) and whose overrides are `hydra.overrides.task`, and the verl tree the task
function's file (or a file config dir) lives in, else the installed one.

Only the standard library, Hydra (already imported by the app) and verl_lint.terminal are
imported when this module loads; the rule engine is imported on first use. Nothing here
imports torch, torch-npu, vllm or verl's Python modules.
"""

from __future__ import annotations

import logging
import os
import sys
import time
from collections.abc import Iterable, Mapping
from functools import lru_cache
from typing import Any

from hydra.experimental.callback import Callback

from .terminal import safe  # findings quote config values, which may come from any YAML file

log = logging.getLogger("verl_lint")

COMMAND_LINE = "<command line>"
ENVIRONMENT = "<environment>"
RAY_ENV_VARS = "ray_kwargs.ray_init.runtime_env.env_vars"
EXIT_FINDINGS, EXIT_INTERNAL = 1, 2
ENABLE_LINE = "+hydra.callbacks.verl_lint._target_=verl_lint.callback.VerlLintCallback"


# --------------------------------------------------------------- adapter ----


# Rules that read the whole verl tree (the reader index, ~35 ms; the config classes and the code
# that converts them, ~100 ms) at every job start against a 50 ms budget: the callback runs
# them only when `select` asks for them (`check`/`run` always do).
OPT_IN = ("VL108", "VL110", "VL230", "VL231")


def lint_config(
    cfg,
    overrides: Iterable[str] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    select: Iterable[str] = (),
    ignore: Iterable[str] = (),
    task_file: str | None = None,
    config_name: str | None = None,
    on_error=None,
):
    """Lint a composed job config: every config rule and the env rules.

    `cfg` is the config Hydra hands a callback (with the `hydra` node; it is not modified)
    or a job config without it. `overrides` are the job's task overrides (default:
    `cfg.hydra.overrides.task`); `env` is the process environment (default: `os.environ`);
    `config_name` defaults to `cfg.hydra.job.config_name` (rules limited to some apps need it).
    Returns finalized diagnostics (select/ignore applied, de-duplicated, stable order),
    located at Span("<command line>", 1, col) for overridden keys (col: the override's
    offset in the overrides joined by spaces), Span("<command line>", 1, 1) for defaults and
    Span("<environment>", 1, 1) for environment variables. A rule that raises propagates,
    unless `on_error(rule, exception)` is given: then it is called and the other rules run.
    """
    from omegaconf import OmegaConf

    from .rules import pack  # noqa: F401 - registers the rule pack
    from .config.compose import Composition
    from .registry import REGISTRY, finalize, parse_version, run_rules, selected
    from .config.context import Context
    from .environment import installed_versions
    from .model import EnvVar, Launch, Span
    from .engines.versions import ENGINES, Evidence
    from .engines.versions import notes as version_notes

    hydra_node = _hydra_node(cfg)
    if overrides is None:
        task = OmegaConf.select(hydra_node, "overrides.task", default=None) if hydra_node is not None else None
        # The override text as typed: iterating the list would resolve a `${oc.env:UNSET}` in it
        # and fail for every rule; the value itself is Unknown only to the rules that read it.
        overrides = OmegaConf.to_container(task, resolve=False) if task is not None else []
    overrides = [str(o) for o in overrides]
    env = os.environ if env is None else env
    choices = _choices(hydra_node)
    if config_name is None and hydra_node is not None:
        config_name = str(OmegaConf.select(hydra_node, "job.config_name", default="") or "")
    config_name = (config_name or "").removesuffix(".yaml")
    config_dirs = _config_dirs(hydra_node)
    tree = _verl_tree(task_file, config_dirs)
    app = _hydra_app(task_file, config_dirs, config_name or None, tree)

    anchor = Span(COMMAND_LINE, 1, 1, 1, 1)
    launch = Launch(path="<hydra>", span=anchor, entry_span=anchor, module=None, file=task_file)
    comp = Composition(app, cfg)
    comp.overrides = _applied(overrides, choices)
    launch.overrides = [o.word for o in comp.overrides]

    env_vars = {name: EnvVar(name, value, Span(ENVIRONMENT, 1, 1, 1, 1), None, True) for name, value in env.items()}
    env_vars.update(_ray_env(cfg, comp, anchor))

    versions = {k: parse_version(v) for k, v in installed_versions().items()}
    versions["verl"] = parse_version(tree.version if tree else None)
    # In the live process the installed engines are the evidence (verl_lint.engines.versions)
    engines = {k: Evidence(k, v, source="installed") for k, v in versions.items() if k in ENGINES and v is not None}
    ctx = Context(launch, comp, versions, env_vars, engines, live=True)
    rules = [r for r in REGISTRY if selected(r.code, r.name, select, ignore) and (r.code not in OPT_IN or select)]
    if on_error is None:
        diags = run_rules(ctx, rules)
    else:
        diags = []
        for r in rules:
            try:
                diags.extend(run_rules(ctx, [r]))
            except Exception as ex:  # noqa: BLE001 - reported through on_error; the other rules still run
                on_error(r, ex)
    diags += version_notes(ctx)
    for d in diags:
        _add_provenance(d, comp, env_vars, choices, config_name)
    return finalize(diags, select, ignore)


def _hydra_node(cfg):
    from omegaconf import DictConfig

    return cfg.get("hydra") if isinstance(cfg, DictConfig) and "hydra" in cfg else None


def _choices(hydra_node) -> dict[str, str]:
    from omegaconf import OmegaConf

    if hydra_node is None:
        return {}
    raw = OmegaConf.select(hydra_node, "runtime.choices", default=None)
    if raw is None:
        return {}
    return {str(k): str(v) for k, v in OmegaConf.to_container(raw).items() if v is not None and not str(k).startswith("hydra/")}


def _config_dirs(hydra_node) -> tuple:
    from pathlib import Path

    from omegaconf import OmegaConf

    out = []
    for src in (OmegaConf.select(hydra_node, "runtime.config_sources", default=None) or []) if hydra_node is not None else []:
        path, schema = src.get("path"), src.get("schema")
        if schema == "file" and path and Path(path).is_dir():
            out.append(Path(path).resolve())
    return tuple(out)


@lru_cache(maxsize=8)
def _verl_tree(task_file: str | None, config_dirs: tuple):
    """The verl the job runs: the tree of the app file or of a config dir, else the installed one."""
    from pathlib import Path

    from .launch.locate import find_checkout, installed_tree

    for start in ([Path(task_file).resolve().parent] if task_file else []) + list(config_dirs):
        tree = find_checkout(start)
        if tree is not None:
            return tree
    return installed_tree()


def _hydra_app(task_file, config_dirs, config_name, tree):
    from pathlib import Path

    from .launch.locate import HydraApp

    file = Path(task_file) if task_file else Path("<hydra>")
    return HydraApp(file.name, file, tuple(config_dirs), config_name, None, tree, None)


_PREFIX_KIND = {"": "set", "+": "add", "++": "force_add", "~": "delete"}


def _applied(overrides: list[str], choices: dict[str, str]):
    """The task overrides as AppliedOverride, located in the overrides joined by spaces.

    Hydra has parsed and applied them already; only the key and the kind are needed here, and
    the override grammar makes those plain text: `~`, `+` or `++`, then the key up to the first
    `=` (a key cannot contain one). Parsing again with Hydra's grammar costs ~1 ms per override.
    """
    from .config.compose import AppliedOverride
    from .model import Span, Word

    out = []
    col = 1
    for line in overrides:
        span = Span(COMMAND_LINE, 1, col, 1, col + len(line), col - 1, col - 1 + len(line))
        col += len(line) + 1
        prefix = "++" if line.startswith("++") else line[:1] if line[:1] in ("+", "~") else ""
        key_text, _, value = line[len(prefix) :].partition("=")
        key_text = key_text.strip()
        key = key_text.partition("@")[0]  # Hydra's key_or_group
        kind = _PREFIX_KIND[prefix]
        if key.startswith(("hydra.", "hydra/")):
            kind = "hydra"
        elif not value.lstrip().startswith("{") and (key_text in choices or key in choices):
            kind = "group"
        out.append(AppliedOverride(Word(line, span), line, key, kind))
    return out


def _ray_env(cfg, comp, anchor) -> dict:
    """The Ray workers' extra env vars from the config (`ray_kwargs...runtime_env.env_vars`)."""
    from omegaconf import DictConfig, OmegaConf

    from .model import EnvVar

    node = OmegaConf.select(cfg, RAY_ENV_VARS, default=None, throw_on_resolution_failure=False)
    if not isinstance(node, DictConfig):
        return {}
    out = {}
    for name, value in _resolved_items(node):
        setter = comp.last_setter(f"{RAY_ENV_VARS}.{name}")
        out[str(name)] = EnvVar(str(name), str(value), setter.word.span if setter else anchor, None, True)
    return out


def live_findings(cfg, task_file: str | None = None, env: Mapping[str, str] | None = None) -> list:
    """The live allocator check (`verl_lint.rules.allocator_live.check_allocator`) for a job.

    Called with the job's rollout config, the verl tree the job runs and the environment
    (`env`, default `os.environ`, plus the config's Ray `runtime_env.env_vars`). Not
    finalized: the caller merges it with `lint_config`.
    """
    from omegaconf import DictConfig, OmegaConf

    from .rules.allocator_live import check_allocator

    rollout = OmegaConf.select(cfg, "actor_rollout_ref.rollout", default=None, throw_on_resolution_failure=False)
    environ = dict(os.environ if env is None else env)
    ray_env = OmegaConf.select(cfg, RAY_ENV_VARS, default=None, throw_on_resolution_failure=False)
    if isinstance(ray_env, DictConfig):
        environ.update({str(k): str(v) for k, v in _resolved_items(ray_env)})
    tree = _verl_tree(task_file, _config_dirs(_hydra_node(cfg)))
    return list(check_allocator(rollout_config=rollout, verl_tree=tree, environ=environ))


def _resolved_items(node):
    for k in node.keys():
        try:
            v = node[k]
        except Exception:  # noqa: BLE001 - an unresolvable value is not known
            continue
        if v is not None:
            yield k, v


def _group_file(key: str, choices: dict[str, str]) -> str | None:
    """The config group file that owns `key` (`actor@actor_rollout_ref.actor: dp_actor` → actor/dp_actor.yaml)."""
    best = None
    for spec, choice in choices.items():
        group, _, package = spec.partition("@")
        package = package or group.replace("/", ".")
        if package == "_global_":
            continue
        if (key == package or key.startswith(package + ".")) and (best is None or len(package) > len(best[0])):
            best = (package, f"{group}/{choice}.yaml")
    return best[1] if best else None


def _add_provenance(d, comp, env_vars, choices, config_name) -> None:
    """Name where the finding's key came from: the override, the environment, or a YAML default."""
    if not d.key or "(from the command line" in d.message or "(default from" in d.message:
        return
    setter = comp.last_setter(d.key)
    if setter is not None:
        d.message += f" (from the command line: `{setter.line}`)"
    elif d.span.path == ENVIRONMENT or (d.key in env_vars and "." not in d.key):
        where = "the environment" if d.span.path == ENVIRONMENT else f"`{RAY_ENV_VARS}`"
        d.message += f" (from {where})"
    else:
        source = _group_file(d.key, choices) or (f"{config_name}.yaml" if config_name else "the config")
        d.message += f" (default from {source})"


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
        from .model import Severity

        # A bad parameter must not stop the job (unless strict): it is kept as one line for
        # on_job_start, where logging is set up, and a safe value stands in for it. The
        # messages come from verl_lint.settings, imported only then (a clean start skips it).
        self.problems: list[tuple[str, str]] = []  # (what is wrong, what stands in for it)
        flag = False if strict is None else _flag(strict)
        if flag is None:
            from .settings import show

            self.problems.append((f"strict={show(strict)}: must be true or false (or yes/no, 1/0)", "Taken as false"))
        self.strict = bool(flag)
        self.fail_on = "error" if fail_on is None else str(fail_on).strip().lower()
        if self.fail_on != "never" and self.fail_on.upper() not in Severity.__members__:  # settings.FAIL_ON
            from .settings import FAIL_ON, choice_problem, show

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
        start = time.perf_counter()
        task = kwargs.get("task_function")
        task_file = getattr(getattr(task, "__code__", None), "co_filename", None)
        self.skipped = []
        # Each stage fails open on its own: a broken plugin, rule or live check is one warning
        # line and the other stages still run (and may still stop a bad job).
        for name in self.plugins:  # first: a plugin may register rules that select/ignore name
            self._guard(f"plugin {name}", _import, name)
        for problem, instead in self.problems + (self._guard("select/ignore", self._code_problems) or []):
            self._bad_setting(problem, instead)
        found = self._guard("config rules", lint_config, config, None, os.environ, select=self.select, ignore=self.ignore,
                            task_file=task_file, on_error=self._rule_error)
        live = self._guard("live allocator check", live_findings, config, task_file, os.environ)
        diags = _merge(found or [], live or [], self.select, self.ignore)
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
        from .settings import code_problem

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
        import json
        from pathlib import Path

        from .files import write_atomic

        path = Path(self.report_path)
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, json.dumps([d.to_json() for d in diags], indent=2, ensure_ascii=False) + "\n")

    def _blocking(self, d) -> bool:
        from .model import Severity

        return self.fail_on != "never" and d.severity >= Severity.parse(self.fail_on)

    def _act(self, diags) -> None:
        from .model import Severity

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
        if not diags and not self.skipped:
            log.info("verl-lint: config and environment clean (%.1f ms)", self.elapsed * 1000)
        elif not diags:
            log.info("verl-lint: no findings, but %d check(s) skipped (see above) (%.0f ms)", len(self.skipped), self.elapsed * 1000)

    def _internal_error(self, what: str, ex: Exception) -> None:
        self.skipped.append(what)
        text = str(ex).strip().splitlines()[0] if str(ex).strip() else ""
        name = f"{type(ex).__name__}: {text}" if text else type(ex).__name__
        if self.strict:
            import traceback

            _flush_logs()
            sys.stderr.write(f"verl-lint: internal error in {what}, stopping the job (strict=true): {name}\n")
            traceback.print_exception(type(ex), ex, ex.__traceback__, file=sys.stderr)
            sys.stderr.flush()
            raise SystemExit(EXIT_INTERNAL) from ex
        log.warning("verl-lint: internal error in %s: %s; skipped it, the job continues (strict=true would stop it)", what, name)


def _import(name: str) -> None:
    import importlib

    importlib.import_module(name)


def _merge(static: list, live: list, select, ignore) -> list:
    """Config/env findings plus live ones; a live finding replaces a static one with its code and key."""
    from .registry import finalize

    seen = {(d.code, d.key) for d in live}
    return finalize([d for d in static if (d.code, d.key) not in seen] + list(live), select, ignore)


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
        lines.append(f"  {d.code} [{d.severity}] {safe(d.key or '-')}")
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
