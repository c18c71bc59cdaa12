"""3xx: sizes and parallelism that verl asserts on only after Ray and the workers are up.

Every check reads numbers through `ctx.int` (or `_size`), which is None for anything unknown
(`$(cmd)`, a variable the script does not set, `"$@"`), so a check that lacks a number stays
silent: no default stands in for it. Each rule names the check in verl's source it mirrors
(`evidence`) and runs only on a tree that has it, so a vendored old verl is linted with its own
semantics. A finding whose inputs all come from verl's shipped defaults is reported once per
run as info (`_report`).
"""

from __future__ import annotations

from ..model import Severity
from ..config.context import MISSING
from ..registry import REGISTRY, main_ppo, rule
from ..config.source import Evidence

A = "actor_rollout_ref.actor"
R = "actor_rollout_ref.rollout"
GPUS = ("trainer.n_gpus_per_node", "trainer.nnodes")
# Apps whose main() runs verl.utils.config.validate_config (the fully-async app does not:
# it requires data.train_batch_size=0 and validates on its own).
VALIDATED_APPS = ("ppo_trainer", "ppo_megatron_trainer")


# Where verl validates the config: ray_trainer.py up to 0.5, verl/utils/config.py and the config dataclasses after.
VALIDATION = ("verl/utils/config.py", "verl/trainer/ppo/ray_trainer.py")
ROLLOUT_CONFIG = ("verl/workers/config/rollout.py",)
VLLM_SERVER = ("verl/workers/rollout/vllm_rollout/*.py",)
MEGATRON_PARALLEL = ("tensor_model_parallel_size", "pipeline_model_parallel_size", "context_parallel_size")


def _size(ctx, key):
    """A parallel size: its value, 1 when the tree's config has no such key (the dimension does
    not exist there), None when unknown or not an integer."""
    v = ctx.get(key)
    if v is MISSING:
        return 1
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _report(ctx, code, message, inputs, key, help, severity=None):
    """The finding, unless none of `inputs` is the user's choice: then a problem of verl's own
    defaults (info, once per run)."""
    if any(ctx.user_set(k) for k in inputs):
        return ctx.diag(code, message, key=key, help=help, severity=severity)
    return ctx.default_problem(code, message, key, help)


@rule(
    "VL300",
    "size-checks-skipped-for-unknown-values",
    "info",
    bad=[f"python3 -m verl.trainer.main_ppo actor_rollout_ref.rollout.name=vllm data.train_batch_size=$BSZ {A}.ppo_mini_batch_size=128\n"],
    good=[main_ppo("data.train_batch_size=256", f"{A}.ppo_mini_batch_size=128")],
)
def skipped_for_unknown(ctx):
    """Size checks that could not run for this launch: a value they need is only known at run time.

    ## What it does
    Runs the other 3xx checks that apply to this launch and lists those that read a value the
    script leaves to run time (an unset variable, `$(cmd)`, `${oc.env:X}` with X not set by the
    script) and so could not decide: one note per launch.

    ## Why is this bad?
    verl-lint never puts a default in place of such a value, so those checks are silent; this
    says which ones did not run, so a clean report is not read as "the sizes are fine".

    ## Use instead
    Nothing is wrong; give the value in the script (or lint the command line as it is run,
    `verl-lint check -- python3 -m ...`) to have it checked.
    """
    missed: dict[str, list[str]] = {}
    for r in REGISTRY:
        if not r.code.startswith("VL3") or r.code == "VL300" or not r.runs_on(ctx):
            continue
        ctx.unknown_reads = []
        try:
            found = list(r.check(ctx))
        finally:
            reads, ctx.unknown_reads = ctx.unknown_reads, None
        if reads and not found:
            missed[r.code] = reads
    if missed:
        keys = list(dict.fromkeys(k for reads in missed.values() for k in reads))
        yield ctx.diag(
            "VL300",
            f"not checked, the values are only known at run time ({', '.join(f'`{k}`' for k in keys)}): {', '.join(missed)}",
            key=keys[0],
            help="give these values in the script to have the size checks run",
        )


def _gpus(ctx):
    per_node, nodes = ctx.int(GPUS[0]), ctx.int(GPUS[1])
    if per_node is None or nodes is None:
        return None, ""
    return per_node * nodes, f"trainer.n_gpus_per_node={per_node} × trainer.nnodes={nodes}"


