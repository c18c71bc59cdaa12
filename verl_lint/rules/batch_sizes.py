"""3xx batch sizes: the train, mini and micro batch checks of validate_config and the workers
(see `sizes.py` for what the 3xx rules share; token budgets and sequence lengths are in
`token_budgets.py`)."""

from __future__ import annotations

from math import gcd

from ..evidence import Evidence, source_text
from ..model import Severity
from ..registry import rule
from .roles import uses_critic
from .sizes import (
    DISPATCH_UNPADDED,
    GPUS,
    MEGATRON_PARALLEL,
    VALIDATION,
    A,
    R,
    anchor_key,
    gpu_count,
    parallel_size,
    report_unless_default,
    validating_app,
)

# validate_config's check of the rollout batch: against the minimal batch (0.4+, skipped under dynamic batch
# size), and against the GPU count whatever the batch sizes (0.2-0.3).
MINIMAL_BATCH = Evidence(VALIDATION, r"must be divisible by minimal possible batch size")
TOTAL_GPUS = Evidence(VALIDATION, r"must be divisible by total n_gpus")


@rule(
    "VL301",
    "train-batch-not-divisible-by-gpus",
    "error",
    size_check=True,
    evidence=[MINIMAL_BATCH, TOTAL_GPUS],
)
@validating_app
def train_batch_divisible(ctx):
    """train_batch_size × rollout.n must be divisible by the minimal batch (the GPU count for FSDP).

    ## What it does
    Computes `data.train_batch_size × actor_rollout_ref.rollout.n` and checks it divides by
    `n_gpus_per_node × nnodes` (FSDP), or by the Megatron data-parallel size ×
    `ppo_micro_batch_size_per_gpu`, when dynamic batch size is off; on verl 0.2-0.3, by the GPU
    count whatever the backend and the dynamic batch size.

    ## Why is this bad?
    `validate_config` asserts "real_train_batch_size (...) must be divisible by minimal
    possible batch size" — after Ray has started in verl 0.7, before it in 0.9 (verl 0.2-0.3:
    "... must be divisible by total n_gpus").

    ## Use instead
    A train batch size whose product with `rollout.n` is a multiple of the GPU count.

    ## Where in verl
    verl 0.9.1 `verl/utils/config.py:100-127` (`validate_config`); verl 0.7.1 `verl/utils/config.py:86-113`;
    verl 0.4.1 `verl/trainer/ppo/ray_trainer.py` (`_validate_config`); verl 0.2
    `verl/trainer/ppo/ray_trainer.py:386-391`, verl 0.3 the same at lines 299-304. Runs only on a
    tree whose source has one of the asserts.
    """
    total_only = not ctx.verl_has(MINIMAL_BATCH)  # 0.2-0.3: the GPU count, unconditionally
    if not total_only and ctx.flag(f"{A}.use_dynamic_bsz") is not False:
        return
    n_gpus, gpus_text = gpu_count(ctx)
    bsz, n = ctx.int("data.train_batch_size"), ctx.int(f"{R}.n")
    if n_gpus is None or bsz is None or n is None or n_gpus <= 0:
        return
    minimal, why = n_gpus, gpus_text
    inputs = ["data.train_batch_size", f"{R}.n", *GPUS]
    if ctx.text(f"{A}.strategy") == "megatron" and not total_only:
        tp, pp, cp = (parallel_size(ctx, f"{A}.megatron.{k}") for k in MEGATRON_PARALLEL)
        micro = ctx.int(f"{A}.ppo_micro_batch_size_per_gpu")
        if None in (tp, pp, cp, micro) or tp * pp * cp == 0 or n_gpus % (tp * pp * cp):
            return  # VL309 reports the indivisible model-parallel size
        minimal = n_gpus // (tp * pp * cp) * micro
        why = f"Megatron data-parallel size {n_gpus // (tp * pp * cp)} × ppo_micro_batch_size_per_gpu={micro}"
        inputs += [f"{A}.megatron.{k}" for k in MEGATRON_PARALLEL] + [f"{A}.ppo_micro_batch_size_per_gpu"]
    if minimal and (bsz * n) % minimal:
        yield report_unless_default(
            ctx,
            "VL301",
            f"data.train_batch_size={bsz} × rollout.n={n} = {bsz * n} is not divisible by {why} = {minimal}; "
            "verl asserts on it in validate_config",
            inputs,
            anchor_key(ctx, "data.train_batch_size", f"{R}.n", *GPUS),
            f"use a train_batch_size such that train_batch_size × {n} is a multiple of {minimal}, e.g. "
            f"{_round_to(bsz, n, minimal)}",
        )


