"""VL210: a micro batch size under that role's dynamic batch size, where verl packs micro
batches by a token budget and never uses the size.

A role is any config section the launch composed with the switch and the size side by side
(`actor_rollout_ref.actor`, a recipe's copy of it, `critic`, `reward_model`...): each micro
batch size is judged against its own section's switch, never against another role's."""

from __future__ import annotations

from ..config.context import Context
from ..evidence import Evidence
from ..registry import Subject, rule

# name of the micro batch size -> (the switch beside it, the token budget that applies instead).
# The global (deprecated) sizes are normalised into the `_per_gpu` ones, so they are as dead.
ROLE_KEYS = {
    "ppo_micro_batch_size": ("use_dynamic_bsz", "ppo_max_token_len_per_gpu"),
    "ppo_micro_batch_size_per_gpu": ("use_dynamic_bsz", "ppo_max_token_len_per_gpu"),
    "log_prob_micro_batch_size": ("log_prob_use_dynamic_bsz", "log_prob_max_token_len_per_gpu"),
    "log_prob_micro_batch_size_per_gpu": ("log_prob_use_dynamic_bsz", "log_prob_max_token_len_per_gpu"),
    "forward_micro_batch_size": ("use_dynamic_bsz", "forward_max_token_len_per_gpu"),
    "forward_micro_batch_size_per_gpu": ("use_dynamic_bsz", "forward_max_token_len_per_gpu"),
    # the reward model's section (0.2-0.8): the only one with a bare micro_batch_size beside a forward budget
    "micro_batch_size": ("use_dynamic_bsz", "forward_max_token_len_per_gpu"),
    "micro_batch_size_per_gpu": ("use_dynamic_bsz", "forward_max_token_len_per_gpu"),
}
# The FSDP actor/critic/reward model (0.2-0.7) and the engine workers (0.8+) split by tokens
# when the switch is on; the legacy Megatron workers of 0.2-0.3 have no dynamic batch size at all
# and those of 0.4-0.8 still divide and assert a micro batch size, so Megatron roles are judged
# only where the engine workers run them: a tree without the legacy Megatron worker (0.9+), or a
# launch that turns the legacy workers off.
PACKS_BY_TOKENS = Evidence(("verl/workers/actor/dp_actor.py", "verl/workers/engine/utils.py"), r"use_dynamic_bsz")
FSDP = ("fsdp", "fsdp2")
MEGATRON_ENGINE_PACKS = Evidence(("verl/workers/engine/megatron/transformer_impl.py",), r"prepare_micro_batches\(")
LEGACY_MEGATRON_WORKER = Evidence(("verl/workers/megatron_workers.py",), r"class ActorRolloutRefWorker\b")
# verl 0.1's FSDP actor and critic divide each micro batch's loss by ppo_mini_batch_size //
# ppo_micro_batch_size whether or not dynamic batch size is on (0.2+ scale it by the micro batch's
# share of the mini batch instead): there the update's micro batch size still sets the loss scale.
STATIC_ACCUMULATION = Evidence(
    ("verl/workers/actor/dp_actor.py",),
    r"self\.gradient_accumulation = self\.config\.ppo_mini_batch_size // self\.config\.ppo_micro_batch_size\n",
)
LOSS_BY_SHARE = Evidence(
    ("verl/workers/actor/dp_actor.py",),
    r"(len\(data\)|response_mask\.shape\[0\]) / self\.config\.ppo_mini_batch_size",
)
# verl 0.9's V1 trainer sizes the critic's updates with ppo_infer_max_token_len_per_gpu (VL212).
V1_CRITIC_BUDGET = Evidence(
    ("verl/trainer/ppo/v1/trainer_base.py",),
    r"engine\.max_token_len_per_gpu = critic_cfg\.ppo_infer_max_token_len_per_gpu",
)


