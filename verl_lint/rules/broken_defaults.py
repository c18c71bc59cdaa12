"""3xx: a default of verl's config that the user's other values break. The finding is at the
value the user set that breaks it, and names the default with the line of verl's YAML file that
ships it, read from the tree being linted."""

from __future__ import annotations

import re

from ..config.context import Context
from ..evidence import Evidence, source_text
from ..registry import rule
from .sizes import (
    DISPATCH_UNPADDED,
    VLLM_SERVER,
    R,
    anchor_key,
    evidence_at,
    report_unless_default,
    shipped_at,
)

# verl 0.3-0.6's synchronous vLLM rollout (vllm_rollout_spmd.py, and 0.3-0.5's vllm_rollout.py)
# refuses a batched-token budget below the model length while chunked prefill is on.
CHUNKED_PREFILL_CHECK = Evidence(
    ("verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py", "verl/workers/rollout/vllm_rollout/vllm_rollout.py"),
    r"Enable chunked prefill, max_num_batched_tokens is smaller than max_model_len",
)
# Where verl takes the model length from the data's lengths when rollout.max_model_len is null
# (0.3-0.6; 0.2 always, having no such key; from 0.7 it is the model's max_position_embeddings,
# which the config does not hold).
MODEL_LEN_FROM_DATA = Evidence(
    VLLM_SERVER,
    r"config\.max_model_len or config\.prompt_length \+ config\.response_length|config\.max_model_len if "
    r"config\.max_model_len else config\.prompt_length|max_model_len=config\.prompt_length \+ config\.response_length",
)


# An entry point that starts standalone rollout servers (0.6's main_generation_server).
STANDALONE_SERVER = "init_standalone("


def model_len(ctx: Context) -> tuple[int | None, str]:
    """The model length verl gives vLLM, and how it is made: `rollout.max_model_len`, else (where
    the tree does so) the rollout's prompt_length + response_length; None when not known."""
    own = ctx.get(f"{R}.max_model_len", None)
    if isinstance(own, int) and not isinstance(own, bool):
        return own, f"max_model_len={own}"
    if own is not None or not ctx.verl_has(MODEL_LEN_FROM_DATA):
        return None, ""
    prompt, response = ctx.int(f"{R}.prompt_length"), ctx.int(f"{R}.response_length")
    if prompt is None or response is None:
        return None, ""
    return (
        prompt + response,
        f"max_model_len ({'null: ' if ctx.has(f'{R}.max_model_len') else ''}the rollout's prompt_length + "
        f"response_length = {prompt} + {response} = {prompt + response})",
    )


