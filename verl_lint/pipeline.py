"""One direction: script → launches → app → composed config → rules → diagnostics."""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from . import registry, shell
from .config.compose import Composer
from .config.context import Context
from .engines.versions import context_versions, project_root, resolve
from .environment import installed_versions
from .launch import recognise as launch_mod
from .launch.locate import ConfigNotFound, EntryPointNotFound, LocateError, NotAnalysable, VerlTree, locate_app, verl_tree_for
from .model import Diagnostic, EnvVar, Launch, Severity, Word
from .registry import REGISTRY, Rule, parse_version, selected
from .report.suppress import apply_suppressions
from .rules import pack
from .rules.hydra_keys import CONFIG_COMPOSITION_ERROR
from .rules.script import ENTRY_POINT_NOT_FOUND, LAUNCH_NOT_ANALYSABLE
from .rules.tables import removed_module_diag
from .terminal import safe

RAY_ENV_PREFIX = "ray_kwargs.ray_init.runtime_env.env_vars."


@dataclass
class Options:
    verl_tree: VerlTree | None = None  # from --verl-root / --verl
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)  # per-rule overrides
    # Versions that win over the installed ones (--vllm ...): key as in environment.TRACKED.
    versions: dict[str, str] = field(default_factory=dict)
    version_origin: dict[str, str] = field(default_factory=dict)  # key -> "--vllm" / "[tool.verl-lint] vllm"
    allowed_roots: tuple[Path, ...] = ()  # `source` may read files under these
    debug: bool = False
    max_bytes: int = 4 * 2**20  # larger files get a VL004 finding instead of an analysis
    timeout: float = 20.0  # seconds per file before a VL005 finding (0: no limit)
    cwd: str | None = None  # where the scripts are run from (--cwd); None: assumed per script

    def active_rules(self) -> list[Rule]:
        return [r for r in REGISTRY if selected(r.code, r.name, self.select, self.ignore)]


@dataclass
class InputError:
    """Bad input: reported as one line and exit code 2; the other files still run."""

    path: str
    message: str
    line: int = 0
    col: int = 0

    def __str__(self) -> str:  # printed to a terminal: the path and message may come from a hostile tree
        loc = f"{self.path}:{self.line}:{self.col}" if self.line else self.path
        return safe(f"{loc}: error: {self.message}")


@dataclass
class FileReport:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    errors: list[InputError] = field(default_factory=list)
    launches: int = 0
    text: str | None = None  # kept for the code frames of the text renderer
    verl: set[str] = field(default_factory=set)  # the verl releases its launches were linted against


def lint_text(
    path: str, text: str, options: Options, composer: Composer, positional: list[Word] | None = None, cwd: str | None = None
) -> FileReport:
    """Lint one script's text. `positional`: its arguments ("$@", unknown when None); `cwd`: where it runs."""
    report = FileReport(path, text=text)
    cwd = cwd or options.cwd
    script_dir = Path(path).resolve().parent if not path.startswith("<") else Path(cwd or Path.cwd())
    roots = list(options.allowed_roots) or list(dict.fromkeys([script_dir, Path(cwd).resolve() if cwd else script_dir]))
    result = shell.evaluate(path, text, roots, positional, cwd)
    report.diagnostics.extend(result.diagnostics)
    for la in launch_mod.launches(result.commands, path, text):
        if la.not_analysable:
            report.diagnostics.append(LAUNCH_NOT_ANALYSABLE.finding(f"this launch was not checked: {la.not_analysable}", la.entry_span, LAUNCH_NOT_ANALYSABLE.summary))
            continue
        try:
            diags = lint_launch(la, options, composer, script_dir, report)
        except LocateError as ex:
            report.errors.append(InputError(path, str(ex), la.entry_span.line, la.entry_span.col))
            continue
        except EntryPointNotFound as ex:
            fix = f"did you mean `{ex.guess}`?" if ex.guess else ENTRY_POINT_NOT_FOUND.summary
            report.diagnostics.append(ENTRY_POINT_NOT_FOUND.finding(f"{ex}: python stops with ModuleNotFoundError", la.entry_span, fix, la.module or ""))
            report.launches += 1  # analysed: what it finds is that python stops
            continue
        except ConfigNotFound as ex:
            message = f"Hydra cannot compose the config: {ex}" + (f" ({la.note})" if la.note else "")
            report.diagnostics.append(CONFIG_COMPOSITION_ERROR.finding(message, ex.word.span, ex.help, ex.flag))
            report.launches += 1  # analysed: what it finds is that Hydra stops
            continue
        except NotAnalysable as ex:
            report.diagnostics.append(LAUNCH_NOT_ANALYSABLE.finding(f"this launch was not checked: {ex}", ex.word.span, LAUNCH_NOT_ANALYSABLE.summary))
            continue
        if diags is None:
            continue  # not a Hydra app (a data-prep script, pip, ...)
        report.launches += 1
        if la.note:  # a branch the script's own values do not take: say under which condition
            diags = [replace(d, message=f"{d.message} ({la.note})") for d in diags]
        report.diagnostics.extend(diags)
    # Suppression comments live in this file; findings in sourced files or on a command line keep theirs.
    own = [d for d in report.diagnostics if d.span.path == path]
    others = [d for d in report.diagnostics if d.span.path != path]
    report.diagnostics = finalize(apply_suppressions(own, text, path) + others, options)
    return report