def _anchor(ctx, *keys):
    """The key among `keys` whose override comes last on the command line, else the first
    (where the finding is reported)."""
    order = {id(o): i for i, o in enumerate(ctx.comp.overrides)}
    set_keys = [k for k in keys if ctx.set_by_override(k)]
    if not set_keys:
        return keys[0]
    return max(set_keys, key=lambda k: order[id(ctx.comp.last_setter(k))])


@rule(
    "VL301",
    "train-batch-not-divisible-by-gpus",
    "error",
    apps=VALIDATED_APPS,
    evidence=[Evidence(VALIDATION, r"must be divisible by minimal possible batch size")],
    bad=[main_ppo("data.train_batch_size=1000", "actor_rollout_ref.rollout.n=5", "trainer.n_gpus_per_node=8", "trainer.nnodes=6", "actor_rollout_ref.actor.ppo_mini_batch_size=48")],
    good=[main_ppo("data.train_batch_size=960", "actor_rollout_ref.rollout.n=5", "trainer.n_gpus_per_node=8", "trainer.nnodes=6", "actor_rollout_ref.actor.ppo_mini_batch_size=192")],
)
def train_batch_divisible(ctx):
    """train_batch_size × rollout.n must be divisible by the minimal batch (the GPU count for FSDP).

    ## What it does
    Computes `data.train_batch_size × actor_rollout_ref.rollout.n` and checks it divides by
    `n_gpus_per_node × nnodes` (FSDP), or by the Megatron data-parallel size ×
    `ppo_micro_batch_size_per_gpu`, when dynamic batch size is off.

    ## Why is this bad?
    `validate_config` asserts "real_train_batch_size (...) must be divisible by minimal
    possible batch size" — after Ray has started in verl 0.7, before it in 0.9.

    ## Use instead
    A train batch size whose product with `rollout.n` is a multiple of the GPU count.

    ## Where in verl
    verl 0.9.1 `verl/utils/config.py:100-127` (`validate_config`); verl 0.7.1 `verl/utils/config.py:86-113`;
    verl 0.4.1 `verl/trainer/ppo/ray_trainer.py` (`_validate_config`). Runs only on a tree whose
    source has the assert ("must be divisible by minimal possible batch size").
    """
    if ctx.flag(f"{A}.use_dynamic_bsz") is not False:
        return
    n_gpus, gpus_text = _gpus(ctx)
    bsz, n = ctx.int("data.train_batch_size"), ctx.int(f"{R}.n")
    if n_gpus is None or bsz is None or n is None or n_gpus <= 0:
        return
    minimal, why = n_gpus, gpus_text
    inputs = ["data.train_batch_size", f"{R}.n", *GPUS]
    if ctx.text(f"{A}.strategy") == "megatron":
        tp, pp, cp = (_size(ctx, f"{A}.megatron.{k}") for k in MEGATRON_PARALLEL)
        micro = ctx.int(f"{A}.ppo_micro_batch_size_per_gpu")
        if None in (tp, pp, cp, micro) or tp * pp * cp == 0 or n_gpus % (tp * pp * cp):
            return  # VL309 reports the indivisible model-parallel size
        minimal = n_gpus // (tp * pp * cp) * micro
        why = f"Megatron data-parallel size {n_gpus // (tp * pp * cp)} × ppo_micro_batch_size_per_gpu={micro}"
        inputs += [f"{A}.megatron.{k}" for k in MEGATRON_PARALLEL] + [f"{A}.ppo_micro_batch_size_per_gpu"]
    if minimal and (bsz * n) % minimal:
        yield _report(
            ctx,
            "VL301",
            f"data.train_batch_size={bsz} × rollout.n={n} = {bsz * n} is not divisible by {why} = {minimal}; "
            "verl asserts on it in validate_config",
            inputs,
            _anchor(ctx, "data.train_batch_size", f"{R}.n", *GPUS),
            f"use a train_batch_size such that train_batch_size × {n} is a multiple of {minimal}, e.g. {_round_to(bsz, n, minimal)}",
        )


