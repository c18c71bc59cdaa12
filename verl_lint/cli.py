"""Command line: every flag with its help, then the subcommand; exit 0 clean, 1 findings, 2 usage
or input errors. What lints lives in check.py and wrapper.py, imported only by the commands that
lint, so `--help`, `rules` and `cache dir` start without Hydra, OmegaConf or tree-sitter."""

from __future__ import annotations

import argparse
import json
import os
import sys
import textwrap

from . import __version__, cache, doctor
from .catalogue import ANALYSIS_TIMEOUT, FILE_TOO_LARGE, LAUNCH_NOT_ANALYSABLE
from .environment import MissingTable
from .launch.locate import LocateError, release_tree
from .rules import registered_rules
from .settings import ENGINE_FLAGS, FAIL_ON
from .terminal import show_progress, usage_error

EXIT_CLEAN, EXIT_USAGE = 0, 2
FORMATS = ["text", "json", "sarif", "github", "junit"]


def parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line; with `command`, only that subcommand's flags are added (the others are
    listed by name): building all of them is most of a warm check's own time."""
    p = argparse.ArgumentParser(prog="verl-lint", description="Lint verl launch scripts before the cluster does.")
    p.add_argument("--version", action="version", version=f"verl-lint {__version__}")
    sub = p.add_subparsers(dest="command")
    for name, (help_, build) in COMMANDS.items():
        sp = sub.add_parser(name, help=help_)
        if command in (None, name):
            build(sp)
    return p


def _build_check(c: argparse.ArgumentParser) -> None:
    c.add_argument(
        "paths",
        nargs="*",
        help="scripts, primary configs (*.yaml), docs and workflows holding launches, or directories (recursively: "
        "*.sh, *.bash, sh shebangs, and those); `-` reads a script from stdin (default: .)",
    )
    c.add_argument(
        "--stdin-filename",
        metavar="PATH",
        help="the name of the script read from stdin: findings carry it; settings and per-file-ignores follow it",
    )
    c.add_argument(
        "--no-ignore",
        action="store_true",
        help="in directories, also lint what .gitignore and .git/info/exclude ignore",
    )
    c.add_argument(
        "--skip-other-files",
        action="store_true",
        help="pass over named YAML and doc files that hold no launch instead of an input error; a config group file "
        "lints the primary configs above it (for pre-commit)",
    )
    _common(c)
    _output_flags(c)
    _report_flags(c)
    c.add_argument(
        "--show-settings",
        nargs="?",
        const="",
        metavar="FILE",
        help="print the settings FILE gets (default: the first path) and where each comes from; lint nothing",
    )
    c.add_argument(
        "--show-files",
        action="store_true",
        help="print the files that would be linted (ignores honoured); lint nothing",
    )
    c.add_argument("--baseline", metavar="FILE", help="report only findings not recorded in this baseline file")
    c.add_argument("--write-baseline", metavar="FILE", help="record the current findings as the baseline and exit 0")
    _fix_flags(c)


def _build_upgrade(u: argparse.ArgumentParser) -> None:
    u.add_argument("paths", nargs="*", default=["."], help="scripts or directories (default: ., as for check)")
    u.add_argument("--to", required=True, metavar="VERSION", help="the verl release to upgrade to")
    g = u.add_mutually_exclusive_group()
    g.add_argument(
        "--from", dest="from_version", metavar="VERSION", help="the current verl release (default: detected)"
    )
    g.add_argument("--from-root", metavar="DIR", help="the current verl checkout")
    _rule_flags(u)
    _engine_flags(u)
    u.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    u.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    _output_flags(u)
    _report_flags(u)
    _fix_flags(u)


def _build_doctor(d: argparse.ArgumentParser) -> None:
    doctor.add_arguments(d)
    _cache_dir_flag(d)


def _build_config(c: argparse.ArgumentParser) -> None:
    c.add_argument(
        "targets", nargs="+", metavar="SCRIPT[:LINE]", help="a script (every launch in it), or the launch on LINE"
    )
    c.add_argument(
        "--key", metavar="PREFIX", help="only the keys under this dotted prefix (e.g. actor_rollout_ref.rollout)"
    )
    c.add_argument(
        "--output-format",
        "--format",
        dest="format",
        choices=["text", "json", "yaml"],
        default="text",
        help="%(choices)s (default: %(default)s)",
    )
    c.add_argument("--diff", action="store_true", help="show how the launches of the two targets differ")
    c.add_argument(
        "--memory",
        action="store_true",
        help="show what the launch's model puts on each GPU (needs --gpu, --gpu-memory or the gpu setting)",
    )
    _common(c)
    _cache_dir_flag(c)


def _build_run(r: argparse.ArgumentParser) -> None:
    _common(r)
    _output_flags(r)
    r.add_argument("--dry-run", action="store_true", help="lint and show what would run; run nothing")
    r.add_argument(
        "--strict", action="store_true", help="if verl-lint itself fails, do not run the command (default: run it)"
    )


