"""What the rollout engines accept, and how verl assembles their arguments — read with `ast`.

Two questions, answered without importing vllm, sglang, vllm-ascend or verl:

1. *Which `engine_kwargs` keys and environment variables does the engine know?*
   `vllm serve` arguments are the fields of `EngineArgs`/`AsyncEngineArgs` and of the
   front-end `*Args` classes plus every `--option` registered with `add_argument` in the
   argument-parser modules; vLLM environment variables are the keys of
   `vllm/envs.py:environment_variables`. SGLang's `ServerArgs(**args)` takes the fields of
   `ServerArgs` (a dataclass up to 0.5.19; from 0.5.20 assembled from the `_NS_PATH`
   namespace structs listed in `_INPUT_NAMESPACES`). vllm-ascend's variables are the keys of
   `vllm_ascend/envs.py:env_variables`. The installed package is read when its version is
   the one being checked; otherwise a bundled snapshot (`rules/engine_args/<engine>.yaml`,
   written by `scripts/make_engine_schemas.py` from real wheels) answers.

2. *Which of those keys does verl set itself, before or after your `engine_kwargs`?*
   `vLLMHttpServer.launch_server` / `SGLangHttpServer.launch_server` build one dict literal
   with `**engine_kwargs` in it, then `args.update(...)` / `args[k] = ...` it. Walking that
   function (and the helper methods it hands `engine_kwargs` to) gives every key verl sets,
   whether your value wins or loses, and under which source condition — so a new verl
   release is read, not hand-listed. When the shape is not recognised, the bundled
   `rules/engine_args/verl_assembly.yaml` (derived from verl 0.9.1) answers and says so.

A small evaluator decides those source conditions (`self.config.expert_parallel_size > 1`)
on the composed config; whatever it cannot know stays unknown.
"""

from __future__ import annotations

import ast
import difflib
import zipfile
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

from packaging.version import InvalidVersion, Version

from ..knowledge import load_table as load_data
from ..knowledge import read_text
from .. import environment

# ------------------------------------------------------------------ sources ----


class Source:
    """Read-only access to a package tree: a site-packages dir or a wheel (zip)."""

    def read(self, rel: str) -> str | None:  # pragma: no cover - interface
        raise NotImplementedError

    def listdir(self, rel_dir: str) -> list[str]:  # pragma: no cover - interface
        raise NotImplementedError


