"""3xx token budgets and sequence lengths: the per-GPU token budget of dynamic batching, the vLLM
rollout's token limits, and validation sampling (see `sizes.py` for what the 3xx rules share;
the batch sizes are in `batch_sizes.py`)."""

from __future__ import annotations

from ..evidence import Evidence
from ..registry import rule
from .broken_defaults import model_len
from .model_sizes import CONTEXT_RAISE, known
from .sizes import VALIDATION, VLLM_SERVER, A, R, anchor_key, parallel_size, report_unless_default, validating_app

BUDGET_SCALE = {
    "fsdp": (
        Evidence(("verl/workers/actor/dp_actor.py",), r"max_token_len\w*\s*\*\s*self\.ulysses_sequence_parallel_size"),
        Evidence(("verl/workers/engine/utils.py",), r"max_token_len_per_gpu\s*\*\s*sp_size"),
    ),
    "megatron": (
        Evidence(
            ("verl/workers/actor/megatron_actor.py",),
            r"max_token_len\w*\s*\*\s*self\.config\.megatron\.context_parallel_size",
        ),
        Evidence(("verl/workers/engine/megatron/*.py",), r"sp_size\s*=\s*self\.engine_config\.context_parallel_size"),
    ),
}


@rule(
    "VL305",
    "max-token-len-below-sequence-length",
    "error",
    size_check=True,
    evidence=[Evidence(("verl/utils/seqlen_balancing.py",), r"assert max_token_len >= max_seq_len")],
)
def max_token_len(ctx):
    """With dynamic batch size, a token budget per GPU below the longest possible sequence.

    ## What it does
    Checks `ppo_max_token_len_per_gpu` (actor) and `log_prob_max_token_len_per_gpu` (rollout),
    times the sequence-sharding size the tree multiplies them by (`ulysses_sequence_parallel_size`
    for FSDP, `megatron.context_parallel_size` for Megatron), against
    `data.max_prompt_length + data.max_response_length` when dynamic batch size is on.

    ## Why is this bad?
    `rearrange_micro_batches` asserts "max_token_len must be greater than the sequence
    length" as soon as one long sample arrives — mid-training.

    ## Use instead
    A per-GPU token budget of at least prompt + response length (usually 2–3× it).

    ## Where in verl
    verl 0.9.1 `verl/utils/seqlen_balancing.py:384-386` with `verl/workers/engine/utils.py:111`
    (`max_token_len_per_gpu * sp_size`; sp_size is the context parallel size for Megatron,
    `engine/megatron/transformer_impl.py:836`); verl 0.7.1 `verl/utils/seqlen_balancing.py:382-383`,
    `verl/workers/actor/dp_actor.py:559`, `verl/workers/actor/megatron_actor.py:796`.
    """
    prompt, response = ctx.int("data.max_prompt_length"), ctx.int("data.max_response_length")
    strategy = ctx.text(f"{A}.strategy")
    family = "megatron" if strategy == "megatron" else "fsdp" if strategy in ("fsdp", "fsdp2") else None
    if prompt is None or response is None or family is None or not ctx.verl_has(*BUDGET_SCALE[family]):
        return
    scale_key = f"{A}.megatron.context_parallel_size" if family == "megatron" else f"{A}.ulysses_sequence_parallel_size"
    scale = parallel_size(ctx, scale_key)
    if scale is None or scale <= 0:
        return
    scale_name = scale_key.rsplit(".", 1)[1]
    seq = prompt + response
    checks = [(A, "use_dynamic_bsz", "ppo_max_token_len_per_gpu")]
    checks += [(R, "log_prob_use_dynamic_bsz", "log_prob_max_token_len_per_gpu")]
    for section, flag, budget_key in checks:
        if ctx.flag(f"{section}.{flag}") is not True:
            continue
        budget = ctx.int(f"{section}.{budget_key}")
        if budget is not None and budget * scale < seq:
            key = f"{section}.{budget_key}"
            if not ctx.set_by_override(key):
                key = anchor_key(
                    ctx, f"{A}.ppo_max_token_len_per_gpu", "data.max_response_length", "data.max_prompt_length"
                )
            yield report_unless_default(
                ctx,
                "VL305",
                f"{section}.{budget_key}={budget} × {scale_name}={scale} is below "
                f"max_prompt_length + max_response_length = {seq}; verl asserts once a long sample arrives",
                [
                    f"{section}.{budget_key}",
                    f"{section}.{flag}",
                    "data.max_prompt_length",
                    "data.max_response_length",
                    scale_key,
                ],
                key,
                f"set {budget_key} to at least {-(-seq // scale)}",
            )
            return


# verl 0.9 raises max_num_batched_tokens to max_model_len itself (with a warning).
BATCHED_TOKENS_RAISED = Evidence(VLLM_SERVER, r"raising max_num_batched_tokens from")


