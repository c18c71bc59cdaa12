"""1xx: Hydra composition errors and override hygiene.

VL101–VL106 are emitted by the composition step (`compose.py`), which runs Hydra's own
code; they are registered here for their documentation and examples.
"""

from functools import lru_cache

from ..files import read_regular
from ..model import Fix, Severity, place
from ..registry import declare, main_ppo, rule


UNKNOWN_CONFIG_KEY = declare(
    "VL101",
    "unknown-config-key",
    "error",
    """An override sets a key that is not in the composed config.

    ## What it does
    Runs Hydra's own override application on the composed config and reports
    "Could not override 'key'" at the override, with the closest real key.

    ## Why is this bad?
    Hydra composes in struct mode: the job stops before training with
    `ConfigCompositionException`. Usually a typo or a key renamed between verl releases.

    ## Use instead
    The key the did-you-mean names, or `+key=value` when you really add a new key
    (for example a dataclass-only field such as `actor_rollout_ref.rollout.enable_sleep_mode`).
    """,
    bad=[main_ppo("actor_rollout_ref.rollout.tensor_parallel_size=2")],
    good=[main_ppo("actor_rollout_ref.rollout.tensor_model_parallel_size=2")],
)
OVERRIDE_SYNTAX_ERROR = declare(
    "VL102",
    "override-syntax-error",
    "error",
    """Hydra cannot parse an override.

    ## What it does
    Parses every override with Hydra's own grammar and reports the lexer/parser error.

    ## Why is this bad?
    Hydra stops with `OverrideParseException` before anything runs.

    ## Use instead
    Quote values with spaces, brackets or special characters for Hydra inside the shell
    quoting, e.g. `'trainer.logger=["console","wandb"]'`.
    """,
    bad=[main_ppo("trainer.logger=[console,wandb")],
    good=[main_ppo("trainer.logger=[console,wandb]")],
)
ADD_EXISTING_KEY = declare(
    "VL103",
    "add-existing-key",
    "error",
    """`+key=value` on a key that already exists.

    ## What it does
    Reports Hydra's "Could not append to config. An item is already at ..." at the override.

    ## Why is this bad?
    `+` means *add*; Hydra refuses to add a key that exists and the job stops.

    ## Use instead
    `key=value` to override, or `++key=value` to add-or-override.
    """,
    bad=[main_ppo("+trainer.nnodes=2")],
    good=[main_ppo("++trainer.nnodes=2")],
)
DELETE_MISSING_KEY = declare(
    "VL104",
    "delete-missing-key",
    "error",
    """`~key` deletes a key that does not exist.

    ## What it does
    Reports Hydra's "Could not delete from config" at the override.

    ## Why is this bad?
    The job stops during composition.

    ## Use instead
    Remove the override, or fix the key.
    """,
    bad=[main_ppo("~trainer.no_such_key")],
    good=[main_ppo("~trainer.val_before_train")],
)
OVERRIDE_REJECTED = declare(
    "VL105",
    "override-rejected",
    "error",
    """Hydra rejects an override for another reason (type, sweep, merge error).

    ## What it does
    Reports any other error Hydra raises while applying a value override, such as a
    sweep (`a=1,2`) in a single run or merging a dict into a scalar.

    ## Why is this bad?
    The job stops during composition.

    ## Use instead
    What the message says: quote comma-separated values (`'key="a,b"'`), or fix the type.
    """,
    bad=[main_ppo("trainer.nnodes=1,2")],
    good=[main_ppo("trainer.nnodes=2")],
)
CONFIG_COMPOSITION_ERROR = declare(
    "VL106",
    "config-composition-error",
    "error",
    """Hydra cannot compose the config (missing config group option, bad defaults list).

    ## What it does
    Composes the defaults tree with Hydra and reports its error at the config-group
    override that caused it (or at the launch).

    ## Why is this bad?
    The job stops before anything runs.

    ## Use instead
    An existing option of the config group (the message lists them).
    """,
    bad=[main_ppo("model_engine=no_such_engine")],
    good=[main_ppo("model_engine=torchtitan")],
)


@rule(
    "VL107",
    "duplicate-override",
    "warning",
    bad=[main_ppo("trainer.nnodes=1", "trainer.project_name=p", "trainer.nnodes=2")],
    good=[main_ppo("trainer.nnodes=2", "trainer.project_name=p")],
)
def duplicate_override(ctx):
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
    last = {}
    for o in ctx.comp.overrides:
        if o.ok and o.kind in ("set", "force_add", "add"):
            last[o.key] = o
    for o in ctx.comp.overrides:
        if o.ok and o.kind in ("set", "force_add", "add") and last.get(o.key) is not o:
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
                    f"`{o.line}` is overridden at {place(winner.word.span)} by `{winner.line}`, which wins; this value is ignored",
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
