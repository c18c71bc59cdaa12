"""1xx: override hygiene.

Hydra's own composition errors (VL101–VL106) are reported by the composition step
(`config/compose.py`, which runs Hydra's code) and declared with it in `verl_lint/catalogue.py`.
"""

from functools import lru_cache

from ..files import read_regular
from ..model import Fix, Severity, place
from ..registry import Subject, rule


@rule(
    "VL107",
    "duplicate-override",
    "warning",
    subject=Subject(source="script"),  # the values the command line sets
)
def duplicate_override(ctx, settings):
    """The same key is overridden twice in one launch; the last one silently wins.

    ## What it does
    Flags a value override of a key that a later override of the same launch sets again.

    ## Why is this bad?
    Hydra applies overrides in order, so the earlier value is dead. In long scripts
    built from variables and arrays this usually means one of the two is a mistake
    (the one you edited is not the one that counts).

    ## Use instead
    Keep one override per key.
    """
    last = {o.key: o for o in settings}
    for o in settings:
        if last[o.key] is not o:
            winner = last[o.key]
            if o.value_unknown is None and winner.value_unknown is None:
                same = o.line.lstrip("+") == winner.line.lstrip("+")
            else:  # both only known at run time: the same words in one command give the same value
                written = _written(o.word.span), _written(winner.word.span)
                same = None not in written and written[0].lstrip("+") == written[1].lstrip("+")
            if same:  # harmless redundancy: say so, quietly
                d = ctx.diag(
                    "VL107",
                    f"`{o.key}` is set again to the same value at {place(winner.word.span)}; this one is redundant",
                    key=o.key,
                    help="remove the repeated override",
                    span=o.word.span,
                    severity=Severity.INFO,
                )
            else:
                d = ctx.diag(
                    "VL107",
                    f"`{o.line}` is overridden at {place(winner.word.span)} by `{winner.line}`, which wins; this "
                    "value is ignored",
                    key=o.key,
                    help="keep one override per key: the value you meant",
                    span=o.word.span,
                )
            # Only a token written on this command is safe to delete (an array may feed other launches).
            cmd = ctx.launch.span
            if o.word.span.path == cmd.path and cmd.start_byte <= o.word.span.start_byte < cmd.end_byte:
                d.fix = Fix("remove the shadowed override", True, "remove-token", o.word.span)
            yield d


def _written(span) -> str | None:
    """The text of `span` as the script writes it (None for a command line or an unreadable file)."""
    if span.path.startswith("<") or span.end_byte <= span.start_byte:
        return None
    data = _script_bytes(span.path)
    return None if data is None else data[span.start_byte : span.end_byte].decode("utf-8", "surrogateescape")


@lru_cache(maxsize=8)
def _script_bytes(path: str) -> bytes | None:
    try:
        return read_regular(path)
    except OSError:
        return None
