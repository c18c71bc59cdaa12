"""One direction: script → launches → app → composed config → rules → diagnostics."""

from __future__ import annotations

import gc
import math
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from . import embedded, registry, shell
from .catalogue import ANALYSIS_TIMEOUT, CONFIG_COMPOSITION_ERROR, ENTRY_POINT_NOT_FOUND, LAUNCH_NOT_ANALYSABLE
from .config.compose import Composer
from .config.context import Context
from .engines.versions import context_versions, project_root, resolve
from .environment import installed_versions
from .launch import recognise as launch_mod
from .launch.locate import ConfigNotFound, EntryPointNotFound, LocateError, NotAnalysable, locate_app, verl_tree_for
from .limits import Timeout, time_limit
from .model import (
    LAUNCH_CUT,
    Diagnostic,
    EnvVar,
    Launch,
    Related,
    Span,
    Word,
    in_config_file,
)
from .registry import REGISTRY, Rule, parse_version, selected
from .report.suppress import apply_suppressions
from .rules import pack
from .rules.script import after_cut, broken_continuations, never_assigned, zsh_globs
from .rules.tables import removed_module_diag
from .runs import FileReport, InputError, Options

RAY_ENV_PREFIX = "ray_kwargs.ray_init.runtime_env.env_vars."


def lint_text(
    path: str,
    text: str,
    options: Options,
    composer: Composer,
    positional: list[Word] | None = None,
    cwd: str | None = None,
    step_limit: float = 0,
) -> FileReport:
    """Lint one script's text. `positional`: its arguments ("$@", unknown when None); `cwd`: where it
    runs; `step_limit`: seconds for the shell analysis and for each launch (limits.py; 0: none).

    Raises `limits.Timeout`: without a report when the shell analysis runs out of time, with the
    report of the launches analysed before the one that did (the rest reported as not analysed)."""
    report = FileReport(path, text=text)
    with time_limit(step_limit):
        script_dir, result, found = script_launches(path, text, options, positional, cwd)
    report.diagnostics.extend(result.diagnostics)
    report.diagnostics.extend(
        broken_continuations(result.commands, found)
    )  # before the launches: it marks those cut short
    report.diagnostics.extend(zsh_globs(path, text, found))
    if not result.hidden_assignments:  # else a file or string it does not read may assign them
        report.diagnostics.extend(never_assigned(found, [c.words for c in result.commands if c.span.path == path]))
    variants: dict[Span, list[tuple[tuple[str, ...], list[Diagnostic]]]] = {}  # per command: each variant's findings
    counted: set[Span] = set()  # commands with variants: counted as one launch
    timed_out = False
    for i, la in enumerate(found):
        if i == options.max_launches:  # the budget, in work: the same cut whatever the machine's load
            why = (
                f"the script has more than {options.max_launches} launch analyses (one per variant of a command), "
                "the limit per file"
            )
            report.diagnostics.extend(_cut(found[i:], variants, counted, report, why, "split the script"))
            break
        try:
            with time_limit(step_limit):
                diags, is_app = launch_findings(la, options, composer, script_dir, report)
        except Timeout:  # the safety net: a hang in the code a launch runs
            why = f"analysing it took longer than {step_limit:g} s, the limit per launch"
            report.diagnostics.extend(_cut(found[i:], variants, counted, report, why, "raise the limit with --timeout"))
            timed_out = True
            break
        if is_app and la.span not in counted:
            report.launches += 1
            if la.variant is not None:
                counted.add(la.span)
        if la.variant is None:
            report.diagnostics.extend(diags)
        else:
            variants.setdefault(la.span, []).append((la.variant, diags))
    for each in variants.values():
        report.diagnostics.extend(across_variants(each))
    # Suppression comments live in this file, and in the config files a finding is located in (a
    # `# verl-lint: disable=CODE` on a YAML line); findings in sourced files or on a command line keep theirs.
    by_file: dict[str, list[Diagnostic]] = {}
    for d in report.diagnostics:
        by_file.setdefault(d.span.path, []).append(d)
    kept = apply_suppressions(by_file.pop(path, []), text, path)
    for where, diags in by_file.items():
        yaml_text = report.text_of(where) if in_config_file(diags[0].span) else None
        kept += apply_suppressions(diags, yaml_text, where, report_unused=False) if yaml_text else diags
    report.diagnostics = said_once(finalize(kept, options), {la.assumed_cwd for la in found if la.assumed_cwd})
    if timed_out:  # not a result of the input alone: the caller must not keep it as one
        raise Timeout(report)
    return report


