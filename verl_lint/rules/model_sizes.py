"""3xx sizes against the model a launch trains: rollout and Megatron tensor parallelism and
Ulysses sequence parallelism against the attention and KV heads, sequence lengths against the
model's context, expert parallelism on a dense model.

The model's facts come from `models.py` (a local `config.json`, the Hugging Face cache, the
bundled table), only for a model path the user set to a value known before run time: a path
from `$VAR` leaves these checks silent, an unknown model is said once per run (VL329), a model
config that cannot be read once per launch (VL328).
"""

from __future__ import annotations

from collections.abc import Iterator
from weakref import WeakKeyDictionary

from packaging.version import Version

from ..evidence import Evidence
from ..model import Severity
from ..models import ModelFacts, ModelProblem, resolve
from ..registry import REGISTRY, rule
from .sizes import ULYSSES as SP
from .sizes import A, R, anchor_key, report_unless_default, ulysses_size

M = "actor_rollout_ref.model"
ROLLOUT_FILES = ("verl/workers/rollout/*/*.py", "verl/workers/rollout/*.py")
MONKEY_PATCH = ("verl/models/transformers/monkey_patch.py",)
# The model's context checked where the rollout is built: verl <= 0.6 asserts, 0.7+ raises on an explicit larger
# max_model_len.
CONTEXT_ASSERT = Evidence(ROLLOUT_FILES, r"model context length should be greater than total sequence length")
CONTEXT_RAISE = Evidence(
    ROLLOUT_FILES, r"max_model_len \(\{self\.config\.max_model_len\}\) should be less than or equal to"
)
MEGATRON = Evidence(("verl/workers/megatron_workers.py",), r"tensor_model_parallel_size")
# verl hands the launch's Megatron parallel sizes to Megatron-Core's TransformerConfig: its own
# converter (0.4+) or, on the engine workers (0.8+), the bridge's provider.
MCORE_CONFIG = Evidence(
    ("verl/models/mcore/config_converter.py", "verl/workers/engine/megatron/transformer_impl.py"),
    r"\"pipeline_model_parallel_size\": (mpu\.get_pipeline_model_parallel_world_size\(\)|self\.engine_config)",
)
# Fields of the model's config a launch may override (`model.override_config`) that the checks read.
_STRUCTURE = (
    "num_attention_heads",
    "num_key_value_heads",
    "num_hidden_layers",
    "hidden_size",
    "head_dim",
    "num_experts",
    "num_local_experts",
    "n_routed_experts",
)

_facts: WeakKeyDictionary = WeakKeyDictionary()  # Context -> {model key prefix: facts}


def model_facts(ctx, prefix: str = M) -> ModelFacts | ModelProblem | None:
    """The facts of the model at `{prefix}.path`, when the user set that path to a value known
    now; None otherwise (unknown, verl's default path, or a model none of the sources knows).
    Reading the path leaves no trace in VL300's list: an unknown model path is not a size
    value the script failed to give."""
    return _resolved(ctx, prefix)[1]


def _resolved(ctx, prefix: str) -> tuple:
    """(what the model's sources say, the facts after the launch's override_config)."""
    cache = _facts.setdefault(ctx, {})
    if prefix not in cache:
        cache[prefix] = _facts_of(ctx, prefix)
    return cache[prefix]


def _path(ctx, prefix: str) -> str | None:
    """The model path the user set, when known now; read without a trace in VL300's list."""
    reads, ctx.unknown_reads = ctx.unknown_reads, None
    try:
        path = ctx.text(f"{prefix}.path")
        return path.strip() if path and path.strip() and ctx.user_set(f"{prefix}.path") else None
    finally:
        ctx.unknown_reads = reads


def _facts_of(ctx, prefix: str) -> tuple:
    path = _path(ctx, prefix)
    if path is None:
        return None, None
    env = {name: (v.value if v.unknown is None else None) for name, v in ctx.env.items()}
    found = resolve(path, env, ctx.models_online)
    reads, ctx.unknown_reads = ctx.unknown_reads, None
    try:
        override = ctx.get(f"{prefix}.override_config", None)
    finally:
        ctx.unknown_reads = reads
    if isinstance(found, ModelFacts) and override is not None:
        return found, _overridden(found, override)
    return found, found


