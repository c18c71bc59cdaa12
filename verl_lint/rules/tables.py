"""Knowledge as data: one generic check per table in the top-level `rules/` folder.

- `ineffective_keys.yaml` (2xx): keys that compose fine but verl ignores or overwrites.
- `removed_keys.yaml` (4xx): keys, values, entry points and config names removed or
  renamed between verl releases, with the replacement.

Each record becomes a registered rule with its own code, documentation and examples.

A record is gated on evidence, not on a version string: its `requires:` facts are checked in
the verl tree being linted (see `Fact`). Only where that tree has no source to check (a tree
whose `verl/workers` holds no Python file) does the record's version range decide, and then a
dev, rc, post or local version of a release counts as that release (`0.7.0.dev` is the 0.7.0
code: its release tuple is compared, not its PEP 440 order).
"""

from __future__ import annotations

import fnmatch
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from packaging.version import Version

from ..knowledge import MissingTable, load_table
from ..registry import REGISTRY, ROLLOUT_NAME, Rule, main_ppo, parse_version
from ..config.context import Context
from ..config.source import source_text
from ..model import Diagnostic, Fix, Severity


class TableError(MissingTable):
    """A knowledge table that does not follow its schema: a broken installation, one line."""


# ------------------------------------------------------------- evidence ----


class Fact(NamedTuple):
    """One piece of evidence a record needs, as written in the table:

    {file: P, contains: S} / {file: P, lacks: S}   the file (relative to the tree root) contains
                                                     the text S / does not (a missing file lacks it)
    {file: P, exists: true|false}                  the file is there / is not
    {reads: NAME} / {not_read: NAME}               the code of the tree (and of the launch's own
                                                     app) mentions NAME / does not beyond the config
                                                     declarations (the reader index, reader.py);
                                                     NAME `{name}` is the last name of the key set
    {field: verl.mod.Class.name}                   the config dataclass declares that field
    {config_key: KEY}                              the launch's composed config has KEY
    {any: [facts]} / {all: [facts]}                one of / all of
    """

    kind: str
    subject: str = ""  # the file, name, field or key
    arg: object = None  # the text (contains/lacks), the bool (exists) or the sub-facts (any/all)


_FILE_KINDS = ("contains", "lacks", "exists")
_KINDS = (*_FILE_KINDS, "reads", "not_read", "field", "config_key", "any", "all")


def parse_fact(raw, where: str) -> Fact:
    """A fact from its table form; TableError naming `where` (file and record) when malformed."""
    if not isinstance(raw, dict):
        raise TableError(f"{where}: a fact must be a mapping such as {{file: ..., contains: ...}}, not {raw!r}")
    kinds = [k for k in raw if k != "file"]
    if len(kinds) != 1 or kinds[0] not in _KINDS:
        raise TableError(f"{where}: unknown fact {raw!r} (one of: {', '.join(_KINDS)})")
    kind, value = kinds[0], raw[kinds[0]]
    if kind in _FILE_KINDS:
        if not isinstance(raw.get("file"), str) or not raw["file"] or raw["file"].startswith("/"):
            raise TableError(f"{where}: fact {kind!r} needs `file:`, a path relative to the tree root")
        if kind == "exists" and not isinstance(value, bool):
            raise TableError(f"{where}: `exists:` is true or false, not {value!r}")
        if kind != "exists" and (not isinstance(value, str) or not value):
            raise TableError(f"{where}: `{kind}:` needs the text to look for")
        return Fact(kind, raw["file"], value)
    if "file" in raw:
        raise TableError(f"{where}: fact {kind!r} takes no `file:`")
    if kind in ("any", "all"):
        if not isinstance(value, list) or not value:
            raise TableError(f"{where}: `{kind}:` needs a list of facts")
        return Fact(kind, "", tuple(parse_fact(f, where) for f in value))
    if not isinstance(value, str) or not value:
        raise TableError(f"{where}: `{kind}:` needs a name")
    if kind == "field" and value.count(".") < 2:
        raise TableError(f"{where}: `field:` is module.Class.field, not {value!r}")
    return Fact(kind, value)


def needs_source(f: Fact) -> bool:
    """The fact is about verl's code (not about the composed config)."""
    if f.kind in ("any", "all"):
        return any(needs_source(g) for g in f.arg)
    return f.kind != "config_key"


@lru_cache(maxsize=None)
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
    extra = ()
    if f.kind in ("reads", "not_read") and ctx is not None:
        from .unread import _app_sources  # a project's own app reads keys too

        extra = _app_sources(ctx)
    key = (root, extra, f)
    hit = _HOLDS.get(key)
    if hit is None:
        hit = _HOLDS[key] = _tree_fact(f, root, extra)
    return hit


