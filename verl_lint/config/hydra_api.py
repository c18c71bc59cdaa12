"""The parts of Hydra that composition calls, imported and set up in one place.

Importing Hydra costs ~100-300 ms, so compose.py imports this module only when the first
launch is composed (`compose._hydra`). Importing it sets Hydra up once per process, as
`hydra.main` would: its OmegaConf resolvers, and its plugin registry (see below).
"""

from __future__ import annotations

import os
import re
import site
import sys

import hydra
from hydra._internal.config_loader_impl import ConfigLoaderImpl
from hydra._internal.config_repository import CachingConfigRepository, ConfigRepository
from hydra._internal.config_search_path_impl import ConfigSearchPathImpl
from hydra._internal.defaults_list import create_defaults_list
from hydra._internal.utils import create_config_search_path
from hydra.core.config_search_path import SearchPathQuery
from hydra.core.override_parser.overrides_parser import OverridesParser
from hydra.core.override_parser.types import Override, OverrideType, ValueType
from hydra.core.plugins import Plugins
from hydra.core.singleton import Singleton
from hydra.core.utils import JobRuntime, setup_globals
from hydra.errors import HydraException, OverrideParseException
from hydra.types import RunMode
from omegaconf import AnyNode, DictConfig, ValueNode

from .keys import plain_node

__all__ = [
    "apply_override",
    "CachingConfigRepository",
    "ConfigLoaderImpl",
    "ConfigRepository",
    "ConfigSearchPathImpl",
    "HydraException",
    "JobRuntime",
    "OverrideParseException",
    "PARSER",
    "RunMode",
    "SearchPathQuery",
    "create_config_search_path",
    "create_defaults_list",
    "hydra",
    "parse_override",
]


def _discover_installed_plugins() -> None:
    """Let Hydra scan for plugins only where installed packages live.

    Hydra imports every module of every `hydra_plugins` package on `sys.path` the first time
    it needs a plugin (the search path of a compose). A scanned repository is on `sys.path`
    under `python -m` or `PYTHONPATH=.`, and its `hydra_plugins/` would run. Plugins in
    site-packages (and beside Hydra) were installed by the user, as in their real launch.
    Inside a running Hydra app (the callback) the registry already exists and is left alone.
    """
    if Plugins in Singleton._instances:
        return
    installed = {os.path.realpath(p) for p in (*site.getsitepackages(), site.getusersitepackages())}
    installed.add(os.path.realpath(os.path.dirname(os.path.dirname(hydra.__file__))))
    # The standard library stays: a plugin's own imports (zipfile for the pkg:// config source)
    # may not be loaded yet.
    stdlib = os.path.realpath(os.path.dirname(os.__file__))
    installed.update({stdlib, os.path.join(stdlib, "lib-dynload")})
    saved = sys.path[:]
    sys.path[:] = [p for p in saved if p and os.path.realpath(p) in installed]
    try:
        Plugins.instance()
    finally:
        sys.path[:] = saved


setup_globals()
_discover_installed_plugins()
PARSER = OverridesParser.create()


def parse_override(line: str) -> Override:
    """Hydra's Override for one command-line override (raises OverrideParseException as Hydra
    does). The forms most launches are made of are read without Hydra's grammar (`simple_override`),
    which costs ~0.5 ms a line: a cold run of many launches parses a few new lines each."""
    return simple_override(line) or PARSER.parse_overrides([line])[0]


