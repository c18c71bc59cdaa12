"""5xx: environment variables of the rollout engines (exports that never reach the Ray workers
are `ray_env.py`'s).

The facts live in `rules/env_vars.yaml` (crashing values, deprecations and removals per engine
release) and in the envs.py snapshots of `rules/engine_args/` (which names a release declares).
The releases checked against come from evidence (`verl_lint.engines.versions`): `--vllm` (and
friends), the installed engine, else the range the verl tree and the project declare; with a
range a finding is an error only where every release in it agrees. The finding says which.
"""

# Real (not postponed) annotations: NamedTuple classes define faster, at every Hydra job start.

from dataclasses import replace
from typing import TYPE_CHECKING

from packaging.version import Version

from ..config.context import Context
from ..engines import versions
from ..knowledge import load_table
from ..model import Diagnostic, EnvVar, Severity
from ..registry import family, lazy_module, rule, spec_contains

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


def _fill(text: str, var: EnvVar) -> str:
    return text.replace("{value}", var.value if var.value not in (None, "") else "<value>")


# The codes one variable can get, most severe first: a variable gets one finding.
_RANK = ("VL501", "VL502", "VL503", "VL504")


def classify(ctx: Context, var: EnvVar) -> Diagnostic | None:
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
        return replace(f, message=f"{f.message} ({note})")
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
        verdict = versions.judge(ev, releases, lambda r: at[r] is not None and at[r].code == code, older, newer)  # noqa: B023 - called here
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
        if verdict.level == "some" and severity != Severity.INFO:
            severity = Severity.WARNING
        return replace(f, message=f"{f.message} ({verdict.note})", severity=severity)
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


def _fact_at(ctx: Context, var: EnvVar, engine: str, v: Version) -> Diagnostic | None:
    for f in facts(engine):
        if f.name_matches(var.name) and f.value_matches(var.value) and _holds(f, ctx.verl_version, v):
            severity = Severity.parse(f.severity) if f.severity else None
            return _found(ctx, var, f.code, _fill(f.message, var), _fill(f.help, var), severity)
    return None


def _found(
    ctx: Context, var: EnvVar, code: str, message: str, help: str, severity: Severity | None = None
) -> Diagnostic:
    """Rule `code`'s finding at the export of `var`."""
    return ctx.diag(code, message, key=var.name, help=help, span=var.span, severity=severity)


def _not_excused(ctx: Context, var: EnvVar, engine: str) -> bool:
    """The name is not one verl itself reads, nor a vllm-ascend variable with a VLLM_ prefix."""
    root = str(ctx.app.verl.root) if ctx.app.verl else ""
    if root and var.name in assembly.verl_env_names(root):
        return False  # verl itself reads or sets it
    return not (engine == "vllm" and _declared_by("vllm_ascend", var.name))  # VLLM_VERSION, VLLM_DP_SIZE_LOCAL...


def _at(ctx: Context, var: EnvVar, engine: str, version: str) -> Diagnostic | None:
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
        return _found(
            ctx,
            var,
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
    return _found(
        ctx,
        var,
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


@family
def engine_env(ctx: Context):
    """The one finding (if any) of each VLLM_* / VLLM_ASCEND_* variable: the family of the
    engine environment rules below."""
    if not _rollout_runs_vllm(ctx):
        return
    for name in sorted(ctx.env):
        d = classify(ctx, ctx.env[name])
        if d is not None:
            yield d


# ------------------------------------------------------------------ rules ----


@rule(
    "VL501",
    "vllm-env-var-crashes-engine",
    "error",
    producer=engine_env,
    engines=("vllm",),
    # verl 0.7 declares vllm>=0.8.5,<=0.12.0, which includes releases where these crash; verl
    # 0.9.1 pins vllm==0.24.0, where neither does
)
def vllm_env_crash():
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


@rule(
    "VL502",
    "obsolete-vllm-env-var",
    "warning",
    producer=engine_env,
    engines=("vllm",),
    # deprecated/removed after vllm 0.12.0, the newest release verl 0.7 declares
)
def obsolete_vllm_env():
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


@rule(
    "VL503",
    "obsolete-vllm-ascend-env-var",
    "warning",
    producer=engine_env,
    engines=("vllm_ascend",),
)
def obsolete_vllm_ascend_env():
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


@rule(
    "VL504",
    "unknown-vllm-env-var",
    "warning",
    producer=engine_env,
    engines=("vllm", "vllm_ascend"),
)
def unknown_vllm_env():
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
