"""What each rollout engine release accepts: `engine_kwargs` keys and environment variables.

Answered without importing vllm, sglang or vllm-ascend. `vllm serve` arguments are the fields
of `EngineArgs`/`AsyncEngineArgs` and of the front-end `*Args` classes plus every `--option`
registered with `add_argument` in the argument-parser modules; vLLM environment variables are
the keys of `vllm/envs.py:environment_variables`. SGLang's `ServerArgs(**args)` takes the
fields of `ServerArgs` (a dataclass up to 0.5.19; from 0.5.20 assembled from the `_NS_PATH`
namespace structs listed in `_INPUT_NAMESPACES`). vllm-ascend's variables are the keys of
`vllm_ascend/envs.py:env_variables`. The installed package is read with `ast` when its version
is the one being checked; otherwise a bundled snapshot (`rules/engine_args/<engine>.yaml`,
written by `scripts/make_engine_schemas.py` from real wheels) answers.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache, lru_cache
from pathlib import Path
from typing import NamedTuple

import yaml
from packaging.version import InvalidVersion, Version

from .. import environment
from ..knowledge import load_table as load_data
from ..knowledge import read_text
from .pysource import DirSource, Source, parse_source, top_classes

# --------------------------------------------------------------- extraction ----


class EngineNames(NamedTuple):
    """The names one engine release accepts."""

    args: frozenset[str] = frozenset()  # engine_kwargs keys (underscore form)
    env: frozenset[str] = frozenset()  # environment variables its envs module declares


def _class_fields(classes: dict[str, ast.ClassDef], name: str, _seen: frozenset = frozenset()) -> list[str]:
    """Annotated attributes of a class and its bases found in `classes` (ClassVar/InitVar and _private skipped)."""
    cls = classes.get(name)
    if cls is None or name in _seen:
        return []
    out: list[str] = []
    for b in cls.bases:
        base = b.id if isinstance(b, ast.Name) else b.attr if isinstance(b, ast.Attribute) else None
        if base:
            out += _class_fields(classes, base, _seen | {name})
    for s in cls.body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name):
            ann = ast.unparse(s.annotation)
            if ann.startswith(("ClassVar", "typing.ClassVar", "InitVar", "dataclasses.InitVar")):
                continue
            if s.target.id.startswith("_"):
                continue
            out.append(s.target.id)
    return list(dict.fromkeys(out))


def _long_options(tree: ast.Module) -> set[str]:
    """`--long-option` strings of every `*.add_argument(...)` call, as underscore names."""
    out = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "add_argument":
            for a in n.args:
                if (
                    isinstance(a, ast.Constant)
                    and isinstance(a.value, str)
                    and a.value.startswith("--")
                    and len(a.value) > 2
                ):
                    out.add(a.value[2:].replace("-", "_"))
    return out


def _dict_keys(tree: ast.Module, var: str) -> set[str]:
    """String keys of the module-level dict literal assigned to `var`."""
    out: set[str] = set()
    for n in tree.body:
        targets, value = [], None
        if isinstance(n, ast.Assign):
            targets, value = n.targets, n.value
        elif isinstance(n, ast.AnnAssign) and n.value is not None:
            targets, value = [n.target], n.value
        if any(isinstance(t, ast.Name) and t.id == var for t in targets) and isinstance(value, ast.Dict):
            out |= {k.value for k in value.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
    return out


# `vllm serve` = EngineArgs/AsyncEngineArgs (arg_utils.py) + the module that serve.py imports
# `make_arg_parser` from (openai/cli_args.py <=0.28, launchers/cli_args.py 0.29-0.32,
# common/cli_args.py >=0.33) + serve.py's own options.
VLLM_ENGINE_FILE = "vllm/engine/arg_utils.py"
VLLM_SERVE_FILE = "vllm/entrypoints/cli/serve.py"
VLLM_LEGACY_FRONTEND = "vllm/entrypoints/openai/cli_args.py"


def _module_rel(src: Source, module: str) -> str | None:
    base = module.replace(".", "/")
    for rel in (f"{base}.py", f"{base}/__init__.py"):
        if src.read(rel) is not None:
            return rel
    return None


def _imported_from(tree: ast.Module, wanted: Callable[[str], bool]) -> list[str]:
    """Modules that `from M import name` statements take a wanted name from."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and n.module and n.level == 0 and any(wanted(a.name) for a in n.names):
            out.append(n.module)
    return list(dict.fromkeys(out))


