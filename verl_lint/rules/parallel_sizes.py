"""3xx parallel sizes: rollout TP × DP × PP and expert parallelism against the GPUs, Megatron
parallel sizes, Ulysses sequence parallelism (see `sizes.py` for what the 3xx rules share)."""

from __future__ import annotations

from ..evidence import Evidence
from ..registry import rule
from .roles import uses_critic
from .sizes import (
    GPUS,
    MEGATRON_PARALLEL,
    VALIDATION,
    VLLM_SERVER,
    A,
    R,
    anchor_key,
    gpu_count,
    parallel_size,
    report_unless_default,
    shipped_at,
    ulysses_size,
    validating_app,
)

ROLLOUT_CONFIG = ("verl/workers/config/rollout.py",)
WORKERS = ("verl/workers/*_workers.py",)
# The rollout's world size the workers assert on: TP alone (0.2-0.5), TP × DP × PP (0.6+).
WORLD_TP = Evidence(WORKERS, r"is not divisible by infer_tp")
WORLD_ALL = Evidence(
    WORKERS,
    r"infer_tp = [\w.]+\.tensor_model_parallel_size \* [\w.]+\.data_parallel_size\s*infer_pp = "
    r"[\w.]+\.pipeline_model_parallel_size",
)
# The async rollout's replicas (0.6+) assert a replica spanning nodes fills whole nodes.
REPLICA = Evidence(
    ("verl/workers/rollout/replica.py",), r"assert self\.world_size % self\.gpus_per(?:_replica)?_node == 0"
)
# Where the tree's Megatron check sits under `if not ...actor.use_dynamic_bsz:` (0.6+).
MEGATRON_CHECK_STATIC = Evidence(
    VALIDATION,
    r"if not config\.actor_rollout_ref\.actor\.use_dynamic_bsz:\s*if config\.actor_rollout_ref\.actor\.strategy == "
    r"\"megatron\"",
)
# verl 0.2-0.4 check Ulysses SP against remove-padding only for strategy "fsdp" (0.5+: fsdp and fsdp2).
SP_FSDP_ONLY = Evidence(
    ("verl/trainer/ppo/ray_trainer.py",),
    r"actor\.strategy == [\'\"]fsdp[\'\"][\s\S]{0,600}?sequence parallelism for actor",
)


@rule(
    "VL306",
    "rollout-parallel-does-not-divide-gpus",
    "error",
    size_check=True,
    evidence=[Evidence(WORKERS, r"is not divisible by infer_")],
)
def rollout_world(ctx):
    """The rollout replica size (TP × DP × PP) does not divide the GPU count.

    ## What it does
    With `R = tensor_model_parallel_size × data_parallel_size × pipeline_model_parallel_size`
    of the rollout (`R = tensor_model_parallel_size` where the workers assert on TP alone, verl
    0.2-0.5) and `W = n_gpus_per_node × nnodes`, flags `W % R != 0`, and, where the tree's
    async rollout builds replicas (`rollout.mode=async`), `R` larger than a node but not a
    multiple of `n_gpus_per_node`.

    ## Why is this bad?
    The worker asserts "rollout world_size ... is not divisible by infer_world_size" in
    `init_model`, and `RolloutReplica` asserts on multi-node replicas — after the GPUs are allocated.

    ## Use instead
    Rollout parallel sizes whose product divides the GPU count.

    ## Where in verl
    verl 0.9.1 `verl/workers/engine_workers.py:652-661`, `verl/workers/rollout/replica.py:107-117`;
    verl 0.7.1 `verl/workers/fsdp_workers.py:697-700`, `verl/workers/engine_workers.py:552-555`.
    """
    n_gpus, gpus_text = gpu_count(ctx)
    per_node = ctx.int(GPUS[0])
    tp, dp, pp = (
        parallel_size(ctx, f"{R}.{k}")
        for k in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size")
    )
    if not ctx.verl_has(WORLD_ALL):
        if not ctx.verl_has(WORLD_TP):
            return
        dp = pp = 1  # the workers split the GPUs by TP alone
    if None in (n_gpus, tp, dp, pp) or tp * dp * pp <= 0:
        return
    size = tp * dp * pp
    inputs = [
        f"{R}.{k}" for k in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size")
    ] + list(GPUS)
    key = anchor_key(
        ctx, f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size", f"{R}.pipeline_model_parallel_size", *GPUS
    )
    if n_gpus % size:
        tp_key = f"{R}.tensor_model_parallel_size"
        where = "" if ctx.user_set(tp_key) else shipped_at(ctx, tp_key)
        default = f" (tensor_model_parallel_size={tp} is verl's default, {where})" if where else ""
        yield report_unless_default(
            ctx,
            "VL306",
            f"rollout TP×DP×PP = {tp}×{dp}×{pp} = {size} does not divide the {n_gpus} GPUs ({gpus_text}){default}",
            inputs,
            key,
            f"use rollout parallel sizes whose product divides {n_gpus}",
        )
    elif (
        per_node and size > per_node and size % per_node and ctx.verl_has(REPLICA) and ctx.text(f"{R}.mode") == "async"
    ):
        yield report_unless_default(
            ctx,
            "VL306",
            f"a rollout replica of {size} GPUs spans nodes but is not a multiple of n_gpus_per_node={per_node}",
            inputs,
            key,
            f"use a replica size that is a multiple of {per_node}, or at most {per_node}",
        )


