"""verl's config dataclasses, read statically (ast, never imported).

A composed config node with `_target_: verl.workers.config.FSDPActorConfig` becomes that
dataclass when a worker starts (`omega_conf_to_dataclass` / `hydra.utils.instantiate`):
OmegaConf merges the node into the dataclass's structured config (each value converted to the
field's type, or a `ValidationError`), then `__post_init__` runs its checks. This module finds
the class in the tree being linted, with its fields (inherited ones too) and the choice checks
its `__post_init__` makes on a field unconditionally:

    assert self.strategy in ["fsdp", "fsdp2"], ...
    if self.loss_agg_mode not in valid_loss_agg_modes:   # a literal list, local or module-level
        raise ValueError(...)

A check nested under another condition is left out (the linter would have to know the
condition), except `if self.x is not None:` / `if self.x:` guarding the same field.

It also keeps the fields `__post_init__` warns about as deprecated (`deprecations.in_post_init`),
the fields it overwrites whatever the user gave (`Overwrite`):

    self.local_path = copy_to_local(self.path)          # always
    if self.tensor_model_parallel_size == 1:            # under a test of other fields
        self.sequence_parallel = False

and reads the same choice checks on root-config keys in verl's functions (`code_choices`, for the
reader index).
"""

from __future__ import annotations

import ast
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from ..cache import remembered
from .deprecations import Deprecation, config_path, in_post_init, statements, tree_facts


class Choice(NamedTuple):
    """A field's (or a key's) allowed values as `__post_init__` (or a function of verl) checks them."""

    values: tuple  # the literal values
    raises: str  # "AssertionError" or the exception class raised
    where: str  # "verl/workers/config/actor.py:219"
    allows_none: bool = False  # the check is skipped for None (guarded by `is not None` / truthiness)


class Overwrite(NamedTuple):
    """`__post_init__` assigns a field from something other than the field itself."""

    value: ast.expr  # what it assigns (a constant, or an expression of other fields / calls)
    condition: ast.expr | None  # the top-level `if` test it sits under (None: always)
    where: str  # "verl/workers/config/engine.py:236": the assignment

    def holds(self, lookup) -> bool | None:
        """Whether the overwrite happens, given `lookup(field)` -> the field's value or
        UNKNOWN_VALUE; None when unknown."""
        return True if self.condition is None else _truth(self.condition, lookup)


UNKNOWN_VALUE = object()


class ConfigClass(NamedTuple):
    name: str
    where: str  # file:line of the class statement
    fields: dict  # name -> annotation source ("int", "Optional[str]", ...)
    choices: dict  # name -> Choice
    # A dataclass whose every base class was read: its fields are all the keys it accepts.
    closed: bool = False
    deprecated: dict[str, Deprecation] = {}  # field name -> what verl warns when it is set
    overwrites: dict[str, Overwrite] = {}  # field name -> how __post_init__ replaces what was given


# Bases that add no fields (the standard library's abstract classes).
_FIELDLESS = {"object", "Mapping", "MutableMapping", "ABC", "Generic", "Protocol"}


_CONVERT = r"omega_conf_to_dataclass\(\s*([A-Za-z_][\w.]*)"  # a pattern: compiled (by `re`) on a cache miss


@lru_cache(maxsize=32)
def converted_sections(root: str) -> frozenset[str]:
    """Names of the config sections the tree's code converts into dataclasses (see
    `_converted_sections`), read once per tree and kept on disk."""
    return remembered("facts", tree_facts(root), "converted sections", lambda: _converted_sections(root))


def _converted_sections(root: str) -> frozenset[str]:
    """Names of the config sections the tree's code converts into dataclasses: the last
    attribute of each `omega_conf_to_dataclass(self.config.actor, ...)` argument. A section
    with a `_target_` that no code converts stays a DictConfig: its keys are read one by one
    (`config.algorithm.get("x")`), so an extra key is harmless there."""
    names: set[str] = set()
    for top, dnames, fnames in os.walk(os.path.join(root, "verl")):
        dnames[:] = sorted(d for d in dnames if d not in ("tests", "__pycache__"))
        for fn in fnames:
            if not fn.endswith(".py"):
                continue
            try:
                text = Path(top, fn).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            if "omega_conf_to_dataclass(" in text:
                names.update(m.group(1).rsplit(".", 1)[-1] for m in re.finditer(_CONVERT, text))
    return frozenset(names - _LOCAL_NAMES)


