"""`verl-lint cache`: where the on-disk cache lives, and cleaning it.

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
* `releases/` — verl releases downloaded for `--verl VERSION` (unpacked wheels), and
  `wheels/`   — engine / torch-npu wheels the tests read. Costly to rebuild (downloads), so
                `clean` keeps them unless `--all` is given.

Only entries verl-lint writes are removed (hash-named `*.pickle`/`*.json` and temp files
in the derived folders, `verl-*` and temp directories in `releases/`, `*.whl` and unpacked
wheel directories in `wheels/`), so a cache directory pointed somewhere unexpected never
loses anything else.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def cache_dir() -> Path:
    """`VERL_LINT_CACHE_DIR`, else `$XDG_CACHE_HOME/verl-lint`, else `~/.cache/verl-lint`."""
    base = os.environ.get("VERL_LINT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "verl-lint"
    )
    return Path(base)


def memo(folder: str, ident: str, compute: Callable[[], T]) -> T:
    """`compute()`, kept on disk as a pickle under `folder/`, named by a hash of `ident`.

    `ident` must name everything the value depends on (with verl-lint's version). A missing or
    corrupt entry is computed again; a read-only cache only costs time. Writes are atomic
    renames, so concurrent runs never read a half-written entry.
    """
    import hashlib
    import pickle

    from . import __version__

    name = hashlib.sha256(f"{__version__}\0{ident}".encode()).hexdigest()[:32]
    path = cache_dir() / folder / f"{name}.pickle"
    try:
        return pickle.loads(path.read_bytes())
    except Exception:  # noqa: BLE001 - a missing or corrupt entry is a miss
        pass
    value = compute()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_bytes(pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))
        os.replace(tmp, path)
    except OSError:
        pass
    return value


# Names verl-lint writes (compiled on first use by `re`: `clean` is rare, start-up is not).
_BASE_FILE = r"^([a-z]+-)?[0-9a-f]{16,64}(\.pickle|\.json|\.\d+\.tmp)$"
DERIVED = ("bases", "engine_args", "verl-allocator", "tables", "specifiers")  # cheap to rebuild: removed by `clean`
_WHEEL = r"^[A-Za-z0-9_.\-]+(\.whl|-[0-9][0-9A-Za-z.+\-_]*)$"
_RELEASE_DIR = r"^(verl-[0-9A-Za-z.+\-_]+|tmp[0-9A-Za-z_\-]+)$"


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


def clean(releases: bool = False) -> tuple[int, int]:
    """Remove the cached bases (and the downloaded releases with `releases=True`).

    Returns (files removed, bytes freed). Safe to run while another verl-lint runs:
    a removed base is composed again; a half-written one is never read (writes are
    atomic renames).
    """
    root = cache_dir()
    files = size = 0
    for name in DERIVED:
        folder = root / name
        if not folder.is_dir() or folder.is_symlink():
            continue
        for entry in sorted(folder.iterdir()):
            if entry.is_file() and re.match(_BASE_FILE, entry.name):
                f, s = _size(entry)
                try:
                    entry.unlink()
                except OSError:
                    continue
                files, size = files + f, size + s
        try:
            folder.rmdir()  # only if nothing else is left in it
        except OSError:
            pass
    for name, pattern in (("releases", _RELEASE_DIR), ("wheels", _WHEEL)):
        folder = root / name
        if not releases or not folder.is_dir() or folder.is_symlink():
            continue
        for entry in sorted(folder.iterdir()):
            if re.match(pattern, entry.name):
                f, s = _remove_tree(entry)
                files, size = files + f, size + s
        try:
            folder.rmdir()
        except OSError:
            pass
    return files, size


def usage() -> dict[str, tuple[int, int]]:
    """{folder: (files, bytes)} of the cache directory's folders."""
    root = cache_dir()
    return {name: _size(root / name) if (root / name).exists() else (0, 0) for name in (*DERIVED, "releases", "wheels")}


def _human(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def add_arguments(parser) -> None:
    """Arguments of `verl-lint cache`: `clean [--all]` and `dir`."""
    sub = parser.add_subparsers(dest="cache_command", metavar="{clean,dir}")
    c = sub.add_parser("clean", help="remove the cached composed configs (and downloaded releases with --all)")
    c.add_argument("--all", action="store_true", help="also remove the verl releases downloaded for --verl VERSION")
    sub.add_parser("dir", help="print the cache directory and what it holds")


def run(args) -> int:
    """`verl-lint cache ...`; returns the exit code."""
    cmd = getattr(args, "cache_command", None)
    root = cache_dir()
    if cmd == "clean":
        files, size = clean(releases=bool(getattr(args, "all", False)))
        what = "cached configs and releases" if getattr(args, "all", False) else "cached configs"
        print(f"removed {files} file{'s' if files != 1 else ''} ({_human(size)}) of {what} from {root}")
        return 0
    if cmd == "dir" or cmd is None:
        print(root)
        for name, (files, size) in usage().items():
            print(f"  {name + '/':<16} {files:5d} files  {_human(size)}")
        return 0
    return 2


__all__ = ["cache_dir", "memo", "clean", "usage", "add_arguments", "run"]
