"""Bash front end: tree-sitter-bash plus a small constant-propagating evaluator.

The evaluator walks the syntax tree in order and tracks variables over the safe
subset of bash (assignments, export/local/readonly/declare, parameter expansion
with defaults, `$(( ))` arithmetic, arrays, quoting, functions, `source` of files
inside the allowed roots). Whatever it cannot know becomes an explicit `Unknown`
carrying its reason. It never executes anything: command substitutions, `eval`,
process substitutions and here-docs are only ever read as syntax.
"""

from __future__ import annotations

import bisect
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import tree_sitter as ts
import tree_sitter_bash as tsb

from ..launch.locate import places, working_dirs
from ..model import Diagnostic, EnvVar, Span, Unknown, Word
from ..rules.script import BASH_PARSE_ERROR, BROKEN_LINE_CONTINUATION, VARIABLE_USED_BEFORE_ASSIGNMENT

_PARSER: ts.Parser | None = None
MAX_SOURCE_DEPTH = 8
MAX_CALL_DEPTH = 16


def parser() -> ts.Parser:
    global _PARSER
    if _PARSER is None:
        _PARSER = ts.Parser(ts.Language(tsb.language()))
    return _PARSER


class Source:
    """A script's text with the byte/character bookkeeping spans need."""

    def __init__(self, path: str, text: str):
        self.path = path
        self.text = text
        self.data = text.encode("utf-8", "surrogatepass")
        self.tree = parser().parse(self.data)
        self._line_starts = [0] + [m.end() for m in re.finditer(b"\n", self.data)]
        self._init_points()

    def region(self, start: int, end: int) -> "Source":
        """The same file with only bytes start..end parsed (a string run by `bash -c` or `eval`,
        a here-document fed to bash): spans stay those of the file."""
        sub = object.__new__(Source)
        sub.path, sub.text, sub.data, sub._line_starts = self.path, self.text, self.data, self._line_starts
        p = parser()
        p.included_ranges = [ts.Range(self._ts_point(start), self._ts_point(end), start, end)]
        try:
            sub.tree = p.parse(self.data)
        finally:
            p.included_ranges = []
        sub._init_points()
        return sub

    def _ts_point(self, byte: int) -> tuple[int, int]:
        row = bisect.bisect_right(self._line_starts, byte) - 1
        return (row, byte - self._line_starts[row])

    def _init_points(self) -> None:
        self._ascii = self.data.isascii()  # columns are byte offsets then (no decoding per span)
        self._points: dict[int, tuple[int, int]] = {}

    def span(self, start_byte: int, end_byte: int) -> Span:
        line, col = self._point(start_byte)
        end_line, end_col = self._point(end_byte)
        return Span(self.path, line, col, end_line, end_col, start_byte, end_byte)

    def node_span(self, node: ts.Node) -> Span:
        return self.span(node.start_byte, node.end_byte)

    def node_text(self, node: ts.Node) -> str:
        return self.data[node.start_byte : node.end_byte].decode("utf-8", "replace")

    def _point(self, byte: int) -> tuple[int, int]:
        hit = self._points.get(byte)
        if hit is None:
            row = bisect.bisect_right(self._line_starts, byte) - 1
            start = self._line_starts[row]
            col = byte - start + 1 if self._ascii else len(self.data[start:byte].decode("utf-8", "replace")) + 1
            hit = self._points[byte] = (row + 1, col)
        return hit

    def line_text(self, line: int) -> str:
        lines = self.text.splitlines()
        return lines[line - 1] if 0 < line <= len(lines) else ""


# ---------------------------------------------------------------- values ----


@dataclass(frozen=True)
class Seg:
    """A piece of one field: literal text, or an unknown, with where it was written."""

    text: str | None
    span: Span
    unknown: Unknown | None = None
    from_caller: bool = False
    expanded: bool = False  # came from a variable: its span is where the value was written
    cwd: str | None = None  # Word.cwd: built on this assumed working directory


Field = list  # list[Seg]; one argument word after expansion


@dataclass
class Var:
    # A scalar is a one-element list; arrays keep one Word per element.
    words: list[Word]
    is_array: bool = False
    exported: bool = False
    assigned_at: Span | None = None


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


@dataclass
class ScriptResult:
    source: Source
    commands: list[Command] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    sourced: list[str] = field(default_factory=list)


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


# ------------------------------------------------------------- evaluator ----

_ARITH_OPS = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "**": lambda a, b: a**b if b >= 0 and b < 64 else None,
    "/": lambda a, b: None if b == 0 else int(a / b) if (a < 0) != (b < 0) else a // b,
    "%": lambda a, b: None if b == 0 else a - b * (int(a / b) if (a < 0) != (b < 0) else a // b),
    "<": lambda a, b: int(a < b),
    ">": lambda a, b: int(a > b),
    "<=": lambda a, b: int(a <= b),
    ">=": lambda a, b: int(a >= b),
    "==": lambda a, b: int(a == b),
    "!=": lambda a, b: int(a != b),
    "&&": lambda a, b: int(bool(a) and bool(b)),
    "||": lambda a, b: int(bool(a) or bool(b)),
    "&": lambda a, b: a & b,
    "|": lambda a, b: a | b,
    "^": lambda a, b: a ^ b,
    "<<": lambda a, b: a << b if 0 <= b < 64 else None,
    ">>": lambda a, b: a >> b if 0 <= b < 64 else None,
}

# A Hydra override (`a.b=1`, `+a.b=1`, `~a.b`) cannot be a command name: seen as one, the
# command it belonged to was cut off above it.
_OVERRIDE_LIKE = re.compile(r"^(\+\+|\+|~)?[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_@\-]+)+(=|$)")

# Words of substitutions that only compute a directory of the script (see _directory_of).
_DIR_WORDS = {"cd", "pwd", "dirname", "realpath", "readlink", "-f", "-P", "-L", "--", "&&"}
_SCRIPT_REFS = {"0", "{0}", "{BASH_SOURCE[0]}", "{BASH_SOURCE}", "BASH_SOURCE", "BASH_SOURCE[0]"}

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"', "a": "\a", "e": "\x1b", "0": "\0"}


