"""The rule engine: the registry, the context a rule reads, and running rules.

A rule is a code (`VL` + 3 digits; the hundreds are the family), a kebab-case name,
a default severity, the verl releases it applies to (a `packaging` specifier checked
against the composed app's verl version), a docstring that is its documentation, and
bad/good example scripts that the test suite runs. Rules never see raw Hydra errors:
those are diagnostics of the composition step, documented here as rules too.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException
from omegaconf.nodes import ValueNode
from packaging.version import InvalidVersion, Version

from .compose import Composition
from .locate import HydraApp
from .model import Diagnostic, EnvVar, Launch, Severity, Span, Unknown


@dataclass(eq=False, repr=False)  # an entity, compared by identity: cheaper to define
class Rule:
    """A registered rule: what it checks and where it applies, its documentation and examples."""

    code: str
    name: str
    severity: Severity
    doc: str
    check: Callable[["Context"], Iterable[Diagnostic]] | None  # None: emitted by the pipeline itself
    verl: str = ""  # a packaging specifier of the verl releases it applies to ('' for all)
    # Example scripts: bad ones must produce this rule, good ones nothing. An example may be
    # a (script, verl specifier) pair when it only holds for some releases.
    bad: list[str | tuple[str, str]] = field(default_factory=list)
    good: list[str | tuple[str, str]] = field(default_factory=list)
    apps: tuple[str, ...] = ()  # config names the rule reads (empty: every app)
    bad_options: dict = field(default_factory=dict)  # Options fields the bad examples need (e.g. a tiny timeout)
    live: bool = False  # found only in a running process (callback, doctor): no example scripts

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0].strip() if self.doc.strip() else self.name

    def examples(self, kind: str, version: Version) -> list[str]:
        """The bad or good example scripts that hold for `version`."""
        out = []
        for ex in self.bad if kind == "bad" else self.good:
            script, spec = ex if isinstance(ex, tuple) else (ex, "")
            if spec_contains(spec, version):
                out.append(script)
        return out

    def applies_to(self, version: Version | None) -> bool:
        if not self.verl:
            return True
        if version is None:
            return False  # a version-dependent rule never guesses
        return self.verl in REGISTRY.specs_containing(version)


def spec_contains(spec: str, version: Version) -> bool:
    """`version` is in the packaging specifier `spec` (pre-releases count: dev checkouts)."""
    from packaging.specifiers import SpecifierSet

    return SpecifierSet(spec).contains(version, prereleases=True)


class Registry:
    """The explicit, greppable list of rules (no import magic)."""

    def __init__(self) -> None:
        self._rules: dict[str, Rule] = {}
        self._containing: dict[str, frozenset[str]] = {}  # version -> the specifiers containing it

    def register(self, rule: Rule) -> Rule:
        if rule.code in self._rules:
            raise ValueError(f"duplicate rule code {rule.code}")
        self._rules[rule.code] = rule
        self._containing.clear()
        return rule

    def unregister(self, code: str) -> None:
        self._rules.pop(code, None)
        self._containing.clear()

    def specs_containing(self, version: Version) -> frozenset[str]:
        """The rules' verl specifiers that contain `version`, kept on disk per version and set of
        specifiers: a process that only lints (the Hydra callback) then never imports
        packaging.specifiers (~10 ms)."""
        key = str(version)
        hit = self._containing.get(key)
        if hit is None:
            from .cache import memo

            specs = sorted({r.verl for r in self._rules.values() if r.verl})
            hit = memo("specifiers", "\0".join([key, *specs]), lambda: frozenset(s for s in specs if spec_contains(s, version)), frozenset)
            self._containing[key] = hit
        return hit

    def get(self, code_or_name: str) -> Rule | None:
        if code_or_name in self._rules:
            return self._rules[code_or_name]
        return next((r for r in self._rules.values() if r.name == code_or_name), None)

    def __iter__(self):
        return iter(sorted(self._rules.values(), key=lambda r: r.code))

    def __len__(self) -> int:
        return len(self._rules)


REGISTRY = Registry()


def rule(code: str, name: str, severity: str, verl: str = "", bad=(), good=(), apps=(), bad_options=None):
    """Decorator: register a Python check; its docstring is the rule's documentation."""

    def deco(fn):
        REGISTRY.register(
            Rule(code, name, Severity.parse(severity), fn.__doc__ or "", fn, verl, list(bad), list(good), tuple(apps), dict(bad_options or {}))
        )
        return fn

    return deco