def _tree_fact(f: Fact, root: Path, extra: tuple[Path, ...] = ()) -> bool:
    if f.kind in _FILE_KINDS:
        text = source_text(root / f.subject)
        if f.kind == "exists":
            return (text is not None) == f.arg
        found = text is not None and f.arg in text
        return found if f.kind == "contains" else not found
    if f.kind in ("reads", "not_read"):
        from ..config.reader import reader_index

        index = reader_index(root, extra)
        return index.reads(f.subject) if f.kind == "reads" else not index.used_beyond_config(f.subject)
    # field: `verl.workers.config.actor.ActorConfig.grad_clip` -> a `grad_clip:` line in that
    # class's body in verl/workers/config/actor.py
    module, cls, name = f.subject.rsplit(".", 2)
    text = source_text(root / (module.replace(".", "/") + ".py")) or ""
    m = re.search(rf"^class {re.escape(cls)}\b[^\n]*\n((?:[ \t]+[^\n]*\n|[ \t]*\n)*)", text, re.M)
    return bool(m and re.search(rf"^[ \t]+{re.escape(name)}[ \t]*:", m.group(1), re.M))


def release_in(spec: str, version: Version | None) -> bool:
    """`version` in the specifier `spec`, a dev/rc/post/local version counting as its release."""
    if version is None or not spec:
        return version is not None
    from packaging.specifiers import SpecifierSet  # only without source: rare

    return SpecifierSet(spec).contains(Version(".".join(map(str, version.release))))


class Gate(NamedTuple):
    """When a record applies: its facts, checked in the tree, else its version range."""

    facts: tuple[Fact, ...]
    spec: str  # the fallback (PEP 440 specifier) for a tree without source

    def open(self, ctx: Context, key: str = "") -> bool:
        """The record applies to this launch (for the override of `key`)."""
        tree = ctx.app.verl
        root = tree.root if tree is not None else None
        if self.facts and (root is not None and has_source(root) or not any(map(needs_source, self.facts))):
            name = key.rsplit(".", 1)[-1]
            return all(holds(f, root, ctx, name) for f in self.facts)
        return release_in(self.spec, ctx.verl_version)


def _gate(rec: dict, spec: str, where: str) -> Gate:
    raw = rec.get("requires")
    if raw is not None and (not isinstance(raw, list) or not raw):
        raise TableError(f"{where}: `requires:` must be a non-empty list of facts")
    return Gate(tuple(parse_fact(f, where) for f in raw or ()), spec)


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


def _matcher(patterns: list[str]):
    """`match(key)`: the part matched by a trailing `.*` ('' for an exact or glob match), or None.
    The patterns are split by kind once: the callback matches every record against every override."""
    exact = {p for p in patterns if not p.endswith(".*") and not _GLOB.search(p)}
    prefixes = tuple(p[:-1] for p in patterns if p.endswith(".*"))  # "a.b.*" -> "a.b."
    globs = tuple(p for p in patterns if not p.endswith(".*") and _GLOB.search(p))

    def match(key: str) -> str | None:
        if key in exact:
            return ""
        for base in prefixes:
            if key.startswith(base):
                return key[len(base) :]
        return "" if any(fnmatch.fnmatchcase(key, g) for g in globs) else None

    return match


_GLOB = re.compile(r"[*?\[]")


def _value_text(line: str) -> str:
    return line.split("=", 1)[1] if "=" in line else ""


def _doc_text(rec: dict, text: str) -> str:
    """A record's message/help for the documentation: placeholders shown generically."""
    first = (rec.get("keys") or [rec.get("module") or rec.get("config_name") or "the key"])[0]
    fields = {"key": first, "value": "<value>", "replacement": rec.get("replacement") or "", "version": rec.get("removed", "")}
    return text.format(**fields).replace("{rest}", "...").replace(".*", ".<key>")


def _show(f: Fact) -> str:
    """A fact as the documentation states it."""
    if f.kind in ("any", "all"):
        return f"{'one' if f.kind == 'any' else 'all'} of ({'; '.join(map(_show, f.arg))})"
    if f.kind in _FILE_KINDS:
        verb = {"contains": "contains", "lacks": "does not contain"}.get(f.kind)
        return f"`{f.subject}` {verb} `{f.arg}`" if verb else f"`{f.subject}` {'exists' if f.arg else 'is absent'}"
    verb = {"reads": "verl's code reads", "not_read": "no verl code reads", "field": "the config dataclass field", "config_key": "the config has"}
    return f"{verb[f.kind]} `{f.subject}`"


