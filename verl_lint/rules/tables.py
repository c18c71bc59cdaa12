"""Knowledge as data: one generic check per table in the top-level `rules/` folder.

- `ineffective_keys.yaml` (2xx): keys that compose fine but verl ignores or overwrites.
- `removed_keys.yaml` (4xx): keys, values, entry points and config names removed or
  renamed between verl releases, with the replacement.

Each record (a typed record, `table_records.RuleRecord`, checked when the table loads) becomes a
registered rule with its own code, documentation and examples.

A record is gated on evidence, not on a version string: its `requires:` facts are checked in
the verl tree being linted (see `table_records.Fact`). Only where that tree has no source to check
(a tree whose `verl/workers` holds no Python file) does the record's version range decide, and
then a dev, rc, post or local version of a release counts as that release (`0.7.0.dev` is the
0.7.0 code: its release tuple is compared, not its PEP 440 order).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

from packaging.version import Version

from ..config.context import Context
from ..config.reader import app_sources, reader_index
from ..evidence import source_text
from ..knowledge import TableError, load_table
from ..model import Diagnostic, Fix
from ..registry import EVERY, REGISTRY, Subject, declare, parse_version
from ..table_records import FILE_FACTS, Fact, IneffectiveRecord, RemovedRecord, RuleRecord
from .roles import ref_worker

# ------------------------------------------------------------- evidence ----


def needs_source(f: Fact) -> bool:
    """The fact is about verl's code (not about the composed config)."""
    if f.kind in ("any", "all"):
        return any(needs_source(g) for g in f.arg)
    return f.kind != "config_key"


@cache
def has_source(root: Path) -> bool:
    """The tree carries verl's Python source (its workers), so code facts can be checked."""
    try:
        return any(e.name.endswith(".py") for e in os.scandir(root / "verl" / "workers"))
    except OSError:
        return False


_HOLDS: dict[tuple, bool] = {}  # the explicit per-(tree, app sources, fact) cache


def holds(f: Fact, root: Path, ctx: Context | None = None, name: str = "") -> bool:
    """Whether fact `f` is true of the tree at `root` (and of the launch in `ctx`; `name` is the
    last name of the key the record judges, for `{name}`)."""
    if f.kind == "any":
        return any(holds(g, root, ctx, name) for g in f.arg)
    if f.kind == "all":
        return all(holds(g, root, ctx, name) for g in f.arg)
    if "{name}" in f.subject:
        f = f._replace(subject=f.subject.replace("{name}", name))
    if f.kind == "config_key":
        return ctx is not None and ctx.has(f.subject)
    if f.kind == "worker":  # only "ref" (table_records.WORKERS); None (not known) is no evidence
        return ctx is not None and ref_worker(ctx) is True
    extra = ()
    if f.kind in ("reads", "not_read") and ctx is not None:
        extra = app_sources(ctx.app)  # a project's own app reads keys too
    key = (root, extra, f)
    hit = _HOLDS.get(key)
    if hit is None:
        hit = _HOLDS[key] = _tree_fact(f, root, extra)
    return hit


def _tree_fact(f: Fact, root: Path, extra: tuple[Path, ...] = ()) -> bool:
    if f.kind in FILE_FACTS:
        text = source_text(root / f.subject)
        if f.kind == "exists":
            return (text is not None) == f.arg
        found = text is not None and f.arg in text
        return found if f.kind == "contains" else not found
    if f.kind in ("reads", "not_read"):
        index = reader_index(root, extra)
        return index.reads(f.subject) if f.kind == "reads" else not index.used_beyond_config(f.subject)
    # field: `verl.workers.config.actor.ActorConfig.grad_clip` -> a `grad_clip:` line in that
    # class's body in verl/workers/config/actor.py
    module, cls, name = f.subject.rsplit(".", 2)
    text = source_text(root / (module.replace(".", "/") + ".py")) or ""
    m = re.search(rf"^class {re.escape(cls)}\b[^\n]*\n((?:[ \t]+[^\n]*\n|[ \t]*\n)*)", text, re.M)
    return bool(m and re.search(rf"^[ \t]+{re.escape(name)}[ \t]*:", m.group(1), re.M))