@rule(
    "VL311",
    "max-num-batched-tokens-below-max-model-len",
    "error",
    size_check=True,
    evidence=[Evidence(VLLM_SERVER, r"max_num_batched_tokens")],
    unless=[BATCHED_TOKENS_RAISED],
)
def batched_tokens(ctx):
    """Without chunked prefill, max_num_batched_tokens must be at least max_model_len.

    ## What it does
    Flags `enable_chunked_prefill=False` with `max_num_batched_tokens < max_model_len` for the
    vLLM rollout. Where `max_model_len` is null, the length the tree gives vLLM instead: the
    rollout's `prompt_length + response_length` (0.3-0.6, and 0.2, which has no
    `max_model_len` key: verl#189, 1024 + 8192 tokens against the default 8192), or the model's
    `max_position_embeddings` (0.7-0.8, when the model is known: see VL320).

    ## Why is this bad?
    vLLM's SchedulerConfig raises "max_num_batched_tokens (...) is smaller than
    max_model_len" when the rollout server starts. verl 0.9 raises the value itself with a
    warning: the rule applies to trees that pass the value to vLLM as it is.

    ## Use instead
    `max_num_batched_tokens >= max_model_len`, or keep chunked prefill on.

    ## Where in verl
    verl 0.7.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:309-312` (passes both to vLLM);
    verl 0.2 `verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:77-105` (`max_model_len=config.prompt_length
    + config.response_length`, the budget and `enable_chunked_prefill` passed as set);
    verl 0.9.1 `vllm_async_server.py:1113-1119` (the fix-up that makes this moot).
    """
    if ctx.flag(f"{R}.enable_chunked_prefill") is not False or ctx.text(f"{R}.name") not in (None, "vllm"):
        return  # (SGLang takes no max_num_batched_tokens from verl)
    tokens, (max_len, how) = ctx.int(f"{R}.max_num_batched_tokens"), model_len(ctx)
    inputs = [
        f"{R}.max_num_batched_tokens",
        f"{R}.max_model_len",
        f"{R}.enable_chunked_prefill",
        "data.max_prompt_length",
        "data.max_response_length",
        f"{R}.prompt_length",
        f"{R}.response_length",
    ]
    if max_len is None and ctx.get(f"{R}.max_model_len", 0) is None and ctx.verl_has(CONTEXT_RAISE):
        facts = known(ctx)  # verl 0.7-0.8 sets an unset max_model_len to the model's max_position_embeddings
        if facts is not None and facts.max_positions:
            max_len, how = (
                facts.max_positions,
                f"max_model_len={facts.max_positions} (the max_position_embeddings of {facts.name}, as verl sets it)",
            )
            inputs.append("actor_rollout_ref.model.path")
    if tokens is not None and max_len is not None and tokens < max_len:
        yield report_unless_default(
            ctx,
            "VL311",
            f"max_num_batched_tokens={tokens} < {how} with chunked prefill off; vLLM refuses to start",
            inputs,
            anchor_key(ctx, *inputs),
            f"set {R}.max_num_batched_tokens={max_len}",
        )


@rule(
    "VL312",
    "max-model-len-below-sequence-budget",
    "warning",
    size_check=True,
    evidence=[Evidence(VLLM_SERVER, r"max_possible_tokens = self\.config\.max_model_len - len\(prompt_ids\)")],
)
def max_model_len_budget(ctx):
    """rollout.max_model_len is below max_prompt_length + max_response_length.

    ## What it does
    Compares an explicit `rollout.max_model_len` with the data's sequence budget.

    ## Why is this bad?
    verl clamps each request's `max_tokens` to `max_model_len - len(prompt)`, so responses
    are silently cut short; a prompt longer than `max_model_len` raises ValueError.

    ## Use instead
    `max_model_len >= max_prompt_length + max_response_length`.

    ## Where in verl
    verl 0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:593-621`.
    """
    max_len = ctx.int(f"{R}.max_model_len")
    prompt, response = ctx.int("data.max_prompt_length"), ctx.int("data.max_response_length")
    if None in (max_len, prompt, response) or max_len >= prompt + response:
        return
    yield report_unless_default(
        ctx,
        "VL312",
        f"rollout.max_model_len={max_len} < max_prompt_length + max_response_length = {prompt + response}; "
        "responses are silently truncated",
        [f"{R}.max_model_len", "data.max_prompt_length", "data.max_response_length"],
        anchor_key(ctx, f"{R}.max_model_len", "data.max_response_length", "data.max_prompt_length"),
        f"set {R}.max_model_len={prompt + response} or more",
    )


@rule(
    "VL313",
    "val-do-sample-needs-temperature",
    "error",
    size_check=True,
    evidence=[Evidence(VALIDATION, r"validation gen temperature should be greater than 0")],
)
@validating_app
def val_sampling(ctx):
    """Validation sampling with a non-positive rollout temperature.

    ## What it does
    Flags `rollout.val_kwargs.do_sample=True` with `rollout.temperature <= 0`.

    ## Why is this bad?
    `validate_config` asserts "validation gen temperature should be greater than 0 when
    enabling do_sample".

    ## Use instead
    A positive `actor_rollout_ref.rollout.temperature`, or `val_kwargs.do_sample=False`.

    ## Where in verl
    verl 0.9.1 `verl/utils/config.py:199-203`; verl 0.7.1 `verl/utils/config.py` (`validate_config`).
    """
    temp = ctx.num(f"{R}.temperature")
    if ctx.flag(f"{R}.val_kwargs.do_sample") is True and temp is not None and temp <= 0:
        yield report_unless_default(
            ctx,
            "VL313",
            f"val_kwargs.do_sample=True needs rollout.temperature > 0 (got {temp}); validate_config asserts",
            [f"{R}.temperature", f"{R}.val_kwargs.do_sample"],
            anchor_key(ctx, f"{R}.temperature", f"{R}.val_kwargs.do_sample"),
            f"set {R}.temperature to a positive value such as 1.0",
        )
