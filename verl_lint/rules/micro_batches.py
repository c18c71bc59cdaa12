"""3xx micro batch sizes: verl takes each role's micro batch as `X` (global, deprecated) or
`X_per_gpu`, exactly one of them, when that role's dynamic batch size is off (VL303: both set,
VL315: neither)."""

from __future__ import annotations

from ..evidence import Evidence, source_text
from ..registry import rule
from .roles import ref_policy, uses_critic
from .sizes import GPUS, VALIDATION, A, R, gpu_count, parallel_size, report_unless_default, validates

# verl 0.2-0.6 also check the reward model's pair (0.4-0.6: in validate_config's list of sections).
REWARD_MODEL_PAIR = Evidence(
    VALIDATION, r'"reward_model": "micro_batch_size"|config\.reward_model\.micro_batch_size_per_gpu,\s*"reward_model"\)'
)
# verl 0.6+: the actor's config dataclass checks the actor's own pair (both set, neither set) in
# `__post_init__`, wherever a worker builds it: also under an app that skips the validation.
ACTOR_CHECKS_ITS_PAIR = Evidence(
    ("verl/workers/config/actor.py",),
    r"(?s)def __post_init__\(self\):(?:(?!\n    def ).)*?You have set both 'actor\.ppo_micro_batch_size'",
)


@rule(
    "VL303",
    "micro-batch-set-twice",
    "error",
    size_check=True,
    evidence=[
        Evidence((*VALIDATION, "verl/workers/config/actor.py", "verl/workers/config/critic.py"), r"You have set both")
    ],
    supersedes=("VL232",),  # the deprecated global key set with its replacement: verl raises, not only warns
)
def micro_batch_twice(ctx):
    """Both the deprecated global micro batch size and its `_per_gpu` form are set.

    ## What it does
    Checks the pairs `rollout.log_prob_micro_batch_size{,_per_gpu}`,
    `ref.log_prob_micro_batch_size{,_per_gpu}` (where the validation checks the reference: in
    every launch on verl 0.2-0.3, with a KL loss or in-reward KL from 0.4, as the entry point
    and trainer decide it) and
    `actor.ppo_micro_batch_size{,_per_gpu}` when the actor's dynamic batch size is off, and
    `critic.ppo_micro_batch_size{,_per_gpu}` when the launch trains a critic (`critic.enable`,
    else a GAE advantage estimator) whose dynamic batch size is off. Under an app of verl's own
    that skips the config validation but starts verl's training workers (the fully-async
    trainer), the actor's pair only: the actor's config dataclass checks it when the worker
    builds it (verl 0.6+).

    ## Why is this bad?
    verl raises "You have set both '...micro_batch_size' AND '..._per_gpu'".

    ## Use instead
    Only the `_per_gpu` key.

    ## Where in verl
    verl 0.9.1 `verl/utils/config.py:131-182`, `verl/workers/config/actor.py:244-257` and
    `verl/workers/config/critic.py:103-156`; verl 0.7.1 `verl/utils/config.py:117-178`; verl 0.5.0
    `verl/trainer/ppo/ray_trainer.py:422-493`.
    """
    for section, name in micro_batch_pairs(ctx):
        glob, per_gpu = ctx.get(f"{section}.{name}", None), ctx.get(f"{section}.{name}_per_gpu", None)
        if isinstance(glob, int) and isinstance(per_gpu, int) and not isinstance(glob, bool):
            # verl's critic config makes `_per_gpu` follow the global key (`${oc.select:.ppo_micro_batch_size,null}`)
            follows = (
                not ctx.set_by_override(f"{section}.{name}_per_gpu")
                and ctx.provenance(f"{section}.{name}_per_gpu") == "script"
            )
            yield report_unless_default(
                ctx,
                "VL303",
                f"both {section}.{name}={glob} and {section}.{name}_per_gpu={per_gpu} are set"
                + (f" (verl's config makes {name}_per_gpu follow {name})" if follows else "")
                + "; verl raises ValueError",
                [f"{section}.{name}", f"{section}.{name}_per_gpu"],
                f"{section}.{name}",
                f"remove {section}.{name} (deprecated) and keep {name}_per_gpu",
            )


