"""Bash arithmetic (`$(( ))`) over an expander's words: integers in bash's bases, its operators
with C's truncating division, and an unknown wherever an operand is."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..model import Unknown, Word
from ..terminal import shorten
from .values import Expanding, State, field_word

if TYPE_CHECKING:
    import tree_sitter as ts


OPERATORS = {
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


def evaluate(ex: Expanding, node: ts.Node, state: State) -> int | Unknown:
    inner = [c for c in node.named_children]
    if not inner:
        return 0
    v: int | Unknown = 0
    for c in inner:  # `$((a, b))` evaluates to the last
        v = _arith(ex, c, state)
    return v


def _arith(ex: Expanding, n: ts.Node, state: State) -> int | Unknown:
    t = n.type
    if t == "number":
        return parse_int(ex.src.node_text(n))
    if t == "parenthesized_expression":
        return _arith(ex, n.named_children[0], state) if n.named_children else 0
    if t == "variable_name":
        return _variable(ex, ex.src.node_text(n), n, state)
    if t in ("simple_expansion", "expansion", "string", "concatenation", "word", "raw_string"):
        fields = ex.expand(n, state, quoted=True)
        w = field_word(fields[0] if fields else [], ex.src.node_span(n))
        if w.text is None:
            return w.unknown or Unknown("unknown operand")
        return arith_text(w.text, state)
    if t == "arithmetic_expansion" or t == "command_substitution":
        fields = ex.expand(n, state)
        w = field_word(fields[0] if fields else [], ex.src.node_span(n))
        return parse_int(w.text) if w.text is not None else (w.unknown or Unknown("unknown"))
    if t == "unary_expression":
        op = n.children[0].type
        v = _arith(ex, n.named_children[0], state)
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
        a, b = _arith(ex, left, state), _arith(ex, right, state)
        if isinstance(a, Unknown):
            return a
        if isinstance(b, Unknown):
            return b
        fn = OPERATORS.get(op_text)
        if fn is None:
            return Unknown(f"arithmetic operator {op_text}")
        r = fn(a, b)
        return Unknown(f"{a} {op_text} {b} is an arithmetic error") if r is None else r
    if t == "ternary_expression":
        cond = _arith(ex, n.named_children[0], state)
        if isinstance(cond, Unknown):
            return cond
        return _arith(ex, n.named_children[1] if cond else n.named_children[2], state)
    return Unknown(f"`{shorten(ex.src.node_text(n))}` in arithmetic is not evaluated")


def _variable(ex: Expanding, name: str, node: ts.Node, state: State) -> int | Unknown:
    ex.reads.add(name)
    var = state.vars.get(name)
    if var is None:
        seg = ex.unset(name, node, ex.src.node_span(node))
        return seg.unknown
    w = var.words[0] if var.words else Word("0", ex.src.node_span(node))
    if w.text is None:
        return w.unknown or Unknown(f"${name} is unknown")
    return arith_text(w.text, state)


def arith_text(text: str, state: State) -> int | Unknown:
    text = text.strip()
    if text == "":
        return 0
    v = parse_int(text)
    if not isinstance(v, Unknown):
        return v
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text) and text in state.vars:
        w = state.vars[text].words[0] if state.vars[text].words else None
        if w is not None and w.text is not None and w.text != text:
            return parse_int(w.text.strip())
    return Unknown(f"{text!r} is not an integer")


def parse_int(text: str) -> int | Unknown:
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