def _doc(rec: dict, kind: str, gate: Gate) -> str:
    evidence = "\n".join(f"    - {e}" for e in rec.get("evidence", []))
    what = rec.get("summary", rec["name"])
    keys = ", ".join(f"`{k}`" for k in rec.get("keys", []) or [rec.get("module") or rec.get("config_name") or ""])
    if kind == "ineffective":
        does = f"Flags an override of {keys}" + (" when " + ", ".join(f"`{k}={v}`" for k, v in rec["when"].items()) if rec.get("when") else "")
    else:
        does = f"Flags {keys} where it no longer works (removed in verl {rec['removed']})"
    if rec.get("silent_values"):
        does += "; silent for " + ", ".join(f"`{'null' if v is None else v}`" for v in rec["silent_values"]) + " (what verl does anyway)"
    checks = "\n".join(f"    - {_show(f)}" for f in gate.facts)
    return (
        f"{what}\n\n    ## What it does\n    {does}.\n\n    ## Why is this bad?\n    {_doc_text(rec, rec['message'])}\n\n"
        f"    ## Use instead\n    {_doc_text(rec, rec['help'])}\n\n    ## Where in verl\n{evidence}\n\n"
        f"    ## Evidence checked in the tree being linted\n{checks or '    - (none: version range only)'}\n"
        f"    Without verl's source: verl {gate.spec} (a dev/rc/local version counts as its release).\n"
    )


def _examples(rec: dict, field: str, spec: str) -> list[tuple[str, str]]:
    """The record's examples, each for the releases of its range (where the evidence holds in
    the releases the tests use); an example may name its own range as {script: ..., verl: ...}."""
    out = []
    for ex in rec.get(field) or []:
        ex_spec = spec
        if isinstance(ex, dict):
            ex, ex_spec = ex["script"], ex.get("verl", spec)
        if isinstance(ex, str):  # an override line as written (a whole script for entry-point records)
            if rec.get("module") is None:  # verl >= 0.7 requires the rollout's name (`name: ???`)
                ex = f"#!/bin/bash\npython3 -m verl.trainer.main_ppo {ex}" + ("" if "rollout.name=" in ex else f" {ROLLOUT_NAME}") + "\n"
            out.append((ex, ex_spec))
        else:
            out.append((main_ppo(*ex), ex_spec))
    return out


def _ineffective(rec: dict, gate: Gate):
    """The check of one ineffective_keys.yaml record."""
    matches = _matcher(rec["keys"])
    silent = rec.get("silent_values") or []

    def check(ctx: Context):
        if any(ctx.set_by_override(k) for k in rec.get("unless_set") or ()):
            return
        for cond_key, expected in (rec.get("when") or {}).items():
            got = ctx.get(cond_key, None)
            if got is None or _as_text(got) != str(expected):
                return
        is_open: dict[str, bool] = {}  # per key name: the evidence, checked when an override matches
        for o in ctx.comp.overrides:
            if not o.ok or o.kind not in ("set", "add", "force_add"):
                continue
            if matches(o.key) is None:
                continue
            value = "<unknown>" if o.value_unknown else _value_text(o.line)
            if rec.get("value") is not None and value != str(rec["value"]):
                continue
            if silent and not o.value_unknown and _agrees(ctx.get(o.key, None), silent):
                continue  # e.g. kl_coef=0 with the KL off: how users say "off", not a mistake
            name = o.key.rsplit(".", 1)[-1]
            if name not in is_open:
                is_open[name] = gate.open(ctx, o.key)
            if not is_open[name]:
                continue
            yield ctx.diag(rec["code"], rec["message"].format(key=o.key, value=value), key=o.key, help=rec["help"].format(key=o.key, value=value), span=o.word.span)

    return check


def _removed(rec: dict, gate: Gate):
    """The check of one removed_keys.yaml record."""
    matches = _matcher(rec.get("keys") or [])

    def check(ctx: Context):
        if rec.get("config_name"):
            name = (ctx.app.config_name or "").removesuffix(".yaml")
            if name == rec["config_name"] and gate.open(ctx):
                span = ctx.launch.config_name.span if ctx.launch.config_name is not None else ctx.launch.entry_span
                yield ctx.diag(rec["code"], rec["message"], key=name, help=rec["help"], span=span)
            return
        is_open = None
        for o in ctx.comp.overrides:
            if o.kind == "hydra":
                continue
            rest = matches(o.key)
            if rest is None:
                continue
            if rec.get("value") is not None and (o.value_unknown or _value_text(o.line) != str(rec["value"])):
                continue
            # A removed key is confirmed by the tree itself: Hydra rejected the override. (A dev
            # checkout between releases may still have it; then there is nothing to explain.)
            if rec.get("value") is None and rec["severity"] == "error" and o.ok:
                continue
            if is_open is None:
                is_open = gate.open(ctx)
            if not is_open:
                return
            yield removed_diag(ctx, rec, o, rest)

    return check


