"""The knowledge tables of the top-level `rules/` folder (packaged as `verl_lint.knowledge`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

_SOURCE_TREE = Path(__file__).resolve().parent.parent / "rules"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10x faster


def read_text(name: str) -> str | None:
    """The text of `name` (e.g. "engine_args/vllm.yaml"), or None when it does not exist."""
    if _SOURCE_TREE.is_dir():  # a source checkout (or editable install)
        path = _SOURCE_TREE / name
        return path.read_text(encoding="utf-8") if path.is_file() else None
    from importlib import resources

    res = resources.files("verl_lint.knowledge").joinpath(name)
    return res.read_text(encoding="utf-8") if res.is_file() else None


def load_table(name: str):
    """The parsed YAML table `name` (the `.yaml` suffix may be omitted), or None when it does
    not exist. Parsed once per process: do not mutate the result."""
    return _load(name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")


@lru_cache(maxsize=None)
def _load(name: str):
    text = read_text(name)
    if text is None:
        return None
    # Parsing is most of the rule pack's load time (~15 ms for the rule tables, ~70 ms for the
    # engine snapshots, even with libyaml), which the Hydra callback pays at every job start.
    from .cache import memo

    return memo("tables", f"{yaml.__version__}\0{_LOADER.__name__}\0{text}", lambda: yaml.load(text, Loader=_LOADER), _is_table)


def _is_table(value) -> bool:
    """What a knowledge table parses to: a mapping or a list of records (or nothing)."""
    return value is None or isinstance(value, dict) or (isinstance(value, list) and all(isinstance(r, dict) for r in value))
