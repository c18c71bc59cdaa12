"""The rule pack as one unit: importing this module registers every rule (the explicit,
greppable list below), and `check` runs the pack over one launch — the lint core that every
front end calls (`check`/`run` through the pipeline with a composed config, the Hydra callback
with the live one)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..config.context import Context
from ..engines.versions import notes as version_notes
from ..model import Diagnostic
from ..registry import REGISTRY, Rule
from .. import catalogue  # noqa: F401 - the rules the front ends report
from . import (  # noqa: F401 - each registers its rules
    allocator,
    allocator_live,
    batch_sizes,
    deprecated,
    engine_kwargs,
    env,
    guarded,
    hydra_keys,
    micro_batches,
    overwritten,
    parallel_sizes,
    script,
    sft_sizes,
    sizes,
    tables,
    unread,
    values,
    worker_sizes,
)


def check(ctx: Context, rules: Iterable[Rule], on_error: Callable[[Rule, Exception], None] | None = None) -> list[Diagnostic]:
    """The findings of `rules` on the launch of `ctx`, with its composition's own findings.

    A rule that raises propagates, unless `on_error(rule, exception)` is given: then it is
    called and the other rules still run."""
    found: list[Diagnostic] = []
    for r in rules:
        if not r.runs_on(ctx):
            continue
        if on_error is None:
            found.extend(r.check(ctx))
            continue
        try:
            found.extend(list(r.check(ctx)))
        except Exception as ex:  # noqa: BLE001 - reported through on_error; the other rules still run
            on_error(r, ex)
    found += version_notes(ctx)
    # A finding gives way to one that says the same better at the same token (`Rule.supersedes`).
    every = [*ctx.comp.diagnostics, *found]
    superseded = {(code, d.span) for d in every for code in getattr(REGISTRY.get(d.code), "supersedes", ())}
    return [d for d in every if (d.code, d.span) not in superseded]
