"""5xx: exports that never reach the Ray workers that need them (VL505): how a launch attaches to
Ray, and which variables verl and the launch's runtime env pass to the workers anyway."""

import ast
import re
from functools import lru_cache
from pathlib import Path

from ..config.context import Context
from ..evidence import source_text
from ..knowledge import load_table
from ..model import RayAttach
from ..registry import rule


def _skip_table() -> tuple[frozenset[str], tuple[str, ...]]:
    skip = load_table("env_vars.yaml").worker_env_skip
    return frozenset(skip.names), skip.prefixes


RUNTIME_ENV_VARS = "ray_kwargs.ray_init.runtime_env.env_vars"


def attach_mode(ctx: Context) -> RayAttach | None:
    """How this launch reaches Ray, when that means the script's exports may not reach the workers.

    As `ray.init(address=...)` resolves it (Ray `python/ray/_private/worker.py` `init`,
    `python/ray/_private/services.py` `canonicalize_bootstrap_address`): an `address` other than
    None/"auto" wins; else a non-empty `RAY_ADDRESS` does; "local", or no address and no cluster
    to find, starts a new local cluster whose workers inherit the driver's environment."""
    la = ctx.launch
    if la.ray is not None and la.ray.kind == "job-submit":
        return la.ray  # the job runs on the cluster: neither address applies to this shell
    given = ctx.get("ray_kwargs.ray_init.address", None)
    if given is not None and not isinstance(given, str):
        return None  # only known at run time
    line = ctx.span("ray_kwargs.ray_init.address").line if given else 0
    env = la.env.get("RAY_ADDRESS")
    address: str | None = given or None
    if address in (None, "auto") and env is not None and env.value != "":
        address, line = env.value, env.span.line  # None: set, to a value only known at run time
        if address is None:
            return la.ray or RayAttach("address", line)
    if address == "local":
        return None
    if la.ray is not None:  # the cluster `ray start` started here (found, or named by its address)
        return la.ray
    return RayAttach("address", line) if address is not None else None


def runtime_env_names(ctx: Context) -> frozenset[str] | None:
    """The names `ray_kwargs.ray_init.runtime_env.env_vars` passes to every worker (from the
    script's overrides or the config's YAML); None when that is only known at run time."""
    value = ctx.get(RUNTIME_ENV_VARS, None)
    if value is None:
        return frozenset()
    return frozenset(str(k) for k in value) if isinstance(value, dict) else None


@lru_cache(maxsize=16)
def verl_runtime_env(root: str) -> tuple[frozenset[str], frozenset[str]]:
    """(names verl forwards from the driver env to every worker, names of verl's default worker env)
    read from `verl/trainer/constants_ppo.py` with ast."""
    try:
        tree = ast.parse(source_text(Path(root) / "verl/trainer/constants_ppo.py") or "")
    except SyntaxError:
        return frozenset(), frozenset()
    forwarded: set[str] = set()
    defaults: set[str] = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.For) and isinstance(n.target, ast.Name) and isinstance(n.iter, (ast.Tuple, ast.List)):
            names = [e.value for e in n.iter.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
            body = ast.Module(body=n.body, type_ignores=[])
            src = ast.unparse(body)
            loop = n.target.id
            if re.search(rf"os\.environ(\.get\(|\[){loop}\b", src) and re.search(rf"\]\[{loop}\]\s*=", src):
                forwarded.update(names)
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "PPO_RAY_RUNTIME_ENV" for t in n.targets
        ):
            if isinstance(n.value, ast.Dict):
                for k, v in zip(n.value.keys, n.value.values):
                    if isinstance(k, ast.Constant) and k.value == "env_vars" and isinstance(v, ast.Dict):
                        defaults |= {
                            kk.value for kk in v.keys if isinstance(kk, ast.Constant) and isinstance(kk.value, str)
                        }
    return frozenset(forwarded), frozenset(defaults)


