"""The parts of Hydra that composition calls, imported and set up in one place.

Importing Hydra costs ~100-300 ms, so compose.py imports this module only when the first
launch is composed (`compose._hydra`). Importing it sets Hydra up once per process, as
`hydra.main` would: its OmegaConf resolvers, and its plugin registry (see below).
"""

from __future__ import annotations

import os
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