def said_once(diags: list[Diagnostic], notes: set[str]) -> list[Diagnostic]:
    """Each of `notes` (the working directory a launch's config path was assumed from) kept on the
    file's first finding that carries it, in report order, and dropped from the others."""
    seen: set[str] = set()
    out = []
    for d in diags:
        for note in notes:
            tail = f" ({note})"
            if tail in d.message:
                if note in seen:
                    d = replace(d, message=d.message.replace(tail, "", 1))
                seen.add(note)
        out.append(d)
    return out


def lint_source(path: str, text: str, options: Options, composer: Composer, step_limit: float = 0) -> FileReport:
    """Lint a file: a shell script, a doc or workflow holding launches (its shell view, line for
    line), or a project's primary config (as the launch that uses it as it is)."""
    p = Path(path)
    what = embedded.kind(p, text) if p.suffix.lower() in embedded.DOCS + embedded.YAMLS else None
    if what == "config":
        return lint_config(path, text, options, composer, step_limit)
    report = lint_text(path, embedded.shell_view(p, text) if what else text, options, composer, step_limit=step_limit)
    if what == "doc":  # snippets, not whole scripts: what a launch needs from before it is not there
        report.diagnostics = [d for d in report.diagnostics if REGISTRY.get(d.code).snippets]
    return report


def lint_config(path: str, text: str, options: Options, composer: Composer, step_limit: float = 0) -> FileReport:
    """A primary config linted as the launch that uses it with no override: the findings located in
    its files (it and the files its defaults list merges) and whether it composes; what a launch
    would still have to set (a mandatory value) is the scripts' to say."""
    config = Path(path)
    launch, note = embedded.config_launch(config)
    as_script = str(config.resolve().parent / f".{config.name}.launch")  # the launch runs beside the config
    try:
        linted = lint_text(as_script, launch, options, composer, step_limit=step_limit)
    except Timeout as ex:  # cut by the time limit: reported at the config file, as any other finding of the launch
        raise Timeout(ex.report and _as_config(ex.report, path, text, as_script, note)) from None
    return _as_config(linted, path, text, as_script, note)


def _as_config(linted: FileReport, path: str, text: str, as_script: str, note: str) -> FileReport:
    """The report of the launch a primary config was linted as, told at the config file: what the
    launch itself reports (it does not compose, it is cut by a limit) at its first line."""
    report = FileReport(path, text=text, verl=linted.verl, file_value_users=linted.file_value_users, note=note)
    report.errors = [replace(e, path=path, line=1, col=1) if e.path == as_script else e for e in linted.errors]
    here = Span(path, 1, 1, 1, 1)
    for d in linted.diagnostics:
        if in_config_file(d.span):
            report.diagnostics.append(replace(d, related=tuple(r for r in d.related if r.span.path != as_script)))
        elif d.code in (CONFIG_COMPOSITION_ERROR.code, LAUNCH_NOT_ANALYSABLE.code, ANALYSIS_TIMEOUT.code):
            inside = [
                r.span for r in d.related if os.path.realpath(r.span.path) == os.path.realpath(path)
            ]  # the defaults entry at fault
            report.diagnostics.append(replace(d, span=inside[0] if inside else here, related=()))
    return report


def _cut(
    rest: list[Launch], variants: dict, counted: set[Span], report: FileReport, why: str, fix: str
) -> list[Diagnostic]:
    """ANALYSIS_TIMEOUT at each launch of `rest`, not analysed; a command cut between its variants is not
    reported from the variants analysed (nor counted)."""
    out = {}
    for la in rest:
        variants.pop(la.span, None)
        if la.span in counted:
            counted.discard(la.span)
            report.launches -= 1
        out.setdefault(la.span, ANALYSIS_TIMEOUT.finding(f"{LAUNCH_CUT}{why}", la.entry_span, fix))
    return list(out.values())


