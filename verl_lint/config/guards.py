"""Where the code of a verl tree reads a config key name, and under which conditions (ast, never imported).

For one name at a time, the files whose text has it are parsed, and every place that reads a
config node of that name is kept with the conditions it runs under: the tests of the `if`s,
`elif`s, `while`s and conditional expressions around it, and the left side of an `and`/`or`
before it, within its own function. VL233 then asks, for a key the user set, whether every
read of it (or of a node above it) sits under a condition the launch's config makes false.

A read is any of: `x.name` loaded (also `x.name += 1`), `x["name"]`, `x.get("name")`,
`x.pop("name")`, `getattr(x, "name")`, `hasattr(x, "name")`, `"name" in x`,
`OmegaConf.select(x, "a.name")`; each keeps the chain it reads through
(`self.config.algorithm.kl_ctrl`). Any other string with the name in it (a key list, a message)
is a read with no known chain, which nothing can rule out: it keeps the key judged as read.
Assignments (`x.name = v`, `x["name"] = v`, `setattr(x, "name", v)`) are kept apart: a
condition on a key the code assigns is not judged from the config. Variables, parameters and
keyword arguments named like the key are not reads of it, nor are docstrings. Conditions do not
cross a function boundary: a read in a function called only under a condition counts as
unconditional, which can only hide a finding.
"""

from __future__ import annotations

import ast
import os
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..launch.locate import source_files, source_roots

# A condition: ("test", chain, op, values, text) | ("not", c) | ("and", cs) | ("or", cs) | ("?",)
# `chain` is the attribute chain the test reads (`("self", "config", "use_kl_loss")`), `op` one
# of truth, ==, !=, in, not in, is, is not, with the constants it compares against.
Cond = tuple
UNKNOWN: Cond = ("?",)
MANY = 30  # files: a name mentioned in more is not followed


@dataclass(frozen=True)
class Read:
    """One place that reads a node of the name."""

    file: str  # relative to the tree root (absolute outside it)
    line: int
    chain: tuple[str, ...] | None  # the chain read through, ending in the name; None: not known
    guards: tuple[tuple[Cond, bool, str], ...]  # (condition, the value it must have to run here, its source text)


@dataclass(frozen=True)
class Uses:
    reads: tuple[Read, ...]
    writes: tuple[str, ...]  # "file:line" of each assignment to an attribute or item of the name


def chain_of(node: ast.AST) -> tuple[str, ...] | None:
    """`self.config["a"].get("b")` -> ("self", "config", "a", "b"); None through anything else."""
    parts: list[str] = []
    while True:
        if isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
            parts.append(node.slice.value)
            node = node.value
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and _const_str(node.args[:1]):
            parts.append(node.args[0].value)
            node = node.func.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return tuple(reversed(parts))
        else:
            return None


def _const_str(args: list[ast.expr]) -> bool:
    return bool(args) and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)


def _constants(node: ast.Tuple | ast.List | ast.Set) -> tuple | None:
    """The constants of a literal `("a", "b")` / `["a"]` / `{"a"}`, else None."""
    if all(isinstance(e, ast.Constant) for e in node.elts):
        return tuple(e.value for e in node.elts)
    return None


_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.In: "in", ast.NotIn: "not in", ast.Is: "is", ast.IsNot: "is not"}


