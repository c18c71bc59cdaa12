"""Building the reader index (`reader.py` says what counts as read): one pass of regexes over
each file's text, `ast` only for the few snippets and files that need it.

Apart from the index and its queries so that its patterns compile when a tree is indexed (once
per tree, then cached on disk), not at every Hydra job start that loads an index.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
from collections.abc import Callable
from pathlib import Path

from .classes import Choice, code_choices
from .deprecations import Deprecation, in_code
from .receivers import GENERIC

# A name that is not called or defined (`def name(`, `name(`, `.name(`): a function named like a
# key reads no key (the backtracking cannot stop inside a name: the lookahead refuses a name char).
_NOT_CALLED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?![A-Za-z0-9_(])")
# One step down a config node written as a key (`["b"]`, `.get("b", d)`, `.pop("b")`), rewritten
# as `.b` so that one chain pattern sees `cfg["a"].get("b")` as `cfg.a.b`.
_STEP = re.compile(r"""(?:\[|\.(?:get|pop)\()\s*["']([A-Za-z_]\w*)["'](?:\s*\]|\s*\)|\s*,[^()\n]*\))""")
_RUN = re.compile(r"[\w.]+")  # names and dots; a chain is a run with a dot (one pass: no retry inside a name)
# `getattr(p, "c")`, `hasattr(x.p, "c")`, `select(p, "c.d")`: the string is a key of `p` (the
# pattern starts at the comma, the name before it is looked up at each match); `"c" in x.p` too.
_ARG_KEY = re.compile(r""",\s*["']([A-Za-z_]\w*)""")
_NAME_END = re.compile(r"[A-Za-z_]\w*$")
_SCOPE = re.compile(r"^(?:class|def|async def) ", re.M)  # a top-level class or function starts
_IN_KEY = re.compile(r"""["']([A-Za-z_]\w*)["']\s+(?:not\s+)?in\s+(?:[A-Za-z_]\w*\.)*([A-Za-z_]\w*)""")
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")
_INTERP = re.compile(r"\$\{([^{}]*)\}")
_ITER = re.compile(r"\.\s*(?:items|keys|values)\(\s*\)")
_FOR_IN = re.compile(r"for [^\n]*? in ")  # (patterns start with a literal: a leading \b costs 10x)
_STARSTAR = re.compile(r"\*\*")
_FSTRING = re.compile(r"[fF](\"|')([^\"'\n]*\{[^\"'\n]*)\1")
_TO_CONTAINER = re.compile(r"to_container\(")
# Where a string or a name is used as a key: after `getattr(x, `, `hasattr(x, `, `select(x, `,
# `.get(`, `.pop(` or `[` (the text before it, reversed, so the match is anchored at the use),
# not written as `d[k] = v` (a metric's name reads no key); or before ` in `.
_KEY_BEFORE = re.compile(r"\s*(?:,[^()\n]*\((?:rttateg|rttasah|tceles)\b|\((?:teg|pop)\.|\[)")
_STORE = re.compile(r"\s*\]\s*=(?!=)")
_MEMBER = re.compile(r"\s+(?:not\s+)?in\b")
_ASSIGNED = re.compile(r"\b([A-Za-z_]\w*)\s*=\s*$")
_NEARBY = 3000  # characters after `name = f"..."` where a use of `name` as a key is looked for (its function)
# Which files to parse with ast for facts about keys (a few dozen of verl's ~900): a warning
# whose first string says "deprecat", or a choice check on a config key; the ast decides.
_DEPRECATION_HINT = re.compile(r"(?:warn|warning|print)\(\s*[fF]?[\"'][^\"'\n]*[Dd]eprecat")
_CHOICE_HINT = re.compile(r"assert [^\n]*?config\.[\w.]+ in |config\.[\w.]+ not in |\belse:\s*\n\s*raise \w+")
# A class field typed as a free-form dict (`lora: dict[str, Any] = field(...)`): verl keeps its
# keys as given and hands them on; nothing checks their names. A field typed `DictConfig` holds a
# config section that is read by name later (verl 0.5.0's unused `hybrid_entrypoint.py` types
# actor_rollout_ref, critic and data so): not free-form.
_DICT_FIELD = re.compile(
    r"\n[ \t]+([A-Za-z_]\w*)[ \t]*:[ \t]*(?:Optional\[)?(?:dict|Dict|Mapping|MutableMapping)\b[^\n]*"
)
# Calls that hand their first argument's keys on unchanged.
_WRAPPERS = {"to_container", "to_object", "dict", "deepcopy", "copy", "asdict", "create"}


def _node_name(node: ast.AST) -> str | None:
    """The config node an expression ends in, when it is reached through a chain (`cfg.a.b`,
    `cfg["b"]`, `cfg.get("b")`, wrapped in `OmegaConf.to_container(...)`, `dict(...)`,
    `.items()`): `b`. A bare local name is no evidence of which node it holds: None."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if isinstance(node, ast.Call):
        f = node.func
        fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        first = node.args[0] if node.args else None
        if (
            fname in ("get", "pop")
            and isinstance(f, ast.Attribute)
            and isinstance(first, ast.Constant)
            and isinstance(first.value, str)
        ):
            return first.value
        if fname in ("items", "keys", "values") and isinstance(f, ast.Attribute) and not node.args:
            return _node_name(f.value)
        if fname in _WRAPPERS and first is not None:
            return _node_name(first)
        second = node.args[1] if len(node.args) > 1 else None
        if fname == "select" and isinstance(second, ast.Constant) and isinstance(second.value, str):
            return second.value.rsplit(".", 1)[-1]
    return None


def _expr_after(line: str, i: int) -> str:
    """The expression that starts at `line[i]` (names, dots, balanced brackets)."""
    n = len(line)
    while i < n and line[i] == " ":
        i += 1
    start, depth = i, 0
    while i < n:
        c = line[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and not (c.isalnum() or c in "_."):
            break
        i += 1
    return line[start:i]


def _expr_before(line: str, end: int) -> str:
    """The expression that ends at `line[end]` (names, dots, balanced brackets)."""
    i, depth = end, 0
    while i > 0:
        c = line[i - 1]
        if c in ")]":
            depth += 1
        elif c in "([":
            if depth == 0:
                break
            depth -= 1
        elif depth == 0 and not (c.isalnum() or c in "_."):
            break
        i -= 1
    return line[i:end]


def _whole(snippet: str) -> str | None:
    """The config node `snippet` reads whole, if it reaches it from a config object (a name
    with `conf`/`cfg` in it before the node: `self.config.engine_kwargs`, `rollout_cfg["x"]`)."""
    try:
        n = _node_name(ast.parse(snippet, mode="eval").body)
    except (SyntaxError, ValueError, RecursionError):
        return None
    return n if n and re.search(r"conf|cfg", snippet[: snippet.rfind(n)]) else None


def _fstring_names(body: str, names: set[str], patterns: set[str]) -> None:
    """`f"{role}_micro_batch_size"` -> the pattern `.*_micro_batch_size`; `f"actor.{k}"` -> `actor`."""
    literal = re.sub(r"\{[^{}]*\}", "", body)
    if len(literal) < 3 or not re.fullmatch(r"[A-Za-z0-9_.]*", literal):
        return  # a message, a path or f"{a}.{b}": not a key name
    for piece in re.sub(r"\{[^{}]*\}", "\0", body).split("."):
        fixed = piece.replace("\0", "")
        if "\0" not in piece:
            names.add(fixed)
        elif len(fixed) >= 4:  # not `{a}_{b}`, which would match nearly any name
            patterns.add(".*".join(re.escape(p) for p in piece.split("\0")))


def _used_as_key(text: str, m: re.Match) -> bool:
    """The f-string at `m` names a key that is read: passed to getattr/get/select, subscripted,
    tested with `in`, or assigned to a variable that the file uses so."""
    if _key_use(text, m.start(), m.end()):
        return True
    line, col = _line_of(text, m.start())
    var = _ASSIGNED.search(line[:col])
    if var is None:
        return False
    uses = re.compile(rf"\b{re.escape(var.group(1))}\b").finditer(text, m.end(), m.end() + _NEARBY)
    return any(_key_use(text, u.start(), u.end()) for u in uses)


def _key_use(text: str, start: int, end: int) -> bool:
    """The expression at text[start:end] is used as a key that is read."""
    key = _KEY_BEFORE.match(text[max(0, start - 120) : start][::-1])
    if key:
        return not (key.group().endswith("[") and _STORE.match(text, end))
    return _MEMBER.match(text, end) is not None


def _edges(text: str, edges: set[str], loose: set[str], scoped: set[tuple[str, ...]]) -> None:
    """The steps `p.c` the text takes from a name to a key below it (see `ReaderIndex.edges`);
    those from a receiver that names no node also as chains, grouped per receiver and scope."""
    subbed = _STEP.sub(r".\1", text)
    scopes = [m.start() for m in _SCOPE.finditer(subbed)]
    groups: dict[tuple[int, str], set[str]] = {}
    for m in _RUN.finditer(subbed):
        run = m.group()
        if "." not in run:
            continue
        parts = run.split(".")
        steps = {f"{a}.{b}" for a, b in zip(parts, parts[1:]) if a.isidentifier() and b.isidentifier()}
        edges |= steps
        start = 2 if parts[0] == "self" and len(parts) > 2 else 1
        receiver = ".".join(parts[:start])
        if receiver not in GENERIC or subbed[m.start() - 1 : m.start()] in ("'", '"'):
            loose |= steps
            continue
        chain = parts[start : -1 if subbed[m.end() : m.end() + 1] == "(" else None]  # (a method called is no key)
        if chain and all(p.isidentifier() for p in chain):
            groups.setdefault((bisect.bisect(scopes, m.start()), receiver), set()).add(".".join(chain))
    scoped.update(tuple(sorted(g)) for g in groups.values())
    for m in _ARG_KEY.finditer(text):
        holder = _NAME_END.search(text, max(0, m.start() - 60), m.start())
        if holder:
            edges.add(f"{holder.group()}.{m.group(1)}")
            loose.add(f"{holder.group()}.{m.group(1)}")
    for b, a in _IN_KEY.findall(text):
        edges.add(f"{a}.{b}")
        loose.add(f"{a}.{b}")


def _python_reads(
    text: str,
    names: set[str],
    patterns: set[str],
    whole: set[str],
    used: set[str] | None,
    edges: tuple[set[str], set[str], set[tuple[str, ...]]],
) -> None:
    tokens = _NOT_CALLED.findall(text)
    names.update(tokens)  # every identifier token that is not called (see the module docstring)
    _edges(text, *edges)
    if used is not None:
        used.update(tokens)
    for m in _FSTRING.finditer(text):
        if _used_as_key(text, m):
            _fstring_names(m.group(2), names, patterns)
    for m in _TO_CONTAINER.finditer(text):  # handed on as a plain dict (to Ray, to a library); may span lines
        _add_whole("to_container" + _expr_after(text[m.end() - 1 : m.end() + 400].replace("\n", " "), 0), whole)
    # The few places a node is read whole, found with regexes over the whole text (a Python loop
    # over every line costs more than all the rest), each cut to its own line.
    for m in _STARSTAR.finditer(text):
        line, col = _line_of(text, m.end())
        _add_whole(_expr_after(line, col), whole)
    for m in _ITER.finditer(text):
        line, col = _line_of(text, m.start())
        _add_whole(_expr_before(line, col), whole)
    for m in _FOR_IN.finditer(text):
        line, col = _line_of(text, m.end())
        _add_whole(_expr_after(line, col), whole)
    for m in _DICT_FIELD.finditer(text):
        if not m.group(0).rstrip().endswith((",", "(")):  # a field, not a parameter of a signature
            whole.add(m.group(1))


def _line_of(text: str, pos: int) -> tuple[str, int]:
    """The line around `pos`, and `pos` as a column in it."""
    start = text.rfind("\n", 0, pos) + 1
    end = text.find("\n", pos)
    return text[start : end if end >= 0 else len(text)], pos - start


def _add_whole(snippet: str, whole: set[str]) -> None:
    n = _whole(snippet) if snippet else None
    if n:
        whole.add(n)


def _yaml_reads(text: str, names: set[str], interpolated: set[str], edges: tuple[set[str], set[str], set]) -> None:
    """Keys that interpolations read: `${a.b.c}`, `${oc.select:a.b,default}`, `${..x}`."""
    for body in _INTERP.findall(text):
        if ":" in body:  # a resolver: its arguments may be keys
            body = body.split(":", 1)[1]
        for arg in re.split(r"[,\s]+", body):
            arg = arg.strip().lstrip(".")
            if _DOTTED.fullmatch(arg):
                parts = arg.split(".")
                names.update(parts)
                interpolated.update(parts)
                for e in edges[:2]:  # (the edges, and the loose ones: an interpolation names its node)
                    e.update(f"{a}.{b}" for a, b in zip(parts, parts[1:]))


def scan(tree_root: Path, files: list[Path], progress: Callable[[int, int], None] | None = None) -> dict:
    """The reader index's fields (`ReaderIndex`) for `files`, calling `progress(n, total)` as the
    n-th is read; the facts about keys come from those under the tree's verl/."""
    names: set[str] = set()
    patterns: set[str] = set()
    whole: set[str] = set()
    used: set[str] = set()
    interpolated: set[str] = set()
    edges: tuple[set[str], set[str], set[tuple[str, ...]]] = (set(), set(), set())  # edges, loose, scoped
    deprecated: list[Deprecation] = []
    choices: list[tuple[str, Choice]] = []
    own = tree_root / "verl"
    for done, f in enumerate(files, 1):
        if progress:
            progress(done, len(files))
        try:
            text = f.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        if f.suffix == ".py":
            _python_reads(text, names, patterns, whole, None if f.parent.name == "config" else used, edges)
            if own in f.parents and (_DEPRECATION_HINT.search(text) or _CHOICE_HINT.search(text)):
                _key_facts(text, os.path.relpath(f, tree_root), deprecated, choices)
        else:
            _yaml_reads(text, names, interpolated, edges)
    return {
        "names": frozenset(names),
        "patterns": tuple(sorted(patterns)),
        "whole": frozenset(whole),
        "files": len(files),
        "used": frozenset(used),
        "deprecated": tuple(deprecated),
        "choices": tuple(choices),
        "interpolated": frozenset(interpolated),
        "edges": frozenset(edges[0]),
        "scoped": tuple(sorted(edges[2])),
        "loose": frozenset(edges[1]),
    }


def _key_facts(text: str, rel: str, deprecated: list[Deprecation], choices: list[tuple[str, Choice]]) -> None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return
    deprecated += in_code(tree, rel)
    choices += code_choices(tree, rel)
