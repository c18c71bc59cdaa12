"""Generate a deterministic corpus of realistic verl launch scripts.

The corpus feeds the benchmark (bench/run.py) and the equivalence test
(tests/test_equivalence.py). Every value override is drawn from the real keys of
the composed verl config (plain `hydra.compose` of each base the corpus uses, so
a key that is set always exists unless the launch is *meant* to fail), and every
script is written the way verl's own example scripts are written: variables with
`${VAR:-default}`, `$(( ))` arithmetic, arrays expanded with "${A[@]}", functions
called with "$@", `ray job submit -- python3 -m ...`, quoting of lists and
strings in all the usual styles, `| tee`, `"$@"` at the end.

Only statically-known values are used, so the words Hydra receives are exactly
known. They are recorded in `manifest.json` next to the scripts (per launch: the
full argv of the command, the Hydra overrides, the config name and the
deliberate errors with the index of the override that Hydra reports first).
`check_bash()` runs every script under real bash with stub commands (nothing else
is executed) and compares the argv bash produces with the manifest.

    python bench/make_corpus.py                     # bench/corpus/, verl 0.9.1, seed 0
    python bench/make_corpus.py --seed 3 --check-bash --out /tmp/corpus
"""

from __future__ import annotations

import argparse
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

APP = "verl.trainer.main_ppo"
DEFAULT_CONFIG = "ppo_trainer"

# The bases the corpus composes on: (config name, group overrides).
BASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "dp": ("ppo_trainer", ()),
    "megatron_cn": ("ppo_megatron_trainer", ()),
    "megatron_engine": ("ppo_trainer", ("model_engine=megatron",)),
    "megatron_critic": ("ppo_trainer", ("critic=megatron_critic",)),
    "megatron_actor_ref": (
        "ppo_trainer",
        ("actor@actor_rollout_ref.actor=megatron_actor", "ref@actor_rollout_ref.ref=megatron_ref"),
    ),
    "torchtitan": ("ppo_trainer", ("model_engine=torchtitan",)),
    "veomni": ("ppo_trainer", ("model_engine=veomni",)),
}
BASE_WEIGHTS = {
    "dp": 60,
    "megatron_cn": 13,
    "megatron_engine": 10,
    "megatron_critic": 4,
    "megatron_actor_ref": 4,
    "torchtitan": 4,
    "veomni": 3,
}

# Keys (almost) every verl example sets, with realistic values; used when they exist.
POPULAR: list[tuple[str, list]] = [
    ("algorithm.adv_estimator", ["grpo", "gae", "rloo", "reinforce_plus_plus", "remax", "grpo"]),
    ("data.train_files", ["TRAIN_FILES"]),
    ("data.val_files", ["VAL_FILES"]),
    ("data.train_batch_size", [256, 512, 1024, 128, "ARITH"]),
    ("data.max_prompt_length", [512, 1024, 2048, "ARITH"]),
    ("data.max_response_length", [1024, 2048, 4096, 8192, "ARITH"]),
    ("data.filter_overlong_prompts", [True]),
    ("data.truncation", ["error", "left"]),
    ("actor_rollout_ref.model.path", ["MODEL"]),
    ("actor_rollout_ref.actor.optim.lr", ["1e-6", "3e-6", "5e-7", "1e-5"]),
    ("actor_rollout_ref.model.use_remove_padding", [True]),
    ("actor_rollout_ref.actor.ppo_mini_batch_size", [64, 128, 256, "ARITH"]),
    ("actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu", [1, 2, 4, 8, 16]),
    ("actor_rollout_ref.actor.use_kl_loss", [True, False]),
    ("actor_rollout_ref.actor.kl_loss_coef", ["0.001", "0.01", "0.0"]),
    ("actor_rollout_ref.actor.kl_loss_type", ["low_var_kl", "mse"]),
    ("actor_rollout_ref.actor.entropy_coeff", [0, "0.001"]),
    ("actor_rollout_ref.model.enable_gradient_checkpointing", [True, False]),
    ("actor_rollout_ref.actor.fsdp_config.param_offload", [False, True]),
    ("actor_rollout_ref.actor.fsdp_config.optimizer_offload", [False, True]),
    ("actor_rollout_ref.actor.megatron.tensor_model_parallel_size", [1, 2, 4, 8]),
    ("actor_rollout_ref.actor.megatron.pipeline_model_parallel_size", [1, 2, 4]),
    ("actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu", [4, 8, 16, 32]),
    ("actor_rollout_ref.rollout.tensor_model_parallel_size", [1, 2, 4, 8]),
    ("actor_rollout_ref.rollout.name", ["vllm", "sglang", "vllm"]),
    ("actor_rollout_ref.rollout.gpu_memory_utilization", ["0.4", "0.5", "0.6", "0.8"]),
    ("actor_rollout_ref.rollout.n", [1, 4, 5, 8, 16]),
    ("actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu", [4, 8, 16, 32]),
    ("actor_rollout_ref.ref.fsdp_config.param_offload", [True, False]),
    ("algorithm.use_kl_in_reward", [False, True]),
    ("critic.optim.lr", ["1e-5", "2e-5", "9e-6"]),
    ("critic.model.path", ["MODEL"]),
    ("critic.ppo_micro_batch_size_per_gpu", [4, 8, 16]),
    ("trainer.critic_warmup", [0]),
    ("trainer.logger", ["LOGGER"]),
    ("trainer.project_name", ["PROJECT"]),
    ("trainer.experiment_name", ["EXPERIMENT"]),
    ("trainer.n_gpus_per_node", [8, 4, "NGPUS"]),
    ("trainer.nnodes", [1, 2, 4, "NNODES"]),
    ("trainer.save_freq", [-1, 20, 50, 100]),
    ("trainer.test_freq", [5, 10, 25, -1]),
    ("trainer.total_epochs", [1, 15, 30]),
    ("trainer.val_before_train", [False, True]),
]