# Arguments that are a local variable or a call, not a config section (`omega_conf_to_dataclass(config)`).
_LOCAL_NAMES = {"config", "cfg", "conf", "get", "raw", "self"}


@lru_cache(maxsize=4096)
def built(root: str, path: str) -> bool:
    """The config node at dotted `path` (or a section above it) is converted into a dataclass."""
    return any(part in converted_sections(root) for part in path.split("."))


def of_node(root: str, path: str, target) -> ConfigClass | None:
    """The dataclass the config node at `path` becomes (its `_target_`), when the tree converts it."""
    return find(root, target) if isinstance(target, str) and path and built(root, path) else None


@lru_cache(maxsize=1024)  # asked per key of every launch; the answer depends on the tree alone
def find(root: str, target: str) -> ConfigClass | None:
    """The dataclass `target` (a dotted `_target_`) in the tree at `root`, with its bases merged."""
    module, _, name = target.rpartition(".")
    if not module.startswith("verl.") and module != "verl":
        return None
    classes = _classes(root, _package_dir(root, module))
    return _merged(classes, name, set())


def _package_dir(root: str, module: str) -> str:
    """The directory whose files may define `module`'s classes (a module file's own directory)."""
    path = Path(root, *module.split("."))
    return str(path if path.is_dir() else path.parent)


def _merged(classes: dict, name: str, seen: set) -> ConfigClass | None:
    raw = classes.get(name)
    if raw is None or name in seen:
        return None
    seen.add(name)
    fields: dict = {}
    choices: dict = {}
    deprecated: dict = {}
    overwrites: dict = {}
    closed = raw["dataclass"]
    for base in raw["bases"]:  # base classes first: a subclass's own fields and checks win
        if base in _FIELDLESS:
            continue
        b = _merged(classes, base, seen)
        closed = closed and b is not None and b.closed
        if b is not None:
            fields.update(b.fields)
            choices.update(b.choices)
            deprecated.update(b.deprecated)
            overwrites.update(b.overwrites)
    fields.update(raw["fields"])
    choices.update(raw["choices"])
    deprecated.update(raw["deprecated"])
    overwrites.update(raw["overwrites"])
    return ConfigClass(name, raw["where"], fields, choices, closed, deprecated, overwrites)


@lru_cache(maxsize=32)
def _classes(root: str, directory: str) -> dict:
    """The classes of `directory` and of the config packages (`_read_classes`), read once per
    tree and kept on disk."""
    return remembered("facts", tree_facts(root), ("classes", directory), lambda: _read_classes(root, directory))


def _read_classes(root: str, directory: str) -> dict:
    """{class name: {bases, fields, choices, where}} for the classes of `directory`'s Python files
    and of the config packages every verl config class derives from (`verl/base_config.py`,
    `verl/trainer/config`, `verl/workers/config`)."""
    files: list[str] = []
    for d in (directory, os.path.join(root, "verl/trainer/config"), os.path.join(root, "verl/workers/config")):
        if os.path.isdir(d):
            files += sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".py"))
    files.append(os.path.join(root, "verl/base_config.py"))
    out: dict = {}
    for f in dict.fromkeys(files):
        try:
            tree = ast.parse(Path(f).read_bytes())
        except (OSError, SyntaxError, ValueError):
            continue
        rel = os.path.relpath(f, root)
        constants = _literal_assignments(tree.body)
        for node in tree.body:
            if isinstance(node, ast.ClassDef):
                out.setdefault(node.name, _read_class(node, rel, constants))
    return out


def _read_class(node: ast.ClassDef, rel: str, constants: dict) -> dict:
    fields = {}
    choices = {}
    deprecated: dict[str, Deprecation] = {}
    overwrites: dict[str, Overwrite] = {}
    for stmt in node.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            fields[stmt.target.id] = ast.unparse(stmt.annotation)
        elif isinstance(stmt, ast.FunctionDef) and stmt.name == "__post_init__":
            local = {**constants, **_literal_assignments(stmt.body)}
            for field_name, choice in _choice_checks(stmt.body, local, rel):
                choices.setdefault(field_name, choice)
            deprecated = in_post_init(stmt.body, rel)
            overwrites = _overwrites(stmt.body, rel)
    bases = [b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else "?" for b in node.bases]
    is_dataclass = any(_name_of(d.func if isinstance(d, ast.Call) else d) == "dataclass" for d in node.decorator_list)
    return {
        "bases": bases,
        "fields": fields,
        "choices": choices,
        "deprecated": deprecated,
        "overwrites": overwrites,
        "where": f"{rel}:{node.lineno}",
        "dataclass": is_dataclass,
    }