def lint_launch(la: Launch, options: Options, composer: Composer, script_dir: Path, report: FileReport) -> list[Diagnostic] | None:
    tree = verl_tree_for(script_dir, options.verl_tree)
    try:
        app = locate_app(la, tree)
    except (LocateError, EntryPointNotFound):
        # An entry point the release removed is a finding with its replacement (VL426), not VL009.
        gone = la.module and tree and removed_module_diag(la.module, tree, la.entry_span)
        if gone:
            return [gone]
        raise
    if app is None:
        return None
    if app.verl_version:
        report.verl.add(app.verl_version)
    comp = composer.compose(app, la.overrides, la.entry_span)
    if comp.config is None or la.prints_only:
        return list(comp.diagnostics)  # with `--cfg job` and the like only the composition can fail
    given = {k: (v, options.version_origin.get(k, "given")) for k, v in options.versions.items()}
    verl_root = app.verl.root if app.verl else None
    engines = resolve(given, verl_root, project_root(script_dir))
    versions = {k: parse_version(v) for k, v in {**installed_versions(), **options.versions}.items()}
    versions.update(context_versions(engines))
    versions["verl"] = parse_version(app.verl_version)
    ctx = Context(la, comp, versions, launch_env(la, comp), engines)
    return pack.check(ctx, options.active_rules())


def launch_env(la: Launch, comp) -> dict[str, EnvVar]:
    """The env the Ray workers get: the script's exports, then runtime_env env_vars overrides."""
    env = dict(la.env)
    for ao in comp.overrides:
        if ao.ok and ao.key.startswith(RAY_ENV_PREFIX) and ao.kind in ("set", "add", "force_add"):
            name = ao.key[len(RAY_ENV_PREFIX) :]
            value = None if ao.value_unknown else ao.line.split("=", 1)[1]
            env[name] = EnvVar(name, value, ao.word.span, ao.value_unknown, True)
    return env


def finalize(diags: list[Diagnostic], options: Options) -> list[Diagnostic]:
    return registry.finalize(diags, options.select, options.ignore, options.severity)


_SHEBANG = re.compile(rb"^#!.*\b(ba|z|k)?sh\b")
_KINDS = {stat.S_IFIFO: "FIFO", stat.S_IFSOCK: "socket", stat.S_IFCHR: "character device", stat.S_IFBLK: "block device", stat.S_IFDIR: "directory"}


class NotRegularFile(OSError):
    """A FIFO, socket, device or directory where a file to read was expected."""


def file_kind(mode: int) -> str | None:
    """"FIFO", "socket", ... for what is not a regular file; None for a regular file."""
    return None if stat.S_ISREG(mode) else _KINDS.get(stat.S_IFMT(mode), "special file")


def open_regular(path: Path):
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
            return bool(_SHEBANG.match(f.readline(200)))
    except OSError:
        return False


def stats(reports: list[FileReport]) -> dict:
    n = {s: 0 for s in Severity}
    for r in reports:
        for d in r.diagnostics:
            n[d.severity] += 1
    return {
        "findings": sum(n.values()),
        "errors": n[Severity.ERROR],
        "warnings": n[Severity.WARNING],
        "infos": n[Severity.INFO],
        "files_with_findings": sum(1 for r in reports if r.diagnostics),
        "files": len(reports),
        "files_unreadable": sum(1 for r in reports if r.errors and r.text is None),  # not linted at all
        "launches": sum(r.launches for r in reports),
        # Accounted for, not analysed: launches (VL007, with the reason) and whole files (VL004/VL005).
        "unanalysed": sum(1 for r in reports for d in r.diagnostics if d.code == "VL007"),
        "files_unanalysed": sum(1 for r in reports if any(d.code in ("VL004", "VL005") for d in r.diagnostics)),
    }