MODELS = [
    "Qwen/Qwen2.5-7B-Instruct",
    "Qwen/Qwen2.5-3B-Instruct",
    "Qwen/Qwen3-8B",
    "deepseek-ai/deepseek-llm-7b-chat",
    "meta-llama/Llama-3.1-8B-Instruct",
    "Qwen/Qwen2.5-Math-7B",
    "Qwen/Qwen3-30B-A3B",
]
DATASETS = ["gsm8k", "math", "dapo-math-17k", "geo3k", "aime-2024", "hh_rlhf"]
PROJECTS = ["verl_grpo_example_gsm8k", "verl_example", "verl_ppo_math", "verl-megatron", "dapo", "verl_remax_example"]
# bash's own variables: never assigned by the generator
RESERVED = {
    "PATH",
    "HOME",
    "PWD",
    "OLDPWD",
    "UID",
    "EUID",
    "PPID",
    "RANDOM",
    "SECONDS",
    "LINENO",
    "HOSTNAME",
    "IFS",
    "PS1",
    "PS2",
    "PS4",
    "SHELL",
    "USER",
    "TERM",
    "LANG",
    "OPTIND",
    "OPTARG",
    "BASH",
    "GROUPS",
    "HOSTTYPE",
    "MACHTYPE",
    "OSTYPE",
    "SHELLOPTS",
    "SHLVL",
    "PIPESTATUS",
    "FUNCNAME",
    "_",
    "N",
    "P",
    "C",
    "TMPDIR",
    "PYTHONPATH",
}
# words bash treats specially when bare (besides alnum)
_BARE_OK = re.compile(r"^[A-Za-z0-9_@%+=:,./\-\[\]^~]+$")
_ASSIGN_BARE_OK = re.compile(r"^[A-Za-z0-9_@%+=:,./\-^]+$")
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


# --------------------------------------------------------------- results ----


@dataclass
class DeliberateError:
    kind: str  # one of ERROR_KINDS
    word: int  # index into LaunchSpec.words of the override that causes it


@dataclass
class LaunchSpec:
    base: str  # key of BASES
    config_name: str | None  # as given on the command line (None: the app's default)
    words: list[str]  # the Hydra overrides, exactly as Hydra receives them after the shell
    argv: list[str]  # the whole command after the shell (interpreter/wrapper first)
    errors: list[DeliberateError] = field(default_factory=list)

    @property
    def first_error(self) -> DeliberateError | None:
        """The error Hydra reports first: parse, then sweep, then defaults list, then values in order."""
        if not self.errors:
            return None
        rank = {"parse": 0, "sweep": 1, "bad_group": 2, "force_add_group": 2, "group_package": 2}
        return min(self.errors, key=lambda e: (rank.get(e.kind, 3), e.word))


@dataclass
class ScriptSpec:
    path: str  # relative to the corpus root
    launches: list[LaunchSpec]


# ------------------------------------------------------------ config keys ----


@dataclass
class Keys:
    """The composed config of one base, flattened (resolve=False)."""

    leaves: dict[str, object]  # dotted key -> value (scalars, lists, '${...}' strings, empty dicts)
    dicts: set[str]  # dotted keys of non-empty dict nodes

    def exists(self, key: str) -> bool:
        return key in self.leaves or key in self.dicts

    @property
    def settable(self) -> list[str]:
        """Leaves a launch may set, in config order (computed once)."""
        cached = self.__dict__.get("_settable")
        if cached is None:
            cached = self.__dict__["_settable"] = [k for k in self.leaves if settable(k)]
        return cached


def flatten(cfg: dict) -> Keys:
    leaves: dict[str, object] = {}
    dicts: set[str] = set()

    def walk(node, prefix):
        for k, v in node.items():
            key = f"{prefix}.{k}" if prefix else str(k)
            if isinstance(v, dict) and v:
                dicts.add(key)
                walk(v, key)
            else:
                leaves[key] = v

    walk(cfg, "")
    return Keys(leaves, dicts)


