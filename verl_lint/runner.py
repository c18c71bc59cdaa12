"""Find the scripts to lint and lint them, serially or on a process pool."""

from __future__ import annotations

import fnmatch
import os
import signal
import threading
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from .compose import Composer
from .pipeline import FileReport, InputError, Options, command_script, is_shell_script, lint_text
from .model import Diagnostic, Span
from .settings import Settings

# A pool only pays off past its start-up cost (~0.3 s per worker importing hydra).
POOL_MIN_FILES = 24


def collect(paths: list[str], settings: Settings) -> tuple[list[Path], list[FileReport]]:
    """The scripts under `paths`, in a stable order; bad paths become input errors."""
    files: list[Path] = []
    errors: list[FileReport] = []
    seen: set[Path] = set()
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            errors.append(FileReport(raw, errors=[InputError(raw, "no such file or directory")]))
            continue
        if p.is_file():
            if p.resolve() not in seen:
                seen.add(p.resolve())
                files.append(p)
            continue
        found = list(_walk(p, settings))
        if not found:
            errors.append(FileReport(raw, errors=[InputError(raw, "no shell scripts found in this directory")]))
        for f in found:
            if f.resolve() not in seen:
                seen.add(f.resolve())
                files.append(f)
    return files, errors


def _walk(root: Path, settings: Settings):
    ignores = _GitIgnore(root)
    visited: set[tuple[int, int]] = set()
    for dirpath, dnames, fnames in os.walk(root, followlinks=True):
        st = os.stat(dirpath)
        if (st.st_dev, st.st_ino) in visited:  # symlink loop
            dnames[:] = []
            continue
        visited.add((st.st_dev, st.st_ino))
        d = Path(dirpath)
        ignores.load(d)
        dnames[:] = sorted(
            n for n in dnames if n != ".git" and not ignores.ignored(d / n, True) and not _excluded(d / n, settings)
        )
        for n in sorted(fnames):
            f = d / n
            if ignores.ignored(f, False) or _excluded(f, settings):
                continue
            if is_shell_script(f):
                yield f


def _excluded(path: Path, settings: Settings) -> bool:
    if not settings.exclude:
        return False
    try:
        rel = path.resolve().relative_to(settings.root.resolve()).as_posix()
    except ValueError:
        rel = path.as_posix()
    return any(fnmatch.fnmatch(rel, pat) or fnmatch.fnmatch(path.name, pat) or rel.startswith(pat.rstrip("/") + "/") for pat in settings.exclude)


