"""The rule engine: the registry, the context a rule reads, and running rules.

A rule is a code (`VL` + 3 digits; the hundreds are the family), a kebab-case name,
a default severity, where it applies (the evidence in verl's source it mirrors, checked in the
tree being linted; or a `packaging` specifier checked against the app's verl version), a
docstring that is its documentation, and bad/good example scripts that the test suite runs. Rules never see raw Hydra errors:
those are diagnostics of the composition step, documented here as rules too.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
import sys
from collections.abc import Callable, Iterable
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from omegaconf import DictConfig, OmegaConf
from omegaconf.errors import MissingMandatoryValue, OmegaConfBaseException
from omegaconf.nodes import ValueNode
from packaging.version import InvalidVersion, Version

from .compose import Composition
from .locate import HydraApp
from .model import Diagnostic, EnvVar, Launch, Severity, Span, Unknown


class Evidence(NamedTuple):
    """A piece of verl's source a rule mirrors: the regex `pattern` found in one of `files`
    (paths or globs relative to the tree root, the directory holding `verl/`)."""

    files: tuple[str, ...]
    pattern: str


@lru_cache(maxsize=1024)
def source_text(path: str | Path) -> str | None:
    """A file of a verl tree as text, read once per process (None when absent): the one reader
    of the source facts rules rest on (`Evidence` here, the tables' `requires:` facts)."""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


@lru_cache(maxsize=4096)
def tree_has(root: str, ev: Evidence) -> bool:
    """`ev` is in the verl tree at `root` (read as text, never imported; kept per tree root)."""
    rx = re.compile(ev.pattern)
    base = Path(root)
    for f in ev.files:
        paths = sorted(base.glob(f)) if any(c in f for c in "*?[") else [base / f]
        if any(rx.search(source_text(p) or "") for p in paths):
            return True
    return False


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
    # The check in verl's source the rule mirrors: it runs only on a tree holding one of these,
    # and none of `unless` (code that makes the problem moot, e.g. verl fixing the value itself).
    evidence: tuple[Evidence, ...] = ()
    unless: tuple[Evidence, ...] = ()

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

    def runs_on(self, ctx: "Context") -> bool:
        """The rule has a check and applies to this launch's verl tree and app."""
        if self.check is None or not self.applies_to(ctx.verl_version) or not self.holds_in(ctx.verl_root):
            return False
        return not self.apps or (ctx.app.config_name or "").removesuffix(".yaml") in self.apps

    def holds_in(self, root: Path | str | None) -> bool:
        """The verl tree at `root` contains the evidence the rule needs (no tree: it does not apply)."""
        if not self.evidence and not self.unless:
            return True
        if root is None:
            return False
        return (not self.evidence or any(tree_has(str(root), ev) for ev in self.evidence)) and not any(
            tree_has(str(root), ev) for ev in self.unless
        )


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


def rule(code: str, name: str, severity: str, verl: str = "", bad=(), good=(), apps=(), bad_options=None, evidence=(), unless=()):
    """Decorator: register a Python check; its docstring is the rule's documentation."""

    def deco(fn):
        REGISTRY.register(
            Rule(
                code, name, Severity.parse(severity), fn.__doc__ or "", fn, verl, list(bad), list(good), tuple(apps),
                dict(bad_options or {}),
                evidence=tuple(evidence),
                unless=tuple(unless),
            )
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


ROLLOUT_NAME = "actor_rollout_ref.rollout.name=vllm"  # verl >= 0.7 ships `name: ???`: real launches set it


def main_ppo(*overrides: str, env: dict[str, str] | None = None, module: str = "verl.trainer.main_ppo") -> str:
    """An example script: optional exports, then one main_ppo launch with `overrides` (and
    `actor_rollout_ref.rollout.name=vllm` unless they name the rollout: verl >= 0.7 requires it)."""
    if module == "verl.trainer.main_ppo" and not any(o.lstrip("+~").startswith("actor_rollout_ref.rollout.name=") for o in overrides):
        overrides = (*overrides, ROLLOUT_NAME)
    lines = ["#!/bin/bash"] + [f"export {k}={shlex.quote(v)}" for k, v in (env or {}).items()]
    lines.append(" ".join(["python3", "-m", module, *(shlex.quote(o) for o in overrides)]))
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------- context ----

MISSING = Unknown("the key is not in the config")


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
        self.engines = engines or {}  # engine -> versions.Evidence (exact, declared range, or none)
        self.skipped_engines: set[str] = set()  # engines whose unknown release silenced a rule (VL010)
        # live (the Hydra callback): the config and env are the real ones, OmegaConf resolves as at
        # run time. Static: `${oc.env:X}` reads the script's env, and X unset there is unknown.
        self.live = live
        self.unknown_reads: list[str] | None = None  # when a list: the keys read that the script left to run time
        if not live:
            OmegaConf.register_new_resolver("oc.env", _oc_env, replace=True)  # again per launch: a resolver reset elsewhere undoes it
        self._cache: dict[str, object] = {}

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

# The launch's env while a static read resolves (None: OmegaConf's own `oc.env`), and the
# variables it found unknown.
_STATIC_ENV: ContextVar[tuple[dict[str, EnvVar], list[str]] | None] = ContextVar("verl_lint_static_env", default=None)
_NO_DEFAULT = object()


def _oc_env(key: str, default=_NO_DEFAULT):
    """`oc.env` that, during a static read, answers from the launch's env: a variable the script
    does not set (or sets to a value unknown before run time) is unknown, never the default or
    this process's own value. Outside a static read it is OmegaConf's `oc.env`."""
    from omegaconf.resolvers import oc

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
        how = "sets it to a value only known at run time" if unknown[0] in env else "does not set it (it depends on the machine)"
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
        if r.runs_on(ctx):
            out.extend(r.check(ctx))
    return out
