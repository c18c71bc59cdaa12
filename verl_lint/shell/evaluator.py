"""Bash front end: tree-sitter-bash plus a small constant-propagating evaluator.

The evaluator walks the syntax tree in order and tracks variables over the safe
subset of bash (assignments, export/local/readonly/declare, parameter expansion
with defaults, `$(( ))` arithmetic, arrays, quoting, functions, `source` of files
inside the allowed roots). Whatever it cannot know becomes an explicit `Unknown`
carrying its reason. A variable the branches of an if/case set differently keeps each branch's
value (`Var.variants`): a command that reads it is expanded once per combination; a `for` over
known words runs its body once per word. It never executes anything: command substitutions,
`eval`, process substitutions and here-docs are only ever read as syntax.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from pathlib import Path

import tree_sitter as ts

from ..catalogue import OVERRIDE_LIKE
from ..model import EnvVar, Word
from ..places import places, working_dirs
from ..terminal import shorten
from .expand import Expander
from .source import REDIRECTS, Source, follows, glued, syntax_errors
from .values import Command, ScriptResult, State, UntakenArm, Var, field_word, join_words, merge_outcomes, unknown_word

MAX_SOURCE_DEPTH = 8
MAX_CALL_DEPTH = 16
MAX_VARIANTS = 8  # combinations of branch values a command is expanded with; beyond, they stay unknown


class Evaluator:
    """Walks one source's statements in order over a State (see the module docstring)."""

    def __init__(self, source: Source, allowed_roots: list[Path], depth: int = 0, forced: frozenset[int] = frozenset()):
        self.src = source
        self.forced = forced  # UntakenArm keys: take these arms whatever their conditions say
        self.allowed_roots = allowed_roots
        self.depth = depth
        self.result = ScriptResult(source)
        self.expander = Expander(source, self.result.diagnostics)
        self._call_depth = 0
        self._called: set[str] = set()
        self._note: str | None = None  # set while evaluating an if-arm that is not taken
        self._iteration: tuple[str, ...] = ()  # set while evaluating one iteration of a loop over known words

    # -- entry --------------------------------------------------------------
    def run(self, state: State | None = None) -> tuple[ScriptResult, State]:
        state = state or State(cwd=str(Path(self.src.path).resolve().parent))
        self.result.diagnostics.extend(syntax_errors(self.src))
        self._block(self.src.tree.root_node.children, state)
        # Launches inside functions that are never called are still launches.
        for name, body in list(state.functions.items()):
            if name not in self._called:
                self._called.add(name)
                self._call(body, state.copy(), [])
        return self.result, state

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
                if c.type in REDIRECTS:
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
            self.expander.expand_all(n.named_children, state)
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
            arms.append((cond, body, self.src.node_span(c).line, c.start_byte))
        else_clause = next((c for c in n.children if c.type == "else_clause"), None)
        if else_clause is not None:
            else_body = [x for x in else_clause.named_children if x.type != "comment"]
        keys = [key for *_, key in arms] + ([else_clause.start_byte] if else_clause is not None else [])
        forced = next((key for key in keys if key in self.forced), None)
        outcomes, labels = [], []
        decided = False
        for cond, body, line, key in arms:
            if decided:
                self._untaken(body, state, line, key)
                continue
            verdict = self._condition(cond, state) if forced is None else key == forced
            self._block(cond, state)  # the condition itself runs
            if verdict is False:
                self._untaken(body, state, line, key)
                continue
            branch = state.copy()
            self._block(body, branch)
            outcomes.append(branch)
            labels.append(f"when line {line}: `{self._text(cond)}`")
            decided = verdict is True
        if not decided:
            branch = state.copy()
            if else_body is not None:
                self._block(else_body, branch)
            outcomes.append(branch)
            line = self.src.node_span(else_clause if else_clause is not None else n).line
            labels.append(
                f"when line {line}: not `{self._text(arms[0][0])}`" if len(arms) == 1 else f"when line {line}: else"
            )
        elif else_body:
            self._untaken(else_body, state, self.src.node_span(else_clause).line, else_clause.start_byte)
        merge_outcomes(state, outcomes, "set in a branch of an if", labels, self.src.span(0, 0))

    def _text(self, nodes: list[ts.Node]) -> str:
        return shorten(" ".join(self.src.node_text(c) for c in nodes), 60)

    def _untaken(self, body: list[ts.Node], state: State, line: int, key: int) -> None:
        """An arm the script's own values do not take: its launches are still checked (the
        user may run it with other values), on a copy of the state, and say so. What it assigns
        reaches later commands only when the script is evaluated again with it taken (`forced`)."""
        if not body:
            return
        saved = self._note
        self._note = saved or f"in the branch at line {line}, which the script's own values do not take"
        if saved is None and self.depth == 0:
            self.result.untaken.append(
                UntakenArm(key, self.src.span(body[0].start_byte, body[-1].end_byte), self._note)
            )
        self._block(body, state.copy())
        self._note = saved

    def _condition(self, cond: list[ts.Node], state: State) -> bool | None:
        """The value of a `[ a = b ]` / `[[ a != b ]]` / `[ -z a ]` test on known words, else None."""
        if len(cond) != 1 or cond[0].type != "test_command" or len(cond[0].named_children) != 1:
            return None
        e = cond[0].named_children[0]

        def known(node) -> str | None:
            fields = self.expander.expand(node, state, quoted=True)
            w = field_word(fields[0] if fields else [], self.src.node_span(node))
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
        outcomes, labels = [], []
        value = self._text([n.child_by_field_name("value") or n])
        for item in n.named_children:
            if item.type != "case_item" or not item.named_children:
                continue
            patterns = item.children_by_field_name("value")
            s = state.copy()
            self._block(item.named_children[len(patterns) :], s)
            outcomes.append(s)
            pattern = "|".join(self.src.node_text(p) for p in patterns)
            labels.append(f"when line {self.src.node_span(item).line}: `{value}` matches `{shorten(pattern, 60)}`")
        if not any(label.endswith("matches `*`") for label in labels):  # else some pattern always matches
            outcomes.append(state.copy())
            labels.append(f"when line {self.src.node_span(n).line}: `{value}` matches no pattern of the case")
        merge_outcomes(state, outcomes, "set in a branch of a case", labels, self.src.span(0, 0))

    def _loop(self, n: ts.Node, state: State) -> None:
        """A `for` over known words runs its body once per word, in order, as bash does: each
        command inside is a variant per iteration (a `break` is not followed: the iterations
        after it are still checked, as runs that may happen). Any other loop runs its body once,
        with the loop variable unknown, and what it changes is unknown after it."""
        var = n.child_by_field_name("variable")
        values = self._iterations(n, var, state)
        if values is not None:
            name, line = self.src.node_text(var), self.src.node_span(n).line
            body = next(c for c in n.named_children if c.type == "do_group")
            for w in values:
                state.vars[name] = Var([w], assigned_at=w.span)
                self._iteration = (f"in the iteration of line {line} where `{name}={shorten(w.text or '')}`",)
                self._stmt(body, state)
            self._iteration = ()
            return
        body_state = state.copy()
        if var is not None:
            name = self.src.node_text(var)
            span = self.src.node_span(var)
            body_state.vars[name] = Var([unknown_word(span, f"${name} is a loop variable")], assigned_at=span)
        for c in n.named_children:
            if c.type == "do_group":
                self._stmt(c, body_state)
            elif c != var:
                self.expander.expand_all([c], body_state)
        merge_outcomes(state, [body_state, state.copy()], "changes inside a loop", None, self.src.span(0, 0))

    def _iterations(self, n: ts.Node, var: ts.Node | None, state: State) -> list[Word] | None:
        """The words a `for VAR in WORDS` loop (not nested in another such loop) iterates over,
        when all are known, none would be brace- or pathname-expanded, and there are at most
        MAX_VARIANTS; else None."""
        items = [c for c in n.named_children if c != var and c.type not in ("do_group", "comment")]
        if (
            n.type != "for_statement"
            or var is None
            or not items
            or self._iteration
            or not any(c.type == "do_group" for c in n.named_children)
        ):
            return None
        if any(_descendants(c, "brace_expression") for c in items):
            return None  # before expanding: the fallback expands the list itself
        words = [field_word(f, self.src.node_span(c)) for c in items for f in self.expander.expand(c, state)]
        if len(words) > MAX_VARIANTS or any(w.text is None or re.search(r"[*?\[{]", w.text) for w in words):
            return None
        return words

    # -- assignments --------------------------------------------------------
    def _assign(
        self, n: ts.Node, state: State, exported: bool = False, local_scope: bool = False, tail: ts.Node | None = None
    ) -> str | None:
        """`n`, with `tail` the rest of its value where the grammar split it off (see `_glued`)."""
        name_node = n.child_by_field_name("name")
        if name_node is None:
            return None
        raw_name = self.src.node_text(name_node)
        name = raw_name.split("[")[0]
        value = n.child_by_field_name("value")
        append = any(c.type == "+=" for c in n.children)
        span = self.src.span(n.start_byte, (tail or n).end_byte)
        old = state.vars.get(name)
        keep_export = exported or (old.exported if old else False)
        if name_node.type == "subscript":  # A[i]=v: too dynamic to track precisely
            state.vars[name] = Var(
                [unknown_word(span, f"${name} has an element assigned by index")], True, keep_export, span
            )
            return name
        if value is not None and value.type == "array":
            words: list[Word] = []
            for el in value.named_children:
                if el.type == "comment":
                    continue
                for f in self.expander.expand(el, state):
                    words.append(field_word(f, self.src.node_span(el)))
            if append and old is not None:
                words = list(old.words) + words
            state.vars[name] = Var(words, True, keep_export, span)
            return name
        if value is None:
            word = Word("", span)
        else:
            fields = self.expander.expand(value, state, quoted=True)
            word = field_word(fields[0] if fields else [], self.src.node_span(value))
            if tail is not None:
                rest = tail.named_children[0] if tail.type == "command_name" and tail.named_children else tail
                vspan = self.src.span(value.start_byte, tail.end_byte)
                word = field_word(
                    self.expander.glue(word, self.expander.expand(rest, state, quoted=True), rest, state, vspan)[0],
                    vspan,
                )
        if append and old is not None and old.words:
            prev = old.words[-1] if old.is_array else old.words[0]
            if old.is_array:
                state.vars[name] = Var(list(old.words) + [word], True, keep_export, span)
                return name
            word = join_words(prev, word, span)
        state.vars[name] = Var([word], False, keep_export, span)
        return name

    def _declaration(self, n: ts.Node, state: State) -> None:
        kind = n.children[0].type if n.children else ""
        exported = kind == "export" or any(
            c.type == "word" and self.src.node_text(c).startswith("-") and "x" in self.src.node_text(c)
            for c in n.children
        )
        array = any(
            c.type == "word" and re.fullmatch(r"-[a-zA-Z]*[aA][a-zA-Z]*", self.src.node_text(c)) for c in n.children
        )
        for c, tail in glued(n.named_children):
            if c.type not in ("variable_assignment", "variable_name", "word", "comment"):  # `export $(cat .env)`
                self.result.hidden_assignments.append(self.src.node_span(c))
            if c.type == "variable_assignment":
                self._assign(c, state, exported=exported, tail=tail)
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
        self.expander.reads = set()
        prefix, words, name_node = self._expand_command(n, state)
        if name_node is None:
            # Only assignments: in bash they persist in the shell.
            for c, tail in glued(n.named_children):
                if c.type == "variable_assignment":
                    self._assign(c, state, tail=tail)
            return
        # A Hydra override cannot be a command name: seen as one, the command it belonged to may have been cut off above
        # it.
        above = follows(self.src, n) if words and words[0].text and re.match(OVERRIDE_LIKE, words[0].text) else None
        cmd = Command(
            n,
            self.src.node_span(n),
            prefix,
            words,
            state.copy(),
            self._note,
            variant=self._iteration or None,
            follows=above,
        )
        script = self._script_argument(words) if words else None  # `"${EMPTY[@]}"` names no command
        if script is not None:  # `bash -c "..."`, `eval "$CMD"`: its commands are read instead
            cmd.nested = True
            self._nested(*script, state if words[0].text == "eval" else state.copy())
        elif words and words[0].text == "eval":
            self.result.hidden_assignments.append(cmd.span)
        variants = [] if cmd.nested else self._variants(self.expander.reads, state)
        for label, branch in variants:  # once per combination of the branch values it reads
            prefix, words, _ = self._expand_command(n, branch)
            self.result.commands.append(
                Command(
                    n, cmd.span, prefix, words, branch, self._note, variant=(*self._iteration, *label), follows=above
                )
            )
        if not variants:
            self.result.commands.append(cmd)
        self._builtin(cmd, state)

    def _variants(self, reads: set[str], state: State) -> list[tuple[tuple[str, ...], State]]:
        """A copy of `state` per combination of the branch values of the variables read (and of
        those exported), with the branches it holds under; none when there are more than
        MAX_VARIANTS combinations (the variables then stay unknown)."""
        names = sorted(x for x, v in state.vars.items() if v.variants and (x in reads or v.exported))
        # Variables the same branches set (the same labels) vary together: one choice for them all.
        groups: dict[tuple[str, ...], list[str]] = {}
        for x in names:
            groups.setdefault(tuple(label for label, _ in state.vars[x].variants or []), []).append(x)
        if not groups or math.prod(map(len, groups)) > MAX_VARIANTS:
            return []
        out = []
        for combo in itertools.product(*(range(len(labels)) for labels in groups)):
            branch = state.copy()
            for (_labels, group), i in zip(groups.items(), combo):
                for name in group:
                    var = (state.vars[name].variants or [])[i][1]
                    if var is None:
                        branch.vars.pop(name, None)
                    else:
                        branch.vars[name] = var
            out.append((tuple(labels[i] for labels, i in zip(groups, combo)), branch))
        return out

    def _expand_command(self, n: ts.Node, state: State) -> tuple[dict[str, EnvVar], list[Word], ts.Node | None]:
        """The env prefixes, words and name node of a simple command, expanded over `state`."""
        prefix: dict[str, EnvVar] = {}
        words: list[Word] = []
        name_node = None
        glue_end = -1
        named = False  # the grammar took the end of an assignment for the command name: the next word is
        for c, tail in glued(n.named_children):
            if c.type == "variable_assignment" and name_node is None:
                tmp = state.copy()
                name = self._assign(c, tmp, tail=tail)
                named = named or (tail is not None and tail.type == "command_name")
                if name:
                    span = self.src.span(c.start_byte, (tail or c).end_byte)
                    w = tmp.vars[name].words[0] if tmp.vars[name].words else Word("", span)
                    prefix[name] = EnvVar(name, w.text, span, w.unknown, True)
            elif c.type == "command_name" or (
                named and name_node is None and c.type not in REDIRECTS and c.type != "comment"
            ):
                name_node = c
                words.extend(
                    self.expander.field_words(
                        c.named_children[0] if c.type == "command_name" and c.named_children else c, state
                    )
                )
            elif c.type in REDIRECTS or c.type == "comment":
                continue
            elif name_node is not None:
                fields = self.expander.expand(c, state)
                span = self.src.node_span(c)
                if words and c.start_byte == glue_end and fields:
                    # tree-sitter-bash splits `x-$V/y` after an expansion into two nodes
                    # (the first ending in a bare `$`); bash sees one word.
                    prev = words.pop()
                    span = self.src.span(prev.span.start_byte, c.end_byte)
                    fields = self.expander.glue(prev, fields, c, state, span)
                words.extend(field_word(f, span) for f in fields)
                glue_end = c.end_byte
        return prefix, words, name_node

    def _script_argument(self, words: list[Word]) -> tuple[int, int] | None:
        """The byte range of a script given as a string to `eval` or `bash -c` (after any
        launcher: `ray job submit -- bash -c ...`), when that string is written in this file."""
        arg = None
        if words[0].text == "eval" and len(words) == 2:
            arg = words[1]
        for j, w in enumerate(words[:-2]):
            if (
                w.text
                and os.path.basename(w.text) in ("bash", "sh")
                and re.fullmatch(r"-[a-z]*c[a-z]*", words[j + 1].text or "")
            ):
                arg = words[j + 2]
                break
        if arg is None or arg.text is None or arg.span.path != self.src.path:
            return None
        node = self.src.tree.root_node.descendant_for_byte_range(arg.span.start_byte, arg.span.end_byte)
        if (
            node is None
            or node.type not in ("string", "raw_string")
            or (node.start_byte, node.end_byte) != (arg.span.start_byte, arg.span.end_byte)
        ):
            return None
        return node.start_byte + 1, node.end_byte - 1

    def _feeds_bash(self, stmt: ts.Node, redirect: ts.Node) -> bool:
        """`bash <<EOF` or `cat <<EOF | bash`: the here-document is a script."""
        cmds = [c for c in stmt.named_children if c.type == "command"]
        cmds += [
            c for p in redirect.named_children if p.type == "pipeline" for c in p.named_children if c.type == "command"
        ]
        names = [self.src.node_text(c.child_by_field_name("name") or c).strip() for c in cmds]
        return any(os.path.basename(x) in ("bash", "sh") for x in names)

    def _nested(self, start: int, end: int, state: State) -> None:
        if self.depth >= MAX_SOURCE_DEPTH or start >= end:
            return
        sub = Evaluator(self.src.region(start, end), self.allowed_roots, self.depth + 1)
        sub._note, sub._iteration = self._note, self._iteration
        sub._block(sub.src.tree.root_node.children, state)
        self.result.commands.extend(sub.result.commands)
        self.result.diagnostics.extend(sub.result.diagnostics)
        self.result.hidden_assignments.extend(sub.result.hidden_assignments)

    def _builtin(self, cmd: Command, state: State) -> None:
        if not cmd.words or cmd.words[0].text is None:
            return
        name, args = cmd.words[0].text, cmd.words[1:]
        if name in ("source", ".") and args:
            if not self._source(args[0], state):
                self.result.hidden_assignments.append(cmd.span)
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
                    state.vars[a.text] = Var(
                        [unknown_word(a.span, f"${a.text} is read from input")], assigned_at=a.span
                    )
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

    def _source(self, arg: Word, state: State) -> bool:
        """Evaluate a sourced file in this state; False when it was not read."""
        if arg.text is None or self.depth >= MAX_SOURCE_DEPTH:
            return False
        path = next((p for p in map(Path, places(arg, state.cwd, state.cwd_base, state.run_from)) if p.is_file()), None)
        if path is None:
            return False
        path = path.resolve()
        if not any(path == r or r in path.parents for r in self.allowed_roots):
            return False  # never read files outside the scanned tree
        try:
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        sub = Evaluator(Source(str(path), text), self.allowed_roots, self.depth + 1)
        sub._note, sub._iteration = self._note, self._iteration
        sub._block(sub.src.tree.root_node.children, state)
        self.result.commands.extend(sub.result.commands)
        self.result.diagnostics.extend(sub.result.diagnostics)
        self.result.hidden_assignments.extend(sub.result.hidden_assignments)
        self.result.sourced.append(str(path))
        return True


def evaluate(
    path: str,
    text: str,
    allowed_roots: list[Path] | None = None,
    positional: list[Word] | None = None,
    cwd: str | None = None,
    forced: frozenset[int] = frozenset(),
) -> ScriptResult:
    """Evaluate a script. `positional` are its arguments ("$@"; None: unknown), `cwd` where it
    runs, `forced` the keys of untaken arms (ScriptResult.untaken) to take instead."""
    src = Source(path, text)
    roots = allowed_roots if allowed_roots is not None else [Path(path).resolve().parent]
    if cwd or path.startswith("<"):  # the caller's directory (--cwd, `verl-lint run`, a command line)
        state = State(positional=positional, cwd=os.path.abspath(cwd or "."))
    else:
        run_from = working_dirs(Path(path))
        state = State(positional=positional, cwd=run_from[0], cwd_base=run_from[0], run_from=run_from)
    result, _ = Evaluator(src, [r.resolve() for r in roots], forced=forced).run(state)
    return result


def _descendants(node: ts.Node, type_: str) -> bool:
    return node.type == type_ or any(_descendants(c, type_) for c in node.children)
