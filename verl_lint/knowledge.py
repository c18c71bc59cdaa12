"""The knowledge tables of the top-level `rules/` folder (installed as `verl_lint_knowledge`).

Read as package data only (`importlib.resources`), never by a path relative to this file:
whatever else is installed beside verl-lint cannot stand in for a table, and a missing table
is an error, not a rule pack that silently shrinks.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources

import yaml

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10x faster


class MissingTable(RuntimeError):
    """A knowledge table verl-lint ships is not installed: a broken installation."""


def read_text(name: str) -> str:
    """The text of table `name` (e.g. "engine_args/vllm.yaml"); MissingTable when absent."""
    res = resources.files("verl_lint_knowledge").joinpath(name)
    try:
        return res.read_text(encoding="utf-8")
    except OSError:
        raise MissingTable(f"verl-lint's knowledge table {name} is not installed (reinstall verl-lint)") from None


def load_table(name: str):
    """The parsed YAML table `name` (the `.yaml` suffix may be omitted). Parsed once per
    process: do not mutate the result."""
    return _load(name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")


@lru_cache(maxsize=None)
def _load(name: str):
    text = read_text(name)
    # Parsing is most of the rule pack's load time (~15 ms for the rule tables, ~70 ms for the
    # engine snapshots, even with libyaml), which the Hydra callback pays at every job start.
    from .cache import memo

    return memo("tables", f"{yaml.__version__}\0{_LOADER.__name__}\0{text}", lambda: yaml.load(text, Loader=_LOADER), _is_table)


def _is_table(value) -> bool:
    """What a knowledge table parses to: a mapping or a list of records (or nothing)."""
    return value is None or isinstance(value, dict) or (isinstance(value, list) and all(isinstance(r, dict) for r in value))