def _overwrites(body: list, rel: str) -> dict[str, Overwrite]:
    """Fields `__post_init__` assigns at its top level, or inside a top-level `if` (without
    `else`) that tests only other fields. An assignment that reads the field itself or calls a
    method of `self` (which may read it) is a normalisation of the user's value, not an
    overwrite: left out, as is a field assigned twice."""
    out: dict[str, Overwrite] = {}
    seen: set[str] = set()
    for stmt in body:
        branch = [(stmt, None)] if isinstance(stmt, ast.Assign) else []
        if isinstance(stmt, ast.If) and not stmt.orelse:
            branch = [(s, stmt.test) for s in stmt.body if isinstance(s, ast.Assign)]
        for assign, test in branch:
            if len(assign.targets) != 1 or (field := _self_field(assign.targets[0])) is None:
                continue
            if field in seen:
                out.pop(field, None)
                continue
            seen.add(field)
            reads = {_self_field(n) for n in ast.walk(assign.value)} | (
                {_self_field(n) for n in ast.walk(test)} if test else set()
            )
            calls_self = any(
                isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and _self_field(n.func)
                for n in ast.walk(assign.value)
            )
            if (
                field not in reads
                and not calls_self
                and (test is None or _truth(test, lambda f: UNKNOWN_VALUE, check_only=True))
            ):
                out[field] = Overwrite(assign.value, test, f"{rel}:{assign.lineno}")
    return out


def _truth(test: ast.expr, lookup, check_only: bool = False):
    """Evaluate a test over `self` fields: `self.x`, `not`, `and`/`or`, comparisons of a field
    with constants (`==`, `!=`, `is`, `is not`, `in`/`not in` a literal list, `<`, `>`, ...).
    None when a value is unknown. With `check_only`, whether the test has that shape at all."""
    if isinstance(test, ast.BoolOp):
        parts = [_truth(v, lookup, check_only) for v in test.values]
        if check_only:
            return all(parts)
        if isinstance(test.op, ast.And):
            return False if False in parts else None if None in parts else True
        return True if True in parts else None if None in parts else False
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _truth(test.operand, lookup, check_only)
        return inner if check_only or inner is None else not inner
    field = _self_field(test)
    if field is not None:
        return True if check_only else _known(lookup(field), bool)
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and (field := _self_field(test.left)) is not None:
        right = test.comparators[0]
        values = _literals(right, {}) if isinstance(test.ops[0], (ast.In, ast.NotIn)) else None
        if values is None and not isinstance(right, ast.Constant):
            return False if check_only else None
        if check_only:
            return True
        compare = _COMPARE.get(type(test.ops[0]))
        if compare is None:
            return None
        other = values if values is not None else right.value
        return _known(lookup(field), lambda v: compare(v, other))
    return False if check_only else None


def _known(value, decide) -> bool | None:
    if value is UNKNOWN_VALUE:
        return None
    try:
        return bool(decide(value))
    except TypeError:  # an ordering of a value of another type: verl would raise, not overwrite
        return None


_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def _name_of(node: ast.expr) -> str | None:
    """`dataclass` for `dataclass` and `dataclasses.dataclass`."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


def _literal_assignments(body: list) -> dict:
    """`NAME = [literal, ...]` (list, tuple or set of constants) among `body`'s statements."""
    out = {}
    for stmt in body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            values = _literals(stmt.value, {})
            if values is not None:
                out[stmt.targets[0].id] = values
    return out


def _literals(node: ast.expr, names: dict) -> tuple | None:
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if (
        isinstance(node, (ast.List, ast.Tuple, ast.Set))
        and node.elts
        and all(isinstance(e, ast.Constant) for e in node.elts)
    ):
        return tuple(e.value for e in node.elts)
    return None


