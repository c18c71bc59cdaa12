"""5xx: environment variables of the rollout engines, and exports that never reach Ray workers.

The facts live in `rules/env_vars.yaml` (crashing values, deprecations and removals per engine
release) and in the envs.py snapshots of `rules/engine_args/` (which names a release declares).
The releases checked against come from evidence (`verl_lint.engines.versions`): `--vllm` (and
friends), the installed engine, else the range the verl tree and the project declare; with a
range a finding is an error only where every release in it agrees. The finding says which.
"""

# Real (not postponed) annotations: NamedTuple classes define faster, at every Hydra job start.

import ast
import re
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from packaging.version import Version

from ..engines import versions
from ..config.context import Context
from ..evidence import source_text
from ..registry import lazy_module, main_ppo, rule, spec_contains
from ..knowledge import load_table
from ..model import EnvVar, RayAttach, Severity

if TYPE_CHECKING:  # the records load with their table, not at every Hydra job start
    from ..data_tables import EnvRecord

# lazy_module, not `import`: loaded (with the snapshots) for VLLM_* variables only, not at every Hydra job start
schemas = lazy_module("verl_lint.engines.schemas")
assembly = lazy_module("verl_lint.engines.assembly")

# ------------------------------------------------------------------ facts ----


def facts(engine: str) -> "tuple[EnvRecord, ...]":
    """What env_vars.yaml says about `engine`'s variables."""
    return getattr(load_table("env_vars.yaml"), engine)


def _holds(f: "EnvRecord", verl: Version | None, v: Version) -> bool:
    """`f` holds for verl `verl` (when it names verl releases) and engine release `v`."""
    if f.verl and (verl is None or not spec_contains(f.verl, verl)):
        return False
    if f.since and v < schemas.lenient_version(f.since):
        return False
    return not (f.until and v >= schemas.lenient_version(f.until))


def _skip_table() -> tuple[frozenset[str], tuple[str, ...]]:
    skip = load_table("env_vars.yaml").worker_env_skip
    return frozenset(skip.names), skip.prefixes


# ---------------------------------------------------------------- engines ----


def _engine_of(name: str) -> str | None:
    if name.startswith("VLLM_ASCEND_"):
        return "vllm_ascend"
    if name.startswith("VLLM_"):
        return "vllm"
    return None


def _rollout_runs_vllm(ctx: Context) -> bool:
    """vLLM variables matter unless the rollout is known to run another engine."""
    name = ctx.text("actor_rollout_ref.rollout.name")
    return name is None or name == "vllm"


class Finding(NamedTuple):
    code: str
    message: str
    help: str
    severity: str | None = None


def _fill(text: str, var: EnvVar) -> str:
    return text.replace("{value}", var.value if var.value not in (None, "") else "<value>")


# The codes one variable can get, most severe first: a variable gets one finding.
_RANK = ("VL501", "VL502", "VL503", "VL504")


def classify(ctx: Context, var: EnvVar) -> Finding | None:
    """The one finding (if any) for a VLLM_* / VLLM_ASCEND_* variable, judged over the releases
    the evidence admits (`verl_lint.engines.versions`): an exact release, a declared range, or none."""
    engine = _engine_of(var.name)
    if engine is None:
        return None
    ev = versions.evidence(ctx, engine)
    if ev.exact is not None:
        f = _at(ctx, var, engine, str(ev.exact))
        if f is None:
            return None
        schema = schemas.schema_for(engine, ev.exact)
        note = f"checked against {ev.describe()}" + (f"; {schema.note}" if schema is not None and schema.note else "")
        return f._replace(message=f"{f.message} ({note})")
    snap = schemas.snapshot(engine)
    releases = list(snap.versions) if snap else []
    at = {r: _at(ctx, var, engine, r) for r in releases}
    probes = [p for p in versions.probes(ev) if ev.admits(p)] if ev.known else []
    for code in _RANK:
        older = _region(
            ctx,
            var,
            engine,
            code,
            [p for p in probes if releases and p.release < schemas.lenient_version(releases[0]).release]
            or [Version("0")],
        )
        newer = _region(
            ctx,
            var,
            engine,
            code,
            [p for p in probes if releases and p.release > schemas.lenient_version(releases[-1]).release]
            or [Version("9999")],
        )
        verdict = versions.judge(ev, releases, lambda r: at[r] is not None and at[r].code == code, older, newer)
        if verdict.level == "none":
            continue
        if verdict.level == "skipped":
            versions.skipped(ctx, engine)
            return None
        # the message of the newest release it holds on (or of a release older/newer than the snapshots)
        f = (
            at[verdict.holds[-1]]
            if verdict.holds
            else next(
                (
                    g
                    for p in probes or [Version("0"), Version("9999")]
                    if (g := _at(ctx, var, engine, str(p))) and g.code == code
                ),
                None,
            )
        )
        if f is None:
            return None
        severity = f.severity
        if verdict.level == "some" and severity != "info":
            severity = "warning"
        return f._replace(message=f"{f.message} ({verdict.note})", severity=severity)
    return None


