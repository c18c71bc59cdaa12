"""How the linted verl tree hands arguments to the rollout engine, read with `ast` from its source.

`vLLMHttpServer.launch_server` / `SGLangHttpServer.launch_server` build one dict literal with
`**engine_kwargs` in it, then `args.update(...)` / `args[k] = ...` it. Walking that function
(and the helper methods it hands `engine_kwargs` to) gives every key verl sets, whether your
value wins or loses, and under which source condition — so a new verl release is read, not
hand-listed. When the shape is not recognised, the bundled `rules/engine_args/verl_assembly.yaml`
(derived from verl 0.9.1) answers and says so. The conditions are decided on the composed config
by `verl_lint.engines.expressions`.

Also read from the tree: the synchronous rollout's `LLM(..., **engine_kwargs)` calls up to verl
0.6 (`spread_calls`), the constant defaults of verl's `RolloutConfig`, and the engine
environment variables verl itself reads or sets.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from packaging.version import InvalidVersion, Version

from ..cache import memo
from ..evidence import source_text
from ..knowledge import load_table
from .pysource import const_str, parse_source, top_classes


class ArgSet(NamedTuple):
    """One place where verl's server code sets, keeps or consumes an engine argument."""

    key: str
    # "pre": engine_kwargs edited before the args literal; "default": literal before **engine_kwargs; "after": after it
    phase: str
    kind: str  # "set" | "setdefault" | "pop"
    value: str | None  # source of verl's value expression
    condition: tuple[str, ...]  # source of every enclosing condition (empty: always)
    line: int

    @property
    def overwrites(self) -> bool:
        """verl's value replaces yours (when `condition` holds)."""
        return self.kind == "set" and self.phase in ("pre", "after")

    def condition_text(self, section: str) -> str:
        """The conditions, readable (see `readable`)."""
        return " and ".join(readable(c, section) for c in self.condition)


class Assembly(NamedTuple):
    engine: str  # "vllm" | "sglang"
    path: str  # file, relative to the verl tree root
    function: str  # Class.method
    spread_line: int
    entries: tuple[ArgSet, ...]
    local_exprs: tuple[tuple[str, str], ...] = ()  # simple local assignments (name, expression source)
    module_exprs: tuple[tuple[str, str], ...] = ()  # module-level simple assignments
    origin: str = "source"  # "source" or "data: <why>"

    def for_key(self, key: str) -> list[ArgSet]:
        return [e for e in self.entries if e.key == key]

    def where(self, line: int) -> str:
        """`path:line`, and where the entries came from when not from the linted tree."""
        base = f"{self.path}:{line}" if line else self.path
        return base if self.from_source else f"{base}, bundled copy: {self.origin}"

    def value_text(self, src: str | None, section: str) -> str:
        """verl's value expression, readable; a local name is shown with its definition."""
        locals_ = dict(self.local_exprs)
        if src in locals_:
            return f"{src} = {readable(locals_[src], section)}"
        return readable(src, section)

    @property
    def from_source(self) -> bool:
        return self.origin == "source"


def readable(src: str | None, section: str) -> str:
    """verl source with `self.config.` written as the rollout config section it reads."""
    return (src or "").replace("self.config.", f"{section}.")


SERVER_FILES = {
    "vllm": "verl/workers/rollout/vllm_rollout/vllm_async_server.py",
    "sglang": "verl/workers/rollout/sglang_rollout/async_sglang_server.py",
}


def _is_spread_dict(node: ast.AST, ek: str) -> bool:
    return isinstance(node, ast.Dict) and any(
        k is None and isinstance(v, ast.Name) and v.id == ek for k, v in zip(node.keys, node.values)
    )