def condition(test: ast.expr) -> Cond:
    """The condition a test expression states, as far as it reads config chains."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return ("not", condition(test.operand))
    if isinstance(test, ast.BoolOp):
        return ("and" if isinstance(test.op, ast.And) else "or", tuple(condition(v) for v in test.values))
    if isinstance(test, ast.Compare):
        if len(test.ops) != 1 or type(test.ops[0]) not in _OPS:
            return UNKNOWN
        op, right = _OPS[type(test.ops[0])], test.comparators[0]
        if op in ("in", "not in"):  # against a literal collection (`in "abc"` is a substring test)
            values = _constants(right) if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else None
        else:
            values = (right.value,) if isinstance(right, ast.Constant) else None
        chain = chain_of(test.left)
        return ("test", chain, op, values, ast.unparse(test)) if chain is not None and values is not None else UNKNOWN
    chain = chain_of(test)
    return ("test", chain, "truth", (), ast.unparse(test)) if chain is not None and len(chain) > 1 else UNKNOWN


class _Finder:
    """Collects the reads and writes of `name` in one module, with the guards around each read."""

    def __init__(self, name: str, rel: str):
        self.name, self.rel = name, rel
        self.word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
        self.reads: list[Read] = []
        self.writes: list[str] = []
        self.counted: set[int] = set()  # nodes already judged: strings read as a key, called functions

    def read(self, node: ast.AST, chain: tuple[str, ...] | None, guards: tuple, const: ast.AST | None = None) -> None:
        self.reads.append(Read(self.rel, getattr(node, "lineno", 0), chain, guards))
        if const is not None:
            self.counted.add(id(const))

    def write(self, node: ast.AST, const: ast.AST | None = None) -> None:
        self.writes.append(f"{self.rel}:{node.lineno}")
        if const is not None:
            self.counted.add(id(const))

    def visit(self, node: ast.AST, guards: tuple) -> None:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # a docstring (or a bare string): no effect
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            guards = ()  # the body runs when called, not where it is defined
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            self.visit(node.test, guards)
            cond, text = condition(node.test), ast.unparse(node.test)
            for child in node.body if isinstance(node.body, list) else [node.body]:
                self.visit(child, (*guards, (cond, True, text)))
            if not isinstance(node, ast.While):  # a loop's else runs whenever it ends without break
                guards = (*guards, (cond, False, text))
            for child in node.orelse if isinstance(node.orelse, list) else [node.orelse]:
                self.visit(child, guards)
            return
        elif isinstance(node, ast.BoolOp):  # `a and b`: b runs only when a is true (false for `or`)
            before: tuple = ()
            for v in node.values:
                self.visit(v, (*guards, *before))
                before = (*before, (condition(v), isinstance(node.op, ast.And), ast.unparse(v)))
            return
        self._note(node, guards)
        for child in ast.iter_child_nodes(node):
            self.visit(child, guards)

    def _note(self, node: ast.AST, guards: tuple) -> None:
        name = self.name
        if isinstance(node, ast.Attribute) and node.attr == name:
            if id(node) in self.counted:
                pass  # a method or module function called `name`: config values are not called
            elif isinstance(node.ctx, ast.Store):
                self.write(node)
            else:
                self.read(node, chain_of(node), guards)
        elif isinstance(node, ast.Subscript) and _is(node.slice, name):
            if isinstance(node.ctx, ast.Store):
                self.write(node, node.slice)
            else:
                self.read(node, chain_of(node), guards, node.slice)
        elif isinstance(node, ast.Call):
            f, args = node.func, node.args
            self.counted.add(id(f))
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if fname in ("get", "pop") and isinstance(f, ast.Attribute) and args and _is(args[0], name):
                self.read(node, _extend(chain_of(f.value), name), guards, args[0])
            elif fname in ("getattr", "hasattr") and len(args) >= 2 and _is(args[1], name):
                self.read(node, _extend(chain_of(args[0]), name), guards, args[1])
            elif fname == "setattr" and len(args) >= 2 and _is(args[1], name):
                self.write(node, args[1])
            elif fname == "select" and len(args) >= 2 and _const_str(args[1:]) and name in args[1].value.split("."):
                path = args[1].value.split(".")
                self.read(node, _extend(chain_of(args[0]), *path[: path.index(name) + 1]), guards, args[1])
        elif isinstance(node, ast.Compare) and len(node.ops) == 1 and isinstance(node.ops[0], (ast.In, ast.NotIn)) and _is(node.left, name):
            self.read(node, _extend(chain_of(node.comparators[0]), name), guards, node.left)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in self.counted and self.word.search(node.value):
            self.read(node, None, guards)  # a key list, a message, a dotted path: not followed


def _is(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Constant) and node.value == name


def _extend(chain: tuple[str, ...] | None, *names: str) -> tuple[str, ...] | None:
    return None if chain is None else (*chain, *names)


class Sources:
    """The Python sources of a tree (and of an entry point's own packages), read once per process."""

    def __init__(self, tree_root: Path, extra: tuple[Path, ...] = ()):
        self.root = tree_root
        self.files = [f for f in source_files(source_roots(tree_root, extra)) if f.suffix == ".py"]
        self._texts: dict[Path, str] = {}
        self._trees: dict[Path, ast.Module | None] = {}
        self._uses: dict[str, Uses | None] = {}

    def _text(self, f: Path) -> str:
        t = self._texts.get(f)
        if t is None:
            try:
                t = f.read_text(encoding="utf-8", errors="replace")
            except OSError:
                t = ""
            self._texts[f] = t
        return t

    def _tree(self, f: Path) -> ast.Module | None:
        if f not in self._trees:
            try:
                with warnings.catch_warnings():  # a bad escape in the tree's code is not ours to report
                    warnings.simplefilter("ignore")
                    self._trees[f] = ast.parse(self._text(f))
            except (SyntaxError, ValueError, RecursionError):
                self._trees[f] = None
        return self._trees[f]

    def uses(self, name: str) -> Uses | None:
        """Every read and write of a node called `name` in the sources; None for a name more than
        MANY files mention (`actor`, `data`, `enable`): some read of it runs unconditionally, and
        parsing them all would cost seconds."""
        if name in self._uses:
            return self._uses[name]
        word = re.compile(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])")
        files = [f for f in self.files if name in self._text(f) and word.search(self._text(f))]
        if len(files) > MANY:
            self._uses[name] = None
            return None
        reads: list[Read] = []
        writes: list[str] = []
        for f in files:
            rel = os.path.relpath(f, self.root) if self.root in f.parents else str(f)
            tree = self._tree(f)
            if tree is None:
                reads.append(Read(rel, 0, None, ()))  # unparseable: it may read anything
                continue
            finder = _Finder(name, rel)
            finder.visit(tree, ())
            reads += finder.reads
            writes += finder.writes
        hit = self._uses[name] = Uses(tuple(reads), tuple(writes))
        return hit


_SOURCES: dict[tuple[Path, tuple[Path, ...]], Sources] = {}


def sources(tree_root: Path, extra: tuple[Path, ...] = ()) -> Sources:
    """The tree's sources, kept for the process (one run lints many scripts against one tree)."""
    key = (Path(tree_root).resolve(), tuple(Path(p).resolve() for p in extra))
    hit = _SOURCES.get(key)
    if hit is None:
        hit = _SOURCES[key] = Sources(*key)
    return hit


__all__ = ["Cond", "Read", "Sources", "UNKNOWN", "Uses", "chain_of", "condition", "sources"]
