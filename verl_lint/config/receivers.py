"""How code names the config objects it reads keys from: the reader index's builder
(`code_scan`) and its queries (`reader`) must agree on it."""

from __future__ import annotations

import re

# Receivers that name no config node: which node they hold is told by what else is read from them.
GENERIC = frozenset({"config", "cfg", "conf", "_config", "self.config", "self.cfg", "self._config"})


def names_node(holder: str, node: str) -> bool:
    """A variable named for a config node (`critic_cfg`, `rollout_config` for `critic`, `rollout`)."""
    return node in holder.split("_") and re.search(r"conf|cfg", holder) is not None
