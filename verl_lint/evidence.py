"""verl's source read as text, never imported: the facts rules rest on (`Evidence` of a rule,
the knowledge tables' `requires:` facts), read once per process, and for an installed (or
unpacked) wheel kept on disk with the wheel's stamp (`cache.remembered`, folder `facts/`): a
Hydra job start then reads one file instead of the hundreds a glob covers.

A rule's evidence has one form, `Evidence`, a module constant: on the rule (`evidence=`,
`unless=`) where it gates the whole rule, or read by its check (`ctx.verl_has(EV)`) where it
decides what the rule judges; `consulted` finds the latter in the check's code, so that the
rule's page lists both."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from functools import lru_cache
from pathlib import Path
from types import CodeType, FunctionType, ModuleType
from typing import Any, NamedTuple

from .cache import remembered


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


def wheel_record(root: Path) -> str | None:
    """The stamp of an installed (or unpacked) verl wheel at `root`: its RECORD's path, size and
    mtime (installers replace files, they never edit them in place); None for a checkout."""
    for record in sorted(Path(root).glob("verl-*.dist-info/RECORD")):
        try:
            st = record.stat()
        except OSError:
            continue
        return f"{record}\0{st.st_size}\0{st.st_mtime_ns}"
    return None


@lru_cache(maxsize=4096)
def tree_has(root: str, ev: Evidence) -> bool:
    """`ev` is in the verl tree at `root` (read as text, never imported; kept per tree root, and
    on disk for a wheel)."""
    stamp = _wheel_stamp(root)
    if stamp is None:
        return _search(root, ev)
    return remembered("facts", f"evidence\0{root}\0{stamp}", ev, lambda: _search(root, ev))


@lru_cache(maxsize=64)
def _wheel_stamp(root: str) -> str | None:
    return wheel_record(Path(root))


def _search(root: str, ev: Evidence) -> bool:
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


def consulted(check: Callable) -> tuple[tuple[str, Evidence], ...]:
    """The `Evidence` a rule's `check` reads, as (the module constant's name, the evidence), first
    met first: the constants its code names (and the Evidence inside a constant tuple, list or
    dict: `MINI_CHECKS[section]`), through the functions of its own package it calls or wraps.
    Read from the code objects, so a rule page lists what the code does; nothing is called (a
    lazily loaded module named by the code stays unloaded)."""
    package = check.__module__.rpartition(".")[0]
    out: dict[Evidence, str] = {}
    seen: set[int] = set()

    def walk(fn: Any) -> None:
        while not isinstance(fn, FunctionType) and callable(getattr(fn, "__wrapped__", None)):
            fn = fn.__wrapped__  # lru_cache, functools.wraps
        if not isinstance(fn, FunctionType) or id(fn) in seen or not fn.__module__.startswith(package):
            return
        seen.add(id(fn))
        cells = [c.cell_contents for c in fn.__closure__ or () if _filled(c)]
        for name, value in [*((n, fn.__globals__.get(n)) for n in _names(fn.__code__)), *(("", v) for v in cells)]:
            kind = type(value)  # never an attribute of `value`: a lazy module would load
            if issubclass(kind, ModuleType):
                continue
            for ev in _evidence_in(value):
                out.setdefault(ev, name)
            if kind is FunctionType or hasattr(kind, "cache_info"):
                walk(value)

    walk(check)
    return tuple((name, ev) for ev, name in out.items())


def _names(code: CodeType) -> Iterator[str]:
    """The global names a code object and the code nested in it (lambdas, comprehensions) use."""
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, CodeType):
            yield from _names(const)


def _evidence_in(value: Any) -> list[Evidence]:
    if type(value) is Evidence:
        return [value]
    if type(value) in (tuple, list):
        return [ev for item in value for ev in _evidence_in(item)]
    if type(value) is dict:
        return [ev for item in value.values() for ev in _evidence_in(item)]
    return []


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - an empty cell raises
    except ValueError:
        return False
    return True
