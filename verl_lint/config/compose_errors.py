"""The findings a composition's failures become: an override Hydra rejects, a base it cannot
compose (located at the override or the defaults-list entry at fault)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from ..catalogue import (
    ADD_EXISTING_KEY,
    CONFIG_COMPOSITION_ERROR,
    DELETE_MISSING_KEY,
    OVERRIDE_REJECTED,
    UNKNOWN_CONFIG_KEY,
)
from ..launch.locate import HydraApp
from ..model import Diagnostic, Fix, Related, Span
from .keys import closest_key


def first_line(ex: BaseException) -> str:
    text = str(ex).strip()
    return text.splitlines()[0] if text else type(ex).__name__


def describe(ex: BaseException) -> str:
    msg = first_line(ex)
    cause = ex.__cause__
    if cause is not None and first_line(cause) not in msg:
        msg += f" ({first_line(cause)})"
    return msg


def override_error(ex: BaseException, ao, cfg: DictConfig) -> Diagnostic:
    """The finding for an override Hydra rejected (`ao`: the compose.AppliedOverride), in `cfg` as composed so far."""
    text = first_line(ex)
    span = ao.word.span
    if text.startswith("Could not override"):
        guess = closest_key(cfg, ao.key)
        added = f"+{ao.key}=..." if ao.value_unknown else f"+{ao.line}"
        help = f"did you mean `{guess}`?" if guess else f"if the key is new, add it with `{added}`"
        if guess is None:
            parent = ao.key.rsplit(".", 1)[0] if "." in ao.key else ""
            if parent and OmegaConf.select(cfg, parent, default=None, throw_on_missing=False) is not None:
                help = f"`{parent}` has no key `{ao.key.rsplit('.', 1)[1]}`; to add one use `{added}`"
        d = UNKNOWN_CONFIG_KEY.finding(
            f"`{ao.key}` is not a key of this config: Hydra stops with \"Could not override '{ao.key}'\"",
            span,
            help=help,
            key=ao.key,
        )
        if guess and OmegaConf.select(cfg, guess, default=None, throw_on_missing=False) is not None:
            # Unsafe: the key the user meant is a guess, and the value then takes effect.
            d.fix = Fix(f"rename `{ao.key}` to `{guess}`", False, "rename-key", span, old=ao.key, new=guess)
        return d
    if text.startswith("Could not append to config"):
        return ADD_EXISTING_KEY.finding(
            f'`+{ao.key}` adds a key that already exists; Hydra stops with "Could not append to config"',
            span,
            help=f"drop the `+` to override it (`{ao.line.lstrip('+')}`), or use `++` to add-or-override",
            key=ao.key,
        )
    if text.startswith("Could not delete"):
        return DELETE_MISSING_KEY.finding(
            f"`~{ao.key}` deletes a key that is not in the config: {text}",
            span,
            help="remove this override",
            key=ao.key,
        )
    return OVERRIDE_REJECTED.finding(
        f"Hydra rejects this override: {describe(ex)}",
        span,
        help="check the value's type and syntax against the config",
        key=ao.key,
    )


def base_error(ex: Exception, applied, anchor: Span, app: HydraApp) -> Diagnostic:
    """The finding for a base Hydra could not compose, at the group override it is about (`applied`:
    (AppliedOverride, parsed override) pairs), else at `anchor`."""
    text = str(ex)
    span, key = anchor, ""
    for ao, parsed in applied:  # the overrides that went into the base
        group = parsed.key_or_group
        spelled = f"{group}@{parsed.package}" if parsed.package is not None else group
        needles = (
            f"'{ao.key}'",  # Could not override 'model_engine'. No match in the defaults list.
            f"'{spelled}'",  # Could not override 'data@data'.
            ao.line,  # force-add of config groups is not supported: '++data=legacy_data'
            f"'{group}/{parsed.value()}'",  # In 'ppo_trainer': Could not find 'critic/fsdp2_critic'
            f"Multiple values for {group}.",  # +critic=megatron_critic
        )
        if any(n in text for n in needles):
            span, key = ao.word.span, ao.key
            break
    else:
        unsearched = not_on_searchpath(text, app)
        if unsearched:
            return unsearched_finding(text, anchor, *unsearched)
    return CONFIG_COMPOSITION_ERROR.finding(
        f"Hydra cannot compose the config: {text}",
        span,
        help="check the config group option and --config-name against the config directory",
        key=key,
    )


COULD_NOT_LOAD = r"In '([^']+)': Could not load '([^']+)'"  # a pattern: compiled (by `re`) on that error only


def not_on_searchpath(text: str, app: HydraApp) -> tuple[str, Span | None] | None:
    """(the config, where the project's file names it) when Hydra could not load a config that
    is one of verl's own (`ppo_trainer`) because the project's config directory does not put
    verl's on its search path; None for any other failure."""
    m = re.search(COULD_NOT_LOAD, text)
    if m is None or app.verl is None:
        return None
    parent, missing = m.groups()
    shipped = app.verl.root / "verl" / "trainer" / "config"
    if not (shipped / f"{missing}.yaml").is_file() or any(Path(d) == shipped for d in app.config_dirs):
        return None
    if any(s == f"file://{shipped}" or s.endswith("verl.trainer.config") for s in app.searchpath or ()):
        return None
    named = next((Path(d) / f"{parent}.yaml" for d in app.config_dirs if (Path(d) / f"{parent}.yaml").is_file()), None)
    if named is None:
        return missing, None
    entry = re.compile(rf"^(\s*-\s*['\"]?)({re.escape(missing)})['\"]?\s*(?:#.*)?$")
    lines = named.read_text(encoding="utf-8", errors="replace").splitlines()
    for n, line in enumerate(lines, 1):
        e = entry.match(line)
        if e:
            cwd = os.getcwd()  # shown as the user would name it, as file_setting does
            path = os.path.relpath(named, cwd) if str(named).startswith(cwd + os.sep) else str(named)
            return missing, Span(path, n, e.end(1) + 1, n, e.end(2) + 1)
    return missing, None


def unsearched_finding(text: str, anchor: Span, missing: str, entry: Span | None) -> Diagnostic:
    where = f" to {entry.path}" if entry else " to the primary config"
    d = CONFIG_COMPOSITION_ERROR.finding(
        f"Hydra cannot compose the config: {text} `{missing}` is one of verl's configs "
        f"(verl/trainer/config/{missing}.yaml), "
        "which Hydra finds only on the search path, and the project's config does not put verl's config directory on "
        "it",
        anchor,
        help=f"add `hydra: {{searchpath: [pkg://verl.trainer.config]}}`{where} (beside its defaults list)",
    )
    if entry is not None:
        d.related = (Related("", entry, f"its defaults list names `{missing}`"),)
    return d
