"""`verl-lint cache`: where the on-disk cache lives, what goes in it, and cleaning it.

The cache directory (`VERL_LINT_CACHE_DIR`, else `$XDG_CACHE_HOME/verl-lint`, else
`~/.cache/verl-lint`) holds:

* `bases/`    — composed base configs (one pickle per config tree, config name and group
                overrides; see compose.py). Cheap to rebuild: the first run after a clean
                composes each base again with Hydra (~0.2 s each).
* `engine_args/`, `verl-allocator/` — what was read with ast from a verl tree (its engine
                argument assembly, its allocator code) and from torch (its allocator setter);
                cheap to rebuild.
* `tables/`   — the parsed knowledge tables (YAML parsing is most of the rule pack's load
                time), and `specifiers/`, which rules apply to a verl version; cheap to rebuild.
* `reader/`   — reader indexes of verl trees (config/reader.py), and `facts/`, what was read
                from a verl tree's sources (its config classes, the evidence rules rest on),
                one file per tree; cheap to rebuild.
* `results/`  — each linted file's findings, with the files they were computed from
                (results.py), and `fixes/`, how many fixes each would take; cheap to rebuild.
* `releases/` — verl releases downloaded for `--verl VERSION` (unpacked wheels), and
  `wheels/`   — engine wheels the tests and scripts read. Costly to rebuild (downloads), so
                `clean` keeps them unless `--all` is given.

Every directory verl-lint creates here carries a `CACHEDIR.TAG` (the Cache Directory Tagging
Specification, https://bford.info/cachedir/): backup and archiving tools that honour it skip
the cache, and `clean` removes only what is marked — marked entry directories (releases) and
the hash-named files (`*.pickle`, `*.whl`, their `*.tmp`) inside marked folders. A cache
directory pointed somewhere unexpected, or anything placed in it by hand, never loses a file.
(Folders written by verl-lint versions before the tags are left alone; delete them by hand.)

Every cached value is keyed on `code_digest()`, a digest of verl-lint's own files, so a
changed or upgraded linter never reads what another one stored.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import pickle
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from .files import WriteError, replacing
from .limits import paused

T = TypeVar("T")

TAG = "CACHEDIR.TAG"
_SIGNATURE = b"Signature: 8a477f597d28d172789f06886806bc55"
_TAG_TEXT = _SIGNATURE + (
    b"\n# This directory was created by verl-lint; `verl-lint cache clean` may remove it.\n"
    b"# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def cache_dir() -> Path:
    """`VERL_LINT_CACHE_DIR`, else `$XDG_CACHE_HOME/verl-lint`, else `~/.cache/verl-lint`."""
    env = os.environ
    return _cache_dir(env.get("VERL_LINT_CACHE_DIR"), env.get("XDG_CACHE_HOME"), env.get("HOME"))


@lru_cache(maxsize=16)  # a Hydra job start asks a few dozen times: the Path is made once per setting
def _cache_dir(explicit: str | None, xdg: str | None, _home: str | None) -> Path:
    return Path(explicit or os.path.join(xdg or os.path.expanduser("~/.cache"), "verl-lint"))


# ------------------------------------------------------------ markers ----


def is_marked(d: Path) -> bool:
    """`d` is a directory verl-lint created: a real directory (not a symlink) with its tag file."""
    try:
        if not stat.S_ISDIR(os.lstat(d).st_mode) or not stat.S_ISREG(os.lstat(d / TAG).st_mode):
            return False
        with open(d / TAG, "rb") as f:
            return f.read(len(_SIGNATURE)) == _SIGNATURE
    except OSError:
        return False


def new_entry(parent: Path) -> Path:
    """A new marked directory with a temporary name in `parent`, to be filled and then renamed
    into place (so an entry is either absent or complete)."""
    d = Path(tempfile.mkdtemp(dir=parent, prefix="tmp"))
    (d / TAG).write_bytes(_TAG_TEXT)
    return d


def make_dir(path: Path) -> Path:
    """`path`, created with its tag when missing (its parents as plain directories).

    Created under a temporary name and renamed, so a directory is tagged only when verl-lint
    made it, and two runs creating it at once both succeed. Raises OSError when it cannot be
    (e.g. the cache directory is a regular file)."""
    if not path.is_dir():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = new_entry(path.parent)
        try:
            os.rename(tmp, path)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not path.is_dir():  # not another run that got there first
                raise
    return path


def why_unusable(ex: Exception) -> str:
    """What is wrong with the cache directory, for a one-line message."""
    root = cache_dir()
    if root.exists() and not root.is_dir():
        return f"{root} is not a directory"
    return f"{root}: {getattr(ex, 'strerror', None) or ex}"


_WARNED = False


def unusable(ex: Exception) -> None:
    """Say once per process that the cache cannot be written; the run goes on without it."""
    global _WARNED
    if not _WARNED:
        _WARNED = True
        print(f"verl-lint: warning: cannot write the cache ({why_unusable(ex)}); running without it", file=sys.stderr)


# ------------------------------------------------------------ entries ----

_CODE: str | None = None


def code_roots() -> tuple[Path, ...]:
    """verl-lint's package directory and its knowledge tables' (a top-level package, so
    find_spec runs nothing)."""
    spec = importlib.util.find_spec("verl_lint_knowledge")
    tables = [Path(d) for d in (spec.submodule_search_locations or [])] if spec else []
    return (Path(__file__).resolve().parent, *tables)


# Folders of the package no cached value depends on: bytecode, and the rules' example fixtures
# (rules/examples/, ~360 folders read only by rule pages and tests: ~6 ms to stat at every start).
NOT_CODE = ("__pycache__", "examples")


def code_digest() -> str:
    """A digest of verl-lint's own code and knowledge tables, computed once per process.

    Part of every cache key, so a changed or upgraded linter never reads what another one
    stored. Stat-based (relative path, size and mtime_ns of each `.py`/`.yaml` file), not
    content-based: ~1 ms instead of reading ~2 MB at every Hydra job start (the callback's
    budget is 50 ms), and installers and editors always change a file's mtime or size."""
    global _CODE
    if _CODE is None:
        h = hashlib.sha256()
        for root in code_roots():
            stack = [str(root)] if root.is_dir() else []
            inside = len(str(root)) + 1  # an entry's path relative to root: what follows `root/`
            while stack:
                with os.scandir(stack.pop()) as it:
                    entries = sorted(it, key=lambda e: e.name)
                for e in entries:
                    if e.is_dir(follow_symlinks=False):
                        if e.name not in NOT_CODE and not e.name.startswith("."):
                            stack.append(e.path)
                    elif e.name.endswith((".py", ".yaml", ".yml")):
                        st = e.stat()
                        h.update(f"{root.name}/{e.path[inside:]}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        _CODE = h.hexdigest()
    return _CODE


def entry(folder: str, ident: str, root: Path | None = None) -> Path:
    """The file of a cached value in `folder/` (or `root`), named by a hash of `ident` and of
    verl-lint's own code. `ident` must name everything else the value depends on."""
    name = hashlib.sha256(f"{code_digest()}\0{ident}".encode()).hexdigest()[:32]
    return (root or cache_dir() / folder) / f"{name}.pickle"


def store(path: Path, data: bytes) -> None:
    """Write a cache entry in one rename (files.replacing), so concurrent runs never read half of
    one. A cache that cannot be written only costs time (said once)."""
    try:
        make_dir(path.parent)
        with replacing(path, durable=False) as f:
            f.write(data)
    except (OSError, WriteError) as ex:
        unusable(ex)


def memo(
    folder: str, ident: str, compute: Callable[[], T], kind: type | tuple[type, ...] | Callable[[object], bool]
) -> T:
    """`compute()`, kept on disk as a pickle under `folder/` (see `entry`).

    `kind` is what `compute` returns: a type (or tuple of types), or a check function. An entry
    that is missing, corrupt or not of that kind is computed again and rewritten."""
    path = entry(folder, ident)
    try:
        value = pickle.loads(path.read_bytes())
        if isinstance(value, kind) if isinstance(kind, (type, tuple)) else kind(value):
            return value
    except Exception:  # noqa: BLE001 - a missing or corrupt entry is a miss
        pass
    with paused():  # built once for the run and kept: not charged to the launch that comes first (limits.py)
        value = compute()
    store(path, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
    return value


_TABLES: dict[Path, dict] = {}
_PATHS: dict[tuple[Path, str, str], Path] = {}  # (cache dir, folder, ident) -> entry(): hashed once per process


def remembered(folder: str, ident: str, key, compute: Callable[[], T]) -> T:
    """`compute()` for `key`, kept with the other answers about one thing (`ident`: e.g. a verl
    tree and its stamp) in one pickled dict under `folder/`: one file read per process for all of
    them (a Hydra job start asks a few dozen such questions), rewritten when an answer is added.
    `key` and the value must pickle; two processes adding at once may lose an answer, which is
    then computed again."""
    slot = (cache_dir(), folder, ident)
    path = _PATHS.get(slot)
    if path is None:
        path = _PATHS[slot] = entry(folder, ident)
    table = _TABLES.get(path)
    if table is None:
        try:
            table = pickle.loads(path.read_bytes())
        except Exception:  # noqa: BLE001 - a missing or corrupt entry is a miss
            table = None
        table = _TABLES[path] = table if isinstance(table, dict) else {}
    if key in table:
        return table[key]
    with paused():  # (as memo: built once for the run)
        value = compute()
    table[key] = value
    store(path, pickle.dumps(table, protocol=pickle.HIGHEST_PROTOCOL))
    return value


# -------------------------------------------------------------- clean ----

DERIVED = (
    "bases",
    "engine_args",
    "verl-allocator",
    "tables",
    "specifiers",
    "reader",
    "guards",
    "results",
    "fixes",
    "facts",
)  # cheap to rebuild: removed by `clean`
# Files verl-lint writes in its folders: hash-named pickles, wheels, and their temp files
# (compiled on first use by `re`: `clean` is rare, start-up is not).
# (temp files: `.NAME.<hex>.tmp` from files.replacing, `NAME.<random>.tmp` from older releases)
_ENTRY = r"([0-9a-f]{16,64}\.pickle|[A-Za-z0-9_.+!\-]+\.whl)"
_FILE = rf"^(?:{_ENTRY}|\.{_ENTRY}\.[0-9a-f]+\.tmp|{_ENTRY}\.[A-Za-z0-9_]+\.tmp)$"


def _size(p: Path) -> tuple[int, int]:
    """(files, bytes) under `p` without following symlinks."""
    try:
        st = p.lstat()
    except OSError:
        return 0, 0
    if not p.is_dir() or p.is_symlink():
        return 1, st.st_size
    files = size = 0
    for root, _dirs, names in os.walk(p):
        for n in names:
            try:
                size += os.lstat(os.path.join(root, n)).st_size
                files += 1
            except OSError:
                pass
    return files, size


def _remove_tree(p: Path) -> tuple[int, int]:
    files, size = _size(p)
    try:
        if p.is_symlink() or not p.is_dir():
            p.unlink()
        else:
            shutil.rmtree(p)
    except FileNotFoundError:
        pass  # a concurrent clean got there first
    except OSError:
        return 0, 0
    return files, size


def _remove_folder_if_empty(folder: Path) -> None:
    """Remove a marked folder that holds nothing but its tag (a file written meanwhile keeps it)."""
    try:
        if os.listdir(folder) == [TAG]:
            os.unlink(folder / TAG)
            try:
                folder.rmdir()
            except OSError:
                (folder / TAG).write_bytes(_TAG_TEXT)  # something arrived meanwhile: still ours
    except OSError:
        pass


def clean(releases: bool = False) -> tuple[int, int]:
    """Remove the derived entries (and the downloaded releases and wheels with `releases=True`):
    only marked directories and the hash-named files inside marked folders.

    Returns (files removed, bytes freed). Safe to run while another verl-lint runs: a removed
    entry is computed again; a half-written one is never read (writes are atomic renames).
    """
    root = cache_dir()
    files = size = 0
    for name in (*DERIVED, "releases", "wheels") if releases else DERIVED:
        folder = root / name
        if not is_marked(folder):
            continue
        for item in sorted(folder.iterdir()):
            if is_marked(item) or (stat.S_ISREG(_lstat_mode(item)) and re.match(_FILE, item.name)):
                f, s = _remove_tree(item)
                files, size = files + f, size + s
        _remove_folder_if_empty(folder)
    return files, size


def _lstat_mode(p: Path) -> int:
    try:
        return os.lstat(p).st_mode
    except OSError:
        return 0


def usage() -> dict[str, tuple[int, int]]:
    """{folder: (files, bytes)} of the cache directory's folders."""
    root = cache_dir()
    return {name: _size(root / name) if (root / name).exists() else (0, 0) for name in (*DERIVED, "releases", "wheels")}


def _human(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def add_arguments(parser) -> None:
    """Arguments of `verl-lint cache`: `clean [--all]`, `dir` and `info`."""
    sub = parser.add_subparsers(dest="cache_command", metavar="{clean,dir,info}")
    c = sub.add_parser("clean", help="remove the cached composed configs (and downloaded releases with --all)")
    c.add_argument("--all", action="store_true", help="also remove the verl releases downloaded for --verl VERSION")
    sub.add_parser("dir", help="print the cache directory (only its path: usable as `$(verl-lint cache dir)`)")
    sub.add_parser("info", help="print the cache directory and what each part of it holds")


def run(args) -> int:
    """`verl-lint cache ...`; returns the exit code."""
    cmd = getattr(args, "cache_command", None)
    root = cache_dir()
    if cmd == "clean":
        files, size = clean(releases=bool(getattr(args, "all", False)))
        what = "cached configs and releases" if getattr(args, "all", False) else "cached configs"
        print(f"removed {files} file{'s' if files != 1 else ''} ({_human(size)}) of {what} from {root}")
        return 0
    if cmd in ("dir", "info", None):
        print(root)
        if root.exists() and not root.is_dir():
            print(
                f"verl-lint: warning: cache directory {root} is not a directory; runs go without the cache",
                file=sys.stderr,
            )
        if cmd == "dir":
            return 0
        for name, (files, size) in usage().items():
            print(f"  {name + '/':<16} {files:5d} files  {_human(size)}")
        return 0
    return 2


__all__ = [
    "cache_dir",
    "code_digest",
    "code_roots",
    "entry",
    "store",
    "memo",
    "remembered",
    "make_dir",
    "new_entry",
    "is_marked",
    "clean",
    "usage",
    "add_arguments",
    "run",
]