@rule(
    "VL307",
    "rollout-ep-not-tp-times-dp",
    "error",
    size_check=True,
    evidence=[
        Evidence(
            ROLLOUT_CONFIG, r"expert_parallel_size must be equal to tensor_model_parallel_size \* data_parallel_size"
        )
    ],
)
def rollout_ep(ctx):
    """rollout.expert_parallel_size > 1 must equal tensor_model_parallel_size × data_parallel_size.

    ## What it does
    Checks EP = TP × DP for the vLLM and SGLang rollouts.

    ## Why is this bad?
    `RolloutConfig.__post_init__` asserts it; that dataclass is only built inside the
    workers, so the job dies after Ray and the GPUs are up.

    ## Use instead
    `actor_rollout_ref.rollout.expert_parallel_size=<TP×DP>`.

    ## Where in verl
    verl 0.9.1 `verl/workers/config/rollout.py:294-297`; verl 0.7.1 `verl/workers/config/rollout.py:264-266`.
    """
    if ctx.text(f"{R}.name") == "trtllm":
        return
    ep, tp, dp = (
        ctx.int(f"{R}.{k}") for k in ("expert_parallel_size", "tensor_model_parallel_size", "data_parallel_size")
    )
    if None in (ep, tp, dp) or ep <= 1 or ep == tp * dp:
        return
    yield report_unless_default(
        ctx,
        "VL307",
        f"rollout.expert_parallel_size={ep} but tensor_model_parallel_size × data_parallel_size = {tp}×{dp} = "
        f"{tp * dp}; "
        "RolloutConfig asserts they are equal",
        [f"{R}.expert_parallel_size", f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size"],
        anchor_key(ctx, f"{R}.expert_parallel_size", f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size"),
        f"set {R}.expert_parallel_size={tp * dp}, or change TP/DP so that TP × DP = {ep}",
    )


@rule(
    "VL308",
    "rollout-pipeline-parallel-unsupported",
    "error",
    size_check=True,
    evidence=[Evidence(ROLLOUT_CONFIG, r"not implemented pipeline_model_parallel_size > 1")],
)
def rollout_pp(ctx):
    """Pipeline parallelism in the rollout engine is not implemented.

    ## What it does
    Flags `rollout.pipeline_model_parallel_size > 1` for the vLLM, SGLang and TensorRT-LLM rollouts.

    ## Why is this bad?
    `RolloutConfig.__post_init__` raises NotImplementedError inside the workers.

    ## Use instead
    Tensor (and data/expert) parallelism for the rollout.

    ## Where in verl
    verl 0.9.1 `verl/workers/config/rollout.py:319-323`; verl 0.7.1 `verl/workers/config/rollout.py` (`__post_init__`).
    """
    pp = ctx.int(f"{R}.pipeline_model_parallel_size")
    name = ctx.text(f"{R}.name")
    if pp is not None and pp > 1 and name in ("vllm", "sglang", "trtllm"):
        yield report_unless_default(
            ctx,
            "VL308",
            f"rollout.pipeline_model_parallel_size={pp} is not implemented for the {name} rollout "
            "(NotImplementedError in the workers)",
            [f"{R}.pipeline_model_parallel_size", f"{R}.name"],
            f"{R}.pipeline_model_parallel_size",
            f"use {R}.pipeline_model_parallel_size=1 and raise tensor_model_parallel_size instead",
        )


@rule(
    "VL309",
    "megatron-parallel-does-not-divide-gpus",
    "error",
    size_check=True,
    evidence=[Evidence(VALIDATION, r"must be divisible by model_parallel_size")],
)
@validating_app
def megatron_parallel(ctx):
    """Megatron TP × PP × CP of the actor does not divide the GPU count.

    ## What it does
    Checks `n_gpus % (tensor × pipeline × context parallel size) == 0` for the Megatron actor
    (from verl 0.6 only with dynamic batch size off, where the tree checks it only then).

    ## Why is this bad?
    `validate_config` asserts "n_gpus (...) must be divisible by model_parallel_size (...)
    times context_parallel_size (...)"; in verl 0.7 after Ray has started.

    ## Use instead
    Megatron parallel sizes whose product divides `n_gpus_per_node × nnodes`.

    ## Where in verl
    verl 0.9.1 `verl/utils/config.py:104-114`; verl 0.7.1 `verl/utils/config.py:90-100`.
    """
    if ctx.text(f"{A}.strategy") != "megatron":
        return
    if ctx.verl_has(MEGATRON_CHECK_STATIC) and ctx.flag(f"{A}.use_dynamic_bsz") is not False:
        return  # the check runs only without dynamic batch size there
    n_gpus, gpus_text = gpu_count(ctx)
    tp, pp, cp = (parallel_size(ctx, f"{A}.megatron.{k}") for k in MEGATRON_PARALLEL)
    if None in (n_gpus, tp, pp, cp) or tp * pp * cp <= 0:
        return
    if n_gpus % (tp * pp * cp):
        keys = [f"{A}.megatron.{k}" for k in MEGATRON_PARALLEL]
        yield report_unless_default(
            ctx,
            "VL309",
            f"Megatron TP×PP×CP = {tp}×{pp}×{cp} = {tp * pp * cp} does not divide the {n_gpus} GPUs ({gpus_text})",
            [*keys, *GPUS],
            anchor_key(ctx, *keys, *GPUS),
            f"choose Megatron parallel sizes whose product divides {n_gpus}",
        )


@rule(
    "VL310",
    "ulysses-sp-requires-remove-padding",
    "error",
    size_check=True,
    # verl 0.7+ declares actor.ulysses_sequence_parallel_size deprecated (VL232) but still checks it
    evidence=[
        Evidence(("verl/workers/config/actor.py", "verl/trainer/ppo/ray_trainer.py"), r"sequence parallelism for actor")
    ],
)
def ulysses_padding(ctx):
    """Ulysses sequence parallelism needs `use_remove_padding=True`.

    ## What it does
    Flags `actor.ulysses_sequence_parallel_size > 1` with `actor_rollout_ref.model.use_remove_padding=False`
    for the FSDP actor (`strategy=fsdp`, and `fsdp2` from verl 0.5: 0.2-0.4 check only `fsdp`).

    ## Why is this bad?
    verl raises "When using sequence parallelism for actor/ref policy, you must enable
    `use_remove_padding`".

    ## Use instead
    `actor_rollout_ref.model.use_remove_padding=True`.

    ## Where in verl
    verl 0.9.1 `verl/workers/config/actor.py:331-341`; verl 0.7.1 `verl/workers/config/actor.py`
    (`FSDPActorConfig.validate`).
    """
    sp = ctx.int(f"{A}.ulysses_sequence_parallel_size")
    strategies = ("fsdp",) if ctx.verl_has(SP_FSDP_ONLY) else ("fsdp", "fsdp2")
    if ctx.text(f"{A}.strategy") not in strategies:
        return
    if sp is not None and sp > 1 and ctx.flag("actor_rollout_ref.model.use_remove_padding") is False:
        yield report_unless_default(
            ctx,
            "VL310",
            f"actor.ulysses_sequence_parallel_size={sp} requires actor_rollout_ref.model.use_remove_padding=True; "
            "verl raises ValueError",
            [f"{A}.ulysses_sequence_parallel_size", "actor_rollout_ref.model.use_remove_padding"],
            anchor_key(ctx, "actor_rollout_ref.model.use_remove_padding", f"{A}.ulysses_sequence_parallel_size"),
            "set actor_rollout_ref.model.use_remove_padding=True",
        )


@rule(
    "VL314",
    "vllm-dp-needs-gpus-per-node-multiple-of-tp",
    "error",
    size_check=True,
    # Older servers assert this only with expert parallelism (where VL307 covers TP × DP).
    evidence=[
        Evidence(
            VLLM_SERVER,
            r"data_parallel_size > 1:\s*\n\s*assert self\.gpus_per_node % self\.config\.tensor_model_parallel_size == "
            r"0",
        )
    ],
)
def vllm_dp_tp(ctx):
    """vLLM data parallelism needs the GPUs per node to hold whole TP groups.

    ## What it does
    With the vLLM rollout and `data_parallel_size > 1`, checks
    `min(n_gpus_per_node, TP×DP×PP) % TP == 0`.

    ## Why is this bad?
    `vLLMHttpServer.launch_server` asserts it when the rollout servers start.

    ## Use instead
    A tensor-parallel size that divides `n_gpus_per_node`.

    ## Where in verl
    verl 0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:384-392`.
    """
    if ctx.text(f"{R}.name") != "vllm":
        return
    per_node = ctx.int(GPUS[0])
    tp, dp, pp = (
        ctx.int(f"{R}.{k}")
        for k in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size")
    )
    if None in (per_node, tp, dp, pp) or dp <= 1 or tp <= 0:
        return
    local = min(per_node, tp * dp * pp)
    if local % tp:
        yield report_unless_default(
            ctx,
            "VL314",
            f"vLLM with data_parallel_size={dp}: min(n_gpus_per_node={per_node}, TP×DP×PP={tp * dp * pp}) = {local} "
            f"is not a multiple of tensor_model_parallel_size={tp}; the rollout server asserts at launch",
            [
                f"{R}.tensor_model_parallel_size",
                f"{R}.data_parallel_size",
                f"{R}.pipeline_model_parallel_size",
                GPUS[0],
            ],
            anchor_key(ctx, f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size", GPUS[0]),
            f"use a tensor_model_parallel_size that divides {per_node}",
        )


# The FSDP worker's Ulysses mesh: (world_size // sp, sp), built whatever the batch settings.
ULYSSES_MESH = Evidence(
    ("verl/workers/fsdp_workers.py", "verl/workers/engine/fsdp/transformer_impl.py"),
    r"mesh_shape=\((dp|dp_size), self\.ulysses_sequence_parallel_size\)",
)


@rule(
    "VL333",
    "ulysses-sp-does-not-divide-gpus",
    "error",
    size_check=True,
    evidence=[ULYSSES_MESH],
)
def ulysses_divides_gpus(ctx):
    """A Ulysses sequence-parallel size that does not divide the GPU count.

    ## What it does
    For the FSDP actor, and the FSDP critic when the launch trains one, checks that
    `n_gpus_per_node × nnodes` is a multiple of the role's `ulysses_sequence_parallel_size`,
    with or without dynamic batch size.

    ## Why is this bad?
    The worker builds a `(n_gpus // sp, sp)` device mesh, which cannot hold the GPUs:
    `init_device_mesh` fails when the worker starts. `validate_config` does not check it
    (with dynamic batch size on it skips its sequence-parallel checks altogether).

    ## Use instead
    A sequence-parallel size that divides the GPU count (usually one that divides the GPUs per node).

    ## Where in verl
    verl 0.9.1 `verl/workers/engine/fsdp/transformer_impl.py:235-250` (`_init_device_mesh`);
    verl 0.7.1 `verl/workers/fsdp_workers.py:176-183`.
    """
    n_gpus, gpus_text = gpu_count(ctx)
    if not n_gpus or n_gpus <= 0:
        return
    for section in (A, "critic"):
        if ctx.text(f"{section}.strategy") not in ("fsdp", "fsdp2") or (section == "critic" and not uses_critic(ctx)):
            continue
        key, sp = ulysses_size(ctx, section)
        if sp is None or sp <= 1 or n_gpus % sp == 0:
            continue
        if section == "critic" and not ctx.user_set(key) and ulysses_size(ctx, A)[1] == sp:
            continue  # the critic's follows the actor's: one finding
        yield report_unless_default(
            ctx,
            "VL333",
            f"{key}={sp} does not divide the {n_gpus} GPUs ({gpus_text}): the worker cannot build its "
            f"({n_gpus} // {sp}, {sp}) device mesh when it starts",
            [key, *GPUS],
            anchor_key(ctx, key, *GPUS),
            f"use a sequence-parallel size that divides {n_gpus}",
        )