@rule(
    "VL505",
    "env-not-propagated-to-ray",
    "warning",
)
def env_not_propagated(ctx: Context):
    """A variable exported in the script never reaches the Ray workers that need it.

    ## What it does
    Finds launches that attach to a Ray cluster started elsewhere — a `ray start` earlier in
    the script, `ray job submit ... -- python3 -m ...`, `RAY_ADDRESS`, or
    `ray_kwargs.ray_init.address` — and reports the variables exported for the launch that
    the cluster did not have when it started (exported after `ray start`, or exported at
    all for a submitted job or a remote address). Variables passed through
    `ray_kwargs.ray_init.runtime_env.env_vars` (an override or the config's YAML), through
    `ray job submit --runtime-env-json`, and the ones verl forwards from the driver itself
    (read from `verl/trainer/constants_ppo.py`) are fine. When `ray.init()` starts its own
    local cluster (`RAY_ADDRESS=local`, `ray_init.address=local`, or no address and no
    `ray start`) the driver's environment is inherited and nothing is reported.

    ## Why is this bad?
    Ray workers inherit the environment of the raylet, not of the driver shell: verl's
    trainer, FSDP/Megatron workers and the vLLM/SGLang servers all run in Ray actors. An
    `NCCL_*`, `VLLM_*`, `HCCL_*` or allocator setting exported after `ray start` silently does
    nothing. For names verl has defaults for (`NCCL_DEBUG`, `VLLM_LOGGING_LEVEL`, ...) it is
    worse: verl drops its own default because the driver has the variable, so the workers
    get neither.

    ## Use instead
    Export before `ray start` on every node, or pass the variable as
    `+ray_kwargs.ray_init.runtime_env.env_vars.NAME=value` (for `ray job submit`:
    `--runtime-env-json='{"env_vars": {...}}'`).

    ## Where in verl
    0.9.1 `verl/trainer/main_ppo.py:57-74` (`ray.init(runtime_env=...)` only when Ray is not
    initialised; runtime_env = verl defaults merged with `ray_kwargs.ray_init.runtime_env`);
    0.9.1 `verl/trainer/constants_ppo.py:105-154` (`get_ppo_ray_runtime_env`: defaults dropped
    when set in the driver env; a few determinism variables forwarded); 0.7.1 same file
    `:38-54`. verl 0.4.0 `docs/faq/faq.rst:104`: "The env var must be set before the
    `ray start` command if any". Ray: `python/ray/_private/worker.py` `init` (`RAY_ADDRESS` is
    used only when `address` is None or "auto"), `python/ray/_private/services.py`
    `canonicalize_bootstrap_address` (None or "local": "the caller should start a local Ray
    instance"); docs.ray.io `ray-core/starting-ray`.
    """
    mode = attach_mode(ctx)
    if mode is None:
        return
    root = str(ctx.app.verl.root) if ctx.app.verl else ""
    forwarded, defaults = verl_runtime_env(root) if root else (frozenset(), frozenset())
    skip_names, skip_prefixes = _skip_table()
    passed = runtime_env_names(ctx)
    if passed is None or (mode.kind == "job-submit" and mode.passed_unknown):
        return
    for name in sorted(ctx.launch.env):
        var = ctx.launch.env[name]
        if name in skip_names or name.startswith(skip_prefixes) or name in forwarded or name in passed:
            continue
        if mode.kind == "ray-start":
            before = mode.env_at_start or {}
            if name in before and before[name] == var.value:
                continue
            how = f"is exported after `ray start` (line {mode.line})"
            why = "Ray workers inherit the environment of the raylet started there, not of this launch"
        elif mode.kind == "job-submit":
            if name in mode.passed:
                continue
            if name in mode.entrypoint_env:
                how = f"is set in the job's command (`ray job submit ... -- {name}=...`, line {mode.line})"
                why = (
                    "that reaches the driver process only; Ray workers inherit the cluster's environment and the "
                    "job's runtime env"
                )
            else:
                how = "is exported in the submitting shell"
                why = (
                    f"`ray job submit` (line {mode.line}) runs the job on the cluster, where this shell's "
                    "environment does not exist"
                )
        else:
            how = "is exported for a launch that attaches to an existing Ray cluster (RAY_ADDRESS / ray_init.address)"
            why = "the cluster's workers inherit the environment the cluster was started with"
        extra = (
            f"; verl also drops its own default for `{name}` because the driver has it, so the workers get neither"
            if name in defaults
            else ""
        )
        value = var.value if var.value is not None else "<value>"
        fix = (
            f"add `{name}` to `--runtime-env-json='{{\"env_vars\": {{...}}}}'`"
            if mode.kind == "job-submit"
            else "export it before `ray start` on every node, or pass "
            f"`+ray_kwargs.ray_init.runtime_env.env_vars.{name}={value}`"
        )
        yield ctx.diag(
            "VL505",
            f"`{name}` {how}: {why}, so verl's workers and the rollout servers never see it{extra}",
            key=name,
            help=fix,
            span=var.span,
        )
