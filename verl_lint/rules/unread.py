"""2xx, derived from code: keys the user sets that no code of the verl tree reads.

The evidence is the reader index of the tree being linted (`verl_lint/config/reader.py`): every
name its code mentions, and the steps it takes from a node to a key below it. A key with a name
that appears nowhere in that code cannot be read by it, nor a top-level section placed under a
node it is never read from.
"""

from __future__ import annotations

from omegaconf import DictConfig, ListConfig, OmegaConf

from ..config.context import Context
from ..config.keys import same_name_elsewhere, section_elsewhere
from ..config.reader import ReaderIndex, app_sources, reader_index
from ..model import Unknown
from ..registry import Subject, rule
from .tables import renamed_to

# Nodes verl hands whole to another library or to user code, so their keys are never read by
# name in verl (checked in verl 0.9.1 and 0.7.1):
#   *_kwargs        rollout.engine_kwargs.{vllm,sglang,trtllm} -> the engine's arguments;
#                   data.apply_chat_template_kwargs / mm_processor_kwargs -> the HF processor;
#                   custom_reward_function.reward_kwargs -> the user's reward function;
#                   ray_kwargs -> ray.init; data.sampler.sampler_kwargs -> the user's sampler
#   override_*      model.override_config -> the HF config; megatron.override_transformer_config,
#                   override_mcore_model_config, override_ddp_config -> Megatron-Core;
#                   optim.override_optimizer_config -> the optimizer
#   mbridge_config  -> mbridge's AutoBridge
#   ray_init, runtime_env, env_vars -> ray.init(runtime_env=...) and the workers' environment
#   transfer_queue  -> TransferQueue's own `tq.init(config.transfer_queue)` (verl 0.9)
# The index adds the nodes the tree itself unpacks (`f(**cfg.x)`) or iterates (`cfg.x.items()`).
_PASS_THROUGH = frozenset({"mbridge_config", "ray_init", "runtime_env", "env_vars", "transfer_queue"})


def _passed_whole(parts: list[str], index: ReaderIndex) -> str | None:
    """The node among the key's parents whose keys go elsewhere whole, if any."""
    for p in parts[:-1]:
        if p.endswith("_kwargs") or p.startswith("override_") or p in _PASS_THROUGH or p in index.whole:
            return p
    return None


def _leaf(key: str) -> str:
    """The last name of a key that is not a list index (`a.b.0` -> `b`)."""
    parts = [p for p in key.split(".") if not p.isdigit()]
    return parts[-1] if parts else key


def _unread_name(parts: list[str], index: ReaderIndex) -> str | None:
    """The first name of the key that no code reads (a key under an unread node is unread too).
    Names that are not identifiers (`capture-range-end`, list indexes) are not judged: code
    reads those only as data, which the index does not follow."""
    return next((p for p in parts if p.isidentifier() and not index.reads(p)), None)


def tree_index(ctx: Context) -> ReaderIndex | None:
    """The reader index of the launch's verl tree (and its own sources), None without a tree."""
    if ctx.app.verl is None:
        return None
    return reader_index(ctx.app.verl.root, app_sources(ctx.app))


def _custom_dataset(ctx: Context) -> bool:
    """A user dataset class (`data.custom_cls.path`) receives the whole `data` node."""
    return bool(ctx.text("data.custom_cls.path"))


def read_unseen(ctx: Context, parts: list[str], index: ReaderIndex) -> bool:
    """A key the index cannot judge: Hydra's own, one under a node handed on whole, or `data.*`
    when a user dataset class receives the node."""
    return parts[0] == "hydra" or _passed_whole(parts, index) is not None or parts[0] == "data" and _custom_dataset(ctx)


