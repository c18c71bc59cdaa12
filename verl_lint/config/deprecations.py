"""Deprecated-but-accepted keys, read from verl's code with `ast` (never imported).

Only two shapes are followed, both provable from the code alone:

* in a config dataclass's `__post_init__`, a top-level

      if self.old is not None:            # or `if self.old:`
          warnings.warn("`old` is deprecated, use `new` instead.", ...)   # or logger.warning / print
          self.new = self.old             # optional: the one-to-one mapping

  (`classes.py` reads these per class, with the class's other facts);
* anywhere in the tree, the same `if` on a key reached from the root config object
  (`config.data.get("val_batch_size", None) is not None`, `self.config.trainer.x`), whose
  path is then known (`data.val_batch_size`); the reader index collects these.

The warning must say "deprecat" in its literal text. Anything else (a warning guarded by another
field or by a value comparison, a mapping through a helper, a local variable) stays silent.

verl also declares deprecations in its config files, as a comment on the key's line or in the
comment block right above it, starting with the word (`# [Will be deprecated, use X]`,
`# will be deprecated, use X`, `# [Deprecated] Global micro batch size`, `# Deprecated and
ignored. Use ...`); `in_config_comments` reads those (a comment that only mentions the word,
`Options: fsdp (deprecating)`, is no declaration).
"""

from __future__ import annotations

import ast
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from ..cache import remembered
from ..launch.locate import tree_stamp

# Calls that print a warning: warnings.warn, logger.warning/warn/info, print.
_WARN_CALLS = {"warn", "warning", "info", "print"}


class Deprecation(NamedTuple):
    """A key verl still accepts but warns about."""

    key: str  # the field name (dataclass) or the dotted key from the root (code)
    new: str  # the field verl copies the value into (`self.new = self.old`), "" when none
    guard: str  # "not-none" (`is not None` / `.get(k) is not None`) or "truthy" (`if self.old:`)
    message: str  # the warning's literal text, placeholders shown as {...}
    where: str  # "verl/workers/config/optimizer.py:59": the `if` that warns (it names the key)
    how: str = ""  # how it says so: a warning class ("DeprecationWarning"), "print" or "log"; "" when not known


def message_text(node: ast.expr) -> str | None:
    """The literal text of a message argument: a string, an f-string (its expressions as `{...}`)
    or a `+` of those; None for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{...}" for v in node.values)
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = message_text(node.left), message_text(node.right)
        return left + right if left is not None and right is not None else None
    return None


def _warning(body: list[ast.stmt]) -> tuple[str, str] | None:
    """(text, how) of the first deprecation warning among `body`'s top-level statements (see
    `Deprecation.how`)."""
    for stmt in body:
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and stmt.value.args:
            f = stmt.value.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            text = message_text(stmt.value.args[0]) if name in _WARN_CALLS else None
            if text and "deprecat" in text.lower():
                return " ".join(text.split()), _how(stmt.value, name)
    return None


def _how(call: ast.Call, name: str) -> str:
    """How a call says it: `warnings.warn(msg[, Category])` (or a bare `warn`) -> the class
    (UserWarning when none is given), `print` -> "print", a logger's method -> "log"; "" for a
    class given by an expression."""
    if name == "print":
        return "print"
    f = call.func
    if (
        name != "warn"
        or isinstance(f, ast.Attribute)
        and not (isinstance(f.value, ast.Name) and f.value.id == "warnings")
    ):
        return "log"  # logger.warning / logger.info / logger.warn
    cls = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "category"), None)
    if cls is None:
        return "UserWarning"
    return cls.id if isinstance(cls, ast.Name) else cls.attr if isinstance(cls, ast.Attribute) else ""


def _copied_to(body: list[ast.stmt], old: str) -> str:
    """`new` when `body` has `self.new = self.old` at its top level."""
    for stmt in body:
        if (
            isinstance(stmt, ast.Assign)
            and len(stmt.targets) == 1
            and _attr_of(stmt.targets[0], "self")
            and _attr_of(stmt.value, "self") == old
        ):
            return _attr_of(stmt.targets[0], "self") or ""
    return ""


def _attr_of(node: ast.expr, base: str) -> str | None:
    """`x` for `base.x`."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == base:
        return node.attr
    return None


def _guard(test: ast.expr) -> tuple[ast.expr, str] | None:
    """(subject, guard) for `subject is not None` / `subject`."""
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.IsNot):
        c = test.comparators[0]
        if isinstance(c, ast.Constant) and c.value is None:
            return test.left, "not-none"
        return None
    return test, "truthy"


def in_post_init(body: list[ast.stmt], rel: str) -> dict[str, Deprecation]:
    """The deprecated fields a `__post_init__` body warns about (top-level `if`s only)."""
    out: dict[str, Deprecation] = {}
    for stmt in body:
        if not isinstance(stmt, ast.If) or stmt.orelse:
            continue
        g = _guard(stmt.test)
        field = _attr_of(g[0], "self") if g else None
        warned = _warning(stmt.body) if field else None
        if g and field and warned:
            out.setdefault(
                field,
                Deprecation(field, _copied_to(stmt.body, field), g[1], warned[0], f"{rel}:{stmt.lineno}", warned[1]),
            )
    return out


