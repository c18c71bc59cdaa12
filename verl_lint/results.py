"""The per-file result cache: a warm run reads a file's findings back instead of parsing,
composing and checking it again, and imports none of Hydra, OmegaConf or tree-sitter.

A file's findings are a function of its text and of everything read while linting it. The key
holds what is known before linting: the text, the name it is reported under, the options, the
working directory, verl-lint's own code, the Python environment (its `sys.path` directories'
mtimes change when a package is installed or removed) and the verl tree the script's launches
resolve to (its stamp: the wheel's RECORD, or each `.py`/`.yaml` file's size and mtime).

What is found only while linting (a sourced file, the project's own config directory, a
requirements file naming the vLLM version) is recorded with an audit hook: files opened for
reading, directories listed, and files a stamp judges by size and mtime (the `verl_lint.read`
event). An entry is used only while each of those files has the same size and mtime and each
of those directories lists the same names.

Reads of in-process memos (a base config composed for an earlier file) leave no trace, so an
entry lists every file read in this process so far, not only its own: more than it needs, never
less. Python's own installation, the cache and verl-lint's files are left out: the key covers
them.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
from collections.abc import Callable
from pathlib import Path

from . import __version__
from .cache import cache_dir, code_roots, entry, store
from .launch.locate import VerlTree, stamp_covers, tree_stamp, verl_tree_for
from .runs import FileReport, Options

FOLDER = "results"
_FORMAT = "1"
_ABSENT = (-1, -1)  # the stamp of a file that did not exist when it was looked for

_recording = False
_read: set[str] = set()  # files opened for reading while linting, in this process
_listed: set[str] = set()  # directories listed while linting


def _audit(event: str, args: tuple) -> None:
    """Records reads; sys.addaudithook cannot be removed, so it stays cheap when not recording.
    A file is stamped (a directory listed) when it is first read, before its content is: one
    changed while it is linted makes the entry a miss next time, never a stale hit."""
    global _recording
    if not _recording:
        return
    _recording = False  # stamping stats and lists: not a read of the script's
    try:
        if event == "open":
            path, mode, flags = args
            reading = (
                ("r" in mode and "+" not in mode)
                if isinstance(mode, str)
                else (flags or 0) & os.O_ACCMODE == os.O_RDONLY
            )
            if reading and isinstance(path, (str, os.PathLike)):
                _stamp(_remember(_read, path))
        elif event == "verl_lint.read":  # a file judged by its size and mtime only (a stamp): the same dependency
            _stamp(_remember(_read, args[0]))
        elif event in ("os.listdir", "os.scandir") and (args[0] is None or isinstance(args[0], (str, os.PathLike))):
            _names(_remember(_listed, args[0] if args[0] is not None else os.curdir))
    except Exception:  # noqa: BLE001 - a hook that raises would fail the open itself
        pass
    finally:
        _recording = True


def _remember(found: set[str], path) -> str:
    path = os.path.abspath(path)
    found.add(path)
    return path


_hooked = False


def _environment() -> tuple:
    """What the findings depend on beyond the file and the options: Python, the installed
    packages (a directory's mtime changes when an entry is added or removed) and the
    working directory (relative paths in scripts and options)."""
    dirs = []
    script = os.path.dirname(os.path.abspath(sys.argv[0])) if sys.argv and sys.argv[0] not in ("", "-c") else None
    # Python puts the main script's directory (or the working directory) on the path: what is
    # there is the user's files, not installed packages, and changes with every file written.
    for p in (p for p in sys.path if os.path.abspath(p) not in (script, os.getcwd())):
        try:
            dirs.append((p, os.stat(p or os.curdir).st_mtime_ns))
        except OSError:
            dirs.append((p, None))
    return (os.path.realpath(sys.executable), sys.version, os.getcwd(), tuple(dirs))


_ENV: tuple | None = None
_CONTEXTS: dict[tuple, tuple] = {}
_STAMPED: dict[Path, str] = {}  # verl tree root -> its stamp


def _context(where: str, options: Options) -> tuple[VerlTree | None, str]:
    """The verl tree the launches of a script in directory `where` resolve to, and a digest of
    everything but the script a key holds (once per directory and options in a process)."""
    global _ENV
    k = (where, id(options))
    if k not in _CONTEXTS:
        if _ENV is None:
            _ENV = _environment()
        tree = verl_tree_for(Path(where).resolve(), options.verl_tree)
        if tree is not None and tree.root not in _STAMPED:
            _STAMPED[tree.root] = tree_stamp(tree.root)
        ident = repr((_FORMAT, __version__, repr(options), _ENV, tree, _STAMPED[tree.root] if tree else ""))
        _CONTEXTS[k] = (
            tree,
            hashlib.sha256(ident.encode("utf-8", "surrogateescape")).hexdigest(),
            options,
        )  # options: kept alive for id()
    return _CONTEXTS[k][:2]


class Entry:
    """Where one file's findings are cached, and what they were computed from."""

    def __init__(self, name: str, text: str, options: Options):
        where = (
            os.path.dirname(name) if not name.startswith("<") else (options.cwd or os.getcwd())
        )  # as pipeline.lint_text
        self.tree, context = _context(where, options)
        text_digest = hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()
        self.path = entry(FOLDER, f"{context}\0{name}\0{text_digest}")

    def load(self) -> FileReport | None:
        """The cached report while everything it was computed from is unchanged, else None."""
        try:
            with open(self.path, "rb") as f:
                files, dirs, report = pickle.load(f)
        except Exception:  # noqa: BLE001 - a missing or corrupt entry is a miss
            return None
        if not isinstance(report, FileReport):
            return None
        if not _unchanged(files, dirs):
            return None
        report.cached = True
        return report

    def save(self, report: FileReport) -> None:
        covered = _covered(self.tree)
        files = tuple((p, _stamp(p)) for p in sorted(_read) if not covered(p))
        dirs = tuple((d, _names(d)) for d in sorted(_listed) if not covered(d))
        text, report.text = report.text, None  # the caller has the text
        try:
            store(self.path, pickle.dumps((files, dirs, report), protocol=pickle.HIGHEST_PROTOCOL))
        finally:
            report.text = text


def computed(entry_: Entry | None, compute: Callable[[], FileReport]) -> FileReport:
    """`compute()`'s report, stored under `entry_` (when given) with what was read meanwhile."""
    global _recording, _hooked
    if entry_ is None:
        return compute()
    if not _hooked:
        sys.addaudithook(_audit)
        _hooked = True
    _recording = True
    try:
        report = compute()
    finally:
        _recording = False
    entry_.save(report)
    return report


def _covered(tree: VerlTree | None) -> Callable[[str], bool]:
    """What the key covers already, so it is not listed as a dependency: Python's installation,
    the cache, verl-lint itself, and what the tree's stamp covers."""
    prefixes = tuple(
        os.path.join(os.path.abspath(p), "")
        for p in {sys.prefix, sys.base_prefix, sys.exec_prefix, str(cache_dir().resolve()), *map(str, code_roots())}
    )
    in_tree = stamp_covers(tree.root) if tree is not None else (lambda path: False)
    return lambda path: path.startswith(prefixes) or in_tree(path)


_STAMPS: dict[str, tuple[int, int]] = {}  # per pass (new_pass): files are read once per pass
_NAMES: dict[str, str] = {}
_UNCHANGED: dict[tuple, bool] = {}


def new_pass() -> None:
    """Forget what was stamped: the files may have changed since (`--fix` wrote them)."""
    for memo_ in (_STAMPS, _NAMES, _UNCHANGED):
        memo_.clear()


def _unchanged(files: tuple, dirs: tuple) -> bool:
    """Every file and directory as recorded (entries written by one process share their lists:
    each list is checked once)."""
    k = (files, dirs)
    if k not in _UNCHANGED:
        _UNCHANGED[k] = all(_stamp(p) == s for p, s in files) and all(_names(d) == n for d, n in dirs)
    return _UNCHANGED[k]


def _stamp(path: str) -> tuple[int, int]:
    """(size, mtime_ns) of a file, once per process."""
    if path not in _STAMPS:
        try:
            st = os.stat(path)
            _STAMPS[path] = (st.st_size, st.st_mtime_ns)
        except (OSError, ValueError):
            _STAMPS[path] = _ABSENT
    return _STAMPS[path]


def _names(directory: str) -> str:
    """A digest of a directory's entry names, once per process."""
    if directory not in _NAMES:
        try:
            names = sorted(os.listdir(directory))
        except (OSError, ValueError):
            names = ["\0absent"]
        _NAMES[directory] = hashlib.sha256("\0".join(names).encode("utf-8", "surrogateescape")).hexdigest()
    return _NAMES[directory]


__all__ = ["Entry", "FOLDER", "computed", "new_pass"]