def micro_batch_pairs(ctx) -> list[tuple[str, str]]:
    """The (section, key) pairs verl checks as "`key` or `key_per_gpu`, one of them" for this
    launch: the rollout's and the actor's when the actor's dynamic batch size is off (and the
    reference's when the validation is told a reference policy is used: always in verl
    0.2-0.3, with a KL loss or in-reward KL from 0.4, as the entry point decides it, see
    `config/roles.py`), the critic's when one is trained and the reward model's when it is
    enabled, each when its own dynamic batch size is off. Worked out once per launch (two rules ask)."""
    return ctx.once(_micro_batch_pairs)


def _micro_batch_pairs(ctx) -> list[tuple[str, str]]:
    if not validates(ctx):
        # An app of verl's own that skips the validation (the fully-async trainer) and starts
        # verl's training workers: the actor's worker builds its config dataclass all the same.
        trains = "role_worker_mapping" in (source_text(ctx.app.file) or "")
        actor_off = ctx.flag(f"{A}.use_dynamic_bsz") is False
        return [(A, "ppo_micro_batch_size")] if trains and actor_off and ctx.verl_has(ACTOR_CHECKS_ITS_PAIR) else []
    pairs = []
    if ctx.flag(f"{A}.use_dynamic_bsz") is False:
        pairs += [(R, "log_prob_micro_batch_size"), (A, "ppo_micro_batch_size")]
        if ref_policy(ctx):
            pairs.append(("actor_rollout_ref.ref", "log_prob_micro_batch_size"))
    if uses_critic(ctx) and ctx.flag("critic.use_dynamic_bsz") is False:
        pairs.append(("critic", "ppo_micro_batch_size"))
    if (
        ctx.flag("reward_model.enable")
        and ctx.flag("reward_model.use_dynamic_bsz") is False
        and ctx.verl_has(REWARD_MODEL_PAIR)
    ):
        pairs.append(("reward_model", "micro_batch_size"))
    return pairs


@rule(
    "VL315",
    "micro-batch-unset",
    "error",
    size_check=True,
    evidence=[
        Evidence(
            (*VALIDATION, "verl/workers/config/actor.py", "verl/workers/config/critic.py"),
            r"Please set at least one of",
        )
    ],
)
def micro_batch_unset(ctx):
    """Neither the micro batch size nor its `_per_gpu` form is set, with dynamic batch size off.

    ## What it does
    Checks the same pairs as VL303 (`actor.ppo_micro_batch_size{,_per_gpu}`,
    `rollout.log_prob_micro_batch_size{,_per_gpu}`, the reference's where the validation checks
    it, the critic's when one is trained, the reward model's when enabled on verl 0.2-0.6),
    each when its dynamic batch size is off, and reports a pair the composed config leaves both
    null in a launch that sets micro batch sizes: one it forgot (`use_kl_loss=True` brings in
    the reference's, a GAE estimator, verl's default, the critic's). A launch that sets none is
    not judged, nor one that passes the caller's arguments on (`"$@"`): it may get them there.
    (The deprecated global key set alone, which the engine workers of 0.8+ never read, is VL318's.)

    ## Why is this bad?
    verl's config ships both keys null. `validate_config` (or the role's config dataclass)
    raises "[actor_rollout_ref.rollout] Please set at least one of
    'actor_rollout_ref.rollout.log_prob_micro_batch_size' or '..._per_gpu'" once the trainer
    starts, after Ray is up.

    ## Use instead
    Set the `_per_gpu` key, or turn on `use_dynamic_bsz` (then the token budget decides).

    ## Where in verl
    verl 0.9.1 `verl/utils/config.py:131-182` (ref, rollout), `verl/workers/config/actor.py:196-209`
    (actor), `verl/workers/config/critic.py:103-156` (critic); verl 0.5.0
    `verl/trainer/ppo/ray_trainer.py:422-493` (every role).
    """
    pairs = micro_batch_pairs(ctx)
    if ctx.launch.caller_args is not None or not any(
        ctx.user_set(f"{s}.{n}{gpu}") for s, n in pairs for gpu in ("", "_per_gpu")
    ):
        return
    for section, name in pairs:
        # None: null in the composed config; an absent key or an unknown value is not None
        glob, per_gpu = ctx.get(f"{section}.{name}", ...), ctx.get(f"{section}.{name}_per_gpu", ...)
        if glob is None and per_gpu is None:
            yield ctx.diag(
                "VL315",
                f"neither {section}.{name} nor {name}_per_gpu is set and dynamic batch size is off: verl raises "
                f'ValueError "[{section}] Please set at least one of ..." when the trainer starts',
                key=f"{section}.{name}_per_gpu",
                span=ctx.launch.entry_span,
                help=f"set {section}.{name}_per_gpu=..., or use_dynamic_bsz=True",
            )