def _region(ctx: Context, var: EnvVar, engine: str, code: str, probes: list[Version]) -> bool | None:
    """Whether `code` is the finding on releases outside the bundled snapshots: the facts of
    env_vars.yaml hold at any version; the envs.py names are unknown there, except that a name
    no snapshot declares is a misspelling on every release."""
    results = set()
    for p in probes:
        f = _fact_at(ctx, var, engine, p)
        if f is None:
            if code == "VL504" and not _declared_by(engine, var.name) and _not_excused(ctx, var, engine):
                results.add(True)
                continue
            return None
        results.add(f.code == code)
    return results.pop() if len(results) == 1 else None


def _fact_at(ctx: Context, var: EnvVar, engine: str, v: Version) -> Finding | None:
    for f in facts(engine):
        if f.name_matches(var.name) and f.value_matches(var.value) and _holds(f, ctx.verl_version, v):
            return Finding(f.code, _fill(f.message, var), _fill(f.help, var), f.severity)
    return None


def _not_excused(ctx: Context, var: EnvVar, engine: str) -> bool:
    """The name is not one verl itself reads, nor a vllm-ascend variable with a VLLM_ prefix."""
    root = str(ctx.app.verl.root) if ctx.app.verl else ""
    if root and var.name in assembly.verl_env_names(root):
        return False  # verl itself reads or sets it
    return not (engine == "vllm" and _declared_by("vllm_ascend", var.name))  # VLLM_VERSION, VLLM_DP_SIZE_LOCAL...


def _at(ctx: Context, var: EnvVar, engine: str, version: str) -> Finding | None:
    """The finding for the variable on one release (the facts first, then that release's envs.py)."""
    f = _fact_at(ctx, var, engine, schemas.lenient_version(version))
    if f is not None:
        return f
    info = schemas.ENGINES[engine]
    schema = schemas.schema_for(engine, schemas.lenient_version(version))
    if schema is None or var.name in schema.names.env or not _not_excused(ctx, var, engine):
        return None
    history = schema.describe("env", var.name)
    if history.startswith("removed"):
        return Finding(
            "VL503" if engine == "vllm_ascend" else "VL502",
            f"`{var.name}` is not read by {info.title} {schema.version}: {history}, so this export does nothing",
            "delete the export" + _replacement_hint(var.name, schema),
        )
    guess = schema.suggest("env", var.name)
    msg = f"`{var.name}` is not a {info.title} environment variable"
    if history:
        msg += f" in {info.title} {schema.version}; it {history}"
    if engine == "vllm" and schemas.lenient_version(schema.version) >= schemas.lenient_version("0.17.0"):
        msg += "; vLLM >= 0.17 logs `Unknown vLLM environment variable detected` for it and otherwise ignores it"
    return Finding(
        "VL504",
        msg,
        f"did you mean `{guess[0]}`?"
        if guess
        else "check the spelling against the engine's envs.py, or delete the export",
    )


def _declared_by(engine: str, name: str) -> bool:
    snap = schemas.snapshot(engine)
    return bool(snap and snap.history("env", name))


def _replacement_hint(name: str, schema) -> str:
    guess = schema.suggest("env", name)
    return f"; the closest current variable is `{guess[0]}`" if guess else ""


def _findings(ctx: Context, code: str):
    if not _rollout_runs_vllm(ctx):
        return
    for name in sorted(ctx.env):
        var = ctx.env[name]
        f = classify(ctx, var)
        if f is None or f.code != code:
            continue
        yield ctx.diag(
            code,
            f.message,
            key=name,
            help=f.help,
            span=var.span,
            severity=Severity.parse(f.severity) if f.severity else None,
        )


# ------------------------------------------------------------------ rules ----

_NPU = {"VLLM_ATTENTION_BACKEND": "XFORMERS"}