def vllm_arg_files(src: Source) -> list[str]:
    files = [VLLM_ENGINE_FILE, VLLM_SERVE_FILE]
    serve = parse_source(src.read(VLLM_SERVE_FILE))
    frontends = []
    if serve is not None:
        frontends = [r for m in _imported_from(serve, lambda n: n == "make_arg_parser") if (r := _module_rel(src, m))]
    if not frontends and src.read(VLLM_LEGACY_FRONTEND) is not None:
        frontends = [VLLM_LEGACY_FRONTEND]
    files += frontends
    # base classes of the front-end *Args imported from elsewhere (one level)
    for rel in frontends:
        tree = parse_source(src.read(rel))
        if tree is not None:
            files += [
                r for m in _imported_from(tree, lambda n: n.endswith("FrontendArgs")) if (r := _module_rel(src, m))
            ]
    return list(dict.fromkeys(files))


def extract_vllm(src: Source) -> EngineNames:
    args: set[str] = set()
    trees = [t for rel in vllm_arg_files(src) if (t := parse_source(src.read(rel))) is not None]
    classes: dict[str, ast.ClassDef] = {}
    for t in trees:
        classes.update(top_classes(t))
    for name in classes:
        if name.endswith("Args") and not name.startswith("Batch"):
            args.update(_class_fields(classes, name))
    for t in trees:
        args |= _long_options(t)
    env_tree = parse_source(src.read("vllm/envs.py"))
    env = _dict_keys(env_tree, "environment_variables") if env_tree else set()
    return EngineNames(frozenset(args), frozenset(env))


def extract_sglang(src: Source) -> EngineNames:
    """`ServerArgs(**kwargs)` keywords: dataclass fields (<=0.5.19) or the namespace structs (>=0.5.20)."""
    tree = parse_source(src.read("sglang/srt/server_args.py"))
    if tree is None:
        return EngineNames()
    classes = top_classes(tree)
    args = set(_class_fields(classes, "ServerArgs"))
    # >= 0.5.20: ServerArgs = msgspec.defstruct(...) over the structs in _INPUT_NAMESPACES
    wanted: set[str] | None = None
    for n in tree.body:
        if isinstance(n, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "_INPUT_NAMESPACES" for t in n.targets
        ):
            if isinstance(n.value, (ast.List, ast.Tuple)):
                wanted = {e.id for e in n.value.elts if isinstance(e, ast.Name)}
    if wanted is not None:
        fields_dir = "sglang/srt/arg_groups/fields"
        for fname in src.listdir(fields_dir):
            if not fname.endswith(".py"):
                continue
            ftree = parse_source(src.read(f"{fields_dir}/{fname}"))
            if ftree is None:
                continue
            fclasses = top_classes(ftree)
            for cname, cls in fclasses.items():
                if cname in wanted and _has_ns_path(cls):
                    args.update(_class_fields(fclasses, cname))
    env: set[str] = set()
    env_tree = parse_source(src.read("sglang/srt/environ.py"))
    if env_tree is not None:
        env = {
            s.targets[0].id
            for c in top_classes(env_tree).values()
            for s in c.body
            if isinstance(s, ast.Assign)
            and len(s.targets) == 1
            and isinstance(s.targets[0], ast.Name)
            and s.targets[0].id.startswith("SGLANG_")
        }
    return EngineNames(frozenset(args), frozenset(env))


def _has_ns_path(cls: ast.ClassDef) -> bool:
    return any(
        isinstance(s, (ast.Assign, ast.AnnAssign))
        and any(
            isinstance(t, ast.Name) and t.id == "_NS_PATH"
            for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
        )
        for s in cls.body
    )


def extract_vllm_ascend(src: Source) -> EngineNames:
    tree = parse_source(src.read("vllm_ascend/envs.py"))
    return EngineNames(frozenset(), frozenset(_dict_keys(tree, "env_variables") if tree else set()))


class EngineInfo(NamedTuple):
    key: str  # version key in Context.versions
    dist: str  # distribution name on the package index
    top: str  # top-level import package
    title: str  # how messages name it
    extract: Callable[[Source], EngineNames]


ENGINES: dict[str, EngineInfo] = {
    "vllm": EngineInfo("vllm", "vllm", "vllm", "vLLM", extract_vllm),
    "sglang": EngineInfo("sglang", "sglang", "sglang", "SGLang", extract_sglang),
    "vllm_ascend": EngineInfo("vllm_ascend", "vllm-ascend", "vllm_ascend", "vllm-ascend", extract_vllm_ascend),
}


# ---------------------------------------------------------------- snapshots ----


