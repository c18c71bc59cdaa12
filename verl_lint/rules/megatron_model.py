"""3xx Megatron sizes against the model a launch trains: pipeline (and virtual pipeline) parallelism
against the model's layers, expert parallelism against its experts.

What refuses them, read in the sources:
- verl builds Megatron-Core's `TransformerConfig` from the Hugging Face config with the launch's
  parallel sizes (`num_layers` = `num_hidden_layers`, `num_moe_experts` = the routed experts,
  `pipeline_model_parallel_size`, `virtual_pipeline_model_parallel_size`,
  `expert_model_parallel_size`): its own converter (`verl/models/mcore/config_converter.py`,
  verl 0.4+), mbridge or Megatron-Bridge (`verl/workers/engine/megatron/transformer_impl.py`);
- Megatron-Core then asserts, when it builds the layers of a pipeline stage,
  `num_layers % pipeline_model_parallel_size == 0` and, with a virtual pipeline, that the layers
  of a stage divide into its model chunks (`transformer_block.get_num_layers_to_build`, core
  0.11 to 0.19 and main), unless the layers are placed unevenly (`num_layers_in_first/last_
  pipeline_stage`, `pipeline_model_parallel_layout`, `account_for_*_in_pipeline_split`); verl's
  own weight loader asserts the same (`verl/models/mcore/loader.py`,
  `num_layers_per_model * pp_size * virtual_pp_size == config.num_hidden_layers`);
- Megatron-Core's MoE layer asserts `num_moe_experts % expert_model_parallel_size == 0`
  (`transformer/moe/moe_layer.py`, core 0.10 to main), and `TransformerConfig.__post_init__`
  raises "num_moe_experts must be non None to use expert-parallel" for a dense model.

Context parallelism is not judged: Megatron-Core checks nothing of the model against it (the
sequence split is a property of each batch), and tensor parallelism is VL323's.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..evidence import Evidence
from ..models import ModelFacts
from ..registry import rule
from .model_sizes import MCORE_CONFIG, M, known
from .roles import uses_critic
from .sizes import A, anchor_key

# verl hands the launch's expert-parallel size to Megatron-Core's TransformerConfig (0.4+).
EXPERTS_TO_MCORE = Evidence(
    ("verl/models/mcore/config_converter.py", "verl/workers/engine/megatron/transformer_impl.py"),
    r"\"expert_model_parallel_size\": (mpu\.get_expert_model_parallel_world_size\(\)|self\.engine_config)",
)
# The roles whose Megatron model is built from a model path: (section, the model's prefix).
ROLES = {"actor": (A, M), "ref": ("actor_rollout_ref.ref", M), "critic": ("critic", "critic.model")}
# override_transformer_config fields that place the layers unevenly: Megatron-Core's even split is not used.
UNEVEN = (
    "num_layers_in_first_pipeline_stage",
    "num_layers_in_last_pipeline_stage",
    "pipeline_model_parallel_layout",
    "account_for_embedding_in_pipeline_split",
    "account_for_loss_in_pipeline_split",
)


def _roles(ctx, field: str) -> Iterator[tuple[str, str, str, ModelFacts]]:
    """(role, its section, the key of its `megatron.{field}`, its model's facts) for the Megatron
    roles the launch sizes itself: the actor; the reference policy where the user set its own
    value (it follows the actor's otherwise); the critic where the launch trains one on Megatron
    and the user set its own value. Roles whose model is not known are left out."""
    for role, (section, prefix) in ROLES.items():
        key = f"{section}.megatron.{field}"
        if role != "actor" and not ctx.set_by_override(key):
            continue
        owner = "critic" if role == "critic" else A
        if ctx.text(f"{owner}.strategy") != "megatron" or (role == "critic" and uses_critic(ctx) is not True):
            continue
        facts = known(ctx, prefix)
        if facts is not None:
            yield role, section, key, facts


def _uneven(ctx, section: str) -> bool:
    """The role's override_transformer_config places its layers unevenly."""
    for name in UNEVEN:
        v = ctx.get(f"{section}.megatron.override_transformer_config.{name}", None)
        if v is not None and v is not False:
            return True
    return False


@rule(
    "VL334",
    "megatron-pp-does-not-divide-layers",
    "error",
    evidence=[MCORE_CONFIG],
)
def pipeline_layers(ctx) -> Iterator:
    """Megatron's pipeline (or virtual pipeline) size does not divide the model's layers.

    ## What it does
    For the Megatron actor (and a reference policy or critic with its own sizes), flags
    `megatron.pipeline_model_parallel_size` (PP) when the model's `num_hidden_layers` is not a
    multiple of PP, and `megatron.virtual_pipeline_model_parallel_size` (VPP, with PP > 1) when
    the layers of one pipeline stage (layers / PP) are not a multiple of VPP. Silent when the
    role's `override_transformer_config` places the layers unevenly
    (`num_layers_in_first_pipeline_stage`, `num_layers_in_last_pipeline_stage`,
    `pipeline_model_parallel_layout`, `account_for_embedding_in_pipeline_split`,
    `account_for_loss_in_pipeline_split`).

    ## Why is this bad?
    Megatron-Core asserts "num_layers should be divisible by pipeline_model_parallel_size" and
    "num_layers_per_pipeline_rank ... should be divisible by vp_size" when it builds the layers
    of each stage, in the workers, after the GPUs are allocated; verl's own weight loader
    asserts the same (`num_layers_per_model * pp_size * virtual_pp_size == num_hidden_layers`).

    ## Use instead
    A PP (and VPP) whose product divides the layers (28 layers: PP 2, 4, 7, 14; PP 2 with VPP 2,
    7 or 14), or an uneven split with `override_transformer_config.num_layers_in_first_pipeline_stage`
    / `num_layers_in_last_pipeline_stage`.

    ## Where in verl
    verl 0.9.1 `verl/workers/engine/megatron/transformer_impl.py` (the provider's
    `pipeline_model_parallel_size` and `virtual_pipeline_model_parallel_size`), verl 0.4.1-0.7
    `verl/models/mcore/config_converter.py` (`_get_base_transformer_config`) and
    `verl/models/mcore/loader.py` (`_megatron_calc_layer_map`); the check is Megatron-Core's
    (`megatron/core/transformer/transformer_block.py`, `get_num_layers_to_build`, core 0.11+).
    """
    for role, section, pp_key, facts in _roles(ctx, "pipeline_model_parallel_size"):
        layers, model = facts.layers, f"{ROLES[role][1]}.path"
        pp = ctx.int(pp_key)
        if pp is None or pp < 1 or _uneven(ctx, section):
            continue
        vpp_key = f"{section}.megatron.virtual_pipeline_model_parallel_size"
        if layers % pp:
            fits = [n for n in range(2, min(layers, 64) + 1) if layers % n == 0][:8]
            inputs = [pp_key, model]
            yield ctx.diag(
                "VL334",
                f"{role} megatron.pipeline_model_parallel_size={pp} does not divide the {layers} layers of "
                f"{facts.name}; "
                'Megatron-Core asserts "num_layers should be divisible by pipeline_model_parallel_size" when it '
                "builds the model",
                key=anchor_key(ctx, *inputs),
                help=f"use a PP among {', '.join(map(str, fits))}, or place the layers unevenly with "
                f"{section}.megatron.override_transformer_config.num_layers_in_first_pipeline_stage / _last_",
                related=inputs,
            )
            continue
        vpp = ctx.int(vpp_key) if ctx.get(vpp_key, None) is not None else None
        if pp > 1 and vpp is not None and vpp > 1 and (layers // pp) % vpp:
            per_stage = layers // pp
            inputs = [vpp_key, pp_key, model]
            fits = [n for n in range(2, per_stage + 1) if per_stage % n == 0]
            yield ctx.diag(
                "VL334",
                f"{role} megatron.virtual_pipeline_model_parallel_size={vpp} does not divide the {per_stage} layers "
                "of each of "
                f"the {pp} pipeline stages ({layers} layers of {facts.name}); Megatron-Core asserts when it builds "
                "the model",
                key=anchor_key(ctx, *inputs),
                help=f"use a VPP among {', '.join(map(str, fits))}" if fits else f"leave {vpp_key}=null",
                related=inputs,
            )


@rule(
    "VL335",
    "megatron-ep-does-not-divide-experts",
    "error",
    evidence=[EXPERTS_TO_MCORE],
    supersedes=("VL324",),
)
def expert_parallel_experts(ctx) -> Iterator:
    """Megatron's expert-parallel size does not divide the model's experts, or the model has none.

    ## What it does
    For the Megatron actor (and a reference policy or critic with its own size), flags
    `megatron.expert_model_parallel_size` (EP) > 1 when the model's routed experts
    (`num_experts`, `num_local_experts` or `n_routed_experts`) are not a multiple of EP, or when
    the model is dense (no experts). For a dense model this finding replaces VL324's warning:
    Megatron does not ignore the setting, it refuses it.

    ## Why is this bad?
    Megatron-Core's MoE layer asserts `num_moe_experts % expert_model_parallel_size == 0` when it
    builds the experts, and its `TransformerConfig` raises "num_moe_experts must be non None to
    use expert-parallel" for a dense model: in the workers, after the GPUs are allocated.

    ## Use instead
    An EP that divides the experts (128 experts: 2, 4, 8, 16...), or 1 for a dense model.

    ## Where in verl
    verl 0.9.1 `verl/workers/engine/megatron/transformer_impl.py` (the provider's
    `expert_model_parallel_size`), verl 0.4.1-0.7 `verl/models/mcore/config_converter.py`
    (`expert_model_parallel_size`, `num_moe_experts`); the checks are Megatron-Core's
    (`megatron/core/transformer/moe/moe_layer.py`, `BaseMoELayer.__init__`;
    `megatron/core/transformer/transformer_config.py`, `__post_init__`).
    """
    for role, _section, key, facts in _roles(ctx, "expert_model_parallel_size"):
        ep = ctx.int(key)
        if ep is None or ep <= 1:
            continue
        inputs = [key, f"{ROLES[role][1]}.path"]
        if not facts.moe:
            message = (
                f"{role} megatron.expert_model_parallel_size={ep} but {facts.name} is a dense model: Megatron-Core's "
                'TransformerConfig raises "num_moe_experts must be non None to use expert-parallel" when the model is '
                "built"
            )
            help = f"set {key}=1"
        elif facts.experts % ep:
            fits = [n for n in range(2, facts.experts + 1) if facts.experts % n == 0][:8]
            message = (
                f"{role} megatron.expert_model_parallel_size={ep} does not divide the {facts.experts} experts of "
                f"{facts.name}; Megatron-Core's MoE layer asserts num_moe_experts % expert_model_parallel_size == 0"
            )
            help = f"use an EP among {', '.join(map(str, fits))}"
        else:
            continue
        yield ctx.diag("VL335", message, key=anchor_key(ctx, *inputs), help=help, related=inputs)
