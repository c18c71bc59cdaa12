"""The values the shell evaluator tracks: a word's segments (text or Unknown, with where each was
written), variables, the state at a point of the script, and the commands it finds."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

import tree_sitter as ts

from ..model import Diagnostic, EnvVar, Span, Unknown, Word
from .source import Follows, Source


@dataclass(frozen=True)
class Seg:
    """A piece of one field: literal text, or an unknown, with where it was written."""

    text: str | None
    span: Span
    unknown: Unknown | None = None
    from_caller: bool = False
    expanded: bool = False  # came from a variable: its span is where the value was written
    cwd: str | None = None  # Word.cwd: built on this assumed working directory
    parts: tuple[Word, ...] = ()  # Word.parts of the unknown value it was expanded from


@dataclass
class Var:
    # A scalar is a one-element list; arrays keep one Word per element.
    words: list[Word]
    is_array: bool = False
    exported: bool = False
    assigned_at: Span | None = None
    # Branches of an if/case that left different values: (under which branch, its value; None
    # when unset there). `words` is then the unknown everything else sees; a command that reads
    # the variable is expanded once per combination (Evaluator._variants).
    variants: list[tuple[str, "Var | None"]] | None = None


@dataclass
class State:
    vars: dict[str, Var] = field(default_factory=dict)
    functions: dict[str, ts.Node] = field(default_factory=dict)
    positional: list[Word] | None = None  # None at top level: the caller's "$@"
    # The working directory (`$(pwd)`, `$PWD`, what relative paths mean), absolute; None after a
    # `cd` to a place not known statically. When the caller does not say where the script runs,
    # it is built on `cwd_base`, the first of `run_from`: the directories it may be run from.
    cwd: str | None = None
    cwd_base: str | None = None
    run_from: tuple[str, ...] = ()

    def copy(self) -> "State":
        return State(dict(self.vars), dict(self.functions), self.positional, self.cwd, self.cwd_base, self.run_from)

    def cwd_seg(self, span: Span) -> "Seg":
        """`$(pwd)` / `$PWD`: the working directory, marked when it rests on an assumption."""
        if self.cwd is None:
            return Seg(None, span, Unknown("the working directory after a `cd` to a place only known at run time"))
        return Seg(self.cwd, span, cwd=self.cwd_base)


@dataclass
class Command:
    """A simple command after expansion: env prefixes, then argument words."""

    node: ts.Node
    span: Span
    prefix_env: dict[str, EnvVar]
    words: list[Word]
    state: State
    note: str | None = None  # under which condition it runs, when not under the script's own values
    nested: bool = False  # its string argument was read as a script (`bash -c`, `eval`)
    variant: tuple[str, ...] | None = (
        None  # expanded with these branch values, one per variable, or per group the same branches set ("when line 4: `[ ... ]`")
    )
    follows: Follows | None = None  # its name is a Hydra override: what is right above it


class Expanding(Protocol):
    """What arithmetic and pattern edits ask of the expander (`expand.Expander`) they run under."""

    src: Source
    reads: set[str]

    def expand(self, node: ts.Node, state: State, quoted: bool = False) -> list[list[Seg]]: ...

    def unset(self, name: str, node: ts.Node, span: Span) -> Seg: ...


class UntakenArm(NamedTuple):
    """An if-arm the script's own values do not take: where it starts (`Evaluator.forced` takes
    it), the lines of its body, and the note its launches carry."""

    key: int
    span: Span
    note: str


@dataclass
class ScriptResult:
    source: Source
    commands: list[Command] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sourced: list[str] = field(default_factory=list)
    # Where the script may assign variables the evaluator does not see (a `source` of a file it
    # does not read, `eval` of a string it does not read, `export $(...)`): VL011 stays silent.
    hidden_assignments: list[Span] = field(default_factory=list)
    untaken: list[UntakenArm] = field(default_factory=list)


def unknown_word(span: Span, reason: str, from_caller: bool = False) -> Word:
    return Word(None, span, Unknown(reason), from_caller)


def env_of(state: State) -> dict[str, EnvVar]:
    """The exported variables of a state, as the launched process would see them."""
    out = {}
    for name, var in state.vars.items():
        if var.exported and not var.is_array and var.words:
            w = var.words[0]
            out[name] = EnvVar(name, w.text, var.assigned_at or w.span, w.unknown, True)
    return out


def field_word(f: list[Seg], span: Span) -> Word:
    """The Word of one field (its segments joined): unknown when any segment is."""
    # A word that is exactly one expanded value points where that value was written.
    if len(f) == 1 and f[0].expanded:
        s = f[0]
        return Word(s.text, s.span, s.unknown, s.from_caller, cwd=s.cwd, parts=s.parts)
    if f and all(s.expanded and s.span == f[0].span for s in f):  # pieces of one split value
        span = f[0].span
    unknown = next((s.unknown for s in f if s.unknown is not None), None)
    if unknown is not None:
        prefix = []
        for s in f:
            if s.text is None:
                break
            prefix.append(s.text)
        parts = tuple(p for s in f for p in (s.parts or (Word(s.text, s.span, s.unknown, s.from_caller),)))
        return Word(None, span, unknown, any(s.from_caller for s in f), "".join(prefix), parts=parts)
    return Word("".join(s.text or "" for s in f), span, cwd=next((s.cwd for s in f if s.cwd), None))


def expanded_seg(w: Word, span: Span) -> Seg:
    return Seg(w.text, span, w.unknown, w.from_caller, expanded=True, cwd=w.cwd, parts=w.parts)


def split_unquoted(w: Word) -> list[list[Seg]]:
    """Unquoted expansion: bash splits the value on whitespace. An unknown value is split in its
    known pieces; each unknown piece is taken to stay inside one field."""
    if w.text is None and len(w.parts) > 1:
        fields: list[list[Seg]] = [[]]
        for p in w.parts:
            if p.text is None:
                fields[-1].append(Seg(None, w.span, p.unknown, p.from_caller, expanded=True))
                continue
            for k, piece in enumerate(re.split(r"(\s+)", p.text)):
                if k % 2:
                    fields.append([])
                elif piece:
                    fields[-1].append(Seg(piece, w.span, expanded=True))
        return [f for f in fields if f]
    if w.text is None:
        return [[expanded_seg(w, w.span)]]
    parts = w.text.split()
    if len(parts) == 1 and parts[0] == w.text:
        return [[Seg(w.text, w.span, expanded=True, cwd=w.cwd)]]
    return [[Seg(p, w.span, expanded=True, cwd=w.cwd)] for p in parts]


def join_words(a: Word, b: Word, span: Span) -> Word:
    if a.text is None or b.text is None:
        return Word(None, span, a.unknown or b.unknown)
    return Word(a.text + b.text, span, cwd=a.cwd or b.cwd)


def merge_outcomes(state: State, outcomes: list[State], reason: str, labels: list[str] | None, fallback: Span) -> None:
    """Variables the outcomes disagree on become unknown; after an if/case (`labels`: each
    outcome's branch) they keep each branch's value as a variant. `fallback`: the span of a
    variable no outcome assigned."""
    names = set()
    for o in outcomes:
        names |= set(o.vars)
    for name in names:
        vals = [o.vars.get(name) for o in outcomes]
        first = vals[0]
        if all(v is first for v in vals):
            if first is not None:
                state.vars[name] = first
            continue
        texts = {None if v is None else tuple(w.text for w in v.words) for v in vals}
        if len(texts) == 1 and None not in texts and all(v.is_array == first.is_array for v in vals):
            state.vars[name] = first
            continue
        anchor = next((v for v in vals if v is not None), None)
        span = anchor.assigned_at if anchor and anchor.assigned_at else fallback
        # An array the branches extend differently (`cmd+=(...)` under an if) keeps the
        # elements they all start with: `"${cmd[@]}"` still names its program.
        common = _common_start([v.words for v in vals]) if all(v is not None and v.is_array for v in vals) else []
        state.vars[name] = Var(
            [*common, unknown_word(span, f"${name} is {reason}")],
            is_array=bool(common),
            exported=any(v.exported for v in vals if v is not None),
            assigned_at=span,
            variants=_variants(vals, labels) if labels else None,
        )
    for o in outcomes:
        for fname, body in o.functions.items():
            state.functions.setdefault(fname, body)


def _variants(vals: list[Var | None], labels: list[str]) -> list[tuple[str, Var | None]]:
    """Each outcome's value under its branch (nested variants flattened); branches that leave
    the same value are one variant, their labels joined by "or"."""
    flat: list[tuple[str, Var | None]] = []
    for var, label in zip(vals, labels):
        flat += (
            [(f"{label}, {sub}", v) for sub, v in var.variants] if var is not None and var.variants else [(label, var)]
        )
    merged: dict[tuple | None, tuple[str, Var | None]] = {}
    for label, var in flat:
        key = None if var is None else (var.is_array, tuple(w.text for w in var.words))
        merged[key] = (f"{merged[key][0]} or {label}", merged[key][1]) if key in merged else (label, var)
    return list(merged.values())


def _common_start(arrays: list[list[Word]]) -> list[Word]:
    """The elements every one of `arrays` starts with (an unknown one when it is the same word)."""
    out = []
    for ws in zip(*arrays):
        if any(w != ws[0] for w in ws):
            break
        out.append(ws[0])
    return out