def removed_diag(ctx: Context, rec: dict, o, rest: str) -> Diagnostic:
    replacement = (rec.get("replacement") or "").replace("{rest}", rest)
    fields = dict(key=o.key, replacement=replacement, version=rec["removed"], value="<value>" if o.value_unknown else _value_text(o.line))
    msg, help = rec["message"].format(**fields), rec["help"].format(**fields)
    d = ctx.diag(rec["code"], msg, key=o.key, help=help, span=o.word.span)
    if replacement and rec.get("rename"):
        d.fix = Fix(f"rename `{o.key}` to `{replacement}`", True, "rename-key", o.word.span, old=o.key, new=replacement)
    elif not replacement and rec["severity"] == "error":
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
    for rec in _TABLES["removed_keys.yaml"]:
        if rec.get("module") != module or tree is None:
            continue
        gate = _GATES[rec["code"]]
        if gate.facts and has_source(tree.root):
            ok = all(holds(f, tree.root) for f in gate.facts)
        else:
            ok = release_in(gate.spec, parse_version(tree.version))
        if ok:
            r = REGISTRY.get(rec["code"])
            return Diagnostic(r.code, r.name, r.severity, rec["message"].format(key=module, version=rec["removed"]), span, rec["help"], module)
    return None


# The ineffective-key records were verified on the main_ppo path (its trainer and workers);
# other apps (fully-async, one-step-off) read some of these keys themselves.
MAIN_PPO_APPS = ("ppo_trainer", "ppo_megatron_trainer")

_COMMON = {"code", "name", "severity", "summary", "message", "help", "evidence", "bad", "good", "requires"}
_FIELDS = {
    "ineffective_keys.yaml": _COMMON | {"keys", "verl", "when", "value", "unless_set", "apps", "silent_values"},
    "removed_keys.yaml": _COMMON | {"keys", "removed", "replacement", "rename", "value", "module", "config_name"},
}
# A PEP 440 specifier set, checked without importing packaging.specifiers (~10 ms the Hydra
# callback would pay at every job start).
_SPEC = re.compile(r"\s*(~=|===?|!=|<=|>=|<|>)\s*\d[\w.*+!-]*\s*(,\s*(~=|===?|!=|<=|>=|<|>)\s*\d[\w.*+!-]*\s*)*")
_TABLES: dict[str, list[dict]] = {}
_GATES: dict[str, Gate] = {}


def load_records(name: str) -> list[tuple[dict, Gate]]:
    """The records of table `name` with their gates, checked against the schema: TableError
    naming the table and the record on the first problem."""
    out = []
    for i, rec in enumerate(load_table(name) or []):
        where = f"rules/{name}: record {rec.get('code') or f'#{i + 1}'}"
        unknown = sorted(set(rec) - _FIELDS[name])
        if unknown:
            raise TableError(f"{where}: unknown field {unknown[0]!r}")
        for f in ("code", "name", "severity", "message", "help"):
            if not isinstance(rec.get(f), str):
                raise TableError(f"{where}: `{f}:` is missing")
        if rec.get("silent_values") is not None and not isinstance(rec["silent_values"], list):
            raise TableError(f"{where}: `silent_values:` must be a list of values")
        version = rec.get("verl") if name == "ineffective_keys.yaml" else (f">={rec['removed']}" if rec.get("removed") else None)
        if not isinstance(version, str):
            raise TableError(f"{where}: `{'verl' if name == 'ineffective_keys.yaml' else 'removed'}:` (the fallback version range) is missing")
        if not _SPEC.fullmatch(version):
            raise TableError(f"{where}: {version!r} is not a version range such as \">=0.7.0,<0.8.0\"")
        out.append((rec, _gate(rec, version, where)))
    _TABLES[name] = [r for r, _ in out]
    return out


def _register() -> None:
    for rec, gate in load_records("ineffective_keys.yaml"):
        _GATES[rec["code"]] = gate
        REGISTRY.register(
            Rule(
                rec["code"],
                rec["name"],
                Severity.parse(rec["severity"]),
                _doc(rec, "ineffective", gate),
                _ineffective(rec, gate),
                "",  # gated on evidence inside the check (Gate), not on the version
                _examples(rec, "bad", gate.spec),
                _examples(rec, "good", gate.spec),
                tuple(rec.get("apps", MAIN_PPO_APPS)),
            )
        )
    for rec, gate in load_records("removed_keys.yaml"):
        _GATES[rec["code"]] = gate
        check = None if rec.get("module") else _removed(rec, gate)
        REGISTRY.register(
            Rule(
                rec["code"],
                rec["name"],
                Severity.parse(rec["severity"]),
                _doc(rec, "removed", gate),
                check,
                "",
                _examples(rec, "bad", gate.spec),
                _examples(rec, "good", gate.spec),
            )
        )


_register()
