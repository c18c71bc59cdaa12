"""Word expansion as bash does it, over known values: quoting, parameter expansion
(`${V:-d}`, `${V:=d}`, `${#V}`, arrays, positional parameters), tilde and the
directories of the script (`$(dirname "$0")`, `$(pwd)`), and `$(( ))` arithmetic.
(`arithmetic.py` evaluates `$(( ))`.) Whatever is only known at run time becomes a segment carrying an `Unknown`."""

from __future__ import annotations

import re
from pathlib import Path

import tree_sitter as ts

from ..catalogue import VARIABLE_USED_BEFORE_ASSIGNMENT
from ..model import Diagnostic, Span, Unknown, Word
from ..terminal import shorten
from . import arithmetic, patterns
from .source import Source
from .values import Seg, State, Var, expanded_seg, field_word, split_unquoted

# Words of substitutions that only compute a directory of the script (see _directory_of).
_DIR_WORDS = {"cd", "pwd", "dirname", "realpath", "readlink", "-f", "-P", "-L", "--", "&&"}
_SCRIPT_REFS = {"0", "{0}", "{BASH_SOURCE[0]}", "{BASH_SOURCE}", "BASH_SOURCE", "BASH_SOURCE[0]"}

# `$'...'`: bash's escapes (a backslash before anything else stays as written)
_ESCAPES = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
    "'": "'",
    '"': '"',
    "?": "?",
}
_ANSI_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.S)


def first_assignments(src: Source) -> dict[str, int]:
    """Where each variable is first assigned (or declared), as a byte offset."""
    first: dict[str, int] = {}

    def seen(name: str, byte: int) -> None:
        # The walk is not in source order: keep the earliest. `X="$X --flag"` uses X inside
        # its own first assignment, which is not a use before assignment.
        first[name] = min(byte, first.get(name, byte))

    stack = [src.tree.root_node]
    while stack:
        n = stack.pop()
        if n.type == "variable_assignment":
            name = n.child_by_field_name("name")
            if name is not None:
                seen(src.node_text(name).split("[")[0], n.start_byte)
        elif n.type in ("for_statement",):
            v = n.child_by_field_name("variable")
            if v is not None:
                seen(src.node_text(v), n.start_byte)
        elif n.type == "declaration_command":  # `declare -A X`, `local X`: declared here, on purpose
            for c in n.named_children:
                if c.type == "variable_name":
                    seen(src.node_text(c), n.start_byte)
        stack.extend(n.children)
    return first


# Builtins whose name-shaped arguments they assign (`read -r A B`, `getopts ab OPT`, `printf -v V`).
_ASSIGNING_BUILTINS = {"read", "getopts", "mapfile", "readarray", "printf", "let"}
_GUARDING_OPS = {":=", "=", ":-", "-", ":+", "+", ":?", "?"}
_ARITH_ASSIGN = {"=", "+=", "-=", "*=", "/=", "%=", "<<=", ">>=", "&=", "|=", "^=", "++", "--"}


def assigned_names(src: Source) -> set[str]:
    """Every name the script assigns anywhere, in any way bash has (assignments and
    declarations, see first_assignments; `for X in`; the builtins that assign their arguments;
    `(( X = ... ))`, `(( X++ ))`), or shows it expects unset (`${X:-d}`, `${X:+a}`, `${X:?}`,
    `[ -z "$X" ]`, `[ -v X ]`). Over-reading an argument only silences VL011."""
    names = set(first_assignments(src))
    stack = [src.tree.root_node]
    while stack:
        n = stack.pop()
        stack.extend(n.children)
        if n.type == "command":
            name = n.child_by_field_name("name")
            if name is not None and src.node_text(name) in _ASSIGNING_BUILTINS:
                for a in n.children_by_field_name("argument"):
                    names.update(re.findall(r"^[A-Za-z_][A-Za-z0-9_]*", src.node_text(a)))
        elif n.type == "variable_name" and n.parent is not None:
            after = n.next_sibling
            before = n.prev_sibling
            op = {after.type if after is not None else "", before.type if before is not None else ""}
            if n.parent.type in ("binary_expression", "postfix_expression", "unary_expression") and op & _ARITH_ASSIGN:
                names.add(src.node_text(n))
            elif n.parent.type == "expansion" and op & _GUARDING_OPS:
                names.add(src.node_text(n))
        elif n.type == "unary_expression" and n.children and src.node_text(n.children[0]) in ("-z", "-n", "-v"):
            names.update(re.findall(r"^\$?\{?([A-Za-z_][A-Za-z0-9_]*)", src.node_text(n.children[-1]).strip('"')))
    return names