class DirSource(Source):
    def __init__(self, root: Path):
        self.root = Path(root)

    def read(self, rel: str) -> str | None:
        try:
            return (self.root / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    def listdir(self, rel_dir: str) -> list[str]:
        d = self.root / rel_dir
        return sorted(p.name for p in d.iterdir()) if d.is_dir() else []


class WheelSource(Source):
    """The `.py` members of a wheel, read straight from the zip (nothing is unpacked or imported)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        with zipfile.ZipFile(self.path) as zf:
            self._members = {i.filename: i for i in zf.infolist()}
        self._zf = zipfile.ZipFile(self.path)

    def read(self, rel: str) -> str | None:
        if rel not in self._members:
            return None
        return self._zf.read(rel).decode("utf-8", errors="replace")

    def listdir(self, rel_dir: str) -> list[str]:
        prefix = rel_dir.rstrip("/") + "/"
        return sorted({n[len(prefix) :].split("/", 1)[0] for n in self._members if n.startswith(prefix)})

    def close(self) -> None:
        self._zf.close()


def fetch_wheel(dist: str, version: str, dest: Path | None = None) -> Path:
    """The wheel of dist==version from the package index, downloaded once without dependencies
    into `dest` (default: <cache>/wheels; see download.py). Raises download.DownloadError (a
    RuntimeError) when it cannot be downloaded."""
    from ..cache import cache_dir, make_dir
    from ..download import DownloadError, wheel

    dest = Path(dest) if dest else cache_dir() / "wheels"
    try:
        make_dir(dest)
    except OSError as ex:
        raise DownloadError(f"cannot download {dist} {version}: cannot create {dest} ({ex.strerror or ex})") from None
    return wheel(dist, version, dest)


def _parse(text: str | None) -> ast.Module | None:
    if text is None:
        return None
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


# --------------------------------------------------------------- extraction ----


class EngineNames(NamedTuple):
    """The names one engine release accepts."""

    args: frozenset[str] = frozenset()  # engine_kwargs keys (underscore form)
    env: frozenset[str] = frozenset()  # environment variables its envs module declares


def _top_classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {n.name: n for n in tree.body if isinstance(n, ast.ClassDef)}


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
                if isinstance(a, ast.Constant) and isinstance(a.value, str) and a.value.startswith("--") and len(a.value) > 2:
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
    serve = _parse(src.read(VLLM_SERVE_FILE))
    frontends = []
    if serve is not None:
        frontends = [r for m in _imported_from(serve, lambda n: n == "make_arg_parser") if (r := _module_rel(src, m))]
    if not frontends and src.read(VLLM_LEGACY_FRONTEND) is not None:
        frontends = [VLLM_LEGACY_FRONTEND]
    files += frontends
    # base classes of the front-end *Args imported from elsewhere (one level)
    for rel in frontends:
        tree = _parse(src.read(rel))
        if tree is not None:
            files += [r for m in _imported_from(tree, lambda n: n.endswith("FrontendArgs")) if (r := _module_rel(src, m))]
    return list(dict.fromkeys(files))


def extract_vllm(src: Source) -> EngineNames:
    args: set[str] = set()
    trees = [t for rel in vllm_arg_files(src) if (t := _parse(src.read(rel))) is not None]
    classes: dict[str, ast.ClassDef] = {}
    for t in trees:
        classes.update(_top_classes(t))
    for name in classes:
        if name.endswith("Args") and not name.startswith("Batch"):
            args.update(_class_fields(classes, name))
    for t in trees:
        args |= _long_options(t)
    env_tree = _parse(src.read("vllm/envs.py"))
    env = _dict_keys(env_tree, "environment_variables") if env_tree else set()
    return EngineNames(frozenset(args), frozenset(env))


def extract_sglang(src: Source) -> EngineNames:
    """`ServerArgs(**kwargs)` keywords: dataclass fields (<=0.5.19) or the namespace structs (>=0.5.20)."""
    tree = _parse(src.read("sglang/srt/server_args.py"))
    if tree is None:
        return EngineNames()
    classes = _top_classes(tree)
    args = set(_class_fields(classes, "ServerArgs"))
    # >= 0.5.20: ServerArgs = msgspec.defstruct(...) over the structs in _INPUT_NAMESPACES
    wanted: set[str] | None = None
    for n in tree.body:
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "_INPUT_NAMESPACES" for t in n.targets):
            if isinstance(n.value, (ast.List, ast.Tuple)):
                wanted = {e.id for e in n.value.elts if isinstance(e, ast.Name)}
    if wanted is not None:
        fields_dir = "sglang/srt/arg_groups/fields"
        for fname in src.listdir(fields_dir):
            if not fname.endswith(".py"):
                continue
            ftree = _parse(src.read(f"{fields_dir}/{fname}"))
            if ftree is None:
                continue
            fclasses = _top_classes(ftree)
            for cname, cls in fclasses.items():
                if cname in wanted and _has_ns_path(cls):
                    args.update(_class_fields(fclasses, cname))
    env: set[str] = set()
    env_tree = _parse(src.read("sglang/srt/environ.py"))
    if env_tree is not None:
        env = {
            s.targets[0].id
            for c in _top_classes(env_tree).values()
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
        and any(isinstance(t, ast.Name) and t.id == "_NS_PATH" for t in (s.targets if isinstance(s, ast.Assign) else [s.target]))
        for s in cls.body
    )


def extract_vllm_ascend(src: Source) -> EngineNames:
    tree = _parse(src.read("vllm_ascend/envs.py"))
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
    def build(engine: str, per_version: dict[str, EngineNames]) -> "Snapshot":
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
        toggles = self.names.get(kind, {}).get(name)
        if not toggles:
            return False
        v = lenient_version(version)
        inside = False
        for t in toggles:
            if lenient_version(t) <= v:
                inside = not inside
            else:
                break
        return inside

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
        import yaml

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
    def from_table(table: dict) -> "Snapshot":
        names = {
            kind: {str(n): tuple(str(v) for v in (t or ())) for n, t in (table.get(kind) or {}).items()}
            for kind in ("args", "env")
            if table.get(kind)
        }
        return Snapshot(str(table["engine"]), tuple(str(v) for v in table.get("versions") or ()), names)




@lru_cache(maxsize=64)
def _names_at(snap: Snapshot, kind: str, version: str) -> frozenset[str]:
    v = lenient_version(version)
    out = []
    for name, toggles in snap.names.get(kind, {}).items():
        inside = False
        for t in toggles:
            if lenient_version(t) <= v:
                inside = not inside
            else:
                break
        if inside:
            out.append(name)
    return frozenset(out)


def _read_snapshot_text(text: str) -> dict | None:
    """The generated snapshot format, parsed line by line (10x faster than YAML for ~100 KB);
    None when the text is not in that exact shape (then YAML parses it)."""
    import re

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


@lru_cache(maxsize=None)
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


@lru_cache(maxsize=None)
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


# ====================================================== verl's arg assembly ====


class ArgSet(NamedTuple):
    """One place where verl's server code sets, keeps or consumes an engine argument."""

    key: str
    phase: str  # "pre": engine_kwargs edited before the args literal; "default": literal before **engine_kwargs; "after": after it
    kind: str  # "set" | "setdefault" | "pop"
    value: str | None  # source of verl's value expression
    condition: tuple[str, ...]  # source of every enclosing condition (empty: always)
    line: int

    @property
    def overwrites(self) -> bool:
        """verl's value replaces yours (when `condition` holds)."""
        return self.kind == "set" and self.phase in ("pre", "after")


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
        return f"{self.path}:{line}"

    @property
    def from_source(self) -> bool:
        return self.origin == "source"


SERVER_FILES = {
    "vllm": "verl/workers/rollout/vllm_rollout/vllm_async_server.py",
    "sglang": "verl/workers/rollout/sglang_rollout/async_sglang_server.py",
}


def _is_spread_dict(node: ast.AST, ek: str) -> bool:
    return isinstance(node, ast.Dict) and any(k is None and isinstance(v, ast.Name) and v.id == ek for k, v in zip(node.keys, node.values))


def _const_str(node: ast.AST) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


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
        self.entries.append(ArgSet(key, phase, kind, ast.unparse(value) if isinstance(value, ast.AST) else value, tuple(conds), line))

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
        if _is_spread_dict(value, ek) and self.args_name is None and len(targets) == 1 and isinstance(targets[0], ast.Name):
            self.args_name = targets[0].id
            self.spread_line = line
            seen_spread = False
            for k, v in zip(value.keys, value.values):
                if k is None:
                    seen_spread = seen_spread or (isinstance(v, ast.Name) and v.id == ek)
                    continue
                key = _const_str(k)
                if key is not None:
                    self.add(key, "after" if seen_spread else "default", "set", v, conds, getattr(k, "lineno", line))
            return
        # `x = engine_kwargs.pop("k", ...) or {}`: verl consumes your value
        for sub in ast.walk(value):
            if isinstance(sub, ast.Call):
                self.call(sub, conds, ek, line, consumed_only=True)
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                key = _const_str(t.slice)
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
                        if (key := _const_str(k)) is not None
                    ]
                if t.id != ek:
                    self.locals.setdefault(t.id, ast.unparse(value))

    def call(self, c: ast.Call, conds, ek: str, line: int, consumed_only: bool = False) -> None:
        f = c.func
        if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name):
            owner, meth = f.value.id, f.attr
            key = _const_str(c.args[0]) if c.args else None
            if owner == ek and self.args_name is None:
                if meth == "pop" and key is not None:
                    self.add(key, "pre", "pop", None, conds, line)
                elif consumed_only:
                    return
                elif meth == "setdefault" and key is not None:
                    self.add(key, "pre", "setdefault", c.args[1] if len(c.args) > 1 else None, conds, line)
                elif meth == "update" and c.args and isinstance(c.args[0], ast.Dict):
                    for k, v in zip(c.args[0].keys, c.args[0].values):
                        if (kk := _const_str(k)) is not None:
                            self.add(kk, "pre", "set", v, conds, line)
                return
            if consumed_only:
                return
            if self.args_name is not None and owner == self.args_name and meth == "update" and c.args:
                arg = c.args[0]
                if isinstance(arg, ast.Dict):
                    for k, v in zip(arg.keys, arg.values):
                        if (kk := _const_str(k)) is not None:
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
    classes = _top_classes(tree)
    for name, cls in classes.items():
        methods: dict[str, ast.FunctionDef] = {}
        # bases in the same file first, so the class's own methods win
        for b in cls.bases:
            if isinstance(b, ast.Name) and b.id in classes:
                methods.update({m.name: m for m in classes[b.id].body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))})
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
    tree = _parse(text)
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
def assembly(root: str, engine: str) -> Assembly | None:
    """How the verl tree at `root` assembles `engine`'s server arguments (cached per tree)."""
    rel = SERVER_FILES.get(engine)
    if rel is None:
        return None
    p = Path(root) / rel
    try:
        st = p.stat()
    except OSError:
        return fallback_assembly(engine, f"{rel} does not exist in this verl tree")
    from ..cache import memo

    def read() -> Assembly | None:
        text = _read(p)
        return read_assembly_source(text, engine, rel) if text is not None else None

    # Reading verl's sources with ast costs ~0.1 s: kept on disk per file version.
    a = memo("engine_args", f"assembly\0{p.resolve()}\0{st.st_mtime_ns}\0{st.st_size}\0{engine}", read, (Assembly, type(None)))
    return a if a is not None else fallback_assembly(engine, f"the shape of {rel} was not recognised")


