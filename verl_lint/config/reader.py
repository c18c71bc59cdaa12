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

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

from ..cache import memo
from ..launch.locate import HydraApp, files_digest, source_files, source_roots, tree_stamp
from ..terminal import Progress
from .classes import Choice
from .deprecations import Deprecation
from .receivers import GENERIC, names_node

_FORMAT = "reader-14"  # change whenever what code_scan.scan collects changes: old cache entries are then unused


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
        return any(e.endswith(tail) and names_node(e[: -len(tail)], parent) for e in self.edges)

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
            if leaf == name and (holder == parent or holder in GENERIC or names_node(holder, parent)):
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


def build(
    tree_root: Path, extra: tuple[Path, ...] = (), progress: Callable[[int, int], None] | None = None
) -> ReaderIndex:
    """Read the tree now (no cache), calling `progress(n, total)` as the n-th of its files is read."""
    return _scan(tree_root, source_files(source_roots(tree_root, extra)), progress)


def _scan(tree_root: Path, files: list[Path], progress: Callable[[int, int], None] | None = None) -> ReaderIndex:
    from .code_scan import scan  # its patterns compile when a tree is indexed, not at every Hydra job start

    return ReaderIndex(**scan(tree_root, files, progress))


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


def key_facts(tree_root: Path) -> tuple[tuple[Deprecation, ...], tuple[tuple[str, Choice], ...]]:
    """The index's facts about keys (`deprecated`, `choices`) without loading its names: kept on
    disk apart from the index, a few KB instead of its many names, which a Hydra job start
    (`rules.tables`, `rules.rejected_values`) does not need. Only the tree's verl/ states them
    (`code_scan.scan`): a project's own files, indexed with it for its own launches, add none,
    so a project's job start does not load the index either."""
    hit = _FACTS.get(tree_root)
    if hit is None:
        loaded = _LOADED.get((tree_root, ()))
        if loaded is not None:
            hit = _facts_of(loaded)
        else:
            root = Path(tree_root).resolve()
            ident = "\0".join([_FORMAT, "key facts", str(root), tree_stamp(root)])
            hit = memo("reader", ident, lambda: _facts_of(reader_index(root)), tuple)
        _FACTS[tree_root] = hit
    return hit


def _facts_of(index: ReaderIndex) -> tuple[tuple[Deprecation, ...], tuple[tuple[str, Choice], ...]]:
    return index.deprecated, index.choices


def _build_shown(root: Path) -> ReaderIndex:
    """build(), saying so: a cache miss on a big tree takes a second or more."""
    what = f"indexing verl tree at {root}"
    with Progress(what, note=f"{what} (first run for this tree)") as shown:
        return build(root, (), shown.update)


_LOADED: dict[tuple[Path | str, tuple[Path, ...]], ReaderIndex] = {}  # the explicit in-process cache
_FACTS: dict[Path | str, tuple] = {}  # key_facts, in this process


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