class Evaluator:
    def __init__(self, source: Source, allowed_roots: list[Path], depth: int = 0):
        self.src = source
        self.allowed_roots = allowed_roots
        self.depth = depth
        self.result = ScriptResult(source)
        self._assigned_later: dict[str, int] = {}
        self._reported_unset: set[tuple[str, int]] = set()
        self._call_depth = 0
        self._called: set[str] = set()
        self._note: str | None = None  # set while evaluating an if-arm that is not taken

    # -- entry --------------------------------------------------------------
    def run(self, state: State | None = None) -> tuple[ScriptResult, State]:
        state = state or State(cwd=str(Path(self.src.path).resolve().parent))
        self._collect_assignments(self.src.tree.root_node)
        self._report_parse_errors(self.src.tree.root_node)
        self._block(self.src.tree.root_node.children, state)
        # Launches inside functions that are never called are still launches.
        for name, body in list(state.functions.items()):
            if name not in self._called:
                self._called.add(name)
                self._call(body, state.copy(), [])
        return self.result, state

    def _collect_assignments(self, root: ts.Node) -> None:
        stack = [root]
        while stack:
            n = stack.pop()
            if n.type == "variable_assignment":
                name = n.child_by_field_name("name")
                if name is not None:
                    key = self.src.node_text(name).split("[")[0]
                    self._first_assignment(key, n.start_byte)
            elif n.type in ("for_statement",):
                v = n.child_by_field_name("variable")
                if v is not None:
                    self._first_assignment(self.src.node_text(v), n.start_byte)
            elif n.type == "declaration_command":  # `declare -A X`, `local X`: declared here, on purpose
                for c in n.named_children:
                    if c.type == "variable_name":
                        self._first_assignment(self.src.node_text(c), n.start_byte)
            stack.extend(n.children)

    def _first_assignment(self, name: str, byte: int) -> None:
        # The walk is not in source order: keep the earliest. `X="$X --flag"` uses X inside
        # its own first assignment, which is not a use before assignment.
        self._assigned_later[name] = min(byte, self._assigned_later.get(name, byte))

    def _report_parse_errors(self, root: ts.Node) -> None:
        """One finding per innermost ERROR / MISSING node, located on its first line, unless
        bash itself parses the script (a gap of the grammar, never a finding)."""
        if not root.has_error or bash_accepts(self.src.data):
            return
        stack = [root]
        while stack:
            n = stack.pop()
            inner = [c for c in n.children if c.has_error or c.is_missing or c.type == "ERROR"]
            if (n.type == "ERROR" or n.is_missing) and not any(c.type == "ERROR" or c.is_missing for c in _descendants(n)):
                if self._grammar_gap(n):
                    continue
                what = f"missing {n.type!r}" if n.is_missing else "this text is not valid bash"
                newline = self.src.data.find(b"\n", n.start_byte)
                end = n.end_byte if newline < 0 else min(n.end_byte, newline)
                self.result.diagnostics.append(
                    BASH_PARSE_ERROR.finding(f"bash syntax error: {what}; the rest of the script is still analysed", self.src.span(n.start_byte, max(end, n.start_byte)), help="fix the syntax; `bash -n SCRIPT` shows what bash thinks")
                )
                continue
            stack.extend(reversed(inner))

    def _grammar_gap(self, n: ts.Node) -> bool:
        """Errors tree-sitter-bash reports where bash itself is fine (never worth a finding).

        A trailing `\\` continuation at the end of the file, and `${V:-[...]}` defaults that
        the grammar cannot parse; the evaluator treats such an expansion as unknown."""
        if self.src.data[n.start_byte :].strip() in (b"", b"\\"):  # `\` at EOF, newline or not
            return True
        p = n.parent
        while p is not None:
            if p.type == "expansion":
                return True
            p = p.parent
        return False

    # -- statements ---------------------------------------------------------
    def _block(self, nodes, state: State) -> None:
        for n in nodes:
            self._stmt(n, state)

    def _stmt(self, n: ts.Node, state: State) -> None:
        t = n.type
        if t in ("comment", "ERROR") or not n.is_named:
            if t == "ERROR":
                self._block(n.children, state)
            return
        if t == "variable_assignment":
            self._assign(n, state)
        elif t == "variable_assignments":
            for c in n.named_children:
                self._stmt(c, state)
        elif t == "declaration_command":
            self._declaration(n, state)
        elif t == "unset_command":
            for c in n.named_children:
                state.vars.pop(self.src.node_text(c), None)
        elif t == "command":
            self._command(n, state)
        elif t in ("redirected_statement", "pipeline", "list", "program", "compound_statement", "do_group"):
            for c in n.named_children:
                if c.type == "heredoc_redirect" and self._feeds_bash(n, c):
                    body = next((b for b in c.named_children if b.type == "heredoc_body"), None)
                    if body is not None:
                        self._nested(body.start_byte, body.end_byte, state.copy())
                if c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect"):
                    continue
                self._stmt(c, state)
        elif t == "subshell":
            self._block(n.named_children, state.copy())
        elif t == "negated_command":
            self._block(n.named_children, state)
        elif t == "if_statement":
            self._branches(n, state)
        elif t == "case_statement":
            self._case(n, state)
        elif t in ("for_statement", "c_style_for_statement", "while_statement"):
            self._loop(n, state)
        elif t == "function_definition":
            name = n.child_by_field_name("name")
            body = n.child_by_field_name("body")
            if name is not None and body is not None:
                state.functions[self.src.node_text(name)] = body
        elif t == "test_command":
            self._expand_all(n.named_children, state)
        else:
            # Unknown construct: still look inside for commands.
            for c in n.named_children:
                self._stmt(c, state)

    def _branches(self, n: ts.Node, state: State) -> None:
        """if/elif/else. A condition the evaluator can decide (`[ "$b" = megatron ]` on known
        values) picks its arm; otherwise each possible arm runs on its own copy and variables
        the arms disagree on become unknown."""
        arms: list[tuple[list[ts.Node], list[ts.Node], int]] = []
        else_body: list[ts.Node] | None = None
        for c in [n, *[c for c in n.children if c.type == "elif_clause"]]:
            cond, body, in_body = [], [], False
            for x in c.children:
                if x.type == "then":
                    in_body = True
                elif x.is_named and x.type not in ("elif_clause", "else_clause", "comment"):
                    (body if in_body else cond).append(x)
            arms.append((cond, body, self.src.node_span(c).line))
        else_clause = next((c for c in n.children if c.type == "else_clause"), None)
        if else_clause is not None:
            else_body = [x for x in else_clause.named_children if x.type != "comment"]
        outcomes = []
        decided = False
        for cond, body, line in arms:
            if decided:
                self._untaken(body, state, line)
                continue
            verdict = self._condition(cond, state)
            self._block(cond, state)  # the condition itself runs
            if verdict is False:
                self._untaken(body, state, line)
                continue
            branch = state.copy()
            self._block(body, branch)
            outcomes.append(branch)
            decided = verdict is True
        if not decided:
            branch = state.copy()
            if else_body is not None:
                self._block(else_body, branch)
            outcomes.append(branch)
        elif else_body:
            self._untaken(else_body, state, self.src.node_span(else_clause).line)
        self._merge(state, outcomes, "set in a branch of an if")

    def _untaken(self, body: list[ts.Node], state: State, line: int) -> None:
        """An arm the script's own values do not take: its launches are still checked (the
        user may run it with other values), on a copy of the state, and say so."""
        if not body:
            return
        saved = self._note
        self._note = saved or f"in the branch at line {line}, which the script's own values do not take"
        self._block(body, state.copy())
        self._note = saved

    def _condition(self, cond: list[ts.Node], state: State) -> bool | None:
        """The value of a `[ a = b ]` / `[[ a != b ]]` / `[ -z a ]` test on known words, else None."""
        if len(cond) != 1 or cond[0].type != "test_command" or len(cond[0].named_children) != 1:
            return None
        e = cond[0].named_children[0]

        def known(node) -> str | None:
            fields = self._expand(node, state, quoted=True)
            w = self._field_word(fields[0] if fields else [], self.src.node_span(node))
            return w.text if len(fields) == 1 else None

        if e.type == "binary_expression" and len(e.named_children) == 2:
            op = next((c.type for c in e.children if not c.is_named), "")
            a, b = (known(c) for c in e.named_children)
            if a is None or b is None or op not in ("=", "==", "!=") or any(ch in b for ch in "*?["):
                return None
            return (a == b) != (op == "!=")
        operands = [c for c in e.named_children if c.type != "test_operator"]
        if e.type == "unary_expression" and len(operands) == 1:
            op = self.src.node_text(e.children[0]) if e.children else ""
            a = known(operands[0])
            if a is None or op not in ("-z", "-n"):
                return None
            return (a == "") == (op == "-z")
        return None

    def _case(self, n: ts.Node, state: State) -> None:
        outcomes = []
        for item in n.named_children:
            if item.type != "case_item":
                continue
            s = state.copy()
            self._block(item.named_children[1:], s)
            outcomes.append(s)
        outcomes.append(state.copy())
        self._merge(state, outcomes, "set in a branch of a case")

    def _loop(self, n: ts.Node, state: State) -> None:
        var = n.child_by_field_name("variable")
        body_state = state.copy()
        if var is not None:
            name = self.src.node_text(var)
            span = self.src.node_span(var)
            body_state.vars[name] = Var([unknown_word(span, f"${name} is a loop variable")], assigned_at=span)
        for c in n.named_children:
            if c.type == "do_group":
                self._stmt(c, body_state)
            elif c is not var:
                self._expand_all([c], body_state)
        self._merge(state, [body_state, state.copy()], "changes inside a loop")

    def _merge(self, state: State, outcomes: list[State], reason: str) -> None:
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
            span = anchor.assigned_at if anchor and anchor.assigned_at else self.src.span(0, 0)
            state.vars[name] = Var(
                [unknown_word(span, f"${name} is {reason}")],
                exported=any(v.exported for v in vals if v is not None),
                assigned_at=span,
            )
        for o in outcomes:
            for fname, body in o.functions.items():
                state.functions.setdefault(fname, body)

    # -- assignments --------------------------------------------------------
    def _assign(self, n: ts.Node, state: State, exported: bool = False, local_scope: bool = False) -> str | None:
        name_node = n.child_by_field_name("name")
        if name_node is None:
            return None
        raw_name = self.src.node_text(name_node)
        name = raw_name.split("[")[0]
        value = n.child_by_field_name("value")
        append = any(c.type == "+=" for c in n.children)
        span = self.src.node_span(n)
        old = state.vars.get(name)
        keep_export = exported or (old.exported if old else False)
        if name_node.type == "subscript":  # A[i]=v: too dynamic to track precisely
            state.vars[name] = Var([unknown_word(span, f"${name} has an element assigned by index")], True, keep_export, span)
            return name
        if value is not None and value.type == "array":
            words: list[Word] = []
            for el in value.named_children:
                if el.type == "comment":
                    continue
                for f in self._expand(el, state):
                    words.append(self._field_word(f, self.src.node_span(el)))
            if append and old is not None:
                words = list(old.words) + words
            state.vars[name] = Var(words, True, keep_export, span)
            return name
        if value is None:
            word = Word("", span)
        else:
            fields = self._expand(value, state, quoted=True)
            word = self._field_word(fields[0] if fields else [], self.src.node_span(value))
        if append and old is not None and old.words:
            prev = old.words[-1] if old.is_array else old.words[0]
            if old.is_array:
                state.vars[name] = Var(list(old.words) + [word], True, keep_export, span)
                return name
            word = self._join_words(prev, word, span)
        state.vars[name] = Var([word], False, keep_export, span)
        return name

    def _declaration(self, n: ts.Node, state: State) -> None:
        kind = n.children[0].type if n.children else ""
        exported = kind == "export" or any(
            c.type == "word" and self.src.node_text(c).startswith("-") and "x" in self.src.node_text(c) for c in n.children
        )
        array = any(c.type == "word" and re.fullmatch(r"-[a-zA-Z]*[aA][a-zA-Z]*", self.src.node_text(c)) for c in n.children)
        for c in n.named_children:
            if c.type == "variable_assignment":
                self._assign(c, state, exported=exported)
            elif c.type == "variable_name" and array and self.src.node_text(c) not in state.vars:
                span = self.src.node_span(c)  # `declare -A X`: an empty array
                state.vars[self.src.node_text(c)] = Var([], True, exported, span)
            elif c.type == "variable_name" and exported:
                name = self.src.node_text(c)
                span = self.src.node_span(c)
                var = state.vars.get(name)
                if var is None:
                    state.vars[name] = Var(
                        [unknown_word(span, f"${name} is exported from the caller's environment")],
                        exported=True,
                        assigned_at=span,
                    )
                else:
                    state.vars[name] = Var(var.words, var.is_array, True, var.assigned_at)

    # -- commands -----------------------------------------------------------
    def _command(self, n: ts.Node, state: State) -> None:
        prefix: dict[str, EnvVar] = {}
        words: list[Word] = []
        name_node = None
        glue_end = -1
        for c in n.named_children:
            if c.type == "variable_assignment" and name_node is None:
                tmp = state.copy()
                name = self._assign(c, tmp)
                if name:
                    w = tmp.vars[name].words[0] if tmp.vars[name].words else Word("", self.src.node_span(c))
                    prefix[name] = EnvVar(name, w.text, self.src.node_span(c), w.unknown, True)
            elif c.type == "command_name":
                name_node = c
                words.extend(self._field_words(c.named_children[0] if c.named_children else c, state))
            elif c.type in ("file_redirect", "heredoc_redirect", "herestring_redirect", "comment"):
                continue
            elif name_node is not None:
                fields = self._expand(c, state)
                span = self.src.node_span(c)
                if words and c.start_byte == glue_end and fields:
                    # tree-sitter-bash splits `x-$V/y` after an expansion into two nodes
                    # (the first ending in a bare `$`); bash sees one word.
                    prev = words.pop()
                    span = self.src.span(prev.span.start_byte, c.end_byte)
                    fields = self._glue(prev, fields, c, state, span)
                words.extend(self._field_word(f, span) for f in fields)
                glue_end = c.end_byte
        if name_node is None:
            # Only assignments: in bash they persist in the shell.
            for c in n.named_children:
                if c.type == "variable_assignment":
                    self._assign(c, state)
            return
        if words and words[0].text and _OVERRIDE_LIKE.match(words[0].text):
            self.result.diagnostics.append(
                BROKEN_LINE_CONTINUATION.finding(f"`{_short(words[0].text)}` runs as a command of its own (bash: command not found): the launch "
                    "above ended early, so this line and the ones continuing it never reach it", words[0].span, help="remove the comment or blank line inside the command, and end every line of it with `\\` "
                    "(nothing after the backslash, not even a space)", key=words[0].text.split("=", 1)[0].lstrip("+~"))
            )
        cmd = Command(n, self.src.node_span(n), prefix, words, state.copy(), self._note)
        script = self._script_argument(words) if words else None  # `"${EMPTY[@]}"` names no command
        if script is not None:  # `bash -c "..."`, `eval "$CMD"`: its commands are read instead
            cmd.nested = True
            self._nested(*script, state if words[0].text == "eval" else state.copy())
        self.result.commands.append(cmd)
        self._builtin(cmd, state)

    def _script_argument(self, words: list[Word]) -> tuple[int, int] | None:
        """The byte range of a script given as a string to `eval` or `bash -c` (after any
        launcher: `ray job submit -- bash -c ...`), when that string is written in this file."""
        arg = None
        if words[0].text == "eval" and len(words) == 2:
            arg = words[1]
        for j, w in enumerate(words[:-2]):
            if w.text and os.path.basename(w.text) in ("bash", "sh") and re.fullmatch(r"-[a-z]*c[a-z]*", words[j + 1].text or ""):
                arg = words[j + 2]
                break
        if arg is None or arg.text is None or arg.span.path != self.src.path:
            return None
        node = self.src.tree.root_node.descendant_for_byte_range(arg.span.start_byte, arg.span.end_byte)
        if node is None or node.type not in ("string", "raw_string") or (node.start_byte, node.end_byte) != (arg.span.start_byte, arg.span.end_byte):
            return None
        return node.start_byte + 1, node.end_byte - 1

    def _feeds_bash(self, stmt: ts.Node, redirect: ts.Node) -> bool:
        """`bash <<EOF` or `cat <<EOF | bash`: the here-document is a script."""
        cmds = [c for c in stmt.named_children if c.type == "command"]
        cmds += [c for p in redirect.named_children if p.type == "pipeline" for c in p.named_children if c.type == "command"]
        names = [self.src.node_text(c.child_by_field_name("name") or c).strip() for c in cmds]
        return any(os.path.basename(x) in ("bash", "sh") for x in names)

    def _nested(self, start: int, end: int, state: State) -> None:
        if self.depth >= MAX_SOURCE_DEPTH or start >= end:
            return
        sub = Evaluator(self.src.region(start, end), self.allowed_roots, self.depth + 1)
        sub._note = self._note
        sub._collect_assignments(sub.src.tree.root_node)
        sub._block(sub.src.tree.root_node.children, state)
        self.result.commands.extend(sub.result.commands)
        self.result.diagnostics.extend(sub.result.diagnostics)

    def _glue(self, prev: Word, fields: list[list[Seg]], node: ts.Node, state: State, span: Span) -> list[list[Seg]]:
        """Join a word split by the grammar back onto the previous word (`$` + NAME + rest)."""
        head: list[Seg] = [Seg(prev.text, span)] if prev.text is not None else [Seg(prev.prefix, span), Seg(None, span, prev.unknown)]
        first = fields[0]
        if self.src.data[node.start_byte - 1 : node.start_byte] == b"$" and first and first[0].text:
            m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", first[0].text)
            if m:
                var = state.vars.get(m.group(0))
                value = var.words[0] if var and var.words and not var.is_array else None
                seg = (
                    Seg(value.text, span, value.unknown)
                    if value is not None
                    else Seg(None, span, Unknown(f"${m.group(0)} is not set in the script (comes from the environment)"))
                )
                if prev.text is not None:
                    head = [Seg(prev.text[:-1] if prev.text.endswith("$") else prev.text, span), seg]
                else:
                    head = head + [seg]
                first = [Seg(first[0].text[m.end() :], first[0].span)] + first[1:]
        return [head + first] + fields[1:]

    def _builtin(self, cmd: Command, state: State) -> None:
        if not cmd.words or cmd.words[0].text is None:
            return
        name, args = cmd.words[0].text, cmd.words[1:]
        if name in ("source", ".") and args:
            self._source(args[0], state)
        elif name == "cd" and args:
            target = args[0]
            if target.text is None or target.text == "-":
                state.cwd = None
            elif os.path.isabs(target.text):
                state.cwd = os.path.normpath(target.text)
                state.cwd_base = target.cwd  # `cd "$(dirname "$0")"`: known from here on
            elif state.cwd is not None:
                state.cwd = os.path.normpath(os.path.join(state.cwd, target.text))
        elif name == "read":
            for a in args:
                if a.text and not a.text.startswith("-"):
                    state.vars[a.text] = Var([unknown_word(a.span, f"${a.text} is read from input")], assigned_at=a.span)
        elif name == "shift" and state.positional:
            state.positional = state.positional[1:]
        elif name in state.functions:
            self._called.add(name)
            if self._call_depth < MAX_CALL_DEPTH:
                self._call_depth += 1
                self._call(state.functions[name], state, args)
                self._call_depth -= 1

    def _call(self, body: ts.Node, state: State, args: list[Word]) -> None:
        saved = state.positional
        state.positional = list(args)
        self._stmt(body, state)
        state.positional = saved

    def _source(self, arg: Word, state: State) -> None:
        if arg.text is None or self.depth >= MAX_SOURCE_DEPTH:
            return
        path = next((p for p in map(Path, places(arg, state.cwd, state.cwd_base, state.run_from)) if p.is_file()), None)
        if path is None:
            return
        path = path.resolve()
        if not any(path == r or r in path.parents for r in self.allowed_roots):
            return  # never read files outside the scanned tree
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return
        sub = Evaluator(Source(str(path), text), self.allowed_roots, self.depth + 1)
        sub._collect_assignments(sub.src.tree.root_node)
        sub._block(sub.src.tree.root_node.children, state)
        self.result.commands.extend(sub.result.commands)
        self.result.diagnostics.extend(sub.result.diagnostics)
        self.result.sourced.append(str(path))

    # -- expansion ----------------------------------------------------------
    def _field_words(self, node: ts.Node, state: State) -> list[Word]:
        span = self.src.node_span(node)
        return [self._field_word(f, span) for f in self._expand(node, state)]

    def _field_word(self, f: list[Seg], span: Span) -> Word:
        # A word that is exactly one expanded value points where that value was written.
        if len(f) == 1 and f[0].expanded:
            s = f[0]
            return Word(s.text, s.span, s.unknown, s.from_caller, cwd=s.cwd)
        unknown = next((s.unknown for s in f if s.unknown is not None), None)
        if unknown is not None:
            prefix = []
            for s in f:
                if s.text is None:
                    break
                prefix.append(s.text)
            return Word(None, span, unknown, any(s.from_caller for s in f), "".join(prefix))
        return Word("".join(s.text or "" for s in f), span, cwd=next((s.cwd for s in f if s.cwd), None))

    def _join_words(self, a: Word, b: Word, span: Span) -> Word:
        if a.text is None or b.text is None:
            return Word(None, span, a.unknown or b.unknown)
        return Word(a.text + b.text, span, cwd=a.cwd or b.cwd)

    def _expand_all(self, nodes, state: State) -> None:
        for n in nodes:
            self._expand(n, state)

    def _expand(self, node: ts.Node, state: State, quoted: bool = False) -> list[list[Seg]]:
        """Expand one word node into fields (lists of segments)."""
        t = node.type
        span = self.src.node_span(node)
        if t in ("word", "number", "extglob_pattern", "regex"):
            text = self.src.node_text(node)
            if "~" in text and t == "word":
                tilde = self._tilde(node, text, span)
                if tilde is not None:
                    return [tilde]
            return [[Seg(self._unescape(node, text, quoted), span)]]
        if t == "raw_string":
            return [[Seg(self.src.node_text(node)[1:-1], span)]]
        if t == "ansi_c_string":
            return [[Seg(_unescape_ansi(self.src.node_text(node)[2:-1]), span)]]
        if t == "translated_string":
            return self._expand(node.named_children[0], state, quoted) if node.named_children else [[Seg("", span)]]
        if t == "string":
            return self._expand_string(node, state)
        if t == "concatenation":
            fields: list[list[Seg]] = [[]]
            for c in node.children:
                if c.type == "`" or not c.is_named:
                    continue
                part = self._expand(c, state, quoted)
                if not part:
                    continue
                fields[-1].extend(part[0])
                fields.extend([list(p) for p in part[1:]])
            return [f for f in fields if f] or [[Seg("", span)]]
        if t in ("simple_expansion", "expansion"):
            return self._expand_param(node, state, quoted)
        if t == "arithmetic_expansion":
            v = self._arith_node(node, state)
            if isinstance(v, Unknown):
                return [[Seg(None, span, v)]]
            return [[Seg(str(v), span)]]
        if t in ("command_substitution", "process_substitution"):
            what = self.src.node_text(node)
            known = self._directory_of(what, state, span) if t == "command_substitution" else None
            if known is not None:
                return [[known]]
            return [[Seg(None, span, Unknown(f"the output of `{_short(what)}` is only known at run time"))]]
        return [[Seg(self.src.node_text(node), span)]]

    def _tilde(self, node: ts.Node, text: str, span: Span) -> list[Seg] | None:
        """Tilde expansion of an unquoted word part, as bash does it: `~` at the start of a word,
        of an assignment's value (also after each `:` there: `P=a:~/b`), of a `${V:-~/x}`
        default, and of the value of an argument shaped like an assignment (`env A=~/x`; not
        `data.path=~/x`, whose `data.path` is no name). The home directory is not known
        statically (the linter's own HOME is not the user's): the result is unknown."""
        context = self._tilde_context(node)
        if context is None:
            return None
        at_start, after_colon, start = context
        starts = [start] if at_start else []
        if after_colon:
            starts += [m.end() for m in re.finditer(":", text) if m.end() > start]
        for i in starts:
            if not text.startswith("~", i):
                continue
            stop = re.compile("[/:]" if after_colon else "/").search(text, i)
            end = stop.start() if stop else len(text)
            if stop is None and node.next_sibling is not None and node.parent is not None and node.parent.type == "concatenation":
                continue  # `~"/x"`, `~$V`: the tilde-prefix runs into a quoted or expanded part
            user = text[i + 1 : end]
            if user not in ("", "+", "-") and (
                stop is None or stop.group() != "/" or not re.fullmatch(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*", user)
            ):
                # Bash keeps `~name` when no user `name` exists: a `~name` not followed by a path
                # is a Hydra delete (`~trainer.val_before_train`), not a login name.
                continue
            what = "the home directory of the user who runs the script ($HOME)" if not user else (
                "$PWD" if user == "+" else "$OLDPWD" if user == "-" else f"the home directory of user {user}"
            )
            return [
                Seg(_unescape_unquoted(text[:i]), span),
                Seg(None, span, Unknown(f"`{text[i:end]}` expands to {what}, which is only known at run time")),
                Seg(_unescape_unquoted(text[end:]), span),
            ]
        return None

    def _unescape(self, node: ts.Node, text: str, quoted: bool) -> str:
        """A word part's text without bash's backslash quoting; `quoted` (no field splitting,
        e.g. an assignment's value) keeps the backslashes only inside double quotes."""
        if "\\" not in text or not quoted:
            return _unescape_unquoted(text)
        p = node.parent
        while p is not None and p.type not in ("string", "program"):
            p = p.parent
        return text if p is not None and p.type == "string" else _unescape_unquoted(text)

    def _tilde_context(self, node: ts.Node) -> tuple[bool, bool, int] | None:
        """(expanded at its start, expanded after `:`, where its value starts) for an unquoted
        word part, or None inside double quotes."""
        first = True
        n, p = node, node.parent
        while p is not None and p.type == "concatenation":
            first = first and p.children[0] == n
            n, p = p, p.parent
        if p is None or p.type == "string":
            return None
        if p.type == "variable_assignment":
            return first, True, 0
        if p.type == "expansion":  # `${V:-~/x}`: the default's own start; `:` only in an assignment
            outer = self._tilde_context(p)
            return None if outer is None else (first, outer[1], 0)
        if p.type == "command" and first:
            m = re.match(r"[A-Za-z_][A-Za-z0-9_]*\+?=", self.src.node_text(node))
            if m:
                return True, True, m.end()
        return first, False, 0

    def _expand_string(self, node: ts.Node, state: State) -> list[list[Seg]]:
        fields: list[list[Seg]] = [[]]
        for c in node.children:
            if not c.is_named:
                continue
            if c.type == "string_content":
                fields[-1].append(Seg(_unescape_dquote(self.src.node_text(c)), self.src.node_span(c)))
                continue
            part = self._expand(c, state, quoted=True)
            if not part:
                continue
            fields[-1].extend(part[0])
            fields.extend([list(p) for p in part[1:]])
        # `"${A[@]}"` of an empty array yields no field at all.
        if len(fields) == 1 and not fields[0] and any(c.is_named for c in node.children):
            return []
        if fields == [[]]:
            return [[Seg("", self.src.node_span(node))]]
        return fields

    def _expand_param(self, node: ts.Node, state: State, quoted: bool) -> list[list[Seg]]:
        span = self.src.node_span(node)
        text = self.src.node_text(node)
        name_node = None
        index = None
        op = None
        operand: ts.Node | None = None
        length = False
        indirect = False
        for c in node.children:
            if c.type in ("variable_name", "special_variable_name") and name_node is None:
                name_node = c
            elif c.type == "subscript":
                name_node = c.child_by_field_name("name")
                idx = c.child_by_field_name("index")
                index = self.src.node_text(idx) if idx is not None else None
            elif c.type == "#" and name_node is None:
                length = True
            elif c.type == "!" and name_node is None:
                indirect = True
            elif not c.is_named and c.type not in ("$", "${", "}") and name_node is not None and op is None:
                op = c.type
            elif c.is_named and name_node is not None and op is not None and operand is None:
                operand = c
        if name_node is None or any(c.type == "ERROR" for c in node.children):
            return [[Seg(None, span, Unknown(f"`{_short(text)}` is not understood statically"))]]
        name = self.src.node_text(name_node)
        if index is None and name.isdigit() and name != "0" and state.positional is None and op in (":-", "-") and operand is not None:
            return self._expand(operand, state, quoted=True)  # `${1:-ppo_trainer}`: analysed with its default
        if name in ("@", "*") or (index is None and name.isdigit()):
            return self._positional(name, span, state, quoted)
        if name == "PWD" and name not in state.vars and op is None:
            return [[state.cwd_seg(span)]]
        if indirect or (op is not None and op not in (":-", "-", ":=", "=", ":+", "+")):
            if op is None and not indirect and length:
                pass
            else:
                return [[Seg(None, span, Unknown(f"`{_short(text)}` is not evaluated statically"))]]
        var = state.vars.get(name)
        if var is None and op in (":-", "-", ":=", "="):
            default = self._expand(operand, state, quoted=True) if operand is not None else [[Seg("", span)]]
            word = self._field_word(default[0] if default else [], span)
            if op in (":=", "="):
                state.vars[name] = Var([word], assigned_at=span)
            return [[Seg(word.text, span if word.text is not None else word.span, word.unknown)]]
        if var is None:
            if op in (":+", "+"):
                return [[Seg("", span)]] if quoted else []
            return [[self._unset(name, node, span)]]
        if op in (":-", ":=") and not var.is_array and var.words and var.words[0].text == "":
            default = self._expand(operand, state, quoted=True) if operand is not None else [[Seg("", span)]]
            word = self._field_word(default[0] if default else [], span)
            if op == ":=":
                state.vars[name] = Var([word], exported=var.exported, assigned_at=span)
            return [[Seg(word.text, span, word.unknown)]]
        if op in (":+", "+"):
            alt = self._expand(operand, state, quoted=True) if operand is not None else [[Seg("", span)]]
            return alt
        if length:
            if index in ("@", "*"):
                return [[Seg(str(len(var.words)), span)]]
            w = var.words[0] if var.words else Word("", span)
            return [[Seg(str(len(w.text)) if w.text is not None else None, span, w.unknown)]]
        if index in ("@", "*"):
            words = var.words
            if index == "*" and quoted:
                return [[self._seg_of(self._join_all(words, span), span)]]
            if quoted:
                return [[self._seg_of(w, w.span)] for w in words]
            return [f for w in words for f in self._split(w)]
        if index is not None:
            if index.isdigit() and int(index) < len(var.words):
                w = var.words[int(index)]
            elif index.isdigit() and var.words and var.words[0].text is not None:
                return [[Seg("", span)]]
            else:
                return [[Seg(None, span, Unknown(f"`{_short(text)}` indexes an array dynamically"))]]
        else:
            w = var.words[0] if var.words else Word("", span)
        if quoted:
            return [[self._seg_of(w, w.span)]]
        return self._split(w)

    def _directory_of(self, text: str, state: State, span: Span) -> Seg | None:
        """The value of a substitution that only names a directory of the launch: `$(pwd)`, and
        the script's own directory (`$(dirname "$0")`, `$(cd "$(dirname "$0")" && pwd)`, ...)."""
        tokens = [t for t in re.split(r"[\s\"'`()$;&]+|(?<=\))", text) if t]
        rest = [t for t in tokens if t not in _DIR_WORDS]
        if not rest and tokens in (["pwd"], ["pwd", "-P"], ["pwd", "-L"]):
            return state.cwd_seg(span)
        if rest and all(r in _SCRIPT_REFS for r in rest) and "dirname" in tokens:
            return Seg(str(Path(self.src.path).resolve().parent), span)
        return None

    def _seg_of(self, w: Word, span: Span) -> Seg:
        return Seg(w.text, span, w.unknown, w.from_caller, expanded=True, cwd=w.cwd)

    def _split(self, w: Word) -> list[list[Seg]]:
        """Unquoted expansion: bash splits the value on whitespace."""
        if w.text is None:
            return [[self._seg_of(w, w.span)]]
        parts = w.text.split()
        if len(parts) == 1 and parts[0] == w.text:
            return [[Seg(w.text, w.span, expanded=True, cwd=w.cwd)]]
        return [[Seg(p, w.span, expanded=True, cwd=w.cwd)] for p in parts]

    def _join_all(self, words: list[Word], span: Span) -> Word:
        if any(w.text is None for w in words):
            return Word(None, span, next(w.unknown for w in words if w.text is None))
        return Word(" ".join(w.text for w in words), span)

    def _positional(self, name: str, span: Span, state: State, quoted: bool) -> list[list[Seg]]:
        if state.positional is None:
            if name in ("@", "*"):
                return [[Seg(None, span, Unknown("extra arguments passed to the script (\"$@\")"), True)]]
            if name == "0":
                return [[Seg(self.src.path, span)]]
            return [[Seg(None, span, Unknown(f"script argument ${name}"), True)]]
        if name in ("@", "*"):
            if quoted and name == "@":
                return [[self._seg_of(w, w.span)] for w in state.positional]
            if quoted:  # "$*": one word
                return [[self._seg_of(self._join_all(state.positional, span), span)]]
            # Unquoted $@ / $*: every argument, each split on whitespace.
            return [f for w in state.positional for f in self._split(w)]
        i = int(name)
        if i == 0:
            return [[Seg(self.src.path, span)]]
        if i <= len(state.positional):
            w = state.positional[i - 1]
            return [[self._seg_of(w, w.span)]] if quoted else self._split(w)
        return [[Seg("", span)]]

    def _unset(self, name: str, node: ts.Node, span: Span) -> Seg:
        later = self._assigned_later.get(name)
        if later is not None and later > node.start_byte and (name, node.start_byte) not in self._reported_unset:
            self._reported_unset.add((name, node.start_byte))
            parent = node.parent
            divisor = (
                parent is not None
                and parent.type == "binary_expression"
                and parent.child_by_field_name("right") == node
                and self.src.node_text(parent.child_by_field_name("operator") or parent).strip() in ("/", "%")
            )
            effect = (
                "as a divisor it is 0: bash stops with `division by 0` and skips this assignment"
                if divisor
                else "bash expands it to an empty string (0 in arithmetic)"
            )
            self.result.diagnostics.append(
                VARIABLE_USED_BEFORE_ASSIGNMENT.finding(f"${name} is used here but only assigned later in the script; {effect} unless the caller's "
                    "environment sets it", span, help=f"assign {name} before this line", key=name)
            )
            return Seg(None, span, Unknown(f"${name} is used before it is assigned"))
        return Seg(None, span, Unknown(f"${name} is not set in the script (comes from the environment)"))

    # -- arithmetic ---------------------------------------------------------
    def _arith_node(self, node: ts.Node, state: State) -> int | Unknown:
        inner = [c for c in node.named_children]
        if not inner:
            return 0
        v: int | Unknown = 0
        for c in inner:  # `$((a, b))` evaluates to the last
            v = self._arith(c, state)
        return v

    def _arith(self, n: ts.Node, state: State) -> int | Unknown:
        t = n.type
        if t == "number":
            return _parse_int(self.src.node_text(n))
        if t == "parenthesized_expression":
            return self._arith(n.named_children[0], state) if n.named_children else 0
        if t == "variable_name":
            return self._arith_var(self.src.node_text(n), n, state)
        if t in ("simple_expansion", "expansion", "string", "concatenation", "word", "raw_string"):
            fields = self._expand(n, state, quoted=True)
            w = self._field_word(fields[0] if fields else [], self.src.node_span(n))
            if w.text is None:
                return w.unknown or Unknown("unknown operand")
            return _arith_text(w.text, state, self)
        if t == "arithmetic_expansion" or t == "command_substitution":
            fields = self._expand(n, state)
            w = self._field_word(fields[0] if fields else [], self.src.node_span(n))
            return _parse_int(w.text) if w.text is not None else (w.unknown or Unknown("unknown"))
        if t == "unary_expression":
            op = n.children[0].type
            v = self._arith(n.named_children[0], state)
            if isinstance(v, Unknown):
                return v
            return {"-": -v, "+": v, "!": int(not v), "~": ~v}.get(op, Unknown(f"operator {op}"))
        if t == "binary_expression":
            left, right = n.child_by_field_name("left"), n.child_by_field_name("right")
            op = n.child_by_field_name("operator")
            op_text = op.type if op is not None else ""
            if left is None or right is None:
                return Unknown("incomplete arithmetic")
            if op_text in ("=", "+=", "-=", "*=", "/=", "%="):
                return Unknown("assignment inside arithmetic is not tracked")
            a, b = self._arith(left, state), self._arith(right, state)
            if isinstance(a, Unknown):
                return a
            if isinstance(b, Unknown):
                return b
            fn = _ARITH_OPS.get(op_text)
            if fn is None:
                return Unknown(f"arithmetic operator {op_text}")
            r = fn(a, b)
            return Unknown(f"{a} {op_text} {b} is an arithmetic error") if r is None else r
        if t == "ternary_expression":
            cond = self._arith(n.named_children[0], state)
            if isinstance(cond, Unknown):
                return cond
            return self._arith(n.named_children[1] if cond else n.named_children[2], state)
        return Unknown(f"`{_short(self.src.node_text(n))}` in arithmetic is not evaluated")

    def _arith_var(self, name: str, node: ts.Node, state: State) -> int | Unknown:
        var = state.vars.get(name)
        if var is None:
            seg = self._unset(name, node, self.src.node_span(node))
            return seg.unknown
        w = var.words[0] if var.words else Word("0", self.src.node_span(node))
        if w.text is None:
            return w.unknown or Unknown(f"${name} is unknown")
        return _arith_text(w.text, state, self)


def _arith_text(text: str, state: State, ev: Evaluator) -> int | Unknown:
    text = text.strip()
    if text == "":
        return 0
    v = _parse_int(text)
    if not isinstance(v, Unknown):
        return v
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text) and text in state.vars:
        w = state.vars[text].words[0] if state.vars[text].words else None
        if w is not None and w.text is not None and w.text != text:
            return _parse_int(w.text.strip())
    return Unknown(f"{text!r} is not an integer")


