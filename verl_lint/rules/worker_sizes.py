"""3xx checks of verl's engine worker (0.8+) and its first training step: what `validate_config`
lets through and the engine worker then asserts, when it starts (dynamic batch size on both
sides, the `_per_gpu` micro batches) or at the first log-prob computation (the micro batch of
each log-prob pass against the per-GPU batch after the trainer's padding). Found by comparing
with verl's own code on generated launches (tests/test_oracle.py)."""

from __future__ import annotations

from math import lcm

from ..evidence import Evidence
from ..registry import rule
from .batch_sizes import ENGINE_MICRO, actor_worker
from .roles import ref_policy, uses_critic
from .sizes import GPUS, A, R, anchor_key, gpu_count, parallel_size, report_unless_default, validating_app

REF = "actor_rollout_ref.ref"
ENGINE = ("verl/workers/engine_workers.py",)
DYNAMIC_MATCH = Evidence(
    ENGINE, r"assert self\.config\.actor\.use_dynamic_bsz == self\.config\.rollout\.log_prob_use_dynamic_bsz"
)
PER_GPU_SET = Evidence(
    ENGINE,
    r"assert self\.config\.rollout\.log_prob_micro_batch_size_per_gpu is not None\s*assert "
    r"self\.config\.actor\.ppo_micro_batch_size_per_gpu is not None",
)
# The ref's worker takes its micro batch from `ref.log_prob_micro_batch_size_per_gpu` only.
REF_PER_GPU = Evidence(
    ENGINE,
    r"self\.config\.ref\.ppo_micro_batch_size_per_gpu = "
    r"self\.config\.ref\.pop\(\s*\"log_prob_micro_batch_size_per_gpu\"",
)
# verl 0.9's trainer pads each step's batch to a multiple of the data-parallel size and the mini batches.
PADDING = Evidence(("verl/trainer/ppo/v1/trainer_base.py",), r"def _get_required_batch_multiple")


def _engine(ctx) -> bool:
    return actor_worker(ctx) == "engine" and ctx.text(f"{A}.strategy") in ("fsdp", "fsdp2")


@rule(
    "VL331",
    "dynamic-bsz-differs-between-actor-and-rollout",
    "error",
    size_check=True,
    evidence=[DYNAMIC_MATCH],
)
@validating_app
def dynamic_bsz_match(ctx):
    """The actor's `use_dynamic_bsz` differs from `rollout.log_prob_use_dynamic_bsz`.

    ## What it does
    On a tree whose engine worker asserts the two are equal, reports a launch where they are
    not (verl's config makes the rollout's follow the actor's unless the script sets it).

    ## Why is this bad?
    `validate_config` accepts it; the engine worker asserts
    `actor.use_dynamic_bsz == rollout.log_prob_use_dynamic_bsz` when it builds the actor, after
    Ray and the worker processes are up.

    ## Use instead
    Set both to the same value.

    ## Where in verl
    verl 0.9.1 `verl/workers/engine_workers.py:616` (`ActorRolloutRefWorker.init_model`). verl 0.7's
    default legacy worker has no such assert (the rule does not apply there).
    """
    if not _engine(ctx):
        return
    actor, rollout = ctx.flag(f"{A}.use_dynamic_bsz"), ctx.flag(f"{R}.log_prob_use_dynamic_bsz")
    if actor is None or rollout is None or actor == rollout:
        return
    keys = [f"{A}.use_dynamic_bsz", f"{R}.log_prob_use_dynamic_bsz"]
    yield report_unless_default(
        ctx,
        "VL331",
        f"actor.use_dynamic_bsz={actor} but rollout.log_prob_use_dynamic_bsz={rollout}: this verl's engine worker "
        "asserts they are equal when it starts",
        keys,
        anchor_key(ctx, *keys),
        f"set {R}.log_prob_use_dynamic_bsz={actor}" if ctx.user_set(keys[0]) else f"set {A}.use_dynamic_bsz={rollout}",
    )


