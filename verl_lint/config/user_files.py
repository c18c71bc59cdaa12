"""Where the project's own config files set each value of a composed config.

Hydra merges the files of the defaults list in order (`_compose_config_from_defaults_list`);
compose.py records that list while composing a base. Here the list is read again: verl's
shipped files only say which keys verl's config has, and each YAML file of the project's own
(outside the verl package: a project's `config/`, a recipe's) is parsed with its positions, so a
value the user chose there is located at its `file:line:col` like an override on the command
line. Plain YAML, read as text: nothing is imported or run.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import NamedTuple

import yaml

from ..files import read_regular

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class Merged(NamedTuple):
    """One entry of the defaults list, in merge order."""

    file: str  # the YAML file Hydra loaded
    name: str  # its config path in the search path (`ppo_trainer`, `actor/dp_actor`)
    package: str  # where its content lands ("" = the root)
    user: bool  # the project's own file, not verl's shipped config (nor Hydra's)
    primary: bool = False  # the launch's primary config (--config-name)


class FileValue(NamedTuple):
    """A value a project config file chose: the last writer of `key` in merge order."""

    key: str  # dotted, under the file's package
    text: str  # the value as written (`true`, `0.01`, `[a, b]`)
    added: bool  # verl's shipped config has no such key: the file adds it
    path: str
    line: int  # 1-based, the key's line and column; the span ends with the value on that line
    col: int
    end_line: int
    end_col: int
    key_bytes: tuple[int, int] = (0, 0)  # the key's name in the file, as byte offsets (a rename edits it)


def merged_entry(source_path: str, default, verl_root: Path | None) -> Merged | None:
    """The entry of Hydra's defaults list `default` (a ResultDefault) loaded from `source_path`
    (`file:///dir`), else None (Hydra's own `pkg://` and `structured://` configs)."""
    if not source_path.startswith("file://") or not default.config_path:
        return None
    name = default.config_path if default.config_path.endswith((".yaml", ".yml")) else f"{default.config_path}.yaml"
    file = os.path.realpath(os.path.join(source_path[len("file://") :], name))
    return Merged(file, default.config_path, default.package or "", is_user_file(file, verl_root), default.primary)


def is_user_file(file: str, verl_root: Path | None) -> bool:
    """A project's own config file: anything outside the verl package (`<root>/verl/`). A recipe's
    config in a verl checkout is the recipe's choice, not verl's default."""
    if verl_root is None:
        return True
    package = os.path.realpath(verl_root / "verl")
    return not (file == package or file.startswith(package + os.sep))


def file_values(merged: list[Merged | None], verl_root: Path | None) -> tuple[FileValue, ...]:
    """The values the user files of `merged` chose that are still in effect after every later file
    of the defaults list merged (a later file replaces a key, and a scalar replaces a section).

    A value equal to verl's own is no choice: verl's shipped value of the key is the one an
    earlier shipped file of the defaults list gave it, else the one verl's config of the same name
    gives it (a project that copies `optim/fsdp.yaml` into its own config dir restates verl's
    defaults, and is judged only where it differs)."""
    merged = [m for m in merged if m is not None]
    if not any(m.user for m in merged):
        return ()
    shipped: dict[str, object] = {}  # key -> verl's value (sections: _SECTION)
    owner: dict[str, FileValue] = {}
    verl_config = verl_root / "verl" / "trainer" / "config" if verl_root is not None else None
    for m in merged:
        loaded = _load(m.file)
        if loaded is None:
            continue
        text, root = loaded
        if not m.user:
            for key, _, v_node in _leaves(root, m.package, top=True):
                for gone in [k for k in owner if k == key or k.startswith(key + ".")]:
                    del owner[gone]  # verl's later file replaces the value
                _ship(shipped, key, v_node)
            continue
        own = _counterpart(verl_config, m) if verl_config is not None else {}
        for key, k_node, v_node in _leaves(root, m.package, top=True):
            for gone in [k for k in owner if k.startswith(key + ".")]:
                del owner[gone]  # a value replaces the section below it
            verl_value = shipped.get(key, own.get(key, _ABSENT))
            if verl_value is not _ABSENT and verl_value == _value(v_node):
                owner.pop(key, None)  # restates verl's value
                continue
            start, end = k_node.start_mark, v_node.end_mark
            same_line = end.line == start.line
            value = text[v_node.start_mark.index : end.index] if v_node.start_mark.line == end.line else _flow(v_node)
            if v_node.tag == "tag:yaml.org,2002:bool":
                value = "True" if value.strip().lower() in ("true", "yes", "on") else "False"  # as Hydra prints it
            end = end if same_line else k_node.end_mark
            added = key not in shipped and key not in own
            key_start = len(text[: k_node.start_mark.index].encode("utf-8", "surrogateescape"))
            key_bytes = (
                key_start,
                key_start
                + len(text[k_node.start_mark.index : k_node.end_mark.index].encode("utf-8", "surrogateescape")),
            )
            owner[key] = FileValue(
                key,
                value.strip(),
                added,
                m.file,
                start.line + 1,
                start.column + 1,
                end.line + 1,
                end.column + 1,
                key_bytes,
            )
    return tuple(owner.values())


_ABSENT = object()
_SECTION = object()


def _ship(shipped: dict[str, object], key: str, v_node) -> None:
    parts = key.split(".")
    for i in range(1, len(parts)):
        shipped[".".join(parts[:i])] = _SECTION
    shipped[key] = _value(v_node)


def _counterpart(verl_config: Path, m: Merged) -> dict[str, object]:
    """verl's values in its config of the same name as the user file `m`, under `m`'s package. A
    primary config with no namesake in verl is compared with verl's own primary config (a copy of
    `ppo_trainer.yaml` renamed `ppo_trainer_split.yaml` restates its defaults too)."""
    name = m.name.removesuffix(".yaml").removesuffix(".yml")
    file = verl_config / f"{name}.yaml"
    if m.primary and not file.is_file():
        file = verl_config / ("ppo_megatron_trainer.yaml" if "megatron" in name else "ppo_trainer.yaml")
    loaded = _load(str(file))
    out: dict[str, object] = {}
    if loaded is not None:
        for key, _, v_node in _leaves(loaded[1], m.package, top=True):
            _ship(out, key, v_node)
    return out


def _value(node):
    """A node's value as YAML means it (`0.000` == `0.0`, `True` == `true`)."""
    try:
        return yaml.constructor.SafeConstructor().construct_object(node, deep=True)
    except yaml.YAMLError:
        return _ABSENT


def _load(file: str) -> tuple[str, yaml.MappingNode] | None:
    """A YAML file's text and its top mapping, with positions; None when it is not one."""
    text = _text(file)
    if text is None:
        return None
    try:
        root = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError:
        return None
    return (text, root) if isinstance(root, yaml.MappingNode) else None


def _text(file: str) -> str | None:
    try:
        return read_regular(file)[: 4 * 2**20].decode("utf-8", "replace")
    except OSError:
        return None


def _leaves(node: yaml.MappingNode, prefix: str, top: bool = False):
    """(dotted key, key node, value node) of every leaf under `node`: a scalar, a list, an empty
    section. The file's own `defaults` list and `hydra` node are not config values."""
    for k_node, v_node in node.value:
        if not isinstance(k_node, yaml.ScalarNode) or k_node.value == "<<":
            continue
        name = k_node.value
        if top and (name == "defaults" or (name == "hydra" and not prefix)):
            continue
        key = f"{prefix}.{name}" if prefix else name
        if isinstance(v_node, yaml.MappingNode) and v_node.value:
            yield from _leaves(v_node, key)
        else:
            yield key, k_node, v_node


def _flow(node) -> str:
    """A value written over several lines, in one line."""
    try:
        value = yaml.load(yaml.serialize(node), Loader=_LOADER)
    except yaml.YAMLError:
        return "..."
    return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("...").strip()