def script_launches(
    path: str, text: str, options: Options, positional: list[Word] | None = None, cwd: str | None = None
):
    """(the script's directory, what the shell evaluator makes of the script, its launches)."""
    cwd = cwd or options.cwd
    script_dir = Path(path).resolve().parent if not path.startswith("<") else Path(cwd or Path.cwd())
    roots = list(options.allowed_roots) or list(dict.fromkeys([script_dir, Path(cwd).resolve() if cwd else script_dir]))
    result = shell.evaluate(path, text, roots, positional, cwd)
    found = launch_mod.launches(result.commands, path, text)
    # An entry point named only in an if-arm the script's own values do not take (`ENTRY=-m ...`
    # under `else`, run later as `$CMD`): evaluated again with that arm taken, the launch it
    # reaches is analysed, and says under which arm it holds.
    for arm in result.untaken:
        unseen = [
            la
            for la in found
            if la.not_analysable and la.span.path == path and arm.span.line <= la.span.line <= arm.span.end_line
        ]
        names = {la.module or la.file for la in unseen}
        if not names:
            continue
        again = shell.evaluate(path, text, roots, positional, cwd, frozenset({arm.key}))
        reached = [
            la
            for la in launch_mod.launches(again.commands, path)
            if la.not_analysable is None and la.note is None and (la.module or la.file) in names
        ]
        for la in reached:
            la.note = arm.note
        reached_names = {la.module or la.file for la in reached}
        found = [la for la in found if la not in unseen or (la.module or la.file) not in reached_names] + reached
    return script_dir, result, found


def launch_findings(
    la: Launch, options: Options, composer: Composer, script_dir: Path, report: FileReport
) -> tuple[list[Diagnostic], bool]:
    """The findings of one launch, and whether it is a Hydra app that was analysed (also when what
    the analysis finds is that python or Hydra stops)."""
    if la.not_analysable:
        return [
            LAUNCH_NOT_ANALYSABLE.finding(
                f"this launch was not checked: {la.not_analysable}", la.entry_span, LAUNCH_NOT_ANALYSABLE.summary
            )
        ], False
    try:
        diags = lint_launch(la, options, composer, script_dir, report)
    except LocateError as ex:
        error = InputError(la.path, str(ex), la.entry_span.line, la.entry_span.col)
        if error not in report.errors:  # once, not once per variant
            report.errors.append(error)
        return [], False
    except EntryPointNotFound as ex:
        fix = f"did you mean `{ex.guess}`?" if ex.guess else ENTRY_POINT_NOT_FOUND.summary
        return [
            ENTRY_POINT_NOT_FOUND.finding(
                f"{ex}: python stops with ModuleNotFoundError", la.entry_span, fix, la.module or ""
            )
        ], True  # analysed: python stops
    except ConfigNotFound as ex:
        message = f"Hydra cannot compose the config: {ex}" + "".join(f" ({n})" for n in (la.note, la.assumed_cwd) if n)
        return [CONFIG_COMPOSITION_ERROR.finding(message, ex.span, ex.help, ex.flag)], True  # analysed: Hydra stops
    except NotAnalysable as ex:
        return [
            LAUNCH_NOT_ANALYSABLE.finding(
                f"this launch was not checked: {ex}", ex.word.span, LAUNCH_NOT_ANALYSABLE.summary
            )
        ], False
    if diags is None:
        return [], False  # not a Hydra app (a data-prep script, pip, ...)
    for note in (la.note, la.assumed_cwd):  # a branch the script's own values do not take; the cwd assumed
        if note:
            diags = [replace(d, message=f"{d.message} ({note})") for d in diags]
    if la.cut:  # cut short by a broken continuation (BROKEN_LINE_CONTINUATION): say how that bears on each finding
        diags = [after_cut(d, la.cut) for d in diags]
    # A finding in a project config file names the launch that composes it (the file may serve many).
    reached = Related("", la.entry_span, "the launch that composes this config file")
    diags = [
        replace(d, related=(*d.related, reached)) if in_config_file(d.span) and d.span.path != la.span.path else d
        for d in diags
    ]
    return diags, True