def _suggest(ctx: Context, key: str, name: str, index: ReaderIndex, typo: bool) -> str:
    """`help`: a flat key the code reads; for an added key (`typo`) also a read key close to it in
    the composed config (a sibling first, then a close name under another node), else a read
    name close to the unread `name`. A key the config ships is no typo: no guess for it."""
    leaf = _leaf(key)
    parts = key.split(".")
    if (
        name != leaf and name in parts
    ):  # a flat key written as a node: `pf_ppo.reweight_method` for `pf_ppo_reweight_method`
        i = parts.index(name)
        flat = "_".join(p for p in parts[i:] if not p.isdigit())
        if index.reads(flat):
            new = ".".join(parts[:i] + [flat])
            return (
                f"did you mean `{new}`?"
                if ctx.has(new)
                else f"did you mean `+{new}`? (the code reads it; the config does not ship it)"
            )
    if not typo:
        return "remove the override: this verl never reads the key, whatever its value"
    renamed = renamed_to(ctx, key)  # the key verl moved it to, before any similar name
    if renamed:
        return f"did you mean `{renamed}`?"
    close = _close_keys(ctx, key, index) if name == leaf else []
    if close:
        return (
            f"did you mean `{close[0]}`?"
            if len(close) == 1
            else "did you mean one of " + ", ".join(f"`{w}`" for w in close) + "?"
        )
    close = _read_name_close_to(name, index)
    if close:
        return f"did you mean `{close}`? (a name verl's code reads, in place of `{name}`)"
    return "remove it, or check the key's name and place against this verl's config"


# The index asked last, its names a typo may be of, and the one found close to each name asked.
_TYPOS: list = [None, [], {}]


def _read_name_close_to(name: str, index: ReaderIndex) -> str | None:
    """A compound name (four letters or more) that `index` reads and `name` may misspell; kept
    per name for the index asked last (one per verl tree and entry point): a search of its
    ~10,000 names takes ~10 ms, and one typo is often copied into many scripts."""
    import difflib  # only when there is a finding

    if _TYPOS[0] is not index:
        _TYPOS[:] = [index, sorted(n for n in index.names if "_" in n and len(n) > 3), {}]
    _, targets, found = _TYPOS
    if name not in found:
        close = difflib.get_close_matches(name, targets, n=1, cutoff=0.85)
        found[name] = close[0] if close else None
    return found[name]


def _close_keys(ctx: Context, key: str, index: ReaderIndex) -> list[str]:
    """Keys of the composed config that the code reads and the added `key` may be a slip for: the
    same name under another node (the setting placed under the wrong role), else a sibling with
    a close name, else up to three keys with a close name elsewhere."""
    import difflib  # only for a finding, or a value that means off

    if ctx.cfg is None:
        return []
    leaf = _leaf(key)
    parent = key.rpartition(".")[0]
    keys = [k for k in ctx.keys() if k != key and not k.startswith("hydra.") and index.reads(_leaf(k))]
    elsewhere = same_name_elsewhere(ctx.cfg, key, keys)
    if elsewhere is not None:
        return [elsewhere]
    siblings = {_leaf(k): k for k in keys if k.rpartition(".")[0] == parent}
    close = difflib.get_close_matches(leaf, sorted(siblings), n=1, cutoff=0.75)
    if close:
        return [siblings[close[0]]]
    by_leaf: dict[str, list[str]] = {}
    for k in keys:
        by_leaf.setdefault(_leaf(k), []).append(k)
    close = difflib.get_close_matches(leaf, sorted(by_leaf), n=1, cutoff=0.8)
    return by_leaf[close[0]][:3] if close else []


def silent_value(v) -> bool:
    """0, False, null, "" or an empty node: how users say "off", what happens anyway where the
    code does not read the key."""
    if isinstance(v, (DictConfig, ListConfig)):
        return len(v) == 0
    return not isinstance(v, Unknown) and not v


def _off_anyway(ctx: Context, key: str, name: str, index: ReaderIndex) -> bool:
    """An added key set to a value that means off (`+flag=False`): nothing the user expects
    changes, unless it is a slip for a read key that is on (`+actor.use_kl_los=False` while
    `actor.use_kl_loss` is true)."""
    if not silent_value(ctx.get(key, None)):
        return False
    return name != _leaf(key) or all(silent_value(ctx.get(k, None)) for k in _close_keys(ctx, key, index))


def _shipped_keys(ctx: Context, added: list[str]) -> list[str]:
    """The keys of the composed config that none of the `added` keys (`+key`, a project file's
    new key) made: neither one of those keys, nor under one, nor a node made to hold one."""
    made = set(added)
    holders = {a[:i] for a in made for i, c in enumerate(a) if c == "."}  # the nodes above an added key
    out: list[str] = []
    under: str | None = None  # `key.` of the added key whose keys are being passed
    for k in ctx.keys():  # (depth first: a node's keys come right after it)
        if under is not None and k.startswith(under):
            continue
        under = k + "." if k in made else None
        if under is None and k not in holders:
            out.append(k)
    return out