@lru_cache(maxsize=4096)
def lenient_version(text: str) -> Version:
    """`text` as a Version; 0 when it is not one (engine release names from snapshots and tables)."""
    try:
        return Version(text)
    except InvalidVersion:
        return Version("0")


@dataclass(frozen=True)
class Snapshot:
    """Names per engine release, stored as toggle points over the releases read.

    `names[kind][name]` is a list of versions [since, removed, since, removed, ...]: the
    name exists from `since` (inclusive) until `removed` (exclusive); an odd-length list
    means it still exists in the newest release read.
    """

    engine: str
    versions: tuple[str, ...]
    names: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict, hash=False, compare=False)

    @staticmethod
    def build(engine: str, per_version: dict[str, EngineNames]) -> Snapshot:
        versions = tuple(sorted(per_version, key=lenient_version))
        names: dict[str, dict[str, tuple[str, ...]]] = {}
        for kind in ("args", "env"):
            all_names = set().union(*(getattr(per_version[v], kind) for v in versions)) if versions else set()
            table = {}
            for n in sorted(all_names):
                toggles, present = [], False
                for v in versions:
                    now = n in getattr(per_version[v], kind)
                    if now != present:
                        toggles.append(v)
                        present = now
                table[n] = tuple(toggles)
            if table:
                names[kind] = table
        return Snapshot(engine, versions, names)

    def present(self, kind: str, name: str, version: str) -> bool:
        return _within(self.names.get(kind, {}).get(name) or (), lenient_version(version))

    def at(self, kind: str, version: str) -> frozenset[str]:
        return _names_at(self, kind, version)

    def names_at(self, version: str) -> EngineNames:
        return EngineNames(self.at("args", version), self.at("env", version))

    def history(self, kind: str, name: str) -> tuple[str, ...]:
        return self.names.get(kind, {}).get(name, ())

    def previous(self, version: str) -> str | None:
        """The release read just before `version`."""
        earlier = [v for v in self.versions if lenient_version(v) < lenient_version(version)]
        return earlier[-1] if earlier else None

    def describe(self, kind: str, name: str, version: str) -> str:
        """'removed in vLLM 0.13 (last in 0.12.0)' / 'added in ...' or '' — relative to `version`."""
        toggles = self.history(kind, name)
        if not toggles:
            return ""
        title = ENGINES[self.engine].title if self.engine in ENGINES else self.engine
        v = lenient_version(version)
        starts = toggles[0::2]
        ends = toggles[1::2]
        # removed before `version`: the last end <= version
        past_ends = [e for e in ends if lenient_version(e) <= v]
        if past_ends and not self.present(kind, name, version):
            e = past_ends[-1]
            last = self.previous(e)
            return f"removed in {title} {e}" + (f" (last in {last})" if last else "")
        future = [s for s in starts if lenient_version(s) > v]
        if future:
            return f"only exists from {title} {future[0]} on"
        return ""

    # -- YAML --------------------------------------------------------------
    def to_yaml(self, header: str = "") -> str:
        lines = [f"# {h}" if h else "#" for h in header.splitlines()] if header else []
        lines.append(f"engine: {self.engine}")
        lines.append("versions: " + yaml.safe_dump(list(self.versions), default_flow_style=True, width=10**6).strip())
        for kind in ("args", "env"):
            table = self.names.get(kind)
            if not table:
                continue
            lines.append(f"{kind}:")
            for n in sorted(table):
                lines.append(f"  {n}: " + yaml.safe_dump(list(table[n]), default_flow_style=True, width=10**6).strip())
        return "\n".join(lines) + "\n"

    @staticmethod
    def from_table(table: dict) -> Snapshot:
        names = {
            kind: {str(n): tuple(str(v) for v in (t or ())) for n, t in (table.get(kind) or {}).items()}
            for kind in ("args", "env")
            if table.get(kind)
        }
        return Snapshot(str(table["engine"]), tuple(str(v) for v in table.get("versions") or ()), names)


def _within(toggles: tuple[str, ...], v: Version) -> bool:
    """`v` is inside one of the [since, removed) spans of a toggle list (see `Snapshot`)."""
    inside = False
    for t in toggles:
        if lenient_version(t) > v:
            break
        inside = not inside
    return inside


@lru_cache(maxsize=64)
def _names_at(snap: Snapshot, kind: str, version: str) -> frozenset[str]:
    v = lenient_version(version)
    return frozenset(name for name, toggles in snap.names.get(kind, {}).items() if _within(toggles, v))


