"""`verl-lint check`: the inputs, the settings each file gets, the lint, fixes,
the report and the exit code. `run` builds its options here too."""

from __future__ import annotations

import hashlib
import os
import sys
from argparse import Namespace
from dataclasses import dataclass, field
from pathlib import Path

from . import __version__
from .cache import memo
from .catalogue import outcome
from .engines.versions import version_problem
from .environment import installed_versions
from .files import WriteError, write_atomic
from .gpus import gpu_gib
from .launch.locate import LocateError, VerlTree, release_tree, tree_at, verl_tree_for
from .model import Diagnostic, Severity, in_config_file
from .report.fix import apply_fixes
from .report.render import RENDERERS, accounting, render, render_statistics, stats
from .report.suppress import filter_baseline, write_baseline
from .runner import forget_config_files, lint_paths, lint_script, once_per_run
from .runs import FileReport, InputError, Options
from .settings import ENGINE_FLAGS, SETTINGS, Settings, SettingsFinder, code_problem, show
from .terminal import plural, safe, usage_error, use_color
from .walk import collect, embedded_kind

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
STDIN = "-"
# setting -> the flag that overrides it (`ignore`: the flag's codes are added to the setting's)
FLAG_OF = {
    "select": "--select",
    "ignore": "--ignore",
    "fail-on": "--fail-on",
    "verl-root": "--verl-root",
    "verl-version": "--verl",
    "cwd": "--cwd",
    "max-file-size": "--max-file-size",
    "timeout": "--timeout",
    **{flag[2:]: flag for flag in ENGINE_FLAGS},
}


class UsageError(Exception):
    """A bad flag or setting: one line and exit code 2."""


def split_codes(values) -> tuple[str, ...]:
    out = []
    for v in values or ():
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return tuple(out)


def build_options(args: Namespace, settings: Settings, tree: VerlTree | None) -> Options:
    """Options from flags and settings (flags win); raises UsageError on a bad value."""
    for flag, values in (("--select", args.select), ("--ignore", args.ignore)):  # settings: checked on load
        for code in split_codes(values):
            problem = code_problem(code)
            if problem:
                raise UsageError(f"{flag}: {problem}")
    select = split_codes(args.select) or settings.select
    if select:
        select += settings.extend_select
    ignore = split_codes(args.ignore) + settings.ignore
    # `source` may follow files inside the scanned tree (a directory given, or a file's directory).
    scanned = [Path(os.path.realpath(p)) for p in getattr(args, "paths", None) or () if p != STDIN]  # never raises
    roots = tuple(dict.fromkeys(p if os.path.isdir(p) else p.parent for p in scanned))
    cwd = getattr(args, "cwd", None) or settings.cwd
    if cwd is not None and not os.path.isdir(cwd):
        raise UsageError(f"{'--cwd' if getattr(args, 'cwd', None) else 'cwd setting'} {cwd}: not a directory")
    versions, origin = {}, {}
    for key, text in settings.engines.items():
        versions[key], origin[key] = text, f"[tool.verl-lint] {key.replace('_', '-')}"
    for flag, (_, key) in ENGINE_FLAGS.items():
        text = getattr(args, key, None)
        if text is not None:
            problem = version_problem(text)
            if problem:
                raise UsageError(f"{flag}: {problem}")
            versions[key], origin[key] = text, flag
    gpu, gpu_origin = gpu_memory(args, settings)
    return Options(
        models_online=(getattr(args, "models", None) or settings.models) == "online",
        gpu_gib=gpu,
        gpu_origin=gpu_origin,
        verl_tree=tree,
        select=select,
        ignore=ignore,
        severity=settings.severity,
        versions=versions,
        version_origin=origin,
        allowed_roots=roots,
        debug=args.debug,
        max_bytes=int((getattr(args, "max_file_size", None) or settings.max_file_size) * 2**20),
        timeout=getattr(args, "timeout", None) if getattr(args, "timeout", None) is not None else settings.timeout,
        cwd=os.path.abspath(cwd) if cwd else None,
    )


