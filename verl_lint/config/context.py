"""What a rule reads: the composed config resolved per key, who set each value (provenance),
the script's env and the versions in play."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from pathlib import Path
from typing import TypeVar

from omegaconf import DictConfig, ListConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException
from omegaconf.nodes import AnyNode, ValueNode
from omegaconf.resolvers import oc
from packaging.version import Version

from ..evidence import Evidence, tree_has
from ..launch.locate import HydraApp
from ..model import Diagnostic, EnvVar, Fix, Launch, Related, Severity, Span, Unknown
from ..registry import REGISTRY, Subject
from .compose import AppliedOverride, Composition
from .keys import all_keys, plain_node

MISSING = Unknown("the key is not in the config")
T = TypeVar("T")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # a name an interpolation may read (as `config.guards.WORD`)


class Context:
    """What a rule reads: the composed config (resolved per key), provenance, env, versions."""

    def __init__(
        self,
        launch: Launch,
        comp: Composition,
        versions: dict[str, Version | None],
        env: dict[str, EnvVar],
        engines: dict | None = None,
        live: bool = False,
    ):
        self.launch = launch
        self.comp = comp
        self.app: HydraApp = comp.app
        self.cfg: DictConfig = comp.config
        self.versions = versions  # exact versions only (verl, torch, and engines known exactly)
        self.env = env
        self.engines = engines or {}  # engine -> versions.EngineReleases (exact, declared range, or none)
        # engines whose unknown release silenced a rule (`engines.versions.notes`)
        self.skipped_engines: set[str] = set()
        # live (the Hydra callback): the config and env are the real ones, OmegaConf resolves as at
        # run time. Static: `${oc.env:X}` reads the script's env, and X unset there is unknown.
        self.live = live
        self.unknown_reads: list[str] | None = None  # when a list: the keys read that the script left to run time
        self.rule_runs: dict[str, tuple[list, list[str]]] = {}  # code -> (findings, unknown reads): Rule.run
        self._once: dict[Callable, tuple[object, list[str]]] = {}  # fact -> (its value, unknown reads): once()
        if not live:
            OmegaConf.register_new_resolver(
                "oc.env", _oc_env, replace=True
            )  # again per launch: a resolver reset elsewhere undoes it
        self._cache: dict[str, object] = {}
        self.gpu_gib: float | None = (
            None  # memory per GPU the memory rules judge against (--gpu, the gpu setting, the live device)
        )
        self.gpu_origin = ""  # where it comes from, as the findings say it ("--gpu H100")
        self.models_online = False  # --models online: a hub model's config.json may be downloaded
        self._keys: list[str] | None = None
        self._mandatory: list[str] = []  # filled by the walk of `keys`

    def keys(self) -> list[str]:
        """Every dotted key of the composed config (`keys.all_keys`), listed once per launch:
        several rules ask. Do not mutate the result."""
        if self._keys is None:
            self._keys = all_keys(self.cfg, mandatory=self._mandatory)
        return self._keys

    def once(self, fact: Callable[[Context], T]) -> T:
        """`fact(self)`, computed once per launch (a fact about the launch several rules ask for);
        the keys it read that the script leaves to run time count for each rule that asks."""
        hit = self._once.get(fact)
        if hit is None:
            outer, self.unknown_reads = self.unknown_reads, []
            try:
                value = fact(self)
            finally:
                reads, self.unknown_reads = self.unknown_reads, outer
            hit = self._once[fact] = (value, reads)
        if self.unknown_reads is not None:
            self.unknown_reads += hit[1]
        return hit[0]  # type: ignore[return-value]

    def mandatory_keys(self) -> list[str]:
        """The keys whose value is `???` (OmegaConf's mandatory marker), found by the walk of `keys`."""
        self.keys()
        return self._mandatory

    @property
    def verl_version(self) -> Version | None:
        return self.versions.get("verl")

    @property
    def verl_root(self) -> Path | None:
        return self.app.verl.root if self.app.verl is not None else None

    def verl_has(self, *evidence: Evidence) -> bool:
        """The verl tree being linted contains one of `evidence` (False when no tree is known)."""
        root = self.verl_root
        return root is not None and any(tree_has(str(root), ev) for ev in evidence)

    def get(self, key: str, default=MISSING):
        """The resolved value of `key` (as OmegaConf would resolve it), or an `Unknown`.

        Statically, a value the script leaves to run time stays unknown: `${oc.env:X}` with X not
        set by the script, and an interpolation reading an override whose value is unknown (even
        through `${oc.select:key,default}`, which OmegaConf would answer with its default)."""
        if key in self._cache:
            v = self._cache[key]
        else:
            v = _select(self.cfg, key, None if self.live else self.env)
            if not self.live and not isinstance(v, Unknown) and v is not MISSING:
                ref = self._unknown_reference(key)
                if ref is not None:
                    v = Unknown(f"`{key}` reads `{ref}`, which is only known at run time")
            self._cache[key] = v
        if self.unknown_reads is not None and isinstance(v, Unknown) and self._left_to_run_time(key, v):
            self.unknown_reads.append(key)
        return default if v is MISSING else v

    def _left_to_run_time(self, key: str, v: Unknown) -> bool:
        """The unknown value comes from the script (an override, or an env variable it does not
        set), not from a mandatory `???` that verl's config leaves for the user to fill in."""
        return self.provenance(key) == "unknown" or v.reason.startswith(f"`{key}` reads ")

    def _unknown_reference(self, key: str, _depth: int = 0) -> str | None:
        """A key that the interpolation at `key` reads (directly or further down) and that an
        override with an unknown value set, else None."""
        for ref in _references(self.cfg, key):
            s = self.comp.last_setter(ref)
            if s is not None and s.value_unknown is not None:
                return ref
            if _depth < 4:
                deeper = self._unknown_reference(ref, _depth + 1)
                if deeper is not None:
                    return deeper
        return None

    def num(self, key: str) -> int | float | None:
        """A numeric value, or None when unknown/absent/not a number (rules then stay silent)."""
        v = self.get(key, None)
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            return None
        return v

    def int(self, key: str) -> int | None:
        """An integer value (sizes, counts), or None when unknown or not an integer."""
        v = self.get(key, None)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    def flag(self, key: str) -> bool | None:
        v = self.get(key, None)
        return v if isinstance(v, bool) else None

    def text(self, key: str) -> str | None:
        v = self.get(key, None)
        return v if isinstance(v, str) else None

    def has(self, key: str) -> bool:
        return config_has(self.cfg, key)

    def section_keys(self, key: str) -> frozenset[str]:
        """The keys of the config's node at `key` (the root for ''): none where there is no node,
        or it cannot be resolved."""
        node = plain_node(self.cfg, key) if key else self.cfg
        if not (isinstance(node, DictConfig) and isinstance(node.__dict__["_content"], dict)):
            node = OmegaConf.select(self.cfg, key, throw_on_resolution_failure=False) if key else self.cfg
        return frozenset(str(k) for k in node.keys()) if isinstance(node, DictConfig) else frozenset()

    def left_to_caller(self, key: str) -> bool:
        """The launch passes `"$@"` and the script does not set `key`: its caller may."""
        return self.launch.caller_args is not None and not self.user_set(key)

    def set_by_override(self, key: str) -> bool:
        """The user chose `key` (or a parent): an override, or a value of the project's config files."""
        return self.comp.last_setter(key) is not None

    # ------------------------------------------------ the settings a rule judges ----

    def settings_for(self, subject: Subject) -> list[AppliedOverride]:
        """The settings `subject` selects (see `registry.Subject`), in the order they take effect
        (each key's last one, the latest first, with `subject.last`): what a rule's check judges."""
        settings = self.comp.settings
        added = {o.key for o in self.comp.file_settings if o.kind == "add"} if subject.adding else set()
        matches = subject.matches

        def judged(o: AppliedOverride) -> bool:
            return (
                o.kind in subject.kinds
                and (subject.applied is None or o.ok == subject.applied)
                and (subject.source is None or o.in_file == (subject.source == "file"))
                and (not subject.adding or o.kind in ("add", "force_add") or (o.kind == "set" and o.key in added))
                and matches(o.key or "")
            )

        if not subject.last:
            return [o for o in settings if judged(o)]
        out, seen = [], set()
        for o in reversed(settings):
            if o.key not in seen:
                seen.add(o.key)
                if judged(o):
                    out.append(o)
        return out

    def set_under(self, path: str) -> list[AppliedOverride]:
        """The settings Hydra applied to keys under `path` (a dict the user fills in key by key)."""
        return [o for o in self.comp.settings if o.ok and (o.key or "").startswith(path + ".")]

    def set_last(self, *keys: str) -> str:
        """Of `keys`, the one whose setting comes last in the order they take effect (where a
        finding about all of them is reported), else the first."""
        order = {id(o): i for i, o in enumerate(self.comp.settings)}
        set_keys = [k for k in keys if self.set_by_override(k)]
        if not set_keys:
            return keys[0]
        return max(set_keys, key=lambda k: order[id(self.comp.last_setter(k))])

    def interpolated(self) -> set[str]:
        """The names inside the `${...}` interpolations of the values the user set."""
        names: set[str] = set()
        for o in self.comp.settings:
            if "${" in o.line:
                names.update(_NAME.findall(o.line.split("=", 1)[-1]))
        return names

    def rename_fix(self, o, new: str) -> Fix | None:
        """A safe rename of override `o` to the key `new`, unless the user set `new` too. The
        `+`/`++` prefix follows what the config ships: `+old=v` becomes `new=v` where `new`
        exists (Hydra refuses to add a key that is there), `old=v` stays unprefixed only where it does."""
        if self.comp.last_setter(new) is not None:
            return None
        if o.in_file:  # renamed in its YAML file, where only the key's own name can change
            parent, _, name = o.key.rpartition(".")
            new_parent, _, new_name = new.rpartition(".")
            ok = parent == new_parent and self.has(new) == (o.kind == "set")
            return (
                Fix(
                    f"rename `{name}` to `{new_name}` in {o.word.span.path}",
                    True,
                    "rename-key",
                    o.word.span,
                    old=name,
                    new=new_name,
                )
                if ok
                else None
            )
        if (o.kind == "set" and self.has(new)) or o.kind == "force_add" or (o.kind == "add" and not self.has(new)):
            return Fix(f"rename `{o.key}` to `{new}`", True, "rename-key", o.word.span, old=o.key, new=new)
        if o.kind == "add" and o.value_unknown is None:
            value = o.line.split("=", 1)[1]
            return Fix(
                f"replace `{o.line}` with `{new}={value}`", True, "replace-token", o.word.span, new=f"{new}={value}"
            )
        return None

    def span(self, key: str) -> Span:
        """The override token (or config file line) that set `key` or a parent, else the launch's app word."""
        s = self.comp.last_setter(key)
        return s.word.span if s is not None else self.launch.entry_span

    def provenance(self, key: str, _depth: int = 0) -> str:
        """Who chose the value of `key`: "script" (an override with a known value), "unknown" (an
        override whose value is only known at run time), "user-file" (the user's own config
        files), else "verl-default" (verl's shipped config). A plain interpolation `${a.b}` has
        the provenance of what it reads, the user's choice winning."""
        s = self.comp.last_setter(key)
        if s is not None:
            return "user-file" if s.in_file else "script" if s.value_unknown is None else "unknown"
        if _depth < 4:
            found = {self.provenance(ref, _depth + 1) for ref in _references(self.cfg, key)}
            for kind in ("script", "unknown", "user-file"):
                if kind in found:
                    return kind
        return "verl-default"

    def references(self, key: str) -> list[str]:
        """The keys the interpolation at `key` reads (`${oc.select:a.b,x}` -> ["a.b"]); [] for a plain value."""
        return _references(self.cfg, key)

    def user_set(self, key: str) -> bool:
        """The value of `key` is the user's choice: set in the script or in the user's own config files."""
        return self.provenance(key) in ("script", "user-file")

    def default_problem(self, rule_code: str, message: str, key: str, help: str = "") -> Diagnostic:
        """A problem that lives in verl's own shipped defaults, not in the user's script: info,
        reported once per run (not once per launch), at the launch that first meets it."""
        d = self.diag(rule_code, f"in verl's own default config: {message}", key=key, help=help, severity=Severity.INFO)
        d.once = True
        return d

    def origin(self, key: str) -> str:
        s = self.comp.last_setter(key)
        if s is not None and s.in_file:
            return f"set to `{s.line.split('=', 1)[1]}` in {s.word.span.path}:{s.word.span.line}"
        if s is not None:
            return f"set by `{s.line}`" if s.value_unknown is None else "set from a value unknown before run time"
        return "the config default"

    def diag(
        self,
        rule_code: str,
        message: str,
        key: str = "",
        help: str = "",
        span: Span | None = None,
        severity: Severity | None = None,
        related: Iterable[str] = (),
    ) -> Diagnostic:
        """A finding of rule `rule_code`, at `span` or else at the override that set `key`.

        `severity` lowers (or raises) the rule's default for this finding, e.g. when a
        version the verdict depends on is unknown. `related`: the other keys a cross-field finding
        rests on; those the script set are listed with their lines (see `related_places`)."""
        r = REGISTRY.get(rule_code)
        assert r is not None, rule_code
        d = r.finding(message, span or (self.span(key) if key else self.launch.entry_span), help, key, severity)
        d.related = self.related_places(related, d.span)
        return d

    def related_places(self, keys: Iterable[str], primary: Span) -> tuple[Related, ...]:
        """Where the script set each of `keys`, other than at `primary`. A key left at its config
        default has no line of the user's to point at and is named in the message instead."""
        out: list[Related] = []
        for key in dict.fromkeys(keys):
            s = self.comp.last_setter(key)
            if s is None or s.word.span == primary or any(r.span == s.word.span for r in out):
                continue
            note = (
                f"`{s.line}` set here"
                if s.value_unknown is None
                else f"`{key}` set here (value known only at run time)"
            )
            out.append(
                Related(
                    key,
                    s.word.span,
                    note.replace("` set here", "` set here, in a config file", 1) if s.in_file else note,
                )
            )
        return tuple(out)


_ABSENT = object()
_REFERENCE = r"\$\{(?:oc\.select:)?(\.*[A-Za-z_][\w.]*)[,}]"  # a pattern: compiled (by `re`) by a static read


def config_has(cfg: DictConfig, key: str) -> bool:
    """`key` is in `cfg`, a mandatory `???` value included (`OmegaConf.select` answers such a
    key with its default, as if it were absent: verl >= 0.6 ships `rollout.name: ???`)."""
    parent, _, last = key.rpartition(".")
    node = plain_node(cfg, parent) if parent else cfg
    if isinstance(node, DictConfig) and isinstance(node.__dict__["_content"], dict):
        return last in node.__dict__["_content"]  # (a plain path: read from the nodes, as `plain_node`)
    if parent:
        node = OmegaConf.select(cfg, parent, default=None, throw_on_missing=False, throw_on_resolution_failure=False)
    if isinstance(node, DictConfig):
        return last in node.keys()
    return isinstance(node, ListConfig) and last.isdigit() and int(last) < len(node)


def _references(cfg: DictConfig, key: str) -> list[str]:
    """The absolute keys an interpolation at `key` reads (`${a.b}`, `${oc.select:a.b,x}`)."""
    node = plain_node(cfg, key)
    value = node.__dict__.get("_val", node.__dict__.get("_content")) if node is not None else None
    if not (isinstance(value, str) and "${" in value):  # OmegaConf's own test of an interpolation
        return []
    out = []
    for ref in re.findall(_REFERENCE, value):
        dots = len(ref) - len(ref.lstrip("."))
        if dots:  # relative: `.x` is a sibling of `key`, each further dot one level up
            base = key.split(".")[:-dots]
            ref = ".".join([*base, ref[dots:]])
        out.append(ref)
    return out


def _plain_value(cfg, key: str):
    """The value at `key` read straight from the nodes when the whole path is plain (dicts down to
    a value node; no interpolation, missing value, None or list on the way), else `_SLOW`.

    Exactly what `OmegaConf.select` returns there (`ValueNode._value()`), at ~1/15 of its cost:
    rules read dozens of keys per launch, and the Hydra callback pays that at every job start.
    """
    node = plain_node(cfg, key)
    if isinstance(node, ValueNode):
        v = node.__dict__["_val"]
        if not (isinstance(v, str) and (v == "???" or "${" in v)):  # not missing, not an interpolation
            return v
    return _SLOW


# The interpolations most of verl's config values are: `${a.b}` and `${oc.select:a.b,DEFAULT}`,
# an absolute key and a plain default (a name, number, true/false/null).
_KEY_REF = r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*"
_SIMPLE_REFERENCE = re.compile(rf"\$\{{({_KEY_REF})\}}|\$\{{oc\.select:({_KEY_REF})(?:,[\w.+-]+)?\}}", re.ASCII)


def _simple_reference(cfg, key: str):
    """The value of `${a.b}` or `${oc.select:a.b,DEFAULT}` at `key` (an untyped node, in the root
    config) when `a.b` holds a plain value that is not None: that value, which is what OmegaConf
    resolves there (the node interpolation's target; `oc.select` gives its default only for a
    missing key). Else `_SLOW`, and OmegaConf resolves it: this skips its grammar, whose parse costs
    ~0.3 ms per value read and ~3 ms for the first one in a process (a Hydra job start pays that)."""
    node = plain_node(cfg, key)
    if type(node) is not AnyNode or not node._is_interpolation() or cfg._get_parent() is not None:
        return _SLOW
    m = _SIMPLE_REFERENCE.fullmatch(str(node._value()))
    if m is None:
        return _SLOW
    target = _plain_value(cfg, m.group(1) or m.group(2))
    return target if isinstance(target, (bool, int, float, str)) else _SLOW


_SLOW = object()

# The launch's env while a static read resolves (None: OmegaConf's own `oc.env`), and the
# variables it found unknown.
_STATIC_ENV: ContextVar[tuple[dict[str, EnvVar], list[str]] | None] = ContextVar("verl_lint_static_env", default=None)
_NO_DEFAULT = object()


def _oc_env(key: str, default=_NO_DEFAULT):
    """`oc.env` that, during a static read, answers from the launch's env: a variable the script
    does not set (or sets to a value unknown before run time) is unknown, never the default or
    this process's own value. Outside a static read it is OmegaConf's `oc.env`."""
    state = _STATIC_ENV.get()
    if state is None:
        return oc.env(key) if default is _NO_DEFAULT else oc.env(key, default)
    env, unknown = state
    ev = env.get(key)
    if ev is not None and ev.exported and ev.value is not None and ev.unknown is None:
        return ev.value
    unknown.append(key)
    raise LookupError(f"${{oc.env:{key}}} is only known at run time")


def _select(cfg: DictConfig, key: str, env: dict[str, EnvVar] | None = None):
    """The value at `key`; with `env` (a static read), `${oc.env:X}` is answered from it."""
    v = _plain_value(cfg, key)
    if v is _SLOW:
        v = _simple_reference(cfg, key)
    if v is not _SLOW:
        return v
    if env is None:
        return _resolve(cfg, key)
    unknown: list[str] = []
    token = _STATIC_ENV.set((env, unknown))
    try:
        v = _resolve(cfg, key)
    finally:
        _STATIC_ENV.reset(token)
    if unknown and isinstance(v, Unknown):
        how = (
            "sets it to a value only known at run time"
            if unknown[0] in env
            else "does not set it (it depends on the machine)"
        )
        return Unknown(f"`{key}` reads the environment variable {unknown[0]} and the script {how}")
    return v


def _resolve(cfg: DictConfig, key: str):
    try:
        v = OmegaConf.select(cfg, key, default=_ABSENT, throw_on_missing=True)
    except MissingMandatoryValue:
        return Unknown(f"`{key}` depends on a value only known at run time")
    except OmegaConfBaseException as ex:
        return Unknown(f"`{key}` cannot be resolved statically: {str(ex).splitlines()[0]}")
    if v is _ABSENT:
        return MISSING
    if isinstance(v, DictConfig) or OmegaConf.is_list(v):
        try:
            return OmegaConf.to_container(v, resolve=True)
        except MissingMandatoryValue:
            return Unknown(f"part of `{key}` is only known at run time")
        except OmegaConfBaseException as ex:
            return Unknown(f"`{key}` cannot be resolved statically: {str(ex).splitlines()[0]}")
    return v