def fallback_assembly(engine: str, why: str) -> Assembly | None:
    table = (load_data("engine_args/verl_assembly.yaml") or {}).get(engine)
    if not table:
        return None
    entries = tuple(
        ArgSet(e["key"], e["phase"], e["kind"], e.get("value"), tuple(e.get("condition") or ()), int(e.get("line") or 0))
        for e in table.get("entries") or []
    )
    return Assembly(
        engine,
        table.get("path", SERVER_FILES[engine]),
        table.get("function", "launch_server"),
        int(table.get("spread_line") or 0),
        entries,
        tuple((k, v) for k, v in (table.get("locals") or {}).items()),
        (),
        origin=f"data: {why}; using the bundled copy from {table.get('derived_from', 'an older verl')}",
    )


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
    tree = _parse(_read(Path(root) / "verl/workers/config/rollout.py"))
    out: dict[str, Any] = {}
    if tree is None:
        return out
    cls = _top_classes(tree).get("RolloutConfig")
    if cls is None:
        return out
    for s in cls.body:
        if isinstance(s, ast.AnnAssign) and isinstance(s.target, ast.Name) and isinstance(s.value, ast.Constant):
            out[s.target.id] = s.value.value
    return out


def _read(p: Path) -> str | None:
    try:
        return p.read_text(encoding="utf-8")
    except OSError:
        return None