def gpu_memory(args: Namespace, settings: Settings) -> tuple[float | None, str]:
    """(GiB per GPU, where it comes from) for the memory rules: `--gpu-memory`, `--gpu`, then
    the `gpu` setting; (None, "") when none gives it. UsageError for a GPU name or size it cannot use."""
    try:
        if getattr(args, "gpu_memory", None) is not None:
            return gpu_gib(args.gpu_memory), f"--gpu-memory {args.gpu_memory:g}"
        if getattr(args, "gpu", None):
            return gpu_gib(args.gpu), f"--gpu {args.gpu}"
    except ValueError as ex:
        raise UsageError(
            f"{'--gpu-memory' if getattr(args, 'gpu_memory', None) is not None else '--gpu'} {ex}"
        ) from None
    if settings.gpu is not None:
        return settings.gpu, f"the gpu setting ({settings.gpu:g} GiB)"
    return None, ""


def verl_tree(root: str | None, version: str | None) -> VerlTree | None:
    """The verl tree of `--verl-root`/`--verl` (or the settings); None: found per script."""
    try:
        if root:
            return tree_at(Path(root), "--verl-root")
        if version:
            return release_tree(version)
    except LocateError as ex:
        raise UsageError(str(ex)) from None
    return None


def options_for(args: Namespace, settings: Settings) -> Options:
    """Options for files under `settings`, with the verl tree the flags or the settings name."""
    root = args.verl_root or (settings.verl_root if not args.verl else None)
    return build_options(args, settings, verl_tree(root, args.verl or settings.verl_version))


def load(finder: SettingsFinder, path: Path) -> Settings:
    try:
        return finder.for_path(path)
    except ValueError as ex:
        raise UsageError(str(ex)) from None


# ------------------------------------------------------------ the inputs ----


@dataclass
class Group:
    """The files that share one settings file."""

    settings: Settings
    files: list[Path] = field(default_factory=list)


@dataclass
class Plan:
    """What one run lints: files grouped by their settings, stdin, a command, and bad inputs."""

    groups: list[Group]
    errors: list[FileReport]
    stdin: Settings | None = None
    command: Settings | None = None
    order: dict[str, int] = field(default_factory=dict)  # file -> its place in the report


def plan(args: Namespace, command_argv: list[str] | None, finder: SettingsFinder) -> Plan:
    """The files under the given paths (default `.`), each with its own settings; UsageError on
    a bad settings file. Directories are walked with the settings that apply to them; a file
    under a nested settings file also honours that file's `exclude`."""
    paths = list(dict.fromkeys(args.paths or ([] if command_argv else ["."])))
    out = Plan([], [], command=load(finder, Path(".")) if command_argv else None)
    if STDIN in paths:
        out.stdin = load(finder, Path(args.stdin_filename or "."))
    by_walk: dict[Path | None, tuple[Settings, list[str]]] = {}  # settings file -> its settings, the paths under it
    for raw in paths:
        if raw != STDIN:
            settings = load(finder, Path(raw))
            by_walk.setdefault(settings.path, (settings, []))[1].append(raw)
    groups: dict[Path | None, Group] = {}
    seen: set[str] = set()
    for walk_settings, raws in by_walk.values():
        files, errors = collect(
            raws,
            walk_settings,
            use_ignore_files=not getattr(args, "no_ignore", False),
            skip_others=getattr(args, "skip_other_files", False),
        )
        given = {str(Path(r)) for r in raws}  # as collect names them
        out.errors += errors
        for f in files:
            real = os.path.realpath(f)
            if real in seen:  # the same file reached from two paths
                continue
            seen.add(real)
            settings = load(finder, f)
            if settings is not walk_settings and str(f) not in given and _excluded(f, settings):
                continue
            groups.setdefault(settings.path, Group(settings)).files.append(f)
            out.order[str(f)] = len(out.order)
    out.groups = list(groups.values())
    return out


def _excluded(path: Path, settings: Settings) -> bool:
    if not settings.exclude:
        return False
    try:
        rel = Path(os.path.realpath(path)).relative_to(settings.root.resolve())
    except ValueError:
        return False
    from pathspec import GitIgnoreSpec  # ~20 ms: only for a file an `exclude` setting may match

    return GitIgnoreSpec.from_lines(settings.exclude).match_file(rel.as_posix())