# validate_config's checks of the deprecated global micro batch (0.3-0.5: ray_trainer asserts; 0.6+: the config
# dataclasses).
GLOBAL_MICRO = Evidence(
    (*VALIDATION, "verl/workers/config/actor.py", "verl/workers/config/critic.py"),
    r"ppo_micro_batch_size \* sp_size (<|>=) n_gpus",
)


# 0.2-0.5 check it with bare asserts in ray_trainer's validate_config (an AssertionError without a
# message); 0.6+ raise ValueError in the config dataclasses' validation.
ASSERTED_MICRO = Evidence(VALIDATION, r"assert config\.[\w.]+\.ppo_micro_batch_size \* sp_size >= n_gpus")


# verl 0.1 checks neither: its FSDP workers floor-divide the global micro batch by the world size
# and DataParallelPPOActor / DataParallelPPOCritic then take `ppo_mini_batch_size % ppo_micro_batch_size`.
FLOORED_MICRO = Evidence(
    ("verl/trainer/ppo/workers/fsdp_workers.py",),
    r"self\.config\.ppo_micro_batch_size //= torch\.distributed\.get_world_size\(\)",
)
MODULO_MICRO = Evidence(
    ("verl/trainer/ppo/critic/dp_critic.py", "verl/trainer/ppo/actor/dp_actor.py"),
    r"assert self\.config\.ppo_mini_batch_size % self\.config\.ppo_micro_batch_size == 0",
)


@rule(
    "VL332",
    "global-micro-batch-too-small",
    "error",
    size_check=True,
    supersedes=("VL232",),  # "deprecated" is the weaker form of "verl stops on this value"
    evidence=[GLOBAL_MICRO, FLOORED_MICRO],
)
def global_micro(ctx):
    """The deprecated global `ppo_micro_batch_size` is below the GPUs it splits over, or does not divide the mini batch.

    ## What it does
    For the actor (dynamic batch size off) and the critic (when one is trained, its dynamic
    batch size off) whose global `ppo_micro_batch_size` is set, checks that it divides
    `ppo_mini_batch_size` and that `ppo_micro_batch_size × ulysses_sequence_parallel_size` is
    at least the GPU count (`n_gpus_per_node × nnodes`).

    ## Why is this bad?
    The global micro batch is split over the data-parallel ranks; `validate_config` (the
    actor's and critic's config `validate`) raises "ppo_micro_batch_size (...) *
    ulysses_sequence_parallel_size (...) must be >= n_gpus" or "ppo_mini_batch_size (...) must be
    divisible by ppo_micro_batch_size (...)" (a ValueError; verl 0.2-0.5 check both with bare
    asserts in ray_trainer's `validate_config`, an AssertionError with no message).

    ## Use instead
    `ppo_micro_batch_size_per_gpu` (the global key is deprecated).

    On verl 0.1, which validates neither, a global micro batch below the GPU count of an FSDP
    actor or critic: its worker floor-divides the micro batch by the world size to 0, and the
    first update raises `ZeroDivisionError` (RAGEN#22, on its vendored verl).

    ## Where in verl
    verl 0.9.1 `verl/workers/config/actor.py:231-242`, `verl/workers/config/critic.py:228`; verl
    0.7.1 `verl/workers/config/actor.py:223-231`; verl 0.5.0 `verl/trainer/ppo/ray_trainer.py:500-526`;
    verl 0.1 `verl/trainer/ppo/workers/fsdp_workers.py:85` (actor) and `:453` (critic), then
    `verl/trainer/ppo/actor/dp_actor.py:116` and `verl/trainer/ppo/critic/dp_critic.py:44`.
    """
    if ctx.verl_has(GLOBAL_MICRO):
        if validates(ctx):
            yield from _validated_global_micro(ctx)
    elif ctx.verl_has(FLOORED_MICRO) and ctx.verl_has(MODULO_MICRO):
        yield from _floored_global_micro(ctx)


