"""The rule pack as one unit: importing this module registers every rule (the explicit,
greppable list below), and `check` runs the pack over one launch — the lint core that every
front end calls (`check`/`run` through the pipeline with a composed config, the Hydra callback
with the live one)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..catalogue import ENTRY_POINT_NOT_JUDGED
from ..config.context import Context
from ..engines.versions import notes as version_notes
from ..model import Diagnostic
from ..registry import REGISTRY, Rule
from . import (  # noqa: F401 - each registers its rules
    allocator,
    allocator_live,
    batch_sizes,
    broken_defaults,
    deprecated,
    dynamic_batches,
    empty_values,
    engine_kwargs,
    env,
    guarded,
    hydra_keys,
    megatron_model,
    memory_fit,
    micro_batches,
    model_sizes,
    overwritten,
    parallel_sizes,
    ray_env,
    rejected_values,
    script,
    sft_sizes,
    sizes,
    tables,
    token_budgets,
    unread,
    worker_sizes,
)


def check(
    ctx: Context, rules: Iterable[Rule], on_error: Callable[[Rule, Exception], None] | None = None
) -> list[Diagnostic]:
    """The findings of `rules` on the launch of `ctx`, with its composition's own findings.

    A rule that raises propagates, unless `on_error(rule, exception)` is given: then it is
    called and the other rules still run."""

    def run(r: Rule) -> list[Diagnostic]:
        if on_error is None:
            return r.run(ctx)[0]
        try:
            return r.run(ctx)[0]
        except Exception as ex:  # noqa: BLE001 - reported through on_error; the other rules still run
            on_error(r, ex)
            return []

    found: list[Diagnostic] = []
    not_judged: list[Diagnostic] = []  # what rules verified on another entry point's code would say
    for r in rules:
        if r.runs_on(ctx):
            found += run(r)
        elif r.entry_points and r.checks_tree(ctx) and not r.judges_entry(ctx):
            not_judged += run(r)
    found += version_notes(ctx)
    if not_judged:
        found.append(_not_judged_note(ctx, not_judged))
    # A finding gives way to one that says the same better at the same token (`Rule.supersedes`).
    every = [*ctx.comp.diagnostics, *found]
    superseded = {(code, d.span) for d in every for code in getattr(REGISTRY.get(d.code), "supersedes", ())}
    return [d for d in every if (d.code, d.span) not in superseded]


def _not_judged_note(ctx: Context, unsaid: list[Diagnostic]) -> Diagnostic:
    """VL012, once per run: rules verified on another entry point's code would report on keys this
    launch sets, and did not judge it."""
    module = ctx.app.verl_module()
    codes = sorted({d.code for d in unsaid})
    keys = list(dict.fromkeys(f"`{d.key}`" for d in unsaid if d.key))
    mirrored = sorted({m for code in codes for m in REGISTRY.get(code).entry_points})
    d = ENTRY_POINT_NOT_JUDGED.finding(
        f"not judged for `{module}`, which runs code of its own: {', '.join(codes)} would report "
        f"{', '.join(keys) or 'this launch'} under {' and '.join(mirrored)}",
        ctx.launch.entry_span,
        help="check those keys against the app's own code, or launch through verl.trainer.main_ppo with --config-name",
        key=module,
    )
    d.once = True
    return d