def _round_to(bsz: int, n: int, minimal: int) -> int:
    step = minimal // gcd(n, minimal)
    return max(step, bsz // step * step)


# verl 0.1-0.4's trainer generates from the step's prompts before repeating them rollout.n times.
GENERATE_PROMPTS = Evidence(
    ("verl/trainer/ppo/ray_trainer.py",), r"gen_batch_output = self\.actor_rollout_wg\.generate_sequences\(gen_batch\)"
)


@rule(
    "VL337",
    "prompt-batch-does-not-split-over-rollout-workers",
    "error",
    size_check=True,
    evidence=[GENERATE_PROMPTS, DISPATCH_UNPADDED],
)
def prompt_batch_split(ctx):
    """data.train_batch_size does not split over the rollout workers on a verl that dispatches it unpadded.

    ## What it does
    On a verl tree whose trainer sends each step's prompts to `generate_sequences` before
    repeating them `rollout.n` times, and whose dispatch splits a batch into one equal chunk per
    worker without padding (verl 0.1-0.3), checks that `data.train_batch_size` is a multiple of
    the workers, `n_gpus_per_node × nnodes` (the actor-rollout group spans every GPU). Runs for
    verl's own trainer (`RayPPOTrainer`), not a project's. Where the tree's config validation
    already stops on `train_batch_size × rollout.n` (VL301), that finding is the one reported.

    ## Why is this bad?
    verl stops at the first training step, after the workers and the inference engine are up,
    with `AssertionError: only support equal chunk. Got size of DataProto 32 and chunk 128`
    (verl#606: 32 prompts a step on 16 nodes of 8 GPUs; TinyZero#47 and Logic-RL#13: a batch
    below the GPU count). `train_batch_size × rollout.n` dividing the GPUs, which verl 0.2-0.3
    check, does not make the prompts divide.

    ## Use instead
    A train batch size that is a multiple of the GPU count (verl 0.5+ repeats the prompts before
    generating, and 0.4+ can pad the dispatched batch).

    ## Where in verl
    verl 0.2 `verl/trainer/ppo/ray_trainer.py:854` (`self.actor_rollout_wg.generate_sequences(gen_batch)`,
    the repeat by `rollout.n` after it at line 875), `verl/workers/fsdp_workers.py:453-454`
    (`generate_sequences` is `DP_COMPUTE_PROTO`), `verl/single_controller/base/decorator.py:272-276`
    (split over `worker_group.world_size`), `verl/protocol.py:490-500` (`DataProto.chunk` asserts);
    verl 0.1 `verl/trainer/ppo/ray_trainer.py:436`, verl 0.3 line 817. verl 0.4.1 dispatches with
    `_split_args_kwargs_data_proto_with_auto_padding`; verl 0.5 repeats before generating.
    """
    if not ctx.verl_has(GENERATE_PROMPTS) or not ctx.verl_has(DISPATCH_UNPADDED):
        return
    if ctx.app.place_in_tree() is None or "RayPPOTrainer" not in (source_text(ctx.app.file) or ""):
        return  # a project's own trainer may generate otherwise
    n_gpus, gpus_text = gpu_count(ctx)
    bsz, n = ctx.int("data.train_batch_size"), ctx.int(f"{R}.n")
    if n_gpus is None or bsz is None or n_gpus <= 0 or bsz % n_gpus == 0:
        return
    if ctx.verl_has(MINIMAL_BATCH, TOTAL_GPUS) and (n is None or (bsz * n) % n_gpus):
        return  # the config validation stops first (VL301), or rollout.n is unknown
    inputs = ["data.train_batch_size", *GPUS]
    yield report_unless_default(
        ctx,
        "VL337",
        f"data.train_batch_size={bsz} is not a multiple of the {n_gpus} rollout workers ({gpus_text}): this verl "
        f"sends a step's {bsz} prompts to generate_sequences before repeating them, in one equal chunk per worker, "
        "and stops at the first step with AssertionError 'only support equal chunk'",
        inputs,
        anchor_key(ctx, *inputs),
        f"set data.train_batch_size to a multiple of {n_gpus}, e.g. {max(n_gpus, bsz // n_gpus * n_gpus)}",
    )


# Where the tree checks the train batch against each role's mini batch.
MINI_CHECKS = {
    A: (
        Evidence(("verl/workers/config/actor.py",), r"train_batch_size\s*<\s*self\.ppo_mini_batch_size"),
        Evidence(
            ("verl/trainer/ppo/ray_trainer.py",),
            r"train_batch_size\s*>=\s*config\.actor_rollout_ref\.actor\.ppo_mini_batch_size",
        ),
    ),
    "critic": (
        Evidence(("verl/workers/config/critic.py",), r"train_batch_size\s*<\s*self\.ppo_mini_batch_size"),
        Evidence(("verl/trainer/ppo/ray_trainer.py",), r"train_batch_size\s*>=\s*config\.critic\.ppo_mini_batch_size"),
    ),
}


@rule(
    "VL302",
    "train-batch-smaller-than-mini-batch",
    "error",
    size_check=True,
    # verl 0.1-0.2 has no such check: the actor splits the batch into mini batches of at most that size.
    evidence=[*MINI_CHECKS[A], *MINI_CHECKS["critic"]],
)
@validating_app
def train_batch_vs_mini(ctx):
    """data.train_batch_size is smaller than the actor's (or the critic's) ppo_mini_batch_size.

    ## What it does
    Compares the train batch with `actor.ppo_mini_batch_size` when the actor's dynamic batch
    size is off, and with `critic.ppo_mini_batch_size` when the launch trains a critic (as the
    tree decides it: `critic.enable`, else a GAE advantage estimator) whose dynamic batch size
    is off. The critic's mini batch follows the actor's unless set: one mistake, one finding.

    ## Why is this bad?
    `ActorConfig.validate` raises "train_batch_size (...) must be >= actor.ppo_mini_batch_size"
    (`CriticConfig.validate`: "... must be >= critic.ppo_mini_batch_size").

    ## Use instead
    A mini batch no larger than the train batch (usually a divisor of it).

    ## Where in verl
    verl 0.9.1 `verl/workers/config/actor.py:222-229` and `verl/workers/config/critic.py:117-129`
    (run by `verl/utils/config.py:190` when `need_critic`); verl 0.3-0.5
    `verl/trainer/ppo/ray_trainer.py` (`_validate_config`, asserts). verl 0.1-0.2 (e.g. vendored
    in TinyZero, Logic-RL) has no such check, so the rule does not apply there.
    """
    bsz = ctx.int("data.train_batch_size")
    if bsz is None:
        return
    reported = None
    for section in (A, "critic"):
        if section == "critic" and not uses_critic(ctx):
            continue
        if ctx.flag(f"{section}.use_dynamic_bsz") is not False or not ctx.verl_has(*MINI_CHECKS[section]):
            continue
        mini = ctx.int(f"{section}.ppo_mini_batch_size")
        if (
            mini is None
            or bsz >= mini
            or (mini == reported and not ctx.set_by_override(f"{section}.ppo_mini_batch_size"))
        ):
            continue  # the critic's value, when it only follows the actor's, is the actor's finding
        reported = mini
        yield report_unless_default(
            ctx,
            "VL302",
            f"data.train_batch_size={bsz} is smaller than {section}.ppo_mini_batch_size={mini}; verl stops in its "
            "config validation",
            ["data.train_batch_size", f"{section}.ppo_mini_batch_size"],
            anchor_key(ctx, "data.train_batch_size", f"{section}.ppo_mini_batch_size"),
            f"set {section}.ppo_mini_batch_size to at most {bsz}",
        )


# The worker that runs the actor update, and the checks each has on the mini batch, read per
# role: the engine worker (0.7+) asserts the mini batch splits over the data-parallel ranks and
# (0.9) each rank's share into micro batches; the legacy FSDP worker (0.2-0.7) multiplies the
# actor's mini batch by rollout.n and floor-divides it by the ranks, then asserts it is positive
# (0.3+) and, for `ppo_micro_batch_size_per_gpu`, a multiple of it (0.4+; 0.3 asserts that only
# for the deprecated global micro batch); its critic (0.4-0.7) does the same with critic.rollout_n.
ENGINE_DP_ASSERT = Evidence(
    ("verl/workers/engine_workers.py",), r"mini_batch_size % self\.engine\.get_data_parallel_size\(\) == 0"
)
ENGINE_MICRO = Evidence(
    ("verl/workers/engine/utils.py",), r"assert total_data_size % \(force_group_size \* micro_batch_size_per_gpu\) == 0"
)
FSDP_WORKERS = ("verl/workers/fsdp_workers.py",)
ACTOR_SPLIT = Evidence(
    FSDP_WORKERS,
    r"self\.config\.actor\.ppo_mini_batch_size \*= "
    r"self\.config\.rollout\.n\s*self\.config\.actor\.ppo_mini_batch_size //=",
)
ACTOR_POSITIVE = Evidence(FSDP_WORKERS, r"assert self\.config\.actor\.ppo_mini_batch_size > 0")
ACTOR_MICRO = Evidence(
    FSDP_WORKERS,
    r"if self\.config\.actor\.ppo_micro_batch_size_per_gpu is not None:\s*assert "
    r"self\.config\.actor\.ppo_mini_batch_size % self\.config\.actor\.ppo_micro_batch_size_per_gpu == 0",
)
CRITIC_SPLIT = Evidence(
    FSDP_WORKERS,
    r"self\.config\.ppo_mini_batch_size \*= self\.config\.rollout_n\s*self\.config\.ppo_mini_batch_size //=",
)
CRITIC_MICRO = Evidence(
    FSDP_WORKERS,
    r"if self\.config\.ppo_micro_batch_size_per_gpu is not None:\s*assert self\.config\.ppo_mini_batch_size % "
    r"self\.config\.ppo_micro_batch_size_per_gpu == 0"
    r"[\s\S]{0,400}?assert self\.config\.ppo_mini_batch_size // self\.config\.ppo_micro_batch_size_per_gpu > 0",
)
LEGACY_CHOICE = Evidence(("verl/trainer/main_ppo.py",), r"use_legacy_worker_impl")
LEGACY_IMPORT = Evidence(("verl/trainer/main_ppo.py",), r"verl\.workers\.fsdp_workers import")


def actor_worker(ctx) -> str | None:
    """ "engine" (verl/workers/engine_workers.py), "legacy" (verl/workers/{fsdp,megatron}_workers.py)
    or None (unknown), as the tree's main_ppo chooses it."""
    if ctx.verl_has(LEGACY_CHOICE):
        choice = ctx.get("trainer.use_legacy_worker_impl", "auto")
        return (
            {"auto": "legacy", "enable": "legacy", "disable": "engine"}.get(choice) if isinstance(choice, str) else None
        )
    if ctx.verl_has(LEGACY_IMPORT):
        return "legacy"  # verl <= 0.5: the legacy workers are the only ones
    return "engine" if ctx.verl_has(ENGINE_DP_ASSERT) else None


@rule(
    "VL304",
    "mini-batch-not-divisible-by-dp",
    "error",
    size_check=True,
    evidence=[ENGINE_DP_ASSERT, ACTOR_SPLIT, CRITIC_SPLIT],
)
def mini_batch_dp(ctx):
    """ppo_mini_batch_size × rollout.n does not split over the actor's data-parallel ranks as verl requires.

    ## What it does
    With the actor's data-parallel size `dp` (`n_gpus / ulysses_sequence_parallel_size` for FSDP,
    `n_gpus / (TP × PP × CP)` for Megatron), mirrors the check of the worker the tree's `main_ppo`
    runs (`trainer.use_legacy_worker_impl` where the tree has it): the engine worker needs
    `ppo_mini_batch_size × rollout.n` to be a multiple of `dp`; the legacy FSDP worker truncates
    the per-GPU mini batch `ppo_mini_batch_size × rollout.n // dp` and asserts only that it is
    positive (the legacy Megatron worker checks neither): a remainder there is a warning, since
    the mini batch silently shrinks. Then the per-GPU mini batch must be a multiple of
    `ppo_micro_batch_size_per_gpu` when dynamic batch size is off (the legacy worker asserts it
    on a set `ppo_micro_batch_size_per_gpu` even with dynamic batch size on). The critic the legacy FSDP
    worker trains (when the launch trains one) gets the same split with its own
    `critic.ulysses_sequence_parallel_size`, and its per-GPU mini batch must be a positive
    multiple of `critic.ppo_micro_batch_size_per_gpu` when that is set; the engine worker's critic
    needs `critic.ppo_mini_batch_size × rollout.n` to split over its own data-parallel ranks
    (`n_gpus / critic.ulysses_sequence_parallel_size`, which need not be the actor's), then the
    per-GPU share into micro batches.

    Each of these is judged only where the tree has the very statement it mirrors, for that
    role: the split of the actor's (or the critic's) mini batch, the positive-size assert, the
    micro-batch assert on `ppo_micro_batch_size_per_gpu` (verl 0.3 asserts only on the
    deprecated global `ppo_micro_batch_size`), the engine's micro-batch assert (0.9; 0.7's
    engine chunks without it). Where the tree splits the mini batch but has no micro-batch
    assert, a `_per_gpu` micro batch that does not divide the share is a warning that says this
    verl does not check it: the micro batches come out unequal, which verl's loss scaling does
    not expect (verl later added the assert after such splits gave NaN losses).

    ## Why is this bad?
    verl 0.9 asserts `mini_batch_size % dp == 0` at the first actor update — after a full
    rollout step; the legacy worker (0.4-0.7, and the default there) asserts "should be larger
    than 0 after normalization" and "should be divisible by ppo_micro_batch_size_per_gpu" when
    the workers start.

    ## Use instead
    A mini batch whose product with `rollout.n` is a multiple of the data-parallel size.

    ## Where in verl
    verl 0.9.1 `verl/workers/engine_workers.py:266-270` (`train_batch`) and
    `verl/trainer/ppo/v1/trainer_base.py` (`mini_batch_size = ppo_mini_batch_size × n`);
    verl 0.7.1 `verl/workers/fsdp_workers.py:249-268` (actor) and `:1337-1358` (critic); verl 0.4.1
    `verl/workers/fsdp_workers.py:156-166`.
    verl 0.3.0 `verl/workers/fsdp_workers.py:116-128` (the positive-size assert; the micro-batch
    one only for the global key); verl 0.2 splits without asserting and 0.1 divides before
    multiplying by `n`: nothing to mirror there.
    """
    worker = actor_worker(ctx)
    if (
        uses_critic(ctx)
        and ctx.text("critic.strategy") in ("fsdp", "fsdp2")
        and ctx.verl_has(CRITIC_SPLIT if worker == "legacy" else ENGINE_DP_ASSERT)
    ):
        yield from _critic_mini_batch(ctx, worker)
    strategy = ctx.text(f"{A}.strategy")
    if strategy not in ("fsdp", "fsdp2", "megatron"):
        return
    if worker is None or not ctx.verl_has(ENGINE_DP_ASSERT if worker == "engine" else ACTOR_SPLIT):
        return
    if strategy == "megatron":
        if worker != "engine" or ctx.get(f"{A}.megatron.dynamic_context_parallel", False) is not False:
            return  # the legacy worker only truncates; dynamic CP makes the engine's dp 1
        shard_keys = [f"{A}.megatron.{k}" for k in MEGATRON_PARALLEL]
    else:
        shard_keys = [f"{A}.ulysses_sequence_parallel_size"]
    n_gpus, _ = gpu_count(ctx)
    mini, n = ctx.int(f"{A}.ppo_mini_batch_size"), ctx.int(f"{R}.n")
    shards = [parallel_size(ctx, k) for k in shard_keys]
    if None in (n_gpus, mini, n, *shards) or n_gpus <= 0 or min(shards) <= 0:
        return
    shard = 1
    for x in shards:
        shard *= x
    if n_gpus % shard:
        return  # VL309 (Megatron) reports it; FSDP cannot build its device mesh
    dp = n_gpus // shard
    total = mini * n
    inputs = [f"{A}.ppo_mini_batch_size", f"{R}.n", *GPUS, *shard_keys]
    how = " × ".join(f"{k.rsplit('.', 1)[1]}={x}" for k, x in zip(shard_keys, shards))
    if total // dp == 0 or (worker == "engine" and total % dp):
        if worker == "legacy" and not ctx.verl_has(ACTOR_POSITIVE):
            return  # verl 0.2: no assert, the run fails later in its own way
        yield report_unless_default(
            ctx,
            "VL304",
            f"ppo_mini_batch_size={mini} × rollout.n={n} = {total} does not split over {dp} data-parallel ranks "
            f"(n_gpus={n_gpus} / {how})",
            inputs,
            anchor_key(ctx, f"{A}.ppo_mini_batch_size", f"{R}.n", *GPUS),
            f"make ppo_mini_batch_size × rollout.n a multiple of {dp}",
        )
        return
    if total % dp:  # the legacy worker: no error, but not the mini batch the script asks for
        per_gpu = total // dp
        yield report_unless_default(
            ctx,
            "VL304",
            f"ppo_mini_batch_size={mini} × rollout.n={n} = {total} does not split over {dp} data-parallel ranks "
            f"(n_gpus={n_gpus} / {how}): this verl's worker silently truncates each rank's mini batch to "
            f"{total} // {dp} = {per_gpu}, so a mini batch is {per_gpu * dp} samples, not {total}",
            inputs,
            anchor_key(ctx, f"{A}.ppo_mini_batch_size", f"{R}.n", *GPUS),
            f"make ppo_mini_batch_size × rollout.n a multiple of {dp}",
            Severity.WARNING,
        )
    micro = ctx.int(f"{A}.ppo_micro_batch_size_per_gpu")
    micro_assert = ENGINE_MICRO if worker == "engine" else ACTOR_MICRO
    checked, dynamic = ctx.verl_has(micro_assert), ctx.flag(f"{A}.use_dynamic_bsz")
    # the legacy worker asserts on a set ppo_micro_batch_size_per_gpu even with dynamic batch size on
    if micro and (total // dp) % micro and (dynamic is False or (dynamic and checked and worker == "legacy")):
        yield report_unless_default(
            ctx,
            "VL304",
            f"the per-GPU mini batch {total // dp} (= {total} / {dp}) is not divisible by "
            f"ppo_micro_batch_size_per_gpu={micro}"
            + ("" if checked else _unchecked_split(worker, total // dp, micro))
            + (": this verl's worker asserts on it even with dynamic batch size on" if dynamic else ""),
            [*inputs, f"{A}.ppo_micro_batch_size_per_gpu"],
            anchor_key(ctx, f"{A}.ppo_micro_batch_size_per_gpu", f"{A}.ppo_mini_batch_size"),
            f"use a ppo_micro_batch_size_per_gpu that divides {total // dp}",
            None if checked else Severity.WARNING,
        )


def _unchecked_split(worker: str, share: int, micro: int) -> str:
    """Why a micro batch that does not divide the per-GPU mini batch matters on a tree that does not
    assert on it (issue #34 item 7): the legacy actor (dp_actor.py) divides each micro batch's loss
    by `share // micro` gradient-accumulation steps while it runs ceil(share / micro) of them."""
    if worker != "legacy":
        return (
            ": this verl does not check it and splits each mini batch into micro batches of unequal size (verl 0.9 "
            "asserts on it)"
        )
    if share < micro:
        return (
            f": this verl does not check it; its actor divides the loss by {share} // {micro} = 0 accumulation "
            "steps (an inf/NaN loss)"
        )
    steps = -(-share // micro)
    return (
        f": this verl does not check it; its actor runs {steps} micro batches but divides their loss by {share} // "
        f"{micro} = "
        f"{share // micro} accumulation steps, so each update's gradient is too large"
    )


def _critic_mini_batch(ctx, worker):
    """VL304 for the FSDP critic: the legacy CriticWorker (0.4-0.7) normalizes
    `critic.ppo_mini_batch_size × rollout_n // (n_gpus / critic SP)` and, when
    `ppo_micro_batch_size_per_gpu` is set, asserts the result is a positive multiple of it; the
    engine worker (0.9) asserts `critic.ppo_mini_batch_size × rollout.n` splits over the critic's
    data-parallel ranks, then each share into micro batches (each judged where the tree has it)."""
    own = ("critic.ppo_mini_batch_size", "critic.ulysses_sequence_parallel_size", "critic.ppo_micro_batch_size_per_gpu")
    n_gpus, _ = gpu_count(ctx)
    sp, mini = parallel_size(ctx, "critic.ulysses_sequence_parallel_size"), ctx.int("critic.ppo_mini_batch_size")
    n = ctx.int(f"{R}.n") if worker == "engine" else ctx.int("critic.rollout_n") or ctx.int(f"{R}.n")
    micro = ctx.int("critic.ppo_micro_batch_size_per_gpu")
    if None in (n_gpus, sp, mini, n) or n_gpus <= 0 or sp <= 0 or n_gpus % sp:
        return
    same_split = sp == parallel_size(ctx, f"{A}.ulysses_sequence_parallel_size") or worker != "engine"
    if same_split and not any(ctx.set_by_override(k) or ctx.provenance(k) == "user-file" for k in own):
        return  # the critic's sizes follow the actor's (verl's critic config): the actor's finding says it
    dp, total = n_gpus // sp, mini * n
    per_gpu = total // dp
    inputs = [
        "critic.ppo_mini_batch_size",
        f"{R}.n",
        *GPUS,
        "critic.ulysses_sequence_parallel_size",
        "critic.ppo_micro_batch_size_per_gpu",
    ]
    split = (
        f"critic.ppo_mini_batch_size={mini} × rollout.n={n} = {total} over {dp} data-parallel ranks "
        f"(n_gpus={n_gpus} / ulysses_sequence_parallel_size={sp})"
    )
    if worker == "engine" and total % dp:
        yield report_unless_default(
            ctx,
            "VL304",
            f"{split} does not split evenly: verl asserts on it at the first critic update",
            inputs,
            anchor_key(ctx, "critic.ppo_mini_batch_size", f"{R}.n", *GPUS),
            f"make critic.ppo_mini_batch_size × rollout.n a multiple of {dp}",
        )
    elif (
        micro
        and (worker == "legacy" or ctx.flag("critic.use_dynamic_bsz") is False)
        and (per_gpu % micro or per_gpu // micro == 0)
        and ctx.verl_has(CRITIC_MICRO if worker == "legacy" else ENGINE_MICRO)
    ):
        yield report_unless_default(
            ctx,
            "VL304",
            f"{split} gives each rank {per_gpu}, which is not a positive multiple of "
            f"critic.ppo_micro_batch_size_per_gpu={micro}: "
            "the critic worker asserts on it",
            inputs,
            anchor_key(ctx, "critic.ppo_micro_batch_size_per_gpu", "critic.ppo_mini_batch_size", f"{R}.n"),
            f"make critic.ppo_mini_batch_size × rollout.n a multiple of {dp * micro}",
        )
    elif total % dp:
        yield report_unless_default(
            ctx,
            "VL304",
            f"{split} does not split evenly: the critic worker silently truncates each rank's mini batch to {total} "
            f"// {dp} = {per_gpu}",
            inputs,
            anchor_key(ctx, "critic.ppo_mini_batch_size", f"{R}.n", *GPUS),
            f"make critic.ppo_mini_batch_size × rollout.n a multiple of {dp}",
            Severity.WARNING,
        )


# How the tree scales the per-GPU token budget: × Ulysses SP (FSDP), × context parallel (Megatron).
