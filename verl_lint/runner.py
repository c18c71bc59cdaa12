"""Find the scripts to lint and lint them, serially or on a process pool."""

from __future__ import annotations

import errno
import fnmatch
import gc
import os
import stat
import struct
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from . import embedded
from . import results
from .catalogue import ANALYSIS_TIMEOUT, FILE_TOO_LARGE, INVALID_UTF8
from .files import NotRegularFile, file_kind, has_sh_shebang, is_shell_script, open_regular
from .launch import locate
from .limits import Timeout
from .model import COMMAND_LINE, Diagnostic, FileReport, InputError, Options, Span, command_text, in_config_file
from .registry import Rule
from .settings import Settings
from .terminal import Progress, show_progress

if TYPE_CHECKING:
    from pathspec import GitIgnoreSpec

    from .config.compose import Composer

# A pool only pays off past its start-up cost (~0.3 s per worker importing hydra).
POOL_MIN_FILES = 24


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
                "not a primary config (no defaults list naming a verl config such as ppo_trainer) nor a workflow with a verl launch",
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
        data, size = _read_bounded(path, 2**20)
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
        line = _read_bounded(git, 4096)[0].decode("utf-8", "replace").strip()
    except OSError:
        return git, git
    gitdir = top / line.removeprefix("gitdir:").strip()
    try:
        return gitdir, gitdir / _read_bounded(gitdir / "commondir", 4096)[0].decode("utf-8", "replace").strip()
    except OSError:
        return gitdir, gitdir


def _tracked(index: Path) -> set[str]:
    """The paths in git's index, read without running git: tracked files, which ignore files never
    hide. Empty when there is no index or it is in a form not read here (over 64 MiB, split)."""
    try:
        data, size = _read_bounded(index, 64 * 2**20)
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
        self.specs: dict[
            str, _LazySpec | None
        ] = {}  # a directory relative to the top ("" for the top) -> its .gitignore
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
            data, size = _read_bounded(path, self.max_bytes)
        except FileNotFoundError:
            return None
        except OSError as ex:
            self.note(f"{path}: skipped: {ex.strerror or ex}")
            return None
        if max(size, len(data)) > self.max_bytes:
            self.note(f"{path}: skipped: over the {_size(self.max_bytes)} limit")
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


def _read_bounded(path: Path, max_bytes: int) -> tuple[bytes, int]:
    """A regular file's bytes and its size as stat reports it. Nothing is read when that is over
    `max_bytes`, else at most max_bytes + 1 bytes: procfs files report 0, and a file can grow."""
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        return (f.read(max_bytes + 1) if size <= max_bytes else b""), size


def _size(n: int) -> str:
    return f"{n / 2**20:.1f} MiB" if n >= 2**17 else f"{n} bytes"


def read_script(path: Path, max_bytes: int) -> tuple[str | None, InputError | None, list[Diagnostic]]:
    """The script's text (invalid UTF-8 replaced), or why it cannot be linted."""
    try:
        data, size = _read_bounded(path, max_bytes)
    except NotRegularFile as ex:
        return None, InputError(str(path), str(ex)), []
    except OSError as ex:
        return None, InputError(str(path), f"cannot read: {ex.strerror or ex}"), []
    if size > max_bytes or len(data) > max_bytes:
        what = f"the file is {_size(size)}, over" if size > max_bytes else "the file is over"  # procfs reports size 0
        return None, None, [_limit_diag(path, FILE_TOO_LARGE, f"{what} the {_size(max_bytes)} limit; not analysed")]
    if b"\0" in data[:8192]:
        return None, InputError(str(path), "binary file, not a shell script; skipped"), []
    try:
        return data.decode("utf-8"), None, []
    except UnicodeDecodeError as ex:
        text = data.decode("utf-8", errors="replace")
        line = data.count(b"\n", 0, ex.start) + 1
        col = ex.start - (data.rfind(b"\n", 0, ex.start) + 1) + 1
        d = _limit_diag(
            path,
            INVALID_UTF8,
            f"invalid UTF-8 (byte {data[ex.start]:#04x}); decoded with replacement characters",
            line,
            col,
        )
        return text, None, [d]


def _limit_diag(path: Path | str, rule: Rule, message: str, line: int = 1, col: int = 1) -> Diagnostic:
    return rule.finding(message, Span(str(path), line, col, line, col + 1), help=rule.summary)


_WORKER: tuple[Options, bool] | None = None
_COMPOSERS: dict[bool, Composer] = {}


