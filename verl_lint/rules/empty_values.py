"""VL112: `key=` with nothing after `=` (an unset or empty shell variable, most often) on a key
whose value verl's config types as a bool or a number."""

from __future__ import annotations

from ..config.context import Context
from ..registry import Subject, rule

_KIND = {bool: "a bool", int: "an int", float: "a float"}


@rule(
    "VL112",
    "empty-override-value",
    "warning",
    subject=Subject(kinds=("set",), source="script"),  # a key the command line sets
)
def empty_value(ctx: Context, settings):
    """An override that sets a bool or a number to the empty string.

    ## What it does
    Flags an override whose value is empty — `key=`, or `key=$VAR` with `VAR` set to nothing
    in the script — on a key whose value in verl's config (the value the override replaces)
    is a bool, an int or a float. An empty value for a text key (`trainer.experiment_name=`)
    is a string like any other and is not reported; a value the script leaves to its caller
    (`$VAR` never assigned) is unknown and not judged.

    ## Why is this bad?
    Hydra reads `key=` as the empty string `''`, and verl's config is not typed where the
    value arrives: the config sections reach the workers as OmegaConf nodes, or become verl's
    config dataclasses through `hydra.utils.instantiate`, which passes `''` on as it is. A bool
    that is `''` is falsy, so `if config.use_dynamic_bsz:` reads it as False: a switch that is
    on by default is silently turned off. A number that is `''` makes verl's arithmetic or
    comparisons on it raise `TypeError` once a worker computes with it, after Ray is up.
    Nothing else in the launch is judged differently: the other rules read the empty value as
    the value it is.

    ## Use instead
    Give the value, or drop the override to keep verl's default; for a shell variable, set it
    or give it a default (`${VAR:-True}`).

    ## Where in verl
    0.9.1 `verl/utils/config.py:41-50` (`omega_conf_to_dataclass` without a dataclass type:
    `hydra.utils.instantiate`, no type conversion); 0.9.1 `verl/base_config.py` (`BaseConfig`:
    no type checks); 0.4.1 `verl/workers/actor/dp_actor.py` (`if self.config.use_dynamic_bsz:`).
    """
    for o in settings:
        if o.value_unknown is not None or not o.line.endswith("="):
            continue
        shipped = o.replaced
        if not isinstance(shipped, (bool, int, float)) or ctx.get(o.key, None) != "":
            continue
        if isinstance(shipped, bool):
            what = (
                "verl tests it for truth and reads it as False, turning off what is True without this override"
                if shipped
                else "verl tests it for truth and reads it as False (as without this override): the value meant here "
                "is lost"
            )
        else:
            what = (
                "verl's arithmetic and comparisons on it raise TypeError once a worker computes with it (default: "
                f"{shipped})"
            )
        yield ctx.diag(
            "VL112",
            f"`{o.line}` sets {o.key} to the empty string '', not {_KIND[type(shipped)]}: {what}",
            key=o.key,
            span=o.word.span,
            help=f"give a value, or drop the override to keep the default {o.key}={shipped}",
        )