def facts_hold(rec: RuleRecord, root: Path, has_key: Callable[[str], bool], name: str = "") -> bool | None:
    """Whether all of `rec`'s `requires:` facts hold in the tree at `root`, with `has_key`
    answering the config facts (a release's default config) and `name` the last name of the key
    for `{name}`; None when the record has no facts (scripts/refresh_knowledge.py)."""

    def one(f: Fact) -> bool:
        if f.kind in ("any", "all"):
            return (any if f.kind == "any" else all)(one(g) for g in f.arg)
        if f.kind == "worker":
            return True  # which workers run is decided per launch, not per release
        return has_key(f.subject) if f.kind == "config_key" else holds(f, root, None, name)

    return all(one(f) for f in rec.requires) if rec.requires else None


def release_in(spec: str, version: Version | None) -> bool:
    """`version` in the specifier `spec`, a dev/rc/post/local version counting as its release."""
    if version is None or not spec:
        return version is not None
    from packaging.specifiers import SpecifierSet  # only without source: rare

    return SpecifierSet(spec).contains(Version(".".join(map(str, version.release))))


def applies(rec: RuleRecord, ctx: Context, key: str = "") -> bool:
    """The record applies to this launch (for the override of `key`): its facts, checked in the
    tree, else its fallback range."""
    tree = ctx.app.verl
    root = tree.root if tree is not None else None
    if rec.requires and (root is not None and has_source(root) or not any(map(needs_source, rec.requires))):
        name = key.rsplit(".", 1)[-1]
        return all(holds(f, root, ctx, name) for f in rec.requires)
    return release_in(rec.fallback, ctx.verl_version)


def _agrees(value, silent: list) -> bool:
    """The composed value is one of the record's `silent_values`: numbers compared numerically
    (0 matches 0.0), booleans and null exactly (False is not 0), anything else as text."""
    for s in silent:
        if any(isinstance(x, bool) or x is None for x in (s, value)):
            if type(s) is type(value) and s == value:
                return True
        elif isinstance(s, (int, float)) and isinstance(value, (int, float)):
            if s == value:
                return True
        elif str(s) == str(value):
            return True
    return False


def _value_text(line: str) -> str:
    return line.split("=", 1)[1] if "=" in line else ""


def _subjects(rec: RuleRecord) -> tuple[str, ...]:
    """What a record is about: its keys, else its entry point or config name."""
    return rec.keys or (getattr(rec, "module", None) or getattr(rec, "config_name", None) or "",)


def _doc_text(rec: RuleRecord, text: str) -> str:
    """A record's message/help for the documentation: placeholders shown generically."""
    fields = {
        "key": _subjects(rec)[0] or "the key",
        "value": "<value>",
        "replacement": getattr(rec, "replacement", ""),
        "version": getattr(rec, "removed", ""),
    }
    return text.format(**fields).replace("{rest}", "...").replace(".*", ".<key>")


def _show(f: Fact) -> str:
    """A fact as the documentation states it."""
    if f.kind in ("any", "all"):
        return f"{'one' if f.kind == 'any' else 'all'} of ({'; '.join(map(_show, f.arg))})"
    if f.kind in FILE_FACTS:
        verb = {"contains": "contains", "lacks": "does not contain"}.get(f.kind)
        return f"`{f.subject}` {verb} `{f.arg}`" if verb else f"`{f.subject}` {'exists' if f.arg else 'is absent'}"
    if f.kind == "worker":
        return (
            "the launch's entry point creates the reference-policy worker (`Role.RefPolicy` in its worker mapping, "
            "under the conditions it puts it there)"
        )
    verb = {
        "reads": "verl's code reads",
        "not_read": "no verl code reads",
        "field": "the config dataclass field",
        "config_key": "the config has",
    }
    return f"{verb[f.kind]} `{f.subject}`"


