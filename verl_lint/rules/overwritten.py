"""2xx, derived from code: keys whose value the config dataclass's `__post_init__` replaces.

The facts come from the tree being linted (`config/classes.py`, `Overwrite`): an assignment
`self.field = ...` at the top of `__post_init__`, or under a top-level `if` that tests other
fields. Nothing is curated here.
"""

from __future__ import annotations

import ast

from ..config import classes as config_classes
from ..config.context import Context
from ..model import Unknown
from ..registry import Subject, rule
from .batch_sizes import actor_worker


@rule(
    "VL238",
    "key-overwritten-by-post-init",
    "warning",
    subject=Subject(),
)
def key_overwritten(ctx: Context, settings):
    """A key you set that the config dataclass built from its section replaces when it is created.

    ## What it does
    Reads the `__post_init__` of the dataclass each config section becomes (its `_target_`, in
    the verl tree being linted) for assignments to a field that do not read the field itself:
    `self.local_path = copy_to_local(self.path)` always, or
    `if self.tensor_model_parallel_size == 1: self.sequence_parallel = False` when the test holds
    for the composed config. A key you set whose value is replaced that way is reported at the
    override, with the assignment and the values its test read. It stays silent when the value
    verl assigns equals yours, when your value or a value the test reads is only known at run
    time, and for a deprecated alias (VL232 says that one). It runs only where the tree's
    `main_ppo` starts the engine workers (verl 0.8 and later by default), which build each section
    into its dataclass before reading it; the legacy workers read some sections from the raw
    config first (0.7.1 `megatron_workers.py` builds the model from `config.actor.megatron`).

    ## Why is this bad?
    The run starts, and the dataclass silently uses another value (verl may log a warning in the
    middle of the workers' start-up): the setting does nothing, and the script says otherwise.

    ## Use instead
    Remove the override, or change what the test reads (e.g. a tensor-parallel size above 1
    for sequence parallelism).

    ## Where in verl
    Derived from the tree itself: e.g. 0.9.1 `verl/workers/config/engine.py:234-236`
    (`McoreEngineConfig`: sequence parallelism off when the tensor-parallel size is 1), read by
    `verl/workers/engine/megatron/transformer_impl.py:361` from the dataclass.
    """
    root = str(ctx.app.verl.root) if ctx.app.verl else ""
    if not root or actor_worker(ctx) != "engine":
        return
    for o in settings:
        if o.value_unknown is not None or not ctx.user_set(o.key):
            continue
        path, _, field = o.key.rpartition(".")
        cls = config_classes.of_node(root, path, ctx.get(f"{path}._target_", None) if path else None)
        over = cls.overwrites.get(field) if cls is not None else None
        if over is None or field in {d.new for d in cls.deprecated.values()} or ctx.comp.last_setter(o.key) is not o:
            continue

        def lookup(name: str):  # used within this iteration only
            v = ctx.get(f"{path}.{name}")  # noqa: B023
            return config_classes.UNKNOWN_VALUE if isinstance(v, Unknown) else v

        yours = ctx.get(o.key)
        if isinstance(yours, Unknown) or not over.holds(lookup):
            continue
        if isinstance(over.value, ast.Constant) and over.value.value == yours:
            continue
        tested = (
            sorted({n.attr for n in ast.walk(over.condition) if isinstance(n, ast.Attribute)} & set(cls.fields))
            if over.condition is not None
            else []
        )
        when = ""
        if over.condition is not None:
            here = ", ".join(f"{name}={lookup(name)!r}" for name in tested)
            when = f" when `{ast.unparse(over.condition).replace('self.', '')}` (here {here})"
        yield ctx.diag(
            "VL238",
            f"`{o.key}={yours!r}` has no effect: {cls.name}.__post_init__ ({over.where}) sets "
            f"{field} = `{ast.unparse(over.value).replace('self.', '')}`{when}",
            key=o.key,
            span=o.word.span,
            help="remove the override" + (f", or change {', '.join(tested)}" if tested else ""),
            related=[f"{path}.{name}" for name in tested],
        )