def _build_cache(k: argparse.ArgumentParser) -> None:
    cache.add_arguments(k)
    _cache_dir_flag(k)


def _build_rules(r: argparse.ArgumentParser) -> None:
    r.add_argument(
        "--format",
        "--output-format",
        choices=["text", "json"],
        default="text",
        help="%(choices)s (default: %(default)s)",
    )


def _build_rule(d: argparse.ArgumentParser) -> None:
    d.add_argument("code", help="a rule's code or name")


COMMANDS = {
    "check": ("lint scripts, directories, stdin (-) or a command given after --", _build_check),
    "upgrade": ("show what upgrading verl breaks in these scripts (and fix renames)", _build_upgrade),
    "doctor": ("report the environment (versions, accelerator, allocator) and live findings", _build_doctor),
    "config": ("print the composed config a launch gets, with where each value comes from", _build_config),
    "run": ("lint a command (or `bash script.sh ...`), then run it only if it passes", _build_run),
    "cache": ("inspect or clean the on-disk cache", _build_cache),
    "rules": ("list the rules", _build_rules),
    "rule": ("show one rule's documentation", _build_rule),
}


CONFIG_HELP = (
    "settings file for every script (default: per script, the closest verl-lint.toml or pyproject.toml "
    "with a [tool.verl-lint] table above it)"
)


def _rule_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--select",
        action="append",
        default=None,
        metavar="CODES",
        help="only these rule codes, prefixes or names (comma-separated)",
    )
    p.add_argument(
        "--ignore",
        action="append",
        default=None,
        metavar="CODES",
        help="skip these rule codes, prefixes or names (comma-separated)",
    )


def _common(p: argparse.ArgumentParser) -> None:
    g = p.add_mutually_exclusive_group()
    g.add_argument("--verl-root", metavar="DIR", help="lint against this verl checkout")
    g.add_argument(
        "--verl", metavar="VERSION", help="lint against this verl release (downloaded once, no dependencies)"
    )
    _rule_flags(p)
    _engine_flags(p)
    p.add_argument("--config", metavar="FILE", help=CONFIG_HELP)
    p.add_argument("--debug", action="store_true", help="show tracebacks for internal errors")
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "--gpu",
        metavar="NAME",
        help="the GPU the memory rules judge against: H100, H200, H800, H20, A100-40GB, A100-80GB, L40S, 910B, ...",
    )
    g.add_argument(
        "--gpu-memory", type=float, metavar="GIB", help="the memory per GPU the memory rules judge against, in GiB"
    )
    p.add_argument(
        "--models",
        choices=["offline", "online"],
        default=None,
        help="online: a hub model no local source knows is looked up on the hub ($HF_ENDPOINT), its config.json alone "
        "(default: the models setting, else offline)",
    )
    p.add_argument(
        "--cwd",
        metavar="DIR",
        help="the directory the scripts are run from (default: assumed, and said in the findings: the repository "
        "root, ...)",
    )


def _output_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--output-format", "--format", dest="format", choices=FORMATS, default=None, help="%(choices)s (default: text)"
    )
    p.add_argument(
        "--output",
        "-o",
        metavar="FILE",
        help="write the report (in --output-format) to this file; text still goes to the terminal",
    )
    p.add_argument(
        "--fail-on",
        choices=FAIL_ON,
        default=None,
        help="exit 1 on findings at or above this level: %(choices)s (default: the fail-on setting, else error)",
    )
    p.add_argument(
        "--fail-on-unanalysed",
        action="store_true",
        help="exit 1 when a launch or file could not be analysed "
        f"({LAUNCH_NOT_ANALYSABLE.code}, {FILE_TOO_LARGE.code}, "
        f"{ANALYSIS_TIMEOUT.code}), whatever --fail-on says",
    )
    p.add_argument(
        "--no-cache",
        action="store_true",
        help="do not read or write the on-disk caches (each file's findings, composed configs)",
    )
    _cache_dir_flag(p)
    p.add_argument(
        "--color",
        choices=["auto", "always", "never"],
        default="auto",
        help="%(choices)s (default: auto: on a terminal, unless NO_COLOR is set; FORCE_COLOR turns it on)",
    )
    p.add_argument(
        "--jobs", "-j", type=int, default=None, metavar="N", help="worker processes (default: all cores for many files)"
    )
    p.add_argument(
        "--max-file-size",
        type=float,
        default=None,
        metavar="MiB",
        help=f"skip larger files with {FILE_TOO_LARGE.code} (default 4)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        metavar="S",
        help=f"time limit per launch (and for a file's shell code), {ANALYSIS_TIMEOUT.code} (default 20; 0: none)",
    )


def _report_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--statistics",
        action="store_true",
        help="print the number of findings per rule instead of the findings ([*]: fixable)",
    )
    p.add_argument(
        "--show-fixes", action="store_true", help="list the fixes: those --fix applied, else those it would apply"
    )
    p.add_argument(
        "--exit-zero", action="store_true", help="exit 0 even with findings (input and usage errors still exit 2)"
    )
    g = p.add_mutually_exclusive_group()
    g.add_argument(
        "-q", "--quiet", action="store_true", help="print the findings only: no summary, no notes, no progress"
    )
    g.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also say which settings files, verl trees and engine versions were used, and time each file (on stderr)",
    )