def _doc(rec: RuleRecord) -> str:
    evidence = "\n".join(f"    - {e}" for e in rec.evidence)
    keys = ", ".join(f"`{k}`" for k in _subjects(rec))
    if isinstance(rec, IneffectiveRecord):
        does = f"Flags an override of {keys}" + (
            " when " + ", ".join(f"`{k}={v}`" for k, v in rec.when) if rec.when else ""
        )
        if rec.silent_values:
            does += (
                "; silent for "
                + ", ".join(f"`{'null' if v is None else v}`" for v in rec.silent_values)
                + " (what verl does anyway)"
            )
    else:
        does = f"Flags {keys} where it no longer works (removed in verl {rec.removed})"
    checks = "\n".join(f"    - {_show(f)}" for f in rec.requires)
    return (
        f"{rec.summary or rec.name}\n\n    ## What it does\n    {does}.\n\n    ## Why is this bad?\n    "
        f"{_doc_text(rec, rec.message)}\n\n"
        f"    ## Use instead\n    {_doc_text(rec, rec.help)}\n\n    ## Where in verl\n{evidence}\n\n"
        f"    ## Evidence checked in the tree being linted\n{checks or '    - (none: version range only)'}\n"
        f"    Without verl's source: verl {rec.fallback} (a dev/rc/local version counts as its release).\n"
    )


def _ineffective(rec: IneffectiveRecord):
    """The check of one ineffective_keys.yaml record: the values set at its keys."""

    def check(ctx: Context, settings):
        if any(ctx.set_by_override(k) for k in rec.unless_set):
            return
        callers = []  # conditions the script leaves at verl's default and passes "$@": judged as written
        for cond_key, expected in rec.when:
            got = ctx.get(cond_key, None)
            if got is None or _as_text(got) != expected:
                return
            if ctx.left_to_caller(cond_key):
                callers.append(f"`{cond_key}`")
        is_open: dict[str, bool] = {}  # per key name: the evidence, checked when an override matches
        for o in settings:
            value = "<unknown>" if o.value_unknown else _value_text(o.line)
            if rec.value is not None and value != rec.value:
                continue
            if rec.silent_values and (o.value_unknown or _agrees(ctx.get(o.key, None), rec.silent_values)):
                continue  # kl_coef=0 with the KL off is how users say "off"; a run-time value may be that
            name = o.key.rsplit(".", 1)[-1]
            if name not in is_open:
                is_open[name] = applies(rec, ctx, o.key)
            if not is_open[name]:
                continue
            yield ctx.diag(
                rec.code,
                _left_to_caller(rec.message.format(key=o.key, value=value), callers),
                key=o.key,
                help=rec.help.format(key=o.key, value=value),
                span=o.word.span,
            )

    return check


def _left_to_caller(message: str, keys: list[str]) -> str:
    """The message of a finding whose conditions hold only as the script is written: it passes
    `"$@"` and leaves `keys` at verl's defaults, which its caller may change."""
    if not keys:
        return message
    body, stop = (message[:-1], ".") if message.endswith(".") else (message, "")
    return f'{body} (unless the caller\'s "$@" sets {", ".join(keys)}){stop}'


def _removed(rec: RemovedRecord, subject: Subject):
    """The check of one removed_keys.yaml record: the settings of its keys (`_removed_subject`), or
    the launch of its config name."""

    def check(ctx: Context, settings):
        if rec.config_name:
            name = (ctx.app.config_name or "").removesuffix(".yaml")
            if name == rec.config_name and applies(rec, ctx):
                span = ctx.launch.config_name.span if ctx.launch.config_name is not None else ctx.launch.entry_span
                yield ctx.diag(rec.code, rec.message, key=name, help=rec.help, span=span)
            return
        is_open = None
        for o in settings:
            if rec.value is not None and (o.value_unknown or _value_text(o.line) != rec.value):
                continue
            if is_open is None:
                is_open = applies(rec, ctx)
            if not is_open:
                return
            yield removed_diag(ctx, rec, o, subject.match(o.key))

    return check


def renamed_to(ctx: Context, key: str) -> str | None:
    """The key verl moved `key` to, by a removed_keys.yaml record that applies to this launch's
    tree, where the composed config has it (`multi_turn.max_turns` -> `max_assistant_turns`):
    the did-you-mean of a key another rule rejects, before any similar name."""
    for rec in load_table("removed_keys.yaml"):
        if not isinstance(rec, RemovedRecord) or not rec.keys or not rec.replacement or rec.value is not None:
            continue
        rest = Subject(tuple(rec.keys)).match(key)
        if rest is None:
            continue
        new = rec.replacement.replace("{rest}", rest)
        if new != key and ctx.has(new) and applies(rec, ctx):
            return new
    return None


