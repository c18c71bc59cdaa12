"""Bash's string-editing parameter expansions on a known value: `${X#p}`, `${X##p}`, `${X%p}`,
`${X%%p}`, `${X/p/r}`, `${X//p/r}`, `${X/#p/r}`, `${X/%p/r}`, `${X^^}`, `${X,,}`, `${X^}`,
`${X,}` and `${X:offset[:length]}`. Patterns are bash's globs (`*`, `?`, `[...]`), where `*`
also matches `/`; fnmatch's are the same once the pattern holds nothing else."""

from __future__ import annotations

import glob
import itertools
import re
from fnmatch import fnmatchcase
import tree_sitter as ts

from ..model import Span, Unknown, Word
from ..terminal import shorten
from .values import Expanding, Seg, State, Var, field_word

STRING_OPS = {"#", "##", "%", "%%", "/", "//", "/#", "/%", "^", "^^", ",", ",,", ":"}


def edit(value: str, op: str, pattern: str | None = None, replacement: str = "") -> str | None:
    """`value` after `${X<op>pattern[/replacement]}`; None where bash's result is not followed
    here (an empty pattern to replace, a case change limited to a pattern)."""
    n = len(value)
    match = lambda i, j: fnmatchcase(value[i:j], pattern)  # noqa: E731
    if op in ("^", "^^", ",", ",,"):
        if pattern:
            return None
        change = str.upper if op[0] == "^" else str.lower
        return change(value) if len(op) == 2 else change(value[:1]) + value[1:]
    if pattern is None:
        return None
    if op == "#" or op == "##":
        ends = range(n + 1) if op == "#" else range(n, -1, -1)
        return next((value[j:] for j in ends if match(0, j)), value)
    if op == "%" or op == "%%":
        starts = range(n, -1, -1) if op == "%" else range(n + 1)
        return next((value[:i] for i in starts if match(i, n)), value)
    if not pattern:
        return None
    if op == "/#":
        return next((replacement + value[j:] for j in range(n, -1, -1) if match(0, j)), value)
    if op == "/%":
        return next((value[:i] + replacement for i in range(n + 1) if match(i, n)), value)
    out, i = [], 0
    while i <= n:  # `/`: the longest match at the first place one starts; `//`: then again after it
        j = next((j for j in range(n, i, -1) if match(i, j)), None)
        if j is None:
            out.append(value[i : i + 1])
            i += 1
            continue
        out.append(replacement)
        if op == "/":
            return "".join(out) + value[j:]
        i = j
    return "".join(out)


def substring(value: str, offset: int, length: int | None) -> str | None:
    """`${X:offset[:length]}`: a negative offset counts from the end, a negative length stops that
    far from the end; None where bash fails (`substring expression < 0`)."""
    n = len(value)
    start = offset if offset >= 0 else n + offset
    if start < 0:
        return ""  # bash expands to nothing when a negative offset reaches before the start
    if length is None:
        return value[start:]
    end = start + length if length >= 0 else n + length
    return None if end < start else value[start:end]


def edited(ex: Expanding, var: Var, op: str, node: ts.Node, state: State, span: Span) -> Seg:
    """The value of `node`, a `${X<op>...}` of the set variable `var`."""
    w = var.words[0] if var.words else Word("", span)
    if w.text is None:
        return Seg(None, span, w.unknown)
    after = list(itertools.dropwhile(lambda c: c.type != op, node.children))[1:]
    operands = [c for c in after if c.is_named]
    result = None
    if op == ":":
        texts = [ex.src.node_text(c).strip() for c in operands]  # offsets written as numbers only
        nums = [int(t) for t in texts if re.fullmatch(r"-?\d+", t)]
        if nums and len(nums) == len(texts) <= 2:
            result = substring(w.text, nums[0], nums[1] if len(nums) == 2 else None)
    elif len(operands) <= (2 if op[0] == "/" else 1):
        pattern = _pattern(ex, operands[0], state) if operands else None
        replacement = _value(ex, operands[1], state) if len(operands) == 2 else ""
        if (pattern is not None or not operands) and replacement is not None:
            result = edit(w.text, op, pattern, replacement)
    if result is None:
        return Seg(None, span, Unknown(f"`{shorten(ex.src.node_text(node))}` is not evaluated statically"))
    return Seg(result, span)


def _pattern(ex: Expanding, node: ts.Node, state: State) -> str | None:
    """A glob as written (None when it holds an expansion, quoting or an escape: the grammar
    does not split those the way bash does), or a quoted word, matched literally."""
    if node.type == "regex":
        text = ex.src.node_text(node)
        return None if re.search(r"[$`'\"\\(]", text) else text
    value = _value(ex, node, state) if node.type in ("string", "raw_string") else None
    return glob.escape(value) if value is not None else None


def _value(ex: Expanding, node: ts.Node, state: State) -> str | None:
    """A replacement's known text; None when unknown or holding `&` (bash 5.2: the match)."""
    fields = ex.expand(node, state, quoted=True)
    w = field_word(fields[0], ex.src.node_span(node)) if len(fields) == 1 else None
    return w.text if w is not None and w.text is not None and "&" not in w.text else None