def _floored_global_micro(ctx):
    """verl 0.1: a global micro batch its FSDP worker floors to 0."""
    n_gpus, gpus_text = gpu_count(ctx)
    if n_gpus is None:
        return
    for section in (A, "critic"):
        if section == "critic" and not uses_critic(ctx) or ctx.text(f"{section}.strategy") != "fsdp":
            continue
        if ctx.flag(f"{section}.use_dynamic_bsz") is not False and ctx.has(f"{section}.use_dynamic_bsz"):
            continue  # a vendored tree with dynamic batch size: on, or not known to be off
        micro = ctx.int(f"{section}.ppo_micro_batch_size")
        if micro is None or micro <= 0 or micro >= n_gpus:
            continue
        key = f"{section}.ppo_micro_batch_size"
        yield report_unless_default(
            ctx,
            "VL332",
            f"{key}={micro} is less than the {n_gpus} GPUs ({gpus_text}) it is split over: this verl does not "
            f"check it, its FSDP worker floor-divides it to {micro} // {n_gpus} = 0 per GPU, and the first update "
            "raises ZeroDivisionError at ppo_mini_batch_size % ppo_micro_batch_size",
            [key, *GPUS],
            key,
            f"set {key} to a multiple of {n_gpus}",
        )


def _validated_global_micro(ctx):
    n_gpus, gpus_text = gpu_count(ctx)
    raises = (
        "fails a bare assert (AssertionError, no message) in validate_config"
        if ctx.verl_has(ASSERTED_MICRO)
        else "raises ValueError in its config validation"
    )
    for section in (A, "critic"):
        if ctx.flag(f"{section}.use_dynamic_bsz") is not False or (section == "critic" and not uses_critic(ctx)):
            continue
        micro, mini = ctx.int(f"{section}.ppo_micro_batch_size"), ctx.int(f"{section}.ppo_mini_batch_size")
        sp = parallel_size(ctx, f"{section}.ulysses_sequence_parallel_size")
        if micro is None or micro <= 0:
            continue
        keys = [f"{section}.ppo_micro_batch_size", f"{section}.ppo_mini_batch_size"]
        if mini is not None and mini % micro:
            yield report_unless_default(
                ctx,
                "VL332",
                f"{section}.ppo_mini_batch_size={mini} is not divisible by ppo_micro_batch_size={micro}; verl {raises}",
                keys,
                keys[0],
                f"use a {section}.ppo_micro_batch_size_per_gpu instead, a divisor of each GPU's share of {mini}",
            )
        elif n_gpus is not None and sp is not None and micro * sp < n_gpus:
            yield report_unless_default(
                ctx,
                "VL332",
                f"{section}.ppo_micro_batch_size={micro} × ulysses_sequence_parallel_size={sp} is less than the "
                f"{n_gpus} GPUs ({gpus_text}) it is split over; verl {raises}",
                [keys[0], f"{section}.ulysses_sequence_parallel_size", *GPUS],
                keys[0],
                f"set {section}.ppo_micro_batch_size_per_gpu instead (the global key is deprecated)",
            )