def across_variants(variants: list[tuple[tuple[str, ...], list[Diagnostic]]]) -> list[Diagnostic]:
    """The findings of one launch analysed once per combination of branch values (one label per
    variable) or per iteration of a loop: one that holds in every variant once, as it is; one that
    holds in some says under which branches, leaving out a variable whose every branch it holds
    under."""
    holds: dict[tuple, tuple[Diagnostic, list[tuple[str, ...]]]] = {}
    for labels, diags in variants:
        for d in diags:
            holds.setdefault((d.code, d.span, d.message, d.key), (d, []))[1].append(labels)
    # An iteration of a loop may read variables with branch values that another does not: its
    # labels are then not one per variable, and a finding names its variants whole.
    width = {len(labels) for labels, _ in variants}
    every = [{labels[i] for labels, _ in variants} for i in range(min(width))]
    out = []
    for d, where in holds.values():
        where = list(dict.fromkeys(where))
        if len(where) == len(variants):
            out.append(d)
            continue
        seen = [{w[i] for w in where} for i in range(len(every))]
        product = len(width) == 1 and len(where) == math.prod(
            map(len, seen)
        )  # then a fully covered variable says nothing
        keep = [i for i in range(max(width)) if not product or seen[i] != every[i]]
        when = " or ".join(dict.fromkeys("; ".join(w[i] for i in keep if i < len(w)) for w in where))
        out.append(replace(d, message=f"{d.message} ({when})"))
    return out


def lint_launch(
    la: Launch, options: Options, composer: Composer, script_dir: Path, report: FileReport
) -> list[Diagnostic] | None:
    with _collected_after():
        return _checked(la, options, composer, script_dir, report)


def _checked(
    la: Launch, options: Options, composer: Composer, script_dir: Path, report: FileReport
) -> list[Diagnostic] | None:
    with composer.lending():  # the launch's config is its base, put back when the rules are done
        ctx = launch_context(la, options, composer, script_dir, report)
        return pack.check(ctx, active_rules(options)) if isinstance(ctx, Context) else ctx


@contextmanager
def _collected_after() -> Iterator[None]:
    """One launch with the collector paused, and its young objects collected when it ends. A
    composed config is thousands of objects linked to their parents (cycles only the collector
    frees): collections in the middle of a launch walked it and moved it to an older generation,
    to be walked again there (a fifth of a cold run, when each launch had a copy of its own; a
    lent base is put back, and only a copy `config` or a spoilt loan makes is garbage). Where the
    collector is off (the caller paused it) it is left so."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.collect(0)


def launch_context(
    la: Launch, options: Options, composer: Composer, script_dir: Path, report: FileReport
) -> Context | list[Diagnostic] | None:
    """What the rules read about a launch: its composed config, env and versions; the findings
    instead when it does not compose (or only prints); None when it is not a Hydra app."""
    tree = verl_tree_for(script_dir, options.verl_tree)
    try:
        app = locate_app(la, tree)
    except (LocateError, EntryPointNotFound):
        # An entry point the release removed is a finding with its replacement (`rules.tables`),
        # not ENTRY_POINT_NOT_FOUND.
        gone = la.module and tree and removed_module_diag(la.module, tree, la.entry_span)
        if gone:
            return [gone]
        raise
    if app is None:
        return None
    if app.verl_version:
        report.verl.add(app.verl_version)
    comp = composer.compose(app, la.overrides, la.entry_span)
    for s in comp.file_settings:
        report.file_value_users.setdefault(s.word.span, set()).add(la.entry_span)
    if comp.config is None or la.prints_only:
        return list(comp.diagnostics)  # with `--cfg job` and the like only the composition can fail
    given = {k: (v, options.version_origin.get(k, "given")) for k, v in options.versions.items()}
    verl_root = app.verl.root if app.verl else None
    engines = resolve(given, verl_root, project_root(script_dir))
    versions = {k: parse_version(v) for k, v in {**installed_versions(), **options.versions}.items()}
    versions.update(context_versions(engines))
    versions["verl"] = parse_version(app.verl_version)
    ctx = Context(la, comp, versions, launch_env(la, comp), engines)
    ctx.gpu_gib, ctx.gpu_origin, ctx.models_online = options.gpu_gib, options.gpu_origin, options.models_online
    return ctx


def active_rules(options: Options) -> list[Rule]:
    return [r for r in REGISTRY if selected(r.code, r.name, options.select, options.ignore)]


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