def _descendants(n: ts.Node):
    stack = list(n.children)
    while stack:
        c = stack.pop()
        yield c
        stack.extend(c.children)


def _parse_int(text: str) -> int | Unknown:
    try:
        if text.lower().startswith("0x"):
            return int(text, 16)
        if "#" in text:
            base, digits = text.split("#", 1)
            return int(digits, int(base))
        if len(text) > 1 and text.startswith("0") and text.isdigit():
            return int(text, 8)
        return int(text)
    except ValueError:
        return Unknown(f"{text!r} is not an integer")


def _unescape_unquoted(text: str) -> str:
    if "\\" not in text:
        return text
    return re.sub(r"\\(\n|.)", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _unescape_dquote(text: str) -> str:
    if "\\" not in text:
        return text
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _unescape_ansi(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), text)


def _short(text: str, n: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= n else text[: n - 1] + "…"


def bash_accepts(data: bytes) -> bool:
    """Whether `bash -n` parses the script. It reads and executes nothing but the text on its
    stdin (no profile, rc file or BASH_ENV: the environment is empty); extglob is on, since
    `shopt -s extglob` in the script is not run under -n. False when bash is not there."""
    bash = shutil.which("bash")
    if bash is None:
        return False
    try:
        proc = subprocess.run([bash, "--noprofile", "--norc", "-O", "extglob", "-n"], input=data, env={}, capture_output=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def evaluate(
    path: str, text: str, allowed_roots: list[Path] | None = None, positional: list[Word] | None = None, cwd: str | None = None
) -> ScriptResult:
    """Evaluate a script. `positional` are its arguments ("$@"; None: unknown), `cwd` where it runs."""
    src = Source(path, text)
    roots = allowed_roots if allowed_roots is not None else [Path(path).resolve().parent]
    if cwd or path.startswith("<"):  # the caller's directory (--cwd, `verl-lint run`, a command line)
        state = State(positional=positional, cwd=os.path.abspath(cwd or "."))
    else:
        run_from = working_dirs(Path(path))
        state = State(positional=positional, cwd=run_from[0], cwd_base=run_from[0], run_from=run_from)
    result, _ = Evaluator(src, [r.resolve() for r in roots]).run(state)
    return result
