"""2xx, derived from code: keys verl still accepts but warns about as deprecated.

The facts come from the tree being linted (`config/deprecations.py`): a config dataclass's
`__post_init__` that warns when a field is set (and maybe copies it into its replacement), or
code that warns when the root config has a key. Nothing is curated here; where a curated table
record (VL2xx ineffective, VL4xx removed/renamed) reports the same override, `pack.check` keeps
that one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ..config import classes as config_classes
from ..config.context import Context
from ..config.deprecations import Deprecation, in_config_comments
from ..config.reader import app_sources, key_facts, reader_index
from ..model import Diagnostic, Related, Span
from ..registry import Subject, rule


def _facts(ctx: Context, root: str) -> Callable[[str], list[tuple[Deprecation, str]]]:
    """What the tree says about setting a key of this launch: for a key, each (fact, the key verl
    copies the value into or ""). What holds for every key (the code's facts, the config's
    comments, the configs the launch composes) is read once per launch."""
    in_code = key_facts(Path(root))[0]
    commented = in_config_comments(root)
    own = {(ctx.app.config_name or "").removesuffix(".yaml"), *ctx.comp.verl_configs}

    def facts(key: str) -> list[tuple[Deprecation, str]]:
        out = []
        path, _, field = key.rpartition(".")
        cls = config_classes.of_node(root, path, ctx.get(f"{path}._target_", None) if path else None)
        fact = cls.deprecated.get(field) if cls is not None else None
        if fact is not None:
            out.append((fact, f"{path}.{fact.new}" if fact.new else ""))
        out += [(fact, "") for fact in in_code if fact.key == key]
        out += [(fact, "") for fact in commented if _declared_for(fact, key, own)]
        return out

    return facts


def _declared_for(fact: Deprecation, key: str, configs: set[str]) -> bool:
    """A deprecation that a comment of verl's config file declares is about `key`: in a top-level
    config the launch composes (`ppo_trainer.yaml`, itself or under a project's config of another
    name), the file's own path; in a config
    group's file, the path inside it under a section of the group's name (`rollout/rollout.yaml`
    composed at `actor_rollout_ref.rollout`)."""
    stem, folder = _file_of(fact.where)
    if folder == "config":
        return stem in configs and key == fact.key
    section = key[: -len(fact.key) - 1] if key.endswith("." + fact.key) else None
    return section is not None and section.rsplit(".", 1)[-1] == folder


@lru_cache(maxsize=1024)
def _file_of(where: str) -> tuple[str, str]:
    """(the file's stem, its folder's name) of a `file:line` place."""
    file = Path(where.rpartition(":")[0])
    return file.stem, file.parent.name


def _interpolated(ctx: Context, key: str) -> bool:
    """No override sets `key` and its config node only interpolates another key (a user file's
    `ref.x: ${oc.select:actor.x,...}`): the key it reads gets the finding."""
    if ctx.comp.last_setter(key) is not None or ctx.cfg is None:
        return False
    parent, _, leaf = key.rpartition(".")
    node = OmegaConf.select(ctx.cfg, parent) if parent else ctx.cfg
    return isinstance(node, DictConfig) and leaf in node and OmegaConf.is_interpolation(node, leaf)


def _warns(fact: Deprecation, value) -> bool:
    """verl's guard is true for this composed value."""
    return value is not None if fact.guard == "not-none" else bool(value)