class _Walker:
    """Walks `launch_server` in source order, following engine_kwargs into helper methods."""

    MAX_DEPTH = 3

    def __init__(self, methods: dict[str, ast.FunctionDef]):
        self.methods = methods
        self.entries: list[ArgSet] = []
        self.args_name: str | None = None
        self.spread_line = 0
        self.locals: dict[str, str] = {}
        self.local_dicts: dict[str, list[tuple[str, str, tuple[str, ...], int]]] = {}
        self.depth = 0

    def add(self, key, phase, kind, value, conds, line):
        self.entries.append(
            ArgSet(key, phase, kind, ast.unparse(value) if isinstance(value, ast.AST) else value, tuple(conds), line)
        )

    def block(self, stmts: Iterable[ast.stmt], conds: tuple[str, ...], ek: str) -> None:
        for s in stmts:
            self.stmt(s, conds, ek)

    def stmt(self, s: ast.stmt, conds: tuple[str, ...], ek: str) -> None:
        if isinstance(s, ast.If):
            test = ast.unparse(s.test)
            self.block(s.body, conds + (test,), ek)
            self.block(s.orelse, conds + (f"not ({test})",), ek)
        elif isinstance(s, (ast.With, ast.AsyncWith)):
            self.block(s.body, conds, ek)
        elif isinstance(s, ast.Try):
            self.block(s.body, conds, ek)
            self.block(s.orelse, conds, ek)
            self.block(s.finalbody, conds, ek)
        elif isinstance(s, (ast.For, ast.AsyncFor, ast.While)):
            header = "<loop>"
            self.block(s.body, conds + (header,), ek)
        elif isinstance(s, (ast.Assign, ast.AnnAssign)):
            targets = s.targets if isinstance(s, ast.Assign) else [s.target]
            if s.value is not None:
                self.assign(targets, s.value, conds, ek, s.lineno)
        elif isinstance(s, ast.Expr) and isinstance(s.value, ast.Call):
            self.call(s.value, conds, ek, s.lineno)

    def assign(self, targets, value: ast.expr, conds, ek: str, line: int) -> None:
        if (
            _is_spread_dict(value, ek)
            and self.args_name is None
            and len(targets) == 1
            and isinstance(targets[0], ast.Name)
        ):
            self.args_name = targets[0].id
            self.spread_line = line
            seen_spread = False
            for k, v in zip(value.keys, value.values):
                if k is None:
                    seen_spread = seen_spread or (isinstance(v, ast.Name) and v.id == ek)
                    continue
                key = const_str(k)
                if key is not None:
                    self.add(key, "after" if seen_spread else "default", "set", v, conds, getattr(k, "lineno", line))
            return
        # `x = engine_kwargs.pop("k", ...) or {}`: verl consumes your value
        for sub in ast.walk(value):
            if isinstance(sub, ast.Call):
                self.call(sub, conds, ek, line, consumed_only=True)
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                key = const_str(t.slice)
                if key is None:
                    continue
                if t.value.id == ek and self.args_name is None:
                    self.add(key, "pre", "set", value, conds, line)
                elif self.args_name is not None and t.value.id == self.args_name:
                    self.add(key, "after", "set", value, conds, line)
                elif t.value.id in self.local_dicts:
                    self.local_dicts[t.value.id].append((key, ast.unparse(value), conds, line))
            elif isinstance(t, ast.Name):
                if isinstance(value, ast.Dict) and None not in value.keys:
                    self.local_dicts[t.id] = [
                        (key, ast.unparse(v), conds, getattr(k, "lineno", line))
                        for k, v in zip(value.keys, value.values)
                        if (key := const_str(k)) is not None
                    ]
                if t.id != ek:
                    self.locals.setdefault(t.id, ast.unparse(value))

    def call(self, c: ast.Call, conds, ek: str, line: int, consumed_only: bool = False) -> None:
        f = c.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            owner, meth = f.value.id, f.attr
            key = const_str(c.args[0]) if c.args else None
            if owner == ek and self.args_name is None:
                if meth == "pop" and key is not None:
                    self.add(key, "pre", "pop", None, conds, line)
                elif consumed_only:
                    return
                elif meth == "setdefault" and key is not None:
                    self.add(key, "pre", "setdefault", c.args[1] if len(c.args) > 1 else None, conds, line)
                elif meth == "update" and c.args and isinstance(c.args[0], ast.Dict):
                    for k, v in zip(c.args[0].keys, c.args[0].values):
                        if (kk := const_str(k)) is not None:
                            self.add(kk, "pre", "set", v, conds, line)
                return
            if consumed_only:
                return
            if self.args_name is not None and owner == self.args_name and meth == "update" and c.args:
                arg = c.args[0]
                if isinstance(arg, ast.Dict):
                    for k, v in zip(arg.keys, arg.values):
                        if (kk := const_str(k)) is not None:
                            self.add(kk, "after", "set", v, conds, getattr(k, "lineno", line))
                elif isinstance(arg, ast.Name) and arg.id in self.local_dicts:
                    for kk, v, dconds, dline in self.local_dicts[arg.id]:
                        merged = tuple(dict.fromkeys(conds + dconds))
                        self.add(kk, "after", "set", v, merged, dline)
                return
            # self.helper(engine_kwargs): follow into the method with the parameter renamed
            if owner == "self" and meth in self.methods and self.depth < self.MAX_DEPTH and self.args_name is None:
                fn = self.methods[meth]
                params = [a.arg for a in fn.args.args][1:]  # drop self
                for i, a in enumerate(c.args):
                    if isinstance(a, ast.Name) and a.id == ek and i < len(params):
                        # the helper's locals join the caller's (first assignment wins): its
                        # conditions read them (checkpoint_config = getattr(self.config, ...))
                        self.depth += 1
                        self.block(fn.body, conds, params[i])
                        self.depth -= 1
                        break