@rule(
    "VL210",
    "micro-batch-size-ignored-with-dynamic-bsz",
    "warning",
    evidence=[PACKS_BY_TOKENS],
    supersedes=("VL232",),  # a global size verl declares deprecated is, here, not used at all
    subject=Subject(tuple(f"*.{name}" for name in ROLE_KEYS)),
)
def micro_batch_under_dynamic_bsz(ctx: Context, settings):
    """A micro batch size set where that role's dynamic batch size is on: the value is dead.

    ## What it does
    For each micro batch size you set (in the script or in your own config file) — the actor's
    `ppo_micro_batch_size[_per_gpu]`, the rollout's and the reference's
    `log_prob_micro_batch_size[_per_gpu]`, the critic's `ppo_micro_batch_size[_per_gpu]` and
    `forward_micro_batch_size[_per_gpu]`, the reward model's `micro_batch_size[_per_gpu]` —
    looks at the switch in the same config section (`use_dynamic_bsz`, or
    `log_prob_use_dynamic_bsz` for log-prob computation) and reports the size when that switch
    is on, with the token budget that applies instead. Sections are found by what the
    composed config holds, so a recipe's config, a copied verl config and the 0.2-0.4 single
    file `ppo_trainer.yaml` are judged alike. Roles on the FSDP strategy are judged, and those on
    Megatron where verl's engine workers run them (verl 0.9+, which has no other Megatron worker,
    or `trainer.use_legacy_worker_impl=disable` for the actor, rollout and reference): the legacy
    Megatron workers divide the size by the data-parallel size and assert it is given, dynamic
    batch size or not.

    ## Why is this bad?
    Lowering the micro batch size is the usual answer to an out-of-memory error, and here it
    changes nothing: with dynamic batch size verl splits each mini batch into micro batches of
    at most `*_max_token_len_per_gpu` tokens (`rearrange_micro_batches`) and never splits by
    the micro batch size (the legacy FSDP worker of 0.4-0.7 still asserts that a set actor
    micro batch divides the per-GPU mini batch: VL304 says so where it does not). Not reported:
    the actor's and critic's `ppo_micro_batch_size` on a verl 0.1 tree, whose update still
    divides each micro batch's loss by `ppo_mini_batch_size // ppo_micro_batch_size`
    (`dp_actor.py` `gradient_accumulation`), so the value there is not dead.

    ## Use instead
    Lower the section's token budget (`ppo_max_token_len_per_gpu`,
    `log_prob_max_token_len_per_gpu`, `forward_max_token_len_per_gpu`), or turn dynamic batch
    size off for that role.

    ## Where in verl
    verl 0.9.1 `verl/workers/engine/utils.py:92-121` (`prepare_micro_batches`: the dynamic branch
    uses only `max_token_len_per_gpu`); 0.7.1 `verl/workers/actor/dp_actor.py:558-565`
    (`update_policy`); 0.2.0 `verl/workers/actor/dp_actor.py:176-222`, `verl/workers/critic/dp_critic.py:115-157`
    and `verl/workers/fsdp_workers.py:1114-1126` (reward model): the micro batch size is used
    only when `use_dynamic_bsz` is off.
    """
    for o in settings:
        section, _, name = o.key.rpartition(".")
        switch, budget = (f"{section}.{k}" for k in ROLE_KEYS[name])
        if (
            not ctx.has(switch)
            or not ctx.has(budget)
            or ctx.flag(switch) is not True
            or not _packs_by_tokens(ctx, section)
        ):
            continue
        if not o.value_unknown and ctx.get(o.key, None) in (None, ""):
            continue  # `=null` says "not set"; an empty value is VL112's
        if (
            name.startswith("ppo_micro_batch_size")
            and ctx.verl_has(STATIC_ACCUMULATION)
            and not ctx.verl_has(LOSS_BY_SHARE)
        ):
            continue  # verl 0.1: the update still divides its loss by mini // micro, so the value is not dead
        if (
            section == "critic"
            and ctx.flag("trainer.use_v1") is True
            and ctx.has("critic.ppo_infer_max_token_len_per_gpu")
            and ctx.verl_has(V1_CRITIC_BUDGET)
        ):
            budget = "critic.ppo_infer_max_token_len_per_gpu"
        value = "<unknown>" if o.value_unknown else o.line.split("=", 1)[1]
        limit = ctx.get(budget, None)
        shown = f"{budget}={limit}" if isinstance(limit, int) else budget
        yield ctx.diag(
            "VL210",
            f"{o.key}={value} has no effect: {switch}=True, so verl packs these micro batches by tokens, up to "
            f"{shown} per GPU, and never splits by the micro batch size",
            key=o.key,
            span=o.word.span,
            help=f"to use less memory, lower {budget}; or set {switch}=False to use the micro batch size",
            related=[switch, budget],
        )


def _packs_by_tokens(ctx: Context, section: str) -> bool:
    """The worker of the role in `section` splits by the token budget alone under dynamic batch
    size: an FSDP one, or a Megatron one that the engine workers run (`use_legacy_worker_impl=disable`
    picks them for the actor, rollout and reference only: 0.6-0.7 keep the legacy Megatron critic)."""
    strategy = _strategy(ctx, section)
    if strategy in FSDP:
        return True
    if strategy != "megatron" or not ctx.verl_has(MEGATRON_ENGINE_PACKS):
        return False
    if not ctx.verl_has(LEGACY_MEGATRON_WORKER):
        return True
    return section.startswith("actor_rollout_ref.") and ctx.get("trainer.use_legacy_worker_impl", None) == "disable"


def _strategy(ctx: Context, section: str):
    """The training strategy of the role in `section`: its own `strategy`, else the actor's
    beside it (the rollout's log-probs are computed by the actor)."""
    own = ctx.get(f"{section}.strategy", None)
    if isinstance(own, str):
        return own
    parent = section.rpartition(".")[0]
    return ctx.get(f"{parent}.actor.strategy", None) if parent else None