@rule(
    "VL232",
    "deprecated-key",
    "warning",
    subject=Subject(),
)
def deprecated_key(ctx: Context, settings):
    """A key this verl still accepts but warns about as deprecated.

    ## What it does
    Reads the verl tree being linted for the keys it warns about: a config dataclass whose
    `__post_init__` says `if self.old is not None: warnings.warn("... deprecated ...")` (often
    followed by `self.new = self.old`), or code that prints such a warning when the root config
    has a key (`if config.data.get("val_batch_size", None) is not None: print("... deprecated")`),
    or a comment of verl's own config files that declares the key deprecated, on its line or
    right above it (`# [Will be deprecated, use log_prob_micro_batch_size_per_gpu]`,
    `# [Deprecated] Global micro batch size`: the key's path in the launched config's own file,
    or its path inside a config group's file under a section named like the group).
    A key you set that makes that warning fire is reported at the override that set it, with
    verl's own words and where they are. When verl copies the value into another field one to
    one, the finding names that key and offers a safe fix that renames the override (not when
    you set the new key too, or when a `+` would no longer apply); when no code of the tree
    (the entry point's own packages included) reads the new key beyond its config declaration
    (a fork whose workers still read the old one), it is not offered: written so, the setting
    would reach nothing. The message says whether the run shows verl's warning, from the call
    in the source: a `DeprecationWarning` is hidden by Python's default warning filters, a
    `UserWarning` (`warnings.warn` without a class) or `FutureWarning` is shown, a `print` always
    is. Nothing else is judged: a warning under another condition, or a mapping through a
    helper, stays silent.

    ## Why is this bad?
    The run still starts, but the key lives on borrowed time: verl says it will drop it, and
    some releases already ignore it in some code paths. Where you also set the new key, the
    deprecated one wins (`self.new = self.old`), which is rarely what the script's reader expects.

    ## Use instead
    The new key the finding names, or remove the override.

    ## Where in verl
    Derived from the tree itself: e.g. 0.9.1 `verl/workers/config/optimizer.py:59-61`
    (`grad_clip` -> `clip_grad`) and `:117-122` (`warmup_style` -> `lr_scheduler_type`),
    `verl/workers/config/engine.py:219-225` (`vanilla_mbridge`), `verl/utils/config.py:192-197`
    (`data.val_batch_size`), `verl/trainer/config/rollout/rollout.yaml:105` (a comment:
    `log_prob_micro_batch_size`); 0.5.0 `verl/trainer/ppo/ray_trainer.py:543-548`; 0.2.0
    `verl/trainer/config/ppo_trainer.yaml:25` (`ppo_micro_batch_size: null # will be deprecated, ...`).
    """
    root = str(ctx.app.verl.root) if ctx.app.verl else ""
    if not root:
        return
    chosen = {o.key for o in settings}
    facts_of = _facts(ctx, root)
    for key in sorted(chosen):
        facts = facts_of(key)  # most keys have none: then the config is not searched
        if not facts or _interpolated(ctx, key):
            continue
        for fact, new in facts:
            setter = ctx.comp.last_setter(key)
            unknown = setter is not None and setter.value_unknown is not None
            if not (unknown and fact.guard == "not-none") and not (
                ctx.user_set(key) and _warns(fact, ctx.get(key, None))
            ):
                continue
            yield _finding(ctx, key, fact, new, root)
            break  # one finding per key


def _finding(ctx: Context, key: str, fact: Deprecation, new: str, root: str) -> Diagnostic:
    where = f"verl {ctx.verl_version}" if ctx.verl_version else "this verl tree"
    file, _, line = fact.where.rpartition(":")
    maps = f"; verl copies the value into `{new}`" if new else ""
    both = new and ctx.user_set(new)
    # The replacement is read only where the tree's code reads it: a tree whose workers still read
    # the old key (a fork, a project's own worker) would lose the setting to the new one.
    unread = new and not reader_index(Path(root), app_sources(ctx.app)).used_beyond_config(fact.new)
    if unread:
        maps += f", which nothing in {where} reads beyond its config declaration"
        help = f"keep `{key}`: written as `{new}`, the setting would reach no code of this tree"
    elif both:
        maps += f", overwriting the `{new}` you set too"
        help = f"keep only `{new}`"
    else:
        help = f"write `{new}` instead" if new else "remove the override, or set what verl's warning names instead"
    d = ctx.diag(
        "VL232",
        f"`{key}` is deprecated in {where} ({_says(fact)}){maps}",
        key=key,
        help=help,
        related=[new] if both else (),
    )
    span = Span(str(Path(root, file)), int(line), 1, int(line), 1)
    d.related = (
        *d.related,
        Related(key, span, "verl's deprecation " + ("comment" if fact.how == "comment" else "warning")),
    )
    if new and not both and not unread:
        o = ctx.comp.last_setter(key)
        d.fix = ctx.rename_fix(o, new) if o is not None else None
    return d


# Warning classes Python's default filters ignore (outside `__main__`), and the built-in ones they show.
_HIDDEN = {"DeprecationWarning", "PendingDeprecationWarning", "ImportWarning", "ResourceWarning"}
_SHOWN = {
    "Warning",
    "UserWarning",
    "FutureWarning",
    "RuntimeWarning",
    "SyntaxWarning",
    "BytesWarning",
    "UnicodeWarning",
    "EncodingWarning",
}


def _says(fact: Deprecation) -> str:
    """How verl says it, and whether the run shows it: a DeprecationWarning is hidden by Python's
    default warning filters, a UserWarning or FutureWarning is shown."""
    text = f'"{fact.message}"'
    if fact.how == "comment":
        return f"verl's config declares it in a comment, {fact.where}: {text}"
    if fact.how == "print":
        return f"{fact.where} prints: {text}"
    if fact.how == "log":
        return f"{fact.where} logs: {text}"
    if fact.how in _HIDDEN:
        return (
            f"{fact.where} warns: {text}, a {fact.how}, which Python's default warning filters hide: the run shows "
            "nothing"
        )
    if fact.how in _SHOWN:
        return f"{fact.where} warns: {text}, a {fact.how}, which Python shows"
    return f"{fact.where} warns: {text}"