def config_path(node: ast.expr) -> str | None:
    """`data.val_batch_size` for `config.data.val_batch_size`, `config.data.get("val_batch_size"[, d])`,
    `self.config.data...`: a key reached from the root config object (`config` / `self.config`)."""
    parts: list[str] = []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        first = node.args[0]
        if not (isinstance(first, ast.Constant) and isinstance(first.value, str)) or len(node.args) > 2:
            return None
        default = node.args[1] if len(node.args) == 2 else None
        if default is not None and not (isinstance(default, ast.Constant) and default.value is None):
            return None  # a non-None default would make `is not None` true without the key
        parts.append(first.value)
        node = node.func.value
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
        if parts[-1] == "config" and isinstance(node, ast.Name) and node.id == "self":
            parts.pop()
            break
    else:
        if not (isinstance(node, ast.Name) and node.id == "config"):
            return None
    return ".".join(reversed(parts)) if len(parts) >= 2 else None


def statements(tree: ast.Module):
    """Every statement of a module, nested ones too, without walking into expressions (ast.walk
    visits every node: 5x slower on verl's larger files)."""
    todo = list(reversed(tree.body))  # a stack: popped in source order
    while todo:
        node = todo.pop()
        yield node
        for name in ("finalbody", "orelse", "handlers", "cases", "body"):
            todo += reversed(getattr(node, name, ()))


def in_code(tree: ast.Module, rel: str) -> list[Deprecation]:
    """The keys a module's code warns about as deprecated when the root config has them set."""
    out = []
    for node in statements(tree):
        if not isinstance(node, ast.If) or node.orelse:
            continue
        g = _guard(node.test)
        path = config_path(g[0]) if g else None
        warned = _warning(node.body) if path else None
        if g and path and warned:
            out.append(Deprecation(path, "", g[1], warned[0], f"{rel}:{node.lineno}", warned[1]))
    return out


# A comment that declares its key deprecated: it starts with the word (after `[` or nothing).
# Patterns, compiled (by `re`, once) when a config file is read: on a cache miss, not at a Hydra job start.
_DECLARES = r"(?i)#\s*\[?\s*(?:will\s+be\s+)?deprecated\b"
_KEY_LINE = r"^( *)([A-Za-z_][\w]*):(.*)$"


@lru_cache(maxsize=32)
def tree_facts(root: str) -> str:
    """The cache entry (`cache.remembered`, folder `facts/`) of what is read from the verl tree at
    `root`: one per tree and stamp, shared by the config classes and the config comments."""
    return f"config classes\0{root}\0{tree_stamp(Path(root))}"


@lru_cache(maxsize=32)
def in_config_comments(root: str) -> tuple[Deprecation, ...]:
    """The keys verl's own config files declare deprecated in a comment, in the tree at `root`.
    `key` is the key's path inside its file (`log_prob_micro_batch_size` in rollout/rollout.yaml,
    `actor_rollout_ref.rollout.log_prob_micro_batch_size` in 0.4's ppo_trainer.yaml); `where`
    is the file and line of the comment; generated files (`_generated_*.yaml`) are skipped.
    Read once per tree and kept on disk (a Hydra job start reads one file instead of verl's
    configs)."""
    return remembered("facts", tree_facts(root), "config comments", lambda: _in_config_comments(root))


def _in_config_comments(root: str) -> tuple[Deprecation, ...]:
    base = os.path.join(root, "verl", "trainer", "config")
    out = []
    for top, dnames, fnames in os.walk(base):
        dnames.sort()
        for fn in sorted(fnames):
            if fn.endswith(".yaml") and not fn.startswith("_generated"):
                path = os.path.join(top, fn)
                out += _declared(Path(path).read_text(encoding="utf-8", errors="replace"), os.path.relpath(path, root))
    return tuple(out)


def _declared(text: str, rel: str) -> list[Deprecation]:
    out: list[Deprecation] = []
    stack: list[tuple[int, str]] = []  # (indent, key) of the mappings the current line is in
    block: list[tuple[int, str]] = []  # the comment lines right above the current line: (line, text)
    for no, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("#"):
            block.append((no, stripped))
            continue
        m = re.match(_KEY_LINE, line)
        if not m:
            block = [] if not stripped else block if stripped.startswith("-") else []
            continue
        indent, key, rest = len(m.group(1)), m.group(2), m.group(3)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = ".".join([k for _, k in stack] + [key])
        value, _, inline = rest.partition(" #")
        said = [(no, "#" + inline)] if inline else []
        said += [(n, t) for n, t in block]
        for n, comment in said:
            if re.match(_DECLARES, comment) and key not in ("defaults", "hydra"):  # a comment on the file, not a key
                out.append(Deprecation(path, "", "not-none", comment.lstrip("#").strip(), f"{rel}:{n}", "comment"))
                break
        block = []
        if not value.strip():
            stack.append((indent, key))
    return out