def lint(
    args: Namespace, command_argv: list[str] | None, inputs: Plan, tree: VerlTree | None = None
) -> list[FileReport]:
    """Lint what `inputs` holds; `tree`: this verl tree for every file (upgrade), else per settings."""
    options = {}

    def opts(settings: Settings) -> Options:
        if id(settings) not in options:
            options[id(settings)] = build_options(args, settings, tree) if tree else options_for(args, settings)
        return options[id(settings)]

    for s in [inputs.stdin, inputs.command, *(g.settings for g in inputs.groups)]:
        if s is not None:
            opts(s)  # every bad flag or setting before anything is linted
    use_cache, timings = not args.no_cache, ({} if args.verbose else None)
    if args.verbose:
        _describe(inputs, opts)
    reports = list(inputs.errors)
    if inputs.command is not None:
        reports += lint_paths([], opts(inputs.command), command_argv, use_cache=use_cache, once=False)
    if inputs.stdin is not None:
        reports.append(_lint_stdin(args, inputs.stdin, opts(inputs.stdin), use_cache))
    linted: list[FileReport] = []
    # Scripts first: a primary config that a launch of this run composes is judged there, with
    # what the launch sets; the others are linted on their own, once.
    configs = {id(g): [f for f in g.files if embedded_kind(f) == "config"] for g in inputs.groups}

    def lint_group(files: list[Path], g: Group) -> list[FileReport]:
        return lint_paths(
            files,
            opts(g.settings),
            use_cache=use_cache,
            per_file_ignores=g.settings.per_file_ignores,
            jobs=args.jobs,
            timings=timings,
            once=False,
        )

    for g in inputs.groups:
        linted += lint_group([f for f in g.files if f not in configs[id(g)]], g)
    composed = {os.path.realpath(span.path) for r in linted for span in r.file_value_users}
    for g in inputs.groups:
        linted += lint_group([f for f in configs[id(g)] if os.path.realpath(f) not in composed], g)
    once_per_run(reports + linted)
    reports += sorted(linted, key=lambda r: inputs.order.get(r.path, 0))  # the order of the walk
    if timings:
        for path, seconds in sorted(timings.items(), key=lambda x: -x[1]):
            print(f"verl-lint: {seconds:7.3f} s  {safe(path)}", file=sys.stderr)
    if args.verbose and use_cache:
        print(
            f"verl-lint: {sum(r.cached for r in linted)} of {plural(len(linted), 'file')} read back from the result "
            "cache",
            file=sys.stderr,
        )
    return reports


def _describe(inputs: Plan, opts) -> None:
    """-v: the settings files, verl trees and engine versions used."""

    def say(msg: str) -> None:
        print(f"verl-lint: {msg}", file=sys.stderr)

    say(f"verl-lint {__version__}, Python {sys.version.split()[0]}")
    for g in inputs.groups:
        where = safe(str(g.settings.path)) if g.settings.path else "defaults (no settings file found)"
        say(f"settings for {plural(len(g.files), 'file')}: {where}")
        o = opts(g.settings)
        trees = {verl_tree_for(f.parent.resolve(), o.verl_tree) for f in g.files}
        for t in sorted(trees, key=str):
            say(
                f"verl: {safe(t.describe()) if t else 'none found (no checkout above the scripts, verl not installed)'}"
            )
        given = {k: f"{v} ({o.version_origin.get(k, 'given')})" for k, v in o.versions.items()}
        engines = {**{k: f"{v} (installed)" for k, v in installed_versions().items()}, **given}
        say("engines: " + (", ".join(f"{k} {v}" for k, v in sorted(engines.items())) or "none installed or given"))


