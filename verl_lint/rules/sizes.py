"""3xx: sizes and parallelism that verl asserts on only after Ray and the workers are up.

The checks live in `batch_sizes.py` (batches), `token_budgets.py` (token budgets, sequence lengths) and
`parallel_sizes.py` (tensor/pipeline/expert/data/sequence parallelism); this module holds what
they share and VL300, which says which of them a launch's unknown values kept from running.

Every check reads numbers through `ctx.int` (or `parallel_size`), which is None for anything unknown
(`$(cmd)`, a variable the script does not set, `"$@"`), so a check that lacks a number stays
silent: no default stands in for it. Each rule names the check in verl's source it mirrors
(`evidence`) and runs only on a tree that has it, so a vendored old verl is linted with its own
semantics. A finding whose inputs all come from verl's shipped defaults is reported once per
run as info (`report_unless_default`).
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

from ..config.context import MISSING, Context
from ..evidence import Evidence, source_text
from ..registry import REGISTRY, rule

A = "actor_rollout_ref.actor"
R = "actor_rollout_ref.rollout"
GPUS = ("trainer.n_gpus_per_node", "trainer.nnodes")


def validating_app(check):
    """A check of verl's config validation, run for every config that has the keys it reads
    (whatever its name) except under an entry point of verl's own (in `verl/` or `recipe/`) that
    does not validate: one whose file neither calls validate_config (0.6+) nor builds a
    RayPPOTrainer whose __init__ validates (the tree's ray_trainer.py calls _validate_config,
    0.3-0.5), such as main_generation_server, which shares ppo_trainer's config, the fully-async
    app (it requires data.train_batch_size=0 and validates on its own) or the VLA recipe's main
    (0.7). Another app on that config (a project's trainer) is taken at its config's word."""

    @functools.wraps(check)
    def run(ctx):
        if validates(ctx):
            yield from check(ctx)

    return run


def validates(ctx) -> bool:
    """The launch's app runs verl's config validation, or is a project's own taken at its word
    (`validating_app`)."""
    return ctx.app.place_in_tree() is None or _validates(ctx)


TRAINER_VALIDATES = Evidence(("verl/trainer/ppo/ray_trainer.py",), r"self\._validate_config\(\)")


def _validates(ctx) -> bool:
    """verl's own entry point of this launch runs verl's config validation."""
    text = source_text(ctx.app.file) or ""
    return "validate_config(" in text or ("RayPPOTrainer" in text and ctx.verl_has(TRAINER_VALIDATES))


# Where verl validates the config: ray_trainer.py up to 0.5, verl/utils/config.py and the config dataclasses after.
VALIDATION = ("verl/utils/config.py", "verl/trainer/ppo/ray_trainer.py")
VLLM_SERVER = ("verl/workers/rollout/vllm_rollout/*.py",)
# verl 0.1-0.3 dispatch a DP_COMPUTE_PROTO call (generate_sequences among them) by splitting its
# DataProto into one equal chunk per worker of the group, without padding: `DataProto.chunk`
# asserts "only support equal chunk" on a batch the group's world size does not divide (0.4
# pads when the DataProto asks for it, 0.5+ always).
DISPATCH_UNPADDED = Evidence(
    ("verl/single_controller/base/decorator.py",),
    r"def dispatch_dp_compute_data_proto\(worker_group, \*args, \*\*kwargs\):[^@]{0,200}?"
    r"_split_args_kwargs_data_proto\(worker_group\.world_size",
)
MEGATRON_PARALLEL = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")


def parallel_size(ctx, key):
    """A parallel size: its value, 1 when the tree's config has no such key (the dimension does
    not exist there), None when unknown or not an integer."""
    v = ctx.get(key)
    if v is MISSING:
        return 1
    return v if isinstance(v, int) and not isinstance(v, bool) else None


ULYSSES = "ulysses_sequence_parallel_size"


def ulysses_size(ctx, section: str) -> tuple[str, int | None]:
    """The role's Ulysses sequence-parallel size and the key it comes from: `<section>.SP`, or,
    where the tree has it (0.7+, which deprecates the first) and the first is 1,
    `<section>.fsdp_config.SP` (the role's config copies the first there when it is > 1)."""
    key, engine_key = f"{section}.{ULYSSES}", f"{section}.fsdp_config.{ULYSSES}"
    sp = parallel_size(ctx, key)
    if sp == 1 and ctx.has(engine_key):
        return engine_key, parallel_size(ctx, engine_key)
    return key, sp


def report_unless_default(ctx, code, message, inputs, key, help, severity=None):
    """The finding at `key`, with the other `inputs` the script set as related places; unless
    none of `inputs` is the user's choice: then a problem of verl's own defaults (info, once per run)."""
    if any(ctx.user_set(k) for k in inputs):
        return ctx.diag(code, message, key=key, help=help, severity=severity, related=inputs)
    return ctx.default_problem(code, message, key, help)


@rule(
    "VL300",
    "size-checks-skipped-for-unknown-values",
    "info",
)
def skipped_for_unknown(ctx):
    """Size checks that could not run for this launch: a value they need is only known at run time.

    ## What it does
    Runs the other 3xx checks that apply to this launch and lists those that read a value the
    script leaves to run time (an unset variable, `$(cmd)`, `${oc.env:X}` with X not set by the
    script) and so could not decide: one note per launch.

    ## Why is this bad?
    verl-lint never puts a default in place of such a value, so those checks are silent; this
    says which ones did not run, so a clean report is not read as "the sizes are fine".

    ## Use instead
    Nothing is wrong; give the value in the script (or lint the command line as it is run,
    `verl-lint check -- python3 -m ...`) to have it checked.
    """
    missed: dict[str, list[str]] = {}
    for r in REGISTRY:
        if not r.size_check or not r.runs_on(ctx):
            continue
        found, reads = r.run(ctx)  # (the same run pack.check reports)
        if reads and not found:
            missed[r.code] = reads
    if missed:
        keys = list(dict.fromkeys(k for reads in missed.values() for k in reads))
        yield ctx.diag(
            "VL300",
            f"not checked, the values are only known at run time ({', '.join(f'`{k}`' for k in keys)}): "
            f"{', '.join(missed)}",
            key=keys[0],
            help="give these values in the script to have the size checks run",
        )


def gpu_count(ctx):
    per_node, nodes = ctx.int(GPUS[0]), ctx.int(GPUS[1])
    if per_node is None or nodes is None:
        return None, ""
    return per_node * nodes, f"trainer.n_gpus_per_node={per_node} × trainer.nnodes={nodes}"


def anchor_key(ctx, *keys):
    """The key among `keys` whose override comes last on the command line, else the first
    (where the finding is reported)."""
    return ctx.set_last(*keys)


def shipped_at(ctx: Context, key: str) -> str:
    """Where verl's own YAML ships `key`'s value: `path:line` in the tree being linted (the file
    of the key's section first, e.g. rollout/rollout.yaml for a rollout key), else ''."""
    root = ctx.verl_root
    if root is None:
        return ""
    parts = key.split(".")
    config = Path(root) / "verl" / "trainer" / "config"
    files = sorted(p for p in config.rglob("*.yaml") if not p.name.startswith("_generated"))
    files.sort(
        key=lambda p: (
            p.stem not in parts,
            p.parent.name not in parts,
            p.stem != (ctx.app.config_name or "").removesuffix(".yaml"),
        )
    )
    line = re.compile(rf"^[ \t]*{re.escape(parts[-1])}:[ \t]*{re.escape(str(ctx.get(key, None)))}[ \t]*(?:#.*)?$", re.M)
    for p in files:
        m = line.search(source_text(p) or "")
        if m:
            return f"{p.relative_to(root)}:{(source_text(p) or '').count(chr(10), 0, m.start()) + 1}"
    return ""


def evidence_at(ctx: Context, ev: Evidence) -> str:
    """`path:line` of the first match of `ev` in the tree being linted, else ''."""
    root = ctx.verl_root
    if root is None:
        return ""
    rx = re.compile(ev.pattern)
    for f in ev.files:
        for p in sorted(Path(root).glob(f)):
            text = source_text(p) or ""
            m = rx.search(text)
            if m:
                return f"{p.relative_to(root)}:{text.count(chr(10), 0, m.start()) + 1}"
    return ""