def _misplaced(ctx: Context, key: str, index: ReaderIndex, shipped: list[str]) -> tuple[str, str] | None:
    """For an added key: (the section, the key where the config has it) when the key makes a
    section `c` under a node that no code reads it from, and the config has `c`, with the key's
    rest, elsewhere (`critic.optim.lr` added under `actor_rollout_ref`; `checkpoint.save_contents`
    under the rollout, which the actor and critic have). The names alone do not tell: `critic`,
    `optim` and `lr` are all read, as keys of the root and of the critic. A top-level section
    (`critic`) is read from the root: a read through a receiver named for no node
    (`self.config.critic`) is taken as the root's, since the other nodes' code has no such key.
    Under any other node the index places each read by what else its receiver reads
    (`ReaderIndex.reads_at`), and says nothing where it cannot tell."""
    parts = key.split(".")
    for i in range(1, len(parts) - 1):
        prefix = ".".join(parts[: i + 1])
        if any(k == prefix or k.startswith(prefix + ".") for k in shipped):
            continue  # verl's config (or the project's) has this node: not the user's addition
        section = parts[i]
        if not section.isidentifier() or _passed_whole(parts[: i + 1], index):
            return None  # (a node above it handed on whole: any key under it may be read)
        rest = ".".join(parts[i:])
        if i == 1 and rest in shipped:  # a top-level section under a top-level node
            return None if index.reads_under(parts[0], section) else (section, rest)
        if index.reads_at(tuple(parts[:i]), section, _keys_at(ctx)):
            return None
        home = section_elsewhere(shipped, key, rest)
        return (section, home) if home else None
    return None


def _keys_at(ctx: Context):
    """The keys of the config's node at a path (a tuple of names), None where there is no node."""

    def keys_at(path: tuple[str, ...]) -> set[str] | None:
        node = ctx.cfg if not path else OmegaConf.select(ctx.cfg, ".".join(path), throw_on_missing=False)
        return set(node.keys()) if isinstance(node, DictConfig) else None

    return keys_at


def _unread(ctx: Context, settings, code: str, tail: str, typo: bool):
    index = tree_index(ctx)
    if index is None:
        return
    where = f"verl {ctx.verl_version}" if ctx.verl_version else "this verl tree"
    seen: set[str] = set()
    shipped: list[str] | None = None
    for o in settings:
        if o.key in seen:
            continue
        parts = o.key.split(".")
        if typo and len(parts) > 2 and ctx.cfg is not None and not read_unseen(ctx, parts[:1], index):
            shipped = _shipped_keys(ctx, [a.key for a in settings]) if shipped is None else shipped  # (the added keys)
            found = _misplaced(ctx, o.key, index, shipped)
            if found is not None:
                section, home = found
                if not (silent_value(ctx.get(o.key, None)) and silent_value(ctx.get(home, None))):
                    seen.add(o.key)
                    yield _misplaced_finding(ctx, o, where, section, home)
                continue
        if read_unseen(ctx, parts, index):
            continue
        name = _unread_name(parts, index)
        if name is None or typo and _off_anyway(ctx, o.key, name, index):
            continue
        seen.add(o.key)
        # Under a node verl builds into a dataclass, VL110 says more (the field is missing from the
        # class, an error) when the tree converts that node; the pipeline keeps that one.
        what = tail
        yield ctx.diag(
            code,
            f"nothing in {where} reads `{o.key}`: {what}",
            key=o.key,
            help=_suggest(ctx, o.key, name, index, typo),
            span=o.word.span,
        )


def _misplaced_finding(ctx: Context, o, where: str, section: str, home: str):
    parent = o.key.split(f".{section}.", 1)[0]
    place = (
        "from the top of the config"
        if home.startswith(section + ".")
        else f"under `{home.split(f'.{section}.', 1)[0]}`"
    )
    return ctx.diag(
        "VL230",
        f"nothing in {where} reads `{o.key}`: its code reads `{section}` {place} "
        f"(`{home}`), never under `{parent}`; the value is accepted by Hydra and ignored",
        key=o.key,
        help=f"did you mean `{home}`?",
        span=o.word.span,
    )


