"""`verl-lint config SCRIPT --memory`: what a launch's model puts on each GPU, as a breakdown.

The arithmetic, each term with the assumption it rests on (printed with the numbers):

- training state per GPU (actor, critic; the reference policy's weights): verl's FSDP workers
  keep the trained model's parameters in fp32 (4 B), fp32 gradients (4 B) and Adam's two fp32
  moments (8 B), sharded over the FSDP ranks (all GPUs unless `fsdp_size` says fewer); Megatron
  keeps bf16 weights (2 B) and fp32 main gradients (4 B) split over TP x PP, and fp32 master
  weights and Adam moments (12 B) further over DP with its distributed optimizer
  (Megatron-LM `theoretical_memory_usage.py`). The reference policy holds bf16 weights (2 B).
  `param_offload`, `grad_offload` / `optimizer_offload` put the matching term on the CPU.
  This is a lower bound: activations, the all-gathered layer and allocator slack come on top.
- an activation estimate for one micro batch (tokens = `ppo_max_token_len_per_gpu` with dynamic
  batch size, else micro batch x (prompt + response)): with gradient checkpointing one bf16
  hidden state per layer, plus the fp32 logits over the vocabulary. Shown, never judged.
- the rollout (vLLM's own sizing): `gpu_memory_utilization` x GPU memory is the engine's share;
  the weights take 2 B per parameter / TP; the KV cache takes, per token, 2 x layers x KV heads
  per TP rank x head dim x 2 B (MLA: the latent, once per layer); vLLM refuses to start when
  one sequence of `max_model_len` tokens does not fit in what is left. The training state is
  assumed offloaded or freed while the rollout runs (verl's sleep mode / free_cache_engine).
"""

from __future__ import annotations

from .check import UsageError
from .config.context import Context
from .models import ModelFacts
from .rules.model_sizes import CONTEXT_RAISE, M, known, model_facts

GIB = 1 << 30
GPUS = {  # --gpu NAME -> GiB of device memory, as the vendors' data sheets state it
    "H100": 80, "H800": 80, "H200": 141, "H20": 96, "A100-40GB": 40, "A100-80GB": 80, "A800": 80,
    "L40S": 48, "L20": 48, "A10": 24, "RTX4090": 24, "910B": 64, "B200": 180,
}
A, R = "actor_rollout_ref.actor", "actor_rollout_ref.rollout"


def _int(ctx: Context, key: str, default: int) -> int:
    v = ctx.int(key)
    return default if v is None else v


def _on(ctx: Context, key: str) -> bool:
    return ctx.flag(key) is True


def breakdown(ctx: Context, gpu_gib: float) -> list[str]:
    """The breakdown's lines for the launch of `ctx` on GPUs of `gpu_gib` GiB; one line saying
    why not when the model is not known."""
    facts = known(ctx)
    if facts is None:
        return [f"no memory breakdown: the model at {M}.path is not known (a local directory, the Hugging Face cache or verl-lint's table)"]
    gpus = _int(ctx, "trainer.n_gpus_per_node", 8) * _int(ctx, "trainer.nnodes", 1)
    lines = [f"memory per GPU of {gpu_gib:g} GiB, {gpus} GPUs, model {facts.name} ({facts.params() / 1e9:.2f}B parameters)", "", "training (lower bound):"]
    train, notes = _training(ctx, facts, gpus)
    lines += [f"  {name:<52} {b / GIB:8.2f} GiB  {why}" for name, b, why in train]
    total = sum(b for _, b, _ in train)
    lines.append(f"  {'total':<52} {total / GIB:8.2f} GiB  {'exceeds the GPU: out of memory at the first step' if total > gpu_gib * GIB else 'fits'}")
    lines += [f"  {n}" for n in notes]
    lines += ["", "rollout:"] + _rollout(ctx, facts, gpu_gib)
    return lines


