"""Lint a live Hydra job: its composed config and real environment, fed to the same lint core
(`rules.pack.check`) as a script's launches. The adapter gives the rules a Launch at "<hydra>"
(no script: `launch.env` stays empty, the process environment is `ctx.env`), a Composition
whose config is the config Hydra passes (its `hydra` node stays: rules read keys by path, and
copying verl's config would cost as much as the lint) and whose overrides are
`hydra.overrides.task`, and the verl tree the task function's file (or a file config dir)
lives in, else the installed one. Nothing here imports torch, torch-npu, vllm or verl's Python
modules.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from .config.compose import AppliedOverride, Composition, live_file_settings
from .config.context import Context
from .engines.versions import context_versions, live_evidence, project_root
from .environment import installed_versions
from .gpus import live_gpu_gib
from .launch.locate import HydraApp, find_checkout, installed_tree
from .model import COMMAND_LINE, EnvVar, Launch, Span, Word
from .registry import REGISTRY, finalize, parse_version, selected
from .rules import pack
from .rules.allocator_live import check_allocator

ENVIRONMENT = "<environment>"
RAY_ENV_VARS = "ray_kwargs.ray_init.runtime_env.env_vars"


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
    argv: list[str] | None = None,
    gpu: tuple[float, str] | None = None,
):
    """Lint a composed job config: every config rule and the env rules.

    `cfg` is the config Hydra hands a callback (with the `hydra` node; it is not modified)
    or a job config without it. `overrides` are the job's task overrides (default:
    `cfg.hydra.overrides.task`); `env` is the process environment (default: `os.environ`);
    `config_name` defaults to `cfg.hydra.job.config_name` (rules limited to some apps need it).
    Returns finalized diagnostics (select/ignore applied, de-duplicated, stable order),
    located on the command line (`argv`, default `sys.argv`) at the argument that set the key
    (line N + 1 for argument N, see `model.COMMAND_LINE`; line 1 when the override is not in
    `argv`, e.g. from a config's defaults), and at Span("<environment>", 1, 1) for environment
    variables. A rule that raises propagates,
    unless `on_error(rule, exception)` is given: then it is called and the other rules run.
    `gpu` is (GiB per GPU, where it comes from) for the memory rules; default: the live device,
    when the job has already loaded torch (or torch_npu) and the accelerator is present.
    """
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
    comp.overrides = _applied(overrides, choices, sys.argv if argv is None else argv)
    launch.overrides = [o.word for o in comp.overrides]
    comp.file_settings = _file_settings(hydra_node, config_name, comp.overrides, tree)

    env_vars = {name: EnvVar(name, value, Span(ENVIRONMENT, 1, 1, 1, 1), None, True) for name, value in env.items()}
    env_vars.update(_ray_env(cfg, comp, anchor))

    versions = {k: parse_version(v) for k, v in installed_versions().items()}
    # The installed engines, else the releases the verl tree and the project declare: the evidence
    # `check` reads for the same tree (verl_lint.engines.versions).
    start = Path(task_file).resolve().parent if task_file else (config_dirs[0] if config_dirs else None)
    engines = live_evidence(versions, tree.root if tree else None, project_root(start) if start else None)
    versions.update(context_versions(engines))
    versions["verl"] = parse_version(tree.version if tree else None)
    ctx = Context(launch, comp, versions, env_vars, engines, live=True)
    ctx.gpu_gib, ctx.gpu_origin = gpu or live_gpu_gib() or (None, "")
    rules = [r for r in REGISTRY if selected(r.code, r.name, select, ignore) and (r.in_callback or select)]
    diags = pack.check(ctx, rules, on_error)
    for d in diags:
        _add_provenance(d, comp, env_vars, choices, config_name)
    return finalize(diags, select, ignore)


def _hydra_node(cfg):

    return cfg.get("hydra") if isinstance(cfg, DictConfig) and "hydra" in cfg else None


def _choices(hydra_node) -> dict[str, str]:

    if hydra_node is None:
        return {}
    raw = OmegaConf.select(hydra_node, "runtime.choices", default=None)
    if raw is None:
        return {}
    return {
        str(k): str(v)
        for k, v in OmegaConf.to_container(raw).items()
        if v is not None and not str(k).startswith("hydra/")
    }


def _config_dirs(hydra_node) -> tuple:

    out = []
    for src in (
        (OmegaConf.select(hydra_node, "runtime.config_sources", default=None) or []) if hydra_node is not None else []
    ):
        path, schema = src.get("path"), src.get("schema")
        if schema == "file" and path and Path(path).is_dir():
            out.append(Path(path).resolve())
    return tuple(out)


@lru_cache(maxsize=8)
def _verl_tree(task_file: str | None, config_dirs: tuple):
    """The verl the job runs: the tree of the app file or of a config dir, else the installed one."""
    for start in ([Path(task_file).resolve().parent] if task_file else []) + list(config_dirs):
        tree = find_checkout(start)
        if tree is not None:
            return tree
    return installed_tree()


def _file_settings(hydra_node, config_name: str, overrides: list[AppliedOverride], tree) -> list[AppliedOverride]:
    """The values the job's project config files chose, located in them (none without such files)."""
    raw = OmegaConf.select(hydra_node, "runtime.config_sources", default=None) if hydra_node is not None else None
    sources = [(str(s.get("provider")), f"{s.get('schema')}://{s.get('path')}") for s in raw or () if s.get("path")]
    try:
        return live_file_settings(
            sources, config_name or None, [o.line for o in overrides if o.kind == "group"], tree.root if tree else None
        )
    # noqa: BLE001 - Hydra already composed this job: a defaults list it cannot rebuild only loses the locations
    except Exception:
        return []


def _hydra_app(task_file, config_dirs, config_name, tree):

    file = Path(task_file) if task_file else Path("<hydra>")
    return HydraApp(file.name, file, tuple(config_dirs), config_name, None, tree, None)


_PREFIX_KIND = {"": "set", "+": "add", "++": "force_add", "~": "delete"}


def _applied(overrides: list[str], choices: dict[str, str], argv: list[str]):
    """The task overrides as AppliedOverride, each located at the argument of `argv` that is it.

    Hydra has parsed and applied them already; only the key and the kind are needed here, and
    the override grammar makes those plain text: `~`, `+` or `++`, then the key up to the first
    `=` (a key cannot contain one). Parsing again with Hydra's grammar costs ~1 ms per override.
    """
    out = []
    taken: set[int] = set()
    for line in overrides:
        n = next((i for i, a in enumerate(argv) if i and a == line and i not in taken), 0)
        taken.add(n)
        span = Span(COMMAND_LINE, n + 1, 1, n + 1, 1 + len(line))
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
    if setter is not None and setter.in_file:
        return  # located in the config file
    if setter is not None:
        d.message += f" (from the command line: `{setter.line}`)"
    elif d.span.path == ENVIRONMENT or (d.key in env_vars and "." not in d.key):
        where = "the environment" if d.span.path == ENVIRONMENT else f"`{RAY_ENV_VARS}`"
        d.message += f" (from {where})"
    else:
        source = _group_file(d.key, choices) or (f"{config_name}.yaml" if config_name else "the config")
        d.message += f" (default from {source})"


def merge(static: list, live: list, select, ignore) -> list:
    """Config/env findings plus live ones; a live finding replaces a static one with its code and key."""
    seen = {(d.code, d.key) for d in live}
    return finalize([d for d in static if (d.code, d.key) not in seen] + list(live), select, ignore)
