"""The reader index: which config key names the code of a verl tree reads (read as text, never imported).

Built once per tree and kept on disk (`cache.memo`, folder `reader/`), keyed on a stat digest of
the files it reads: each file's path relative to the tree, size and mtime_ns. Editing a file
changes its mtime, so a stale index is never used; a copy that keeps mtimes (pip unpacking a
wheel twice) shares the entry, which is right since the contents are then the same.
A project's own files (an entry point's package, its config dirs) are indexed apart, keyed on
their own digest, and joined to the tree's: editing a project's YAML, or linting a new project,
never indexes the verl tree again.

It answers one question, "does anything in this tree read a key of this NAME?", and is
deliberately generous: reading a name wrongly as "read" only costs a missed finding; wrongly as
"not read" it would be a false warning. A name counts as read when it is

* any identifier token of the Python sources that is not called or defined (`def x(`, `x(`,
  `.x(`: a function named like a key reads no key), comments and strings included (`"a.b"`
  gives `a` and `b`). That is a superset of what an ast walk would collect
  (attribute chains `x.actor.ppo_mini_batch_size`, `.get("x")`, `["x"]`, `getattr(o, "x")`,
  `hasattr`, `"x" in cfg`, `cfg.pop("x")`, `OmegaConf.select(cfg, "a.b")`, keyword and
  parameter names, dataclass fields) at a quarter of the cost: `ast.parse` of verl 0.9.1 alone
  takes longer than the whole scan (~1 s on 2 busy cores);
* built by an f-string from a read name, where the f-string is used as a key
  (`getattr(cfg, f"{param}_per_gpu")`, `cfg[f"..."]`, `.get(f"...")`, `f"..." in cfg`, or a
  variable it is assigned to used so): the many other f-strings (file names, metric names, a
  LoRA's `f"warmup_{lora_id}"`) would otherwise make nearly any `prefix_word` name read;
* read by a `${a.b.c}` interpolation of the tree's YAML files: an interpolated key is read
  whenever the key holding the interpolation is.

Which node a name is read from is kept as the steps the text takes from a name to a key below it
(`edges`, "p.c"): attribute chains and dotted strings (`config.critic.optim`, "a.b.c"), keys
written `["c"]`, `.get("c")`, `.pop("c")`, `getattr(p, "c")`, `"c" in x.p`, and interpolations.
`reads_under(p, c)` answers "is `c` ever read as a key of a node named `p`" (or of a variable
named for it, `critic_cfg`): `critic` is read, but never as `actor_rollout_ref.critic`.

Nodes whose keys are all read, whatever their names, are kept apart (`whole`): a node reached
from a config object and unpacked into a call (`f(**cfg.engine_kwargs)`), iterated
(`cfg.x.items()`, `for k in cfg.x`) or converted for a library (`OmegaConf.to_container(cfg.x)`,
also across lines), and class fields typed as a free-form dict (`lora: dict[str, Any]`). Those
expressions are found by regex and parsed alone with `ast`.

It also keeps two facts about keys of the root config that `verl/`'s code states (not a recipe's
or a project's, which run only for their own launches), read with `ast` from the few files whose
text hints at them: the keys it warns about as deprecated (`deprecations.in_code`), and the
choice checks its functions make unconditionally (`classes.code_choices`:
`assert config.actor_rollout_ref.actor.loss_agg_mode in [...]`).

Files read: `verl/` and `recipe/` under the tree root (tests and docs skipped), plus any extra
package directories or files the caller names (an entry point that lives outside the tree).
"""

from __future__ import annotations

import ast
import bisect
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from ..cache import memo
from ..launch.locate import HydraApp, files_digest, source_files, source_roots, tree_stamp
from ..terminal import Progress
from .classes import Choice, code_choices
from .deprecations import Deprecation, in_code

_FORMAT = "reader-14"  # change whenever what build() collects changes: old cache entries are then unused
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
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
# Receivers that name no config node: which node they hold is told by what else is read from them.
_GENERIC = frozenset({"config", "cfg", "conf", "_config", "self.config", "self.cfg", "self._config"})
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