def _overridden(facts: ModelFacts, override) -> ModelFacts | None:
    """The facts with the launch's `override_config` applied to the fields the checks read;
    None (unknown) when it overrides the model's structure or is only known at run time."""
    items = getattr(override, "items", None)
    if items is None:
        return None
    values = dict(items())
    nested = values.pop("model_config", None)  # verl's Megatron path reads override_config.model_config too
    if nested is not None:
        if not hasattr(nested, "items"):
            return None
        values.update(nested.items())
    if any(k in values for k in _STRUCTURE):
        return None
    if "max_position_embeddings" in values:
        v = values["max_position_embeddings"]
        if not isinstance(v, int) or isinstance(v, bool):
            return None
        facts = facts._replace(max_positions=v)
    if "rope_scaling" in values:
        return None
    return facts


def known(ctx, prefix: str = M) -> ModelFacts | None:
    got = model_facts(ctx, prefix)
    return got if isinstance(got, ModelFacts) else None


def _divides_kv(kv: int, size: int) -> bool:
    """KV heads split over `size` ranks, or replicated when fewer (both engines and verl allow it)."""
    return kv % size == 0 if kv >= size else size % kv == 0


@rule(
    "VL320",
    "rollout-tp-does-not-divide-heads",
    "error",
    size_check=True,
    evidence=[Evidence(ROLLOUT_FILES, r"tensor_parallel_size")],
)
def rollout_tp_heads(ctx) -> Iterator:
    """The rollout's tensor-parallel size does not divide the model's attention (or KV) heads.

    ## What it does
    For the vLLM and SGLang rollouts, flags `rollout.tensor_model_parallel_size` (TP) when the
    model's `num_attention_heads` is not a multiple of TP, or its `num_key_value_heads` is
    neither a multiple of TP nor a divisor of it (fewer KV heads than TP are replicated).

    ## Why is this bad?
    vLLM's `ModelConfig.verify_with_parallel_config` raises "Total number of attention heads
    (H) must be divisible by tensor parallel size (T)", and the engines' attention layers assert
    the same of the KV heads, when the rollout engine starts: after Ray and the GPUs are up.

    ## Use instead
    A TP that divides the attention heads (28 heads: 1, 2, 4, 7, 14 or 28).

    ## Where in verl
    verl passes the value as the engine's `tensor_parallel_size`: verl 0.9.1
    `verl/workers/rollout/vllm_rollout/vllm_async_server.py`, verl 0.5.0
    `verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py`; the check is vLLM's
    (`vllm/config`, `verify_with_parallel_config`) and SGLang's model layers'.
    """
    facts = known(ctx)  # first: without a model, the sizes are not "left to run time" for this rule (VL300)
    if facts is None or ctx.text(f"{R}.name") not in ("vllm", "sglang"):
        return
    tp = ctx.int(f"{R}.tensor_model_parallel_size")
    if tp is None or tp <= 1:
        return
    problem = ""
    if facts.heads % tp:
        problem = f"its {facts.heads} attention heads"
    elif not facts.mla and not _divides_kv(facts.kv_heads, tp):
        problem = f"its {facts.kv_heads} KV heads (neither a multiple of TP nor a divisor of it)"
    if problem:
        inputs = [f"{R}.tensor_model_parallel_size", f"{M}.path"]
        fits = [
            n
            for n in range(1, facts.heads + 1)
            if facts.heads % n == 0 and (facts.mla or _divides_kv(facts.kv_heads, n))
        ]
        yield report_unless_default(
            ctx,
            "VL320",
            f"rollout tensor_model_parallel_size={tp} does not divide {problem} of {facts.name}; "
            f"{ctx.text(f'{R}.name')} refuses to start",
            inputs,
            anchor_key(ctx, *inputs),
            f"use a rollout TP among {', '.join(map(str, [n for n in fits if n <= max(tp, 8)]))}",
        )


ULYSSES = {  # role -> (its section, its model)
    "actor": (A, M),
    "ref": ("actor_rollout_ref.ref", M),
    "critic": ("critic", "critic.model"),
}