@rule(
    "VL230",
    "key-never-read",
    "warning",
    in_callback=False,
    subject=Subject(kinds=("add", "force_add")),
)
def key_never_read(ctx: Context, settings):
    """A key added with `+key=` / `++key=` that no code in this verl tree reads.

    ## What it does
    Looks up the names of every key the command line adds (`+key=value` or `++key=value`) in
    the reader index of the verl tree being linted: every name its Python code mentions
    (attributes, string keys, keyword and parameter names, dataclass fields) and every key its
    YAML interpolations read; for an entry point outside the tree, its own package and the
    packages it imports from the directories above it (its workers, rollout, monitors) too. A
    name that appears nowhere (or only as a function called or defined) cannot be read. A key
    that adds one of the config's top-level sections under a node that no code reads it from
    is not read either, when the config has the rest of the key in that section
    (`+actor_rollout_ref.critic.optim.lr`: verl reads `critic` from the root only, as
    `config.critic` or `self.config.critic`, never `actor_rollout_ref.critic`). A section added
    under a deeper node is placed the same way when the config has it elsewhere in the same
    role (`+actor_rollout_ref.rollout.optim.lr`: the actor has `optim`, the rollout does not):
    reads through a receiver named for no node (`self.config.optim`) are placed by what else
    that receiver reads in the same class or function (the actor's worker reads
    `self.config.ppo_epochs`, `.clip_ratio`, ...: the actor's node, not the rollout's), and
    where that does not tell, nothing is said. Keys
    under a node verl hands whole to a library or to user code are left alone (`*_kwargs` such
    as `engine_kwargs`, `override_*` such as `override_config`, `mbridge_config`, `ray_init`,
    `runtime_env`, `env_vars`, `transfer_queue`, free-form `dict` fields such as `model.lora`,
    nodes the tree unpacks with `**`, iterates or converts with `to_container`), and so is
    `data.*` when `data.custom_cls.path` names a user dataset. Suggests a read key close to
    it: a typo of a sibling, or the same name under another node. A key added with a value
    that means off (`+flag=False`, `0`, `null`, an empty string or node) is not reported, as
    VL233 does: code that never reads it behaves as if it were off, which is what you asked
    for; unless the key looks like a slip for a key the code reads that is on
    (`+actor.use_kl_los=False` while `actor.use_kl_loss` is true).

    ## Why is this bad?
    Hydra accepts any added key, and verl never looks at it: the run trains with the default
    you meant to change, and nothing says so. Usually a typo, a key from another verl release,
    or a key placed under the wrong node (a critic setting under `actor_rollout_ref`). Under a
    node with a `_target_` it is worse: verl builds that node into its dataclass
    (`omega_conf_to_dataclass` -> `hydra.utils.instantiate`), whose constructor rejects the
    unknown keyword (`InstantiationException ... TypeError("FSDPActorConfig.__init__() got an
    unexpected keyword argument 'no_such_knob'")`) once the workers start; the message says so.

    ## Use instead
    The key the help names, without `+` when it exists in the config.

    ## Where in verl
    Derived from the tree itself (`verl_lint/config/reader.py`): for verl 0.9.1 the Python files of
    `verl/` (and `recipe/` in a checkout) and the interpolations of `verl/trainer/config/*.yaml`;
    the dataclass conversion is `verl/utils/config.py` (`omega_conf_to_dataclass`), called on
    the actor and rollout nodes by `verl/workers/engine_workers.py` (0.9.1 and 0.7.1).
    """
    yield from _unread(ctx, settings, "VL230", "the value is accepted by Hydra and ignored", typo=True)


@rule(
    "VL231",
    "config-key-never-read",
    "info",
    in_callback=False,
    subject=Subject(kinds=("set",)),
    # (data.return_raw_input_ids, the other key both releases ship unread, is VL215's example too.)
)
def config_key_never_read(ctx: Context, settings):
    """A key the config ships, set on the command line, that no code in this verl tree reads.

    ## What it does
    The same lookup as VL230, for keys the command line overrides without `+` (so the config
    has them). Only keys the user set are judged, never defaults left alone.

    ## Why is this bad?
    The YAML still carries the key (often kept for compatibility after the code stopped
    reading it), so Hydra accepts the override, but the setting changes nothing.

    ## Use instead
    Remove the override, or set the key that replaced it in this release.

    ## Where in verl
    Derived from the tree itself (`verl_lint/reader.py`); e.g. verl 0.9.1 and 0.7.1 ship
    `global_profiler.global_tool_config.torch_memory.kw_args` and `data.return_raw_input_ids`
    in `verl/trainer/config/ppo_trainer.yaml`, and no code reads either.
    """
    yield from _unread(ctx, settings, "VL231", "the config ships it, but setting it changes nothing", typo=False)
