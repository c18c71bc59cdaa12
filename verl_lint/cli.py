"""Command line: parse arguments, load settings, call the pipeline, render, exit 0/1/2."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from . import __version__

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="verl-lint", description="Lint verl launch scripts before the cluster does.")
    p.add_argument("--version", action="version", version=f"verl-lint {__version__}")
    sub = p.add_subparsers(dest="command")

    c = sub.add_parser("check", help="lint scripts, directories, or a command given after --")
    c.add_argument("paths", nargs="*", help="scripts or directories (recursively: *.sh, *.bash, sh shebangs)")
    _common(c)
    c.add_argument("--format", choices=["text", "json", "sarif", "github"], default=None)
    c.add_argument("--output", "-o", help="also write the report (in --format) to this file")
    c.add_argument("--fail-on", choices=["error", "warning", "info", "never"], default=None)
    c.add_argument("--no-cache", action="store_true", help="do not read or write the on-disk cache of composed configs")
    c.add_argument("--color", choices=["auto", "always", "never"], default="auto")
    c.add_argument("--baseline", help="report only findings not recorded in this baseline file")
    c.add_argument("--write-baseline", metavar="FILE", help="record the current findings as the baseline and exit 0")
    c.add_argument("--jobs", "-j", type=int, default=None, help="worker processes (default: all cores for many files)")

    r = sub.add_parser("rules", help="list the rules")
    r.add_argument("--format", choices=["text", "json"], default="text")
    d = sub.add_parser("rule", help="show one rule's documentation")
    d.add_argument("code", help="code (VL201) or name")
    return p


def _common(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--verl-root", help="lint against this verl checkout")
    g.add_argument("--verl", metavar="VERSION", help="lint against this verl release (downloaded once, no dependencies)")
    p.add_argument("--select", action="append", default=None, help="only these codes/prefixes/names (comma-separated)")
    p.add_argument("--ignore", action="append", default=None, help="skip these codes/prefixes/names")
    p.add_argument("--vllm-version", help="the vLLM version to check engine args and env vars against")
    p.add_argument("--config", help="settings file (default: [tool.verl-lint] in the nearest pyproject.toml)")
    p.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")


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
        if args.command == "rules":
            return _rules(args)
        if args.command == "rule":
            return _rule(args)
    except KeyboardInterrupt:
        return 130
    _parser().print_help()
    return EXIT_USAGE


def _error(msg: str) -> int:
    print(f"verl-lint: error: {msg}", file=sys.stderr)
    return EXIT_USAGE


def _check(args, command_argv) -> int:
    from .engine import REGISTRY
    from .locate import LocateError, release_tree, tree_at
    from .model import Severity
    from .pipeline import Options
    from .report import RENDERERS
    from .runner import collect, lint_paths
    from .settings import load_settings

    if not args.paths and not command_argv:
        return _error("nothing to check: give scripts, directories, or `-- python3 -m ...`")
    try:
        settings = load_settings(args.config, Path(args.paths[0] if args.paths else "."))
    except ValueError as ex:
        return _error(str(ex))
    select = _split(args.select) or settings.select
    if select:
        select += settings.extend_select
    ignore = _split(args.ignore) + settings.ignore
    for code in select + ignore:
        if not any(r.code.startswith(code) or r.name == code for r in REGISTRY):
            return _error(f"unknown rule code or name {code!r} (see `verl-lint rules`)")
    try:
        if args.verl_root or (settings.verl_root and not args.verl):
            tree = tree_at(Path(args.verl_root or settings.verl_root), "--verl-root")
        elif args.verl or settings.verl_version:
            tree = release_tree(args.verl or settings.verl_version)
        else:
            tree = None
    except LocateError as ex:
        return _error(str(ex))
    versions = {}
    if args.vllm_version:
        versions["vllm"] = args.vllm_version
    fail_on = args.fail_on or settings.fail_on
    fmt = args.format or "text"
    options = Options(
        verl_tree=tree,
        select=select,
        ignore=ignore,
        severity=settings.severity,
        versions=versions,
        debug=args.debug,
    )
    targets, errors = collect(args.paths, settings)
    reports = lint_paths(
        targets, options, command_argv, use_cache=not args.no_cache, per_file_ignores=settings.per_file_ignores, jobs=args.jobs
    )
    reports = errors + reports
    if args.write_baseline:
        from .suppress import write_baseline

        n = write_baseline(Path(args.write_baseline), reports)
        print(f"Wrote {n} finding{'s' * (n != 1)} to {args.write_baseline}")
        return EXIT_USAGE if any(r.errors for r in reports) else EXIT_CLEAN
    if args.baseline:
        from .suppress import filter_baseline

        try:
            filter_baseline(Path(args.baseline), reports)
        except (OSError, ValueError) as ex:
            return _error(f"cannot read baseline {args.baseline}: {ex}")
    color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty() and not os.environ.get("NO_COLOR"))
    rendered = RENDERERS[fmt](reports) if fmt != "text" else RENDERERS["text"](reports, color=color)
    if args.output:
        from .runner import write_atomic

        write_atomic(Path(args.output), RENDERERS[fmt](reports) if fmt != "text" else RENDERERS["text"](reports))
        if fmt != "text":
            rendered = RENDERERS["text"](reports, color=color)
    sys.stdout.write(rendered)
    if any(r.errors for r in reports):
        for r in reports:
            for e in r.errors:
                if fmt != "text":
                    print(str(e), file=sys.stderr)
        return EXIT_USAGE
    if fail_on == "never":
        return EXIT_CLEAN
    threshold = Severity.parse(fail_on)
    return EXIT_FINDINGS if any(d.severity >= threshold for r in reports for d in r.diagnostics) else EXIT_CLEAN


def _rules(args) -> int:
    import json

    from . import rules  # noqa: F401 - registers the rule pack
    from .engine import REGISTRY

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

    from . import rules  # noqa: F401 - registers the rule pack
    from .engine import REGISTRY

    r = REGISTRY.get(args.code)
    if r is None:
        return _error(f"no rule {args.code!r} (see `verl-lint rules`)")
    print(f"{r.code} {r.name} [{r.severity}]  verl {str(r.verl) or '*'}\n")
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
