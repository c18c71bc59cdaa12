"""Where a script runs and where the paths it names point: the directories it may be run from
when the caller does not say, and the places a path word resolves to from them."""

from __future__ import annotations

import os
from pathlib import Path

from .model import Word


def repository_root(start: Path) -> Path | None:
    """The nearest directory at or above `start` that holds a `.git`: where scripts are run from."""
    return next((p for p in [start, *start.parents] if (p / ".git").exists()), None)


def working_dirs(script: Path) -> tuple[str, ...]:
    """Where a script may be run from when the caller does not say (--cwd), most likely first:
    its repository's root (scripts are normally run from there), each directory between that
    root and the script (a vendored repository inside a project is run from its own root), then
    the script's own directory."""
    here = script.resolve().parent
    root = repository_root(here) or here
    between = [p for p in reversed(here.parents) if root in p.parents]
    return tuple(dict.fromkeys(str(p) for p in (root, *between, here)))


def places(word: Word, cwd: str | None, cwd_base: str | None, run_from: tuple[str, ...]) -> list[str]:
    """Where a path word points, most likely first: one place when it does not rest on an
    assumed working directory (`$(dirname "$0")/conf`; any path once the caller's directory is
    known), else one for each directory in `run_from` the script may be run from (`$(pwd)/conf`,
    `conf` built on `cwd_base`); none for a relative path after a `cd` to an unknown place."""
    text = word.text or ""
    if not os.path.isabs(text) and cwd is None:
        return []
    base = word.cwd if os.path.isabs(text) else cwd_base
    if base is None or not run_from:
        return [text] if os.path.isabs(text) else [os.path.join(cwd, text)] if cwd else []
    rel = os.path.relpath(os.path.join(cwd or base, text), base)
    return [os.path.normpath(os.path.join(d, rel)) for d in run_from]
