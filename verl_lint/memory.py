"""`verl-lint config SCRIPT --memory`: what a launch's model puts on each GPU, as a breakdown.

The arithmetic and its assumptions are the memory rules' (`rules/memory_fit.py`): the training
state per GPU (a lower bound), an activation estimate for one micro batch (tokens =
`ppo_max_token_len_per_gpu` with dynamic batch size, else micro batch x (prompt + response);
with gradient checkpointing one bf16 hidden state per layer, plus the fp32 logits; shown, never
judged), and the rollout as vLLM sizes it. Each line states the assumption it rests on.
"""

from __future__ import annotations

from .check import UsageError
from .config.context import Context
from .gpus import GIB
from .models import ModelFacts
from .rules.memory_fit import rollout_fit, training_state
from .rules.model_sizes import M, known, model_facts
from .rules.sizes import A


def _int(ctx: Context, key: str, default: int) -> int:
    v = ctx.int(key)
    return default if v is None else v


def breakdown(ctx: Context, gpu_gib: float) -> list[str]:
    """The breakdown's lines for the launch of `ctx` on GPUs of `gpu_gib` GiB; one line saying
    why not when the model is not known."""
    facts = known(ctx)
    if facts is None:
        return [
            f"no memory breakdown: the model at {M}.path is not known (a local directory, the Hugging Face cache or "
            "verl-lint's table)"
        ]
    gpus = _int(ctx, "trainer.n_gpus_per_node", 8) * _int(ctx, "trainer.nnodes", 1)
    lines = [
        f"memory per GPU of {gpu_gib:g} GiB, {gpus} GPUs, model {facts.name} ({facts.params() / 1e9:.2f}B parameters)",
        "",
        "training (lower bound):",
    ]
    train, notes = _training(ctx, facts, gpus)
    lines += [f"  {name:<52} {b / GIB:8.2f} GiB  {why}" for name, b, why in train]
    total = sum(b for _, b, _ in train)
    lines.append(
        f"  {'total':<52} {total / GIB:8.2f} GiB  "
        f"{'exceeds the GPU: out of memory at the first step' if total > gpu_gib * GIB else 'fits'}"
    )
    lines += [f"  {n}" for n in notes]
    lines += ["", "rollout:"] + _rollout(ctx, facts, gpu_gib)
    return lines


def _training(ctx: Context, facts: ModelFacts, gpus: int) -> tuple[list, list[str]]:
    """The training state's rows (rules/memory_fit.py), with the activation estimate as a note."""
    rows, notes = training_state(ctx, facts, gpus)
    tokens = _micro_tokens(ctx)
    if tokens:
        ckpt = ctx.flag("actor_rollout_ref.model.enable_gradient_checkpointing") is not False
        hidden = tokens * facts.hidden * 2 * (facts.layers if ckpt else facts.layers * 16)
        logits = tokens * facts.vocab * 4
        notes.insert(
            -1,
            f"activations (not in the total): ~{(hidden + logits) / GIB:.2f} GiB for {tokens} tokens per micro batch "
            f"({'checkpointed hidden states' if ckpt else 'no gradient checkpointing: ~16 tensors per layer'} + fp32 "
            "logits)",
        )
    return rows, notes


def _micro_tokens(ctx: Context) -> int | None:
    if ctx.flag(f"{A}.use_dynamic_bsz"):
        return ctx.int(f"{A}.ppo_max_token_len_per_gpu")
    micro = ctx.int(f"{A}.ppo_micro_batch_size_per_gpu")
    prompt, response = ctx.int("data.max_prompt_length"), ctx.int("data.max_response_length")
    return micro * (prompt + response) if None not in (micro, prompt, response) else None


def _rollout(ctx: Context, facts: ModelFacts, gpu_gib: float) -> list[str]:
    fit = rollout_fit(ctx, facts, gpu_gib)
    if fit is None:
        return ["  gpu_memory_utilization is not known: no rollout breakdown"]
    kv = (
        f"(2 x {facts.layers} layers x {max(1, facts.kv_heads // fit.tp)} KV heads x {facts.head_dim} x 2 B)"
        if not facts.mla
        else "(MLA latent)"
    )
    out = [
        f"  {'engine share (gpu_memory_utilization x GPU)':<52} {fit.share / GIB:8.2f} GiB  {fit.util:g} x "
        f"{gpu_gib:g} GiB",
        f"  {'weights (bf16, / TP)':<52} {fit.weights / GIB:8.2f} GiB  TP = {fit.tp}",
        f"  {'KV cache room':<52} {max(fit.room, 0) / GIB:8.2f} GiB  {fit.per_token / 1024:.1f} KiB per token {kv}",
    ]
    if fit.room <= 0:
        out.append("  error: the weights exceed the engine's share; vLLM refuses to start (no memory for the KV cache)")
    elif fit.length:
        verdict = (
            "fits"
            if fit.tokens >= fit.length
            else "error: vLLM refuses to start (one sequence of max_model_len does not fit in the KV cache)"
        )
        out.append(
            f"  {'tokens the KV cache holds':<52} {fit.tokens:>8}      max_model_len {fit.length} "
            f"({fit.length_from}): {verdict}"
        )
    out.append(
        "  assumes: vLLM's activation peak and CUDA graphs (~1-3 GiB) are not subtracted; the training state is "
        "offloaded or freed during rollout"
    )
    return out


def model_lines(ctx: Context) -> list[str]:
    """What `verl-lint config` says of each model the launch names: its facts and their source,
    or why there are none."""
    out = []
    for prefix in (M, "critic.model"):
        path = ctx.text(f"{prefix}.path")
        if not path or not ctx.user_set(f"{prefix}.path") or (prefix != M and path == ctx.text(f"{M}.path")):
            continue
        got = model_facts(ctx, prefix)
        out += (
            got.lines()
            if isinstance(got, ModelFacts)
            else [
                f"{path}: {got.message}"
                if got is not None
                else f"{path}: unknown (not a local directory, not in the Hugging Face cache, not in verl-lint's table)"
            ]
        )
    return out


def gpu_memory(args, options) -> float | None:
    """The GiB per GPU `--memory` judges against (`--gpu-memory`, `--gpu`, the gpu setting, as
    the rules get it); None without `--memory`. UsageError when none gives it."""
    if not getattr(args, "memory", False):
        return None
    if options.gpu_gib is None:
        raise UsageError("--memory needs the GPU's memory: --gpu NAME, --gpu-memory GIB or the gpu setting")
    return options.gpu_gib
