"""The analysis behind the 7xx rules (`rules.engine_kwargs`): each key a launch sets under
`<rollout>.engine_kwargs.<engine>`, judged against the engine release (`engines.schemas`), the
synchronous rollout's own keywords, and how the linted verl tree assembles the server arguments
(`engines.assembly`, its conditions evaluated on the composed config by `engines.expressions`).
`analyse` is the family of those rules (`registry.Family`): every finding of a launch, whatever its code.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from omegaconf import DictConfig, OmegaConf

from ..config.context import MISSING, Context
from ..engines import versions
from ..model import Diagnostic, Severity, Unknown
from ..registry import EVERY, Subject, family, lazy_module

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


# ------------------------------------------------------------- collection ----


def _sections(settings) -> list[str]:
    """The rollout sections the launch sets engine kwargs under (the actor's always)."""
    return list(dict.fromkeys([ACTOR, *(o.key.split(".engine_kwargs")[0] for o in settings)]))


def kwargs_of(ctx: Context, settings) -> list[Kwarg]:
    out = []
    for sec in _sections(settings):
        for engine in KW_ENGINES:
            path = f"{sec}.engine_kwargs.{engine}"
            node = OmegaConf.select(
                ctx.cfg, path, default=None, throw_on_missing=False, throw_on_resolution_failure=False
            )
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


def _verl_default(ctx: Context, path: str) -> bool:
    """verl's shipped config chose the value: neither it nor a key under it (a dict such as
    `compilation_config`, filled in field by field) is set by the user."""
    if ctx.provenance(path) != "verl-default":
        return False
    return not ctx.set_under(path)


def _found(
    ctx: Context, code: str, kw: Kwarg, message: str, help: str, severity: Severity | None = None
) -> Diagnostic | None:
    """The finding of rule `code` on `kw`: at the setting that made it, or once per run as info
    where verl's own shipped config set it, not the user (an argument for the engine the rollout
    does not run is inert there, and verl ships both: nothing)."""
    if _verl_default(ctx, kw.path):
        return None if code == "VL705" else ctx.default_problem(code, message, kw.path, help)
    under = ctx.set_under(kw.path)
    span = under[0].word.span if under and not ctx.set_by_override(kw.path) else None
    return ctx.diag(code, message, key=kw.path, help=help, span=span, severity=severity)


@family(subject=Subject(("*.engine_kwargs*",), kinds=EVERY, applied=None))
def analyse(ctx: Context, settings):
    """Every engine_kwargs finding of a launch (the 7xx rules)."""
    for kw in kwargs_of(ctx, settings):
        active = ctx.get(f"{kw.section}.name", None)
        if isinstance(active, str) and active in schemas.ENGINES and active != kw.engine:
            d = _found(
                ctx,
                "VL705",
                kw,
                f"`{kw.path}` is ignored: `{kw.section}.name={active}`, and verl only passes `engine_kwargs.{active}` "
                "to the rollout server",
                f"move it to `+{kw.section}.engine_kwargs.{active}.<arg>` (with the {schemas.ENGINES[active].title} "
                "name of the argument), or remove it",
            )
            if d is not None:
                yield d
            continue
        d = _schema_finding(ctx, kw) or _passed_twice(ctx, kw)
        if d is not None:
            yield d
            continue
        if not isinstance(active, str) or active != kw.engine:
            continue  # the engine is not known statically: verl's code path is not known either
        d = _assembly_finding(ctx, kw)
        if d is not None:
            yield d


def _schema_finding(ctx: Context, kw: Kwarg) -> Diagnostic | None:
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
        return _unknown_kwarg(ctx, kw, schema, note, Severity.WARNING if uncertain else None)
    if snap is None or not snap.versions:
        return None
    typo = not snap.history("args", kw.key)  # no bundled release has it: a misspelling on any release
    verdict = versions.judge(
        ev,
        snap.versions,
        lambda r: not schemas.accepts(kw.engine, kw.key, snap.at("args", r)),
        typo or None,
        typo or None,
    )
    if verdict.level == "skipped":
        versions.skipped(ctx, kw.engine)
    if verdict.level not in ("all", "some"):
        return None
    schema = schemas.schema_for(
        kw.engine, schemas.lenient_version(verdict.holds[-1] if verdict.holds else snap.versions[-1])
    )
    return _unknown_kwarg(ctx, kw, schema, verdict.note, Severity.WARNING if verdict.level == "some" else None)


def _unknown_kwarg(ctx: Context, kw: Kwarg, schema, note: str, severity: Severity | None) -> Diagnostic:
    info = schemas.ENGINES[kw.engine]
    if kw.engine == "vllm":
        if isinstance(kw.value, bool) and kw.value is False:
            effect = "verl drops `False` flags that are not optional booleans, so this does nothing"
        else:
            effect = (
                f"verl passes `--{kw.key.replace('_', '-')}` to `vllm serve`, whose parser stops the rollout "
                "server with `unrecognized arguments`"
            )
    else:
        effect = (
            "verl calls `ServerArgs(**args)`, which raises `TypeError: unexpected keyword argument` when the "
            "rollout server starts"
        )
    history = schema.describe("args", kw.key)
    where = f"{info.title} {schema.version}" + (" (installed)" if schema.origin == "installed" else "")
    msg = f"`{kw.key}` is not a {where} engine argument" + (f": {history}" if history else "") + f"; {effect} ({note})"
    guess = schema.suggest("args", kw.key)
    help = (
        f"did you mean `{kw.section}.engine_kwargs.{kw.engine}.{guess[0]}`?"
        if guess
        else "remove it, or check the argument list of your engine release"
    )
    return _found(ctx, "VL701", kw, msg, help, severity)


def _passed_twice(ctx: Context, kw: Kwarg) -> Diagnostic | None:
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
    knob = (
        value.split("config.", 1)[1]
        if value.startswith(("config.", "self.config.")) and value.count("(") == 0
        else None
    )
    return _found(
        ctx,
        "VL706",
        kw,
        f"`{kw.key}={expressions.show(kw.value)}` is passed twice: verl calls `{c.callee}(..., {kw.key}={value}, ..., "
        "**engine_kwargs)` "
        f"({c.path}:{line}), so Python raises `TypeError: {c.callee}() got multiple values for keyword argument "
        f"'{kw.key}'` "
        "when the rollout starts",
        f"remove the engine kwarg and set `{kw.section}.{knob}` instead"
        if knob
        else f"remove the engine kwarg: verl always passes `{kw.key}` itself",
    )


def _assembly_finding(ctx: Context, kw: Kwarg) -> Diagnostic | None:
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
            f"{title} server arguments{when} with `{asm.value_text(e.value, kw.section)}`{becomes} "
            f"({asm.where(e.line)})"
        )
        return _found(ctx, "VL703", kw, msg, _use_knobs(ctx, kw, ev, e))

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
                    f" = {expressions.show(expected)}"
                    if expected is not expressions.UNKNOWN
                    else ", computed per replica"
                )
        else:
            # verl sets it itself only under a condition that does not (or may not) hold here:
            # compare with the rollout knob it stands for
            expected = ev.eval(f"self.config.{knob}") if knob else expressions.UNKNOWN
            knobs = [knob] if knob else (ev.config_refs(conditional.value) if conditional else [])
            if conditional is not None:
                verl_says = (
                    f"verl sets it (to `{asm.value_text(conditional.value, kw.section)}`) only when "
                    f"{conditional.condition_text(kw.section)}"
                )
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
        maybe = (
            f"; verl replaces it only when {over_unknown[-1].condition_text(kw.section)}"
            if (over_unknown and e is not None)
            else ""
        )
        where = f" ({asm.where(anchor.line)})" if anchor is not None and anchor.line else ""
        msg = (
            f"`{kw.key}={user}` reaches the {title} server in place of verl's own value: {verl_says}{where}{maybe}. "
            f"verl starts, places and drives its rollout workers from its own setting, so the engine and verl's "
            f"workers disagree (hang, wrong GPU/weight mapping, or a crash at start-up)"
        )
        if knobs and kw.key != "enable_memory_saver":
            hint = ", ".join(
                _set_hint(ctx, kw.section, k, kw.value) if len(knobs) == 1 else f"`{kw.section}.{k}`" for k in knobs
            )
            help = f"remove the engine kwarg and set {hint} instead"
        else:
            help = "remove the engine kwarg: verl sets it itself"
        return _found(ctx, "VL702", kw, msg, help)

    if over_unknown:
        e = over_unknown[-1]
        msg = (
            f"`{kw.key}={user}` may have no effect: verl overwrites `{kw.key}` when {e.condition_text(kw.section)} "
            f"with `{asm.value_text(e.value, kw.section)}` ({asm.where(e.line)})"
        )
        return _found(ctx, "VL703", kw, msg, _use_knobs(ctx, kw, ev, e), Severity.WARNING)

    if defaults:
        e = defaults[-1]
        verl_val = ev.eval(e.value)
        if verl_val is not expressions.UNKNOWN and expressions.same_value(verl_val, kw.value):
            return None
        knobs = ev.config_refs(e.value)
        shown = f" = {expressions.show(verl_val)}" if verl_val is not expressions.UNKNOWN else ""
        if knobs:
            msg = (
                f"`{kw.key}={user}` overrides the value verl passes from "
                f"`{asm.value_text(e.value, kw.section)}`{shown} "
                f"({asm.where(e.line)}): the {title} engine uses yours, but verl's own code keeps reading "
                + ", ".join(f"`{kw.section}.{k}`" for k in knobs)
            )
            help = (
                "set "
                + ", ".join(
                    _set_hint(ctx, kw.section, k, kw.value) if len(knobs) == 1 else f"`{kw.section}.{k}`" for k in knobs
                )
                + " instead of the engine kwarg"
            )
        else:
            msg = (
                f"`{kw.key}={user}` overrides verl's own `{kw.key}={asm.value_text(e.value, kw.section)}`{shown} "
                f"({asm.where(e.line)}), which verl sets on purpose for every rollout server"
            )
            help = "remove the engine kwarg unless you know why verl's value does not fit"
        return _found(ctx, "VL704", kw, msg, help)

    if over_false:
        # Only a key that verl sets as part of a larger block (expert parallelism together with
        # its data-parallel wiring) is a bypass; a lone conditional default (limit_mm_per_prompt
        # from limit_images) is a legitimate engine kwarg when verl's condition does not hold.
        e = over_false[-1]
        siblings = sorted(
            {x.key for x in asm.entries if x.condition == e.condition and x.key != kw.key and x.overwrites}
        )
        if not siblings:
            return None
        along = f" (together with {', '.join(siblings)})"
        msg = (
            f"`{kw.key}={user}` bypasses verl: verl sets `{kw.key}` itself only when "
            f"{e.condition_text(kw.section)}{along} "
            f"({asm.where(e.line)}), which is not the case here, so your flag reaches {title} without the setup verl "
            "does with it"
        )
        return _found(ctx, "VL704", kw, msg, _use_knobs(ctx, kw, ev, e))
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
