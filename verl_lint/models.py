"""The model a launch trains: the architecture facts rules judge sizes against (attention and
KV heads, layers, experts, context length), each with where it came from.

A model named by a launch (`actor_rollout_ref.model.path`, the critic's, the reward model's) is
resolved, in order, from:

1. a local directory's `config.json` (`~` expanded as the shell would);
2. the Hugging Face cache, read offline with `huggingface_hub.try_to_load_from_cache`
   (`HF_HUB_CACHE`, else `HF_HOME/hub`, else `~/.cache/huggingface/hub`; the script's own
   exports win over the process environment); weights are never read, nothing is downloaded;
3. verl-lint's table of popular architectures (`rules/models.yaml`), matched on the hub id or a
   directory's basename, each record citing its public source.

Nothing is guessed: a name none of these knows is `None` (the rules that need it say so once),
and a `config.json` that cannot be read is a `ModelProblem` with one clear line. Reads go
through `open`, so the result cache records the files a finding depended on; a file looked
for and absent is recorded too (`verl_lint.read`), so creating it later invalidates the entry.

Real (not postponed) annotations here, as in `model.py`: defining `ModelFacts`, at every Hydra job
start with the callback, then compiles no string per field.
"""

import json
import os
import re
import sys
from collections.abc import Mapping
from functools import lru_cache
from typing import NamedTuple

from .cache import remembered

MAX_CONFIG_BYTES = 4 << 20  # a config.json is a few KiB; a larger "config" is not one
HUB_ID = re.compile(r"[A-Za-z0-9][\w.-]*/[\w.-]+")  # ORG/NAME, as the hub spells a repository
# Where a multimodal or wrapped model keeps its language model's config (vLLM: hf_text_config).
_NESTED = ("text_config", "llm_config", "language_config")
# rope scaling types whose factor extends max_position_embeddings (vLLM `_get_and_verify_max_len`;
# "llama3", "longrope" and "su" already state the extended length in max_position_embeddings).
_EXTENDING = ("linear", "dynamic", "yarn")


class ModelProblem(NamedTuple):
    """A model whose config could not be read: one line saying why."""

    name: str
    message: str