def _init_worker(options: Options, use_cache: bool) -> None:
    global _WORKER
    _WORKER = (options, use_cache)
    show_progress(False)  # the parent shows files done; workers indexing at once would garble it
    _collect_for_batch()  # for the worker's life


# The youngest generation is collected after this many allocations (Python's default: 700).
BATCH_GC_THRESHOLD = 50_000


def _collect_for_batch() -> tuple[int, int, int]:
    """Set the collector for a batch (see `_batch_collector`); returns the thresholds it had."""
    old = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(BATCH_GC_THRESHOLD, old[1], old[2])
    return old


@contextmanager
def _batch_collector() -> Iterator[None]:
    """The garbage collector set for linting a batch of files (the command line and its workers;
    never the Hydra callback, which runs inside the user's job): what is alive when the batch
    starts (modules, the rule pack, its tables) is frozen out of the collections, and the young
    objects are collected less often. A composed config is a few thousand objects linked to their
    parents (cycles only the collector frees); with the default thresholds the collector walked the
    surviving ones over and over, up to twice the cost of unpickling a launch's base config."""
    old = _collect_for_batch()
    try:
        yield
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


def process_composer(use_cache: bool) -> Composer:
    """This process's Composer, made on the first file the result cache does not have: a warm
    run never imports Hydra."""
    if use_cache not in _COMPOSERS:
        from .config.compose import Composer  # Hydra and OmegaConf (~0.2 s) only when something is composed

        _COMPOSERS[use_cache] = Composer(cache=use_cache)
    return _COMPOSERS[use_cache]


def forget_config_files() -> None:
    """Drop what this process keeps of the project's config files: `--fix` changed one, and a
    Composer keeps each composition by its config directory and name, not by the files' text (the
    on-disk cache is keyed by the files' digest, so a new Composer composes the changed file)."""
    _COMPOSERS.clear()
    locate.forget_config_files()


def lint_file(
    path: Path,
    options: Options,
    composer: Composer | None = None,
    per_file_ignores=None,
    use_cache: bool = False,
    only_cached: bool = False,
) -> FileReport | None:
    """Lint one script file: read it within the limits, then the pipeline; never raises on bad input.
    `composer`: None for this process's (made when needed); `use_cache`: the on-disk caches (results,
    composed bases) are read and written; `only_cached`: None unless the result cache has it."""
    text, err, notes = read_script(path, options.max_bytes)
    if err is not None or text is None:
        return None if only_cached else FileReport(str(path), diagnostics=notes, errors=[err] if err else [])
    return lint_script(str(path), text, options, composer, per_file_ignores, notes, use_cache, only_cached)


def lint_script(
    name: str,
    text: str,
    options: Options,
    composer: Composer | None = None,
    per_file_ignores=None,
    notes: list[Diagnostic] | None = None,
    use_cache: bool = False,
    only_cached: bool = False,
) -> FileReport | None:
    """Lint a script's text (a file's, or stdin's under a name) within the time limit; never raises on bad input."""
    extra = _per_file_ignores(Path(name), per_file_ignores)
    opts = replace(options, ignore=options.ignore + extra) if extra else options
    entry = results.Entry(name, text, opts) if use_cache else None
    report = entry.load() if entry else None
    if report is None and only_cached:
        return None
    try:
        if report is None:
            lint = _pipeline().lint_source
            report = results.computed(
                entry,
                lambda: lint(name, text, opts, composer or process_composer(use_cache), step_limit=options.timeout),
            )
    except Timeout as ex:  # the safety net fired: kept for this run only, never cached
        if ex.report is not None:
            report = ex.report
        else:
            msg = f"analysis took longer than {options.timeout:g} s; not analysed (raise the limit with --timeout)"
            return FileReport(name, diagnostics=[_limit_diag(name, ANALYSIS_TIMEOUT, msg)], text=text)
    except RecursionError:
        return FileReport(name, errors=[InputError(name, "script is nested too deeply to analyse; skipped")])
    except Exception as ex:  # noqa: BLE001 - one broken file never stops the run
        if options.debug:
            raise
        return FileReport(
            name, errors=[InputError(name, f"internal error: {type(ex).__name__}: {ex} (rerun with --debug)")]
        )
    report.text = text
    report.diagnostics = (notes or []) + report.diagnostics
    return report


def _pipeline():
    from . import pipeline  # the parser, composer and rule pack: only when a file is not in the result cache

    return pipeline


def _pool_task(args) -> FileReport:
    path, per_file_ignores = args
    options, use_cache = _WORKER
    return lint_file(path, options, None, per_file_ignores, use_cache)


