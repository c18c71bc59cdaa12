"""Which files a run lints: the paths given, and directories walked honouring git's ignore
files and the `exclude` setting; YAML configs and docs by what they hold for verl-lint."""

from __future__ import annotations

import errno
import os
import stat
import struct
import sys
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from . import embedded
from .files import file_kind, has_sh_shebang, is_shell_script, open_regular
from .runs import FileReport, InputError
from .settings import Settings

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec


_NOTED: set[str] = set()


def _note(message: str) -> None:
    if message not in _NOTED:  # `upgrade` and `--fix` collect the same paths twice
        _NOTED.add(message)
        print(message, file=sys.stderr)


def collect(
    paths: list[str],
    settings: Settings,
    use_ignore_files: bool = True,
    note: Callable[[str], None] = _note,
    skip_others: bool = False,
) -> tuple[list[Path], list[FileReport]]:
    """The scripts under `paths`, in a stable order; bad paths become input errors.

    Directories are walked honouring git's ignore files (unless `use_ignore_files` is false) and
    the `exclude` setting; what a walk cannot examine (a FIFO, a broken symlink) is passed to
    `note` and skipped. A path given explicitly is linted even if ignored, but must be a readable
    regular file that is a shell script by name or shebang. With `skip_others` (pre-commit names
    every changed YAML and doc), a named YAML or doc that holds no launch is passed over, and a
    config group file stands for the primary configs of its config tree, which merge it."""
    files: list[Path] = []
    errors: list[FileReport] = []
    seen: set[tuple[int, int]] = set()

    def add(f: Path, st: os.stat_result) -> None:
        if (st.st_dev, st.st_ino) not in seen:  # the same file reached twice (a symlink, a repeated path)
            seen.add((st.st_dev, st.st_ino))
            files.append(f)

    def error(path: str, message: str) -> None:
        errors.append(FileReport(path, errors=[InputError(path, message)]))

    for raw in paths:
        p = Path(raw)
        try:
            st = p.stat()
        except OSError as ex:
            error(raw, _unreachable(p, ex))
            continue
        if stat.S_ISDIR(st.st_mode):
            ignores = _Ignores(p, settings, use_ignore_files, note)
            if ignores.root_ignored:
                error(raw, "this directory is ignored by git's ignore files (--no-ignore lints it)")
                continue
            n_errors = len(errors)
            found = list(_walk(p, ignores, note, error))
            if not found and len(errors) == n_errors:
                error(raw, "no shell scripts found in this directory")
            for f, fst in found:
                add(f, fst)
        elif kind := file_kind(st.st_mode):
            error(raw, f"not a regular file ({kind})")
        elif p.suffix in ("", ".sh", ".bash") or has_sh_shebang(p):
            add(p, st)
        elif embedded_kind(p):
            add(p, st)
        elif skip_others and p.suffix.lower() in embedded.DOCS + embedded.YAMLS:
            for primary in primaries_above(p):
                add(primary, primary.stat())
        elif p.suffix.lower() in embedded.YAMLS:
            error(
                raw,
                "not a primary config (no defaults list naming a verl config such as ppo_trainer) nor a workflow with "
                "a verl launch",
            )
        elif p.suffix.lower() in embedded.DOCS:
            error(raw, "no shell code block with a verl launch in this document")
        else:
            error(raw, f"not a shell script (a {p.suffix} file without an sh shebang)")
    return files, errors


def primaries_above(path: Path, levels: int = 3) -> list[Path]:
    """The primary configs in the directories above a YAML file (`config/` above
    `config/rollout/my.yaml`), the closest first: the configs whose defaults list may merge it."""
    if path.suffix.lower() not in embedded.YAMLS:
        return []
    for d in list(path.resolve().parents)[:levels]:
        found = [
            f
            for f in sorted(d.iterdir())
            if f.suffix.lower() in embedded.YAMLS and f.is_file() and embedded_kind(f) == "config"
        ]
        if found:
            return [Path(os.path.relpath(f)) if str(f).startswith(os.getcwd() + os.sep) else f for f in found]
    return []


def embedded_kind(path: Path) -> str | None:
    """What a doc or YAML file holds for verl-lint (`embedded.kind`), read within 1 MiB; None
    for one it has nothing to do with (or cannot read)."""
    if path.suffix.lower() not in embedded.DOCS + embedded.YAMLS:
        return None
    try:
        data, size = read_bounded(path, 2**20)
    except OSError:
        return None
    if size > 2**20 or b"\0" in data[:8192]:
        return None
    return embedded.kind(path, data.decode("utf-8", "replace"))


