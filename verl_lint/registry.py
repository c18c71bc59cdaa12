"""The rule protocol: the registry of every rule (its code, name, severity, where it applies,
documentation and examples). `rules.pack.check` runs them over a launch's `Context`.

A rule is a code (`VL` + 3 digits; the hundreds are the family), a kebab-case name,
a default severity, where it applies (the evidence in verl's source it mirrors, checked in the
tree being linted; or a `packaging` specifier checked against the app's verl version), a
docstring that is its documentation, and bad/good example scripts that the test suite runs.
Front ends (the shell reader, composition) report through rules of the same registry.
"""

from __future__ import annotations

import fnmatch
import functools
import importlib.util
import re
import sys
import textwrap
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from packaging.version import InvalidVersion, Version

from .cache import memo
from .evidence import Evidence, consulted, tree_has
from .model import Diagnostic, Severity, Span

if TYPE_CHECKING:
    from .examples import Example


class _App(Protocol):
    def verl_module(self) -> str | None: ...


class Context(Protocol):
    """What the registry reads of a launch's context (`config.context.Context` is the one rules
    get): the base layer owns the protocol, the config layer implements it."""

    app: _App
    unknown_reads: list[str] | None
    rule_runs: dict[str, tuple[list, list[str]]]

    @property
    def verl_version(self) -> Version | None: ...

    @property
    def verl_root(self) -> Path | None: ...

    def settings_for(self, subject: Subject) -> list: ...  # the settings a rule's subject selects


VALUES = ("set", "add", "force_add")  # the kinds of setting that give a key a value
EVERY = (*VALUES, "delete", "group", "hydra")  # every kind of setting (`config.compose.override_kind`)
_GLOB = re.compile(r"[*?\[]")


