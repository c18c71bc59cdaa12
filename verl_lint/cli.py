"""Command line: parse arguments, load settings, call the pipeline, render, exit 0/1/2."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import __version__
from .knowledge import MissingTable
from .terminal import plural

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="verl-lint", description="Lint verl launch scripts before the cluster does.")
    p.add_argument("--version", action="version", version=f"verl-lint {__version__}")
    sub = p.add_subparsers(dest="command")

    c = sub.add_parser("check", help="lint scripts, directories, or a command given after --")
    c.add_argument("paths", nargs="*", help="scripts or directories (recursively: *.sh, *.bash, sh shebangs)")
    c.add_argument("--no-ignore", action="store_true", help="in directories, also lint what .gitignore and .git/info/exclude ignore")
    _common(c)
    _output_flags(c)
    c.add_argument("--baseline", help="report only findings not recorded in this baseline file")
    c.add_argument("--write-baseline", metavar="FILE", help="record the current findings as the baseline and exit 0")
    _fix_flags(c)

    u = sub.add_parser("upgrade", help="show what upgrading verl breaks in these scripts (and fix renames)")
    u.add_argument("paths", nargs="+")
    u.add_argument("--to", required=True, metavar="VERSION", help="the verl release to upgrade to")
    g = u.add_mutually_exclusive_group()
    g.add_argument("--from", dest="from_version", metavar="VERSION", help="the current verl release (default: detected)")
    g.add_argument("--from-root", metavar="DIR", help="the current verl checkout")
    for flag in ("--select", "--ignore"):
        u.add_argument(flag, action="append", default=None)
    _engine_flags(u)
    u.add_argument("--config")
    u.add_argument("--debug", action="store_true")
    _output_flags(u)
    _fix_flags(u)

    from . import cache, doctor, wrapper

    doctor.add_arguments(sub.add_parser("doctor", help="report the environment (versions, accelerator, allocator) and live findings"))
    wrapper.add_arguments(sub.add_parser("run", help="lint a command (or `bash script.sh ...`), then run it only if it passes"))
    cache.add_arguments(sub.add_parser("cache", help="inspect or clean the on-disk cache"))

    r = sub.add_parser("rules", help="list the rules")
    r.add_argument("--format", choices=["text", "json"], default="text")
    d = sub.add_parser("rule", help="show one rule's documentation")
    d.add_argument("code", help="code (VL201) or name")
    return p


def _output_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--format", choices=["text", "json", "sarif", "github", "junit"], default=None)
    p.add_argument("--output", "-o", help="write the report (in --format) to this file; text still goes to the terminal")
    p.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default=None)
    p.add_argument(
        "--fail-on-unanalysed", action="store_true",
        help="exit 1 when a launch or file could not be analysed (VL007, VL004, VL005), whatever --fail-on says",
    )
    p.add_argument("--no-cache", action="store_true", help="do not read or write the on-disk cache of composed configs")
    p.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    p.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: all cores for many files)")
    p.add_argument("--max-file-size", type=float, default=None, metavar="MiB", help="skip larger files with VL004 (default 4)")
    p.add_argument("--timeout", type=float, default=None, metavar="S", help="per-file analysis limit, VL005 (default 20)")


def _fix_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fix", action="store_true", help="apply safe fixes to the scripts")
    p.add_argument("--unsafe-fixes", action="store_true", help="with --fix/--diff: also fixes that change behaviour")
    p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff instead of writing them")


def _common(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--verl-root", help="lint against this verl checkout")
    g.add_argument("--verl", metavar="VERSION", help="lint against this verl release (downloaded once, no dependencies)")
    p.add_argument("--select", action="append", default=None, help="only these codes/prefixes/names (comma-separated)")
    p.add_argument("--ignore", action="append", default=None, help="skip these codes/prefixes/names")
    _engine_flags(p)
    p.add_argument("--config", help="settings file (default: [tool.verl-lint] in the nearest pyproject.toml)")
    p.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    p.add_argument(
        "--cwd", metavar="DIR",
        help="the directory the scripts are run from (default: assumed, and said in the findings: the repository root, ...)",
    )


# flag (and its older alias) -> engine key; the version wins over the installed one and over the
# ranges the verl tree declares (see verl_lint/versions.py)
ENGINE_FLAGS = {
    "--vllm": ("--vllm-version", "vllm"),
    "--sglang": ("--sglang-version", "sglang"),
    "--vllm-ascend": ("--vllm-ascend-version", "vllm_ascend"),
    "--torch-npu": ("--torch-npu-version", "torch_npu"),
}


def _engine_flags(p: argparse.ArgumentParser) -> None:
    for flag, (alias, key) in ENGINE_FLAGS.items():
        p.add_argument(flag, alias, dest=key, metavar="VERSION", help=f"the {flag[2:]} release to check against (default: installed, else the range the verl tree declares)")


def _split(values) -> tuple[str, ...]:
    out = []
    for v in values or ():
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return tuple(out)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command_argv = None
    if "--" in argv:
        i = argv.index("--")
        argv, command_argv = argv[:i], argv[i + 1 :]
    args = _parser().parse_args(argv)
    try:
        if args.command == "check":
            return _check(args, command_argv)
        if args.command == "upgrade":
            return _upgrade(args)
        if args.command == "run":
            from .wrapper import run

            return run(args, command_argv)
        if args.command == "doctor":
            from .doctor import run

            return run(args)
        if args.command == "cache":
            from .cache import run

            return run(args)
        if args.command == "rules":
            return _rules(args)
        if args.command == "rule":
            return _rule(args)
    except MissingTable as ex:  # a broken installation: one line, not a smaller rule pack
        return _error(str(ex))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `verl-lint ... | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    _parser().print_help()
    return EXIT_USAGE


def _error(msg: str) -> int:
    from .terminal import safe

    print(f"verl-lint: error: {safe(msg)}", file=sys.stderr)  # msg may quote a scanned file
    return EXIT_USAGE


class UsageError(Exception):
    """A bad flag or setting: one line and exit code 2."""


def _options(args, settings, tree):
    """Options from flags and settings (flags win); raises UsageError on a bad value."""
    from .pipeline import Options
    from .settings import code_problem

    for flag, values in (("--select", args.select), ("--ignore", args.ignore)):  # settings: checked on load
        for code in _split(values):
            problem = code_problem(code)
            if problem:
                raise UsageError(f"{flag}: {problem}")
    select = _split(args.select) or settings.select
    if select:
        select += settings.extend_select
    ignore = _split(args.ignore) + settings.ignore
    # `source` may follow files inside the scanned tree (a directory given, or a file's directory).
    scanned = [Path(os.path.realpath(p)) for p in getattr(args, "paths", None) or ()]  # never raises, even on a loop
    roots = tuple(dict.fromkeys(p if os.path.isdir(p) else p.parent for p in scanned))
    cwd = getattr(args, "cwd", None) or settings.cwd
    if cwd is not None and not os.path.isdir(cwd):
        raise UsageError(f"{'--cwd' if getattr(args, 'cwd', None) else 'cwd setting'} {cwd}: not a directory")
    from .engines.versions import version_problem

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
    return Options(
        verl_tree=tree,
        select=select,
        ignore=ignore,
        severity=settings.severity,
        versions=versions,
        version_origin=origin,
        allowed_roots=roots,
        debug=args.debug,
        max_bytes=int((args.max_file_size or settings.max_file_size) * 2**20),
        timeout=args.timeout if args.timeout is not None else settings.timeout,
        cwd=os.path.abspath(cwd) if cwd else None,
    )


def _tree(root: str | None, version: str | None):
    from .launch.locate import LocateError, release_tree, tree_at

    try:
        if root:
            return tree_at(Path(root), "--verl-root")
        if version:
            return release_tree(version)
    except LocateError as ex:
        raise UsageError(str(ex)) from None
    return None


def _settings(args, start: Path | None = None):
    from .settings import load_settings

    try:
        return load_settings(args.config, start or Path(args.paths[0] if args.paths else "."))
    except ValueError as ex:
        raise UsageError(str(ex)) from None


def _run_lint(args, command_argv, settings, options):
    from .runner import collect, lint_paths

    targets, errors = collect(args.paths, settings, use_ignore_files=not getattr(args, "no_ignore", False))
    reports = lint_paths(
        targets, options, command_argv, use_cache=not args.no_cache, per_file_ignores=settings.per_file_ignores, jobs=args.jobs
    )
    return errors + reports


def _check(args, command_argv) -> int:
    if not args.paths and not command_argv:
        return _error("nothing to check: give scripts, directories, or `-- python3 -m ...`")
    try:
        settings = _settings(args)
        tree = _tree(args.verl_root or (settings.verl_root if not args.verl else None), args.verl or settings.verl_version)
        options = _options(args, settings, tree)
    except UsageError as ex:
        return _error(str(ex))
    reports = _run_lint(args, command_argv, settings, options)
    if args.write_baseline:
        from .files import WriteError
        from .report.suppress import write_baseline

        try:
            n = write_baseline(Path(args.write_baseline), reports)
        except WriteError as ex:
            return _error(str(ex))
        print(f"Wrote {n} finding{'s' * (n != 1)} to {args.write_baseline}")
        return EXIT_USAGE if any(r.errors for r in reports) else EXIT_CLEAN
    hidden = 0
    if args.baseline:
        from .report.suppress import filter_baseline

        try:
            hidden = filter_baseline(Path(args.baseline), reports)
        except ValueError as ex:
            return _error(f"cannot read baseline {args.baseline}: {ex}")
    failed = diffs = 0
    if args.fix or args.diff:
        reports, failed, diffs = _fix(args, command_argv, settings, options, reports)
        if args.baseline:  # the files --fix changed were linted again: the baseline still applies
            hidden = filter_baseline(Path(args.baseline), reports)
    return _emit(reports, args, args.fail_on or settings.fail_on, failed, hidden, diffs)


def _fix(args, command_argv, settings, options, reports):
    """Apply (or, with --diff, show) fixes; the files that changed are linted again.

    Returns the reports, how many files could not be written (each told on stderr) and how
    many diffs --diff showed.
    """
    from .report.fix import apply_fixes

    changed = 0
    fixed = 0
    failed = 0
    diffs = 0
    for r in reports:
        if r.text is None or r.path.startswith("<") or any(d.code == "VL006" for d in r.diagnostics):
            continue
        res = apply_fixes(r.path, r.text, r.diagnostics, unsafe=args.unsafe_fixes, write=not args.diff)
        if res.failed:
            failed += 1
            print(f"{r.path}: error: not fixed: {res.skipped_reason}", file=sys.stderr)
        elif res.skipped_reason:
            print(f"{r.path}: fix skipped: {res.skipped_reason}", file=sys.stderr)
        if args.diff:
            sys.stdout.write(res.diff)
            diffs += bool(res.diff)
        elif res.applied:
            changed += 1
            fixed += res.applied
    if changed:
        print(f"Fixed {plural(fixed, 'finding')} in {plural(changed, 'file')}", file=sys.stderr)
        return _run_lint(args, command_argv, settings, options), failed, diffs
    if not diffs and not failed:
        print("No fixes available" + (" (use --unsafe-fixes for unsafe ones)" if not args.unsafe_fixes else ""), file=sys.stderr)
    return reports, failed, diffs


def _emit(reports, args, fail_on, unfixed: int = 0, hidden: int = 0, diffs: int = 0) -> int:
    """Write the report (terminal and --output); the exit code. `unfixed`: files --fix could not
    write; `hidden`: findings the baseline removed (the summary says how many)."""
    from .files import WriteError, write_atomic
    from .model import Severity
    from .report.render import RENDERERS

    fmt = args.format or "text"
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    unwritten = None
    if args.output:
        try:
            write_atomic(args.output, RENDERERS[fmt](reports))
        except WriteError as ex:
            unwritten = str(ex)  # the report still goes to the terminal, then this error
    if getattr(args, "diff", False):
        # The diff was the output; like ruff, 1 when there is something to apply, else 0.
        if unwritten:
            return _error(unwritten)
        return EXIT_USAGE if unfixed or any(r.errors for r in reports) else (EXIT_FINDINGS if diffs else EXIT_CLEAN)
    if fmt == "text" or args.output:
        sys.stdout.write(RENDERERS["text"](reports, color=color, hidden=hidden))
    else:
        sys.stdout.write(RENDERERS[fmt](reports))
        for r in reports:
            for e in r.errors:
                print(str(e), file=sys.stderr)
    if unwritten:
        return _error(unwritten)
    if unfixed or any(r.errors for r in reports):
        return EXIT_USAGE
    if getattr(args, "fail_on_unanalysed", False):
        from .pipeline import stats

        s = stats(reports)
        if s["unanalysed"] or s["files_unanalysed"]:
            from .report.render import accounting

            print(f"verl-lint: {accounting(s)}; failing (--fail-on-unanalysed)", file=sys.stderr)
            return EXIT_FINDINGS
    if fail_on == "never":
        return EXIT_CLEAN
    threshold = Severity.parse(fail_on)
    return EXIT_FINDINGS if any(d.severity >= threshold for r in reports for d in r.diagnostics) else EXIT_CLEAN


def _upgrade(args) -> int:
    """Lint against the current and the target verl; report only what the upgrade changes."""
    from .launch.locate import find_checkout, installed_tree

    try:
        settings = _settings(args)
        target = _tree(None, args.to)
        current = _tree(args.from_root, args.from_version)
        if current is None:
            current = find_checkout(Path(args.paths[0]).resolve().parent) or installed_tree()
        if current is None:
            raise UsageError("no current verl found: pass --from VERSION or --from-root DIR")
        before_opts = _options(args, settings, current)
        after_opts = _options(args, settings, target)
    except UsageError as ex:
        return _error(str(ex))
    before = _run_lint(args, None, settings, before_opts)
    after = _run_lint(args, None, settings, after_opts)
    print(f"Upgrade preview: verl {current.version} -> {target.version}", file=sys.stderr)
    known = {(d.span.path, d.code, d.key, d.span.line, d.span.col) for r in before for d in r.diagnostics}
    def new_only(reports):  # what the upgrade changes, also after --fix linted the changed files again
        for r in reports:
            r.diagnostics = [d for d in r.diagnostics if (d.span.path, d.code, d.key, d.span.line, d.span.col) not in known]
        return reports

    new_only(after)
    failed = diffs = 0
    if args.fix or args.diff:
        after, failed, diffs = _fix(args, None, settings, after_opts, after)
        new_only(after)
    return _emit(after, args, args.fail_on or settings.fail_on, failed, diffs=diffs)


def _rules(args) -> int:
    import json

    from .rules import pack  # noqa: F401 - registers the rule pack
    from .registry import REGISTRY

    if args.format == "json":
        print(
            json.dumps(
                [
                    {"code": r.code, "name": r.name, "severity": str(r.severity), "verl": str(r.verl) or "*", "summary": r.summary}
                    for r in REGISTRY
                ],
                indent=2,
            )
        )
        return EXIT_CLEAN
    rows = [(r.code, r.name, str(r.severity), str(r.verl) or "*", r.summary) for r in REGISTRY]
    w = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print(f"{row[0]:<{w[0]}}  {row[1]:<{w[1]}}  {row[2]:<{w[2]}}  {row[3]:<{w[3]}}  {row[4]}")
    print(f"\n{len(rows)} rules")
    return EXIT_CLEAN


def _rule(args) -> int:
    import textwrap

    from .rules import pack  # noqa: F401 - registers the rule pack
    from .registry import REGISTRY

    r = REGISTRY.get(args.code)
    if r is None:
        return _error(f"no rule {args.code!r} (see `verl-lint rules`)")
    print(f"{r.code} {r.name} [{r.severity}]  verl {str(r.verl) or '*'}\n")
    for label, evs in (("Runs on a verl tree whose source has", r.evidence), ("Not where it has", r.unless)):
        if evs:
            print(f"{label}: " + " or ".join(f"/{ev.pattern}/ in {', '.join(ev.files)}" for ev in evs) + "\n")
    print(textwrap.dedent("\n".join(r.doc.splitlines()[1:])).strip() if "\n" in r.doc else r.doc.strip())
    for title, examples in (("Bad", r.bad), ("Good", r.good)):
        for ex in examples:
            script, spec = ex if isinstance(ex, tuple) else (ex, "")
            if len(script) > 2000:
                script = script[:2000] + "\n..."
            print(f"\n{title} example{f' (verl {spec})' if spec else ''}:\n" + textwrap.indent(script.rstrip(), "    "))
    return EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