def compose_keys(config_dir: str | Path, bases: dict[str, tuple[str, tuple[str, ...]]] = BASES) -> dict[str, Keys]:
    """Compose every base with plain Hydra (once) and flatten it."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    out = {}
    with initialize_config_dir(config_dir=str(Path(config_dir).resolve()), version_base=None, job_name="make_corpus"):
        for name, (config_name, groups) in bases.items():
            cfg = compose(config_name, overrides=list(groups))
            out[name] = flatten(OmegaConf.to_container(cfg, resolve=False))
    return out


REMOVED_KEYS = [
    "actor_rollout_ref.actor.megatron.grad_offload",
    "critic.model.fsdp_config.param_offload",
    "trainer.use_legacy_worker_impl",
    "actor_rollout_ref.rollout.chunked_prefill",
    "actor_rollout_ref.actor.fsdp_config.grad_offload",
]


def concrete(v) -> bool:
    """A value OmegaConf.select returns as is (not None, not missing, not an interpolation)."""
    if v is None or isinstance(v, (dict, list)):
        return False
    return not (isinstance(v, str) and (v == "???" or "${" in v))


def settable(key: str) -> bool:
    parts = key.split(".")
    return all(_IDENT.match(p) and not p.startswith("_") for p in parts) and parts[0] != "hydra"


# --------------------------------------------------------------- quoting ----


def dq(text: str) -> str:
    return '"' + re.sub(r'(["\\$`])', r"\\\1", text) + '"'


def sq_ok(text: str) -> bool:
    return "'" not in text


def shell_word(rng: random.Random, word: str) -> str:
    """`word` written for bash in one of the styles verl scripts use; bash yields `word` back."""
    styles = []
    if _BARE_OK.match(word) and not word.startswith("~~"):
        styles += ["bare"] * 6
    if sq_ok(word):
        styles += ["sq_all", "sq_value"] if "=" in word else ["sq_all"]
    styles += ["dq_value", "dq_all"] if "=" in word else ["dq_all"]
    style = rng.choice(styles)
    if style == "bare":
        return word
    if style == "sq_all":
        return f"'{word}'"
    if style == "dq_all":
        return dq(word)
    key, _, value = word.partition("=")
    if not _BARE_OK.match(key + "="):
        return dq(word)
    if style == "sq_value":
        return f"{key}='{value}'"
    return f"{key}={dq(value)}"


def assign_value(rng: random.Random, value: str) -> str:
    """The right-hand side of `NAME=...` that makes $NAME equal `value`."""
    if _ASSIGN_BARE_OK.match(value) and rng.random() < 0.6:
        return value
    if sq_ok(value) and rng.random() < 0.5:
        return f"'{value}'"
    return dq(value)


# ------------------------------------------------------------ the script ----


class Script:
    """Builds one script: a preamble of variables/arrays, then launches."""

    def __init__(self, rng: random.Random):
        self.rng = rng
        self.pre: list[str] = []
        self.vars: dict[str, str] = {}  # name -> value bash gives it
        self.body: list[str] = []

    def var(self, hint: str, value: str, rhs=None, upper: bool = False) -> str:
        """A variable holding `value` (reused if one already does); returns its name.

        `rhs(name)` gives the assignment's right-hand side (default: `value`, quoted).
        """
        for name, v in self.vars.items():
            if v == value and name.lower().startswith(hint.lower()[:6]):
                return name
        base = re.sub(r"[^A-Za-z0-9_]", "_", hint).strip("_") or "V"
        base = base.upper() if upper or self.rng.random() < 0.7 else base.lower()
        if base.upper() in RESERVED or not _IDENT.match(base):
            base = "X_" + base
        name, i = base, 2
        while name in self.vars or name.upper() in RESERVED:
            name, i = f"{base}_{i}", i + 1
        self.vars[name] = value
        self.pre.append(f"{name}={rhs(name) if rhs is not None else assign_value(self.rng, value)}")
        return name


def _hint(key: str) -> str:
    parts = key.split(".")
    return "_".join(parts[-2:]) if parts[-1] in ("path", "name", "n", "lr", "seed", "size") else parts[-1]


def value_for(rng: random.Random, key: str, cur) -> object:
    """A new, realistic value for `key` whose current value is `cur` (Hydra text or a Python scalar)."""
    last = key.rsplit(".", 1)[-1]
    if isinstance(cur, bool):
        return rng.choice([not cur, not cur, cur])
    if isinstance(cur, int):
        if "parallel_size" in last or last in ("nnodes", "n_gpus_per_node", "ppo_epochs"):
            return rng.choice([1, 2, 4, 8])
        if "batch_size" in last or "len" in last or "tokens" in last:
            return rng.choice([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192])
        if "freq" in last or "steps" in last:
            return rng.choice([-1, 5, 10, 20, 100])
        if "seed" in last:
            return rng.choice([0, 1, 42, 1234])
        return rng.choice([0, 1, 2, 3, 4, 8, 10, 16, cur + 1])
    if isinstance(cur, float):
        if "lr" in last:
            return rng.choice(["1e-6", "5e-7", "2e-6", "1e-5", "3e-6"])
        if "coef" in last or "coeff" in last:
            return rng.choice(["0.0", "0.001", "0.005", "0.01"])
        if "util" in last or "ratio" in last:
            return rng.choice(["0.3", "0.45", "0.6", "0.85"])
        return rng.choice(["0.0", "0.1", "0.2", "0.28", "0.5", "1.0", "2.0"])
    if isinstance(cur, list):
        if last == "logger":
            return "LOGGER"
        if cur and all(isinstance(x, str) for x in cur):
            return list(reversed(cur)) if len(cur) > 1 else cur + ["extra"]
        if cur and all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in cur):
            return [round(x * 0.5, 6) if isinstance(x, float) else x * 2 for x in cur]
        return []
    if cur is None or (isinstance(cur, str) and (cur.startswith("${") or cur == "???")):
        if "path" in last or "dir" in last or "file" in last:
            return rng.choice(["/data/checkpoints/run", "/mnt/models/rm", "/tmp/verl_out", "MODEL"])
        if "batch_size" in last or "len" in last or last.endswith("_size") or "num" in last or "tokens" in last:
            return rng.choice([1, 2, 4, 8, 16, 64, 256, 1024])
        if last in ("enable", "enabled") or last.startswith(("use_", "enable_", "is_")):
            return rng.choice([True, False])
        if last == "name":
            return rng.choice(["vllm", "sglang", "naive", "dapo"])
        return rng.choice(["auto", "bf16", 4, "none", True, "fixed"])
    if isinstance(cur, str):
        if last == "adv_estimator":
            return rng.choice(["grpo", "gae", "rloo", "reinforce_plus_plus", "remax", "gpg"])
        if last == "loss_agg_mode":
            return rng.choice(["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"])
        if last in ("dtype", "model_dtype"):
            return rng.choice(["bfloat16", "float16", "fp32"])
        if "path" in last or "dir" in last or "file" in last:
            return rng.choice(["/data/out", "/mnt/shared/ckpt", "MODEL"])
        if last == "project_name":
            return "PROJECT"
        if last == "experiment_name":
            return "EXPERIMENT"
        return rng.choice([cur, cur + "_v2", "auto", "custom"])
    return cur


class LaunchBuilder:
    """One launch: a list of (hydra word, bash text) pairs plus what the words are."""

    def __init__(self, rng: random.Random, script: Script, keys: Keys, ctx: dict):
        self.rng = rng
        self.s = script
        self.keys = keys
        self.ctx = ctx  # script-wide choices (model, dataset, project...)
        self.items: list[tuple[str, str]] = []  # (hydra word, bash text)
        self.used: set[str] = set()
        self._parents: set[str] = set()  # every proper prefix of a used key
        self.errors: list[DeliberateError] = []

    # -- helpers -----------------------------------------------------------
    def free(self, key: str) -> bool:
        """Not used yet, and no used key is a parent or child of it."""
        if key in self.used or key in self._parents:
            return False
        parts = key.split(".")
        return not any(".".join(parts[:i]) in self.used for i in range(1, len(parts)))

    def use(self, key: str) -> None:
        self.used.add(key)
        parts = key.split(".")
        self._parents.update(".".join(parts[:i]) for i in range(1, len(parts)))

    def add(self, word: str, bash: str | None = None) -> int:
        self.items.append((word, bash if bash is not None else shell_word(self.rng, word)))
        return len(self.items) - 1

    def special(self, key: str, token: str) -> tuple[str, str]:
        """(hydra value text, bash value text) for a symbolic value such as MODEL."""
        rng, s, ctx = self.rng, self.s, self.ctx
        if token == "MODEL":
            name = s.var(
                "MODEL_PATH", f"/models/{ctx['model']}", lambda n: f"${{{n}:-/models/{ctx['model']}}}", upper=True
            )
            return f"/models/{ctx['model']}", rng.choice([f"${name}", f"${{{name}}}", f'"${name}"'])
        if token in ("TRAIN_FILES", "VAL_FILES"):
            split = "train" if token == "TRAIN_FILES" else "test"
            d = ctx["dataset"]
            if rng.random() < 0.35:
                files = [f"/data/{d}/{split}.parquet", f"/data/{ctx['dataset2']}/{split}.parquet"]
                val = "[" + ", ".join(f"'{f}'" for f in files) + "]"
                name = s.var(f"{split}_files", val, lambda n: dq(val))
                return val, f'"${name}"'
            path = f"/data/{d}/{split}.parquet"
            name = s.var(f"{split}_path" if rng.random() < 0.5 else "DATA_DIR", path)
            return path, rng.choice([f"${name}", f"${{{name}}}", f'"${name}"'])
        if token == "LOGGER":
            choice = rng.randrange(4)
            if choice == 0:
                return "[console,wandb]", "[console,wandb]"
            if choice == 1:
                return "[console,wandb]", "['console','wandb']"  # the shell removes the quotes
            if choice == 2:
                return '["console","wandb"]', '\'["console","wandb"]\''
            return "[console]", "'[console]'"
        if token == "PROJECT":
            name = s.var("project_name", ctx["project"])
            return ctx["project"], rng.choice([f"${name}", f"'{ctx['project']}'", f'"${{{name}}}"'])
        if token == "EXPERIMENT":
            exp = f"{ctx['model'].split('/')[-1].lower()}_{ctx['dataset']}_{rng.randrange(100)}"
            if rng.random() < 0.25:
                # a Hydra-quoted string with spaces and a comma, inside shell double quotes
                val = f"'{exp}, run {rng.randrange(9)}'"
                return val, dq(val)
            name = s.var("exp_name", exp)
            return exp, rng.choice([f"${name}", f'"${name}"', f"${{{name}}}"])
        if token in ("NGPUS", "NNODES"):
            default = 8 if token == "NGPUS" else rng.choice([1, 2])
            vname = "GPUS_PER_NODE" if token == "NGPUS" else "NNODES"
            name = s.var(vname, str(default), lambda n: f"${{{n}:-{default}}}", upper=True)
            return str(default), rng.choice([f"${name}", f"${{{name}}}"])
        raise ValueError(token)

    def value(self, key: str, v) -> tuple[str, str]:
        """(hydra value text, bash value text) for a chosen value."""
        rng = self.rng
        if isinstance(v, str) and v in (
            "MODEL",
            "TRAIN_FILES",
            "VAL_FILES",
            "LOGGER",
            "PROJECT",
            "EXPERIMENT",
            "NGPUS",
            "NNODES",
        ):
            return self.special(key, v)
        if v == "ARITH":
            k = rng.choice([2, 4, 8])
            unit = rng.choice([128, 256, 512, 1024])
            total = k * unit
            if rng.random() < 0.5:
                name = self.s.var(_hint(key), str(total), lambda n: f"$(({unit} * {k}))")
                return str(total), rng.choice([f"${name}", f"${{{name}}}"])
            return str(total), f"$(({unit}*{k}))"
        if isinstance(v, bool):
            text = rng.choice(["True", "true"]) if v else rng.choice(["False", "false"])
        elif isinstance(v, list):
            text = "[" + ",".join(str(x) for x in v) + "]"
            if any(isinstance(x, str) for x in v) and rng.random() < 0.5:
                text = "[" + ",".join(f"'{x}'" if isinstance(x, str) else str(x) for x in v) + "]"
        else:
            text = str(v)
        # sometimes through a variable, like most verl scripts
        if rng.random() < 0.2 and _ASSIGN_BARE_OK.match(text) and not isinstance(v, list):
            name = self.s.var(_hint(key), text)
            return text, rng.choice([f"${name}", f"${{{name}}}", f'"${name}"'])
        return text, None  # the whole word gets quoted by shell_word

    def set(self, key: str, v, prefix: str = "") -> int:
        text, bash_value = self.value(key, v)
        self.use(key)
        word = f"{prefix}{key}={text}"
        if bash_value is None:
            return self.add(word)
        return self.add(word, f"{prefix}{key}={bash_value}")

    # -- content -----------------------------------------------------------
    def fill(self, n_values: int) -> None:
        rng, keys = self.rng, self.keys
        popular = [(k, vals) for k, vals in POPULAR if k in keys.leaves and settable(k)]
        take = rng.sample(popular, k=min(len(popular), rng.randint(len(popular) // 2, len(popular))))
        take.sort(key=lambda kv: [k for k, _ in POPULAR].index(kv[0]))  # scripts keep a familiar order
        for k, vals in take:
            self.set(k, rng.choice(vals))
        candidates = list(keys.settable)
        extra = max(0, n_values - len(take))
        for k in rng.sample(candidates, k=min(extra * 2, len(candidates))):
            if extra <= 0:
                break
            if not self.free(k):
                continue
            cur = keys.leaves[k]
            if isinstance(cur, dict):  # an empty dict: add a key under it
                self.set(
                    f"{k}.{rng.choice(['max_num_seqs', 'enable_expert_parallel', 'attention_backend', 'foo'])}",
                    rng.choice([True, 64, "flash"]),
                    "+",
                )
            else:
                v = value_for(rng, k, cur)
                if rng.random() < 0.08:
                    self.set(k, v, "++")
                else:
                    self.set(k, v)
            extra -= 1

    def extras(self) -> None:
        """`+` new keys, `++`, `~`, interpolations, a repeated key (later wins)."""
        rng, keys = self.rng, self.keys
        if rng.random() < 0.35:
            parents = [
                d
                for d in (
                    "actor_rollout_ref.rollout.engine_kwargs.vllm",
                    "actor_rollout_ref.rollout.engine_kwargs.sglang",
                    "actor_rollout_ref.actor.megatron.override_transformer_config",
                    "trainer",
                    "data",
                )
                if (d in keys.dicts or (d in keys.leaves and keys.leaves[d] == {})) and self.free(d)
            ]
            if parents:
                p = rng.choice(parents)
                child = rng.choice(
                    ["enable_expert_parallel", "max_num_seqs", "moe_router_dtype", "lint_marker", "swap_space"]
                )
                if not keys.exists(f"{p}.{child}") and self.free(f"{p}.{child}"):
                    self.set(f"{p}.{child}", rng.choice([True, 64, "fp32", 4]), "+")
        if rng.random() < 0.15:
            var = rng.choice(["VLLM_USE_V1", "NCCL_DEBUG", "TOKENIZERS_PARALLELISM"])
            k = f"+ray_kwargs.ray_init.runtime_env.env_vars.{var}"
            if (
                "ray_kwargs.ray_init.runtime_env.env_vars" not in keys.leaves
                or keys.leaves.get("ray_kwargs.ray_init.runtime_env.env_vars") == {}
            ):
                key = k[1:]
                if not keys.exists(key) and self.free(key):
                    self.use(key)
                    self.add(f"{k}={rng.choice(['1', 'WARN', 'true'])}")
        if rng.random() < 0.12:
            k = rng.choice([k for k in keys.settable if self.free(k) and not isinstance(keys.leaves[k], dict)])
            self.set(k, value_for(rng, k, keys.leaves[k]), "++")
        if rng.random() < 0.08:
            key = rng.choice(["trainer.brand_new_flag", "data.extra_note", "actor_rollout_ref.rollout.custom_knob"])
            if not keys.exists(key) and self.free(key):
                self.set(key, rng.choice([1, True, "x"]), "++")
        if rng.random() < 0.10:
            # `~key` / `~key=value` on a key with a concrete value (Hydra selects it, resolved)
            cands = [
                k
                for k in keys.settable
                if self.free(k)
                and concrete(keys.leaves[k])
                and k.startswith(("trainer.", "data.", "actor_rollout_ref.rollout."))
            ]
            k = rng.choice(cands)
            self.use(k)
            cur = keys.leaves[k]
            if rng.random() < 0.3 and (
                type(cur) is int
                or (
                    isinstance(cur, str)
                    and re.match(r"^[A-Za-z][A-Za-z_\-]*$", cur)
                    and cur.lower() not in ("true", "false", "null", "nan", "inf")
                )
            ):
                word = f"~{k}={cur}"  # delete with the matching value
            else:
                word = f"~{k}"
            self.add(word)
        if rng.random() < 0.08:
            src = rng.choice(["data.max_response_length", "data.max_prompt_length"])
            dst = "actor_rollout_ref.rollout.max_num_batched_tokens"
            if keys.exists(src) and dst in keys.leaves and self.free(dst):
                self.use(dst)
                word = f"{dst}=${{{src}}}"
                self.add(word, rng.choice([f"'{word}'", f"{dst}=\\${{{src}}}", f'"{dst}=\\${{{src}}}"']))
        if rng.random() < 0.10:
            # the same key twice: the later value wins (a common copy-paste pattern)
            for word, _ in self.items:
                if re.match(r"^trainer\.(total_epochs|save_freq|test_freq)=", word):
                    k = word.split("=", 1)[0]
                    self.set(k, rng.choice([2, 3, 7]))
                    break

    def error(self, kind: str) -> bool:
        """Add one deliberate error of `kind`; False if this base cannot host it."""
        rng, keys = self.rng, self.keys
        leaves = [k for k in keys.settable if self.free(k) and not isinstance(keys.leaves[k], (dict, list))]
        if kind == "typo":
            k = rng.choice([k for k in leaves if "." in k])
            head, last = k.rsplit(".", 1)
            for bad in (last[:-1], last + "s", last.replace("_", "", 1), last[:2] + last[3:]):
                if bad and bad != last and not keys.exists(f"{head}.{bad}"):
                    self.use(f"{head}.{bad}")
                    self.errors.append(
                        DeliberateError(kind, self.set(f"{head}.{bad}", value_for(rng, k, keys.leaves[k])))
                    )
                    return True
            return False
        if kind == "removed_key":
            for k in rng.sample(REMOVED_KEYS, len(REMOVED_KEYS)):
                parent = k.rsplit(".", 1)[0]
                if (
                    keys.exists(k)
                    or not self.free(k)
                    or (parent in keys.leaves and not isinstance(keys.leaves[parent], dict))
                ):
                    continue
                self.use(k)
                self.errors.append(DeliberateError(kind, self.set(k, rng.choice([True, "disable"]))))
                return True
            return False
        if kind == "add_existing":
            # `+key=v` on a key with a concrete value (Hydra treats None/??? as absent)
            k = rng.choice([k for k in leaves if concrete(keys.leaves[k])])
            v = value_for(rng, k, keys.leaves[k])
            if isinstance(v, list) or v == "LOGGER":
                return False
            self.use(k)
            self.errors.append(DeliberateError(kind, self.set(k, v, "+")))
            return True
        if kind == "delete_missing":
            k = rng.choice(
                [
                    "trainer.val_before_trian",
                    "data.prompt_keys",
                    "actor_rollout_ref.rollout.val_kwargs.n_samples",
                    "critic.ppo_mini_batchsize",
                ]
            )
            if keys.exists(k):
                return False
            self.use(k)
            self.errors.append(DeliberateError(kind, self.add(f"~{k}")))
            return True
        if kind == "delete_mismatch":
            cands = [k for k in leaves if type(keys.leaves[k]) is int]
            k = rng.choice(cands)
            self.use(k)
            self.errors.append(DeliberateError(kind, self.add(f"~{k}={keys.leaves[k] + 7}")))
            return True
        if kind == "bad_group":
            word = rng.choice(
                ["critic=fsdp2_critic", "model_engine=deepspeed", "rollout@actor_rollout_ref.rollout=vllm_rollout"]
            )
            self.errors.append(DeliberateError(kind, self.add(word)))
            return True
        if kind == "group_package":
            # the defaults-list spelling on the command line: Hydra wants the bare group when package == group
            word = rng.choice(["critic@critic=megatron_critic", "data@data=legacy_data", "reward@reward=reward"])
            self.errors.append(DeliberateError(kind, self.add(word)))
            return True
        if kind == "force_add_group":
            self.errors.append(DeliberateError(kind, self.add("++data=legacy_data")))
            return True
        if kind == "parse":
            word = rng.choice(
                ["trainer.logger=[console,wandb", "data.train_files=['/data/a.parquet'", "trainer.experiment_name=a=b"]
            )
            self.errors.append(DeliberateError(kind, self.add(word, dq(word) if "'" in word else f"'{word}'")))
            return True
        if kind == "sweep":
            # `key=1,2` is a sweep: Hydra refuses it without --multirun
            ints = [k for k in leaves if type(keys.leaves[k]) is int]
            k = "trainer.nnodes" if "trainer.nnodes" in ints else rng.choice(ints)
            self.use(k)
            self.errors.append(DeliberateError(kind, self.add(f"{k}=1,2")))
            return True
        raise ValueError(kind)


ERROR_KINDS = [
    "typo",
    "typo",
    "removed_key",
    "add_existing",
    "delete_missing",
    "delete_mismatch",
    "bad_group",
    "parse",
    "sweep",
    "force_add_group",
    "group_package",
]
# Two errors in one launch, in an order where Hydra's first error is well defined and the
# fast path must report the same one first.
ERROR_PAIRS = [
    ("typo", "add_existing"),
    ("add_existing", "parse"),
    ("typo", "bad_group"),
    ("delete_missing", "typo"),
    ("typo", "sweep"),
]

# ---------------------------------------------------------- command lines ----


def entry(rng: random.Random, s: Script) -> tuple[list[str], list[str]]:
    """(bash words of the interpreter part, the argv bash produces for them)."""
    c = rng.random()
    if c < 0.55:
        return ["python3", "-m", APP], ["python3", "-m", APP]
    if c < 0.70:
        return ["python3", "-u", "-m", APP], ["python3", "-u", "-m", APP]
    if c < 0.78:
        return ["python", "-m", APP], ["python", "-m", APP]
    if c < 0.88:
        name = s.var("PYTHON", "python3", lambda n: f"${{{n}:-python3}}", upper=True)
        return [f"${name}", "-m", APP], ["python3", "-m", APP]
    addr = "http://127.0.0.1:8265"
    name = s.var("RAY_ADDRESS", addr, lambda n: f"${{{n}:-{addr}}}", upper=True)
    words = [
        "ray",
        "job",
        "submit",
        f'--address="${name}"',
        "--runtime-env=verl/trainer/runtime_env.yaml",
        "--no-wait",
        "--",
        "python3",
        "-m",
        APP,
    ]
    argv = [
        "ray",
        "job",
        "submit",
        f"--address={addr}",
        "--runtime-env=verl/trainer/runtime_env.yaml",
        "--no-wait",
        "--",
        "python3",
        "-m",
        APP,
    ]
    return words, argv


def config_flag(rng: random.Random, config_name: str) -> tuple[list[str], list[str]]:
    name = config_name + (".yaml" if rng.random() < 0.1 else "")
    style = rng.randrange(3)
    if style == 0:
        return ["--config-name", name], ["--config-name", name]
    if style == 1:
        return [f"--config-name={name}"], [f"--config-name={name}"]
    return [f"--config-name='{name}'"], [f"--config-name={name}"]


def build_launch(
    rng: random.Random, s: Script, keys: dict[str, Keys], ctx: dict, base: str, error_kinds: tuple[str, ...]
) -> tuple[LaunchBuilder, str | None]:
    config_name, groups = BASES[base]
    lb = LaunchBuilder(rng, s, keys[base], ctx)
    group_pos = 0 if rng.random() < 0.7 else None
    if group_pos == 0:
        for g in groups:
            lb.add(g)
    lb.fill(rng.randint(6, 34))
    lb.extras()
    if group_pos is None:
        for g in groups:  # in the middle, as some scripts do; Hydra does not care
            i = rng.randrange(len(lb.items) + 1)
            lb.items.insert(i, (g, g))
    if rng.random() < 0.04:
        lb.add("hydra.job.chdir=False")
    for kind in error_kinds:
        if not lb.error(kind):
            lb.error("typo")
    return lb, (config_name if config_name != DEFAULT_CONFIG or rng.random() < 0.05 else None)


def render_launch(
    rng: random.Random, s: Script, lb: LaunchBuilder, config_name: str | None, use_array: bool, indent: str = "    "
) -> tuple[list[str], list[str], list[str]]:
    """Lines of the command, the argv bash produces, and the Hydra words."""
    head_words, head_argv = entry(rng, s)
    flag_words, flag_argv = config_flag(rng, config_name) if config_name else ([], [])
    items = list(lb.items)
    bash_items = [b for _, b in items]
    words = [w for w, _ in items]
    lines_items = bash_items
    if use_array and len(items) > 6:
        # a run of overrides moves into an array, as in verl's newer example scripts
        start = rng.randrange(0, len(items) - 4)
        end = min(len(items), start + rng.randint(3, 12))
        name = rng.choice(["ACTOR_ARGS", "ROLLOUT_ARGS", "COMMON_ARGS", "TRAINER_ARGS", "DATA_ARGS", "extra_args"])
        while name in s.vars:
            name += "_2"
        s.vars[name] = "<array>"
        s.pre.append(f"{name}=(")
        for b in bash_items[start:end]:
            s.pre.append(f"    {b}")
        s.pre.append(")")
        lines_items = bash_items[:start] + [f'"${{{name}[@]}}"'] + bash_items[end:]
    tail = rng.choice(["", "", ' "$@"', " $@", " 2>&1 | tee ${LOG_FILE}", " | tee train.log"])
    if "LOG_FILE" in tail and "LOG_FILE" not in s.vars:
        s.vars["LOG_FILE"] = "run.log"
        s.pre.append("LOG_FILE=run.log")
    first = " ".join(head_words + flag_words)
    lines = (
        [first + " \\"] + [f"{indent}{b} \\" for b in lines_items[:-1]] + [f"{indent}{lines_items[-1]}{tail}"]
        if lines_items
        else [first + tail]
    )
    return lines, head_argv + flag_argv + words, words


def make_script(
    rng: random.Random, keys: dict[str, Keys], n_launches: int, error_plan: list[tuple[str, ...]]
) -> tuple[str, list[LaunchSpec]]:
    s = Script(rng)
    ctx = {
        "model": rng.choice(MODELS),
        "dataset": rng.choice(DATASETS),
        "dataset2": rng.choice(DATASETS),
        "project": rng.choice(PROJECTS),
    }
    header = ["#!/usr/bin/env bash"]
    header.append(
        rng.choice(["set -x", "set -xeuo pipefail", "set -euo pipefail", "set -e", "# run from the repo root"])
    )
    if rng.random() < 0.6:
        header.append(
            rng.choice(
                [
                    "export VLLM_ATTENTION_BACKEND=XFORMERS",
                    "export VLLM_USE_V1=1",
                    "export HYDRA_FULL_ERROR=1",
                    "export CUDA_DEVICE_MAX_CONNECTIONS=1",
                    "export RAY_DEDUP_LOGS=0",
                ]
            )
        )
    specs: list[LaunchSpec] = []
    body: list[str] = []
    style = "function" if n_launches == 2 and rng.random() < 0.4 else "sequential"
    if style == "function":
        base = _pick_base(rng)
        config_name, _ = BASES[base]
        common, cn = build_launch(rng, s, keys, ctx, base, ())
        # the function passes "$@" first; each call adds its own overrides
        head_words, head_argv = entry(rng, s)
        flag_words, flag_argv = config_flag(rng, config_name) if cn else ([], [])
        fname = rng.choice(["run_exp", "launch", "train"])
        body.append(f"{fname}() {{")
        cw = [b for _, b in common.items]
        body.append("    " + " ".join(head_words + flag_words) + ' "$@" \\')
        body += [f"        {b} \\" for b in cw[:-1]] + [f"        {cw[-1]}"]
        body.append("}")
        body.append("")
        for i in range(2):
            lb = LaunchBuilder(rng, s, keys[base], ctx)
            for k in sorted(common.used):
                lb.use(k)
            for _ in range(rng.randint(1, 4)):
                k = rng.choice(
                    [k for k in keys[base].settable if lb.free(k) and not isinstance(keys[base].leaves[k], dict)]
                )
                lb.set(k, value_for(rng, k, keys[base].leaves[k]))
            for kind in error_plan[i]:
                if not lb.error(kind):
                    lb.error("typo")
            call_words = [b for _, b in lb.items]
            body.append(f"{fname} " + " ".join(call_words))
            words = [w for w, _ in lb.items] + [w for w, _ in common.items]
            errors = [DeliberateError(e.kind, e.word) for e in lb.errors]
            specs.append(LaunchSpec(base, cn, words, head_argv + flag_argv + words, errors))
    else:
        for i in range(n_launches):
            base = _pick_base(rng)
            if error_plan[i] and any(k in ("sweep",) for k in error_plan[i]):
                base = "dp"
            lb, cn = build_launch(rng, s, keys, ctx, base, error_plan[i])
            # group words are inserted before error() runs, so the indices are final
            errors = [DeliberateError(e.kind, e.word) for e in lb.errors]
            lines, argv, words = render_launch(rng, s, lb, cn, use_array=rng.random() < 0.3)
            if i:
                body.append("")
                body.append(
                    rng.choice(
                        ["# second run", "# now the full run", "# evaluation-only pass first, then training", ""]
                    )
                )
            body += lines
            specs.append(LaunchSpec(base, cn, words, argv, errors))
    text = "\n".join(header + [""] + s.pre + [""] + body) + "\n"
    return text, specs


def _pick_base(rng: random.Random) -> str:
    names = list(BASE_WEIGHTS)
    return rng.choices(names, weights=[BASE_WEIGHTS[n] for n in names])[0]


DIRS = [
    "grpo_trainer",
    "ppo_trainer",
    "megatron",
    "rloo_trainer",
    "remax_trainer",
    "reinforce_plus_plus_trainer",
    "dapo",
    "gspo_trainer",
    "sglang_multiturn",
    "tuning/7b",
    "tuning/70b",
]


def generate(
    out_dir: str | Path,
    config_dir: str | Path,
    seed: int = 0,
    n_scripts: int = 140,
    n_launches: int = 200,
    error_rate: float = 0.09,
    keys: dict[str, Keys] | None = None,
) -> list[ScriptSpec]:
    """Write the corpus into `out_dir` (replacing it) and return what was written (also in manifest.json)."""
    if n_launches < n_scripts or n_launches > 2 * n_scripts:
        raise ValueError("n_launches must be between n_scripts and 2 * n_scripts")
    rng = random.Random(seed)
    keys = keys if keys is not None else compose_keys(config_dir)
    out = Path(out_dir)
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    two = set(rng.sample(range(n_scripts), n_launches - n_scripts))
    n_err = max(4, round(n_launches * error_rate))
    plans: list[tuple[str, ...]] = [()] * n_launches
    err_at = rng.sample(range(n_launches), n_err)
    for j, at in enumerate(err_at):
        if j < len(ERROR_PAIRS):
            plans[at] = ERROR_PAIRS[j]
        else:
            plans[at] = (ERROR_KINDS[j % len(ERROR_KINDS)],)
    specs: list[ScriptSpec] = []
    li = 0
    for i in range(n_scripts):
        n = 2 if i in two else 1
        text, launches = make_script(rng, keys, n, plans[li : li + n])
        li += n
        d = DIRS[i % len(DIRS)]
        model = rng.choice(MODELS).split("/")[-1].lower().replace(".", "_")
        name = f"{d}/run_{model}_{rng.choice(DATASETS).replace('-', '_')}_{i:03d}.sh"
        p = out / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        specs.append(ScriptSpec(name, launches))
    manifest = {
        "seed": seed,
        "config_dir": str(config_dir),
        "scripts": [{"path": s.path, "launches": [_launch_json(la) for la in s.launches]} for s in specs],
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    return specs


def _launch_json(la: LaunchSpec) -> dict:
    d = asdict(la)
    first = la.first_error
    d["first_error"] = asdict(first) if first else None
    return d


def load_manifest(corpus_dir: str | Path) -> list[ScriptSpec]:
    data = json.loads((Path(corpus_dir) / "manifest.json").read_text())
    return [
        ScriptSpec(
            s["path"],
            [
                LaunchSpec(
                    l["base"], l["config_name"], l["words"], l["argv"], [DeliberateError(**e) for e in l["errors"]]
                )
                for l in s["launches"]
            ],
        )
        for s in data["scripts"]
    ]


# --------------------------------------------------------- check with bash ----

_STUB = """#!/bin/bash
{ printf '%s\\0' "$(basename "$0")" "$@"; printf '\\n\\0'; } >> "$CORPUS_ARGV_LOG"
"""


def check_bash(corpus_dir: str | Path, specs: list[ScriptSpec] | None = None) -> list[str]:
    """Run each script under real bash with stub commands; return mismatches with the manifest.

    Only the generated scripts run, with PATH limited to stubs for python/python3/ray
    (which record their argv) and tee, plus the coreutils bash needs; they only
    assign variables and call those stubs.
    """
    bash = shutil.which("bash")
    if bash is None:
        return ["bash not found"]
    specs = specs if specs is not None else load_manifest(corpus_dir)
    problems = []
    with tempfile.TemporaryDirectory() as tmp:
        stub_dir = Path(tmp, "bin")
        stub_dir.mkdir()
        for name in ("python", "python3", "ray"):
            (stub_dir / name).write_text(_STUB)
            (stub_dir / name).chmod(0o755)
        (stub_dir / "tee").write_text("#!/bin/bash\ncat > /dev/null\n")
        (stub_dir / "tee").chmod(0o755)
        work = Path(tmp, "cwd")
        work.mkdir()
        for spec in specs:
            log = Path(tmp, "argv.log")
            log.write_bytes(b"")
            env = {"PATH": f"{stub_dir}:/usr/bin:/bin", "CORPUS_ARGV_LOG": str(log), "HOME": str(work)}
            r = subprocess.run(
                [bash, str(Path(corpus_dir, spec.path).resolve())], cwd=work, env=env, capture_output=True, timeout=30
            )
            if r.returncode != 0:
                problems.append(f"{spec.path}: bash exit {r.returncode}: {r.stderr.decode()[-300:]}")
                continue
            parts = log.read_bytes().split(b"\0")
            calls, cur = [], []
            for p in parts[:-1]:
                if p == b"\n":
                    calls.append(cur)
                    cur = []
                else:
                    cur.append(p.decode())
            want = [la.argv for la in spec.launches]
            if calls != want:
                diff = [(a, b) for ca, cb in zip(calls, want) for a, b in zip(ca, cb) if a != b][:3]
                problems.append(
                    f"{spec.path}: bash argv differs from the manifest: {len(calls)} vs {len(want)} calls; "
                    f"first differences (bash, manifest): {diff}"
                )
    return problems


# ------------------------------------------------------------------- main ----


def _config_dir_for(version: str) -> Path:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from verl_lint.launch.locate import release_tree

    return release_tree(version).root / "verl" / "trainer" / "config"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "corpus"))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--scripts", type=int, default=140)
    ap.add_argument("--launches", type=int, default=200)
    g = ap.add_mutually_exclusive_group()
    g.add_argument(
        "--verl", default="0.9.1", help="draw keys from this verl release (downloaded once into the verl-lint cache)"
    )
    g.add_argument("--config-dir", help="draw keys from this verl/trainer/config directory")
    ap.add_argument(
        "--check-bash", action="store_true", help="run the scripts under bash with stub commands and compare argv"
    )
    args = ap.parse_args(argv)
    config_dir = Path(args.config_dir) if args.config_dir else _config_dir_for(args.verl)
    specs = generate(args.out, config_dir, args.seed, args.scripts, args.launches)
    n = sum(len(s.launches) for s in specs)
    n_err = sum(1 for s in specs for la in s.launches if la.errors)
    print(f"{len(specs)} scripts, {n} launches ({n_err} with deliberate errors) in {args.out}")
    if args.check_bash:
        problems = check_bash(args.out, specs)
        for p in problems:
            print(p)
        print("bash check:", "ok" if not problems else f"{len(problems)} mismatches")
        return 1 if problems else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
