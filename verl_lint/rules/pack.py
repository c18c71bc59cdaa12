"""The rule pack as one unit: importing this module registers every rule (the explicit,
greppable list below), and `check` runs the pack over one launch — the lint core that every
front end calls (`check`/`run` through the pipeline with a composed config, the Hydra callback
with the live one)."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..config.context import Context
from ..engines.versions import notes as version_notes
from ..model import Diagnostic
from ..registry import Rule
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
    # A removed/renamed-key finding explains Hydra's bare "Could not override" at the same token.
    explained = {d.span for d in found if d.code.startswith("VL4")}
    # "nothing reads this key" (VL230) is the weaker form of "the class built from this node has
    # no such field" (VL110, an error): one finding per override.
    rejected = {d.span for d in found if d.code == "VL110"}
    # A deprecated key derived from the code (VL232) is said better by a curated record of the same
    # override (VL2xx ineffective, VL4xx renamed: they know what each release's workers do with it).
    # So is a key read only under a condition that is off (VL233): the record says why in words.
    curated = {d.span for d in found if d.code in tables.CODES}
    found = [d for d in found if not (d.code == "VL230" and d.span in rejected) and not (d.code in ("VL232", "VL233") and d.span in curated)]
    return [d for d in ctx.comp.diagnostics if not (d.code in ("VL101", "VL105") and d.span in explained)] + found