class _GitIgnore:
    """The common subset of .gitignore: globs, `!` negation, dir-only `/`, anchored patterns."""

    def __init__(self, root: Path):
        self.rules: list[tuple[Path, str, bool, bool, bool]] = []
        self.loaded: set[Path] = set()
        top = next((p for p in [root.resolve(), *root.resolve().parents] if (p / ".git").exists()), None)
        self.active = top is not None
        if top is not None:
            for p in reversed([root.resolve(), *root.resolve().parents]):
                if p == top or top in p.parents:
                    self.load(p)

    def load(self, d: Path) -> None:
        d = d.resolve()
        if not self.active or d in self.loaded:
            return
        self.loaded.add(d)
        try:
            lines = (d / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            return
        for line in lines:
            line = line.rstrip()
            if not line or line.startswith("#"):
                continue
            neg = line.startswith("!")
            line = line[1:] if neg else line
            dir_only = line.endswith("/")
            line = line.rstrip("/")
            anchored = "/" in line
            self.rules.append((d, line.lstrip("/"), neg, dir_only, anchored))

    def ignored(self, path: Path, is_dir: bool) -> bool:
        if not self.active:
            return False
        path = path.resolve()
        result = False
        for base, pat, neg, dir_only, anchored in self.rules:
            if dir_only and not is_dir:
                continue
            try:
                rel = path.relative_to(base).as_posix()
            except ValueError:
                continue
            hit = fnmatch.fnmatch(rel, pat) if anchored else fnmatch.fnmatch(path.name, pat)
            if hit:
                result = not neg
        return result


def read_script(path: Path, max_bytes: int) -> tuple[str | None, InputError | None, list[Diagnostic]]:
    """The script's text (invalid UTF-8 replaced), or why it cannot be linted."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            return None, None, [_limit_diag(path, "VL004", f"the file is {size / 2**20:.1f} MiB, over the {max_bytes / 2**20:.1f} MiB limit; not analysed")]
        data = path.read_bytes()
    except OSError as ex:
        return None, InputError(str(path), f"cannot read: {ex.strerror or ex}"), []
    if b"\0" in data[:8192]:
        return None, InputError(str(path), "binary file, not a shell script; skipped"), []
    try:
        return data.decode("utf-8"), None, []
    except UnicodeDecodeError as ex:
        text = data.decode("utf-8", errors="replace")
        line = data.count(b"\n", 0, ex.start) + 1
        col = ex.start - (data.rfind(b"\n", 0, ex.start) + 1) + 1
        d = _limit_diag(path, "VL006", f"invalid UTF-8 (byte {data[ex.start]:#04x}); decoded with replacement characters", line, col)
        return text, None, [d]


def _limit_diag(path: Path, code: str, message: str, line: int = 1, col: int = 1) -> Diagnostic:
    from .engine import REGISTRY

    r = REGISTRY.get(code)
    return Diagnostic(r.code, r.name, r.severity, message, Span(str(path), line, col, line, col + 1), help=r.summary)


class _Timeout(Exception):
    pass


@contextmanager
def _time_limit(seconds: float):
    """Interrupt the analysis of one file after `seconds` (main thread only; elsewhere unbounded)."""
    if not seconds or threading.current_thread() is not threading.main_thread():
        yield
        return

    def alarm(signum, frame):
        raise _Timeout()

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


_WORKER: tuple[Options, Composer] | None = None


def _init_worker(options: Options, use_cache: bool) -> None:
    global _WORKER
    _WORKER = (options, Composer(cache=use_cache))


def lint_file(path: Path, options: Options, composer: Composer, per_file_ignores=None) -> FileReport:
    """Lint one script file: read it within the limits, then the pipeline; never raises on bad input."""
    text, err, notes = read_script(path, options.max_bytes)
    if err is not None:
        return FileReport(str(path), errors=[err])
    if text is None:
        return FileReport(str(path), diagnostics=notes)
    extra = _per_file_ignores(path, per_file_ignores)
    opts = replace(options, ignore=options.ignore + extra) if extra else options
    try:
        with _time_limit(options.timeout):
            report = lint_text(str(path), text, opts, composer)
    except _Timeout:
        msg = f"analysis took longer than {options.timeout:g} s; not analysed (raise the limit with --timeout)"
        return FileReport(str(path), diagnostics=[_limit_diag(path, "VL005", msg)], text=text)
    except RecursionError:
        return FileReport(str(path), errors=[InputError(str(path), "script is nested too deeply to analyse; skipped")])
    except Exception as ex:  # noqa: BLE001 - one broken file never stops the run
        if options.debug:
            raise
        return FileReport(str(path), errors=[InputError(str(path), f"internal error: {type(ex).__name__}: {ex} (rerun with --debug)")])
    report.diagnostics = notes + report.diagnostics
    return report


def _pool_task(args) -> FileReport:
    path, per_file_ignores = args
    options, composer = _WORKER
    return lint_file(path, options, composer, per_file_ignores)


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
) -> list[FileReport]:
    reports: list[FileReport] = []
    if command_argv:
        composer = Composer(cache=use_cache)
        reports.append(lint_text("<command>", command_script(command_argv), options, composer))
    jobs = jobs if jobs is not None else (os.cpu_count() or 1)
    if len(files) >= POOL_MIN_FILES and jobs > 1:
        with ProcessPoolExecutor(max_workers=jobs, initializer=_init_worker, initargs=(options, use_cache)) as pool:
            reports.extend(pool.map(_pool_task, [(f, per_file_ignores) for f in files], chunksize=4))
    else:
        composer = Composer(cache=use_cache)
        reports.extend(lint_file(f, options, composer, per_file_ignores) for f in files)
    return reports