class Expander:
    """Expands the word nodes of one source into fields (lists of segments); reports a variable
    used before the script assigns it into `diagnostics`."""

    def __init__(self, src: Source, diagnostics: list[Diagnostic]):
        self.src = src
        self.diagnostics = diagnostics
        self.first_assigned = first_assignments(src)
        self.assigned = assigned_names(src)
        self._reported_unset: set[tuple[str, int]] = set()
        self.reads: set[str] = set()  # the variables expanded since the caller last cleared it

    # -- words --------------------------------------------------------------
    def field_words(self, node: ts.Node, state: State) -> list[Word]:
        span = self.src.node_span(node)
        return [field_word(f, span) for f in self.expand(node, state)]

    def expand_all(self, nodes, state: State) -> None:
        for n in nodes:
            self.expand(n, state)

    def expand(self, node: ts.Node, state: State, quoted: bool = False) -> list[list[Seg]]:
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
            return self.expand(node.named_children[0], state, quoted) if node.named_children else [[Seg("", span)]]
        if t == "string":
            return self._expand_string(node, state)
        if t == "concatenation":
            fields: list[list[Seg]] = [[]]
            for c in node.children:
                if c.type == "`" or not c.is_named:
                    continue
                part = self.expand(c, state, quoted)
                if not part:
                    continue
                fields[-1].extend(part[0])
                fields.extend([list(p) for p in part[1:]])
            return [f for f in fields if f] or [[Seg("", span)]]
        if t in ("simple_expansion", "expansion"):
            return self._expand_param(node, state, quoted)
        if t == "arithmetic_expansion":
            v = arithmetic.evaluate(self, node, state)
            if isinstance(v, Unknown):
                return [[Seg(None, span, v)]]
            return [[Seg(str(v), span)]]
        if t in ("command_substitution", "process_substitution"):
            what = self.src.node_text(node)
            known = self._directory_of(what, state, span) if t == "command_substitution" else None
            if known is not None:
                return [[known]]
            return [[Seg(None, span, Unknown(f"the output of `{shorten(what)}` is only known at run time"))]]
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
            if (
                stop is None
                and node.next_sibling is not None
                and node.parent is not None
                and node.parent.type == "concatenation"
            ):
                continue  # `~"/x"`, `~$V`: the tilde-prefix runs into a quoted or expanded part
            user = text[i + 1 : end]
            if user not in ("", "+", "-") and (
                stop is None or stop.group() != "/" or not re.fullmatch(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*", user)
            ):
                # Bash keeps `~name` when no user `name` exists: a `~name` not followed by a path
                # is a Hydra delete (`~trainer.val_before_train`), not a login name.
                continue
            what = (
                "the home directory of the user who runs the script ($HOME)"
                if not user
                else ("$PWD" if user == "+" else "$OLDPWD" if user == "-" else f"the home directory of user {user}")
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

        def literal(start: int, end: int) -> None:
            if end > start:
                fields[-1].append(
                    Seg(
                        _unescape_dquote(self.src.data[start:end].decode("utf-8", "replace")), self.src.span(start, end)
                    )
                )

        # Text between the children is literal too: tree-sitter-bash leaves the blank before the
        # closing quote out of every node, and puts the one before a `${` into the expansion
        # (`"${A} ${B} "`: ` ${B}`, then nothing).
        pos = node.start_byte + 1  # after the opening quote
        for c in node.children:
            if not c.is_named:
                continue
            text = self.src.node_text(c)
            literal(pos, c.start_byte + (len(text) - len(text.lstrip(" \t")) if c.type == "expansion" else 0))
            pos = c.end_byte
            if c.type == "string_content":
                literal(c.start_byte, c.end_byte)
                continue
            part = self.expand(c, state, quoted=True)
            if not part:
                continue
            fields[-1].extend(part[0])
            fields.extend([list(p) for p in part[1:]])
        literal(pos, node.end_byte - 1)
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
            return [[Seg(None, span, Unknown(f"`{shorten(text)}` is not understood statically"))]]
        name = self.src.node_text(name_node)
        self.reads.add(name)
        if (
            index is None
            and name.isdigit()
            and name != "0"
            and state.positional is None
            and op in (":-", "-")
            and operand is not None
        ):
            return self.expand(operand, state, quoted=True)  # `${1:-ppo_trainer}`: analysed with its default
        if name in ("@", "*") or (index is None and name.isdigit()):
            return self._positional(name, span, state, quoted)
        if name == "PWD" and name not in state.vars and op is None:
            return [[state.cwd_seg(span)]]
        if op in patterns.STRING_OPS and not indirect and not length and index is None:
            var = state.vars.get(name)
            seg = patterns.edited(self, var, op, node, state, span) if var is not None else self.unset(name, node, span)
            return [[seg]] if quoted or seg.text is None else split_unquoted(Word(seg.text, span))
        if indirect or (op is not None and op not in (":-", "-", ":=", "=", ":+", "+")):
            if op is None and not indirect and length:
                pass
            else:
                return [[Seg(None, span, Unknown(f"`{shorten(text)}` is not evaluated statically"))]]
        var = state.vars.get(name)
        if var is None and op in (":-", "-", ":=", "="):
            default = self.expand(operand, state, quoted=True) if operand is not None else [[Seg("", span)]]
            word = field_word(default[0] if default else [], span)
            if op in (":=", "="):
                state.vars[name] = Var([word], assigned_at=span)
            return [[Seg(word.text, span if word.text is not None else word.span, word.unknown)]]
        if var is None:
            if op in (":+", "+"):
                return [[Seg("", span)]] if quoted else []
            return [[self.unset(name, node, span)]]
        if op in (":-", ":=") and not var.is_array and var.words and var.words[0].text == "":
            default = self.expand(operand, state, quoted=True) if operand is not None else [[Seg("", span)]]
            word = field_word(default[0] if default else [], span)
            if op == ":=":
                state.vars[name] = Var([word], exported=var.exported, assigned_at=span)
            return [[Seg(word.text, span, word.unknown)]]
        if op in (":+", "+"):
            alt = self.expand(operand, state, quoted=True) if operand is not None else [[Seg("", span)]]
            return alt
        if length:
            if index in ("@", "*"):
                return [[Seg(str(len(var.words)), span)]]
            w = var.words[0] if var.words else Word("", span)
            return [[Seg(str(len(w.text)) if w.text is not None else None, span, w.unknown)]]
        if index in ("@", "*"):
            words = var.words
            if index == "*" and quoted:
                return [[expanded_seg(_join_with_spaces(words, span), span)]]
            if quoted:
                return [[expanded_seg(w, w.span)] for w in words]
            return [f for w in words for f in split_unquoted(w)]
        if index is not None:
            if index.isdigit() and int(index) < len(var.words):
                w = var.words[int(index)]
            elif index.isdigit() and var.words and var.words[0].text is not None:
                return [[Seg("", span)]]
            else:
                return [[Seg(None, span, Unknown(f"`{shorten(text)}` indexes an array dynamically"))]]
        else:
            w = var.words[0] if var.words else Word("", span)
        if quoted:
            return [[expanded_seg(w, w.span)]]
        return split_unquoted(w)

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

    def _positional(self, name: str, span: Span, state: State, quoted: bool) -> list[list[Seg]]:
        if state.positional is None:
            if name in ("@", "*"):
                return [[Seg(None, span, Unknown('extra arguments passed to the script ("$@")'), True)]]
            if name == "0":
                return [[Seg(self.src.path, span)]]
            return [[Seg(None, span, Unknown(f"script argument ${name}"), True)]]
        if name in ("@", "*"):
            if quoted and name == "@":
                return [[expanded_seg(w, w.span)] for w in state.positional]
            if quoted:  # "$*": one word
                return [[expanded_seg(_join_with_spaces(state.positional, span), span)]]
            # Unquoted $@ / $*: every argument, each split on whitespace.
            return [f for w in state.positional for f in split_unquoted(w)]
        i = int(name)
        if i == 0:
            return [[Seg(self.src.path, span)]]
        if i <= len(state.positional):
            w = state.positional[i - 1]
            return [[expanded_seg(w, w.span)]] if quoted else split_unquoted(w)
        return [[Seg("", span)]]

    def unset(self, name: str, node: ts.Node, span: Span) -> Seg:
        later = self.first_assigned.get(name)
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
            self.diagnostics.append(
                VARIABLE_USED_BEFORE_ASSIGNMENT.finding(
                    f"${name} is used here but only assigned later in the script; {effect} unless the caller's "
                    "environment sets it",
                    span,
                    help=f"assign {name} before this line",
                    key=name,
                )
            )
            return Seg(None, span, Unknown(f"${name} is used before it is assigned"))
        return Seg(None, span, self._from_environment(name, span))

    def _from_environment(self, name: str, span: Span) -> Unknown:
        unassigned = (name, span) if name not in self.assigned else None
        return Unknown(f"${name} is not set in the script (comes from the environment)", unassigned)

    def glue(self, prev: Word, fields: list[list[Seg]], node: ts.Node, state: State, span: Span) -> list[list[Seg]]:
        """Join a word split by the grammar back onto the previous word (`$` + NAME + rest)."""
        head: list[Seg] = (
            [Seg(prev.text, span)] if prev.text is not None else [Seg(prev.prefix, span), Seg(None, span, prev.unknown)]
        )
        first = fields[0]
        if self.src.data[node.start_byte - 1 : node.start_byte] == b"$" and first and first[0].text:
            m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", first[0].text)
            if m:
                self.reads.add(m.group(0))
                var = state.vars.get(m.group(0))
                value = var.words[0] if var and var.words and not var.is_array else None
                seg = (
                    Seg(value.text, span, value.unknown)
                    if value is not None
                    else Seg(
                        None,
                        span,
                        self._from_environment(
                            m.group(0), self.src.span(node.start_byte - 1, node.start_byte + m.end())
                        ),
                    )
                )
                if prev.text is not None:
                    head = [Seg(prev.text[:-1] if prev.text.endswith("$") else prev.text, span), seg]
                else:
                    head = head + [seg]
                first = [Seg(first[0].text[m.end() :], first[0].span)] + first[1:]
        return [head + first] + fields[1:]


def _join_with_spaces(words: list[Word], span: Span) -> Word:
    if any(w.text is None for w in words):
        return Word(None, span, next(w.unknown for w in words if w.text is None))
    return Word(" ".join(w.text for w in words), span)


def _unescape_unquoted(text: str) -> str:
    if "\\" not in text:
        return text
    return re.sub(r"\\(\n|.)", lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _unescape_dquote(text: str) -> str:
    if "\\" not in text:
        return text
    return re.sub(r'\\([$`"\\\n])', lambda m: "" if m.group(1) == "\n" else m.group(1), text)


def _unescape_ansi(text: str) -> str:
    def one(m: re.Match) -> str:
        e = m.group(1)
        if e[0] in "xuU" and len(e) > 1:
            code = int(e[1:], 16)
            return chr(code) if code <= 0x10FFFF else ""  # beyond Unicode: bash writes nothing
        if e[0] in "01234567":
            return chr(int(e, 8) & 0xFF)
        if e[0] == "c" and len(e) == 2:
            return chr(ord(e[1]) & 0x1F)
        return _ESCAPES.get(e, "\\" + e)

    return _ANSI_ESCAPE.sub(one, text)