def _unreachable(p: Path, ex: OSError) -> str:
    """Why `p` cannot be reached, from its stat error."""
    if ex.errno == errno.ELOOP:
        return "symlink loop"
    if ex.errno == errno.ENOENT and p.is_symlink():
        return f"broken symlink (its target {os.readlink(p)} does not exist)"
    if ex.errno == errno.ENOENT:
        return "no such file or directory"
    return f"cannot read: {ex.strerror or ex}"


def _walk(root: Path, ignores: _Ignores, note: Callable[[str], None], error: Callable[[str, str], None]):
    """(path, stat) of the shell scripts under `root`, sorted per directory. Symlinks to
    directories are followed once (loops cut); nothing but regular files is ever opened."""

    def unreadable(ex: OSError) -> None:
        error(str(ex.filename), f"cannot read directory: {ex.strerror or ex}")

    visited: set[tuple[int, int]] = set()
    for dirpath, dnames, fnames in os.walk(root, followlinks=True, onerror=unreadable):
        try:
            st = os.stat(dirpath)
        except OSError as ex:
            unreadable(ex)
            dnames[:] = []
            continue
        if (st.st_dev, st.st_ino) in visited:  # symlink loop
            dnames[:] = []
            continue
        visited.add((st.st_dev, st.st_ino))
        d = Path(dirpath)
        rel = Path(os.path.relpath(dirpath, root))  # logical: symlinks inside the tree are not resolved
        ignores.enter(rel)
        dnames[:] = sorted(n for n in dnames if n != ".git" and not ignores.ignored(rel / n, True))
        for n in sorted(fnames):
            f = d / n
            if f.suffix.lower() not in ("", ".sh", ".bash", *embedded.DOCS, *embedded.YAMLS) or ignores.ignored(
                rel / n, False
            ):
                continue
            try:
                fst = os.stat(f)
            except OSError as ex:
                note(f"{f}: skipped: {_unreachable(f, ex)}")
                continue
            if kind := file_kind(fst.st_mode):
                note(f"{f}: skipped: not a regular file ({kind})")
            elif is_shell_script(f) or embedded_kind(f):
                yield f, fst


def _git_dirs(top: Path) -> tuple[Path, Path]:
    """The git directory (it holds `index`) and the common one (`info/exclude`): both `.git`, except
    in a worktree or submodule, where `.git` is a file `gitdir: DIR` and DIR may name its common one."""
    git = top / ".git"
    if os.path.isdir(git):
        return git, git
    try:
        line = read_bounded(git, 4096)[0].decode("utf-8", "replace").strip()
    except OSError:
        return git, git
    gitdir = top / line.removeprefix("gitdir:").strip()
    try:
        return gitdir, gitdir / read_bounded(gitdir / "commondir", 4096)[0].decode("utf-8", "replace").strip()
    except OSError:
        return gitdir, gitdir


def _tracked(index: Path) -> set[str]:
    """The paths in git's index, read without running git: tracked files, which ignore files never
    hide. Empty when there is no index or it is in a form not read here (over 64 MiB, split)."""
    try:
        data, size = read_bounded(index, 64 * 2**20)
    except OSError:
        return set()
    if size > 64 * 2**20 or len(data) < 12 or data[:4] != b"DIRC":
        return set()
    version, count = struct.unpack(">II", data[4:12])
    paths: set[str] = set()
    pos, name = 12, b""
    try:
        for _ in range(count):
            start = pos
            # 40 bytes of stat data, a 20-byte object id, 16 bits of flags (+16 more if extended).
            (flags,) = struct.unpack(">H", data[pos + 60 : pos + 62])
            pos += 64 if version >= 3 and flags & 0x4000 else 62
            if version == 4:  # the name is the previous one, less N bytes, plus a suffix
                strip = data[pos] & 0x7F
                while data[pos] & 0x80:
                    pos += 1
                    strip = ((strip + 1) << 7) | (data[pos] & 0x7F)
                end = data.index(b"\0", pos + 1)
                name = name[: len(name) - strip] + data[pos + 1 : end]
                pos = end + 1
            else:  # NUL-padded to a multiple of 8 bytes
                end = data.index(b"\0", pos)
                name = data[pos:end]
                pos = start + ((end - start + 8) & ~7)
            paths.add(name.decode("utf-8", "surrogateescape"))
    except (struct.error, ValueError, IndexError):
        return set()
    return paths