def _read_snapshot_text(text: str) -> dict | None:
    """The generated snapshot format, parsed line by line (10x faster than YAML for ~100 KB);
    None when the text is not in that exact shape (then YAML parses it)."""
    table: dict = {}
    section: dict | None = None
    item = re.compile(r"^  ([A-Za-z0-9_.\-]+): \[([^\]]*)\]$")
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        if line.startswith("engine: "):
            table["engine"] = line[len("engine: ") :].strip()
        elif line.startswith("versions: [") and line.endswith("]"):
            table["versions"] = [v.strip().strip("'\"") for v in line[len("versions: [") : -1].split(",") if v.strip()]
        elif line in ("args:", "env:"):
            section = table.setdefault(line[:-1], {})
        elif section is not None and (m := item.match(line)):
            section[m.group(1)] = [v.strip().strip("'\"") for v in m.group(2).split(",") if v.strip()]
        else:
            return None
    return table if "engine" in table and "versions" in table else None


@cache
def snapshot(engine: str) -> Snapshot | None:
    rel = f"engine_args/{engine}.yaml"
    text = read_text(rel)  # every engine in ENGINES ships one: a missing table is an error
    table = _read_snapshot_text(text) or load_data(rel)
    return Snapshot.from_table(table) if table else None


# ------------------------------------------------------------------ schemas ----


@dataclass(frozen=True)
class Schema:
    """The names of the engine release being checked against, and where they came from."""

    engine: str
    version: str  # the release the names belong to
    names: EngineNames
    origin: str  # "installed" | "snapshot"
    note: str = ""  # why this is not exactly the release being checked ('' when it is)
    confident: bool = True  # exact release, or another patch release of the same minor
    snapshot: Snapshot | None = None

    @property
    def title(self) -> str:
        return ENGINES[self.engine].title

    def describe(self, kind: str, name: str) -> str:
        return self.snapshot.describe(kind, name, self.version) if self.snapshot else ""

    def suggest(self, kind: str, name: str, n: int = 1) -> list[str]:
        pool = getattr(self.names, kind)
        return difflib.get_close_matches(name, sorted(pool), n=n, cutoff=0.75)


@cache
def _installed_names(engine: str, version: str, path: str) -> EngineNames:
    return ENGINES[engine].extract(DirSource(Path(path)))


def installed_schema(engine: str) -> Schema | None:
    """The installed engine's names, read from its source files (find_spec of the top package; no import)."""
    info = ENGINES[engine]
    version = environment.installed_version(info.dist)
    pkg = environment.package_dir(info.top)
    if version is None or pkg is None:
        return None
    names = _installed_names(engine, version, str(pkg.parent))
    if not (names.args or names.env):
        return None
    return Schema(engine, version, names, "installed", snapshot=snapshot(engine))


def schema_for(engine: str, requested: Version) -> Schema | None:
    """The names of release `requested`: the installed engine when it is that release, else the
    bundled snapshot of that release, else the nearest one (and `note` says so). Which release
    to ask for is decided by `verl_lint.engines.versions` from evidence; there is no default."""
    info = ENGINES[engine]
    inst = installed_schema(engine)
    if inst is not None and lenient_version(inst.version) == requested:
        return inst
    snap = snapshot(engine)
    if snap is None or not snap.versions:
        return None
    versions = sorted(snap.versions, key=lenient_version)
    exact = [v for v in versions if lenient_version(v) == requested]
    if exact:
        return Schema(engine, exact[0], snap.names_at(exact[0]), "snapshot", snapshot=snap)
    same_minor = [v for v in versions if lenient_version(v).release[:2] == requested.release[:2]]
    below = [v for v in versions if lenient_version(v) <= requested]
    if same_minor:
        pick = ([v for v in same_minor if lenient_version(v) <= requested] or same_minor)[-1]
        confident = True
    else:
        pick = below[-1] if below else versions[0]
        confident = False
    why = "newer than" if requested > lenient_version(versions[-1]) else "not one of"
    return Schema(
        engine,
        pick,
        snap.names_at(pick),
        "snapshot",
        note=f"{info.title} {requested} is {why} the bundled snapshots: checked against {info.title} {pick}",
        confident=confident,
        snapshot=snap,
    )


def accepts(engine: str, key: str, names: frozenset[str]) -> bool:
    """The engine takes argument `key`, given the argument names of its release."""
    if key in names:
        return True
    # argparse accepts a unique prefix of a long option (vLLM's parser keeps allow_abbrev)
    dashed = key.replace("_", "-")
    return engine == "vllm" and len([a for a in names if a.replace("_", "-").startswith(dashed)]) == 1