def _class_methods(tree: ast.Module) -> dict[str, dict[str, ast.FunctionDef]]:
    out = {}
    classes = top_classes(tree)
    for name, cls in classes.items():
        methods: dict[str, ast.FunctionDef] = {}
        # bases in the same file first, so the class's own methods win
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id in classes:
                methods.update(
                    {m.name: m for m in classes[b.id].body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))}
                )
        methods.update({m.name: m for m in cls.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))})
        out[name] = methods
    return out


def _module_exprs(tree: ast.Module) -> tuple[tuple[str, str], ...]:
    out = {}
    for n in tree.body:
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name):
            out[n.targets[0].id] = ast.unparse(n.value)
    return tuple(out.items())


def read_assembly_source(text: str, engine: str, path: str) -> Assembly | None:
    """The assembly of `launch_server` in one server module's source, or None when its shape is not recognised."""
    tree = parse_source(text)
    if tree is None:
        return None
    for cname, methods in _class_methods(tree).items():
        fn = methods.get("launch_server")
        if fn is None:
            continue
        ek = _engine_kwargs_name(fn)
        if ek is None:
            continue
        w = _Walker(methods)
        w.block(fn.body, (), ek)
        if w.args_name is None:
            continue
        return Assembly(
            engine,
            path,
            f"{cname}.launch_server",
            w.spread_line,
            tuple(w.entries),
            tuple(w.locals.items()),
            _module_exprs(tree),
        )
    return None


def _engine_kwargs_name(fn: ast.FunctionDef) -> str | None:
    """The local name spread with `**NAME` into a dict literal inside `fn`."""
    for n in ast.walk(fn):
        if isinstance(n, ast.Dict):
            for k, v in zip(n.keys, n.values):
                if k is None and isinstance(v, ast.Name) and "kwargs" in v.id:
                    return v.id
    return None


@lru_cache(maxsize=16)
def assembly_of(root: str, engine: str) -> Assembly | None:
    """How the verl tree at `root` assembles `engine`'s server arguments (cached per tree)."""
    rel = SERVER_FILES.get(engine)
    if rel is None:
        return None
    p = Path(root) / rel
    try:
        st = p.stat()
    except OSError:
        return fallback_assembly(engine, f"{rel} does not exist in this verl tree")

    def read() -> Assembly | None:
        text = source_text(p)
        return read_assembly_source(text, engine, rel) if text is not None else None

    # Reading verl's sources with ast costs ~0.1 s: kept on disk per file version.
    a = memo(
        "engine_args",
        f"assembly\0{p.resolve()}\0{st.st_mtime_ns}\0{st.st_size}\0{engine}",
        read,
        (Assembly, type(None)),
    )
    return a if a is not None else fallback_assembly(engine, f"the shape of {rel} was not recognised")


class SpreadCall(NamedTuple):
    """A call that passes `**engine_kwargs` next to keywords of its own (`LLM(..., seed=0,
    **engine_kwargs)`): an engine kwarg of the same name makes Python raise TypeError."""

    path: str
    line: int
    callee: str
    keywords: tuple[tuple[str, str, int], ...]  # (name, value source, line)


@lru_cache(maxsize=16)
def spread_calls(root: str, engine: str, version: str | None = None) -> tuple[SpreadCall, ...]:
    """The calls in the modules of `verl/workers/rollout/<engine>_rollout/` that its package
    imports (verl 0.4 imports one of two by the engine's version: the one `version` picks, both
    when it is not known) that spread the engine kwargs (the synchronous rollout's `LLM(...)` up
    to verl 0.6); a key the function pops is left out."""
    calls: dict[tuple[str, int], SpreadCall] = {}  # by place: a nested function is walked twice
    folder = Path(root, "verl/workers/rollout", f"{engine}_rollout")
    init = parse_source(source_text(folder / "__init__.py"))
    imported = _imported(init.body, Version(version) if version else None) if init else set()
    for p in sorted(folder.glob("*.py")) if folder.is_dir() else ():
        if p.stem not in imported:
            continue
        tree = parse_source(source_text(p))
        for fn in [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))] if tree else ():
            popped = {
                const_str(c.args[0])
                for c in ast.walk(fn)
                if isinstance(c, ast.Call)
                and isinstance(c.func, ast.Attribute)
                and c.func.attr == "pop"
                and c.args
                and isinstance(c.func.value, ast.Name)
                and "engine_kwargs" in c.func.value.id
            }
            for n in ast.walk(fn):
                if isinstance(n, ast.Call) and any(
                    k.arg is None and isinstance(k.value, ast.Name) and "engine_kwargs" in k.value.id
                    for k in n.keywords
                ):
                    own = tuple(
                        (k.arg, ast.unparse(k.value), k.value.lineno)
                        for k in n.keywords
                        if k.arg is not None and k.arg not in popped
                    )
                    rel = str(p.relative_to(root))
                    calls.setdefault((rel, n.lineno), SpreadCall(rel, n.lineno, ast.unparse(n.func), own))
    return tuple(calls.values())