def _self_field(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None


def code_choices(tree: ast.Module, rel: str) -> list[tuple[str, Choice]]:
    """(key, Choice) for the choice checks a module's functions make unconditionally (at the top
    of their body) on a key of the root config: `assert config.a.b in [...]`, or an if/elif
    chain on it whose `else` raises."""
    constants = _literal_assignments(tree.body)
    out = []
    for fn in statements(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            local = {**constants, **_literal_assignments(fn.body)}
            out += _choice_checks(fn.body, local, rel, config_path)
    return out


def _choice_checks(body: list, names: dict, rel: str, subject=_self_field, guarded: str | None = None):
    """(field, Choice) for each unconditional choice check among `body`'s statements on what
    `subject` names (`self.F` -> F by default); none after a statement that may return (`if
    resume_mode == "disable": return` makes a later check conditional)."""
    for stmt in body:
        if any(isinstance(n, ast.Return) for n in _own_nodes(stmt)):
            return
        if isinstance(stmt, ast.Assert):
            hit = _membership(stmt.test, names, False, subject)
            if hit and (guarded is None or hit[0] == guarded):
                yield hit[0], Choice(hit[1], "AssertionError", f"{rel}:{stmt.lineno}", guarded is not None)
        elif isinstance(stmt, ast.If):
            hit = _membership(stmt.test, names, True, subject)
            raises = _raised(stmt.body)
            if hit and raises and not stmt.orelse and (guarded is None or hit[0] == guarded):
                yield hit[0], Choice(hit[1], raises, f"{rel}:{stmt.lineno}", guarded is not None)
            elif guarded is None and stmt.orelse:
                dispatch = _dispatch(stmt, names, subject)
                if dispatch:
                    yield dispatch[0], Choice(dispatch[1], dispatch[2], f"{rel}:{stmt.lineno}")
            elif guarded is None and not stmt.orelse:
                field = _guard_field(stmt.test, subject)
                if field:  # `if self.x is not None:` / `if self.x:` around checks of the same field
                    yield from _choice_checks(stmt.body, names, rel, subject, field)


def _membership(test: ast.expr, names: dict, negated: bool, subject) -> tuple[str, tuple] | None:
    """`self.F in LIST` (or `not in` when `negated`): (F, the literal values)."""
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and len(test.comparators) == 1):
        return None
    op = test.ops[0]
    if not isinstance(op, ast.NotIn if negated else ast.In):
        return None
    field = subject(test.left)
    values = _literals(test.comparators[0], names)
    return (field, values) if field and values else None


def _on_self(node: ast.expr) -> bool:
    while isinstance(node, (ast.Attribute, ast.Call)):
        node = (
            node.func.value
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
            else getattr(node, "value", None)
        )
    return isinstance(node, ast.Name) and node.id == "self"


def _own_nodes(stmt: ast.stmt):
    """The nodes of `stmt`, not those of the functions or classes it defines."""
    todo = [stmt]
    while todo:
        n = todo.pop()
        yield n
        todo += [
            c
            for c in ast.iter_child_nodes(n)
            if not isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef))
        ]


def _dispatch(stmt: ast.If, names: dict, subject) -> tuple[str, tuple, str] | None:
    """`if K in {...}: ... elif K == "x": ... else: raise E`, every test on the same K: (K, the
    values some branch takes, E). Any other value reaches the raise."""
    field, values, node = None, [], stmt
    while True:
        t = node.test
        if not (isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], (ast.Eq, ast.In))):
            return None
        k = (
            subject(t.left) if subject is _self_field or not _on_self(t.left) else None
        )  # a worker's `self.config` is a section
        taken = (
            _literals(t.comparators[0], names)
            if isinstance(t.ops[0], ast.In)
            else _literals(ast.Tuple([t.comparators[0]]), names)
        )
        if not k or not taken or field not in (None, k):
            return None
        field, values = k, values + list(taken)
        if len(node.orelse) == 1 and isinstance(node.orelse[0], ast.If):
            node = node.orelse[0]
            continue
        raises = _raised(node.orelse)
        return (field, tuple(dict.fromkeys(values)), raises) if raises and node is not stmt else None


def _raised(body: list) -> str | None:
    """The exception class when `body` is a single `raise X(...)`."""
    if len(body) == 1 and isinstance(body[0], ast.Raise) and body[0].exc is not None:
        exc = body[0].exc
        func = exc.func if isinstance(exc, ast.Call) else exc
        if isinstance(func, ast.Name):
            return func.id
    return None


def _guard_field(test: ast.expr, subject) -> str | None:
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot):
        c = test.comparators[0]
        if isinstance(c, ast.Constant) and c.value is None:
            return subject(test.left)
    return subject(test)
