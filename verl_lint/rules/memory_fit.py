"""3xx memory: what a launch's model puts on each GPU, judged against the GPU's memory.

The arithmetic, each term with the assumption it rests on (the findings and `verl-lint config
--memory` print them with the numbers):

- the rollout, as vLLM sizes it: `gpu_memory_utilization` x GPU memory is the engine's share;
  the weights take 2 B per parameter / TP; the KV cache takes, per token, 2 x layers x KV heads
  per TP rank x head dim x 2 B (MLA: the latent, once per layer). vLLM's own check
  (`vllm/v1/core/kv_cache_utils.py`, `check_enough_kv_cache_memory`) subtracts the weights, the
  activation peak and non-torch memory from the share and refuses to start when nothing is left
  ("No available memory for the cache blocks") or when one sequence of `max_model_len` does not
  fit ("To serve at least one request with the models's max seq len ..."). Leaving the
  activation peak out makes the room computed here an upper bound: a finding is certain.
- the training state per GPU (a lower bound): verl's FSDP workers keep the actor in fp32 (4 B),
  fp32 gradients (4 B) and Adam's two fp32 moments (8 B), sharded over the FSDP ranks; Megatron
  keeps bf16 weights (2 B) and fp32 main gradients (4 B) over TP x PP, and fp32 master weights
  and Adam moments (12 B) further over DP (Megatron-LM `theoretical_memory_usage.py`). The
  reference policy holds bf16 weights (2 B). Offload does not lower the update's peak: verl
  loads the actor's state back onto the GPU for it (`load_fsdp_model_to_gpu`, `load_fsdp_optimizer`).

The GPU's memory comes from `--gpu NAME` / `--gpu-memory GIB`, the `gpu` setting, or the live
device (callback); without one the checks are silent and say so once per run (VL330).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from packaging.version import Version

from ..evidence import Evidence
from ..gpus import GIB
from ..models import ModelFacts
from ..registry import REGISTRY, rule
from .model_sizes import CONTEXT_RAISE, ROLLOUT_FILES, M, _path, known
from .sizes import A, R, anchor_key, report_unless_default

VLLM_SHARE = Evidence(ROLLOUT_FILES, r"gpu_memory_utilization")  # verl hands the share to the engine
# verl up to 0.5 ships its own vLLM workers, used with vLLM <= 0.6.3, that size the KV cache as the
# share of the memory left free after loading, not of the whole GPU: the arithmetic here is not theirs.
OWN_VLLM_WORKER = Evidence(
    ("verl/third_party/vllm/*/worker.py",), r"free_gpu_memory \* (self\.cache_config\.)?gpu_memory_utilization"
)
H100 = {"gpu_gib": 80.0, "gpu_origin": "--gpu H100"}
# Model types whose every layer attends over the whole sequence: the KV cache of one sequence is
# what `kv_bytes_per_token` says. Sliding-window and hybrid models (Gemma 2/3, Mistral with a
# window, Qwen3-Next...) need less, which vLLM's hybrid KV cache manager counts: not judged.
FULL_ATTENTION = (
    "qwen2",
    "qwen2_5_vl",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "llama",
    "deepseek_v2",
    "deepseek_v3",
    "phi3",
    "glm4",
    "mixtral",
)
# A rollout whose weights or cache are not plain bf16/fp16 per TP rank: the arithmetic would not be vLLM's.
_NOT_PLAIN = (
    f"{R}.quantization",
    f"{R}.engine_kwargs.vllm.quantization",
    f"{R}.engine_kwargs.vllm.kv_cache_dtype",
    f"{R}.engine_kwargs.vllm.cpu_offload_gb",
)


def gpu_of(ctx) -> float | None:
    """The GiB per GPU the launch is judged against, None when none is known."""
    return getattr(ctx, "gpu_gib", None)


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ (~0.5 ms a job start)
class RolloutFit:
    """The rollout engine's memory on one GPU, as vLLM sizes it."""

    tp: int
    util: float
    share: float  # bytes: gpu_memory_utilization x GPU
    weights: float  # bytes per TP rank
    per_token: int  # KV bytes per token per TP rank
    length: int | None  # max_model_len
    length_from: str

    @property
    def room(self) -> float:
        return self.share - self.weights

    @property
    def tokens(self) -> int:
        return int(max(self.room, 0) // self.per_token)


def rollout_fit(ctx, facts: ModelFacts, gpu_gib: float) -> RolloutFit | None:
    """The rollout's numbers, None when `gpu_memory_utilization` or TP is not known."""
    tp = ctx.int(f"{R}.tensor_model_parallel_size") or 1
    util = ctx.num(f"{R}.gpu_memory_utilization")
    if util is None or tp < 1:
        return None
    length, length_from = max_model_len(ctx, facts)
    return RolloutFit(
        tp, util, util * gpu_gib * GIB, 2 * facts.params() / tp, facts.kv_bytes_per_token(tp), length, length_from
    )


def max_model_len(ctx, facts: ModelFacts) -> tuple[int | None, str]:
    """vLLM's max_model_len as verl sets it: the explicit value, else the model's context
    (verl 0.7+), else prompt + response (verl up to 0.6)."""
    explicit = ctx.int(f"{R}.max_model_len")
    if explicit:
        return explicit, "rollout.max_model_len"
    if ctx.verl_has(CONTEXT_RAISE):
        return facts.max_positions, "the model's max_position_embeddings (verl 0.7+)"
    prompt, response = ctx.int("data.max_prompt_length"), ctx.int("data.max_response_length")
    return (
        (prompt + response, "max_prompt_length + max_response_length") if None not in (prompt, response) else (None, "")
    )


def _own_vllm_worker(ctx) -> bool:
    """The launch may run verl's own vLLM worker: the tree ships one and the vLLM release is not
    known to be past 0.6.3 (exactly, or by the range the tree declares)."""
    if not ctx.verl_has(OWN_VLLM_WORKER):
        return False
    ev = ctx.engines.get("vllm")
    if ev is None or not ev.known:
        return True
    if ev.exact is not None:
        return ev.exact <= Version("0.6.3")
    return any(ev.admits(Version(v)) for v in ("0.6.3", "0.5.4", "0.4.2", "0.3.1"))


def _plain_vllm(ctx, facts: ModelFacts) -> bool:
    """A vLLM rollout whose weights are bf16/fp16 split over TP alone, as `rollout_fit` counts them."""
    if (
        ctx.text(f"{R}.name") != "vllm"
        or _own_vllm_worker(ctx)
        or (ctx.text(f"{R}.dtype") or "bfloat16") not in ("bfloat16", "float16", "half", "bf16", "fp16")
    ):
        return False
    if any(ctx.get(k, None) is not None for k in _NOT_PLAIN):
        return False
    if facts.moe:  # experts spread over EP x DP ranks hold fewer weights than / TP says
        for key in (f"{R}.expert_parallel_size", f"{R}.data_parallel_size"):
            if ctx.has(key) and (ctx.int(key) or 2) > 1:
                return False
    return True


def _on(ctx, key: str) -> bool:
    return ctx.flag(key) is True


def training_state(ctx, facts: ModelFacts, gpus: int) -> tuple[list, list[str]]:
    """(rows of (what, bytes per GPU, how it is split), notes): the state on each GPU while the
    actor updates; the reference policy and the critic stay resident unless offloaded."""
    p = facts.params()
    rows, notes = [], []
    lora = (ctx.int(f"{M}.lora_rank") or ctx.int(f"{M}.lora.rank") or 0) > 0  # verl 0.9 moved it under model.lora
    mg = f"{A}.megatron"
    if ctx.text(f"{A}.strategy") == "megatron":
        tp, pp = ctx.int(f"{mg}.tensor_model_parallel_size") or 1, ctx.int(f"{mg}.pipeline_model_parallel_size") or 1
        split = tp * pp
        dp = max(gpus // max(split * (ctx.int(f"{mg}.context_parallel_size") or 1), 1), 1)
        shards, ref_off = split, _on(ctx, "actor_rollout_ref.ref.megatron.param_offload")
        experts = facts.expert_params()
        ep = ctx.int(f"{mg}.expert_model_parallel_size") or 1
        etp = ctx.int(f"{mg}.expert_tensor_parallel_size") or tp
        local = (p - experts) / split + experts / max(ep * etp * pp, 1)
        how = f"/ TP x PP = {split}" + (f"; experts / EP x ETP x PP = {ep * etp * pp}" if experts else "")
        rows.append(("actor bf16 weights + fp32 grads (6 B/param)", 6 * local, how))
        states = 12 * p / max(split * dp, 1) if not experts else 12 * p / gpus
        opt = f"{A}.optim.override_optimizer_config"
        on_cpu = ctx.num(f"{opt}.optimizer_offload_fraction") if ctx.flag(f"{opt}.optimizer_cpu_offload") else 0
        rows.append(
            (
                "actor fp32 master + Adam (12 B/param)",
                states * (1 - (on_cpu or 0)),
                "/ every rank (distributed optimizer)" + (f", {on_cpu:g} kept on the CPU" if on_cpu else ""),
            )
        )
    else:
        size = ctx.int(f"{A}.fsdp_config.fsdp_size") or -1
        shards = gpus if size <= 0 else min(size, gpus)
        ref_off = _on(ctx, "actor_rollout_ref.ref.fsdp_config.param_offload")
        if lora:
            rows.append(("actor bf16 weights, frozen under LoRA (2 B/param)", 2 * p / shards, f"/ {shards} FSDP ranks"))
            notes.append("LoRA: the adapters' weights, gradients and Adam moments are left out (small)")
        else:
            rows.append(("actor fp32 weights, grads, Adam (16 B/param)", 16 * p / shards, f"/ {shards} FSDP ranks"))
    if (
        ctx.flag(f"{A}.use_kl_loss") or ctx.flag("algorithm.use_kl_in_reward")
    ) and not lora:  # LoRA: the actor without adapters is the reference
        rows.append(
            (
                "ref bf16 weights (2 B/param)",
                0 if ref_off else 2 * p / shards,
                f"/ {shards} ranks" + (", offloaded" if ref_off else ""),
            )
        )
    if ctx.text("algorithm.adv_estimator") == "gae":
        critic = known(ctx, "critic.model") if _path(ctx, "critic.model") else facts
        if critic is None:
            notes.append("the critic's model is not known: its state is left out")
        elif (
            ctx.text("critic.strategy") == "megatron"
        ):  # bf16 weights + fp32 grad buffer over its TP x PP, Adam over every rank
            cm = "critic.megatron"
            split = (ctx.int(f"{cm}.tensor_model_parallel_size") or 1) * (
                ctx.int(f"{cm}.pipeline_model_parallel_size") or 1
            )
            cp = critic.params()
            held = (0 if _on(ctx, f"{cm}.param_offload") else 6 * cp / split) + (
                0 if _on(ctx, f"{cm}.optimizer_offload") else 12 * cp / gpus
            )
            rows.append(
                (
                    f"critic state left on the GPU (Megatron, {cp / 1e9:.2f}B)",
                    held,
                    f"6 B/param / TP x PP = {split}, 12 B/param / {gpus} ranks",
                )
            )
        else:
            off_p, off_o = (
                _on(ctx, "critic.model.fsdp_config.param_offload"),
                _on(ctx, "critic.model.fsdp_config.optimizer_offload"),
            )
            resident = (0 if off_p else 4) + (
                0 if off_o else 8
            )  # fp32 weights, Adam; its gradients left out (freed or not)
            rows.append(
                (
                    f"critic state left on the GPU ({resident} B/param of {critic.params() / 1e9:.2f}B)",
                    resident * critic.params() / shards,
                    f"/ {shards} ranks",
                )
            )
    if any(
        _on(ctx, f"{A}.{k}")
        for k in (
            "fsdp_config.param_offload",
            "fsdp_config.optimizer_offload",
            "megatron.param_offload",
            "megatron.optimizer_offload",
        )
    ):
        notes.append("the actor's offload frees its state during rollout, not during its update (verl loads it back)")
    kept = (
        "Megatron keeps bf16 weights and fp32 main grads"
        if ctx.text(f"{A}.strategy") == "megatron"
        else "verl's FSDP keeps the actor in fp32"
    )
    notes.append(f"assumes: {kept}; the all-gathered layer, activations and allocator slack come on top")
    return rows, notes


def _gpus(ctx) -> int | None:
    per_node, nodes = ctx.int("trainer.n_gpus_per_node"), ctx.int("trainer.nnodes")
    return per_node * nodes if per_node and nodes else None


MEMORY_RULES = ("VL325", "VL326", "VL327")


@rule(
    "VL325",
    "rollout-weights-exceed-memory-share",
    "error",
    size_check=True,
    evidence=[VLLM_SHARE],
)
def rollout_weights(ctx) -> Iterator:
    """The rollout's weights alone exceed its `gpu_memory_utilization` share of the GPU.

    ## What it does
    For the vLLM rollout, with the GPU's memory known (`--gpu`, `--gpu-memory`, the `gpu`
    setting), flags `rollout.gpu_memory_utilization` x GPU memory below the model's bf16
    weights per tensor-parallel rank (2 B x parameters / TP).

    ## Why is this bad?
    vLLM loads the weights, subtracts them (and its activation peak) from its share and
    raises "No available memory for the cache blocks. Try increasing `gpu_memory_utilization`"
    when nothing is left for the KV cache: when the rollout starts, after the GPUs are up.
    The activation peak is not counted here, so the real room is smaller still.

    ## Use instead
    A larger `gpu_memory_utilization` or a larger rollout TP.

    ## Where in verl
    verl passes `gpu_memory_utilization` and `tensor_model_parallel_size` to vLLM (verl 0.5.0
    `verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py`, 0.9.1 `vllm_async_server.py`);
    the check is vLLM's (`vllm/v1/core/kv_cache_utils.py`, `check_enough_kv_cache_memory`).
    Not judged where verl's own vLLM workers may run (`verl/third_party/vllm/*/worker.py`,
    shipped up to 0.5, used with vLLM <= 0.6.3: the share is of the memory left free). Not
    judged: quantized weights, an fp8 KV cache, `cpu_offload_gb`, MoE experts spread by expert or
    data parallelism, SGLang.
    """
    facts, gpu = known(ctx), gpu_of(ctx)
    if facts is None or gpu is None or not _plain_vllm(ctx, facts):
        return
    fit = rollout_fit(ctx, facts, gpu)
    if fit is None or fit.room > 0:
        return
    inputs = [f"{R}.gpu_memory_utilization", f"{R}.tensor_model_parallel_size", f"{M}.path"]
    yield report_unless_default(
        ctx,
        "VL325",
        f"the rollout's bf16 weights of {facts.name} ({fit.weights / GIB:.1f} GiB per TP rank, TP {fit.tp}) exceed "
        f"gpu_memory_utilization {fit.util:g} x {gpu:g} GiB = {fit.share / GIB:.1f} GiB; vLLM finds no memory for the "
        "KV cache and refuses to start "
        f"(assumes {ctx.gpu_origin}; activations not counted)",
        inputs,
        anchor_key(ctx, *inputs),
        f"raise gpu_memory_utilization above {min(fit.weights / (gpu * GIB) + 0.05, 0.95):.2f} or the rollout TP",
    )


@rule(
    "VL326",
    "kv-cache-cannot-hold-one-sequence",
    "error",
    size_check=True,
    evidence=[VLLM_SHARE],
)
def kv_room(ctx) -> Iterator:
    """The rollout's KV cache has no room for one sequence of `max_model_len` tokens.

    ## What it does
    For the vLLM rollout of a model whose every layer attends over the whole sequence, with
    the GPU's memory known, computes the KV cache room as vLLM does (the engine's share,
    `gpu_memory_utilization` x GPU, minus the bf16 weights per TP rank) and flags a
    `max_model_len` whose KV cache (2 x layers x KV heads per TP rank x head dim x 2 B per token;
    MLA: the latent once per layer) does not fit in it. `max_model_len` is the rollout's, else
    what verl gives vLLM: prompt + response (verl up to 0.6) or the model's context (0.7+).

    ## Why is this bad?
    vLLM raises "To serve at least one request with the models's max seq len (N), (X GiB KV
    cache is needed, which is larger than the available KV cache memory (Y GiB)" when the
    engine starts. The room here leaves out vLLM's activation peak: the real one is smaller.

    ## Use instead
    A larger `gpu_memory_utilization`, a larger rollout TP, or a shorter `max_model_len`.

    ## Where in verl
    verl 0.5.0 `verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py` (`max_model_len`:
    the config's, else prompt + response); verl 0.9.1 `vllm_async_server.py` (the model's
    context); the check is vLLM's (`vllm/v1/core/kv_cache_utils.py`, `check_enough_kv_cache_memory`;
    vLLM's V0 worker raises the same in `raise_if_cache_size_invalid`). Not judged where verl's
    own vLLM workers may run (`verl/third_party/vllm/*/worker.py`, with vLLM <= 0.6.3).
    """
    facts, gpu = known(ctx), gpu_of(ctx)
    if facts is None or gpu is None or facts.model_type not in FULL_ATTENTION or not _plain_vllm(ctx, facts):
        return
    fit = rollout_fit(ctx, facts, gpu)
    if fit is None or fit.room <= 0 or not fit.length or fit.tokens >= fit.length:
        return
    inputs = [
        f"{R}.gpu_memory_utilization",
        f"{R}.max_model_len" if ctx.user_set(f"{R}.max_model_len") else "data.max_response_length",
        f"{M}.path",
    ]
    yield report_unless_default(
        ctx,
        "VL326",
        f"one sequence of max_model_len {fit.length} ({fit.length_from}) needs {fit.length * fit.per_token / GIB:.1f} "
        "GiB of KV cache "
        f"but at most {fit.room / GIB:.1f} GiB is left of gpu_memory_utilization {fit.util:g} x {gpu:g} GiB after "
        f"{fit.weights / GIB:.1f} GiB of weights "
        f"(TP {fit.tp}); vLLM refuses to start (assumes {ctx.gpu_origin}; bf16 KV cache, activations not counted)",
        inputs,
        anchor_key(ctx, *inputs),
        f"the KV cache holds at most {fit.tokens} tokens: raise gpu_memory_utilization or TP, or lower max_model_len",
    )


@rule(
    "VL327",
    "training-state-exceeds-gpu",
    "warning",
    size_check=True,
)
def training_memory(ctx) -> Iterator:
    """The training state's lower bound per GPU exceeds the GPU's memory.

    ## What it does
    With the GPU's memory known, adds what each GPU holds while the actor updates: the actor's
    fp32 weights, gradients and Adam moments (16 B/param) sharded over the FSDP ranks (Megatron:
    6 B/param over TP x PP and 12 B/param over the distributed optimizer's ranks), the reference
    policy's bf16 weights unless offloaded, and the critic's state left on the GPU; flags a sum
    above the GPU's memory. Not for a validation-only run (`trainer.val_only`), which never
    updates, nor with FSDP2's `offload_policy` (the optimizer steps on the CPU).

    ## Why is this bad?
    The job runs out of memory at the first update, after the rollout has run. The sum is a
    lower bound (activations, the all-gathered layer and allocator slack come on top), so a
    finding is out of memory for sure; no finding does not mean it fits.

    ## Use instead
    More GPUs (or nodes), `fsdp_size` covering all of them, offloading the reference policy and
    the critic, LoRA, or Megatron with more model parallelism.

    ## Where in verl
    verl 0.9.1 `verl/workers/fsdp_workers.py` (the actor loaded in fp32; `load_fsdp_model_to_gpu`
    and `load_fsdp_optimizer` before the update), `verl/workers/megatron_workers.py`; Megatron-LM
    `megatron/training/theoretical_memory_usage.py` for the bytes per parameter.
    """
    facts, gpu, gpus = known(ctx), gpu_of(ctx), _gpus(ctx)
    if facts is None or gpu is None or gpus is None or ctx.text(f"{A}.strategy") not in ("fsdp", "fsdp2", "megatron"):
        return
    if _on(ctx, f"{A}.fsdp_config.offload_policy") or (
        ctx.has("trainer.val_only") and ctx.flag("trainer.val_only") is not False
    ):
        # FSDP2's CPUOffloadPolicy steps the optimizer on the CPU; a validation-only run (or one unknown) never updates
        return
    rows, _ = training_state(ctx, facts, gpus)
    total = sum(b for _, b, _ in rows)
    if total <= gpu * GIB:
        return
    parts = "; ".join(f"{what} {b / GIB:.1f} GiB {how}" for what, b, how in rows if b)
    key = f"{A}.fsdp_config.fsdp_size" if ctx.user_set(f"{A}.fsdp_config.fsdp_size") else "trainer.n_gpus_per_node"
    inputs = [key, f"{M}.path"]
    yield report_unless_default(
        ctx,
        "VL327",
        f"the training state alone takes at least {total / GIB:.1f} GiB per GPU ({parts}), more than the {gpu:g} GiB "
        "GPU "
        f"({ctx.gpu_origin}): out of memory at the first update (lower bound: activations and allocator slack come on "
        "top)",
        inputs,
        anchor_key(ctx, *inputs),
        "shard over more GPUs, offload the reference policy or critic, use LoRA or Megatron",
    )


@rule(
    "VL330",
    "memory-checks-without-gpu",
    "info",
    size_check=True,
)
def no_gpu(ctx) -> Iterator:
    """The GPU's memory is not known: the memory checks do not run.

    ## What it does
    Says, once per run, that a launch's model is known but the GPU's memory is not, and names
    the checks that therefore did not run (those that apply to the launch's verl tree and app;
    none: no note).

    ## Why is this bad?
    Nothing is wrong; a clean report is then not read as "the model fits the GPUs".

    ## Use instead
    `--gpu NAME` (H100, A100-80GB, H20, 910B...) or `--gpu-memory GIB`, or `gpu = "H100"` in
    `[tool.verl-lint]`.
    """
    if gpu_of(ctx) is not None or known(ctx) is None:
        return
    skipped = [r.code for r in REGISTRY if r.code in MEMORY_RULES and r.runs_on(ctx)]
    if skipped:  # none of them applies to this tree or app: nothing went unchecked
        d = ctx.diag(
            "VL330",
            f"the memory checks ({', '.join(skipped)}) did not run: the GPU's memory is not known",
            key=f"{M}.path",
            help="give --gpu NAME or --gpu-memory GIB, or set gpu in [tool.verl-lint]",
        )
        d.once = True
        yield d