@rule(
    "VL501",
    "vllm-env-var-crashes-engine",
    "error",
    # verl 0.7 declares vllm>=0.8.5,<=0.12.0, which includes releases where these crash; verl
    # 0.9.1 pins vllm==0.24.0, where neither does
    bad=[
        (main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_USE_V1": "0"}), "<0.8"),
        (main_ppo("actor_rollout_ref.rollout.name=vllm", env=_NPU), "<0.8"),
    ],
    good=[main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1"})],
)
def vllm_env_crash(ctx: Context):
    """An exported vLLM variable makes the rollout server refuse to start.

    ## What it does
    Checks every `VLLM_*` variable the script exports (or passes through
    `+ray_kwargs.ray_init.runtime_env.env_vars.*`) against `rules/env_vars.yaml` for the
    vLLM releases the evidence admits: `VLLM_USE_V1=0` on vLLM <= 0.11.0 and
    `VLLM_ATTENTION_BACKEND=XFORMERS` on vLLM 0.12-0.14. The release is `--vllm` (or
    `vllm = "..."` in `[tool.verl-lint]`), else the installed vLLM, else the range the verl
    tree and the project declare (setup.py, pyproject.toml, requirements*.txt, docker files,
    a wheel's METADATA): an error when every release in that range crashes, a warning naming
    the releases when only some do. With no evidence at all it stays silent (VL010 says so).

    ## Why is this bad?
    The job gets through Ray start-up, model download and worker creation, then the vLLM
    server raises (`Using V1 AsyncLLMEngine, but envs.VLLM_USE_V1=False`, `Attention backend
    'XFORMERS' has been removed`) minutes into the run. On every other release the same
    export is a no-op at best.

    ## Use instead
    Delete the export. To pin an attention backend on vLLM >= 0.13 use
    `+actor_rollout_ref.rollout.engine_kwargs.vllm.attention_backend=FLASH_ATTN`.

    ## Where in verl
    verl >= 0.6 runs vLLM's V1 `AsyncLLM` (0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:494`);
    vLLM 0.11.0 `vllm/v1/engine/async_llm.py:89`; vLLM 0.12.0 `vllm/attention/selector.py:40`.
    verl's own `examples/gspo_trainer/run_qwen3_32b_gspo_npu.sh:15` exports `VLLM_ATTENTION_BACKEND=XFORMERS`.
    """
    yield from _findings(ctx, "VL501")


@rule(
    "VL502",
    "obsolete-vllm-env-var",
    "warning",
    # deprecated/removed after vllm 0.12.0, the newest release verl 0.7 declares
    bad=[
        (main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_ALL2ALL_BACKEND": "deepep_low_latency"}), ">=0.8"),
        (main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_TORCH_PROFILER_DIR": "/tmp/prof"}), ">=0.8"),
        (main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_SLEEP_WHEN_IDLE": "1"}), ">=0.8"),
        main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_USE_V1": "1"}),
    ],
    good=[
        (
            main_ppo(
                "actor_rollout_ref.rollout.name=vllm",
                "+actor_rollout_ref.rollout.engine_kwargs.vllm.all2all_backend=deepep_low_latency",
                env={"VLLM_WORKER_MULTIPROC_METHOD": "spawn"},
            ),
            ">=0.8",  # the engine argument only exists from vLLM 0.11.1
        ),
        main_ppo("actor_rollout_ref.rollout.name=sglang", env={"VLLM_ALL2ALL_BACKEND": "deepep_low_latency"}),
    ],
)
def obsolete_vllm_env(ctx: Context):
    """A vLLM environment variable is deprecated, removed or redundant in the vLLM release checked.

    ## What it does
    Looks every exported `VLLM_*` variable up in `rules/env_vars.yaml` (deprecations with
    their replacement engine argument) and in the bundled `vllm/envs.py` snapshots (a name
    that an earlier release declared but the checked one does not). Silent when the rollout
    is known to run SGLang.

    ## Why is this bad?
    A removed variable is silently ignored: the behaviour you exported (an all-to-all
    backend, an attention backend, a profiler directory) does not happen, and vLLM >= 0.17
    logs `Unknown vLLM environment variable detected`. Deprecated ones stop working at the
    next vLLM upgrade.

    ## Use instead
    The engine argument the help names, passed as
    `+actor_rollout_ref.rollout.engine_kwargs.vllm.<arg>=...` (e.g. `all2all_backend`,
    `attention_backend`, `attention_config.flash_attn_version`), or delete the export.

    ## Where in verl
    verl 0.9.1 forwards `engine_kwargs.vllm` to `vllm serve` (`vllm_async_server.py:349`);
    vLLM 0.14.1 `vllm/config/parallel.py:529` (VLLM_ALL2ALL_BACKEND deprecation),
    vLLM 0.13.0 `vllm/config/attention.py:83` and `vllm/config/profiler.py:92`.
    """
    yield from _findings(ctx, "VL502")


@rule(
    "VL503",
    "obsolete-vllm-ascend-env-var",
    "warning",
    bad=[
        main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_ASCEND_ENABLE_FLASHCOMM": "1"}),
        main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_ASCEND_ENABLE_DENSE_OPTIMIZE": "1"}),
        main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_ASCEND_ENABLE_PREFETCH_MLP": "1"}),
    ],
    good=[main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_ASCEND_ENABLE_NZ": "0"})],
    bad_options={"versions": {"vllm_ascend": "0.23.0"}},  # no verl release declares vllm-ascend
)
def obsolete_vllm_ascend_env(ctx: Context):
    """A vllm-ascend environment variable was renamed or removed in the vllm-ascend release checked.

    ## What it does
    Checks exported `VLLM_ASCEND_*` variables against `rules/env_vars.yaml` and the bundled
    `vllm_ascend/envs.py` snapshots: `VLLM_ASCEND_ENABLE_FLASHCOMM` (renamed
    `..._FLASHCOMM1` in 0.11.0, fallback gone in 0.20.2), `VLLM_ASCEND_ENABLE_DENSE_OPTIMIZE`
    (removed in 0.13), `VLLM_ASCEND_ENABLE_PREFETCH_MLP` (deprecated, removed in 0.18).

    ## Why is this bad?
    The NPU optimisation you asked for is silently off: vllm-ascend does not read the old
    name, and nothing in the logs says so.

    ## Use instead
    The new variable, or the `additional_config` key through
    `+actor_rollout_ref.rollout.engine_kwargs.vllm.additional_config.<key>=...`.

    ## Where in verl
    verl passes `engine_kwargs.vllm.additional_config` to vllm-ascend through `vllm serve`
    (0.9.1 `vllm_async_server.py:349`); vllm-ascend 0.20.2rc1 `vllm_ascend/ascend_config.py:283`.
    """
    yield from _findings(ctx, "VL503")


@rule(
    "VL504",
    "unknown-vllm-env-var",
    "warning",
    bad=[
        main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_ALLOW_LONG_MAX_MODEL_LENGTH": "1"}),
        main_ppo("actor_rollout_ref.rollout.name=vllm", env={"VLLM_ASCEND_ENABLE_NZZ": "0"}),
    ],
    good=[
        main_ppo(
            "actor_rollout_ref.rollout.name=vllm",
            env={"VLLM_ALLOW_LONG_MAX_MODEL_LEN": "1", "VLLM_ASCEND_ENABLE_NZ": "0", "VLLM_LOGGING_LEVEL": "INFO"},
        )
    ],
)
def unknown_vllm_env(ctx: Context):
    """A `VLLM_*` / `VLLM_ASCEND_*` variable that no vLLM / vllm-ascend release declares.

    ## What it does
    Compares exported names with the keys of `vllm/envs.py:environment_variables` (read with
    `ast` from the installed vLLM, else from the bundled snapshot) and of
    `vllm_ascend/envs.py:env_variables`, and suggests the closest real name. Names that
    verl itself reads (`VLLM_ASCEND_TASK_QUEUE_ENABLE`) are not reported.

    ## Why is this bad?
    A misspelt variable does nothing. vLLM >= 0.17 only logs `Unknown vLLM environment
    variable detected` (a `ValueError` with `fail_on_environ_validation`), older releases say
    nothing at all.

    ## Use instead
    The name the did-you-mean suggests.

    ## Where in verl
    verl forwards the driver environment to the workers it starts (0.9.1
    `verl/trainer/main_ppo.py:57-74`); vLLM 0.17.1 `vllm/envs.py:1704` (`validate_environ`).
    """
    yield from _findings(ctx, "VL504")


# ------------------------------------------------- env not reaching Ray ----

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
    bad=[
        "#!/bin/bash\nray start --head --num-gpus 8\nexport NCCL_IB_DISABLE=1\n"
        + main_ppo("trainer.nnodes=1").split("\n", 1)[1],
        "#!/bin/bash\nexport RAY_ADDRESS=10.0.0.1:6379\nexport VLLM_LOGGING_LEVEL=DEBUG\n"
        + main_ppo("trainer.nnodes=1").split("\n", 1)[1],
    ],
    good=[
        "#!/bin/bash\nexport NCCL_IB_DISABLE=1\nray start --head --num-gpus 8\n"
        + main_ppo("trainer.nnodes=1").split("\n", 1)[1],
        "#!/bin/bash\nray start --head --num-gpus 8\n"
        + main_ppo("trainer.nnodes=1", "+ray_kwargs.ray_init.runtime_env.env_vars.NCCL_IB_DISABLE=1").split("\n", 1)[1],
        main_ppo("trainer.nnodes=1", env={"NCCL_IB_DISABLE": "1"}),
        main_ppo("trainer.nnodes=1", env={"RAY_ADDRESS": "local", "NCCL_IB_DISABLE": "1"}),
    ],
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
                why = "that reaches the driver process only; Ray workers inherit the cluster's environment and the job's runtime env"
            else:
                how = "is exported in the submitting shell"
                why = f"`ray job submit` (line {mode.line}) runs the job on the cluster, where this shell's environment does not exist"
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
            else f"export it before `ray start` on every node, or pass `+ray_kwargs.ray_init.runtime_env.env_vars.{name}={value}`"
        )
        yield ctx.diag(
            "VL505",
            f"`{name}` {how}: {why}, so verl's workers and the rollout servers never see it{extra}",
            key=name,
            help=fix,
            span=var.span,
        )