def _per_file_ignores(path: Path, table: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    out: list[str] = []
    posix = path.as_posix()
    for pat, codes in (table or {}).items():
        if fnmatch.fnmatch(posix, pat) or fnmatch.fnmatch(path.name, pat) or fnmatch.fnmatch(posix, "*/" + pat):
            out.extend(codes)
    return tuple(out)


def lint_paths(
    files: list[Path],
    options: Options,
    command_argv: list[str] | None = None,
    use_cache: bool = True,
    per_file_ignores: dict | None = None,
    jobs: int | None = None,
    timings: dict[str, float] | None = None,
    once: bool = True,
) -> list[FileReport]:
    """Lint `files` (and the command), on a process pool for many files; with `timings`, here,
    recording each file's seconds in it (`check -v`). `once`: these reports are the whole run's
    (else the caller applies `once_per_run` to all of them)."""
    reports: list[FileReport] = []
    if command_argv:
        reports.append(
            _pipeline().lint_text(COMMAND_LINE, command_text(command_argv), options, process_composer(use_cache))
        )
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    results.new_pass()
    # What the result cache has is read here; only the rest is linted (on the pool for many files).
    cached = (
        {f: lint_file(f, options, None, per_file_ignores, True, only_cached=True) for f in files}
        if use_cache and timings is None
        else {}
    )
    todo = [f for f in files if cached.get(f) is None]
    done: dict[Path, FileReport] = {}
    shown = Progress("linting", len(todo), keep=False)  # on a terminal only: no note elsewhere
    if len(todo) >= POOL_MIN_FILES and jobs > 1 and timings is None:
        from concurrent.futures import ProcessPoolExecutor  # ~15 ms: only when files are linted in parallel

        with (
            ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(options, use_cache)) as pool,
            shown,
        ):
            for f, report in zip(todo, pool.map(_pool_task, [(f, per_file_ignores) for f in todo], chunksize=4)):
                done[f] = report
                shown.update(shown.done + 1)
    else:
        with shown, _batch_collector():
            for f in todo:
                start = time.perf_counter()
                done[f] = lint_file(f, options, None, per_file_ignores, use_cache)
                shown.update(shown.done + 1)
                if timings is not None:
                    timings[str(f)] = time.perf_counter() - start
    reports.extend(cached.get(f) or done[f] for f in files)
    if once:
        once_per_run(reports)
    return reports


def once_per_run(reports: list[FileReport]) -> None:
    """Keep a finding about verl's own defaults (or the run) only where it first appears, and one
    located in another file than the script's (a project config file, a sourced file) once, however
    many launches reach it: with the plainest message among them (a branch note of one launch is
    not the file's). A finding at a config file's value that only some of the launches it reaches
    have says for which."""
    seen: set[tuple] = set()
    plainest: dict[tuple, str] = {}
    launches: dict[tuple, set] = {}  # per finding in a config file: the launches that have it
    users: dict = {}  # per value of a config file: the launches it is in effect in
    for r in reports:
        for span, spans in r.file_value_users.items():
            users.setdefault(span, set()).update(spans)
        for d in r.diagnostics:
            if _elsewhere(r, d):
                ident = (d.code, d.span, d.key)
                if ident not in plainest or len(d.message) < len(plainest[ident]):
                    plainest[ident] = d.message
                launches.setdefault(ident, set()).update(
                    rel.span for rel in d.related if rel.key == "" and rel.span.path != d.span.path
                )
    for r in reports:
        kept = []
        for d in r.diagnostics:
            if d.once or _elsewhere(r, d):
                ident = (d.code, d.key, d.message) if d.once else (d.code, d.span, d.key)
                if ident in seen:
                    continue
                seen.add(ident)
                if not d.once:
                    d = replace(d, message=plainest[ident] + _only_for(launches[ident], users.get(d.span, set())))
            kept.append(d)
        r.diagnostics = kept


def _elsewhere(r: FileReport, d) -> bool:
    """Located in a file other launches may reach too: a config file, or a file the script sources."""
    return in_config_file(d.span) or (d.span.path != r.path and not d.span.path.startswith("<"))


def _only_for(having: set, composing: set) -> str:
    """The note of a config file's finding that holds for some of the launches composing it only."""
    others = len(composing - having)
    if not having or not others:
        return ""
    at = ", ".join(f"{s.path}:{s.line}" for s in sorted(having)[:3]) + (" and more" if len(having) > 3 else "")
    return (
        f" (for the launch at {at}; not for the {others} other launch{'es' if others > 1 else ''} this value reaches)"
    )