class ModelFacts(NamedTuple):  # a NamedTuple, not a dataclass: it is defined at every Hydra job start
    """What a launch's model is, as its `config.json` says (the language model's part of it)."""

    name: str  # as the launch names it
    source: str  # where the facts come from, e.g. "config.json in /models/x"
    model_type: str
    heads: int  # num_attention_heads
    kv_heads: int  # num_key_value_heads (heads when the config has none: multi-head attention)
    layers: int  # num_hidden_layers
    hidden: int  # hidden_size
    head_dim: int
    intermediate: int  # intermediate_size (the dense MLP's)
    vocab: int
    tied: bool  # tie_word_embeddings
    max_positions: int | None  # max_position_embeddings
    rope_type: str | None
    rope_factor: float | None
    experts: int = 0  # routed experts (0: a dense model)
    experts_per_token: int = 0
    moe_intermediate: int = 0
    shared_experts: int = 0  # DeepSeek's n_shared_experts
    shared_intermediate: int = 0  # Qwen2-MoE's shared_expert_intermediate_size
    dense_layers: int = 0  # leading dense layers of a MoE model (DeepSeek's first_k_dense_replace)
    kv_lora_rank: int = 0  # multi-head latent attention (DeepSeek V2/V3); 0 otherwise
    q_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    attention_bias: bool = False  # q/k/v projections with a bias (Qwen2)

    @property
    def moe(self) -> bool:
        return self.experts > 0

    @property
    def mla(self) -> bool:
        return self.kv_lora_rank > 0

    def context_length(self) -> int | None:
        """The longest sequence the model takes: max_position_embeddings, times the rope scaling
        factor for the scaling types that extend it."""
        if self.max_positions is None:
            return None
        if self.rope_factor and (self.rope_type or "default") in _EXTENDING:
            return int(self.max_positions * self.rope_factor)
        return self.max_positions

    def params(self) -> int:
        """The parameter count computed from the architecture (embeddings, attention, MLP or
        experts, norms; the LM head unless tied)."""
        h = self.hidden
        if self.mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            q = (
                h * self.q_lora_rank + self.q_lora_rank + self.q_lora_rank * self.heads * qk
                if self.q_lora_rank
                else h * self.heads * qk
            )
            kv = (
                h * (self.kv_lora_rank + self.qk_rope_head_dim)
                + self.kv_lora_rank
                + self.kv_lora_rank * self.heads * (self.qk_nope_head_dim + self.v_head_dim)
            )
            attn = q + kv + self.heads * self.v_head_dim * h
        else:
            q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
            attn = h * (q + 2 * kv) + q * h + (q + 2 * kv if self.attention_bias else 0)
        dense_mlp = 3 * h * self.intermediate
        if self.moe:
            experts = self.experts * 3 * h * self.moe_intermediate + h * self.experts
            shared = self.shared_experts * 3 * h * self.moe_intermediate + (
                3 * h * self.shared_intermediate + h if self.shared_intermediate else 0
            )
            mlps = self.dense_layers * dense_mlp + (self.layers - self.dense_layers) * (experts + shared)
        else:
            mlps = self.layers * dense_mlp
        embed = self.vocab * h * (1 if self.tied else 2)
        return embed + self.layers * (attn + 2 * h) + mlps + h

    def expert_params(self) -> int:
        """The parameters in routed experts (0 for a dense model): what expert parallelism splits."""
        return (
            (self.layers - self.dense_layers) * self.experts * 3 * self.hidden * self.moe_intermediate
            if self.moe
            else 0
        )

    def kv_bytes_per_token(self, tp: int = 1, dtype_bytes: int = 2) -> int:
        """The KV cache one token takes on one of `tp` ranks, as vLLM sizes it: K and V per
        layer, the KV heads split over TP (replicated where fewer than TP); MLA caches its
        latent (kv_lora_rank + qk_rope_head_dim) once per layer."""
        if self.mla:
            return self.layers * (self.kv_lora_rank + self.qk_rope_head_dim) * dtype_bytes
        per_rank = max(1, self.kv_heads // max(tp, 1))
        return 2 * self.layers * per_rank * self.head_dim * dtype_bytes

    def lines(self) -> list[str]:
        """The facts as `verl-lint config` prints them."""
        moe = f", {self.experts} experts ({self.experts_per_token} per token)" if self.moe else ", dense"
        rope = f", rope scaling {self.rope_type or 'default'} x{self.rope_factor:g}" if self.rope_factor else ""
        ctx = self.context_length()
        return [
            f"{self.name}: {self.model_type}, {self.params() / 1e9:.2f}B parameters{moe}",
            f"  {self.heads} attention heads, {self.kv_heads} KV heads, head dim {self.head_dim}, {self.layers} "
            f"layers, hidden {self.hidden}",
            f"  context {ctx if ctx is not None else 'unknown'} (max_position_embeddings {self.max_positions}{rope})",
            f"  from {self.source}",
        ]


def facts_from_config(name: str, source: str, cfg: Mapping) -> ModelFacts:
    """The facts a Hugging Face `config.json` (parsed) states; ValueError naming the first
    field missing or of the wrong type."""
    for nested in _NESTED:  # a multimodal model: the language model's own config
        inner = cfg.get(nested)
        if isinstance(inner, Mapping) and "num_attention_heads" in inner:
            cfg = {**{k: v for k, v in cfg.items() if k not in _NESTED}, **inner}
            break

    def num(key: str, default: int | None = None, *aliases: str) -> int:
        for k in (key, *aliases):
            v = cfg.get(k)
            if v is not None:
                if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                    raise ValueError(f"`{k}` is {v!r}, not a count")
                return v
        if default is None:
            raise ValueError(f"no `{key}`")
        return default

    heads = num("num_attention_heads", None, "n_head")
    if heads == 0:
        raise ValueError("`num_attention_heads` is 0")
    hidden = num("hidden_size", None, "n_embd", "d_model")
    rope = cfg.get("rope_scaling") or None
    rope = rope if isinstance(rope, Mapping) else None
    factor = rope.get("factor") if rope else None
    experts = num("num_experts", 0, "num_local_experts", "n_routed_experts")
    return ModelFacts(
        name=name,
        source=source,
        model_type=str(cfg.get("model_type") or "unknown"),
        heads=heads,
        kv_heads=num("num_key_value_heads", heads) or heads,
        layers=num("num_hidden_layers", None, "n_layer", "num_layers"),
        hidden=hidden,
        head_dim=num("head_dim", hidden // heads),
        intermediate=num("intermediate_size", 0),
        vocab=num("vocab_size", 0),
        tied=bool(cfg.get("tie_word_embeddings", False)),
        max_positions=num("max_position_embeddings", 0) or None,
        rope_type=(rope.get("rope_type") or rope.get("type")) if rope else None,
        rope_factor=float(factor) if isinstance(factor, (int, float)) and not isinstance(factor, bool) else None,
        experts=experts,
        experts_per_token=num("num_experts_per_tok", 0) if experts else 0,
        moe_intermediate=num("moe_intermediate_size", num("intermediate_size", 0)) if experts else 0,
        shared_experts=num("n_shared_experts", 0) if experts else 0,
        shared_intermediate=num("shared_expert_intermediate_size", 0) if experts else 0,
        dense_layers=num("first_k_dense_replace", 0) if experts else 0,
        kv_lora_rank=num("kv_lora_rank", 0),
        q_lora_rank=num("q_lora_rank", 0),
        qk_rope_head_dim=num("qk_rope_head_dim", 0),
        qk_nope_head_dim=num("qk_nope_head_dim", 0),
        v_head_dim=num("v_head_dim", 0),
        attention_bias=bool(cfg.get("attention_bias", cfg.get("model_type") in ("qwen2", "qwen2_moe"))),
    )


def resolve(name: str, env: Mapping[str, str | None], online: bool = False) -> ModelFacts | ModelProblem | None:
    """The facts of the model `name` (a local directory or a hub id), None when none of the
    sources knows it. `env` is the launch's environment where the script sets it (a value
    of None: set, but only known at run time). `online` (`--models online`): a hub id none of
    the offline sources knows is looked up on the hub, its `config.json` alone."""
    return _resolve(
        name, tuple(sorted((k, env.get(k, os.environ.get(k))) for k in ("HF_HUB_CACHE", "HF_HOME", "HOME"))), online
    )


@lru_cache(maxsize=64)
def _resolve(name: str, env: tuple, online: bool = False) -> ModelFacts | ModelProblem | None:
    values = dict(env)
    path = name
    if name == "~" or name.startswith("~/"):
        if not values.get("HOME"):
            return None
        path = values["HOME"] + name[1:]
    if os.path.isabs(path):  # a relative path depends on where the job runs: only a hub id or the table's name
        local = os.path.normpath(path)
        if os.path.isdir(local):
            return _read(name, os.path.join(local, "config.json"), f"config.json in {local}")
        if os.path.islink(local) and not os.path.exists(local):
            return ModelProblem(name, f"model path {name} is a broken symbolic link or a symbolic link loop")
        if os.path.exists(local):
            return ModelProblem(name, f"model path {name} is a file, not a model directory")
        sys.audit("verl_lint.read", os.path.join(local, "config.json"))  # absent: a dependency all the same
    if HUB_ID.fullmatch(name):
        cached = _from_hub_cache(name, values)
        if cached is not None:
            return cached
    found = from_table(name)
    if found is None and online and HUB_ID.fullmatch(name):
        return _from_hub(name)
    return found


def _from_hub(name: str) -> ModelFacts | ModelProblem | None:
    """`--models online`: the hub's `config.json` of `name`, kept in verl-lint's cache (later
    runs read it offline); a download that fails is one line, a model the hub lacks is None."""
    from .cache import cache_dir  # why: only for --models online
    from .download import DownloadError, hub_config, hub_url  # why: the network stack, only for --models online

    try:
        path = hub_config(name, cache_dir() / "models", MAX_CONFIG_BYTES)
    except DownloadError as ex:
        return ModelProblem(name, f"--models online: {ex}")
    if path is None:
        return None
    return _read(name, str(path), f"config.json from {hub_url()} (--models online, kept in {path.parent})")


def _read(name: str, config: str, source: str) -> ModelFacts | ModelProblem:
    try:
        with open(config, "rb") as f:
            raw = f.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return ModelProblem(name, f"model directory {os.path.dirname(config)} has no config.json")
    except OSError as ex:
        return ModelProblem(name, f"cannot read {config}: {ex.strerror or ex}")
    if len(raw) > MAX_CONFIG_BYTES:
        return ModelProblem(name, f"{config} is larger than {MAX_CONFIG_BYTES >> 20} MiB: not a model config")
    try:
        cfg = json.loads(raw)
        if not isinstance(cfg, dict):
            raise ValueError("not a JSON object")
        return facts_from_config(name, source, cfg)
    except (ValueError, RecursionError) as ex:  # JSONDecodeError and UnicodeDecodeError are ValueErrors
        return ModelProblem(name, f"{config} is not a model config the linter can read: {ex}")


def hub_cache_dir(env: Mapping[str, str | None]) -> str | None:
    """The Hugging Face hub cache as `huggingface_hub` finds it, from `env`; None when a
    variable it depends on is only known at run time."""
    hub = env.get("HF_HUB_CACHE")
    if hub is not None:
        return os.path.expanduser(hub)
    home = env.get("HF_HOME")
    if home:
        return os.path.join(os.path.expanduser(home), "hub")
    if "HF_HOME" in env and env["HF_HOME"] is None and env.get("HF_HUB_CACHE") is None:
        return None
    home = env.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".cache", "huggingface", "hub")


def _from_hub_cache(name: str, env: Mapping[str, str | None]) -> ModelFacts | ModelProblem | None:
    cache = hub_cache_dir(env)
    if cache is None:
        return None
    repo = os.path.join(cache, "models--" + name.replace("/", "--"))
    if not os.path.isdir(repo):  # the common case, without importing huggingface_hub
        sys.audit("verl_lint.read", repo)
        return None
    from huggingface_hub import try_to_load_from_cache  # why: ~100 ms, only for a model that is in the cache

    found = try_to_load_from_cache(name, "config.json", cache_dir=cache)
    if not isinstance(found, str):
        return None
    revision = os.path.basename(os.path.dirname(found))
    return _read(name, found, f"the Hugging Face cache {cache} (revision {revision[:12]})")


def from_table(name: str) -> ModelFacts | None:
    """The record of verl-lint's model table for hub id `name` or a directory whose basename
    is a hub id's name (`/data/Qwen2.5-7B-Instruct`), else None. Kept per name on disk (keyed,
    like every cache entry, on the tables' files): a Hydra job start that names a model it named
    before does not load the whole table (~1 ms)."""
    return remembered("tables", "models by name", name, lambda: _from_table(name))


def _from_table(name: str) -> ModelFacts | None:
    index = _table_index()
    key = name.rstrip("/").lower()
    hit = index.get(key) or index.get(key.rsplit("/", 1)[-1])
    if hit is None:
        return None
    record, hub_id = hit
    return facts_from_config(name, f"verl-lint's model table: {hub_id} ({record.source})", record.config)


@lru_cache(maxsize=1)
def _table_index() -> dict:
    """hub id and its basename (lower case) -> (record, hub id); a basename two records share
    matches neither."""
    from .knowledge import load_table  # why: the table loads only when a launch names a model

    index: dict = {}
    clashes = set()
    for rec in load_table("models").models:
        for hub_id in (rec.id, *rec.also):
            index[hub_id.lower()] = (rec, hub_id)
            base = hub_id.rsplit("/", 1)[-1].lower()
            if base in index and index[base][0] is not rec:
                clashes.add(base)
            index.setdefault(base, (rec, hub_id))
    for base in clashes:
        index.pop(base, None)
    return index