def _removed_subject(rec: RemovedRecord) -> Subject:
    """The settings a removed key's record judges: every setting of its keys but Hydra's own. A
    removed key is confirmed by the tree itself: Hydra rejected the override (a dev checkout
    between releases may still have it; then there is nothing to explain; a project's config file
    adds a removed key silently instead, and nothing reads it: `rules.unread`). So a record that
    is an error whatever the value judges the settings Hydra rejected only."""
    rejected = rec.value is None and rec.severity == "error"
    return Subject(tuple(rec.keys), kinds=tuple(k for k in EVERY if k != "hydra"), applied=False if rejected else None)


def removed_diag(ctx: Context, rec: RemovedRecord, o, rest: str) -> Diagnostic:
    replacement = rec.replacement.replace("{rest}", rest)
    fields = dict(
        key=o.key,
        replacement=replacement,
        version=rec.removed,
        value="<value>" if o.value_unknown else _value_text(o.line),
    )
    msg, help = rec.message.format(**fields), rec.help.format(**fields)
    d = ctx.diag(rec.code, msg, key=o.key, help=help, span=o.word.span)
    if replacement and rec.rename:
        d.fix = ctx.rename_fix(o, replacement)
    elif not replacement and rec.severity == "error":
        # The key is gone: dropping the override lets the launch compose, but what it meant is lost.
        d.fix = Fix(f"remove `{o.line}`", False, "remove-token", o.word.span)
    return d


def _as_text(v) -> str:
    if isinstance(v, bool):
        return "True" if v else "False"
    return str(v)


def removed_module_diag(module: str, tree, span) -> Diagnostic | None:
    """A launch of an entry point that the verl tree no longer has (its replacement's file there,
    else, for a tree without source, a version at or after the removal)."""
    for rec in load_table("removed_keys.yaml"):
        if rec.module != module or tree is None:
            continue
        if rec.requires and has_source(tree.root):
            ok = all(holds(f, tree.root) for f in rec.requires)
        else:
            ok = release_in(rec.fallback, parse_version(tree.version))
        if ok:
            return REGISTRY.get(rec.code).finding(
                rec.message.format(key=module, version=rec.removed), span, rec.help, module
            )
    return None


# A key derived from the code as deprecated (VL232) or read only under a condition that is off
# (VL233), or a micro batch size under dynamic batch size (VL210), is said better by a curated record of the same
# override: the record knows what each
# release's workers do with it, in words. A removed or renamed key (VL4xx) also explains Hydra's
# bare "Could not override" (VL101) or rejection (VL105) at the same token.
SUPERSEDED = {
    "ineffective_keys.yaml": ("VL210", "VL232", "VL233"),
    "removed_keys.yaml": ("VL101", "VL105", "VL210", "VL232", "VL233"),
}


def _register() -> None:
    for name in ("ineffective_keys.yaml", "removed_keys.yaml"):
        for rec in load_table(name):
            if REGISTRY.get(rec.code) is not None:
                raise TableError(
                    f"rules/{name}:{rec.line}: rule code {rec.code} is already taken by rule "
                    f"{REGISTRY.get(rec.code).name}"
                )
            if isinstance(rec, IneffectiveRecord):
                check, entry_points, subject = _ineffective(rec), rec.entry_points, Subject(tuple(rec.keys))
            else:
                subject = None if rec.module else _removed_subject(rec)
                check, entry_points = (_removed(rec, subject) if subject else None), ()
            # "": gated on evidence inside the check (`applies`), not on the version
            declare(
                rec.code,
                rec.name,
                rec.severity,
                _doc(rec),
                check,
                entry_points=entry_points,
                supersedes=SUPERSEDED[name],
                subject=subject,
                # a removed entry point: python stops before Hydra reads an override
                before_the_cut=bool(getattr(rec, "module", None)),
            )


_register()
