"""The oracle's judge: runs inside the oracle environment (a verl release, torch CPU and what verl's
config code imports; never verl-lint) and says, for each launch, whether verl accepts it.

Input (stdin, JSON): {"workdir": a directory for the tiny model, "launches": [{"id": ..., "overrides": [...]}, ...]}. Output (stdout, JSON):
{"version": ..., "checks": [...], "verdicts": [{"id", "stage", "check", "message"}]}, where a
verdict's stage is None when verl accepts the launch.

Stages, in the order verl meets them:
- "compose": Hydra's composition of verl's `ppo_trainer` config with the overrides (verl's own YAML);
- "validate_config": `verl.utils.config.validate_config`, with `use_reference_policy` and
  `use_critic` as `main_ppo` computes them (`verl.trainer.ppo.utils`), which builds the actor's
  and the critic's config dataclasses and runs their `validate`;
- "dataclasses": the rollout's config dataclass (`omega_conf_to_dataclass`), as the worker builds it;
- a worker stage: the checks of verl's workers and first training step that need process groups
  or an engine, so cannot run on CPU, but are arithmetic on the config. These are evaluated here
  from the source: each names the statement it mirrors by a pattern found in this release's
  source (file and line reported), and runs only on a release that has that statement.

The model is a tiny local directory (`tiny_model`) the model config dataclasses load offline; the
trainer's init itself (Ray, the worker groups) is not run: its size checks are the worker checks
evaluated from the source above.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import math
import os
import re
import sys
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass


def _verl_without_init():
    """verl's package without its `__init__` (which imports Ray's DataProto, the plugins and the
    device probes): the config modules are imported from the installed release as they are."""
    spec = importlib.util.find_spec("verl")
    root = os.path.dirname(spec.origin)
    pkg = types.ModuleType("verl")
    pkg.__path__ = [root]
    with open(os.path.join(root, "version", "version")) as f:
        pkg.__version__ = f.read().strip()
    sys.modules["verl"] = pkg
    return root, pkg.__version__


ROOT, VERSION = _verl_without_init()


@dataclass
class Check:
    """A worker-side check verl asserts on: `file` and the `pattern` of its statement in verl's source,
    the `stage` it fails in, and `fails(c, f)` -> message or None on the config `c` and derived facts `f`."""

    name: str
    stage: str
    file: str
    pattern: str
    fails: Callable
    line: int | None = None

    def locate(self) -> bool:
        path = os.path.join(ROOT, self.file)
        if not os.path.exists(path):
            return False
        text = open(path).read()
        m = re.search(self.pattern, text)
        if m is None:
            return False
        self.line = text.count("\n", 0, m.start()) + 1
        return True


def _ceil_to(x: int, m: int) -> int:
    return -(-x // m) * m


def facts(c) -> dict:
    """What the worker checks compute from the config: GPU count, data-parallel sizes, the per-GPU
    batch of the first step after verl 0.9's padding to the mini batches (trainer_base.py
    `_get_required_batch_multiple`, `upsample_batch_to_divisible_size`)."""
    a, r, ref, cr = c.actor_rollout_ref.actor, c.actor_rollout_ref.rollout, c.actor_rollout_ref.ref, c.critic
    n_gpus = c.trainer.n_gpus_per_node * c.trainer.nnodes
    sp = a.get("ulysses_sequence_parallel_size", 1) or 1
    csp = cr.get("ulysses_sequence_parallel_size", 1) or 1
    f = {"n_gpus": n_gpus, "sp": sp, "csp": csp, "dp": n_gpus // sp if n_gpus % sp == 0 else None}
    f["cdp"] = n_gpus // csp if n_gpus % csp == 0 else None
    f["use_ref"], f["use_critic"] = bool(USE_REF(c)), bool(USE_CRITIC(c))
    if f["dp"]:
        multiple = f["dp"]
        if f["use_critic"]:
            multiple = math.lcm(multiple, cr.ppo_mini_batch_size * r.n)
        if c.trainer.critic_warmup <= 1:
            multiple = math.lcm(multiple, a.ppo_mini_batch_size * r.n)
        f["padded_per_gpu"] = _ceil_to(c.data.train_batch_size * r.n, multiple) // f["dp"]
    f["ref_dynamic"] = bool(ref.get("log_prob_use_dynamic_bsz", a.use_dynamic_bsz))
    return f


def _engine_worker(c) -> bool:
    """The worker main_ppo runs for the actor: the engine worker unless this release has
    `trainer.use_legacy_worker_impl` and it says auto/enable (verl 0.7's default)."""
    text = open(os.path.join(ROOT, "trainer", "main_ppo.py")).read()
    if "use_legacy_worker_impl" in text:
        return c.trainer.get("use_legacy_worker_impl", "auto") == "disable"
    return (
        os.path.exists(os.path.join(ROOT, ENGINE)) and "fsdp_workers import" not in text
    )  # 0.9: the v1 trainer's engine workers


def _divides(total, part):
    return part is not None and part > 0 and total % part == 0


def _engine_micro(c, f):
    a = c.actor_rollout_ref.actor
    if f["dp"] is None or a.use_dynamic_bsz or a.ppo_micro_batch_size_per_gpu is None:
        return None
    per_gpu = a.ppo_mini_batch_size * c.actor_rollout_ref.rollout.n // f["dp"]
    if not _divides(per_gpu, a.ppo_micro_batch_size_per_gpu):
        return f"per-GPU mini batch {per_gpu} % ppo_micro_batch_size_per_gpu {a.ppo_micro_batch_size_per_gpu}"


def _engine_log_prob(c, f):
    a, r = c.actor_rollout_ref.actor, c.actor_rollout_ref.rollout
    if f["dp"] is None or a.use_dynamic_bsz or r.log_prob_micro_batch_size_per_gpu is None:
        return None
    if not _divides(f["padded_per_gpu"], r.log_prob_micro_batch_size_per_gpu):
        return f"per-GPU batch {f['padded_per_gpu']} % rollout.log_prob_micro_batch_size_per_gpu {r.log_prob_micro_batch_size_per_gpu}"


def _engine_ref_log_prob(c, f):
    ref = c.actor_rollout_ref.ref
    if f["dp"] is None or not f["use_ref"] or f["ref_dynamic"]:
        return None
    micro = ref.log_prob_micro_batch_size_per_gpu
    if micro is None:
        return "ref.log_prob_micro_batch_size_per_gpu is None with dynamic batch size off"
    if not _divides(f["padded_per_gpu"], micro):
        return f"per-GPU batch {f['padded_per_gpu']} % ref.log_prob_micro_batch_size_per_gpu {micro}"


def _engine_critic_dp(c, f):
    cr, n = c.critic, c.actor_rollout_ref.rollout.n
    if f["use_critic"] and f["cdp"] is not None and (cr.ppo_mini_batch_size * n) % f["cdp"]:
        return f"critic mini batch {cr.ppo_mini_batch_size * n} % dp {f['cdp']}"


def _engine_critic_micro(c, f):
    cr, n = c.critic, c.actor_rollout_ref.rollout.n
    if not f["use_critic"] or f["cdp"] is None or cr.use_dynamic_bsz or cr.ppo_micro_batch_size_per_gpu is None:
        return None
    per_gpu = cr.ppo_mini_batch_size * n // f["cdp"]
    if not _divides(per_gpu, cr.ppo_micro_batch_size_per_gpu):
        return f"critic per-GPU mini batch {per_gpu} % ppo_micro_batch_size_per_gpu {cr.ppo_micro_batch_size_per_gpu}"


def _legacy_actor(c, f):
    a, n = c.actor_rollout_ref.actor, c.actor_rollout_ref.rollout.n
    if f["dp"] is None:
        return None
    mini = a.ppo_mini_batch_size * n // f["dp"]
    if mini <= 0:
        return f"normalized ppo_mini_batch_size {mini} is not > 0"
    micro = a.ppo_micro_batch_size // f["dp"] if a.ppo_micro_batch_size is not None else a.ppo_micro_batch_size_per_gpu
    if micro is not None and (micro <= 0 or mini % micro or mini // micro <= 0):
        return f"normalized ppo_mini_batch_size {mini} vs ppo_micro_batch_size_per_gpu {micro}"


def _legacy_critic(c, f):
    cr = c.critic
    if not f["use_critic"] or f["cdp"] is None:
        return None
    mini = cr.ppo_mini_batch_size * cr.rollout_n // f["cdp"]
    micro = (
        cr.ppo_micro_batch_size // f["cdp"] if cr.ppo_micro_batch_size is not None else cr.ppo_micro_batch_size_per_gpu
    )
    if mini <= 0 or (micro is not None and (micro <= 0 or mini % micro or mini // micro <= 0)):
        return f"critic normalized ppo_mini_batch_size {mini} vs ppo_micro_batch_size_per_gpu {micro}"


def _mesh(c, f):
    if f["dp"] is None:
        return f"{f['n_gpus']} GPUs do not split into ulysses_sequence_parallel_size {f['sp']}"


def _critic_mesh(c, f):
    if f["use_critic"] and f["cdp"] is None:
        return f"{f['n_gpus']} GPUs do not split into critic.ulysses_sequence_parallel_size {f['csp']}"


def _rollout_mesh(c, f):
    r = c.actor_rollout_ref.rollout
    world = r.tensor_model_parallel_size * r.get("data_parallel_size", 1) * r.get("pipeline_model_parallel_size", 1)
    if f["n_gpus"] % world:
        return f"{f['n_gpus']} GPUs % rollout world {world}"


def _dynamic_match(c, f):
    a, r = c.actor_rollout_ref.actor, c.actor_rollout_ref.rollout
    if a.use_dynamic_bsz != r.log_prob_use_dynamic_bsz:
        return f"actor.use_dynamic_bsz={a.use_dynamic_bsz} != rollout.log_prob_use_dynamic_bsz={r.log_prob_use_dynamic_bsz}"


def _per_gpu_set(c, f):
    a, r = c.actor_rollout_ref.actor, c.actor_rollout_ref.rollout
    if not a.use_dynamic_bsz and (
        r.log_prob_micro_batch_size_per_gpu is None or a.ppo_micro_batch_size_per_gpu is None
    ):
        return "rollout.log_prob_micro_batch_size_per_gpu or actor.ppo_micro_batch_size_per_gpu is None"


FSDP_ENGINE = "workers/engine/fsdp/transformer_impl.py"
ENGINE = "workers/engine_workers.py"
ENGINE_UTILS = "workers/engine/utils.py"
LEGACY = "workers/fsdp_workers.py"
MICRO_ASSERT = r"assert total_data_size % \(force_group_size \* micro_batch_size_per_gpu\) == 0"
# (engine worker?, check): the engine worker's (0.8+) and the legacy FSDP worker's (up to 0.7).
CHECKS = [
    (
        True,
        Check(
            "device mesh (actor)",
            "worker init",
            FSDP_ENGINE,
            r"mesh_shape=\(dp_size, self\.ulysses_sequence_parallel_size\)",
            _mesh,
        ),
    ),
    (
        True,
        Check(
            "device mesh (critic)",
            "worker init",
            FSDP_ENGINE,
            r"mesh_shape=\(dp_size, self\.ulysses_sequence_parallel_size\)",
            _critic_mesh,
        ),
    ),
    (
        True,
        Check("rollout mesh", "worker init", ENGINE, r"assert self\.world_size % infer_world_size == 0", _rollout_mesh),
    ),
    (
        True,
        Check(
            "dynamic bsz match",
            "worker init",
            ENGINE,
            r"assert self\.config\.actor\.use_dynamic_bsz == self\.config\.rollout\.log_prob_use_dynamic_bsz",
            _dynamic_match,
        ),
    ),
    (
        True,
        Check(
            "per-GPU micro set",
            "worker init",
            ENGINE,
            r"assert self\.config\.rollout\.log_prob_micro_batch_size_per_gpu is not None",
            _per_gpu_set,
        ),
    ),
    (True, Check("log-prob micro (rollout)", "compute_log_prob", ENGINE_UTILS, MICRO_ASSERT, _engine_log_prob)),
    (True, Check("log-prob micro (ref)", "compute_ref_log_prob", ENGINE_UTILS, MICRO_ASSERT, _engine_ref_log_prob)),
    (
        True,
        Check(
            "critic mini vs dp",
            "update_critic",
            ENGINE,
            r"mini_batch_size % self\.engine\.get_data_parallel_size\(\) == 0",
            _engine_critic_dp,
        ),
    ),
    (True, Check("critic micro", "update_critic", ENGINE_UTILS, MICRO_ASSERT, _engine_critic_micro)),
    (
        True,
        Check(
            "actor mini vs dp",
            "update_actor",
            ENGINE,
            r"mini_batch_size % self\.engine\.get_data_parallel_size\(\) == 0",
            lambda c, f: (
                f["dp"]
                and (c.actor_rollout_ref.actor.ppo_mini_batch_size * c.actor_rollout_ref.rollout.n) % f["dp"]
                and "actor mini batch % dp"
                or None
            ),
        ),
    ),
    (True, Check("actor micro", "update_actor", ENGINE_UTILS, MICRO_ASSERT, _engine_micro)),
    (
        False,
        Check(
            "device mesh (actor)",
            "worker init",
            LEGACY,
            r"mesh_shape=\(dp, self\.ulysses_sequence_parallel_size\)",
            _mesh,
        ),
    ),
    (
        False,
        Check(
            "device mesh (critic)",
            "worker init",
            LEGACY,
            r"mesh_shape=\(dp, self\.ulysses_sequence_parallel_size\)",
            _critic_mesh,
        ),
    ),
    (
        False,
        Check("rollout mesh", "worker init", LEGACY, r"assert self\.world_size % infer_world_size == 0", _rollout_mesh),
    ),
    (
        False,
        Check(
            "actor normalization",
            "worker init",
            LEGACY,
            r"assert self\.config\.actor\.ppo_mini_batch_size % self\.config\.actor\.ppo_micro_batch_size_per_gpu == 0",
            _legacy_actor,
        ),
    ),
    (
        False,
        Check(
            "critic normalization",
            "worker init",
            LEGACY,
            r"assert self\.config\.ppo_mini_batch_size % self\.config\.ppo_micro_batch_size_per_gpu == 0",
            _legacy_critic,
        ),
    ),
]


def tiny_model(where: str) -> str:
    """A model directory verl's model config can load offline: a two-layer Llama config.json and a
    word-level tokenizer (the sizes verl validates do not depend on the model)."""
    from tokenizers import Tokenizer, models  # noqa: PLC0415 - inside the oracle env only
    from transformers import LlamaConfig, PreTrainedTokenizerFast  # noqa: PLC0415 - inside the oracle env only

    path = os.path.join(where, "tiny-llama")
    if not os.path.exists(os.path.join(path, "config.json")):
        vocab = {t: i for i, t in enumerate(["<unk>", "<s>", "</s>", "<pad>", "a", "b"])}
        tok = PreTrainedTokenizerFast(
            tokenizer_object=Tokenizer(models.WordLevel(vocab, unk_token="<unk>")),
            unk_token="<unk>",
            bos_token="<s>",
            eos_token="</s>",
            pad_token="<pad>",
        )
        tok.save_pretrained(path)
        LlamaConfig(
            architectures=["LlamaForCausalLM"],
            vocab_size=len(vocab),
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=2,
            max_position_embeddings=2048,
        ).save_pretrained(path)
    return path


MODEL_KEYS = ("actor_rollout_ref.model.path", "critic.model.path")


def judge(compose, overrides: list[str], engine_checks, legacy_checks) -> dict:
    try:
        c = compose(config_name="ppo_trainer", overrides=overrides)
    except Exception as e:  # noqa: BLE001 - any failure of verl's code is the verdict
        return {"stage": "compose", "check": type(e).__name__, "message": str(e)[:300]}
    try:
        validate_config(c, use_reference_policy=USE_REF(c), use_critic=USE_CRITIC(c))
    except Exception as e:  # noqa: BLE001
        return {"stage": "validate_config", "check": type(e).__name__, "message": str(e)[:300]}
    try:
        omega_conf_to_dataclass(c.actor_rollout_ref.rollout)
    except Exception as e:  # noqa: BLE001
        return {"stage": "dataclasses", "check": type(e).__name__, "message": str(e)[:300]}
    f = facts(c)
    for check in engine_checks if _engine_worker(c) else legacy_checks:
        why = check.fails(c, f)
        if why:
            return {"stage": check.stage, "check": check.name, "message": f"{check.file}:{check.line}: {why}"}
    return {"stage": None, "check": None, "message": ""}


def main() -> None:
    global validate_config, omega_conf_to_dataclass, USE_REF, USE_CRITIC
    warnings.simplefilter("ignore")
    from verl.trainer.ppo.utils import need_critic as USE_CRITIC  # noqa: PLC0415, F401, N812 - as main_ppo computes them
    from verl.trainer.ppo.utils import need_reference_policy as USE_REF
    from verl.utils.config import omega_conf_to_dataclass, validate_config  # noqa: PLC0415, F401 - after _verl_without_init, as globals for judge()

    importlib.import_module("verl.workers.config")
    request = json.load(sys.stdin)
    launches, model = request["launches"], tiny_model(request["workdir"])
    engine = [c for e, c in CHECKS if e and c.locate()]
    legacy = [c for e, c in CHECKS if not e and c.locate()]
    verdicts = []
    real_stdout = sys.stdout
    sys.stdout = sys.stderr  # validate_config prints
    from hydra import compose, initialize_config_dir  # noqa: PLC0415 - inside the oracle env only

    try:
        with initialize_config_dir(config_dir=os.path.join(ROOT, "trainer", "config"), version_base=None):
            for launch in launches:
                overrides = [*launch["overrides"], *(f"{k}={model}" for k in MODEL_KEYS)]
                verdicts.append({"id": launch["id"], **judge(compose, overrides, engine, legacy)})
    finally:
        sys.stdout = real_stdout
    checks = [{"name": c.name, "stage": c.stage, "where": f"verl/{c.file}:{c.line}"} for c in engine + legacy]
    json.dump({"version": VERSION, "checks": checks, "verdicts": verdicts}, sys.stdout)


if __name__ == "__main__":
    main()
