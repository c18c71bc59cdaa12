"""7xx: `engine_kwargs.vllm.*` / `engine_kwargs.sglang.*` against the engine and against verl.

Every key under `<rollout>.engine_kwargs.<engine>` is checked twice (only keys the user set, in
the script or their own config files, are findings on the script: a problem in verl's shipped
defaults is one info per run):

- against the engine release (`verl_lint.engines.schemas.schema_for`): `vllm serve` rejects an
  unknown option, SGLang's `ServerArgs(**args)` an unknown keyword (VL701);
- against the synchronous rollout's own keywords (verl <= 0.6: `LLM(..., **engine_kwargs)`), where
  a key given twice is a TypeError (VL706);
- against how the linted verl tree assembles the server arguments
  (`verl_lint.engines.assembly.assembly_of`, read from its `launch_server` with ast): does your value
  replace something verl derives from its own config (VL702 when that breaks verl's worker
  mapping, VL704 otherwise), or does verl overwrite it afterwards (VL703)? The source
  conditions are evaluated on the composed config, so `enable_expert_parallel` is reported
  as overwritten on verl 0.9.1 (unconditional `args.update`) and as bypassing verl's setup
  on verl 0.7.1 (set only when `expert_parallel_size > 1`) — without a hand list.
"""

from __future__ import annotations

import weakref
from typing import Any, NamedTuple

from omegaconf import DictConfig, OmegaConf

from ..engines import versions
from ..config.context import MISSING, Context
from ..registry import lazy_module, main_ppo, rule
from ..model import Severity, Unknown

# lazy_module, not `import`: the Hydra callback imports every rule at each job start, and most
# launches set no engine_kwargs; these load (with the snapshots they read) on first use.
schemas = lazy_module("verl_lint.engines.schemas")
assembly = lazy_module("verl_lint.engines.assembly")
expressions = lazy_module("verl_lint.engines.expressions")

ACTOR = "actor_rollout_ref.rollout"
KW_ENGINES = ("vllm", "sglang")


class Kwarg(NamedTuple):
    section: str  # the rollout config section, e.g. actor_rollout_ref.rollout
    engine: str  # vllm | sglang
    key: str  # the engine argument
    value: Any

    @property
    def path(self) -> str:
        return f"{self.section}.engine_kwargs.{self.engine}.{self.key}"


class Finding(NamedTuple):
    code: str
    kwarg: Kwarg
    message: str
    help: str
    severity: str | None = None


# ------------------------------------------------------------- collection ----


def _sections(ctx: Context) -> list[str]:
    out = [ACTOR]
    for o in ctx.comp.settings:
        if ".engine_kwargs" in (o.key or ""):
            out.append(o.key.split(".engine_kwargs")[0])
    return list(dict.fromkeys(out))


def kwargs_of(ctx: Context) -> list[Kwarg]:
    out = []
    for sec in _sections(ctx):
        for engine in KW_ENGINES:
            path = f"{sec}.engine_kwargs.{engine}"
            node = OmegaConf.select(ctx.cfg, path, default=None, throw_on_missing=False, throw_on_resolution_failure=False)
            if not isinstance(node, DictConfig):
                continue
            for k in node.keys():
                v = ctx.get(f"{path}.{k}")
                if v is None:
                    continue  # verl drops None values before building the arguments
                out.append(Kwarg(sec, engine, str(k), v))
    return out


# ------------------------------------------------------------- evaluation ----


def _evaluator(ctx: Context, section: str, asm: assembly.Assembly) -> expressions.Evaluator:
    root = str(ctx.app.verl.root) if ctx.app.verl else ""
    defaults = assembly.rollout_defaults(root) if root else {}

    def lookup(path: str):
        full = f"{section}.{path}" if path else section
        v = ctx.get(full)
        if v is MISSING:  # not in the composed config: the RolloutConfig dataclass default
            return defaults[path] if path in defaults else expressions.Evaluator.MISSING
        return expressions.UNKNOWN if isinstance(v, Unknown) else v

    return expressions.Evaluator(lookup, dict(asm.local_exprs), dict(asm.module_exprs), ctx.versions)