@rule(
    "VL318",
    "micro-batch-per-gpu-required",
    "error",
    size_check=True,
    evidence=[PER_GPU_SET],
    supersedes=("VL232",),  # "deprecated" is the weaker form of "this release's workers require the other key"
)
@validating_app
def per_gpu_required(ctx):
    """Only the deprecated global micro batch is set, on a verl whose engine worker needs `_per_gpu`.

    ## What it does
    With dynamic batch size off, on a tree whose engine worker asserts the `_per_gpu` micro
    batches are set, reports `actor.ppo_micro_batch_size`, `rollout.log_prob_micro_batch_size`
    or (when the launch uses a reference policy) `ref.log_prob_micro_batch_size` set without
    its `_per_gpu` form.

    ## Why is this bad?
    `validate_config` accepts either key; verl 0.9's engine worker reads only the `_per_gpu`
    one: it asserts `rollout.log_prob_micro_batch_size_per_gpu` and
    `actor.ppo_micro_batch_size_per_gpu` are not None when it starts, and hands the
    reference's worker a micro batch of None.

    ## Use instead
    The `_per_gpu` key: the global size divided by the GPU count.

    ## Where in verl
    verl 0.9.1 `verl/workers/engine_workers.py:632-637` (actor, rollout) and `:546-550` (ref).
    The legacy worker (verl 0.7's default) divides the global key by the data-parallel size
    itself: the rule does not apply there.
    """
    if not _engine(ctx):
        return
    pairs = []
    if ctx.flag(f"{A}.use_dynamic_bsz") is False:
        pairs += [(A, "ppo_micro_batch_size"), (R, "log_prob_micro_batch_size")]
    if ref_policy(ctx) and ctx.flag(f"{REF}.log_prob_use_dynamic_bsz") is False and ctx.verl_has(REF_PER_GPU):
        pairs.append((REF, "log_prob_micro_batch_size"))
    n_gpus, _ = gpu_count(ctx)
    for section, name in pairs:
        glob, per_gpu = ctx.int(f"{section}.{name}"), ctx.get(f"{section}.{name}_per_gpu", ...)
        if glob is None or per_gpu is not None:
            continue
        hint = f", e.g. {glob // n_gpus} ({glob} / {n_gpus} GPUs)" if n_gpus and glob >= n_gpus else ""
        yield report_unless_default(
            ctx,
            "VL318",
            f"{section}.{name}={glob} is set but not {name}_per_gpu: this verl's engine worker reads only "
            f"{name}_per_gpu and fails on None when it starts",
            [f"{section}.{name}"],
            f"{section}.{name}",
            f"set {section}.{name}_per_gpu instead{hint}",
        )


@rule(
    "VL319",
    "log-prob-micro-batch-does-not-divide",
    "error",
    size_check=True,
    evidence=[ENGINE_MICRO, PADDING],
)
@validating_app
def log_prob_micro(ctx):
    """A log-prob micro batch (rollout's or reference's) does not divide each GPU's share of the step's batch.

    ## What it does
    Computes the batch of a training step as verl 0.9's trainer pads it: `train_batch_size ×
    rollout.n` rounded up to a multiple of the least common multiple of the actor's
    data-parallel size (`n_gpus / ulysses_sequence_parallel_size`), the actor's mini batch ×
    `rollout.n` and, when a critic is trained, the critic's; each data-parallel rank gets an
    equal share. With dynamic batch size off, that share must be a multiple of
    `rollout.log_prob_micro_batch_size_per_gpu` (the old log-prob pass) and, when the launch
    uses a reference policy with its dynamic batch size off, of
    `ref.log_prob_micro_batch_size_per_gpu`.

    ## Why is this bad?
    `validate_config` checks only the actor's training micro batch; the engine's
    `prepare_micro_batches` asserts "data size must be divisible by force_group_size *
    micro_batch_size_per_gpu" at the first `compute_log_prob`, after the first rollout.

    ## Use instead
    A log-prob micro batch that divides the per-GPU share (a divisor of the actor's per-GPU mini batch does).

    ## Where in verl
    verl 0.9.1 `verl/workers/engine/utils.py:125` (`prepare_micro_batches`), the padding in
    `verl/trainer/ppo/v1/trainer_base.py:1589-1620` (`_get_required_batch_multiple`, `_balance_batch`).
    """
    if not _engine(ctx) or ctx.flag(f"{A}.use_dynamic_bsz") is not False:
        return
    n_gpus, _ = gpu_count(ctx)
    sp = parallel_size(ctx, f"{A}.ulysses_sequence_parallel_size")
    bsz, n, mini = ctx.int("data.train_batch_size"), ctx.int(f"{R}.n"), ctx.int(f"{A}.ppo_mini_batch_size")
    critic = uses_critic(ctx)
    critic_mini = ctx.int("critic.ppo_mini_batch_size") if critic else 1
    warmup = ctx.int("trainer.critic_warmup")
    if (
        None in (n_gpus, sp, bsz, n, mini, critic, critic_mini, warmup)
        or min(n_gpus, sp, bsz, n, mini, critic_mini) <= 0
        or n_gpus % sp
    ):
        return
    if (bsz * n) % n_gpus:
        return  # validate_config stops the run before the first step (VL301)
    dp = n_gpus // sp
    multiple = lcm(dp, critic_mini * n) if critic else dp
    if warmup <= 1:
        multiple = lcm(multiple, mini * n)
    share = -(-bsz * n // multiple) * multiple // dp
    roles = [(R, "rollout")]
    if ref_policy(ctx) and ctx.flag(f"{REF}.log_prob_use_dynamic_bsz") is False:
        roles.append((REF, "reference"))
    for section, who in roles:
        micro = ctx.int(f"{section}.log_prob_micro_batch_size_per_gpu")
        if not micro or share % micro == 0:
            continue
        yield report_unless_default(
            ctx,
            "VL319",
            f"{section}.log_prob_micro_batch_size_per_gpu={micro} does not divide each GPU's share of a step's batch, "
            f"{share} "
            f"(train_batch_size={bsz} × rollout.n={n}, padded to a multiple of {multiple}, over {dp} data-parallel "
            "ranks): "
            f"verl asserts on it at the first {who} log-prob computation",
            [
                f"{section}.log_prob_micro_batch_size_per_gpu",
                "data.train_batch_size",
                f"{R}.n",
                f"{A}.ppo_mini_batch_size",
                *GPUS,
            ],
            f"{section}.log_prob_micro_batch_size_per_gpu",
            f"use a divisor of {share}",
        )
