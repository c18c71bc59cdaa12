"""verl's source read as text, never imported: the facts rules rest on (`Evidence` of a rule,
the knowledge tables' `requires:` facts), read once per process."""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple


class Evidence(NamedTuple):
    """A piece of verl's source a rule mirrors: the regex `pattern` found in one of `files`
    (paths or globs relative to the tree root, the directory holding `verl/`)."""

    files: tuple[str, ...]
    pattern: str


@lru_cache(maxsize=1024)
def source_text(path: str | Path) -> str | None:
    """A file of a verl tree as text, read once per process (None when absent): the one reader
    of the source facts rules rest on (`Evidence` here, the tables' `requires:` facts)."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


@lru_cache(maxsize=4096)
def tree_has(root: str, ev: Evidence) -> bool:
    """`ev` is in the verl tree at `root` (read as text, never imported; kept per tree root)."""
    rx = re.compile(ev.pattern)
    base = Path(root)
    for f in ev.files:
        paths = sorted(base.glob(f)) if any(c in f for c in "*?[") else [base / f]
        if any(rx.search(source_text(p) or "") for p in paths):
            return True
    return False


@lru_cache(maxsize=256)
def sources_have(paths: tuple[Path, ...], pattern: str) -> bool:
    """The Python files of `paths` (files, or packages walked) contain `pattern`: e.g. a project
    built on verl that replaces one of verl's functions (read as text, never imported)."""
    rx = re.compile(pattern)
    for base in paths:
        files = [base] if base.suffix == ".py" else sorted(base.rglob("*.py")) if base.is_dir() else []
        if any(rx.search(source_text(f) or "") for f in files[:5000]):
            return True
    return False