def _cache_dir_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--cache-dir",
        metavar="DIR",
        help="the cache directory (default: $VERL_LINT_CACHE_DIR, else $XDG_CACHE_HOME/verl-lint, else "
        "~/.cache/verl-lint)",
    )


def _fix_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fix", action="store_true", help="apply safe fixes to the scripts")
    p.add_argument("--unsafe-fixes", action="store_true", help="with --fix/--diff: also fixes that change behaviour")
    p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff instead of writing them")


def _engine_flags(p: argparse.ArgumentParser) -> None:
    for flag, (alias, key) in ENGINE_FLAGS.items():
        p.add_argument(
            flag,
            alias,
            dest=key,
            metavar="VERSION",
            help=f"the {flag[2:]} release to check against (default: installed, else the range the verl tree declares)",
        )


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command_argv = None
    if "--" in argv:
        i = argv.index("--")
        argv, command_argv = argv[:i], argv[i + 1 :]
    command = next((a for a in argv if not a.startswith("-")), None)  # the subcommand, if it comes first
    args = parser(command if command in COMMANDS else None).parse_args(argv)
    if getattr(args, "cache_dir", None):  # read by cache.cache_dir(), here and in worker processes
        os.environ["VERL_LINT_CACHE_DIR"] = os.path.abspath(args.cache_dir)
    show_progress(not getattr(args, "quiet", False))  # downloads, indexing, files done (on stderr)
    try:
        problem = _release_problem(args) if args.command in ("check", "upgrade", "run") else None
        if problem:
            return usage_error(problem)
        if args.command in ("check", "upgrade"):
            from .check import check  # the linting modules: only linting needs them
            from .upgrade import upgrade  # linting too: loaded only to lint

            return check(args, command_argv) if args.command == "check" else upgrade(args)
        if args.command == "run":
            from .wrapper import run  # heavy, as check above

            return run(args, command_argv)
        if args.command == "config":
            from .config_view import run as show_config  # composes: the linting modules

            return show_config(args)
        if args.command == "doctor":
            return doctor.run(args)
        if args.command == "cache":
            return cache.run(args)
        if args.command == "rules":
            return _rules(args)
        if args.command == "rule":
            return _rule(args)
    except MissingTable as ex:  # a broken installation: one line, not a smaller rule pack
        return usage_error(str(ex))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `verl-lint ... | head`: the reader left; no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    parser().print_help()
    return EXIT_USAGE


def _release_problem(args: argparse.Namespace) -> str | None:
    """Fetch the verl releases the flags name (once; cached) before the linting modules load: a
    bad or undownloadable --verl/--to/--from is one line, and the cache is not touched."""
    try:
        for version in (getattr(args, name, None) for name in ("verl", "to", "from_version")):
            if version:
                release_tree(version)
    except LocateError as ex:
        return str(ex)
    return None


def _rules(args) -> int:
    rules = registered_rules()
    if args.format == "json":
        print(
            json.dumps(
                [
                    {
                        "code": r.code,
                        "name": r.name,
                        "severity": str(r.severity),
                        "verl": str(r.verl) or "*",
                        "summary": r.summary,
                    }
                    for r in rules
                ],
                indent=2,
            )
        )
        return EXIT_CLEAN
    rows = [(r.code, r.name, str(r.severity), str(r.verl) or "*", r.summary) for r in rules]
    w = [max(len(row[i]) for row in rows) for i in range(4)]
    for row in rows:
        print(f"{row[0]:<{w[0]}}  {row[1]:<{w[1]}}  {row[2]:<{w[2]}}  {row[3]:<{w[3]}}  {row[4]}")
    print(f"\n{len(rows)} rules")
    return EXIT_CLEAN


def _rule(args) -> int:
    rules = registered_rules()
    r = rules.get(args.code)
    if r is None:
        return usage_error(f"no rule {args.code!r} (see `verl-lint rules`)")
    print(f"{r.code} {r.name} [{r.severity}]  verl {str(r.verl) or '*'}\n")
    if r.evidence_lines():
        print("\n".join(r.evidence_lines()) + "\n")
    print(textwrap.dedent("\n".join(r.doc.splitlines()[1:])).strip() if "\n" in r.doc else r.doc.strip())
    for ex in (*r.bad, *r.good):
        print(f"\n{ex.kind.capitalize()} example{f' (verl {ex.verl})' if ex.verl else ''}:")
        if ex.note:
            print(textwrap.indent(ex.note, "  "))
        for name, text in ex.shown():
            print(("" if name == "run.sh" else f"  {name}:\n") + textwrap.indent(text.rstrip(), "    "))
    return EXIT_CLEAN


if __name__ == "__main__":
    sys.exit(main())
