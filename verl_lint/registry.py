"""The rule protocol: the registry of every rule (its code, name, severity, where it applies,
documentation and examples). `rules.pack.check` runs them over a launch's `Context`.

A rule is a code (`VL` + 3 digits; the hundreds are the family), a kebab-case name,
a default severity, where it applies (the evidence in verl's source it mirrors, checked in the
tree being linted; or a `packaging` specifier checked against the app's verl version), a
docstring that is its documentation, and bad/good example scripts that the test suite runs.
Front ends (the shell reader, composition) report through rules of the same registry.
"""

from __future__ import annotations

import importlib.util
import shlex
import sys
import textwrap
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from packaging.version import InvalidVersion, Version

from .cache import memo
from .evidence import Evidence, tree_has
from .model import Diagnostic, Severity, Span


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


@dataclass(eq=False, repr=False)  # an entity, compared by identity: cheaper to define
class Rule:
    """A registered rule: what it checks and where it applies, its documentation and examples."""

    code: str
    name: str
    severity: Severity
    doc: str
    check: Callable[[Context], Iterable[Diagnostic]] | None  # None: reported by a front end (`finding`)
    verl: str = ""  # a packaging specifier of the verl releases it applies to ('' for all)
    # Example scripts: bad ones must produce this rule, good ones nothing. An example may be
    # a (script, verl specifier) pair when it only holds for some releases.
    bad: list[str | tuple[str, str]] = field(default_factory=list)
    good: list[str | tuple[str, str]] = field(default_factory=list)
    # verl's entry points (modules) whose code path, trainer and workers, the rule was verified on
    # (empty: any). A launch of another of verl's own entry points is not judged (VL012 says so
    # where the rule would report); a project's own entry point is taken at its config's word.
    entry_points: tuple[str, ...] = ()
    bad_options: dict = field(default_factory=dict)  # Options fields the bad examples need (e.g. a tiny timeout)
    live: bool = False  # found only in a running process (callback, doctor): no example scripts
    # The check in verl's source the rule mirrors: it runs only on a tree holding one of these,
    # and none of `unless` (code that makes the problem moot, e.g. verl fixing the value itself).
    evidence: tuple[Evidence, ...] = ()
    unless: tuple[Evidence, ...] = ()
    # Codes whose finding at the same token this rule's finding replaces: it says the same thing
    # better (a renamed key explains Hydra's bare "Could not override"). `pack.check` applies it.
    supersedes: tuple[str, ...] = ()

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
        for label, evs in (("Runs on a verl tree whose source has", self.evidence), ("Not where it has", self.unless)):
            if evs:
                out.append(f"{label}: " + " or ".join(f"`/{ev.pattern}/` in {', '.join(ev.files)}" for ev in evs) + ".")
        if self.live:
            out.append("Found only in a running process (the Hydra callback, `verl-lint doctor`).")
        if self.supersedes:
            out.append(f"Its finding replaces one of {', '.join(self.supersedes)} at the same token.")
        if self.entry_points:
            out.append(
                f"Judges launches of {', '.join(f'`{m}`' for m in self.entry_points)} whatever their config is named, and of a "
                "project's own entry point; verl's other entry points run other code and are not judged (VL012 says so)."
            )
        out += ["", self.body] if self.body else []
        for title, examples in (("Bad", self.bad), ("Good", self.good)):
            for ex in examples:
                script, spec = ex if isinstance(ex, tuple) else (ex, "")
                if len(script) > 2000:
                    script = script[:2000] + "\n..."
                script = script.encode("utf-8", "backslashreplace").decode()  # an invalid-UTF-8 example, shown escaped
                out += [
                    "",
                    f"## {title} example{f' (verl {spec})' if spec else ''}",
                    "",
                    "```bash",
                    script.rstrip(),
                    "```",
                ]
        return "\n".join(out) + "\n"

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
        to run time, computed once per launch: `pack.check` and VL300 (which lists the size
        checks that could not decide) both ask."""
        hit = ctx.rule_runs.get(self.code)
        if hit is None:
            assert self.check is not None, f"{self.code} is reported by a front end, not run"
            outer, ctx.unknown_reads = ctx.unknown_reads, []
            try:
                found = list(self.check(ctx))
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
        if code_or_name.upper() in self._rules:
            return self._rules[code_or_name.upper()]
        return next((r for r in self._rules.values() if r.name == code_or_name.lower()), None)

    def __iter__(self):
        return iter(sorted(self._rules.values(), key=lambda r: r.code))

    def __len__(self) -> int:
        return len(self._rules)


REGISTRY = Registry()

# Codes of rules that are gone, and what reports their findings now: a `select`/`ignore` setting
# written for an older verl-lint that names one still loads (it matches no rule).
RETIRED = {
    "VL201": "VL701-VL706",
    "VL202": "VL701-VL706",  # vLLM's enable_expert_parallel: read from verl's engine-argument assembly
    "VL219": "VL233",
    "VL220": "VL233",  # KL settings without their switch: derived from the code's conditions
}


def declare(
    code: str,
    name: str,
    severity: str,
    doc: str,
    check=None,
    verl: str = "",
    bad=(),
    good=(),
    entry_points=(),
    bad_options=None,
    evidence=(),
    unless=(),
    live: bool = False,
    supersedes=(),
) -> Rule:
    """Register a rule: the one way in. Without `check` it is reported by a front end (the shell
    reader, composition, the runner, the live allocator check) through the returned `Rule`."""
    return REGISTRY.register(
        Rule(
            code,
            name,
            Severity.parse(severity),
            doc,
            check,
            verl,
            list(bad),
            list(good),
            tuple(entry_points),
            dict(bad_options or {}),
            live=live,
            evidence=tuple(evidence),
            unless=tuple(unless),
            supersedes=tuple(supersedes),
        )
    )


def rule(code: str, name: str, severity: str, **where):
    """Decorator: `declare` a rule checked by the decorated function; its docstring is the
    rule's documentation. `where`: verl, bad, good, entry_points, bad_options, evidence, unless, supersedes."""

    def deco(fn):
        declare(code, name, severity, fn.__doc__ or "", fn, **where)
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