@lru_cache(maxsize=16)
def verl_env_names(root: str) -> frozenset[str]:
    """VLLM_*/SGLANG_* names that verl itself reads or sets (string literals in its source)."""
    import re

    pat = re.compile(r"[\"']((?:VLLM|SGLANG)_[A-Z0-9_]+)[\"']")
    base = Path(root) / "verl"
    marker = base / "__init__.py"
    try:
        st = marker.stat()
        key = f"{base.resolve()}|{st.st_mtime_ns}|{(Path(root) / 'verl/version/version').read_text().strip() if (Path(root) / 'verl/version/version').is_file() else ''}"
    except OSError:
        key = ""

    def scan() -> frozenset[str]:
        out: set[str] = set()
        for p in base.rglob("*.py"):
            text = _read(p)
            if text and ("VLLM_" in text or "SGLANG_" in text):
                out.update(pat.findall(text))
        return frozenset(out)

    if not key:
        return scan()
    from ..cache import memo

    return memo("engine_args", f"verl-env\0{key}", scan, frozenset)


# ---------------------------------------------------------------- evaluator ----


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

    def config_refs(self, src: str | None) -> list[str]:
        """The `self.config.<key>` paths an expression reads (following local names)."""
        out: list[str] = []
        if src is None:
            return out
        try:
            node = ast.parse(src, mode="eval")
        except SyntaxError:
            return out
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
                if (base == "" or _is_self_config(n.func.value)) and n.args and _const_str(n.args[0]):
                    out.append(_const_str(n.args[0]))
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
        if isinstance(f, ast.Attribute) and f.attr == "get" and args and _const_str(args[0]) is not None:
            base = self.expr(f.value)
            key = _const_str(args[0])
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
        if isinstance(f, ast.Name) and f.id == "getattr" and len(args) >= 2 and _const_str(args[1]) is not None:
            base = self.expr(args[0])
            key = _const_str(args[1])
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
        if isinstance(f, ast.Attribute) and f.attr == "parse" and isinstance(f.value, ast.Name) and f.value.id == "version" and args:
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
    return isinstance(n, ast.Attribute) and n.attr == "config" and isinstance(n.value, ast.Name) and n.value.id == "self"


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