@rule(
    "VL317",
    "batched-tokens-below-model-len-with-chunked-prefill",
    "error",
    size_check=True,
    evidence=[CHUNKED_PREFILL_CHECK],
    verl=">=0.3,<0.7",
)
def batched_tokens_chunked(ctx: Context):
    """The synchronous vLLM rollout's batched-token budget is below the model length.

    ## What it does
    On a verl tree whose synchronous vLLM rollout has the check (0.3-0.6), with the vLLM
    rollout in `sync` mode (not the standalone servers of `main_generation_server`) and
    `enable_chunked_prefill` on (verl's default), compares
    `rollout.max_num_batched_tokens` (verl's default: 8192) with the model length verl gives
    vLLM: `rollout.max_model_len`, or, when that is null (the default),
    `max_prompt_length + max_response_length`. The finding is at the value you set that
    makes the budget too small — usually a longer `data.max_response_length` — and names the
    default and the line of verl's YAML that ships it.

    ## Why is this bad?
    verl raises `ValueError: Enable chunked prefill, max_num_batched_tokens is smaller than
    max_model_len, please increase max_num_batched_tokens or disable chunked prefill` when
    the rollout worker builds its engine, after Ray and the workers are up.

    ## Use instead
    `actor_rollout_ref.rollout.max_num_batched_tokens` at least the model length.

    ## Where in verl
    verl 0.5.0 `verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:138-144`
    (`vLLMRollout.__init__`), `verl/trainer/config/rollout/rollout.yaml:44` (the default);
    0.4.1 `vllm_rollout_spmd.py:126-131`; 0.6.1 `vllm_rollout_spmd.py:195-200`.
    """
    if ctx.text(f"{R}.name") not in (None, "vllm") or ctx.text(f"{R}.mode") not in (None, "sync"):
        return
    if STANDALONE_SERVER in (source_text(ctx.app.file) or ""):
        return  # main_generation_server starts vLLM's HTTP server (no such check), not the synchronous rollout
    if ctx.flag(f"{R}.enable_chunked_prefill") is not True:
        return
    tokens = ctx.int(f"{R}.max_num_batched_tokens")
    length, how = model_len(ctx)
    if tokens is None or length is None or tokens >= length:
        return
    key = f"{R}.max_num_batched_tokens"
    if ctx.user_set(key):
        budget = f"{key}={tokens}"
    else:
        where = shipped_at(ctx, key)
        budget = f"{key} is left at verl's default {tokens}" + (f" ({where})" if where else "")
    check = evidence_at(ctx, CHUNKED_PREFILL_CHECK)
    inputs = [
        key,
        f"{R}.max_model_len",
        "data.max_prompt_length",
        "data.max_response_length",
        f"{R}.prompt_length",
        f"{R}.response_length",
        f"{R}.enable_chunked_prefill",
    ]
    yield report_unless_default(
        ctx,
        "VL317",
        f"{budget}, below the {how}: with chunked prefill on, verl's vLLM rollout raises ValueError "
        f'("max_num_batched_tokens is smaller than max_model_len"{", " + check if check else ""}) when the worker '
        "starts",
        inputs,
        anchor_key(ctx, *inputs),
        f"set {key}={length} (or more)",
    )


# verl 0.1-0.2's generation app pads a batch to the rollout's data-parallel size with copies of
# its own first rows (`data[:dummy_data_size]`), then asserts the padded batch divides; 0.3 repeats
# the rows (`data.repeat`) and 0.4+ pads with `pad_dataproto_to_divisor`: no failure there.
GENERATION_PAD = Evidence(
    ("verl/trainer/main_generation.py",), r"dp_size = wg\.world_size // config\.rollout\.tensor_model_parallel_size"
)
GENERATION_ASSERT = r"assert batch_size % dp_size == 0"


def rows(padded: int, size: int) -> str:
    """How the generation app sizes a batch of `size` rows before dispatching it."""
    if padded == size:
        return "the generation app sends it unpadded"
    return f"the generation app pads it to {padded} rows"