@dataclass(frozen=True, eq=False)  # one per rule, never compared: no generated __eq__/__hash__
class Subject:
    """What a rule judges: the settings the user chose (the script's overrides, the values the
    project's own config files chose), each with its value, provenance and span, whose dotted key
    matches one of `keys`. The core (`Context.settings_for`) selects them and hands them to the
    rule's check, in the order they take effect; no rule scans the settings itself."""

    keys: tuple[str, ...] = ("*",)  # exact keys, `a.b.*` (any key under a.b), or fnmatch globs
    kinds: tuple[str, ...] = VALUES
    applied: bool | None = True  # True: Hydra applied it; False: Hydra rejected it; None: either
    adding: bool = False  # only settings that add a key (`+key`, a project file's new key, an override of that)
    last: bool = False  # only each key's last setting (the one in effect), the latest first
    source: str | None = (
        None  # "script": the command line's overrides only; "file": a project file's values; None: both
    )

    @functools.cached_property
    def _split(self) -> tuple[frozenset[str], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
        """The patterns by kind, split once: the callback matches every record against every setting."""
        exact = frozenset(p for p in self.keys if not _GLOB.search(p))
        prefixes = tuple(
            p[:-1] for p in self.keys if p.endswith(".*") and not _GLOB.search(p[:-2])
        )  # "a.b.*" -> "a.b."
        # "*.name" -> ".name": fnmatch's `*` takes any text, dots included, so it is endswith
        suffixes = tuple(p[1:] for p in self.keys if p.startswith("*") and len(p) > 1 and not _GLOB.search(p[1:]))
        globs = tuple(p for p in self.keys if _GLOB.search(p) and p[:-1] not in prefixes and p[1:] not in suffixes)
        return exact, prefixes, suffixes, globs

    def match(self, key: str) -> str | None:
        """The part of `key` a trailing `.*` matched ('' for an exact or glob match), or None.
        Remembered per key: every rule's subject is matched against every setting of every launch."""
        memo = self._matched
        if key in memo:
            return memo[key]
        found = memo[key] = self._match(key)
        return found

    @functools.cached_property
    def _matched(self) -> dict[str, str | None]:
        return {}

    @functools.cached_property
    def matches(self) -> Callable[[str], bool]:
        """Whether a key is one the subject judges, as `match(key) is not None`, by the cheapest
        test its patterns allow: most subjects are exact keys, some any key (`*`)."""
        exact, prefixes, suffixes, globs = self._split
        if "*" in globs:
            return lambda key: True
        if not (prefixes or suffixes or globs):
            return exact.__contains__
        return lambda key: self.match(key) is not None

    def _match(self, key: str) -> str | None:
        exact, prefixes, suffixes, globs = self._split
        if key in exact:
            return ""
        for base in prefixes:
            if key.startswith(base):
                return key[len(base) :]
        if suffixes and key.endswith(suffixes):
            return ""
        return "" if any(fnmatch.fnmatchcase(key, g) for g in globs) else None


@dataclass(eq=False, repr=False)  # an entity, compared by identity: cheaper to define
class Rule:
    """A registered rule: what it checks and where it applies, its documentation and examples."""

    code: str
    name: str
    severity: Severity
    doc: str
    # None: reported by a front end (`finding`). With a `subject`, it is called with the settings
    # the subject selects too: `check(ctx, settings)`.
    check: Callable[..., Iterable[Diagnostic]] | None
    verl: str = ""  # a packaging specifier of the verl releases it applies to ('' for all)
    # verl's entry points (modules) whose code path, trainer and workers, the rule was verified on
    # (empty: any). A launch of another of verl's own entry points is not judged (a note says so
    # where the rule would report); a project's own entry point is taken at its config's word.
    entry_points: tuple[str, ...] = ()
    live: bool = False  # found only in a running process (callback, doctor): no example fixtures
    # The check in verl's source the rule mirrors: it runs only on a tree holding one of these,
    # and none of `unless` (code that makes the problem moot, e.g. verl fixing the value itself).
    evidence: tuple[Evidence, ...] = ()
    unless: tuple[Evidence, ...] = ()
    # Codes whose finding at the same token this rule's finding replaces: it says the same thing
    # better (a renamed key explains Hydra's bare "Could not override"). `pack.check` applies it.
    supersedes: tuple[str, ...] = ()
    # What the front ends ask of a rule, read here and nowhere else (never a list of codes):
    snippets: bool = True  # judged in a doc's shell snippets too (False: they are pseudo-bash, set variables elsewhere)
    # The Hydra callback runs it without `select` naming it (False: it reads the whole verl tree,
    # too slow for every job start; `check` and `run` always run it).
    in_callback: bool = True
    engines: tuple[str, ...] = ()  # the engines whose release its verdict can depend on (named when one is unknown)
    size_check: bool = False  # a size check: the size note lists it where a run-time value kept it from deciding
    # Its finding holds whatever a broken `\` continuation cuts off below the launch: python or
    # Hydra stops before anything the cut could change is read.
    before_the_cut: bool = False
    # What the finding says about the analysis itself: "" (a finding about the script), "launch"
    # (a launch not analysable), "file" (a file not analysed), "limit" (a launch or file cut by a
    # limit), "unparsed" (a file not read as the text it claims to be: never rewritten by --fix).
    outcome: str = ""
    producer: Family | None = None  # the analysis that finds it, with other rules' findings (see `Family`)
    subject: Subject | None = None  # the settings it judges, handed to its check (None: it reads `ctx` only)

    @property
    def consults(self) -> tuple[tuple[str, Evidence], ...]:
        """The evidence its check reads in verl's source (`evidence.consulted`), beyond the
        `evidence` and `unless` that gate the whole rule: (the constant's name, the evidence)."""
        gates = {*self.evidence, *self.unless}
        return tuple((n, ev) for n, ev in consulted(self.check) if ev not in gates) if self.check else ()

    def evidence_lines(self, quote: str = "") -> list[str]:
        """Its evidence as lines (code in `quote`): what gates the rule, then the list of what its check reads."""

        def show(ev: Evidence) -> str:
            return f"{quote}/{ev.pattern}/{quote} in {', '.join(ev.files)}"

        out = []
        for label, evs in (("Runs on a verl tree whose source has", self.evidence), ("Not where it has", self.unless)):
            if evs:
                out.append(f"{label}: " + " or ".join(show(ev) for ev in evs) + ".")
        if self.consults:
            out += ["", "What it judges depends on whether the verl tree's source has:"]
            out += [f"- {show(ev)}" + (f" ({name})" if name else "") for name, ev in self.consults]
        return out

    def finding(
        self, message: str, span: Span, help: str = "", key: str = "", severity: Severity | None = None
    ) -> Diagnostic:
        """A finding of this rule at `span` (`severity` overrides the rule's default for this one)."""
        return Diagnostic(self.code, self.name, severity or self.severity, message, span, help, key)

    @property
    def summary(self) -> str:
        return self.doc.strip().splitlines()[0].strip() if self.doc.strip() else self.name

    @property
    def body(self) -> str:
        """The documentation below the summary line, dedented (markdown)."""
        lines = self.doc.strip("\n").splitlines()
        return textwrap.dedent("\n".join(lines[1:])).strip()

    def page(self) -> str:
        """The rule's documentation page in markdown: `verl-lint rule`, docs/rules/, SARIF help."""
        out = [
            f"# {self.code} {self.name}",
            "",
            self.summary,
            "",
            f"Severity: {self.severity}. verl releases: {self.verl or 'all'}.",
        ]
        out += self.evidence_lines("`")
        if self.live:
            out.append("Found only in a running process (the Hydra callback, `verl-lint doctor`).")
        elif not self.in_callback:
            out.append("The Hydra callback runs it only when `select` names it (it reads the whole verl tree).")
        if self.engines:
            out.append(f"Its verdict depends on the release of {', '.join(e.replace('_', '-') for e in self.engines)}.")
        if self.supersedes:
            out.append(f"Its finding replaces one of {', '.join(self.supersedes)} at the same token.")
        if self.entry_points:
            note = REGISTRY.get("rules-not-run-for-entry-point")  # the catalogue's note (declared by name there)
            out.append(
                f"Judges launches of {', '.join(f'`{m}`' for m in self.entry_points)} whatever their config is named, "
                "and of a "
                "project's own entry point; verl's other entry points run other code and are not judged "
                f"({note.code if note is not None else 'a note'} says so)."
            )
        out += ["", self.body] if self.body else []
        for ex in (*self.bad, *self.good):
            out += ["", f"## {ex.kind.capitalize()} example{f' (verl {ex.verl})' if ex.verl else ''}"]
            out += ["", ex.note] if ex.note else []
            for name, text in ex.shown():
                out += ["", f"`{name}`:"] if name != "run.sh" else []
                out += ["", f"```{'bash' if name == 'run.sh' else 'yaml'}", text.rstrip(), "```"]
        return "\n".join(out) + "\n"

    @property
    def bad(self) -> tuple[Example, ...]:
        """The example fixtures that must produce this rule (rules/examples/CODE/bad-N/)."""
        return self._fixtures("bad")

    @property
    def good(self) -> tuple[Example, ...]:
        """The example fixtures that must produce nothing (rules/examples/CODE/good-N/)."""
        return self._fixtures("good")

    def _fixtures(self, kind: str) -> tuple[Example, ...]:
        from .examples import examples_of  # fixtures: read by pages and tests, never on the lint path

        return tuple(ex for ex in examples_of(self.code) if ex.kind == kind)

    def examples(self, kind: str, version: Version) -> list[Example]:
        """The bad or good example fixtures that hold for `version`."""
        return [ex for ex in (self.bad if kind == "bad" else self.good) if spec_contains(ex.verl, version)]

    def applies_to(self, version: Version | None) -> bool:
        if not self.verl:
            return True
        if version is None:
            return False  # a version-dependent rule never guesses
        return self.verl in REGISTRY.specs_containing(version)

    def runs_on(self, ctx: Context) -> bool:
        """The rule has a check and applies to this launch's verl tree and entry point, whatever
        its config is named: a rule reads the composed config's content."""
        return self.checks_tree(ctx) and self.judges_entry(ctx)

    def checks_tree(self, ctx: Context) -> bool:
        """The rule has a check and applies to this launch's verl tree (release and evidence)."""
        return self.check is not None and self.applies_to(ctx.verl_version) and self.holds_in(ctx.verl_root)

    def judges_entry(self, ctx: Context) -> bool:
        """The launch's entry point runs the code the rule was verified on (see `entry_points`)."""
        if not self.entry_points:
            return True
        module = ctx.app.verl_module()
        return module is None or module in self.entry_points

    def run(self, ctx: Context) -> tuple[list[Diagnostic], list[str]]:
        """The rule's findings on the launch of `ctx` and the keys it read that the script leaves
        to run time, computed once per launch: `pack.check` and the size note (which lists the size
        checks that could not decide) both ask."""
        hit = ctx.rule_runs.get(self.code)
        if hit is None:
            assert self.check is not None, f"{self.code} is reported by a front end, not run"
            outer, ctx.unknown_reads = ctx.unknown_reads, []
            try:
                found = list(
                    self.check(ctx) if self.subject is None else self.check(ctx, ctx.settings_for(self.subject))
                )
            finally:
                reads, ctx.unknown_reads = ctx.unknown_reads, outer
            hit = ctx.rule_runs[self.code] = (found, reads)
        return hit

    def holds_in(self, root: Path | str | None) -> bool:
        """The verl tree at `root` contains the evidence the rule needs (no tree: it does not apply)."""
        if not self.evidence and not self.unless:
            return True
        if root is None:
            return False
        return (not self.evidence or any(tree_has(str(root), ev) for ev in self.evidence)) and not any(
            tree_has(str(root), ev) for ev in self.unless
        )


class Family:
    """One analysis that finds what several rules report (an allocator variable's settings, the
    engine keyword arguments, the engines' environment variables): declared once with `@family`,
    named as the `producer` of each rule it finds, run once per launch. It yields the registry's
    `Diagnostic`s (`ctx.diag`), whatever their code; each member rule reports those of its code."""

    def __init__(self, analyse: Callable[..., Iterable[Diagnostic]], subject: Subject | None = None) -> None:
        self.analyse = analyse
        self.subject = subject  # the settings it judges, handed to it as for a rule's check
        self.codes: list[str] = []  # its members, as they are declared
        self._runs: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # Context -> its findings

    def findings(self, ctx: Context) -> list[Diagnostic]:
        """Every finding of the analysis on the launch of `ctx` (computed once per Context)."""
        hit = self._runs.get(ctx)
        if hit is None:
            found = self.analyse(ctx) if self.subject is None else self.analyse(ctx, ctx.settings_for(self.subject))
            hit = self._runs[ctx] = list(found)
            stray = {d.code for d in hit} - set(self.codes)
            assert not stray, f"{self.analyse.__qualname__} found {stray}, which are not its members' codes"
        return hit

    def member(self, code: str) -> Callable[[Context], list[Diagnostic]]:
        """The check of member rule `code`: the analysis's findings of that code."""
        self.codes.append(code)
        return lambda ctx: [d for d in self.findings(ctx) if d.code == code]


def family(analyse: Callable[..., Iterable[Diagnostic]] | None = None, *, subject: Subject | None = None):
    """Decorator (bare, or with the `subject` it judges): the analysis behind several rules, each
    declared with `producer=` it."""
    if analyse is None:
        return lambda fn: Family(fn, subject)
    return Family(analyse, subject)


def spec_contains(spec: str, version: Version) -> bool:
    """`version` is in the packaging specifier `spec` (pre-releases count: dev checkouts)."""
    from packaging.specifiers import (
        SpecifierSet,
    )  # ~10 ms; a warm run answers from the cache (Registry.specs_containing)

    return SpecifierSet(spec).contains(version, prereleases=True)


class Registry:
    """The explicit, greppable list of rules (no import magic)."""

    def __init__(self) -> None:
        self._rules: dict[str, Rule] = {}
        self._containing: dict[str, frozenset[str]] = {}  # version -> the specifiers containing it
        self._in_order: tuple[Rule, ...] | None = None  # by code: every launch iterates them

    def register(self, rule: Rule) -> Rule:
        if rule.code in self._rules:
            raise ValueError(f"duplicate rule code {rule.code}")
        self._rules[rule.code] = rule
        self._containing.clear()
        self._in_order = None
        return rule

    def unregister(self, code: str) -> None:
        self._rules.pop(code, None)
        self._containing.clear()
        self._in_order = None

    def specs_containing(self, version: Version) -> frozenset[str]:
        """The rules' verl specifiers that contain `version`, kept on disk per version and set of
        specifiers: a process that only lints (the Hydra callback) then never imports
        packaging.specifiers (~10 ms)."""
        key = str(version)
        hit = self._containing.get(key)
        if hit is None:
            specs = sorted({r.verl for r in self._rules.values() if r.verl})
            hit = memo(
                "specifiers",
                "\0".join([key, *specs]),
                lambda: frozenset(s for s in specs if spec_contains(s, version)),
                frozenset,
            )
            self._containing[key] = hit
        return hit

    def get(self, code_or_name: str) -> Rule | None:
        """A rule by its code (any case: `vl101`, as select and ignore take it) or its name."""
        code = code_or_name.upper()
        if code in self._rules:
            return self._rules[code]
        name = code_or_name.lower()
        return next((r for r in self._rules.values() if r.name == name), None)

    def __iter__(self):
        if self._in_order is None:
            self._in_order = tuple(sorted(self._rules.values(), key=lambda r: r.code))
        return iter(self._in_order)

    def __len__(self) -> int:
        return len(self._rules)


REGISTRY = Registry()


def declare(
    code: str,
    name: str,
    severity: str,
    doc: str,
    check=None,
    verl: str = "",
    entry_points=(),
    evidence=(),
    unless=(),
    live: bool = False,
    supersedes=(),
    producer: Family | None = None,
    **facts,
) -> Rule:
    """Register a rule: the one way in. Its check is `check`, or its findings in the analysis of
    its `producer` (a `Family`); without either it is reported by a front end (the shell reader,
    composition, the runner, the live allocator check) through the returned `Rule`."""
    if producer is not None:
        assert check is None, f"{code}: a rule of a family has no check of its own"
        check = producer.member(code)
    return REGISTRY.register(
        Rule(
            code,
            name,
            Severity.parse(severity),
            doc,
            check,
            verl,
            tuple(entry_points),
            live=live,
            evidence=tuple(evidence),
            unless=tuple(unless),
            supersedes=tuple(supersedes),
            producer=producer,
            **facts,
        )
    )


def rule(code: str, name: str, severity: str, **where):
    """Decorator: `declare` a rule checked by the decorated function (with `producer=`: found by
    that `Family`, the function only documents it); its docstring is the rule's documentation.
    `where`: verl, entry_points, evidence, unless, supersedes, and the facts the front ends read
    (`Rule.snippets` ... `Rule.subject`). Its bad/good examples are fixtures: rules/examples/CODE/
    (see `examples.py`)."""

    def deco(fn):
        declare(code, name, severity, fn.__doc__ or "", None if where.get("producer") else fn, **where)
        return fn

    return deco


def lazy_module(name: str):
    """The module `name`, executed on first attribute access (importlib's LazyLoader recipe).

    Rule modules reach support code that most launches never need this way (the engine
    argument schemas, for instance), which keeps the Hydra callback's start-up short."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(name)
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
    import shlex  # only the rules' example scripts need it, never a lint

    if module == "verl.trainer.main_ppo" and not any(
        o.lstrip("+~").startswith("actor_rollout_ref.rollout.name=") for o in overrides
    ):
        overrides = (*overrides, ROLLOUT_NAME)
    lines = ["#!/bin/bash"] + [f"export {k}={shlex.quote(v)}" for k, v in (env or {}).items()]
    lines.append(" ".join(["python3", "-m", module, *(shlex.quote(o) for o in overrides)]))
    return "\n".join(lines) + "\n"


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
    out: dict[tuple, Diagnostic] = {}
    for d in diags:
        if not selected(d.code, d.name, select, ignore):
            continue
        if severity and d.code in severity:
            d.severity = severity[d.code]
        out.setdefault((d.sort_key(), d.span.end_line, d.span.end_col), d)
    return [out[k] for k in sorted(out)]