def _training(ctx: Context, facts: ModelFacts, gpus: int) -> tuple[list, list[str]]:
    """The state on each GPU while the actor updates: verl loads the actor's offloaded
    parameters, gradients and optimizer state back onto the GPU for the update
    (`load_fsdp_model_to_gpu` / `load_fsdp_optimizer`, Megatron's likewise), so offload does not
    lower this peak; the reference policy and the critic stay resident unless offloaded."""
    p = facts.params()
    rows, notes = [], []
    lora = _int(ctx, "actor_rollout_ref.model.lora_rank", 0) > 0
    if ctx.text(f"{A}.strategy") == "megatron":
        mg = f"{A}.megatron"
        split = _int(ctx, f"{mg}.tensor_model_parallel_size", 1) * _int(ctx, f"{mg}.pipeline_model_parallel_size", 1)
        dp = max(gpus // max(split * _int(ctx, f"{mg}.context_parallel_size", 1), 1), 1)
        shards, ref_off = split, _on(ctx, "actor_rollout_ref.ref.megatron.param_offload")
        experts = facts.expert_params()
        ep = _int(ctx, f"{mg}.expert_model_parallel_size", 1)
        etp = ctx.int(f"{mg}.expert_tensor_parallel_size") or _int(ctx, f"{mg}.tensor_model_parallel_size", 1)
        pp = _int(ctx, f"{mg}.pipeline_model_parallel_size", 1)
        local = (p - experts) / split + experts / max(ep * etp * pp, 1)
        how = f"/ TP x PP = {split}" + (f"; experts / EP x ETP x PP = {ep * etp * pp}" if experts else "")
        rows.append(("actor bf16 weights + fp32 grads (6 B/param)", 6 * local, how))
        states = 12 * p / max(split * dp, 1) if not experts else 12 * p / gpus
        opt = f"{A}.optim.override_optimizer_config"
        on_cpu = ctx.num(f"{opt}.optimizer_offload_fraction") if ctx.flag(f"{opt}.optimizer_cpu_offload") else 0
        rows.append(("actor fp32 master + Adam (12 B/param)", states * (1 - (on_cpu or 0)), "/ every rank (distributed optimizer)" + (f", {on_cpu:g} kept on the CPU" if on_cpu else "")))
    else:
        size = _int(ctx, f"{A}.fsdp_config.fsdp_size", -1)
        shards = gpus if size <= 0 else min(size, gpus)
        ref_off = _on(ctx, "actor_rollout_ref.ref.fsdp_config.param_offload")
        if lora:
            rows.append(("actor bf16 weights, frozen under LoRA (2 B/param)", 2 * p / shards, f"/ {shards} FSDP ranks"))
            notes.append("LoRA: the adapters' weights, gradients and Adam moments are left out (small)")
        else:
            rows.append(("actor fp32 weights, grads, Adam (16 B/param)", 16 * p / shards, f"/ {shards} FSDP ranks"))
    if ctx.flag(f"{A}.use_kl_loss") or ctx.flag("algorithm.use_kl_in_reward"):
        rows.append(("ref bf16 weights (2 B/param)", 0 if ref_off else 2 * p / shards, f"/ {shards} ranks" + (", offloaded" if ref_off else "")))
    if ctx.text("algorithm.adv_estimator") == "gae":
        critic = known(ctx, "critic.model") or facts
        off_p, off_o = _on(ctx, "critic.model.fsdp_config.param_offload"), _on(ctx, "critic.model.fsdp_config.optimizer_offload")
        resident = (0 if off_p else 8) + (0 if off_o else 8)
        rows.append((f"critic state left on the GPU ({resident} B/param of {critic.params() / 1e9:.2f}B)", resident * critic.params() / shards, f"/ {shards} ranks"))
    if any(_on(ctx, f"{A}.{k}") for k in ("fsdp_config.param_offload", "fsdp_config.optimizer_offload", "megatron.param_offload", "megatron.optimizer_offload")):
        notes.append("the actor's offload frees its state during rollout, not during its update (verl loads it back)")
    tokens = _micro_tokens(ctx)
    if tokens:
        ckpt = ctx.flag("actor_rollout_ref.model.enable_gradient_checkpointing") is not False
        hidden = tokens * facts.hidden * 2 * (facts.layers if ckpt else facts.layers * 16)
        logits = tokens * facts.vocab * 4
        notes.append(f"activations (not in the total): ~{(hidden + logits) / GIB:.2f} GiB for {tokens} tokens per micro batch "
                     f"({'checkpointed hidden states' if ckpt else 'no gradient checkpointing: ~16 tensors per layer'} + fp32 logits)")
    kept = "Megatron keeps bf16 weights and fp32 main grads" if ctx.text(f"{A}.strategy") == "megatron" else "verl's FSDP keeps the actor in fp32"
    notes.append(f"assumes: {kept}; the all-gathered layer, activations and allocator slack come on top")
    return rows, notes


def _micro_tokens(ctx: Context) -> int | None:
    if ctx.flag(f"{A}.use_dynamic_bsz"):
        return ctx.int(f"{A}.ppo_max_token_len_per_gpu")
    micro = ctx.int(f"{A}.ppo_micro_batch_size_per_gpu")
    prompt, response = ctx.int("data.max_prompt_length"), ctx.int("data.max_response_length")
    return micro * (prompt + response) if None not in (micro, prompt, response) else None


def _max_model_len(ctx: Context, facts: ModelFacts) -> tuple[int | None, str]:
    explicit = ctx.int(f"{R}.max_model_len")
    if explicit:
        return explicit, "rollout.max_model_len"
    if ctx.verl_has(CONTEXT_RAISE):
        return facts.max_positions, "the model's max_position_embeddings (verl 0.7+)"
    prompt, response = ctx.int("data.max_prompt_length"), ctx.int("data.max_response_length")
    return (prompt + response, "max_prompt_length + max_response_length") if None not in (prompt, response) else (None, "")


def _rollout(ctx: Context, facts: ModelFacts, gpu_gib: float) -> list[str]:
    tp = _int(ctx, f"{R}.tensor_model_parallel_size", 1)
    util = ctx.num(f"{R}.gpu_memory_utilization")
    if util is None:
        return ["  gpu_memory_utilization is not known: no rollout breakdown"]
    share = util * gpu_gib * GIB
    weights = 2 * facts.params() / max(tp, 1)
    per_token = facts.kv_bytes_per_token(tp)
    room = share - weights
    length, length_from = _max_model_len(ctx, facts)
    out = [
        f"  {'engine share (gpu_memory_utilization x GPU)':<52} {share / GIB:8.2f} GiB  {util:g} x {gpu_gib:g} GiB",
        f"  {'weights (bf16, / TP)':<52} {weights / GIB:8.2f} GiB  TP = {tp}",
        f"  {'KV cache room':<52} {max(room, 0) / GIB:8.2f} GiB  {per_token / 1024:.1f} KiB per token "
        f"(2 x {facts.layers} layers x {max(1, facts.kv_heads // max(tp, 1))} KV heads x {facts.head_dim} x 2 B)" if not facts.mla else
        f"  {'KV cache room':<52} {max(room, 0) / GIB:8.2f} GiB  {per_token / 1024:.1f} KiB per token (MLA latent)",
    ]
    if room <= 0:
        out.append("  error: the weights exceed the engine's share; vLLM refuses to start (no memory for the KV cache)")
    elif length:
        tokens = int(room // per_token)
        verdict = "fits" if tokens >= length else "error: vLLM refuses to start (one sequence of max_model_len does not fit in the KV cache)"
        out.append(f"  {'tokens the KV cache holds':<52} {tokens:>8}      max_model_len {length} ({length_from}): {verdict}")
    out.append("  assumes: vLLM's activation peak and CUDA graphs (~1-3 GiB) are not subtracted; the training state is offloaded or freed during rollout")
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
        out += got.lines() if isinstance(got, ModelFacts) else [f"{path}: {got.message}" if got is not None else f"{path}: unknown (not a local directory, not in the Hugging Face cache, not in verl-lint's table)"]
    return out


def gpu_memory(args) -> float | None:
    """The GiB per GPU `--memory` judges against: `--gpu-memory GIB`, else `--gpu NAME`; None
    without `--memory`. UsageError for a GPU name it does not know."""
    if not getattr(args, "memory", False):
        return None
    if args.gpu_memory:
        return args.gpu_memory
    if args.gpu:
        name = args.gpu.upper().replace("_", "-")
        if name not in GPUS:
            raise UsageError(f"--gpu {args.gpu}: not a GPU verl-lint knows ({', '.join(GPUS)}); give --gpu-memory GIB")
        return GPUS[name]
    raise UsageError("--memory needs the GPU's memory: --gpu NAME or --gpu-memory GIB")