def _imported(body: list[ast.stmt], version: Version | None) -> set[str]:
    """The sibling modules `from .X import ...` statements in `body` import; under `if
    Version(v) <= Version("0.6.3"):` only the branch `version` takes (both when unknown)."""
    out: set[str] = set()
    for stmt in body:
        if isinstance(stmt, ast.ImportFrom) and stmt.level == 1 and stmt.module:
            out.add(stmt.module)
        elif isinstance(stmt, ast.If):
            taken = _version_test(stmt.test, version)
            out |= (_imported(stmt.body, version) if taken is not False else set()) | (
                _imported(stmt.orelse, version) if taken is not True else set()
            )
    return out


def _version_test(test: ast.expr, version: Version | None) -> bool | None:
    """`Version(x) <op> Version("0.6.3")` decided for `version`; None when unknown or not that shape."""
    compare = {
        ast.LtE: Version.__le__,
        ast.Lt: Version.__lt__,
        ast.GtE: Version.__ge__,
        ast.Gt: Version.__gt__,
        ast.Eq: Version.__eq__,
    }
    if version is None or not (isinstance(test, ast.Compare) and len(test.ops) == 1 and type(test.ops[0]) in compare):
        return None
    right = test.comparators[0]
    if not (isinstance(right, ast.Call) and len(right.args) == 1 and const_str(right.args[0])):
        return None
    try:
        return compare[type(test.ops[0])](version, Version(const_str(right.args[0])))
    except InvalidVersion:
        return None


def fallback_assembly(engine: str, why: str) -> Assembly | None:
    rec = load_table("engine_args/verl_assembly.yaml").get(engine)
    if rec is None:
        return None
    return Assembly(
        engine,
        rec.path,
        rec.function,
        rec.spread_line,
        tuple(ArgSet(e.key, e.phase, e.kind, e.value, e.condition, e.line) for e in rec.entries),
        tuple(rec.locals.items()),
        (),
        origin=f"data: {why}; using the bundled copy from {rec.derived_from}",
    )


def worker_mapping(engine: str) -> dict:
    """Engine argument -> the rollout knob verl builds its workers from (rules/engine_args/verl_knobs.yaml)."""
    return load_table("engine_args/verl_knobs.yaml").worker_mapping.get(engine, {})


def knob_formula(knob: str) -> str | None:
    """The value a rollout knob needs, as a verl expression (`expert_parallel_size` = TP × DP;
    rules/engine_args/verl_knobs.yaml), or None."""
    return load_table("engine_args/verl_knobs.yaml").knob_values.get(knob)


def assembly_table(a: Assembly, derived_from: str) -> dict:
    """The YAML form of an assembly (for rules/engine_args/verl_assembly.yaml)."""
    return {
        "derived_from": derived_from,
        "path": a.path,
        "function": a.function,
        "spread_line": a.spread_line,
        "locals": dict(a.local_exprs),
        "entries": [
            {
                "key": e.key,
                "phase": e.phase,
                "kind": e.kind,
                **({"value": e.value} if e.value is not None else {}),
                **({"condition": list(e.condition)} if e.condition else {}),
                "line": e.line,
            }
            for e in a.entries
        ],
    }


@lru_cache(maxsize=16)
def rollout_defaults(root: str) -> dict[str, Any]:
    """Constant defaults of verl's RolloutConfig dataclass (for dataclass-only keys such as enable_sleep_mode)."""
    tree = parse_source(source_text(Path(root) / "verl/workers/config/rollout.py"))
    out: dict[str, Any] = {}
    if tree is None:
        return out
    cls = top_classes(tree).get("RolloutConfig")
    if cls is None:
        return out
    for s in cls.body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and isinstance(s.value, ast.Constant):
            out[s.target.id] = s.value.value
    return out


@lru_cache(maxsize=16)
def verl_env_names(root: str) -> frozenset[str]:
    """VLLM_*/SGLANG_* names that verl itself reads or sets (string literals in its source)."""
    pat = re.compile(r"[\"']((?:VLLM|SGLANG)_[A-Z0-9_]+)[\"']")
    base = Path(root) / "verl"
    try:
        st = (base / "__init__.py").stat()
        key = f"{base.resolve()}|{st.st_mtime_ns}|{(source_text(base / 'version/version') or '').strip()}"
    except OSError:
        key = ""

    def scan() -> frozenset[str]:
        out: set[str] = set()
        for p in base.rglob("*.py"):
            try:  # not through source_text: its cache is for files read again, this reads every file once
                text = p.read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if text and ("VLLM_" in text or "SGLANG_" in text):
                out.update(pat.findall(text))
        return frozenset(out)

    if not key:
        return scan()
    return memo("engine_args", f"verl-env\0{key}", scan, frozenset)