class _Ignores:
    """What a walk of `root` skips: the `exclude` setting and, inside a git work tree, what git ignores.

    Git's rules: `.git/info/exclude`, then the `.gitignore` of each directory from the top of the
    work tree down, each with patterns relative to its own directory; a deeper file overrides a
    higher one and within a file the last matching line wins; nothing below an ignored directory
    is seen, except tracked files (in git's index), which are never ignored. The pattern language
    (`**`, `!`, anchoring, `dir/`) is pathspec's, not fnmatch. A personal `core.excludesFile` is
    not read: results do not depend on who runs the linter."""

    def __init__(self, root: Path, settings: Settings, use_ignore_files: bool, note: Callable[[str], None]):
        from pathspec import GitIgnoreSpec  # only a directory walk needs it

        self.compile = GitIgnoreSpec.from_lines
        self.root, self.note = root.resolve(), note
        self.exclude = self.compile(settings.exclude) if settings.exclude else None
        self.exclude_base = settings.root.resolve()
        self.max_bytes = int(settings.max_file_size * 2**20)
        # a directory relative to the top ("" for the top) -> its .gitignore
        self.specs: dict[str, _LazySpec | None] = {}
        self.root_ignored = False
        self.top = (
            next((p for p in [self.root, *self.root.parents] if os.path.exists(p / ".git")), None)
            if use_ignore_files
            else None
        )
        if self.top is None:
            return
        gitdir, common = _git_dirs(self.top)
        self.info = self._spec(common / "info" / "exclude", follow=True)
        self.tracked = _tracked(gitdir / "index")
        self.tracked_dirs = {d.as_posix() for f in self.tracked for d in PurePosixPath(f).parents}
        self.base = self.root.relative_to(self.top)
        # The directories from the top down to the root: their .gitignore files apply, and if one
        # of them is ignored, so is everything in the walk.
        for i in range(len(self.base.parts) + 1):
            here = Path(*self.base.parts[:i])
            if i and self._git_ignored(here.as_posix(), True):
                self.root_ignored = True
            self.specs[_key(here)] = self._spec(self.top / here / ".gitignore")

    def _spec(self, path: Path, follow: bool = False) -> _LazySpec | None:
        # Git does not follow a symlinked .gitignore; a FIFO or a huge file is never read.
        try:
            if not follow and stat.S_ISLNK(os.lstat(path).st_mode):
                return None
            data, size = read_bounded(path, self.max_bytes)
        except FileNotFoundError:
            return None
        except OSError as ex:
            self.note(f"{path}: skipped: {ex.strerror or ex}")
            return None
        if max(size, len(data)) > self.max_bytes:
            self.note(f"{path}: skipped: over the {size_text(self.max_bytes)} limit")
            return None
        return _LazySpec(data.decode("utf-8", "replace").splitlines(), self.compile)

    def enter(self, rel: Path) -> None:
        """Read the .gitignore of the directory `rel` (relative to the walk's root)."""
        if self.top is not None and rel.parts:
            here = self.base / rel
            self.specs[_key(here)] = self._spec(self.top / here / ".gitignore")

    def ignored(self, rel: Path, is_dir: bool) -> bool:
        """Is `rel` (relative to the walk's root, not resolved) skipped?"""
        if self.exclude is not None:
            try:
                under = (self.root / rel).relative_to(self.exclude_base).as_posix()
            except ValueError:
                under = None  # outside the settings' directory: `exclude` does not apply
            if under is not None and self.exclude.match_file(under + "/" * is_dir):
                return True
        return self.top is not None and self._git_ignored((self.base / rel).as_posix(), is_dir)

    def _git_ignored(self, rel: str, is_dir: bool) -> bool:
        if rel in (self.tracked_dirs if is_dir else self.tracked):
            return False  # git lists tracked files wherever they are (`git add -f`)
        suffix = "/" * is_dir  # so that `dir/` patterns match directories only
        result = self.info.check_file(rel + suffix).include if self.info else None
        parts = rel.split("/")
        for i in range(len(parts)):  # the .gitignore files of the directories above `rel`, top first
            spec = self.specs.get("/".join(parts[:i]))
            if spec is not None:
                hit = spec.check_file("/".join(parts[i:]) + suffix).include
                result = hit if hit is not None else result
        return bool(result)


class _LazySpec:
    """An ignore file's patterns, compiled on the first path git does not track (compiling a big
    .gitignore costs more than a warm run's linting, and tracked files never need it)."""

    def __init__(self, lines: list[str], compile_: Callable[[list[str]], GitIgnoreSpec]):
        self.lines, self.compile, self.spec = lines, compile_, None

    def check_file(self, path: str):
        if self.spec is None:
            self.spec = self.compile(self.lines)
        return self.spec.check_file(path)


def _key(rel: Path) -> str:
    return rel.as_posix() if rel.parts else ""


def size_text(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**17 else f"{n} bytes"


def read_bounded(path: Path, max_bytes: int) -> tuple[bytes, int]:
    """A regular file's bytes and its size as stat reports it. Nothing is read when that is over
    `max_bytes`, else at most max_bytes + 1 bytes: procfs files report 0, and a file can grow."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        return (f.read(max_bytes + 1) if size <= max_bytes else b""), size