def _round_to(bsz: int, n: int, minimal: int) -> int:
    from math import gcd

    step = minimal // gcd(n, minimal)
    return max(step, bsz // step * step)


@rule(
    "VL302",
    "train-batch-smaller-than-mini-batch",
    "error",
    apps=VALIDATED_APPS,
    # verl 0.1-0.3 has no such check: the actor splits the batch into mini batches of at most that size.
    evidence=[
        Evidence(("verl/workers/config/actor.py",), r"train_batch_size\s*<\s*self\.ppo_mini_batch_size"),
        Evidence(("verl/trainer/ppo/ray_trainer.py",), r"train_batch_size\s*>=\s*config\.actor_rollout_ref\.actor\.ppo_mini_batch_size"),
    ],
    bad=[main_ppo("data.train_batch_size=64", "actor_rollout_ref.actor.ppo_mini_batch_size=128")],
    good=[main_ppo("data.train_batch_size=256", "actor_rollout_ref.actor.ppo_mini_batch_size=128")],
)
def train_batch_vs_mini(ctx):
    """data.train_batch_size is smaller than actor.ppo_mini_batch_size.

    ## What it does
    Compares the two when dynamic batch size is off.

    ## Why is this bad?
    `ActorConfig.validate` raises "train_batch_size (...) must be >= actor.ppo_mini_batch_size".

    ## Use instead
    A mini batch no larger than the train batch (usually a divisor of it).

    ## Where in verl
    verl 0.9.1 `verl/workers/config/actor.py:222-229`; verl 0.7.1 `verl/workers/config/actor.py` (`validate`);
    verl 0.4.1-0.5 `verl/trainer/ppo/ray_trainer.py` (`_validate_config`, an assert). verl 0.1-0.3
    (e.g. vendored in TinyZero, Logic-RL) has no such check, so the rule does not apply there.
    """
    if ctx.flag(f"{A}.use_dynamic_bsz") is not False:
        return
    bsz, mini = ctx.int("data.train_batch_size"), ctx.int(f"{A}.ppo_mini_batch_size")
    if bsz is not None and mini is not None and bsz < mini:
        yield _report(
            ctx,
            "VL302",
            f"data.train_batch_size={bsz} is smaller than {A}.ppo_mini_batch_size={mini}; verl stops in its config validation",
            ["data.train_batch_size", f"{A}.ppo_mini_batch_size"],
            _anchor(ctx, "data.train_batch_size", f"{A}.ppo_mini_batch_size"),
            f"set {A}.ppo_mini_batch_size to at most {bsz}",
        )


@rule(
    "VL303",
    "micro-batch-set-twice",
    "error",
    apps=VALIDATED_APPS,
    evidence=[Evidence((*VALIDATION, "verl/workers/config/actor.py"), r"You have set both")],
    bad=[main_ppo(f"{R}.log_prob_micro_batch_size=64", f"{R}.log_prob_micro_batch_size_per_gpu=8")],
    good=[main_ppo(f"{R}.log_prob_micro_batch_size_per_gpu=8")],
)
def micro_batch_twice(ctx):
    """Both the deprecated global micro batch size and its `_per_gpu` form are set.

    ## What it does
    Checks the pairs `rollout.log_prob_micro_batch_size{,_per_gpu}`,
    `ref.log_prob_micro_batch_size{,_per_gpu}` (when a reference model is used) and
    `actor.ppo_micro_batch_size{,_per_gpu}` when dynamic batch size is off.

    ## Why is this bad?
    verl raises "You have set both '...micro_batch_size' AND '..._per_gpu'".

    ## Use instead
    Only the `_per_gpu` key.

    ## Where in verl
    verl 0.9.1 `verl/utils/config.py:131-182` and `verl/workers/config/actor.py:244-257`;
    verl 0.7.1 `verl/utils/config.py:117-178`.
    """
    if ctx.flag(f"{A}.use_dynamic_bsz") is not False:
        return
    uses_ref = ctx.flag(f"{A}.use_kl_loss") or ctx.flag("algorithm.use_kl_in_reward")
    pairs = [(R, "log_prob_micro_batch_size"), (A, "ppo_micro_batch_size")]
    if uses_ref:
        pairs.append(("actor_rollout_ref.ref", "log_prob_micro_batch_size"))
    for section, name in pairs:
        glob, per_gpu = ctx.get(f"{section}.{name}", None), ctx.get(f"{section}.{name}_per_gpu", None)
        if isinstance(glob, int) and isinstance(per_gpu, int) and not isinstance(glob, bool):
            yield _report(
                ctx,
                "VL303",
                f"both {section}.{name}={glob} and {section}.{name}_per_gpu={per_gpu} are set; verl raises ValueError",
                [f"{section}.{name}", f"{section}.{name}_per_gpu"],
                f"{section}.{name}",
                f"remove {section}.{name} (deprecated) and keep {name}_per_gpu",
            )


# The worker that runs the actor update, and the check each has on the mini batch.
ENGINE_DP_ASSERT = Evidence(("verl/workers/engine_workers.py",), r"mini_batch_size % self\.engine\.get_data_parallel_size\(\) == 0")
LEGACY_POSITIVE = Evidence(("verl/workers/fsdp_workers.py",), r"ppo_mini_batch_size > 0")
LEGACY_CHOICE = Evidence(("verl/trainer/main_ppo.py",), r"use_legacy_worker_impl")
LEGACY_IMPORT = Evidence(("verl/trainer/main_ppo.py",), r"verl\.workers\.fsdp_workers import")


def _actor_worker(ctx) -> str | None:
    """"engine" (verl/workers/engine_workers.py), "legacy" (verl/workers/{fsdp,megatron}_workers.py)
    or None (unknown), as the tree's main_ppo chooses it."""
    if ctx.verl_has(LEGACY_CHOICE):
        choice = ctx.get("trainer.use_legacy_worker_impl", "auto")
        return {"auto": "legacy", "enable": "legacy", "disable": "engine"}.get(choice) if isinstance(choice, str) else None
    if ctx.verl_has(LEGACY_IMPORT):
        return "legacy"  # verl <= 0.5: the legacy workers are the only ones
    return "engine" if ctx.verl_has(ENGINE_DP_ASSERT) else None


@rule(
    "VL304",
    "mini-batch-not-divisible-by-dp",
    "error",
    bad=[
        (main_ppo("actor_rollout_ref.actor.ppo_mini_batch_size=12", "data.train_batch_size=96"), ">=0.8"),  # engine worker
        (main_ppo("actor_rollout_ref.actor.ppo_mini_batch_size=4", "data.train_batch_size=96"), "<0.8"),  # legacy: 4 // 8 GPUs = 0
        (main_ppo("actor_rollout_ref.actor.ppo_mini_batch_size=12", "data.train_batch_size=96"), "<0.8"),  # legacy: truncated to 1 (a warning)
    ],
    good=[
        main_ppo("actor_rollout_ref.actor.ppo_mini_batch_size=16", "data.train_batch_size=96"),
    ],
    evidence=[ENGINE_DP_ASSERT, LEGACY_POSITIVE],
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
    `ppo_micro_batch_size_per_gpu` when dynamic batch size is off.

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
    verl 0.7.1 `verl/workers/fsdp_workers.py:249-268`; verl 0.4.1 `verl/workers/fsdp_workers.py:156-166`.
    verl 0.1-0.3 divides before multiplying by `n` and checks neither: the rule does not apply.
    """
    strategy = ctx.text(f"{A}.strategy")
    if strategy not in ("fsdp", "fsdp2", "megatron"):
        return
    worker = _actor_worker(ctx)
    if worker is None or not ctx.verl_has(ENGINE_DP_ASSERT if worker == "engine" else LEGACY_POSITIVE):
        return
    if strategy == "megatron":
        if worker != "engine" or ctx.get(f"{A}.megatron.dynamic_context_parallel", False) is not False:
            return  # the legacy worker only truncates; dynamic CP makes the engine's dp 1
        shard_keys = [f"{A}.megatron.{k}" for k in MEGATRON_PARALLEL]
    else:
        shard_keys = [f"{A}.ulysses_sequence_parallel_size"]
    n_gpus, _ = _gpus(ctx)
    mini, n = ctx.int(f"{A}.ppo_mini_batch_size"), ctx.int(f"{R}.n")
    shards = [_size(ctx, k) for k in shard_keys]
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
        yield _report(
            ctx,
            "VL304",
            f"ppo_mini_batch_size={mini} × rollout.n={n} = {total} does not split over {dp} data-parallel ranks "
            f"(n_gpus={n_gpus} / {how})",
            inputs,
            _anchor(ctx, f"{A}.ppo_mini_batch_size", f"{R}.n", *GPUS),
            f"make ppo_mini_batch_size × rollout.n a multiple of {dp}",
        )
        return
    if total % dp:  # the legacy worker: no error, but not the mini batch the script asks for
        per_gpu = total // dp
        yield _report(
            ctx,
            "VL304",
            f"ppo_mini_batch_size={mini} × rollout.n={n} = {total} does not split over {dp} data-parallel ranks "
            f"(n_gpus={n_gpus} / {how}): this verl's worker silently truncates each rank's mini batch to "
            f"{total} // {dp} = {per_gpu}, so a mini batch is {per_gpu * dp} samples, not {total}",
            inputs,
            _anchor(ctx, f"{A}.ppo_mini_batch_size", f"{R}.n", *GPUS),
            f"make ppo_mini_batch_size × rollout.n a multiple of {dp}",
            Severity.WARNING,
        )
    micro = ctx.int(f"{A}.ppo_micro_batch_size_per_gpu")
    if ctx.flag(f"{A}.use_dynamic_bsz") is False and micro and (total // dp) % micro:
        yield _report(
            ctx,
            "VL304",
            f"the per-GPU mini batch {total // dp} (= {total} / {dp}) is not divisible by ppo_micro_batch_size_per_gpu={micro}",
            [*inputs, f"{A}.ppo_micro_batch_size_per_gpu"],
            _anchor(ctx, f"{A}.ppo_micro_batch_size_per_gpu", f"{A}.ppo_mini_batch_size"),
            f"use a ppo_micro_batch_size_per_gpu that divides {total // dp}",
        )


# How the tree scales the per-GPU token budget: × Ulysses SP (FSDP), × context parallel (Megatron).
BUDGET_SCALE = {
    "fsdp": (
        Evidence(("verl/workers/actor/dp_actor.py",), r"max_token_len\w*\s*\*\s*self\.ulysses_sequence_parallel_size"),
        Evidence(("verl/workers/engine/utils.py",), r"max_token_len_per_gpu\s*\*\s*sp_size"),
    ),
    "megatron": (
        Evidence(("verl/workers/actor/megatron_actor.py",), r"max_token_len\w*\s*\*\s*self\.config\.megatron\.context_parallel_size"),
        Evidence(("verl/workers/engine/megatron/*.py",), r"sp_size\s*=\s*self\.engine_config\.context_parallel_size"),
    ),
}


@rule(
    "VL305",
    "max-token-len-below-sequence-length",
    "error",
    bad=[main_ppo(f"{A}.use_dynamic_bsz=True", f"{A}.ppo_max_token_len_per_gpu=4096", "data.max_prompt_length=2048", "data.max_response_length=4096")],
    good=[main_ppo(f"{A}.use_dynamic_bsz=True", f"{A}.ppo_max_token_len_per_gpu=8192", "data.max_prompt_length=2048", "data.max_response_length=4096")],
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
    scale = _size(ctx, scale_key)
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
                key = _anchor(ctx, f"{A}.ppo_max_token_len_per_gpu", "data.max_response_length", "data.max_prompt_length")
            yield _report(
                ctx,
                "VL305",
                f"{section}.{budget_key}={budget} × {scale_name}={scale} is below "
                f"max_prompt_length + max_response_length = {seq}; verl asserts once a long sample arrives",
                [f"{section}.{budget_key}", f"{section}.{flag}", "data.max_prompt_length", "data.max_response_length", scale_key],
                key,
                f"set {budget_key} to at least {-(-seq // scale)}",
            )
            return


@rule(
    "VL306",
    "rollout-parallel-does-not-divide-gpus",
    "error",
    bad=[main_ppo(f"{R}.tensor_model_parallel_size=3")],
    good=[main_ppo(f"{R}.tensor_model_parallel_size=4")],
    evidence=[Evidence(("verl/workers/*_workers.py",), r"is not divisible by infer_")],
)
def rollout_world(ctx):
    """The rollout replica size (TP × DP × PP) does not divide the GPU count.

    ## What it does
    With `R = tensor_model_parallel_size × data_parallel_size × pipeline_model_parallel_size`
    of the rollout and `W = n_gpus_per_node × nnodes`, flags `W % R != 0`, and `R` larger than
    a node but not a multiple of `n_gpus_per_node`.

    ## Why is this bad?
    The worker asserts "rollout world_size ... is not divisible by infer_world_size" in
    `init_model`, and `RolloutReplica` asserts on multi-node replicas — after the GPUs are allocated.

    ## Use instead
    Rollout parallel sizes whose product divides the GPU count.

    ## Where in verl
    verl 0.9.1 `verl/workers/engine_workers.py:652-661`, `verl/workers/rollout/replica.py:107-117`;
    verl 0.7.1 `verl/workers/fsdp_workers.py:697-700`, `verl/workers/engine_workers.py:552-555`.
    """
    n_gpus, gpus_text = _gpus(ctx)
    per_node = ctx.int(GPUS[0])
    tp, dp, pp = (_size(ctx, f"{R}.{k}") for k in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size"))
    if None in (n_gpus, tp, dp, pp) or tp * dp * pp <= 0:
        return
    size = tp * dp * pp
    inputs = [f"{R}.{k}" for k in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size")] + list(GPUS)
    key = _anchor(ctx, f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size", f"{R}.pipeline_model_parallel_size", *GPUS)
    if n_gpus % size:
        yield _report(
            ctx,
            "VL306",
            f"rollout TP×DP×PP = {tp}×{dp}×{pp} = {size} does not divide the {n_gpus} GPUs ({gpus_text})",
            inputs,
            key,
            f"use rollout parallel sizes whose product divides {n_gpus}",
        )
    elif per_node and size > per_node and size % per_node:
        yield _report(
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
    evidence=[Evidence(ROLLOUT_CONFIG, r"expert_parallel_size must be equal to tensor_model_parallel_size \* data_parallel_size")],
    bad=[main_ppo(f"{R}.expert_parallel_size=4", f"{R}.tensor_model_parallel_size=2", f"{R}.data_parallel_size=1")],
    good=[main_ppo(f"{R}.expert_parallel_size=4", f"{R}.tensor_model_parallel_size=2", f"{R}.data_parallel_size=2")],
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
    ep, tp, dp = (ctx.int(f"{R}.{k}") for k in ("expert_parallel_size", "tensor_model_parallel_size", "data_parallel_size"))
    if None in (ep, tp, dp) or ep <= 1 or ep == tp * dp:
        return
    yield _report(
        ctx,
        "VL307",
        f"rollout.expert_parallel_size={ep} but tensor_model_parallel_size × data_parallel_size = {tp}×{dp} = {tp * dp}; "
        "RolloutConfig asserts they are equal",
        [f"{R}.expert_parallel_size", f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size"],
        _anchor(ctx, f"{R}.expert_parallel_size", f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size"),
        f"set {R}.expert_parallel_size={tp * dp}, or change TP/DP so that TP × DP = {ep}",
    )


@rule(
    "VL308",
    "rollout-pipeline-parallel-unsupported",
    "error",
    evidence=[Evidence(ROLLOUT_CONFIG, r"not implemented pipeline_model_parallel_size > 1")],
    bad=[main_ppo(f"{R}.name=vllm", f"{R}.pipeline_model_parallel_size=2")],
    good=[main_ppo(f"{R}.name=vllm", f"{R}.tensor_model_parallel_size=4")],
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
        yield _report(
            ctx,
            "VL308",
            f"rollout.pipeline_model_parallel_size={pp} is not implemented for the {name} rollout (NotImplementedError in the workers)",
            [f"{R}.pipeline_model_parallel_size", f"{R}.name"],
            f"{R}.pipeline_model_parallel_size",
            f"use {R}.pipeline_model_parallel_size=1 and raise tensor_model_parallel_size instead",
        )


@rule(
    "VL309",
    "megatron-parallel-does-not-divide-gpus",
    "error",
    apps=VALIDATED_APPS,
    evidence=[Evidence(VALIDATION, r"must be divisible by model_parallel_size")],
    bad=[
        (main_ppo("model_engine=megatron", f"{A}.megatron.tensor_model_parallel_size=3"), ">=0.8"),
        ("python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer actor_rollout_ref.rollout.name=vllm "
         f"{A}.megatron.tensor_model_parallel_size=3\n", "<0.8"),
    ],
    good=[
        (main_ppo("model_engine=megatron", f"{A}.megatron.tensor_model_parallel_size=4"), ">=0.8"),
        ("python3 -m verl.trainer.main_ppo --config-name=ppo_megatron_trainer actor_rollout_ref.rollout.name=vllm "
         f"{A}.megatron.tensor_model_parallel_size=4\n", "<0.8"),
    ],
)
def megatron_parallel(ctx):
    """Megatron TP × PP × CP of the actor does not divide the GPU count.

    ## What it does
    Checks `n_gpus % (tensor × pipeline × context parallel size) == 0` for the Megatron actor.

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
    n_gpus, gpus_text = _gpus(ctx)
    tp, pp, cp = (_size(ctx, f"{A}.megatron.{k}") for k in MEGATRON_PARALLEL)
    if None in (n_gpus, tp, pp, cp) or tp * pp * cp <= 0:
        return
    if n_gpus % (tp * pp * cp):
        keys = [f"{A}.megatron.{k}" for k in MEGATRON_PARALLEL]
        yield _report(
            ctx,
            "VL309",
            f"Megatron TP×PP×CP = {tp}×{pp}×{cp} = {tp * pp * cp} does not divide the {n_gpus} GPUs ({gpus_text})",
            [*keys, *GPUS],
            _anchor(ctx, *keys, *GPUS),
            f"choose Megatron parallel sizes whose product divides {n_gpus}",
        )


@rule(
    "VL310",
    "ulysses-sp-requires-remove-padding",
    "error",
    bad=[main_ppo(f"{A}.ulysses_sequence_parallel_size=2", "actor_rollout_ref.model.use_remove_padding=False")],
    good=[main_ppo(f"{A}.ulysses_sequence_parallel_size=2", "actor_rollout_ref.model.use_remove_padding=True")],
    evidence=[Evidence(("verl/workers/config/actor.py", "verl/trainer/ppo/ray_trainer.py"), r"sequence parallelism for actor")],
)
def ulysses_padding(ctx):
    """Ulysses sequence parallelism needs `use_remove_padding=True`.

    ## What it does
    Flags `actor.ulysses_sequence_parallel_size > 1` with `actor_rollout_ref.model.use_remove_padding=False`.

    ## Why is this bad?
    verl raises "When using sequence parallelism for actor/ref policy, you must enable
    `use_remove_padding`".

    ## Use instead
    `actor_rollout_ref.model.use_remove_padding=True`.

    ## Where in verl
    verl 0.9.1 `verl/workers/config/actor.py:331-341`; verl 0.7.1 `verl/workers/config/actor.py` (`FSDPActorConfig.validate`).
    """
    sp = ctx.int(f"{A}.ulysses_sequence_parallel_size")
    if sp is not None and sp > 1 and ctx.flag("actor_rollout_ref.model.use_remove_padding") is False:
        yield _report(
            ctx,
            "VL310",
            f"actor.ulysses_sequence_parallel_size={sp} requires actor_rollout_ref.model.use_remove_padding=True; verl raises ValueError",
            [f"{A}.ulysses_sequence_parallel_size", "actor_rollout_ref.model.use_remove_padding"],
            _anchor(ctx, "actor_rollout_ref.model.use_remove_padding", f"{A}.ulysses_sequence_parallel_size"),
            "set actor_rollout_ref.model.use_remove_padding=True",
        )


# verl 0.9 raises max_num_batched_tokens to max_model_len itself (with a warning).
BATCHED_TOKENS_RAISED = Evidence(VLLM_SERVER, r"raising max_num_batched_tokens from")


@rule(
    "VL311",
    "max-num-batched-tokens-below-max-model-len",
    "error",
    evidence=[Evidence(VLLM_SERVER, r"max_num_batched_tokens")],
    unless=[BATCHED_TOKENS_RAISED],
    bad=[main_ppo(f"{R}.enable_chunked_prefill=False", f"{R}.max_model_len=16384", f"{R}.max_num_batched_tokens=8192")],
    good=[main_ppo(f"{R}.enable_chunked_prefill=False", f"{R}.max_model_len=16384", f"{R}.max_num_batched_tokens=16384")],
)
def batched_tokens(ctx):
    """Without chunked prefill, max_num_batched_tokens must be at least max_model_len.

    ## What it does
    Flags `enable_chunked_prefill=False` with `max_num_batched_tokens < max_model_len`.

    ## Why is this bad?
    vLLM's SchedulerConfig raises "max_num_batched_tokens (...) is smaller than
    max_model_len" when the rollout server starts. verl 0.9 raises the value itself with a
    warning: the rule applies to trees that pass the value to vLLM as it is.

    ## Use instead
    `max_num_batched_tokens >= max_model_len`, or keep chunked prefill on.

    ## Where in verl
    verl 0.7.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:309-312` (passes both to vLLM);
    verl 0.9.1 `vllm_async_server.py:1113-1119` (the fix-up that makes this moot).
    """
    if ctx.flag(f"{R}.enable_chunked_prefill") is not False:
        return
    tokens, max_len = ctx.int(f"{R}.max_num_batched_tokens"), ctx.int(f"{R}.max_model_len")
    if tokens is not None and max_len is not None and tokens < max_len:
        yield _report(
            ctx,
            "VL311",
            f"max_num_batched_tokens={tokens} < max_model_len={max_len} with chunked prefill off; vLLM refuses to start",
            [f"{R}.max_num_batched_tokens", f"{R}.max_model_len", f"{R}.enable_chunked_prefill"],
            _anchor(ctx, f"{R}.max_num_batched_tokens", f"{R}.max_model_len", f"{R}.enable_chunked_prefill"),
            f"set {R}.max_num_batched_tokens={max_len}",
        )


@rule(
    "VL312",
    "max-model-len-below-sequence-budget",
    "warning",
    evidence=[Evidence(VLLM_SERVER, r"max_possible_tokens = self\.config\.max_model_len - len\(prompt_ids\)")],
    bad=[main_ppo(f"{R}.max_model_len=2048", "data.max_prompt_length=1024", "data.max_response_length=2048")],
    good=[main_ppo(f"{R}.max_model_len=4096", "data.max_prompt_length=1024", "data.max_response_length=2048")],
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
    yield _report(
        ctx,
        "VL312",
        f"rollout.max_model_len={max_len} < max_prompt_length + max_response_length = {prompt + response}; "
        "responses are silently truncated",
        [f"{R}.max_model_len", "data.max_prompt_length", "data.max_response_length"],
        _anchor(ctx, f"{R}.max_model_len", "data.max_response_length", "data.max_prompt_length"),
        f"set {R}.max_model_len={prompt + response} or more",
    )


@rule(
    "VL313",
    "val-do-sample-needs-temperature",
    "error",
    apps=VALIDATED_APPS,
    evidence=[Evidence(VALIDATION, r"validation gen temperature should be greater than 0")],
    bad=[main_ppo(f"{R}.val_kwargs.do_sample=True", f"{R}.temperature=0")],
    good=[main_ppo(f"{R}.val_kwargs.do_sample=True", f"{R}.temperature=0.7")],
)
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
        yield _report(
            ctx,
            "VL313",
            f"val_kwargs.do_sample=True needs rollout.temperature > 0 (got {temp}); validate_config asserts",
            [f"{R}.temperature", f"{R}.val_kwargs.do_sample"],
            _anchor(ctx, f"{R}.temperature", f"{R}.val_kwargs.do_sample"),
            f"set {R}.temperature to a positive value such as 1.0",
        )


@rule(
    "VL314",
    "vllm-dp-needs-gpus-per-node-multiple-of-tp",
    "error",
    # Older servers assert this only with expert parallelism (where VL307 covers TP × DP).
    evidence=[Evidence(VLLM_SERVER, r"data_parallel_size > 1:\s*\n\s*assert self\.gpus_per_node % self\.config\.tensor_model_parallel_size == 0")],
    bad=[main_ppo(f"{R}.name=vllm", f"{R}.data_parallel_size=2", f"{R}.tensor_model_parallel_size=8", "trainer.n_gpus_per_node=4", "trainer.nnodes=4")],
    good=[main_ppo(f"{R}.name=vllm", f"{R}.data_parallel_size=2", f"{R}.tensor_model_parallel_size=2", "trainer.n_gpus_per_node=8")],
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
    tp, dp, pp = (ctx.int(f"{R}.{k}") for k in ("tensor_model_parallel_size", "data_parallel_size", "pipeline_model_parallel_size"))
    if None in (per_node, tp, dp, pp) or dp <= 1 or tp <= 0:
        return
    local = min(per_node, tp * dp * pp)
    if local % tp:
        yield _report(
            ctx,
            "VL314",
            f"vLLM with data_parallel_size={dp}: min(n_gpus_per_node={per_node}, TP×DP×PP={tp * dp * pp}) = {local} "
            f"is not a multiple of tensor_model_parallel_size={tp}; the rollout server asserts at launch",
            [f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size", f"{R}.pipeline_model_parallel_size", GPUS[0]],
            _anchor(ctx, f"{R}.tensor_model_parallel_size", f"{R}.data_parallel_size", GPUS[0]),
            f"use a tensor_model_parallel_size that divides {per_node}",
        )