# `[+|++|~]a.b.c=VALUE` (or `~a.b.c`), a key of plain names and a value that is a bool, null, a
# decimal int or float or a plain word: exactly what Hydra's lexer reads as one INT, FLOAT, BOOL,
# NULL or ID token; or a text of names, digits, `.`, `/` and `-` that is several of its tokens
# (a path, `qwen2.5-7b_run`), which Hydra joins into that very string. tests/test_compose.py
# compares it with Hydra's parser. Anything else is Hydra's to parse.
_SIMPLE = re.compile(r"(\+\+|\+|~)?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)=(.+)", re.ASCII)
_DELETE = re.compile(r"~([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)", re.ASCII)
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)", re.ASCII)
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)", re.ASCII)
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*", re.ASCII)  # Hydra's ID
_PLAIN_TEXT = re.compile(r"[A-Za-z0-9_./-]+", re.ASCII)
# One whole token of Hydra's OverrideLexer (VALUE_MODE), as its grammar defines them: FLOAT, INT,
# BOOL, NULL, ID. A plain text that is none of them is several tokens.
_UNSIGNED = r"(?:0|[1-9](?:_?[0-9])*)"
_POINT = rf"(?:{_UNSIGNED}\.|{_UNSIGNED}?\.[0-9](?:_?[0-9])*)"
_ONE_TOKEN = re.compile(
    rf"[+-]?(?:{_POINT}|(?:{_UNSIGNED}|{_POINT})[eE][+-]?[0-9](?:_?[0-9])*|[Ii][Nn][Ff]|[Nn][Aa][Nn])"
    rf"|[+-]?{_UNSIGNED}|[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|[Nn][Uu][Ll][Ll]|[A-Za-z_][A-Za-z0-9_-]*",
    re.ASCII,
)
_CONSTANTS = {"true": True, "True": True, "false": False, "False": False, "null": None}
_NOT_WORDS = {"true", "false", "null", "inf", "nan"}  # in any case: Hydra's BOOL, NULL and FLOAT tokens
_TYPES = {None: OverrideType.CHANGE, "+": OverrideType.ADD, "++": OverrideType.FORCE_ADD, "~": OverrideType.DEL}


def simple_override(line: str) -> Override | None:
    """`line` as Hydra's parser reads it, when it has one of the simple forms; else None."""
    m = _SIMPLE.fullmatch(line)
    if m is None:
        d = _DELETE.fullmatch(line)
        if d is None:
            return None
        return Override(
            type=OverrideType.DEL, key_or_group=d.group(1), value_type=None, _value=None, package=None, input_line=line
        )
    prefix, key, text = m.groups()
    value: object
    if text in _CONSTANTS:
        value = _CONSTANTS[text]
    elif _INT.fullmatch(text):
        value = int(text)
    elif _FLOAT.fullmatch(text):
        value = float(text)
    elif _WORD.fullmatch(text) and text.lower() not in _NOT_WORDS:
        value = text
    elif _PLAIN_TEXT.fullmatch(text) and not _ONE_TOKEN.fullmatch(text):
        value = text
    else:
        return None
    return Override(
        type=_TYPES[prefix], key_or_group=key, _value=value, value_type=ValueType.ELEMENT, package=None, input_line=line
    )


def apply_override(override: Override, cfg: DictConfig) -> None:
    """Hydra's `_apply_overrides_to_config` for one override of a composed config. A plain
    `a.b=VALUE` of a bool, number or string on a value node the config has is set as OmegaConf
    sets it, by the node's `_set_value`, without `OmegaConf.update`'s checks at each step (most
    of a launch's overrides; ~1.5 ms a launch). Anything else, and any error, is left to Hydra."""
    if override.type is OverrideType.CHANGE and override.package is None:
        if _set_existing(cfg, override.key_or_group, override.value()):
            return
    ConfigLoaderImpl._apply_overrides_to_config([override], cfg)


def _set_existing(cfg: DictConfig, key: str, value: object) -> bool:
    """OmegaConf.update(cfg, key, value) when the key's path is plain (`keys.plain_node`: a dict
    at each step) and it ends at a value node that takes a value in place (OmegaConf's
    `_set_item_impl`: an AnyNode, or a node with a type); False, with nothing changed, in any
    other case."""
    if type(value) not in (bool, int, float, str) or isinstance(value, str) and ("$" in value or value == "???"):
        return False  # (an interpolation, or a value OmegaConf keeps as it is written: its own rules)
    node = plain_node(cfg, key)
    if not isinstance(node, ValueNode) or not (isinstance(node, AnyNode) or node._has_ref_type()):
        return False
    if node._get_parent()._get_flag("readonly"):  # (its section's flag, whatever the node's own says)
        return False
    try:
        node._set_value(value)  # validates and converts; on failure the node is unchanged
    except Exception:  # noqa: BLE001 - Hydra's own path reports it, with its message
        return False
    return True