def _lint_stdin(args: Namespace, settings: Settings, options: Options, use_cache: bool) -> FileReport:
    """The script on stdin, reported under --stdin-filename (default `-`)."""
    name = args.stdin_filename or STDIN
    data = sys.stdin.buffer.read(options.max_bytes + 1)
    if len(data) > options.max_bytes:
        return FileReport(
            name, errors=[InputError(name, f"stdin is over the {options.max_bytes / 2**20:g} MiB limit; not analysed")]
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as ex:
        return FileReport(
            name, errors=[InputError(name, f"stdin is not UTF-8 (byte {data[ex.start]:#04x} at offset {ex.start})")]
        )
    return lint_script(name, text, options, None, settings.per_file_ignores, use_cache=use_cache)


# ------------------------------------------------------------ the commands ----


def check(args: Namespace, command_argv: list[str] | None) -> int:
    if STDIN in args.paths and (args.fix or args.diff):
        return usage_error("--fix and --diff cannot fix stdin (`-`): give the file")
    if args.stdin_filename and STDIN not in args.paths:
        return usage_error("--stdin-filename names the script read from stdin: give `-` as the path")
    finder = SettingsFinder(args.config)
    try:
        if args.show_settings is not None:
            return show_settings(args, finder)
        inputs = plan(args, command_argv, finder)
        if args.show_files:
            return show_files(inputs)
        reports = lint(args, command_argv, inputs)
    except UsageError as ex:
        return usage_error(str(ex))
    if args.write_baseline:
        try:
            n = write_baseline(Path(args.write_baseline), reports)
        except WriteError as ex:
            return usage_error(str(ex))
        print(f"Wrote {plural(n, 'finding')} to {args.write_baseline}")
        return EXIT_USAGE if any(r.errors for r in reports) else EXIT_CLEAN
    hidden = 0
    if args.baseline:
        try:
            hidden = filter_baseline(Path(args.baseline), reports)
        except ValueError as ex:
            return usage_error(f"cannot read baseline {args.baseline}: {ex}")
    failed = diffs = 0
    if args.fix or args.diff:
        reports, failed, diffs = fix(args, command_argv, inputs, reports)
        if args.baseline:  # the files --fix changed were linted again: the baseline still applies
            hidden = filter_baseline(Path(args.baseline), reports)
    return emit(reports, args, fail_on_levels(args, inputs), failed, hidden, diffs, docs_url(inputs))


def fail_on_levels(args: Namespace, inputs: Plan) -> dict[str, str]:
    """Each report's --fail-on: the flag, else the setting of the file's own settings."""
    of = {str(f): args.fail_on or g.settings.fail_on for g in inputs.groups for f in g.files}
    default = args.fail_on or (inputs.command or inputs.stdin or Settings()).fail_on
    return {"": default, **of}


def docs_url(inputs: Plan) -> str | None:
    """The `docs-url` setting the report's links use: one report, so the first settings that set it."""
    every = [inputs.command, inputs.stdin, *(g.settings for g in inputs.groups)]
    return next((s.docs_url for s in every if s is not None and s.docs_url), None)


def fix(args: Namespace, command_argv, inputs: Plan, reports: list[FileReport], tree: VerlTree | None = None):
    """Apply (or, with --diff, show) fixes; the files that changed are linted again.

    Returns the reports, how many files could not be written (each told on stderr) and how
    many diffs --diff showed.
    """
    changed = fixed = failed = diffs = 0
    shown: list[Diagnostic] = []
    for path, text, diags in _fix_targets(reports, args):
        res = apply_fixes(path, text, diags, unsafe=args.unsafe_fixes, write=not args.diff)
        if res.failed:
            failed += 1
            print(f"{path}: error: not fixed: {res.skipped_reason}", file=sys.stderr)
        elif res.skipped_reason:
            print(f"{path}: fix skipped: {res.skipped_reason}", file=sys.stderr)
        if args.diff:
            sys.stdout.write(res.diff)
            diffs += bool(res.diff)
        elif res.applied:
            changed += 1
            fixed += res.applied
            shown += [
                d for d in diags if d.fix is not None and (d.fix.safe or args.unsafe_fixes) and d.fix.span.path == path
            ]
    if changed:
        if not args.quiet:
            print(f"Fixed {plural(fixed, 'finding')} in {plural(changed, 'file')}", file=sys.stderr)
            if args.show_fixes:
                _list_fixes(shown, sys.stderr)
        if any(in_config_file(d.fix.span) for d in shown):
            forget_config_files()  # a project config file changed: composed again, not recalled
        return lint(args, command_argv, inputs, tree), failed, diffs
    if not diffs and not failed and not args.quiet:
        unsafe = not args.unsafe_fixes and any(
            d.fix is not None and not d.fix.safe for r in reports for d in r.diagnostics
        )
        print(
            f"No fixes available{' to show' if args.diff else ''}"
            + (" (use --unsafe-fixes for unsafe ones)" if unsafe else ""),
            file=sys.stderr,
        )
    return reports, failed, diffs


def _fix_targets(reports: list[FileReport], args: Namespace):
    """(path, text, findings) of each file --fix may edit: the linted files, and the project config
    files that findings of theirs are located in (a YAML key renamed where it is written)."""
    elsewhere: dict[str, list[Diagnostic]] = {}
    for r in reports:
        if _fixable_file(r, args):
            yield r.path, r.text, r.diagnostics
        for d in r.diagnostics:
            if d.fix is not None and in_config_file(d.fix.span) and d.fix.span.path != r.path:
                elsewhere.setdefault(d.fix.span.path, []).append(d)
    linted = {r.path for r in reports}
    for path, diags in elsewhere.items():
        text = reports[0].text_of(path)
        if text is not None and path not in linted:
            yield path, text, diags


def _fixable_file(r: FileReport, args: Namespace) -> bool:
    """A file --fix may write: not a command line, not stdin, not one not read as the text it
    claims to be (`Rule.outcome` "unparsed": invalid UTF-8)."""
    stdin = (args.stdin_filename or STDIN) if STDIN in args.paths else None
    return (
        r.text is not None
        and not r.path.startswith("<")
        and r.path != stdin
        and not any(outcome(d) == "unparsed" for d in r.diagnostics)
    )


def _offered(reports: list[FileReport], args: Namespace) -> list[tuple[str, str, list[Diagnostic]]]:
    """(path, text, findings with a fix there) of each file --fix may edit: the scripts and the
    project config files their findings are located in."""
    out = []
    for path, text, diags in _fix_targets(reports, args):
        here = [d for d in diags if d.fix is not None and d.fix.span.path == path]
        if here:
            out.append((path, text, here))
    return out


def _list_fixes(diags: list[Diagnostic], stream) -> None:
    for d in diags:
        print(
            f"  {safe(d.span.path)}:{d.span.line}:{d.span.col}: {d.code} {safe(d.fix.title)}"
            + ("" if d.fix.safe else " (unsafe)"),
            file=stream,
        )


def _fixable_summary(reports: list[FileReport], args: Namespace) -> str:
    """`N fixable with --fix (M more with --unsafe-fixes)`: what --fix would apply, counted as it
    applies, in the scripts and in the project config files (a YAML key renamed where it is written)."""
    n_safe = n_all = 0
    for path, text, diags in _offered(reports, args):
        safe_, all_ = _fix_counts(path, text, diags)
        n_safe, n_all = n_safe + safe_, n_all + all_
    if not n_all:
        return ""
    if not n_safe:
        return f"{n_all} fixable with --fix --unsafe-fixes\n"
    return (
        f"{n_safe} fixable with --fix"
        + (f" ({n_all - n_safe} more with --unsafe-fixes)" if n_all > n_safe else "")
        + "\n"
    )


def _fix_counts(path: str, text: str, diags: list[Diagnostic]) -> tuple[int, int]:
    """How many fixes --fix and --fix --unsafe-fixes would apply to the file (each checked by parsing
    the result), kept on disk by the text and fixes, so a warm run does not parse again."""
    fixes = [(d.fix, d.span.path) for d in diags if d.fix]
    ident = hashlib.sha256(repr((path, text, fixes)).encode("utf-8", "surrogateescape")).hexdigest()

    def count() -> tuple[int, int]:
        return tuple(apply_fixes(path, text, diags, unsafe=u, write=False).applied for u in (False, True))

    return memo("fixes", ident, count, tuple)


def emit(
    reports: list[FileReport],
    args: Namespace,
    fail_on: dict[str, str],
    unfixed: int = 0,
    hidden: int = 0,
    diffs: int = 0,
    docs: str | None = None,
) -> int:
    """Write the report (terminal and --output); the exit code. `fail_on`: report path -> level
    ("" for the rest); `unfixed`: files --fix could not write; `hidden`: findings the baseline removed;
    `docs`: the `docs-url` setting."""
    fmt = args.format or "text"
    color = use_color(args.color, sys.stdout)
    unwritten = None
    if args.output:
        try:
            write_atomic(args.output, render(fmt, reports, docs))
        except WriteError as ex:
            unwritten = str(ex)  # the report still goes to the terminal, then this error
    if getattr(args, "diff", False):
        # The diff was the output; like ruff, 1 when there is something to apply, else 0.
        if unwritten:
            return usage_error(unwritten)
        return EXIT_USAGE if unfixed or any(r.errors for r in reports) else (EXIT_FINDINGS if diffs else EXIT_CLEAN)
    if args.statistics:
        sys.stdout.write(render_statistics(reports, fmt))
        for e in (e for r in reports for e in r.errors):
            print(str(e), file=sys.stderr)
    elif fmt == "text" or args.output:
        sys.stdout.write(RENDERERS["text"](reports, color=color, show_summary=not args.quiet, hidden=hidden))
        if not args.quiet and not args.fix:
            sys.stdout.write(_fixable_summary(reports, args))
    else:
        sys.stdout.write(render(fmt, reports, docs))
        for r in reports:
            for e in r.errors:
                print(str(e), file=sys.stderr)
    if args.show_fixes and not args.fix:
        _list_fixes(
            [d for _, _, diags in _offered(reports, args) for d in diags if d.fix.safe or args.unsafe_fixes], sys.stdout
        )
    if unwritten:
        return usage_error(unwritten)
    if unfixed or any(r.errors for r in reports):
        return EXIT_USAGE
    if getattr(args, "fail_on_unanalysed", False) and not args.exit_zero:
        s = stats(reports)
        if s["unanalysed"] or s["files_unanalysed"]:
            print(f"verl-lint: {accounting(reports)}; failing (--fail-on-unanalysed)", file=sys.stderr)
            return EXIT_FINDINGS
    if args.exit_zero:
        return EXIT_CLEAN
    for r in reports:
        level = fail_on.get(r.path, fail_on[""])
        if level != "never" and any(d.severity >= Severity.parse(level) for d in r.diagnostics):
            return EXIT_FINDINGS
    return EXIT_CLEAN


# ------------------------------------------------------------ what applies ----


def show_settings(args: Namespace, finder: SettingsFinder) -> int:
    """The settings FILE gets (default: the first path), each with where it came from."""
    target = Path(args.show_settings or (args.paths[0] if args.paths else "."))
    if not os.path.exists(target):
        raise UsageError(f"--show-settings {target}: no such file or directory")
    settings = load(finder, target)
    options_for(args, settings)  # a bad flag or setting is an error here as in a run
    where = str(settings.path) if settings.path else "no settings file; defaults"
    print(f"# settings for {safe(str(target))}: {safe(where)}")
    for name, (attr, _) in SETTINGS.items():
        value = settings.engines.get(attr[8:]) if attr.startswith("engines.") else getattr(settings, attr)
        origin = safe(str(settings.path)) if name in settings.given else "default"
        flag = FLAG_OF.get(name)
        given = getattr(args, _dest(flag), None) if flag else None
        if given:
            codes = split_codes(given) if name in ("select", "ignore") else given
            if name == "ignore" and value:
                value, origin = codes + value, f"command line ({flag}) and {origin}"
            else:
                value, origin = codes, f"command line ({flag})"
        if isinstance(value, dict):
            value = {k: str(v) for k, v in value.items()}
        print(f"{name} = {show(value) if value is not None else '(not set)'}  # {origin}")
    return EXIT_CLEAN


def _dest(flag: str) -> str:
    engine = ENGINE_FLAGS.get(flag)
    return engine[1] if engine else flag[2:].replace("-", "_")


def show_files(inputs: Plan) -> int:
    """The files a run would lint, one per line (bad paths on stderr, exit 2)."""
    for path in sorted(inputs.order, key=inputs.order.get):
        print(safe(path))
    for r in inputs.errors:
        for e in r.errors:
            print(str(e), file=sys.stderr)
    return EXIT_USAGE if inputs.errors else EXIT_CLEAN
