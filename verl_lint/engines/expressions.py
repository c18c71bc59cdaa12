"""A small evaluator for verl source expressions over the composed config.

The assembly reader (`verl_lint.engines.assembly`) keeps verl's conditions and values as
source text (`self.config.expert_parallel_size > 1`); this decides them on one rollout section
of the composed config. Whatever it cannot know stays `UNKNOWN`, which refuses to be used as a
bool, so nothing is decided on an unknown by accident.
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterable
from typing import Any

from packaging.version import InvalidVersion, Version

from .pysource import const_str


class _Unknown:
    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:  # never decide on an unknown by accident
        raise TypeError("unknown value used as a bool")


UNKNOWN: Any = _Unknown()


class _Ref:
    """`self.config.<path>`: resolved lazily so `.get("k", d)` can use its default."""

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path


class _SelfObj:
    pass


class Evaluator:
    """Evaluates verl source expressions over `self.config` (one rollout section of the composed config).

    `lookup(path)` returns the value of `<section>.<path>` or `UNKNOWN`/`MISSING_VALUE`.
    """

    MISSING = object()

    def __init__(
        self,
        lookup: Callable[[str], Any],
        locals_: dict[str, str] | None = None,
        module: dict[str, str] | None = None,
        versions: dict[str, Version | None] | None = None,
    ):
        self.lookup = lookup
        self.locals = locals_ or {}
        self.module = module or {}
        self.versions = versions or {}
        self._depth = 0

    def eval(self, src: str | None) -> Any:
        if src is None:
            return UNKNOWN
        try:
            node = ast.parse(src, mode="eval").body
        except SyntaxError:
            return UNKNOWN
        return self._value(self.expr(node))

    def truth(self, conds: Iterable[str]) -> bool | None:
        """All conditions hold (True), one fails (False), or unknown (None)."""
        unknown = False
        for c in conds:
            v = self.eval(c)
            if v is UNKNOWN:
                unknown = True
                continue
            try:
                if not v:
                    return False
            except TypeError:
                unknown = True
        return None if unknown else True

    def config_refs(self, *srcs: str | None) -> list[str]:
        """The `self.config.<key>` paths expressions read (following local names), in order."""
        out: list[str] = []
        for src in srcs:
            if src is None:
                continue
            try:
                node = ast.parse(src, mode="eval")
            except SyntaxError:
                continue
            self._refs(node, out, 0)
        return list(dict.fromkeys(out))

    def _refs(self, node, out, depth):
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute):
                path = _self_config_path(n)
                if path and path != "get" and not path.endswith(".get"):
                    out.append(path)
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "get":
                base = _self_config_path(n.func.value) if isinstance(n.func.value, ast.Attribute) else None
                if (base == "" or _is_self_config(n.func.value)) and n.args and const_str(n.args[0]):
                    out.append(const_str(n.args[0]))
            elif isinstance(n, ast.Name) and n.id in self.locals and depth < 5:
                try:
                    self._refs(ast.parse(self.locals[n.id], mode="eval"), out, depth + 1)
                except SyntaxError:
                    pass

    # -- internals -------------------------------------------------------
    def _value(self, v):
        if isinstance(v, _Ref):
            r = self.lookup(v.path)
            return UNKNOWN if r is Evaluator.MISSING else r
        if isinstance(v, _SelfObj):
            return UNKNOWN
        return v

    def expr(self, n: ast.expr):
        self._depth += 1
        try:
            if self._depth > 40:
                return UNKNOWN
            return self._expr(n)
        finally:
            self._depth -= 1

    def _expr(self, n: ast.expr):
        if isinstance(n, ast.Constant):
            return n.value
        if isinstance(n, ast.Name):
            if n.id == "self":
                return _SelfObj()
            if n.id in self.locals:
                return self._sub(self.locals[n.id])
            if n.id in self.module:
                return self._sub(self.module[n.id])
            return UNKNOWN
        if isinstance(n, ast.Attribute):
            if isinstance(n.value, ast.Name) and n.attr == "__version__" and n.value.id in ("vllm", "sglang"):
                v = self.versions.get(n.value.id)
                return str(v) if v is not None else UNKNOWN
            base = self.expr(n.value)
            if isinstance(base, _SelfObj):
                return _Ref("") if n.attr == "config" else UNKNOWN
            if isinstance(base, _Ref):
                return _Ref(f"{base.path}.{n.attr}" if base.path else n.attr)
            base = self._value(base)
            if isinstance(base, dict):
                return base.get(n.attr, UNKNOWN)
            return UNKNOWN
        if isinstance(n, ast.Call):
            return self._call(n)
        if isinstance(n, ast.Compare):
            left = self._value(self.expr(n.left))
            for op, right_node in zip(n.ops, n.comparators):
                right = self._value(self.expr(right_node))
                if left is UNKNOWN or right is UNKNOWN:
                    return UNKNOWN
                try:
                    ok = _COMPARE[type(op)](left, right)
                except (TypeError, KeyError):
                    return UNKNOWN
                if not ok:
                    return False
                left = right
            return True
        if isinstance(n, ast.BoolOp):
            vals = [self._value(self.expr(v)) for v in n.values]
            if isinstance(n.op, ast.And):
                for v in vals:
                    if v is not UNKNOWN and not _truthy(v):
                        return v
                return UNKNOWN if any(v is UNKNOWN for v in vals) else vals[-1]
            for v in vals:
                if v is not UNKNOWN and _truthy(v):
                    return v
            return UNKNOWN if any(v is UNKNOWN for v in vals) else vals[-1]
        if isinstance(n, ast.UnaryOp):
            v = self._value(self.expr(n.operand))
            if v is UNKNOWN:
                return UNKNOWN
            try:
                if isinstance(n.op, ast.Not):
                    return not _truthy(v)
                if isinstance(n.op, ast.USub):
                    return -v
            except TypeError:
                return UNKNOWN
            return UNKNOWN
        if isinstance(n, ast.BinOp):
            a, b = self._value(self.expr(n.left)), self._value(self.expr(n.right))
            if a is UNKNOWN or b is UNKNOWN or isinstance(a, bool) or isinstance(b, bool):
                return UNKNOWN
            try:
                return _BINOPS[type(n.op)](a, b)
            except (TypeError, KeyError, ZeroDivisionError, ValueError):
                return UNKNOWN
        if isinstance(n, ast.IfExp):
            t = self._value(self.expr(n.test))
            if t is UNKNOWN:
                return UNKNOWN
            return self.expr(n.body if _truthy(t) else n.orelse)
        return UNKNOWN

    def _sub(self, src: str):
        try:
            return self.expr(ast.parse(src, mode="eval").body)
        except SyntaxError:
            return UNKNOWN

    def _call(self, n: ast.Call):
        f = n.func
        args = n.args
        # X.get("k", default)
        if isinstance(f, ast.Attribute) and f.attr == "get" and args and const_str(args[0]) is not None:
            base = self.expr(f.value)
            key = const_str(args[0])
            default = self._value(self.expr(args[1])) if len(args) > 1 else None
            if isinstance(base, _Ref):
                r = self.lookup(f"{base.path}.{key}" if base.path else key)
                if r is Evaluator.MISSING:
                    return default
                return r
            base = self._value(base)
            if isinstance(base, dict):
                return base.get(key, default)
            return UNKNOWN
        if isinstance(f, ast.Name) and f.id == "getattr" and len(args) >= 2 and const_str(args[1]) is not None:
            base = self.expr(args[0])
            key = const_str(args[1])
            default = self._value(self.expr(args[2])) if len(args) > 2 else UNKNOWN
            if isinstance(base, _Ref):
                r = self.lookup(f"{base.path}.{key}" if base.path else key)
                return default if r is Evaluator.MISSING else r
            base = self._value(base)
            if base is None:
                return default
            if isinstance(base, dict):
                return base.get(key, default)
            return UNKNOWN
        # version.parse("0.22.0") / version.parse(vllm.__version__)
        if (
            isinstance(f, ast.Attribute)
            and f.attr == "parse"
            and isinstance(f.value, ast.Name)
            and f.value.id == "version"
            and args
        ):
            v = self._value(self.expr(args[0]))
            if isinstance(v, str):
                try:
                    return Version(v)
                except InvalidVersion:
                    return UNKNOWN
            return UNKNOWN
        if isinstance(f, ast.Name) and f.id in ("int", "bool", "str", "float", "len") and len(args) == 1:
            v = self._value(self.expr(args[0]))
            if v is UNKNOWN:
                return UNKNOWN
            try:
                return {"int": int, "bool": bool, "str": str, "float": float, "len": len}[f.id](v)
            except (TypeError, ValueError):
                return UNKNOWN
        return UNKNOWN


def _truthy(v) -> bool:
    return bool(v)


def _is_self_config(n: ast.AST) -> bool:
    return (
        isinstance(n, ast.Attribute) and n.attr == "config" and isinstance(n.value, ast.Name) and n.value.id == "self"
    )


def _self_config_path(n: ast.Attribute) -> str | None:
    """`self.config.a.b` -> "a.b" ("" for `self.config` itself), else None."""
    parts = []
    cur: ast.AST = n
    while isinstance(cur, ast.Attribute):
        if _is_self_config(cur):
            return ".".join(reversed(parts))
        parts.append(cur.attr)
        cur = cur.value
    return None


_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
}
_BINOPS = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Div: lambda a, b: a / b,
    ast.Mod: lambda a, b: a % b,
}


def is_constant(src: str | None) -> bool:
    """The expression is a literal (`True`, `"mp"`): verl passes it whatever the config says."""
    try:
        return src is not None and isinstance(ast.parse(src, mode="eval").body, ast.Constant)
    except SyntaxError:
        return False


def same_value(a, b) -> bool:
    """A config value and an evaluated one are equal (a bool only equals a bool; else as text)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return str(a) == str(b)


def show(v) -> str:
    """A value as messages print it."""
    if v is UNKNOWN:
        return "unknown"
    if v is None:
        return "null"
    return repr(v) if isinstance(v, str) else str(v)
