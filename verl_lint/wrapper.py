"""`verl-lint run [check options] -- <command...>`: lint a launch, then become it.

The command is linted the way `verl-lint check -- <command...>` lints it; when it runs a
shell script (`bash [opts] script.sh ARGS...`, `sh ...`, `./script.sh ARGS...`,
`bash -c 'STRING' NAME ARGS...`), the script is linted with ARGS as its `"$@"`, so overrides
passed on the command line are checked together with the script's own. The report goes to
stderr (the command's stdout stays its own; `--output FILE` also writes it to a file).

Only if the lint passes (no finding at or above `--fail-on`, no input error) does the
process replace itself with the command (`os.execvp`): the command's exit code and signals
are its own, and no verl-lint process stays around. `--dry-run` lints and shows what would
run. If verl-lint itself fails or the analysis exceeds `--timeout`, the command runs anyway
after a one-line warning (`--strict` stops instead): a linter bug must not block a launch. The
script is read within `--max-file-size` (over it: FILE_TOO_LARGE, an error finding like any other).

Exit codes without exec: 1 findings at or above --fail-on, 2 usage or input errors,
126/127 the command cannot be executed / is not found (as a shell reports them).
"""

from __future__ import annotations

import os
import shlex
import sys
from argparse import Namespace
from dataclasses import dataclass, field, replace
from pathlib import Path

from .check import UsageError, load, options_for
from .config.compose import Composer
from .files import WriteError, is_shell_script, write_atomic
from .launchers import is_launcher
from .limits import Timeout, time_limit
from .model import COMMAND_LINE, Severity, Span, Word, command_text
from .pipeline import lint_text
from .report.render import RENDERERS, render
from .runner import _per_file_ignores, read_script
from .runs import FileReport, InputError
from .settings import SettingsFinder
from .terminal import use_color

EXIT_CLEAN, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2
SHELLS = {"bash", "sh", "dash"}
# Shell options that take a separate value.
_SHELL_VALUE_OPTS = {"-o", "+o", "-O", "+O", "--rcfile", "--init-file"}


# ----------------------------------------------------------- the command ----


@dataclass
class ScriptCall:
    """A command that runs a shell script: the script (a file or a `-c` string) and its "$@"."""

    path: str  # the file, or "<bash -c>"
    text: str | None  # the `-c` string; None: read `path`
    args: list[str] = field(default_factory=list)  # "$@"
    arg_index: int = 0  # index in argv of the first of `args`


def script_call(argv: list[str]) -> ScriptCall | None:
    """`bash [opts] script ARGS`, `bash -c STRING NAME ARGS`, or `path/to/script.sh ARGS`; else None."""
    if not argv:
        return None
    head = os.path.basename(argv[0])
    if head in SHELLS:
        i, c_mode = 1, False
        while i < len(argv):
            a = argv[i]
            if a == "--" or a == "-":
                i += 1
                break
            if a in _SHELL_VALUE_OPTS:
                i += 2
                continue
            if a.startswith("--"):
                i += 1
                continue
            if a[:1] in "-+" and len(a) > 1:
                if "s" in a[1:] and a[0] == "-":
                    return None  # commands read from stdin
                c_mode = c_mode or "c" in a[1:]
                i += 1
                continue
            break
        if i >= len(argv):
            return None
        if c_mode:
            # bash -c STRING [NAME [ARGS...]]: NAME becomes $0, ARGS "$@".
            return ScriptCall("<bash -c>", argv[i], argv[i + 2 :], i + 2)
        return ScriptCall(argv[i], None, argv[i + 1 :], i + 1)
    # `./train.sh ARGS`: only a path, never a bare name looked up on PATH, and never a
    # launcher (launchers.py): pyenv's `python3` shim, for one, is a bash script.
    if os.sep not in argv[0] or is_launcher(head):
        return None
    if Path(argv[0]).is_file() and is_shell_script(Path(argv[0])):
        return ScriptCall(argv[0], None, argv[1:], 1)
    return None


def _arg_words(argv: list[str], first: int):
    """argv[first:] as Words located in the command line's text (`command_text`: argument N on line N + 1)."""
    words, byte = [], 0
    for i, a in enumerate(argv):
        tok = shlex.quote(a)
        nb = len(tok.encode("utf-8"))
        if i >= first:
            words.append(Word(a, Span(COMMAND_LINE, i + 1, 1, i + 1, 1 + len(tok), byte, byte + nb)))
        byte += nb + len(" \\\n")
    return words


# ------------------------------------------------------------------ lint ----


