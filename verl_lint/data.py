"""Load the knowledge tables of the top-level `rules/` folder (packaged as `verl_lint.knowledge`)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import yaml

_SOURCE_TREE = Path(__file__).resolve().parent.parent / "rules"
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10x faster


def load_table(name: str):
    """The parsed YAML table `name` (e.g. "removed_keys.yaml"; the suffix may be omitted), or None
    when it does not exist. Parsed once per process: do not mutate the result."""
    return _load(name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")


@lru_cache(maxsize=None)
def _load(name: str):
    if _SOURCE_TREE.is_dir():  # a source checkout (or editable install)
        path = _SOURCE_TREE / name
        return yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER) if path.is_file() else None
    from importlib import resources

    res = resources.files("verl_lint.knowledge").joinpath(name)
    return yaml.load(res.read_text(encoding="utf-8"), Loader=_LOADER) if res.is_file() else None