def lazy_module(name: str):
    """The module `name`, executed on first attribute access (importlib's LazyLoader recipe).

    Rule modules reach support code that most launches never need this way (the engine
    argument schemas, for instance), which keeps the Hydra callback's start-up short."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    return module


def main_ppo(*overrides: str, env: dict[str, str] | None = None, module: str = "verl.trainer.main_ppo") -> str:
    """An example script: optional exports, then one main_ppo launch with `overrides`."""
    lines = ["#!/bin/bash"] + [f"export {k}={shlex.quote(v)}" for k, v in (env or {}).items()]
    lines.append(" ".join(["python3", "-m", module, *(shlex.quote(o) for o in overrides)]))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------- context ----

MISSING = Unknown("the key is not in the config")


class Context:
    """What a rule reads: the composed config (resolved per key), provenance, env, versions."""

    def __init__(
        self, launch: Launch, comp: Composition, versions: dict[str, Version | None], env: dict[str, EnvVar], engines: dict | None = None
    ):
        self.launch = launch
        self.comp = comp
        self.app: HydraApp = comp.app
        self.cfg: DictConfig = comp.config
        self.versions = versions  # exact versions only (verl, torch, and engines known exactly)
        self.env = env
        self.engines = engines or {}  # engine -> versions.Evidence (exact, declared range, or none)
        self.skipped_engines: set[str] = set()  # engines whose unknown release silenced a rule (VL010)
        self._cache: dict[str, object] = {}

    @property
    def verl_version(self) -> Version | None:
        return self.versions.get("verl")

    def get(self, key: str, default=MISSING):
        """The resolved value of `key` (as OmegaConf would resolve it), or an `Unknown`."""
        if key in self._cache:
            v = self._cache[key]
        else:
            v = _select(self.cfg, key)
            self._cache[key] = v
        return default if v is MISSING else v

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
        return OmegaConf.select(self.cfg, key, default=_ABSENT, throw_on_missing=False, throw_on_resolution_failure=False) is not _ABSENT

    def set_by_override(self, key: str) -> bool:
        return self.comp.last_setter(key) is not None

    def span(self, key: str) -> Span:
        """The override token that set `key` (or a parent), else the launch's app word."""
        s = self.comp.last_setter(key)
        return s.word.span if s is not None else self.launch.entry_span

    def provenance(self, key: str, _depth: int = 0) -> str:
        """Who chose the value of `key`: "script" (an override with a known value), "unknown" (an
        override whose value is only known at run time), "user-file" (the user's own config
        files), else "verl-default" (verl's shipped config). A plain interpolation `${a.b}` has
        the provenance of what it reads, the user's choice winning."""
        s = self.comp.last_setter(key)
        if s is not None:
            return "script" if s.value_unknown is None else "unknown"
        parts = key.split(".")
        if any(".".join(parts[:i]) in self.comp.user_keys for i in range(len(parts), 0, -1)):
            return "user-file"
        if _depth < 4:
            found = {self.provenance(ref, _depth + 1) for ref in _references(self.cfg, key)}
            for kind in ("script", "unknown", "user-file"):
                if kind in found:
                    return kind
        return "verl-default"

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
        if s is not None:
            return f"set by `{s.line}`" if s.value_unknown is None else "set from a value unknown before run time"
        return "the config default"

    def diag(
        self, rule_code: str, message: str, key: str = "", help: str = "", span: Span | None = None, severity: Severity | None = None
    ) -> Diagnostic:
        """A finding of rule `rule_code`, at `span` or else at the override that set `key`.

        `severity` lowers (or raises) the rule's default for this finding, e.g. when a
        version the verdict depends on is unknown."""
        r = REGISTRY.get(rule_code)
        assert r is not None, rule_code
        where = span or (self.span(key) if key else self.launch.entry_span)
        return Diagnostic(r.code, r.name, severity or r.severity, message, where, help, key)


_ABSENT = object()
_REFERENCE = re.compile(r"\$\{(?:oc\.select:)?(\.*[A-Za-z_][\w.]*)[,}]")


def _references(cfg: DictConfig, key: str) -> list[str]:
    """The absolute keys an interpolation at `key` reads (`${a.b}`, `${oc.select:a.b,x}`)."""
    node = cfg
    for part in key.split("."):
        if not isinstance(node, DictConfig) or node._is_none() or node._is_missing() or node._is_interpolation():
            return []
        node = node._get_node(part, validate_access=False)
        if node is None:
            return []
    if not node._is_interpolation():
        return []
    out = []
    for ref in _REFERENCE.findall(str(node._value())):
        dots = len(ref) - len(ref.lstrip("."))
        if dots:  # relative: `.x` is a sibling of `key`, each further dot one level up
            base = key.split(".")[: -dots]
            ref = ".".join([*base, ref[dots:]])
        out.append(ref)
    return out


def _plain_value(cfg, key: str):
    """The value at `key` read straight from the nodes when the whole path is plain (dicts down to
    a value node; no interpolation, missing value, None or list on the way), else `_SLOW`.

    Exactly what `OmegaConf.select` returns there (`ValueNode._value()`), at ~1/15 of its cost:
    rules read dozens of keys per launch, and the Hydra callback pays that at every job start.
    """
    if not isinstance(cfg, DictConfig) or "[" in key:
        return _SLOW
    node = cfg
    for part in key.split("."):
        if not part or not isinstance(node, DictConfig) or node._is_none() or node._is_missing() or node._is_interpolation():
            return _SLOW
        node = node._get_node(part, validate_access=False)
        if node is None:
            return _SLOW
    if isinstance(node, ValueNode) and not node._is_missing() and not node._is_interpolation():
        return node._value()
    return _SLOW


_SLOW = object()


def _select(cfg: DictConfig, key: str):
    v = _plain_value(cfg, key)
    if v is not _SLOW:
        return v
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


def parse_version(text: str | None) -> Version | None:
    if not text:
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def selected(code: str, name: str, select, ignore) -> bool:
    """Whether a rule (by code or name) passes --select/--ignore (codes, code prefixes or names)."""

    def match(patterns) -> bool:
        return any(code.startswith(p) or name == p for p in patterns)

    return (not select or match(select)) and not match(ignore)


def finalize(diags: Iterable[Diagnostic], select=(), ignore=(), severity: dict | None = None) -> list[Diagnostic]:
    """Select/ignore, per-rule severity overrides, de-duplication and a stable order."""
    out = {}
    for d in diags:
        if not selected(d.code, d.name, select, ignore):
            continue
        if severity and d.code in severity:
            d.severity = severity[d.code]
        out.setdefault((d.sort_key(), d.span.end_line, d.span.end_col), d)
    return [out[k] for k in sorted(out)]


def run_rules(ctx: Context, rules: Iterable[Rule]) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for r in rules:
        if r.check is None or not r.applies_to(ctx.verl_version):
            continue
        if r.apps and (ctx.app.config_name or "").removesuffix(".yaml") not in r.apps:
            continue
        out.extend(r.check(ctx))
    return out