@dataclass(frozen=True)
class ReaderIndex:
    """The names code reads, name patterns from f-strings, and nodes read whole."""

    names: frozenset[str]
    patterns: tuple[str, ...]  # regexes (full match) from f-strings such as f"{role}_micro_batch_size"
    whole: frozenset[str]  # config node names unpacked with ** or iterated: any key under them is read
    files: int  # how many files were read
    # Names mentioned by code other than the config declarations (`*/config/*.py`, where every
    # key is a dataclass field): a key whose name is only declared there is read by nothing.
    used: frozenset[str] = frozenset()
    deprecated: tuple[Deprecation, ...] = ()  # keys from the root the code warns about as deprecated
    choices: tuple[tuple[str, Choice], ...] = ()  # (key from the root, the values the code allows)
    interpolated: frozenset[str] = (
        frozenset()
    )  # names in the YAML files' `${...}`: read whenever the key holding them is
    # "p.c": the code (or an interpolation) reaches `c` as a key of a node or variable named `p`
    # (`x.p.c`, `p["c"]`, `p.get("c")`, `getattr(p, "c")`, `"c" in x.p`, a dotted string "p.c").
    edges: frozenset[str] = frozenset()
    # The chains read from a receiver that names no node (`self.config.actor.checkpoint`,
    # `cfg.optim`), one group per receiver and top-level class or function of a file: which node
    # the receiver holds is decided by the config being linted (`reads_at`).
    scoped: tuple[tuple[str, ...], ...] = ()
    # The edges of every other read: from a named receiver (`actor_cfg.checkpoint`), a dotted
    # string, `getattr(p, "c")`, `"c" in p`, an interpolation.
    loose: frozenset[str] = frozenset()

    def reads(self, name: str) -> bool:
        """`name` is mentioned, or built by an f-string from names that are (`ppo_micro_batch_size`
        + `_per_gpu` by f"{param}_per_gpu"; a typo of the first part is not)."""
        return name in self.names or self.built(name)

    def used_beyond_config(self, name: str) -> bool:
        """`name` is mentioned by code other than the config declarations, or built by an f-string."""
        return name in self.used or self.built(name)

    def reads_under(self, parent: str, name: str) -> bool:
        """Some code reaches `name` as a key of a node named `parent` (`config.critic.optim`), or
        of a variable named for it (`critic_cfg.optim`, `rollout_config["x"]`). A read through
        a receiver named for no node (`self.config.optim`) is no evidence of which node it is."""
        if f"{parent}.{name}" in self.edges:
            return True
        tail = f".{name}"
        return any(e.endswith(tail) and _names_node(e[: -len(tail)], parent) for e in self.edges)

    def reads_at(self, path: tuple[str, ...], name: str, keys_at: Callable[[tuple[str, ...]], set[str] | None]) -> bool:
        """Some code may read `name` as a key of the node at `path` (`keys_at(node)`: the keys of
        a node of the config, None for no node). A read from a receiver that names no node
        (`self.config.checkpoint`) is placed by the other keys read from the same receiver in
        the same class or function: it may hold the node when that node has nearly all of them
        (all but one, or a quarter of many: a key read with a default may be missing); a
        CriticWorker that reads `self.config.model`, `.ppo_epochs` and `.checkpoint` holds the
        critic, not the rollout. Generous like the rest of the index: a named read
        (`rollout_cfg.checkpoint`, `getattr(config, "checkpoint")`) counts wherever it may be."""
        parent = path[-1]
        for e in self.loose:
            holder, _, leaf = e.rpartition(".")
            if leaf == name and (holder == parent or holder in _GENERIC or _names_node(holder, parent)):
                return True
        for group in self.scoped:
            firsts: set[str] | None = None
            for chain in group:
                steps = chain.split(".")
                for j, step in enumerate(steps):
                    if step != name or j > len(path) or tuple(path[len(path) - j :]) != tuple(steps[:j]):
                        continue
                    keys = keys_at(path[: len(path) - j])
                    if keys is None:
                        continue
                    if firsts is None:
                        firsts = {c.partition(".")[0] for c in group} - {name}
                    if len(firsts - keys) <= max(1, len(firsts) // 4):
                        return True
        return False

    def built(self, name: str) -> bool:
        """`name` is built by an f-string from names the code mentions (kept per name: the rules
        ask for each key of each launch, and the patterns are many)."""
        hit = self._built.get(name)
        if hit is None:
            hit = self._built[name] = any(
                m is not None and all(g == "" or g.isdigit() or g in self.names for g in m.groups())
                for m in (p.fullmatch(name) for p in self._patterns)
            )
        return hit

    @cached_property
    def _patterns(self) -> list[re.Pattern]:
        return [re.compile(p.replace(".*", "(.*)")) for p in self.patterns]

    @cached_property
    def _built(self) -> dict[str, bool]:
        return {}


def _names_node(holder: str, node: str) -> bool:
    """A variable named for a config node (`critic_cfg`, `rollout_config` for `critic`, `rollout`)."""
    return node in holder.split("_") and re.search(r"conf|cfg", holder) is not None


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
        if receiver not in _GENERIC or subbed[m.start() - 1 : m.start()] in ("'", '"'):
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


def build(
    tree_root: Path, extra: tuple[Path, ...] = (), progress: Callable[[int, int], None] | None = None
) -> ReaderIndex:
    """Read the tree now (no cache), calling `progress(n, total)` as the n-th of its files is read."""
    return _scan(tree_root, source_files(source_roots(tree_root, extra)), progress)


def _scan(tree_root: Path, files: list[Path], progress: Callable[[int, int], None] | None = None) -> ReaderIndex:
    """The index of `files`; the facts about keys come from those under the tree's verl/."""
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
    found = (frozenset(names), tuple(sorted(patterns)), frozenset(whole), len(files), frozenset(used))
    facts = (tuple(deprecated), tuple(choices), frozenset(interpolated), frozenset(edges[0]))
    return ReaderIndex(*found, *facts, tuple(sorted(edges[2])), frozenset(edges[1]))


def _joined(tree: ReaderIndex, more: ReaderIndex) -> ReaderIndex:
    """The index of the tree's files and then `more`'s: what `build` gives for both at once."""
    return ReaderIndex(
        tree.names | more.names,
        tuple(sorted({*tree.patterns, *more.patterns})),
        tree.whole | more.whole,
        tree.files + more.files,
        tree.used | more.used,
        tree.deprecated + more.deprecated,
        tree.choices + more.choices,
        tree.interpolated | more.interpolated,
        tree.edges | more.edges,
        tree.scoped + more.scoped,
        tree.loose | more.loose,
    )


def _key_facts(text: str, rel: str, deprecated: list[Deprecation], choices: list[tuple[str, Choice]]) -> None:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return
    deprecated += in_code(tree, rel)
    choices += code_choices(tree, rel)


def reader_index(tree_root: Path, extra: tuple[Path, ...] = ()) -> ReaderIndex:
    """The index of `tree_root` (and `extra` package dirs or files): from this process's memory,
    else from the disk cache when the files are unchanged, else built (~1 s for verl 0.9.1).

    In memory it is kept per (root, extra) without looking at the files again: one process
    lints a set of scripts against a tree that does not change meanwhile, and the stat walk
    (~30 ms) would otherwise be paid for every launch. Asked again with the same arguments (a
    rule asks once per key), no path is resolved again."""
    asked = (tree_root, extra)
    hit = _LOADED.get(asked)
    if hit is not None:
        return hit
    root = Path(tree_root).resolve()
    extra = tuple(Path(p).resolve() for p in extra)
    hit = _LOADED.get((root, extra))
    if hit is None:
        roots = source_roots(root, extra)
        n_own = len(source_roots(root, ()))
        if (
            len(roots) == n_own
        ):  # nothing beyond the tree's verl/ and recipe/ (config dirs inside verl/ are read anyway)
            hit = _LOADED.get((root, ()))  # the same index, asked without those dirs (no disk cache: built once)
            if hit is None:
                # An installed wheel is stamped by its RECORD: the Hydra callback pays this at job start.
                ident = "\0".join([_FORMAT, str(root), tree_stamp(root)])
                hit = _LOADED[(root, ())] = memo("reader", ident, lambda: _build_shown(root), ReaderIndex)
        else:
            # A project's own files (its package, its config dirs) are indexed apart, keyed on
            # their own stamp: editing one, or a new project, never indexes the verl tree again.
            files = source_files(roots[n_own:])
            ident = "\0".join([_FORMAT, "project", str(root), files_digest(root, files)])
            hit = _joined(reader_index(root), memo("reader", ident, lambda: _scan(root, files), ReaderIndex))
        _LOADED[(root, extra)] = hit
    _LOADED[asked] = hit
    return hit


def key_facts(
    tree_root: Path, extra: tuple[Path, ...] = ()
) -> tuple[tuple[Deprecation, ...], tuple[tuple[str, Choice], ...]]:
    """The index's facts about keys (`deprecated`, `choices`) without loading its names: kept on
    disk apart from the index, a few KB instead of its many names, which a Hydra job start
    (`rules.tables`, `rules.rejected_values`) does not need."""
    asked = (tree_root, extra)
    hit = _FACTS.get(asked)
    if hit is None:
        loaded = _LOADED.get(asked)
        root = Path(tree_root).resolve()
        if loaded is None and len(source_roots(root, tuple(Path(p).resolve() for p in extra))) == len(
            source_roots(root, ())
        ):
            ident = "\0".join([_FORMAT, "key facts", str(root), tree_stamp(root)])
            hit = memo("reader", ident, lambda: _facts_of(reader_index(root)), tuple)
        else:
            hit = _facts_of(loaded or reader_index(tree_root, extra))
        _FACTS[asked] = hit
    return hit


def _facts_of(index: ReaderIndex) -> tuple[tuple[Deprecation, ...], tuple[tuple[str, Choice], ...]]:
    return index.deprecated, index.choices


def _build_shown(root: Path) -> ReaderIndex:
    """build(), saying so: a cache miss on a big tree takes a second or more."""
    what = f"indexing verl tree at {root}"
    with Progress(what, note=f"{what} (first run for this tree)") as shown:
        return build(root, (), shown.update)


_LOADED: dict[tuple[Path | str, tuple[Path, ...]], ReaderIndex] = {}  # the explicit in-process cache
_FACTS: dict[tuple[Path | str, tuple[Path, ...]], tuple] = {}  # key_facts, in this process


_IMPORT_DEPTH = 6  # directories above an entry point where the packages it imports are looked for


@lru_cache(maxsize=64)  # per app, like the index: the rules ask once per key of a launch
def app_sources(app: HydraApp) -> tuple[Path, ...]:
    """An entry point outside the tree (a project built on verl) reads keys too: its package (or
    its file), the packages and modules it imports by a top-level name that one of the
    directories above it holds (`from myproj.workers import ...` in `myproj/recipe/x/main.py`:
    the whole `myproj/`, its workers, rollout and monitors), and the interpolations of its own
    config directories."""
    file = Path(app.file).resolve()
    out: list[Path] = []
    if app.place_in_tree() is None:  # verl/ and recipe/ are what the index reads anyway
        top = file
        while (top.parent / "__init__.py").is_file():
            top = top.parent
        out.append(top)
        try:
            text = file.read_text(encoding="utf-8", errors="replace")
        except OSError:
            text = ""
        for name in sorted(set(re.findall(r"^\s*(?:from|import)\s+([A-Za-z_]\w*)", text, re.M)) - {"verl", "recipe"}):
            cand = _imported(file, name)
            if cand is not None and cand != top and top not in cand.parents:
                out.append(cand)
    return (*out, *app.config_dirs)  # (reader_index drops what lies inside verl/ or recipe/)


def _imported(file: Path, name: str) -> Path | None:
    """The package or module `name` that the nearest directory above `file` holds (where Python
    finds it when the project runs from there), up to the repository's root: a package (with
    `__init__.py`), a namespace package (a directory with Python files), or a module."""
    for d in list(file.parents)[:_IMPORT_DEPTH]:
        pkg, mod = d / name, d / f"{name}.py"
        if mod.is_file():
            return mod
        if pkg.is_dir() and ((pkg / "__init__.py").is_file() or next(pkg.glob("*.py"), None) is not None):
            return pkg
        if (d / ".git").exists():
            break
    return None


__all__ = ["ReaderIndex", "app_sources", "build", "key_facts", "reader_index"]
