"""The one way verl-lint replaces a file: reports (--output), baselines, --fix, cache entries and
downloaded wheels all write here.

A whole file or nothing: the new content goes to a hidden temp file in the target's directory
(`.NAME.<random>.tmp`), is fsynced, gets the target's mode (and owner and group where allowed),
and is renamed over the target, so a reader or a crash sees the old or the new content, never
a mix. A process killed mid-write (SIGKILL, power loss) can leave such a temp file behind; it is
never the target, and a finished write leaves none.

A symlink is followed: the file it finally points to is written and the link stays a link, as
editors and the shell's `>` do. Refusing would break deliberate links (a report path linked into
a shared directory) and protect nothing that `verl-lint ... > FILE` does not already expose.
Anything but a regular file (directory, device such as /dev/null, FIFO, socket) is refused: a
rename would replace the node itself, and as root that would destroy /dev/null. A file with
other hard links is detached from them by the rename (they keep the old content), as with editors.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

# What a file that is not a regular one is, as messages name it.
_KINDS = {
    stat.S_IFDIR: "directory",
    stat.S_IFCHR: "character device",
    stat.S_IFBLK: "block device",
    stat.S_IFIFO: "FIFO",
    stat.S_IFSOCK: "socket",
}


def _not_regular(mode: int) -> str:
    return (
        f"it is a {file_kind(mode) or 'special file'}{' (named pipe)' if stat.S_ISFIFO(mode) else ''}, not a "
        "regular file"
    )


class WriteError(Exception):
    """The target cannot or must not be written; str() is one line naming it."""

    def __init__(self, path: str | Path, reason: str) -> None:
        super().__init__(f"cannot write {path}: {reason}")
        self.reason = reason


class FileChanged(WriteError):
    """The target no longer has the content the new one was made from (an editor or another run wrote it)."""


def write_atomic(path: str | Path, content: str | bytes, expect: bytes | None = None) -> None:
    """Replace `path` with `content` (str is written as UTF-8) or leave it as it was.

    `expect`: the bytes the target must still hold; it is re-read just before the rename and a
    difference raises FileChanged with the target untouched.
    """
    data = content.encode("utf-8") if isinstance(content, str) else content
    with replacing(path, expect) as f:
        try:
            f.write(data)
        except OSError as ex:
            raise WriteError(path, ex.strerror or str(ex)) from None


@contextmanager
def replacing(path: str | Path, expect: bytes | None = None, durable: bool = True) -> Iterator[BinaryIO]:
    """A file to write the new content of `path` into; when the block ends without an error it
    replaces `path` in one rename, otherwise `path` stays as it was and the temp file goes.

    The one atomic writer: reports, baselines and fixes (`write_atomic`), cache entries and
    downloaded wheels. `durable=False` skips the fsyncs, for files that are cheap to make again
    (a cache). Errors of verl-lint's own file operations are WriteError; what the block raises
    propagates unchanged.
    """
    target = os.path.realpath(path)
    try:
        old = os.stat(target)
    except FileNotFoundError:
        old = None
    except OSError as ex:
        raise WriteError(path, ex.strerror or str(ex)) from None
    if old is not None and not stat.S_ISREG(old.st_mode):
        raise WriteError(path, _not_regular(old.st_mode))
    if old is None and expect is not None:
        raise FileChanged(path, "the file was removed since it was read; left as it is")
    directory, name = os.path.split(target)
    try:
        fd, tmp = _create_temp(directory, name)
    except OSError as ex:
        if isinstance(ex, FileNotFoundError) and not os.path.isdir(directory):
            raise WriteError(path, f"no such directory: {directory}") from None
        raise WriteError(path, ex.strerror or str(ex)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            if old is not None:
                _guarded(path, _keep_owner_and_mode, f.fileno(), old)
            yield f
            _guarded(path, f.flush)
            if durable:
                _guarded(path, os.fsync, f.fileno())
        if expect is not None and _current(target) != expect:
            raise FileChanged(path, "the file changed since it was read; left as it is")
        _guarded(path, os.replace, tmp, target)
        tmp = ""
        if durable:
            _fsync_dir(directory)
    finally:
        if tmp:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def _guarded(path, fn, *args) -> None:
    """`fn(*args)`, an OSError becoming the one-line WriteError about `path`."""
    try:
        fn(*args)
    except OSError as ex:
        raise WriteError(path, ex.strerror or str(ex)) from None


def _create_temp(directory: str, name: str) -> tuple[int, str]:
    # Created with 0o666 so the kernel applies the umask and the directory's default ACL to a new
    # file (os.umask() to read it is process-wide and racy in a threaded training job).
    for _ in range(100):
        tmp = os.path.join(directory, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temp name next to {name}")


def _keep_owner_and_mode(fd: int, old: os.stat_result) -> None:
    new = os.fstat(fd)
    if (new.st_uid, new.st_gid) != (old.st_uid, old.st_gid):
        try:
            os.fchown(fd, old.st_uid, old.st_gid)  # root can; others only to a group of their own
        except PermissionError:
            pass
    os.fchmod(fd, stat.S_IMODE(old.st_mode))  # after chown, which clears set-id bits


def read_regular(path: str | Path) -> bytes:
    """A regular file's bytes; OSError (NotRegularFile) for anything else, never waited on."""
    with open_regular(path) as f:
        return f.read()


def _current(path: str) -> bytes | None:
    try:
        return read_regular(path)
    except OSError:
        return None


def _fsync_dir(directory: str) -> None:
    """Make the rename itself durable; some filesystems cannot sync a directory, which is fine."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# ------------------------------------------------------------ what a file is ----

_SHEBANG = rb"^#!.*\b(ba|z|k)?sh\b"  # a pattern: compiled (by `re`, once) when a file is walked


class NotRegularFile(OSError):
    """A FIFO, socket, device or directory where a file to read was expected."""


def file_kind(mode: int) -> str | None:
    """ "FIFO", "socket", ... for what is not a regular file; None for a regular file."""
    return None if stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "special file")


def open_regular(path: str | Path):
    """Open a regular file for reading (binary). Anything else is refused before it is opened:
    opening a FIFO blocks until a writer comes, and opening a device can act on it."""
    kind = file_kind(os.stat(path).st_mode)
    if kind:
        raise NotRegularFile(f"not a regular file ({kind})")
    # O_NONBLOCK: if it became a FIFO after the stat, open returns instead of waiting.
    f = os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0)), "rb")
    kind = file_kind(os.fstat(f.fileno()).st_mode)
    if kind:
        f.close()
        raise NotRegularFile(f"not a regular file ({kind})")
    return f


def is_shell_script(path: Path) -> bool:
    """By extension, else (no extension) by an sh-family shebang."""
    if path.suffix in (".sh", ".bash"):
        return True
    return not path.suffix and has_sh_shebang(path)


def has_sh_shebang(path: Path) -> bool:
    """Does the file start with `#!/bin/bash` or another sh-family shebang? Never opens what is
    not a regular file."""
    try:
        with open_regular(path) as f:
            return bool(re.match(_SHEBANG, f.readline(200)))
    except OSError:
        return False