def _set_hint(ctx: Context, section: str, knob: str, value) -> str:
    full = f"{section}.{knob}"
    plus = "+" if ctx.get(full) is MISSING else ""
    return f"`{plus}{full}={_hydra(value)}`"


def _hydra(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    return str(v)


def _knob_value_hint(ctx: Context, kw: Kwarg, ev: expressions.Evaluator, knob: str) -> str | None:
    """A concrete suggestion for a verl knob (expert_parallel_size = TP × DP)."""
    expr = assembly.knob_formula(knob)
    if not expr:
        return None
    v = ev.eval(expr)
    shown = assembly.readable(expr, kw.section).replace(f"{kw.section}.", "")
    if v is expressions.UNKNOWN or isinstance(v, bool):
        return f"`{kw.section}.{knob}=<{shown}>`"
    return f"{_set_hint(ctx, kw.section, knob, v)} (= {shown})"


# ---------------------------------------------------------------- analysis ----

_CACHE: "weakref.WeakKeyDictionary[Context, list[Finding]]" = weakref.WeakKeyDictionary()


def analyse(ctx: Context) -> list[Finding]:
    """Every engine_kwargs finding of a launch (computed once per Context)."""
    if ctx in _CACHE:
        return _CACHE[ctx]
    out: list[Finding] = []
    for kw in kwargs_of(ctx):
        active = ctx.get(f"{kw.section}.name", None)
        if isinstance(active, str) and active in schemas.ENGINES and active != kw.engine:
            out.append(
                Finding(
                    "VL705",
                    kw,
                    f"`{kw.path}` is ignored: `{kw.section}.name={active}`, and verl only passes `engine_kwargs.{active}` to the rollout server",
                    f"move it to `+{kw.section}.engine_kwargs.{active}.<arg>` (with the {schemas.ENGINES[active].title} name of the argument), or remove it",
                )
            )
            continue
        f = _schema_finding(ctx, kw) or _passed_twice(ctx, kw)
        if f is not None:
            out.append(f)
            continue
        if not isinstance(active, str) or active != kw.engine:
            continue  # the engine is not known statically: verl's code path is not known either
        f = _assembly_finding(ctx, kw)
        if f is not None:
            out.append(f)
    _CACHE[ctx] = out
    return out


def _schema_finding(ctx: Context, kw: Kwarg) -> Finding | None:
    """VL701, judged over the releases the evidence admits (`verl_lint.engines.versions`)."""
    ev = versions.evidence(ctx, kw.engine)
    snap = schemas.snapshot(kw.engine)
    if ev.exact is not None:
        schema = schemas.schema_for(kw.engine, ev.exact)
        if schema is None or schemas.accepts(kw.engine, kw.key, schema.names.args):
            return None
        note = f"checked against {ev.describe()}" + (f"; {schema.note}" if schema.note else "")
        # An argument no release has is a typo whatever the version; one that only some releases
        # have is an error only when the checked release is known.
        uncertain = not schema.confident and bool(snap and snap.history("args", kw.key))
        return _unknown_kwarg(kw, schema, note, "warning" if uncertain else None)
    if snap is None or not snap.versions:
        return None
    typo = not snap.history("args", kw.key)  # no bundled release has it: a misspelling on any release
    verdict = versions.judge(ev, snap.versions, lambda r: not schemas.accepts(kw.engine, kw.key, snap.at("args", r)), typo or None, typo or None)
    if verdict.level == "skipped":
        versions.skipped(ctx, kw.engine)
    if verdict.level not in ("all", "some"):
        return None
    schema = schemas.schema_for(kw.engine, schemas.lenient_version(verdict.holds[-1] if verdict.holds else snap.versions[-1]))
    return _unknown_kwarg(kw, schema, verdict.note, "warning" if verdict.level == "some" else None)


def _unknown_kwarg(kw: Kwarg, schema, note: str, severity: str | None) -> Finding:
    info = schemas.ENGINES[kw.engine]
    if kw.engine == "vllm":
        if isinstance(kw.value, bool) and kw.value is False:
            effect = "verl drops `False` flags that are not optional booleans, so this does nothing"
        else:
            effect = f"verl passes `--{kw.key.replace('_', '-')}` to `vllm serve`, whose parser stops the rollout server with `unrecognized arguments`"
    else:
        effect = "verl calls `ServerArgs(**args)`, which raises `TypeError: unexpected keyword argument` when the rollout server starts"
    history = schema.describe("args", kw.key)
    where = f"{info.title} {schema.version}" + (" (installed)" if schema.origin == "installed" else "")
    msg = f"`{kw.key}` is not a {where} engine argument" + (f": {history}" if history else "") + f"; {effect} ({note})"
    guess = schema.suggest("args", kw.key)
    help = (
        f"did you mean `{kw.section}.engine_kwargs.{kw.engine}.{guess[0]}`?"
        if guess
        else "remove it, or check the argument list of your engine release"
    )
    return Finding("VL701", kw, msg, help, severity)


def _passed_twice(ctx: Context, kw: Kwarg) -> Finding | None:
    """VL706: the synchronous rollout (verl <= 0.6, `mode=sync`) calls the engine with keywords
    of its own and `**engine_kwargs`; every such call of the tree names the key."""
    root = str(ctx.app.verl.root) if ctx.app.verl else ""
    mode = ctx.get(f"{kw.section}.mode", MISSING)
    if not root or (mode is not MISSING and mode != "sync"):
        return None
    pinned = ctx.versions.get(kw.engine)
    calls = assembly.spread_calls(root, kw.engine, str(pinned) if pinned else None)
    given = [dict((name, (value, line)) for name, value, line in c.keywords).get(kw.key) for c in calls]
    if not calls or None in given:
        return None
    c, (value, line) = calls[0], given[0]
    knob = value.split("config.", 1)[1] if value.startswith(("config.", "self.config.")) and value.count("(") == 0 else None
    return Finding(
        "VL706",
        kw,
        f"`{kw.key}={expressions.show(kw.value)}` is passed twice: verl calls `{c.callee}(..., {kw.key}={value}, ..., **engine_kwargs)` "
        f"({c.path}:{line}), so Python raises `TypeError: {c.callee}() got multiple values for keyword argument '{kw.key}'` "
        "when the rollout starts",
        f"remove the engine kwarg and set `{kw.section}.{knob}` instead" if knob else f"remove the engine kwarg: verl always passes `{kw.key}` itself",
    )


def _assembly_finding(ctx: Context, kw: Kwarg) -> Finding | None:
    root = str(ctx.app.verl.root) if ctx.app.verl else ""
    if not root:
        return None
    asm = assembly.assembly_of(root, kw.engine)
    if asm is None:
        return None
    ev = _evaluator(ctx, kw.section, asm)
    entries = asm.for_key(kw.key)
    if any(e.kind == "pop" for e in entries):
        return None  # verl takes the value out of engine_kwargs and honours it
    over_true: list[assembly.ArgSet] = []
    over_unknown: list[assembly.ArgSet] = []
    over_false: list[assembly.ArgSet] = []
    for e in entries:
        if e.overwrites:
            t = ev.truth(e.condition)
            (over_true if t is True else over_unknown if t is None else over_false).append(e)
    title = schemas.ENGINES[kw.engine].title
    user = expressions.show(kw.value)
    mapping = assembly.worker_mapping(kw.engine)

    if over_true:
        e = over_true[-1]  # the last assignment wins at run time
        verl_val = ev.eval(e.value)
        if verl_val is not expressions.UNKNOWN and expressions.same_value(verl_val, kw.value):
            return None  # verl sets the same value: redundant, harmless
        when = f" (because {e.condition_text(kw.section)})" if e.condition else " unconditionally"
        becomes = f"; your {user} becomes {expressions.show(verl_val)}" if verl_val is not expressions.UNKNOWN else ""
        msg = (
            f"`{kw.key}={user}` has no effect: verl overwrites `{kw.key}` after spreading engine_kwargs into the "
            f"{title} server arguments{when} with `{asm.value_text(e.value, kw.section)}`{becomes} ({asm.where(e.line)})"
        )
        return Finding("VL703", kw, msg, _use_knobs(ctx, kw, ev, e))

    defaults = [e for e in entries if e.phase == "default"]
    if kw.key in mapping:
        knob = mapping.get(kw.key)
        e = defaults[-1] if defaults else None
        conditional = (over_false + over_unknown)[-1] if (over_false or over_unknown) else None
        anchor = e or conditional
        if e is not None:
            expected = ev.eval(e.value)
            knobs = ev.config_refs(e.value)
            if expressions.is_constant(e.value):
                verl_says = f"verl always passes `{kw.key}={expressions.show(expected)}`"
            else:
                verl_says = f"verl passes `{asm.value_text(e.value, kw.section)}`" + (
                    f" = {expressions.show(expected)}" if expected is not expressions.UNKNOWN else ", computed per replica"
                )
        else:
            # verl sets it itself only under a condition that does not (or may not) hold here:
            # compare with the rollout knob it stands for
            expected = ev.eval(f"self.config.{knob}") if knob else expressions.UNKNOWN
            knobs = [knob] if knob else (ev.config_refs(conditional.value) if conditional else [])
            if conditional is not None:
                verl_says = f"verl sets it (to `{asm.value_text(conditional.value, kw.section)}`) only when {conditional.condition_text(kw.section)}"
            else:
                verl_says = "verl does not pass it"
            if knob:
                verl_says += f", and builds its workers from `{kw.section}.{knob}`" + (
                    f" = {expressions.show(expected)}" if expected is not expressions.UNKNOWN else ""
                )
            else:
                verl_says += ", and computes it per replica"
        if expected is not expressions.UNKNOWN and expressions.same_value(expected, kw.value):
            return None
        maybe = f"; verl replaces it only when {over_unknown[-1].condition_text(kw.section)}" if (over_unknown and e is not None) else ""
        where = f" ({asm.where(anchor.line)})" if anchor is not None and anchor.line else ""
        msg = (
            f"`{kw.key}={user}` reaches the {title} server in place of verl's own value: {verl_says}{where}{maybe}. "
            f"verl starts, places and drives its rollout workers from its own setting, so the engine and verl's "
            f"workers disagree (hang, wrong GPU/weight mapping, or a crash at start-up)"
        )
        if knobs and kw.key != "enable_memory_saver":
            hint = ", ".join(_set_hint(ctx, kw.section, k, kw.value) if len(knobs) == 1 else f"`{kw.section}.{k}`" for k in knobs)
            help = f"remove the engine kwarg and set {hint} instead"
        else:
            help = "remove the engine kwarg: verl sets it itself"
        return Finding("VL702", kw, msg, help)

    if over_unknown:
        e = over_unknown[-1]
        msg = (
            f"`{kw.key}={user}` may have no effect: verl overwrites `{kw.key}` when {e.condition_text(kw.section)} "
            f"with `{asm.value_text(e.value, kw.section)}` ({asm.where(e.line)})"
        )
        return Finding("VL703", kw, msg, _use_knobs(ctx, kw, ev, e), "warning")

    if defaults:
        e = defaults[-1]
        verl_val = ev.eval(e.value)
        if verl_val is not expressions.UNKNOWN and expressions.same_value(verl_val, kw.value):
            return None
        knobs = ev.config_refs(e.value)
        shown = f" = {expressions.show(verl_val)}" if verl_val is not expressions.UNKNOWN else ""
        if knobs:
            msg = (
                f"`{kw.key}={user}` overrides the value verl passes from `{asm.value_text(e.value, kw.section)}`{shown} "
                f"({asm.where(e.line)}): the {title} engine uses yours, but verl's own code keeps reading "
                + ", ".join(f"`{kw.section}.{k}`" for k in knobs)
            )
            help = (
                "set "
                + ", ".join(_set_hint(ctx, kw.section, k, kw.value) if len(knobs) == 1 else f"`{kw.section}.{k}`" for k in knobs)
                + " instead of the engine kwarg"
            )
        else:
            msg = (
                f"`{kw.key}={user}` overrides verl's own `{kw.key}={asm.value_text(e.value, kw.section)}`{shown} "
                f"({asm.where(e.line)}), which verl sets on purpose for every rollout server"
            )
            help = "remove the engine kwarg unless you know why verl's value does not fit"
        return Finding("VL704", kw, msg, help)

    if over_false:
        # Only a key that verl sets as part of a larger block (expert parallelism together with
        # its data-parallel wiring) is a bypass; a lone conditional default (limit_mm_per_prompt
        # from limit_images) is a legitimate engine kwarg when verl's condition does not hold.
        e = over_false[-1]
        siblings = sorted({x.key for x in asm.entries if x.condition == e.condition and x.key != kw.key and x.overwrites})
        if not siblings:
            return None
        along = f" (together with {', '.join(siblings)})"
        msg = (
            f"`{kw.key}={user}` bypasses verl: verl sets `{kw.key}` itself only when {e.condition_text(kw.section)}{along} "
            f"({asm.where(e.line)}), which is not the case here, so your flag reaches {title} without the setup verl does with it"
        )
        return Finding("VL704", kw, msg, _use_knobs(ctx, kw, ev, e))
    return None


def _use_knobs(ctx: Context, kw: Kwarg, ev: expressions.Evaluator, e: assembly.ArgSet) -> str:
    knobs = ev.config_refs(e.value) or ev.config_refs(*e.condition)
    if not knobs:
        return "remove the engine kwarg: verl sets it itself"
    hints = []
    for k in knobs:
        h = _knob_value_hint(ctx, kw, ev, k) if (kw.value is True or not isinstance(kw.value, bool)) else None
        hints.append(h or f"`{kw.section}.{k}`")
    return "remove the engine kwarg and set " + " / ".join(hints) + " instead"


def _verl_default(ctx: Context, path: str) -> bool:
    """verl's shipped config chose the value: neither it nor a key under it (a dict such as
    `compilation_config`, filled in field by field) is set by the user."""
    if ctx.provenance(path) != "verl-default":
        return False
    return not any(o.ok and (o.key or "").startswith(path + ".") for o in ctx.comp.settings)


def _emit(ctx: Context, code: str):
    for f in analyse(ctx):
        if f.code != code:
            continue
        if _verl_default(ctx, f.kwarg.path):
            # verl's own shipped config set it, not the user: once per run as info. An argument
            # for the engine the rollout does not run is inert there, and verl ships both.
            if code != "VL705":
                yield ctx.default_problem(code, f.message, f.kwarg.path, f.help)
            continue
        under = [o for o in ctx.comp.settings if o.ok and (o.key or "").startswith(f.kwarg.path + ".")]
        span = under[0].word.span if under and not ctx.set_by_override(f.kwarg.path) else None
        yield ctx.diag(code, f.message, key=f.kwarg.path, help=f.help, span=span, severity=Severity.parse(f.severity) if f.severity else None)


# ------------------------------------------------------------------ rules ----

_V = "actor_rollout_ref.rollout.name=vllm"
_S = "actor_rollout_ref.rollout.name=sglang"
_EK = "+actor_rollout_ref.rollout.engine_kwargs"


@rule(
    "VL701",
    "unknown-engine-kwarg",
    "error",
    bad=[
        main_ppo(_V, f"{_EK}.vllm.max_num_batch_tokens=8192"),
        # removed in vLLM 0.13; verl 0.7 declares vllm<=0.12, where it is still valid
        (main_ppo(_V, f"{_EK}.vllm.cuda_graph_sizes=[1,2,4]"), ">=0.8"),
        main_ppo(_S, f"{_EK}.sglang.enable_expert_parallel=True"),
    ],
    good=[
        main_ppo(_V, f"{_EK}.vllm.swap_space=null", f"{_EK}.vllm.kv_cache_dtype=fp8"),
        main_ppo(_S, f"{_EK}.sglang.chunked_prefill_size=4096"),
    ],
)
def unknown_engine_kwarg(ctx: Context):
    """An `engine_kwargs` key that the rollout engine does not accept.

    ## What it does
    Checks every key under `<rollout>.engine_kwargs.vllm` / `.sglang` against the argument
    list of the engine release: the fields of vLLM's `EngineArgs`/`AsyncEngineArgs`, its
    front-end `*Args` classes and the `--options` of the `vllm serve` parser, or SGLang's
    `ServerArgs` fields — read with `ast` from the installed engine, else from the bundled
    snapshots. The releases come from evidence: `--vllm` / `--sglang` (or the
    `[tool.verl-lint]` setting), the installed engine, else the range the verl tree and the
    project declare — an error where every release in it rejects the key, a warning naming
    the releases where only some do; with no evidence only a key no release has is reported
    (VL010 says what stayed silent). Says "removed in vLLM X" or "only exists from" when
    another release has the key, and suggests the closest real argument. A key set by verl's
    own shipped config, not by you, is reported once per run as info.

    ## Why is this bad?
    verl hands the keys to `vllm serve` as `--key value` (argparse: `unrecognized
    arguments`) or to `ServerArgs(**args)` (`TypeError`): the job dies when the rollout
    server starts, minutes in, after Ray, the model download and the trainer workers.

    ## Use instead
    The argument the did-you-mean names, or the replacement of a removed one
    (`cuda_graph_sizes` → `compilation_config.cudagraph_capture_sizes` on vLLM >= 0.13).

    ## Where in verl
    0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:349` (`**engine_kwargs` into
    the `vllm serve` arguments) and `utils.py:477` (`build_cli_args_from_config`);
    0.9.1 `verl/workers/rollout/sglang_rollout/async_sglang_server.py:340,424` (`ServerArgs(**args)`).
    """
    yield from _emit(ctx, "VL701")


@rule(
    "VL702",
    "engine-kwarg-breaks-worker-mapping",
    "error",
    verl=">=0.6.0",
    bad=[
        main_ppo(_V, "actor_rollout_ref.rollout.tensor_model_parallel_size=2", f"{_EK}.vllm.tensor_parallel_size=4"),
        main_ppo(_V, f"{_EK}.vllm.enable_sleep_mode=False"),
        main_ppo(_V, f"{_EK}.vllm.distributed_executor_backend=ray"),
        main_ppo(_S, "actor_rollout_ref.rollout.tensor_model_parallel_size=2", f"{_EK}.sglang.tp_size=4"),
    ],
    good=[
        main_ppo(_V, "actor_rollout_ref.rollout.tensor_model_parallel_size=2", f"{_EK}.vllm.tensor_parallel_size=2"),
        main_ppo(_V, "actor_rollout_ref.rollout.tensor_model_parallel_size=4"),
    ],
)
def engine_kwarg_breaks_mapping(ctx: Context):
    """An engine kwarg replaces a topology or lifecycle value that verl builds its workers from.

    ## What it does
    For engine arguments that verl derives from its own rollout config to place and drive
    the workers (vLLM `tensor_parallel_size`, `data_parallel_*`, `pipeline_parallel_size`,
    `distributed_executor_backend`, `worker_extension_cls`, `nnodes`/`node_rank`,
    `enable_sleep_mode`; SGLang `tp_size`, `dp_size`, `ep_size`, `base_gpu_id`,
    `enable_memory_saver`, ...; listed in `rules/engine_args/verl_knobs.yaml`), reads from
    the linted verl's `launch_server` whether your engine kwarg reaches the engine (set
    before `**engine_kwargs`, or after it only under a condition that does not hold) and
    compares it with verl's value evaluated on the composed config. Equal values are fine.

    ## Why is this bad?
    verl sizes replicas, creates one worker per GPU, and syncs weights and sleeps/wakes the
    engine from `rollout.tensor_model_parallel_size`, `data_parallel_size`,
    `enable_sleep_mode`... The engine kwarg changes only the engine side: the two disagree,
    which hangs, maps weights to the wrong ranks, OOMs the trainer (sleep mode off while
    verl still frees/offloads), or fails an assertion at start-up.

    ## Use instead
    verl's own knob: `actor_rollout_ref.rollout.tensor_model_parallel_size`,
    `data_parallel_size`, `+actor_rollout_ref.rollout.enable_sleep_mode=False`, ...

    ## Where in verl
    0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:325-349` (verl's keys before
    `**engine_kwargs`) and `:384-413` (data-parallel / multi-node keys set afterwards only when
    DP > 1 / nnodes > 1); its own comment at `:1158`: "engine_kwargs is forwarded verbatim to
    vLLM, so close topology override paths that would bypass VERL's worker and IPC mapping".
    0.9.1 `async_sglang_server.py:313-340`; 0.7.1 `vllm_async_server.py:302-326`.
    """
    yield from _emit(ctx, "VL702")


@rule(
    "VL703",
    "engine-kwarg-overwritten-by-verl",
    "error",
    verl=">=0.6.0",
    bad=[
        # the vLLM argument only exists from vLLM 0.14, newer than verl 0.7 declares
        (main_ppo(_V, "actor_rollout_ref.rollout.enable_rollout_routing_replay=True", f"{_EK}.vllm.enable_return_routed_experts=False"), ">=0.8"),
        # ... and the SGLang one from SGLang 0.5.7 (verl 0.7 declares sglang==0.5.6)
        (main_ppo(_S, "actor_rollout_ref.rollout.enable_rollout_routing_replay=True", f"{_EK}.sglang.enable_return_routed_experts=False"), ">=0.8"),
    ],
    good=[
        main_ppo(_V, f"{_EK}.vllm.limit_mm_per_prompt.image=4"),
        (main_ppo(_S, f"{_EK}.sglang.enable_return_routed_experts=True", "actor_rollout_ref.rollout.enable_rollout_routing_replay=True"), ">=0.8"),
    ],
)
def engine_kwarg_overwritten(ctx: Context):
    """verl overwrites an engine kwarg after spreading `engine_kwargs`, so your value is lost.

    ## What it does
    Reads the linted verl's `launch_server` with `ast`: every `args.update({...})`,
    `args[k] = ...` after the dict literal that spreads `**engine_kwargs`, and every
    `engine_kwargs[k] = ...` before it, with the `if` conditions around them. The
    conditions are evaluated on the composed config; an unconditional or true one is an
    error, an unknown one (`self.nnodes > 1`) a warning. Silent when verl's value equals
    yours. On verl 0.9.1 this covers `enable_expert_parallel` (always
    `expert_parallel_size > 1`); on 0.7.1 the same key is only overwritten when
    `expert_parallel_size > 1`, otherwise VL704 reports it.

    ## Why is this bad?
    The run silently uses verl's value: `enable_expert_parallel=True` becomes `False` with
    the default `expert_parallel_size=1`, so a MoE model runs without expert parallelism
    (slower, or out of memory), and nothing in the logs says why.

    ## Use instead
    The verl knob the value is derived from, e.g.
    `actor_rollout_ref.rollout.expert_parallel_size=<TP×DP>` (the help computes it),
    `actor_rollout_ref.rollout.limit_images`, `actor_rollout_ref.rollout.prometheus.served_model_name`.

    ## Where in verl
    0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:402`
    (`args.update({"enable_expert_parallel": self.config.expert_parallel_size > 1})`), `:290`
    (`limit_mm_per_prompt` from `limit_images`), `:368-454`; 0.7.1 `:354-371` (inside
    `if self.config.expert_parallel_size > 1`), `:220` (`cuda_graph_sizes`);
    0.9.1 `async_sglang_server.py:343-418`.
    """
    yield from _emit(ctx, "VL703")


@rule(
    "VL704",
    "engine-kwarg-bypasses-verl-setting",
    "warning",
    verl=">=0.6.0",
    bad=[
        main_ppo(_V, f"{_EK}.vllm.max_model_len=8192"),
        main_ppo(_V, f"{_EK}.vllm.seed=1"),
        main_ppo(_S, f"{_EK}.sglang.mem_fraction_static=0.8"),
    ],
    good=[
        main_ppo(_V, "actor_rollout_ref.rollout.max_model_len=8192"),
        main_ppo(_V, "actor_rollout_ref.rollout.gpu_memory_utilization=0.6", f"{_EK}.vllm.gpu_memory_utilization=0.6"),
    ],
)
def engine_kwarg_bypasses_verl(ctx: Context):
    """An engine kwarg replaces a value verl passes from its own config, which verl keeps using.

    ## What it does
    Reports engine kwargs that override a key verl sets in the server-argument literal before
    `**engine_kwargs` (`max_model_len`, `gpu_memory_utilization`, `seed`, `dtype`,
    `load_format`, `mem_fraction_static`, ...) with a different value, and keys that verl
    sets itself only under a condition that does not hold (verl 0.7.1:
    `enable_expert_parallel` without `expert_parallel_size > 1`). Read from the linted
    verl's source, evaluated on the composed config.

    ## Why is this bad?
    The engine runs with your value while verl's own code still reads the rollout config:
    `max_tokens` computed from `rollout.max_model_len`, batch-token checks, the per-replica
    seed `replica_rank + seed` (one engine seed for all replicas), expert parallelism without
    the data-parallel wiring verl adds with it.

    ## Use instead
    The rollout config key the help names (`actor_rollout_ref.rollout.max_model_len=...`,
    `actor_rollout_ref.rollout.expert_parallel_size=<TP×DP>`), not the engine kwarg.

    ## Where in verl
    0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:325-349`; 0.7.1
    `:302-326` and `:354-371`; 0.9.1 `verl/workers/rollout/sglang_rollout/async_sglang_server.py:314-340`.
    """
    yield from _emit(ctx, "VL704")


@rule(
    "VL706",
    "engine-kwarg-passed-twice",
    "error",
    bad=[(main_ppo(_V, f"{_EK}.vllm.enable_prefix_caching=False"), ">=0.5,<0.7")],
    good=[main_ppo(_V, f"{_EK}.vllm.kv_cache_dtype=fp8"), (main_ppo(_V, "actor_rollout_ref.rollout.enforce_eager=True"), ">=0.5,<0.7")],
)
def engine_kwarg_passed_twice(ctx: Context):
    """An engine kwarg that verl's synchronous rollout already passes as a keyword of the same call.

    ## What it does
    Reads, with `ast`, the calls under the tree's `verl/workers/rollout/<engine>_rollout/` that
    spread `**engine_kwargs` next to keywords of their own (`LLM(model=..., seed=...,
    enable_prefix_caching=True, **engine_kwargs)` in verl 0.5's `vllm_rollout_spmd.py`), and
    reports an engine kwarg that every such call already names, when the rollout runs in sync
    mode (the mode those calls serve; verl 0.7 and later have none, and build the server's
    arguments as a dict, where VL703 and VL704 apply). A key the function pops first is not
    counted, nor a null value (verl drops those).

    ## Why is this bad?
    Python refuses a keyword given twice: `TypeError: LLM() got multiple values for keyword
    argument 'enable_prefix_caching'` when the rollout worker builds its engine, after Ray, the
    model download and the trainer workers are up.

    ## Use instead
    The rollout config key verl reads for it (`actor_rollout_ref.rollout.enforce_eager`, ...),
    or nothing when verl hard-codes the value.

    ## Where in verl
    0.5.0 `verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:165-185`; 0.6.1 the same file;
    0.4.1 imports `vllm_rollout.py` instead for vLLM <= 0.6.3 (`vllm_rollout/__init__.py`), whose
    call lacks that keyword: there the vLLM version decides which call runs (installed, or
    `--vllm`), and without it only keys both calls name are reported.
    """
    yield from _emit(ctx, "VL706")


@rule(
    "VL705",
    "engine-kwargs-for-inactive-engine",
    "warning",
    bad=[main_ppo(_S, f"{_EK}.vllm.max_num_seqs=256")],
    good=[main_ppo(_V, f"{_EK}.vllm.kv_cache_dtype=fp8")],
)
def engine_kwargs_inactive(ctx: Context):
    """`engine_kwargs.<engine>` is set for an engine the rollout does not run.

    ## What it does
    Flags keys under `<rollout>.engine_kwargs.vllm` when `<rollout>.name` is `sglang` (and
    the other way round).

    ## Why is this bad?
    The vLLM server reads only `engine_kwargs.vllm`, the SGLang server only
    `engine_kwargs.sglang`: the setting is silently dropped, usually after switching the
    rollout engine and forgetting to translate its arguments.

    ## Use instead
    The equivalent argument of the engine in use, under its own `engine_kwargs` key.

    ## Where in verl
    0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:287,1130`
    (`engine_kwargs.get("vllm")`) and `verl/workers/rollout/sglang_rollout/async_sglang_server.py:276`
    (`engine_kwargs.get("sglang")`).
    """
    yield from _emit(ctx, "VL705")