@rule(
    "VL321",
    "ulysses-sp-does-not-divide-heads",
    "error",
    size_check=True,
    evidence=[Evidence(MONKEY_PATCH, r"assert num_attention_heads % ulysses_sp_size == 0")],
)
def ulysses_heads(ctx) -> Iterator:
    """The Ulysses sequence-parallel size does not divide the model's attention (or KV) heads.

    ## What it does
    For the FSDP actor, reference and critic, flags the Ulysses sequence-parallel size (SP) when
    the model's `num_attention_heads` is not a multiple of SP, or its `num_key_value_heads` is
    neither a multiple of SP nor a divisor of it. SP is the role's
    `ulysses_sequence_parallel_size`, or, where the tree has it (0.7+) and that is 1, the role's
    `fsdp_config.ulysses_sequence_parallel_size` (verl copies the first into the second when it
    is > 1). The reference policy is checked where the user set its own SP (by default it
    follows the actor's).

    ## Why is this bad?
    `apply_monkey_patch` asserts both when the model is built with SP > 1, in the workers,
    after the GPUs are allocated.

    ## Use instead
    An SP that divides the attention heads and divides (or is a multiple of) the KV heads.

    ## Where in verl
    verl 0.9.1 `verl/models/transformers/monkey_patch.py:343-350` (`apply_monkey_patch`),
    `verl/workers/config/actor.py:328-329` (the copy into fsdp_config); verl 0.7.1 the same.
    """
    for role, (section, prefix) in ULYSSES.items():
        keys = (f"{section}.{SP}", f"{section}.fsdp_config.{SP}")
        if role != "actor" and not any(map(ctx.set_by_override, keys)):  # not only through the actor's value
            continue
        facts = known(ctx, prefix)
        if facts is None or (ctx.text(f"{section}.strategy") or "fsdp") not in ("fsdp", "fsdp2"):
            continue
        sp_key, sp = ulysses_size(ctx, section)
        if sp is None or sp <= 1:
            continue
        if facts.heads % sp:
            problem = f"{facts.heads} attention heads"
        elif not _divides_kv(facts.kv_heads, sp):
            problem = f"{facts.kv_heads} KV heads (neither a multiple of SP nor a divisor of it)"
        else:
            continue
        inputs = [sp_key, f"{prefix}.path"]
        yield report_unless_default(
            ctx,
            "VL321",
            f"{role} {sp_key.removeprefix(section + '.')}={sp} does not divide the {problem} of {facts.name}; verl "
            "asserts when the model is built",
            inputs,
            anchor_key(ctx, *inputs),
            f"use an SP that divides {facts.heads} (and {facts.kv_heads} KV heads)",
        )


@rule(
    "VL322",
    "sequence-exceeds-model-context",
    "error",
    size_check=True,
    evidence=[CONTEXT_ASSERT, CONTEXT_RAISE],
    # (a batched-token budget that holds the sequence: verl 0.3-0.6 also checks that, VL317)
)
def context_length(ctx) -> Iterator:
    """Prompt plus response length (or rollout.max_model_len) exceeds the model's context.

    ## What it does
    With `L = data.max_prompt_length + data.max_response_length` and the model's
    `max_position_embeddings` (P):
    - where the rollout asserts on the model's context (verl up to 0.6), flags `L > P`
      (times the `rope_scaling` factor when the model's config has one, as verl computes it);
    - where the rollout server derives `max_model_len` from the model (verl 0.7+), flags an
      explicit `rollout.max_model_len > P` (verl raises), and, without one, `L > P` as a
      warning: `max_model_len` becomes P and every response is cut to `P - prompt`.

    ## Why is this bad?
    verl asserts "model context length should be greater than total sequence length" when the
    rollout is built, or raises "max_model_len (...) should be less than or equal to
    max_position_embeddings (...)" when its server starts: after the GPUs are up. verl's own
    check comes before vLLM's, so `VLLM_ALLOW_LONG_MAX_MODEL_LEN` does not change either.

    ## Use instead
    Lengths within the model's context, or a model (or `rope_scaling` override) with a longer one.

    ## Where in verl
    verl 0.5.0 `verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:105-135`;
    verl 0.9.1 `verl/workers/rollout/vllm_rollout/vllm_async_server.py:1101-1111` (`_validate_configs`).
    """
    facts = known(ctx)
    if facts is None or facts.max_positions is None or ctx.text(f"{R}.name") not in ("vllm", "sglang", "trtllm"):
        return
    prompt, response = ctx.int("data.max_prompt_length"), ctx.int("data.max_response_length")
    budget = None if None in (prompt, response) else prompt + response
    lengths = ["data.max_prompt_length", "data.max_response_length", f"{M}.path"]
    p = facts.max_positions
    if ctx.verl_has(CONTEXT_ASSERT):
        limit = int(p * facts.rope_factor) if facts.rope_factor else p
        if budget is not None and budget > limit and (ctx.text(f"{R}.mode") or "sync") == "sync":
            scaled = f" × rope factor {facts.rope_factor:g}" if facts.rope_factor else ""
            yield report_unless_default(
                ctx,
                "VL322",
                f"max_prompt_length + max_response_length = {budget} exceeds the context of {facts.name} "
                f"(max_position_embeddings {p}{scaled} = {limit}); verl asserts when the rollout is built",
                lengths,
                anchor_key(ctx, *lengths),
                f"keep max_prompt_length + max_response_length <= {limit}",
            )
        return
    if not ctx.verl_has(CONTEXT_RAISE):
        return
    max_len = ctx.get(f"{R}.max_model_len", None)
    if isinstance(max_len, int) and not isinstance(max_len, bool) and max_len > p:
        inputs = [f"{R}.max_model_len", f"{M}.path"]
        yield report_unless_default(
            ctx,
            "VL322",
            f"rollout.max_model_len={max_len} exceeds max_position_embeddings {p} of {facts.name}; "
            "the rollout server raises ValueError at start",
            inputs,
            anchor_key(ctx, *inputs),
            f"set {R}.max_model_len={p} or less",
        )
    elif max_len is None and budget is not None and budget > p:
        yield report_unless_default(
            ctx,
            "VL322",
            f"max_prompt_length + max_response_length = {budget} exceeds max_position_embeddings {p} of {facts.name}, "
            f"which becomes rollout.max_model_len; responses are cut to {p} - prompt tokens",
            lengths,
            anchor_key(ctx, *lengths),
            f"keep max_prompt_length + max_response_length <= {p}",
            severity=Severity.WARNING,
        )