@rule(
    "VL336",
    "generation-batch-below-data-parallel-size",
    "error",
    evidence=[GENERATION_PAD],
)
def generation_batch(ctx: Context):
    """The generation app's batch does not split over its rollout workers.

    ## What it does
    For verl's generation app (`verl.trainer.main_generation`) on a tree whose app pads a batch
    with copies of its own rows (verl 0.1-0.2), computes the rollout's data-parallel size
    `dp = trainer.n_gpus_per_node x trainer.nnodes / rollout.tensor_model_parallel_size` and
    flags `data.batch_size` (b) when `2 x b < dp`; otherwise, on a tree whose dispatch splits a
    batch over every worker without padding, pads b to the next multiple of dp as the app does
    and flags it when that does not divide over all `n_gpus_per_node x nnodes` workers (with a
    rollout TP above 1). The finding is at the value you set that breaks it: a small
    `data.batch_size`, or more GPUs with `data.batch_size` left at verl's default (128, with the
    line of verl's YAML that ships it).

    ## Why is this bad?
    The app pads a batch that does not divide over dp with its first `dp - b % dp` rows; a batch
    of b < dp / 2 rows has fewer rows than that, so the padded batch (2 x b rows) still does not
    divide, and verl raises `AssertionError: batch_size ... is not divisible by dp_size ...`
    before generating anything, after the workers are up. The padded batch then goes to
    `generate_sequences`, which verl dispatches to every worker of the group (dp x TP of them),
    one equal chunk each: a padded batch that is a multiple of dp but not of dp x TP stops with
    `AssertionError: only support equal chunk` (verl#473: `data.batch_size=1` on 2 GPUs with
    TP 2). verl 0.3 pads to the group's world size instead (`dispatch_dp_size = wg.world_size`).

    ## Use instead
    `data.batch_size` a multiple of `n_gpus_per_node x nnodes`, or fewer GPUs.

    ## Where in verl
    verl 0.2 `verl/trainer/main_generation.py:70-102` (`dp_size = wg.world_size //
    config.rollout.tensor_model_parallel_size`, the padding with `data[:dummy_data_size]`, the
    assert), verl 0.1 the same at lines 71-103, `verl/trainer/config/generation.yaml` (the
    default `batch_size: 128`); the dispatch: verl 0.2 `verl/single_controller/base/decorator.py:272-276`
    (`dispatch_dp_compute_data_proto` splits over `worker_group.world_size`), `verl/protocol.py:490-500`
    (`DataProto.chunk`'s assert), `verl/workers/fsdp_workers.py:453-454` (`generate_sequences` is
    `DP_COMPUTE_PROTO`); verl 0.3 pads to `wg.world_size` with `data.repeat`
    (`verl/trainer/main_generation.py:84-119`) and 0.4+ with `pad_dataproto_to_divisor`, which
    never fail.
    """
    if GENERATION_ASSERT not in (source_text(ctx.app.file) or "") or not re.search(
        GENERATION_PAD.pattern, source_text(ctx.app.file) or ""
    ):
        return  # another app, or one that pads differently
    size = ctx.int("data.batch_size")
    gpus, nodes, tp = (
        ctx.int("trainer.n_gpus_per_node"),
        ctx.int("trainer.nnodes"),
        ctx.int("rollout.tensor_model_parallel_size"),
    )
    if None in (size, gpus, nodes, tp) or tp < 1 or size < 1:
        return
    world = gpus * nodes
    if world % tp:
        return  # the rollout's TP does not divide the GPUs: VL306
    dp = world // tp
    key = "data.batch_size"
    if ctx.user_set(key):
        batch = f"{key}={size}"
    else:
        where = shipped_at(ctx, key)
        batch = f"{key} is left at verl's default {size}" + (f" ({where})" if where else "")
    inputs = [key, "trainer.n_gpus_per_node", "trainer.nnodes", "rollout.tensor_model_parallel_size"]
    sizes = f"n_gpus_per_node={gpus} x nnodes={nodes} / tensor_model_parallel_size={tp}"
    if 2 * size < dp:
        yield report_unless_default(
            ctx,
            "VL336",
            f"{batch}, less than half the rollout's data-parallel size {dp} ({sizes}): the generation app pads a "
            f"batch with its own first rows, {size} are too few to reach a multiple of {dp}, and verl asserts "
            f"batch_size % dp_size == 0 ({evidence_at(ctx, GENERATION_PAD) or 'main_generation.py'})",
            inputs,
            anchor_key(ctx, *inputs),
            f"set {key}={world} (or a multiple of it), or use fewer GPUs",
        )
        return
    padded = size + (-size) % dp
    if padded % world == 0 or not ctx.verl_has(DISPATCH_UNPADDED):
        return
    yield report_unless_default(
        ctx,
        "VL336",
        f"{batch}: {rows(padded, size)}, a multiple of the rollout's data-parallel size {dp} ({sizes}), but "
        f"generate_sequences goes to all {world} workers in equal chunks, which {padded} rows do not make: verl "
        "raises AssertionError 'only support equal chunk' "
        f"({evidence_at(ctx, DISPATCH_UNPADDED) or 'decorator.py'})",
        inputs,
        anchor_key(ctx, *inputs),
        f"set {key}={world} (or a multiple of it), or use fewer GPUs",
    )
