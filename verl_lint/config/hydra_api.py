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

__all__ = [
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


# `[+|++|~]a.b.c=VALUE`, a key of plain names and a value that is a bool, null, a decimal int or
# float or a plain word: exactly what Hydra's lexer reads as one INT, FLOAT, BOOL, NULL or ID token
# (tests/test_compose.py compares it with Hydra's parser). Anything else is Hydra's to parse.
_SIMPLE = re.compile(r"(\+\+|\+|~)?([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)=(.+)", re.ASCII)
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)", re.ASCII)
_FLOAT = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][+-]?[0-9]+)?|[eE][+-]?[0-9]+)", re.ASCII)
_WORD = re.compile(r"[A-Za-z_]\w*", re.ASCII)
_CONSTANTS = {"true": True, "True": True, "false": False, "False": False, "null": None}
_NOT_WORDS = {"true", "false", "null", "inf", "nan"}  # in any case: Hydra's BOOL, NULL and FLOAT tokens
_TYPES = {None: OverrideType.CHANGE, "+": OverrideType.ADD, "++": OverrideType.FORCE_ADD, "~": OverrideType.DEL}


def simple_override(line: str) -> Override | None:
    """`line` as Hydra's parser reads it, when it has one of the simple forms; else None."""
    m = _SIMPLE.fullmatch(line)
    if m is None:
        return None
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
    else:
        return None
    return Override(
        type=_TYPES[prefix], key_or_group=key, _value=value, value_type=ValueType.ELEMENT, package=None, input_line=line
    )