# Megatron-Core accepts a TP that is a multiple of the query groups (replicating them) from 0.16
# (`transformer_config.py`: "must be a multiple or divisor of"); up to 0.15 TP must divide them.
MCORE_REPLICATES_KV = Version("0.16.0rc0")
MEGATRON_TP = {
    "actor": f"{A}.megatron.tensor_model_parallel_size",
    "ref": "actor_rollout_ref.ref.megatron.tensor_model_parallel_size",
}


@rule(
    "VL323",
    "megatron-tp-does-not-divide-heads",
    "error",
    size_check=True,
    evidence=[MEGATRON, MCORE_CONFIG],
)
def megatron_tp_heads(ctx) -> Iterator:
    """Megatron's tensor-parallel size does not divide the model's attention heads or query groups.

    ## What it does
    For the Megatron actor (and a reference policy with its own TP), flags
    `megatron.tensor_model_parallel_size` (TP) when the model's `num_attention_heads` or its
    `num_key_value_heads` (Megatron's `num_query_groups`) is not a multiple of TP.

    ## Why is this bad?
    Megatron-Core's `TransformerConfig` raises "num_attention_heads (H) must be a multiple of
    tensor_model_parallel_size (T)" and the same of `num_query_groups`, when verl builds the
    model in the workers. From Megatron-Core 0.16 a TP that is a multiple of the query groups is
    accepted (they are replicated): where the installed megatron-core is 0.16 or later that case
    is not reported, and where its version is not known it is a warning.

    ## Use instead
    A TP that divides both (4 KV heads: TP 1, 2 or 4).

    ## Where in verl
    verl 0.9.1 `verl/workers/megatron_workers.py` builds the model's `TransformerConfig` from the
    Hugging Face config with these sizes; the check is Megatron-Core's
    (`megatron/core/transformer/transformer_config.py`, `__post_init__`).
    """
    facts = known(ctx)
    if facts is None or ctx.text(f"{A}.strategy") != "megatron":
        return
    mcore = ctx.versions.get("megatron_core")
    for role, key in MEGATRON_TP.items():
        tp = ctx.int(key)
        if tp is None or tp <= 1 or (role == "ref" and not ctx.set_by_override(key)):
            continue
        bad = [f"{facts.heads} attention heads"] if facts.heads % tp else []
        severity, replicated = None, facts.kv_heads % tp and tp % facts.kv_heads == 0
        if facts.kv_heads % tp:
            if replicated and mcore is not None and mcore >= MCORE_REPLICATES_KV:
                pass  # 0.16+ replicates query groups over a TP that is a multiple of them
            elif replicated and mcore is None and not bad:
                bad.append(f"{facts.kv_heads} query groups (KV heads)")
                severity = (
                    Severity.WARNING
                )  # refused up to Megatron-Core 0.15, accepted from 0.16: which one is unknown
            else:
                bad.append(f"{facts.kv_heads} query groups (KV heads)")
        if bad:
            fits = [n for n in range(1, facts.kv_heads + 1) if facts.heads % n == 0 and facts.kv_heads % n == 0]
            inputs = [key, f"{M}.path"]
            which = (
                f"Megatron-Core {mcore} raises when the model is built"
                if mcore is not None
                else "Megatron-Core up to 0.15 raises when the model is built (0.16+ replicates the query groups; "
                "its version is not known here)"
                if severity
                else "Megatron-Core raises when the model is built"
            )
            yield report_unless_default(
                ctx,
                "VL323",
                f"{role} megatron.tensor_model_parallel_size={tp} does not divide the {' and '.join(bad)} of "
                f"{facts.name}; {which}",
                inputs,
                anchor_key(ctx, *inputs),
                f"use a TP among {', '.join(map(str, fits))}",
                severity=severity,
            )