def lint_command(argv: list[str], options, composer, cwd: str | None = None) -> list:
    """FileReports for a command line: its launch, or the script it runs with its "$@"."""
    cwd = cwd or os.getcwd()
    call = script_call(argv)
    if call is None:
        return [lint_text(COMMAND_LINE, command_text(argv), options, composer)]
    notes = []
    if call.text is None:
        # Within the size limit, and never opening a FIFO or a device (`bash /dev/stdin`).
        text, err, notes = read_script(Path(cwd, call.path), options.max_bytes)
        if err is not None:
            return [FileReport(call.path, errors=[InputError(call.path, err.message)])]
        if text is None:
            return [FileReport(call.path, diagnostics=notes)]
        full = str(Path(cwd, call.path))
        where = os.path.relpath(full)  # as `check` names files (and the config files findings are in): relative to here
        where = full if where.startswith("..") else where
    else:
        text, where = call.text, call.path
    # The caller's arguments are the script's "$@"; it runs from the real cwd.
    report = lint_text(where, text, options, composer, positional=_arg_words(argv, call.arg_index), cwd=cwd)
    report.diagnostics = notes + report.diagnostics
    # Findings on the arguments point into the command line: give them its text for the code frame.
    on_args = [d for d in report.diagnostics if d.span.path == COMMAND_LINE]
    if not on_args:
        return [report]
    report.diagnostics = [d for d in report.diagnostics if d.span.path != COMMAND_LINE]
    return [report, FileReport(COMMAND_LINE, diagnostics=on_args, text=command_text(argv))]


# ------------------------------------------------------------------- run ----


def _options(args: Namespace, start: Path):
    """Options, settings, fail-on and format, built exactly as `check` builds them."""
    settings = load(SettingsFinder(args.config), start)
    return options_for(args, settings), settings, args.fail_on or settings.fail_on, args.format or "text"


def _say(msg: str) -> None:
    print(f"verl-lint: {msg}", file=sys.stderr, flush=True)


def run(args, command_argv: list[str] | None) -> int:
    """Lint `command_argv`; print the report; if it passes, exec the command (never returns then)."""
    if not command_argv:
        _say("error: nothing to run: give the command after `--`, e.g. `verl-lint run -- bash train.sh`")
        return EXIT_USAGE
    call = script_call(command_argv)
    reports, failure = None, None
    try:
        options, settings, fail_on, fmt = _options(args, Path(call.path if call and call.text is None else "."))
        if call is not None and call.text is None and settings.per_file_ignores:
            extra = _per_file_ignores(Path(call.path), settings.per_file_ignores)
            if extra:
                options = replace(options, ignore=options.ignore + extra)
        # One limit for the whole lint (`check` has one per launch): the command waits for it, so it must end.
        with time_limit(options.timeout):
            reports = lint_command(command_argv, options, Composer(cache=not args.no_cache))
    except UsageError as ex:
        _say(f"error: {ex}")
        return EXIT_USAGE
    except Timeout:
        failure = f"the analysis took longer than {options.timeout:g} s (--timeout)"
    except Exception as ex:  # noqa: BLE001 - a linter bug must not block the launch
        if args.debug:
            raise
        what = f"{type(ex).__name__}: {str(ex).strip().splitlines()[0] if str(ex).strip() else ''}".rstrip(": ")
        failure = f"internal error: {what}"
    if failure:
        if args.strict:
            _say(f"{failure}; not running the command (--strict)")
            return EXIT_USAGE
        _say(f"{failure}; running the command unchecked (--strict would stop it)")

    if reports is not None:
        unwritten = _print_report(reports, fmt, args, settings.docs_url)
        if unwritten:  # a bad --output is a usage error, like a bad flag: nothing runs
            _say(f"error: {unwritten}")
            return EXIT_USAGE
        input_errors = sum(len(r.errors) for r in reports)
        threshold = None if fail_on == "never" else Severity.parse(fail_on)
        blocking = [d for r in reports for d in r.diagnostics if threshold is not None and d.severity >= threshold]
        if input_errors or blocking:
            code = EXIT_USAGE if input_errors else EXIT_FINDINGS
            why = (
                f"{input_errors} input error{'s' * (input_errors != 1)}"
                if input_errors
                else f"{len(blocking)} finding{'s' * (len(blocking) != 1)} at or above --fail-on={fail_on}"
            )
            _say(f"{'would not run' if args.dry_run else 'not running'}: {shlex.join(command_argv)} ({why})")
            return code
    if args.dry_run:
        _say(f"would run: {shlex.join(command_argv)}")
        return EXIT_CLEAN
    return _exec(command_argv)


def _print_report(reports, fmt: str, args, docs: str | None = None) -> str | None:
    """The report to stderr and to --output; why --output could not be written, if it could not."""
    if fmt == "text":
        color = use_color(args.color, sys.stderr)
        sys.stderr.write(RENDERERS["text"](reports, color=color))
    else:
        sys.stderr.write(render(fmt, reports, docs))
    sys.stderr.flush()
    if args.output:
        try:
            write_atomic(args.output, render(fmt, reports, docs))
        except WriteError as ex:
            return str(ex)
    return None


def _exec(argv: list[str]) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        os.execvp(argv[0], argv)
    except FileNotFoundError:
        _say(f"{argv[0]}: command not found")
        return 127
    except OSError as ex:
        _say(f"cannot run {argv[0]}: {ex.strerror or ex}")
        return 126
    return 0  # pragma: no cover - execvp does not return
