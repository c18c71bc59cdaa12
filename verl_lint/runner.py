"""Find the scripts to lint and lint them, serially or on a process pool."""

from __future__ import annotations

import fnmatch
import gc
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from . import results
from .catalogue import ANALYSIS_TIMEOUT, FILE_TOO_LARGE, INVALID_UTF8
from .files import NotRegularFile
from .launch import locate
from .limits import Timeout
from .model import COMMAND_LINE, Diagnostic, Span, command_text, in_config_file
from .registry import Rule
from .runs import FileReport, InputError, Options
from .terminal import Progress, show_progress
from .walk import read_bounded, size_text

if TYPE_CHECKING:
    from .config.compose import Composer

# A pool only pays off past its start-up cost (~0.3 s per worker importing hydra).
POOL_MIN_FILES = 24


def read_script(path: Path, max_bytes: int) -> tuple[str | None, InputError | None, list[Diagnostic]]:
    """The script's text (invalid UTF-8 replaced), or why it cannot be linted."""
    try:
        data, size = read_bounded(path, max_bytes)
    except NotRegularFile as ex:
        return None, InputError(str(path), str(ex)), []
    except OSError as ex:
        return None, InputError(str(path), f"cannot read: {ex.strerror or ex}"), []
    if size > max_bytes or len(data) > max_bytes:
        what = (
            f"the file is {size_text(size)}, over" if size > max_bytes else "the file is over"
        )  # procfs reports size 0
        return None, None, [_limit_diag(path, FILE_TOO_LARGE, f"{what} the {size_text(max_bytes)} limit; not analysed")]
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
