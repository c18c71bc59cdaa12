"""Where the code of a verl tree reads a config key name, and under which conditions (ast, never imported).

For one name at a time, the files whose text has it are parsed, and every place that reads a
config node of that name is kept with the conditions it runs under: the tests of the `if`s,
`elif`s, `while`s and conditional expressions around it, the left side of an `and`/`or`
before it, and an earlier `if c: ... return` (raise, continue, break) of its block, within its
own function. The guarded-key rule (`rules.guarded`) then asks, for a key the user set, whether every
read of it (or of a node above it) sits under a condition the launch's config makes false.

A read is any of: `x.name` loaded (also `x.name += 1`), `x["name"]`, `x.get("name")`,
`x.pop("name")`, `getattr(x, "name")`, `hasattr(x, "name")`, `"name" in x`,
`OmegaConf.select(x, "a.name")`; each keeps the chain it reads through
(`self.config.algorithm.kl_ctrl`). Any other string with the name in it (a key list, a message)
is a read with no known chain, which nothing can rule out: it keeps the key judged as read.
Assignments (`x.name = v`, `x["name"] = v`, `setattr(x, "name", v)`, `replace(x, name=v)`,
`OmegaConf.update(x, "a.name", v)`) are kept apart: a condition on a key the code assigns is not
judged from the config. Variables, parameters and other keyword arguments named like the key
are not reads of it, nor are docstrings. Conditions do not
cross a function boundary: a read in a function called only under a condition counts as
unconditional, which can only hide a finding.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ..cache import memo
from ..launch.locate import files_digest, source_files, source_roots, tree_stamp

# A condition: ("test", chain, op, values, text) | ("not", c) | ("and", cs) | ("or", cs) | ("?",)
# `chain` is the attribute chain the test reads (`("self", "config", "use_kl_loss")`), `op` one
# of truth, ==, !=, in, not in, is, is not, with the constants it compares against.
Cond = tuple
UNKNOWN: Cond = ("?",)
MANY = 30  # files: a name mentioned in more is not followed
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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
        elif (
            isinstance(node, ast.Subscript)
            and isinstance(node.slice, ast.Constant)
            and isinstance(node.slice.value, str)
        ):
            parts.append(node.slice.value)
            node = node.value
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and _const_str(node.args[:1])
        ):
            parts.append(node.args[0].value)
            node = node.func.value
        elif isinstance(node, ast.Name):
            parts.append(node.id)
            return tuple(reversed(parts))
        else:
            return None


def _const_str(args: list[ast.expr]) -> bool:
    return bool(args) and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str)


def _key(args: list[ast.expr]) -> bool:
    """The first argument is a string naming one key (`"kl_ctrl"`, not `"algorithm.kl_ctrl"`)."""
    return _const_str(args) and args[0].value.isidentifier()


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


def _guard(test: ast.expr, want: bool) -> tuple[Cond, bool, str]:
    """What runs only when `test` is `want`: (its condition, `want`, its source text)."""
    return condition(test), want, ast.unparse(test)


class _Finder:
    """A walk of a module for the reads and writes of `name`, with the guards around each read.
    It descends only into nodes whose lines hold the name (`lines`, sorted): the rest of the
    module cannot read it, and walking all of it in Python costs ~5x the parse. The guards on
    the way down are kept as (test, value) and described only for a read of the name."""

    def __init__(self, rel: str, lines: list[int], name: str):
        self.rel, self.lines, self.name = rel, lines, name
        self.reads: list[Read] = []
        self.writes: list[str] = []
        self.counted: set[int] = set()  # nodes already judged: strings read as a key, called functions
        self._described: dict[tuple[int, bool], tuple[Cond, bool, str]] = {}

    def read(
        self, name: str, node: ast.AST, chain: tuple[str, ...] | None, guards: tuple, const: ast.AST | None = None
    ) -> None:
        if name == self.name:
            self.reads.append(Read(self.rel, getattr(node, "lineno", 0), chain, tuple(map(self._describe, guards))))
        if const is not None:
            self.counted.add(id(const))

    def _describe(self, guard: tuple[ast.expr, bool]) -> tuple[Cond, bool, str]:
        test, want = guard
        hit = self._described.get((id(test), want))
        if hit is None:
            hit = self._described[(id(test), want)] = _guard(test, want)
        return hit

    def write(self, name: str, node: ast.AST, const: ast.AST | None = None) -> None:
        if name == self.name:
            self.writes.append(f"{self.rel}:{node.lineno}")
        if const is not None:
            self.counted.add(id(const))

    def visit(self, node: ast.AST, guards: tuple) -> None:
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            return  # a docstring (or a bare string): no effect
        first = getattr(node, "lineno", None)
        if first is not None:
            first = min([first, *(d.lineno for d in getattr(node, "decorator_list", ()))])  # decorators sit above `def`
            i = bisect.bisect_left(self.lines, first)
            if i == len(self.lines) or self.lines[i] > (node.end_lineno or first):
                return  # the name is on none of its lines
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            guards = ()  # the body runs when called, not where it is defined
        elif isinstance(node, (ast.If, ast.While, ast.IfExp)):
            self.visit(node.test, guards)
            self._block(node.body if isinstance(node.body, list) else [node.body], (*guards, (node.test, True)))
            if not isinstance(node, ast.While):  # a loop's else runs whenever it ends without break
                guards = (*guards, (node.test, False))
            self._block(node.orelse if isinstance(node.orelse, list) else [node.orelse], guards)
            return
        elif isinstance(node, ast.BoolOp):  # `a and b`: b runs only when a is true (false for `or`)
            before: tuple = ()
            for v in node.values:
                self.visit(v, (*guards, *before))
                before = (*before, (v, isinstance(node.op, ast.And)))
            return
        if isinstance(node, ast.AugAssign):  # `x.name += 1` reads it as well as assigning it
            target = node.target
            name = (
                target.attr
                if isinstance(target, ast.Attribute)
                else target.slice.value
                if isinstance(target, ast.Subscript) and _key([target.slice])
                else None
            )
            if name is not None:
                self.read(name, target, chain_of(target), guards)
        self._note(node, guards)
        for _, value in ast.iter_fields(node):
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                self._block(value, guards)
            elif isinstance(value, list):
                for child in value:
                    if isinstance(child, ast.AST):
                        self.visit(child, guards)
            elif isinstance(value, ast.AST):
                self.visit(value, guards)

    def _block(self, body: list, guards: tuple) -> None:
        """The statements of a block, in order: after `if c: ... return` (or raise, continue,
        break) with no else, the rest of the block runs only when c is false."""
        for stmt in body:
            self.visit(stmt, guards)
            if (
                isinstance(stmt, ast.If)
                and not stmt.orelse
                and isinstance(stmt.body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))
            ):
                guards = (*guards, (stmt.test, False))

    def _note(self, node: ast.AST, guards: tuple) -> None:
        if isinstance(node, ast.Attribute):
            if id(node) in self.counted:
                pass  # a method or module function: config values are not called
            elif isinstance(node.ctx, ast.Store):
                self.write(node.attr, node)
            else:
                self.read(node.attr, node, chain_of(node), guards)
        elif isinstance(node, ast.Subscript) and _key([node.slice]):
            name = node.slice.value
            if isinstance(node.ctx, ast.Store):
                self.write(name, node, node.slice)
            else:
                self.read(name, node, chain_of(node), guards, node.slice)
        elif isinstance(node, ast.Call):
            f, args = node.func, node.args
            self.counted.add(id(f))
            fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            if fname in ("get", "pop") and isinstance(f, ast.Attribute) and _key(args):
                self.read(args[0].value, node, _extend(chain_of(f.value), args[0].value), guards, args[0])
            elif fname in ("getattr", "hasattr") and len(args) >= 2 and _key(args[1:]):
                self.read(args[1].value, node, _extend(chain_of(args[0]), args[1].value), guards, args[1])
            elif fname == "setattr" and len(args) >= 2 and _key(args[1:]):
                self.write(args[1].value, node, args[1])
            elif (
                fname == "select"
                and len(args) >= 2
                and _const_str(args[1:])
                and all(p.isidentifier() for p in args[1].value.split("."))
            ):
                path = args[1].value.split(".")
                for i, name in enumerate(path):
                    self.read(name, node, _extend(chain_of(args[0]), *path[: i + 1]), guards, args[1])
            elif fname == "update" and len(args) >= 2 and _const_str(args[1:]):  # OmegaConf.update(cfg, "a.name", v)
                self.write(args[1].value.rsplit(".", 1)[-1], node, args[1])
            if fname in ("replace", "update", "_replace"):  # dataclasses.replace(cfg, name=v), d.update(name=v)
                for kw in node.keywords:
                    if kw.arg is not None:
                        self.write(kw.arg, node)
        elif (
            isinstance(node, ast.Compare)
            and len(node.ops) == 1
            and isinstance(node.ops[0], (ast.In, ast.NotIn))
            and _key([node.left])
        ):
            self.read(node.left.value, node, _extend(chain_of(node.comparators[0]), node.left.value), guards, node.left)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in self.counted:
            for name in set(WORD.findall(node.value)):  # a key list, a message, a dotted path: not followed
                self.read(name, node, None, guards)


def _extend(chain: tuple[str, ...] | None, *names: str) -> tuple[str, ...] | None:
    return None if chain is None else (*chain, *names)


class Sources:
    """The Python sources of a tree (and of an entry point's own packages), read once per process."""

    def __init__(self, tree_root: Path, extra: tuple[Path, ...] = ()):
        self.root, self.extra = tree_root, extra
        self._stamp: str | None = None
        self.files = [f for f in source_files(source_roots(tree_root, extra)) if f.suffix == ".py"]
        self._texts: dict[Path, str] = {}
        self._trees: dict[Path, ast.Module | None] = {}
        self._uses: dict[str, Uses | None] = {}
        self._words: dict[str, tuple[int, ...]] | None = None

    def _ident(self, what: str) -> str:
        """The cache entry of `what` about these sources (and verl-lint's code: cache.entry)."""
        if self._stamp is None:  # (an installed wheel is stamped by its RECORD, a checkout by its files)
            self._stamp = files_digest(self.root, self.files) if self.extra else tree_stamp(self.root)
        return "\0".join([str(self.root), *map(str, self.extra), self._stamp, what])

    def mentioning(self, name: str) -> list[Path]:
        """The files whose text has `name` as a word (not inside a longer one), from an index of
        every word of every file: built once per tree (~0.5 s) and kept on disk (`cache.memo`,
        folder `guards/`), where a scan of every file per name took ~10 ms."""
        if not name.isascii():  # the index splits words at ASCII letters, digits and `_` only
            return [f for f in self.files if next(word_starts(name, self._text(f)), None) is not None]
        if self._words is None:
            # (`word index` is no key's name: names are identifiers)
            self._words = memo("guards", self._ident("word index"), self._index_words, dict)
        return [self.files[i] for i in self._words.get(name, ())]

    def _index_words(self) -> dict[str, tuple[int, ...]]:
        """word -> the positions in `files` of the files that have it: a run of ASCII letters,
        digits and `_` with none of them on either side, as `word_starts` finds a name."""
        out: dict[str, list[int]] = {}
        for i, f in enumerate(self.files):
            for w in set(_RUN.findall(self._text(f))):
                out.setdefault(w, []).append(i)
        return {w: tuple(ix) for w, ix in out.items()}

    def _text(self, f: Path) -> str:
        t = self._texts.get(f)
        if t is None:
            try:
                t = f.read_text(encoding="utf-8", errors="replace")
            except OSError:
                t = ""
            self._texts[f] = t
        return t

    def _rel(self, f: Path) -> str:
        return os.path.relpath(f, self.root) if self.root in f.parents else str(f)

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
        MANY files mention (`actor`, `data`, `enable`): some read of it runs unconditionally.
        Kept on disk per tree and name (`cache.memo`, folder `guards/`): the first run over a
        tree parses the files (~2 s for the keys of a large script set), later runs read the answers."""
        if name not in self._uses:
            self._uses[name] = memo(
                "guards", self._ident(name), lambda: self._collect(name), lambda v: v is None or isinstance(v, Uses)
            )
        return self._uses[name]

    def _collect(self, name: str) -> Uses | None:
        files = self.mentioning(name)
        if len(files) > MANY:
            return None
        reads: list[Read] = []
        writes: list[str] = []
        for f in files:
            tree = self._tree(f)
            if tree is None:
                reads.append(Read(self._rel(f), 0, None, ()))  # unparseable: it may read anything
                continue
            found = uses_in(self._rel(f), self._text(f), tree, name)
            reads += found.reads
            writes += found.writes
        return Uses(tuple(reads), tuple(writes))


_RUN = re.compile(r"[A-Za-z0-9_]+")


_WORD_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


def word_starts(name: str, text: str) -> Iterator[int]:
    """The offsets at which `name` stands in `text` as a word: no ASCII letter, digit or `_` on
    either side. (str.find: a regex opening with a lookbehind cannot search for its literal, and
    was ~20x slower on a large module.)"""
    i, n = text.find(name) if name else -1, len(name)
    while i >= 0:
        if (i == 0 or text[i - 1] not in _WORD_CHARS) and text[i + n : i + n + 1] not in _WORD_CHARS:
            yield i
        i = text.find(name, i + n)


@lru_cache(maxsize=256)
def _line_starts(text: str) -> list[int]:
    """The offsets at which the lines of `text` start, after the first: a match at offset `o` is
    on line `bisect_right(starts, o) + 1`. (Counting the newlines before each match was quadratic in a
    large module that names a key often.)"""
    return [m.end() for m in re.finditer("\n", text)]


def uses_in(rel: str, text: str, tree: ast.Module, name: str) -> Uses:
    """The reads (with the guards around each) and writes of a node called `name` in one parsed
    module, `rel` naming its file: for the tree's sources, and for a fact about one file (how
    an entry point wires its workers, rules/roles.py)."""
    starts = _line_starts(text)
    finder = _Finder(rel, sorted({bisect.bisect_right(starts, o) + 1 for o in word_starts(name, text)}), name)
    finder.visit(tree, ())
    return Uses(tuple(finder.reads), tuple(finder.writes))


_SOURCES: dict[tuple, Sources] = {}  # by the arguments as asked, and as resolved


def sources(tree_root: Path, extra: tuple[Path, ...] = ()) -> Sources:
    """The tree's sources, kept for the process (one run lints many scripts against one tree);
    asked again with the same arguments (once per launch), no path is resolved again."""
    asked = (tree_root, extra)
    hit = _SOURCES.get(asked)
    if hit is None:
        key = (Path(tree_root).resolve(), tuple(Path(p).resolve() for p in extra))
        hit = _SOURCES.get(key)
        if hit is None:
            hit = _SOURCES[key] = Sources(*key)
        _SOURCES[asked] = hit
    return hit


__all__ = ["Cond", "Read", "Sources", "UNKNOWN", "Uses", "WORD", "chain_of", "condition", "sources", "uses_in"]
