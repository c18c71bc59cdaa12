"""1xx (values): values that compose fine but that verl rejects once a worker builds its config.

The rules read the tree being linted: verl's config dataclasses (`config_classes`), their
fields and the choice checks of their `__post_init__`, and the code that converts them; VL108
also the choice checks verl's functions make on a key of the root config (the reader index).
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

from ..cache import remembered
from ..config import classes as config_classes
from ..config.classes import Choice
from ..config.context import Context
from ..config.deprecations import tree_facts
from ..config.keys import closest_name, same_name_elsewhere, section_elsewhere
from ..config.reader import app_sources, key_facts
from ..evidence import Evidence, source_text, sources_have, tree_has
from ..registry import Subject, rule
from .tables import renamed_to

# A project module assigning its own function over verl's `omega_conf_to_dataclass` (a monkey patch).
REPLACES_CONVERSION = r"\.omega_conf_to_dataclass\s*=(?!=)"
# A project module defining a worker class of its own (`class MyRolloutWorker(Worker):`): whether
# it builds a node into verl's dataclass is not read.
OWN_WORKER = r"class \w+\((?:[\w.]+\.)?Worker\)"

R = "actor_rollout_ref.rollout"


def _accepted(value, allowed: tuple) -> bool:
    return any(type(value) is type(a) and value == a for a in allowed) or (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and any(isinstance(a, (int, float)) and not isinstance(a, bool) and value == a for a in allowed)
    )


@rule(
    "VL108",
    "value-not-accepted",
    "error",
    in_callback=False,
    subject=Subject(),  # only values the user chose are judged, not every node of the config
)
def value_not_accepted(ctx: Context, settings):
    """A value that verl's config class rejects when a worker builds it.

    ## What it does
    For every config node that verl turns into a dataclass (its `_target_`, e.g.
    `verl.workers.config.FSDPActorConfig`), reads that class in the verl tree being linted
    (and its base classes) and collects the checks its `__post_init__` makes on a field's
    value unconditionally: `assert self.F in [...]` and `if self.F not in [...]: raise ...`.
    The same checks at the top of a function of `verl/` on a key of the root config count
    too (`assert config.actor_rollout_ref.actor.loss_agg_mode in [...]` in the 0.4-0.5 trainer),
    and so does an `if K in {...}: ... elif K == "x": ... else: raise NotImplementedError`
    chain there (0.4-0.7's `main_ppo` picks the actor's and the critic's workers by strategy);
    a check after a statement that may return first is not unconditional, and is left out.
    A `Literal[...]` annotation is no such check: OmegaConf cannot build a dataclass with one,
    so those classes go through `hydra.utils.instantiate`, which does not look at annotations.
    A value you set (in the script or your own config file) that is not among the allowed
    values is reported with them, and with the check's location in that tree. The allowed
    values differ between releases (`loss_agg_mode=token-sum` exists from 0.8).

    ## Why is this bad?
    Hydra accepts any value of the right shape, so the job starts; verl raises
    (`ValueError: Invalid loss_agg_mode: True`, a bare `AssertionError`) only when the
    worker converts its config, after Ray and the workers are up.

    ## Use instead
    One of the allowed values the finding lists.

    ## Where in verl
    0.9.1 `verl/workers/config/actor.py:212-220` (`loss_agg_mode`), `verl/workers/config/optimizer.py:118-123`
    (`warmup_style`, `lr_scheduler_type`), `verl/workers/config/engine.py:306` (`strategy`);
    0.9.1 `verl/utils/config.py:23-65` (`omega_conf_to_dataclass`); 0.5.0
    `verl/trainer/ppo/ray_trainer.py:510` (`RayPPOTrainer._validate_config`).
    """
    root = str(ctx.app.verl.root) if ctx.app.verl else ""
    if not root:
        return
    chosen = {o.key for o in settings}
    in_code = dict(key_facts(Path(root))[1])
    for key in sorted(chosen):
        checker, choice = _check_of(ctx, root, key, in_code)
        if choice is None or not ctx.user_set(key):
            continue  # no check on this key, or a value unknown before run time
        value = ctx.get(key, None)
        if isinstance(value, (dict, list)) or (value is None and choice.allows_none) or _accepted(value, choice.values):
            continue
        if value is None and not ctx.has(key):
            continue
        allowed = ", ".join(str(v) for v in choice.values)
        shown = "null" if value is None else value
        yield ctx.diag(
            "VL108",
            f"`{key}={shown}` is not accepted by {checker}: {choice.where} raises {choice.raises} (allowed: {allowed})",
            key=key,
            help=f"use one of: {allowed}",
        )


def _check_of(ctx: Context, root: str, key: str, in_code: dict[str, Choice]) -> tuple[str, Choice | None]:
    """Who checks `key`'s value and how: the dataclass its node is built into, else verl's code."""
    path, _, field = key.rpartition(".")
    target = ctx.get(f"{path}._target_", None) if path else None
    if isinstance(target, str) and config_classes.built(root, path):  # else `__post_init__` never runs
        cls = config_classes.find(root, target)
        if cls is not None and field in cls.choices:
            return f"verl's {cls.name} when the worker builds its config", cls.choices[field]
    return "verl's check of the config before training", in_code.get(key)


@rule(
    "VL110",
    "added-key-not-a-config-field",
    "error",
    in_callback=False,
    # keys added under a section (a project's config file may add one: an override of it sets it,
    # and Hydra accepts that, but it is as foreign)
    subject=Subject(("*.*",), adding=True),
    supersedes=("VL230",),  # "nothing reads this key" is the weaker form of "the class built from it has no such field"
)
def added_key_not_a_field(ctx: Context, settings):
    """A `+key` added under a config node that verl builds into a dataclass without that field.

    ## What it does
    For an override that adds a key (`+a.b.c=...`, `++a.b.c=...`) under a node with a
    `_target_` (e.g. `actor_rollout_ref.actor`, built into `FSDPActorConfig`), reads that
    dataclass and its base classes in the verl tree being linted. When none of them has the
    field, the key cannot be passed to it, and the finding names the closest field. A key
    that adds a whole section (`+critic.fsdp_config.param_offload=True`, where no
    `critic.fsdp_config` exists) is judged at the node it first leaves the config at: `critic`,
    whose class has no `fsdp_config` field; the guess is that section where the same role has
    it, else the key's name under it (`critic.fsdp.param_offload`). Nodes
    whose class (or one of its bases) is not in the tree, and free-form dict fields such as
    `engine_kwargs`, are not judged; nor are `reward_model.*` nodes with the reward model off
    (no worker builds them), the roles of a recipe that ships workers of its own (whether they
    convert the node is not read), or a project whose code replaces verl's
    `omega_conf_to_dataclass` (RAGEN's accepts extra fields) or whose entry point's packages
    define worker classes of their own (`class MyRolloutWorker(Worker)`). A plain override of a
    key that your own config file added is judged too: Hydra accepts it since the file added the
    key. The did-you-mean is the key verl renamed it to where a removed-key record (VL4xx) says so
    (`multi_turn.max_assistant_turns` for `multi_turn.max_turns`), else, among similar field
    names, the one sharing the most words and then the same first word
    (`tensor_model_parallel_size` for `tensor_parallel_size`, not `moe_tensor_parallel_size`).

    ## Why is this bad?
    Hydra accepts any `+key` (and a project config file may add any key), so the job starts.
    When the worker builds its config,
    `hydra.utils.instantiate` raises `TypeError: ... got an unexpected keyword argument`
    (or `omega_conf_to_dataclass` a `ConfigKeyError`), after Ray and the workers are up.

    ## Use instead
    The field the did-you-mean names (without `+` when it exists already), or pass the value
    where the class accepts free-form keys.

    ## Where in verl
    0.9.1 `verl/utils/config.py:23-65` (`omega_conf_to_dataclass`: `instantiate(config)` when a
    `_target_` is present, else `OmegaConf.merge` with the structured dataclass); the classes
    under `verl/workers/config/` and `verl/trainer/config/`.
    """
    root = str(ctx.app.verl.root) if ctx.app.verl else ""
    if not root:
        return
    if sources_have(app_sources(ctx.app), f"{REPLACES_CONVERSION}|{OWN_WORKER}") or _recipe_workers(ctx):
        return
    added = {o.key for o in settings}
    shipped: list[str] | None = None  # the config's keys but those the launch adds (listed once, when asked)
    for o in settings:
        if o.key.startswith("reward_model.") and ctx.flag("reward_model.enable") is not True:
            continue  # no reward model worker, nothing builds the node
        shipped = [k for k in ctx.keys() if k not in added] if shipped is None else shipped
        parent, name = _first_added(o.key, shipped)
        target = ctx.get(f"{parent}._target_", None)
        if not isinstance(target, str) or not config_classes.built(root, parent):
            continue  # a section no code converts stays a DictConfig: an extra key is harmless
        cls = config_classes.find(root, target)
        if cls is None or not cls.closed or name in cls.fields:
            continue
        # the key verl renamed it to, the setting placed under the wrong role, a field of this class close to it
        if o.key != f"{parent}.{name}":  # a section added: the node that has it, or the key's name in this one
            guess = section_elsewhere(shipped, o.key, o.key[len(parent) + 1 :]) or same_name_elsewhere(
                ctx.cfg, o.key, shipped
            )
        else:
            close = closest_name(name, [f for f in cls.fields if not f.startswith("_")])
            guess = (
                renamed_to(ctx, o.key)
                or same_name_elsewhere(ctx.cfg, o.key)
                or (f"{parent}.{close}" if close else None)
            )
        yield ctx.diag(
            "VL110",
            f"`{o.key}` {'sets' if o.kind == 'set' else 'adds'} "
            f"`{name}`{' (your config file adds it)' if o.kind == 'set' else ''} to `{parent}`, which verl builds "
            f"into {cls.name} ({cls.where}); "
            f"that dataclass has no field `{name}`, so building it fails when the worker starts "
            "(`TypeError: unexpected keyword argument` through instantiate, `ConfigKeyError` through the structured "
            "merge)",
            key=o.key,
            span=o.word.span,
            help=f"did you mean `{guess}`?" if guess else f"remove it: {cls.name} has no such field",
        )


def _first_added(key: str, shipped: list[str]) -> tuple[str, str]:
    """(the node, the name) where `key` first leaves the config as verl ships it (`shipped`: its
    keys but those the launch adds): an added `critic.fsdp_config.param_offload` adds
    `fsdp_config` to `critic` when no shipped key is under `critic.fsdp_config`."""
    parent, _, name = key.rpartition(".")
    while "." in parent and not any(k.startswith(parent + ".") for k in shipped):
        parent, _, name = parent.rpartition(".")
    return parent, name


def _recipe_workers(ctx: Context) -> bool:
    """The entry point is a recipe's that ships worker modules of its own (`recipe/spin/fsdp_workers.py`)."""
    place = ctx.app.place_in_tree()
    return bool(place) and place[0] == "recipe" and any(Path(ctx.app.file).parent.glob("*workers*.py"))


@rule(
    "VL109",
    "mandatory-value-unset",
    "error",
)
def mandatory_value_unset(ctx: Context):
    """A mandatory value (`???` in verl's config) that nothing sets, in a node verl builds.

    ## What it does
    Walks the composed config for values left at `???` (OmegaConf's mandatory marker) that no
    override and none of your config files set, under a node with a `_target_` that the verl
    tree being linted converts into that dataclass (`omega_conf_to_dataclass`), when the class
    has that field. A node under a section with an `enable` switch is not judged: whether verl
    builds it depends on that switch and, in some releases, on more (`reward_model.rollout` is
    built in 0.7 only with `reward_model.use_reward_loop`). The finding points at the launch:
    there is no line of yours that set the key. A launch that passes the caller's arguments on
    (`"$@"`) may get the value from there: it is not judged.

    ## Why is this bad?
    Hydra composes and starts the job with a `???` value; it raises only when the value is
    read. Converting the node reads every field (`hydra.utils.instantiate` reads `node[key]`),
    so the worker fails with `omegaconf.errors.MissingMandatoryValue: Missing mandatory value:
    name` after Ray and the workers are up. verl 0.6 made `actor_rollout_ref.rollout.name`
    mandatory: a script written for 0.5, which defaulted to vLLM, fails this way.

    ## Use instead
    Set the key on the launch (`actor_rollout_ref.rollout.name=vllm`, or `sglang`, ...).

    ## Where in verl
    0.9.1 `verl/trainer/config/rollout/rollout.yaml:5` (`name: ???`),
    `verl/workers/config/rollout.py:158` (`name: Optional[str] = MISSING`),
    `verl/utils/config.py:23-50` (`omega_conf_to_dataclass` instantiates a node with a `_target_`).
    """
    root = str(ctx.app.verl.root) if ctx.app.verl else ""
    if not root or ctx.launch.caller_args is not None:
        return  # the caller's arguments ("$@") may set it
    for key in ctx.mandatory_keys():
        parent, _, name = key.rpartition(".")
        if ctx.comp.last_setter(key) is not None or ctx.user_set(key) or _under_a_switch(ctx, parent):
            continue  # an override with a value known at run time only composes `???` too
        cls = config_classes.of_node(root, parent, ctx.get(f"{parent}._target_", None))
        if cls is None or name not in cls.fields:
            continue
        yield ctx.diag(
            "VL109",
            f"`{key}` is mandatory (`???` in verl's config) and the launch does not set it: when the worker builds "
            f"{cls.name} ({cls.where}) from `{parent}`, Hydra raises `MissingMandatoryValue: Missing mandatory value: "
            f"{name}`",
            key=key,
            span=ctx.launch.entry_span,
            help=f"set `{key}=...` on the launch",
        )


def _under_a_switch(ctx: Context, path: str) -> bool:
    """A section on `path` has an `enable` switch: whether verl builds what is under it depends on
    that switch and, in some releases, on more (0.7's `reward_model.use_reward_loop`)."""
    parts = path.split(".")
    absent = object()
    return any(ctx.get(".".join(parts[:i]) + ".enable", absent) is not absent for i in range(1, len(parts) + 1))


ROLLOUT_REGISTRY = "verl/workers/rollout/base.py"
# Code that adds to the registry (a recipe registering its own engine: 0.7.0's r1_ascend).
REGISTRY_EXTENDED = Evidence(
    ("verl/**/*.py",), r"_ROLLOUT_REGISTRY\[.*\]\s*=[^=]|_ROLLOUT_REGISTRY\.(update|setdefault)\("
)


@lru_cache(maxsize=32)
def rollout_names(root: str) -> frozenset[str] | None:
    """The rollout names of the tree's `_ROLLOUT_REGISTRY` (`{("vllm", "async"): ..., ...}`), when
    `get_rollout_class` asserts on it and nothing else in verl/ adds to it; else None. Kept with the
    tree's other facts: parsing the registry's file costs ~1 ms at every Hydra job start."""
    return remembered("facts", tree_facts(root), "rollout names", lambda: _rollout_names(root))


def _rollout_names(root: str) -> frozenset[str] | None:
    text = source_text(Path(root, ROLLOUT_REGISTRY))
    if not text or "in _ROLLOUT_REGISTRY" not in text or tree_has(root, REGISTRY_EXTENDED):
        return None
    try:
        body = ast.parse(text).body
    except (SyntaxError, ValueError):
        return None
    for node in body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["_ROLLOUT_REGISTRY"]
            and isinstance(node.value, ast.Dict)
        ):
            keys = [
                k.elts[0].value if isinstance(k, ast.Tuple) and k.elts and isinstance(k.elts[0], ast.Constant) else None
                for k in node.value.keys
            ]
            return frozenset(keys) if keys and all(isinstance(k, str) for k in keys) else None
    return None


@rule(
    "VL111",
    "rollout-engine-not-registered",
    "error",
    # main_ppo builds the rollout with get_rollout_class, whatever its config; verl's other apps
    # may build their own (the VLA recipe's NaiveRolloutRob takes `name=hf`).
    entry_points=("verl.trainer.main_ppo",),
)
def rollout_not_registered(ctx: Context):
    """A rollout engine name the verl tree has no rollout for.

    ## What it does
    Reads the rollout registry of the tree being linted (`_ROLLOUT_REGISTRY` in
    `verl/workers/rollout/base.py`, the (name, mode) pairs `get_rollout_class` accepts) and
    reports an `actor_rollout_ref.rollout.name` you set that no entry has, for launches of
    `verl.trainer.main_ppo` whatever their config is named. Not judged: a tree without that
    registry (verl < 0.6), one whose code adds to it, a project's own entry point (it may register
    its own engine), and verl's other apps (the VLA recipe builds its own rollout); the mode is
    VL406's.

    ## Why is this bad?
    Hydra accepts any name. The worker asserts `Rollout hf with mode async not found` when it
    builds the rollout, after Ray and the workers are up. The HuggingFace rollout (`hf`) left
    the registry in 0.6; older scripts and issues still use it.

    ## Use instead
    One of the names the finding lists (`vllm`, `sglang`, ... as this tree registers them).

    ## Where in verl
    0.9.1 `verl/workers/rollout/base.py:89-107` (`_ROLLOUT_REGISTRY`, `get_rollout_class`);
    0.7.1 `verl/workers/rollout/base.py:83-101`.
    """
    root = str(ctx.verl_root) if ctx.verl_root else ""
    names = rollout_names(root) if root else None
    key = f"{R}.name"
    name = ctx.get(key, None)
    if names is None or not isinstance(name, str) or not ctx.user_set(key) or name in names:
        return
    if ctx.app.verl_module() is None:
        return  # a project's own entry point: it may register its own engine
    allowed = ", ".join(sorted(names))
    mode = ctx.text(f"{R}.mode") or "async"
    yield ctx.diag(
        "VL111",
        f"`{key}={name}` names no rollout this verl registers ({ROLLOUT_REGISTRY}: {allowed}): "
        f"the worker stops with `AssertionError: Rollout {name} with mode {mode} not found` when it builds the rollout",
        key=key,
        help=f"use one of: {allowed}",
    )