EXPERT_PARALLEL = (f"{R}.expert_parallel_size", f"{A}.megatron.expert_model_parallel_size")


@rule(
    "VL324",
    "expert-parallel-on-dense-model",
    "warning",
    size_check=True,
    evidence=[Evidence(("verl/workers/config/rollout.py",), r"expert_parallel_size")],
)
def expert_parallel_dense(ctx) -> Iterator:
    """Expert parallelism asked for a model without experts.

    ## What it does
    Flags `rollout.expert_parallel_size > 1` or `megatron.expert_model_parallel_size > 1` when
    the model's config has no experts (no `num_experts`, `num_local_experts` or `n_routed_experts`).

    ## Why is this bad?
    A dense model has no experts to spread: the setting has no effect, and the GPUs it groups
    for experts do nothing different; it usually means the launch was copied from a MoE one.

    ## Use instead
    Leave expert parallelism at 1 for a dense model.

    ## Where in verl
    verl 0.9.1 `verl/workers/config/rollout.py` (`expert_parallel_size`), `verl/workers/config/engine.py`
    (`expert_model_parallel_size`), passed to the engine and to Megatron-Core's parallel state.
    """
    facts = known(ctx)
    if facts is None or facts.moe:
        return
    for key in EXPERT_PARALLEL:
        ep = ctx.int(key)
        if (
            ep is not None
            and ep > 1
            and ctx.user_set(key)
            and (key.startswith(R) or ctx.text(f"{A}.strategy") == "megatron")
        ):
            yield ctx.diag(
                "VL324",
                f"{key.rsplit('.', 1)[-1]}={ep} but {facts.name} is a dense model (no experts): expert parallelism "
                "has no effect",
                key=key,
                help=f"set {key}=1",
                related=[f"{M}.path"],
            )


MODEL_RULES = ("VL320", "VL321", "VL322", "VL323", "VL324", "VL334", "VL335")


@rule(
    "VL328",
    "model-config-unreadable",
    "warning",
    size_check=True,
)
def unreadable(ctx) -> Iterator:
    """The model's config.json cannot be read: the checks against the model do not run.

    ## What it does
    Reports a model path that is a file rather than a directory, a directory without a
    readable `config.json`, a symbolic link loop, or a `config.json` that is not JSON, too
    large, or lacks the fields the checks need (attention heads, layers, hidden size).

    ## Why is this bad?
    verl loads the model's config with `AutoConfig.from_pretrained` at start-up and fails on
    the same file; the linter cannot check heads, lengths or memory against it.

    ## Use instead
    The path of a Hugging Face model directory (the one holding `config.json`).

    ## Where in verl
    verl 0.9.1 `verl/workers/config/model.py` (`HFModelConfig`: `AutoConfig.from_pretrained`).
    """
    for prefix in (M, "critic.model"):
        got = model_facts(ctx, prefix)
        if isinstance(got, ModelProblem):
            yield ctx.diag(
                "VL328",
                f"{got.message}; the checks against the model ({', '.join(MODEL_RULES)}) do not run",
                key=f"{prefix}.path",
                help="point the model path at a Hugging Face model directory",
            )


@rule(
    "VL329",
    "model-unknown",
    "info",
    size_check=True,
)
def unknown_model(ctx) -> Iterator:
    """The launch names a model verl-lint knows nothing about: the checks against it do not run.

    ## What it does
    Says, once per run, that a model path the script sets is neither a local
    directory with a `config.json`, nor in the Hugging Face cache, nor in verl-lint's table of
    popular models, and names the checks that therefore did not run. Nothing is guessed.

    ## Why is this bad?
    Nothing is wrong; a clean report is then not read as "the heads and lengths fit the model".

    ## Use instead
    Lint where the model is (its directory, or the Hugging Face cache holding it).
    """
    for prefix in (M,):
        path = _path(ctx, prefix)
        if path and _resolved(ctx, prefix)[0] is None:
            skipped = [r.code for r in REGISTRY if r.code in MODEL_RULES and r.runs_on(ctx)]
            if not skipped:
                continue  # none applies to this tree or app (verl 0.1): nothing went unchecked
            # One line per run, whatever the models: the message names no model, the help the first one met.
            d = ctx.diag(
                "VL329",
                f"the checks against the model ({', '.join(skipped)}) did not run: a launch's model is not a local "
                "directory, "
                "not in the Hugging Face cache and not in verl-lint's table",
                key=f"{prefix}.path",
                help=f"lint where the directory or Hugging Face cache of {path} is",
            )
            d.once = True
            yield d
