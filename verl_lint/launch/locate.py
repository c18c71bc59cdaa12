"""Find the verl tree and the Hydra app a launch runs, without importing either.

The verl tree comes from (first match): an explicit `--verl-root DIR` or `--verl VERSION`
(a release downloaded from the registry without dependencies into the user cache),
a verl checkout found by walking up from the script, or the installed `verl`
(`find_spec` of the top-level package only, which does not import it).
`@hydra.main(...)` is read from the module file with `ast`; `pkg://` and `file://`
search-path entries are mapped to directories by hand, because Hydra's `pkg://`
source would import the package (and verl imports torch and ray).
"""

# Real (not postponed) annotations: NamedTuple classes define faster, at every Hydra job start.

import ast
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from ..cache import cache_dir, is_marked, make_dir, new_entry, why_unusable
from ..environment import installed_version
from ..evidence import wheel_record
from ..model import COMMAND_LINE, Launch, VerlTree, Word  # VerlTree: a base value, found here
from ..places import places


class LocateError(Exception):
    """The launch's app or config cannot be found; a clear one-line message."""


class ConfigNotFound(Exception):
    """`--config-name` names a config that the config directory does not have."""

    def __init__(
        self,
        span,
        message: str,
        help: str = "use one of the config files in that directory",
        flag: str = "--config-name",
    ):
        super().__init__(message)
        self.span = span  # the word that names the missing config, else the entry point
        self.help = help
        self.flag = flag


class EntryPointNotFound(Exception):
    """`-m MODULE` names a module the verl tree does not have (python stops with ModuleNotFoundError)."""

    def __init__(self, launch: Launch, message: str, guess: str | None):
        super().__init__(message)
        self.launch = launch
        self.guess = guess


class NotAnalysable(Exception):
    """The launch depends on something only known at run time (a `--config-path` from `$(pwd)`)."""

    def __init__(self, word, reason: str):
        super().__init__(reason)
        self.word = word


class HydraApp(NamedTuple):
    """A launch's Hydra application: its file, config dirs and primary config, and its verl."""

    entry: str  # module or file as written in the script
    file: Path
    config_dirs: tuple[Path, ...]  # --config-dir first, then the primary config dir
    config_name: str | None
    searchpath: tuple[str, ...] | None  # the primary's hydra.searchpath mapped to file:// URLs
    verl: VerlTree | None
    version_base: str | None

    @property
    def verl_version(self) -> str | None:
        return self.verl.version if self.verl else None

    def place_in_tree(self) -> tuple[str, ...] | None:
        """The app file's path parts under the verl tree's `verl/` or `recipe/` (`("recipe",
        "dapo", "main_dapo.py")`); None for an entry point of a project's own."""
        return None if self.verl is None else _place_in_tree(self.verl.root, self.file)

    def verl_module(self) -> str | None:
        """The module of an entry point of verl's own (`verl.trainer.main_ppo`, `recipe.dapo.main_dapo`);
        None for a project's own."""
        place = self.place_in_tree()
        return ".".join((*place[:-1], place[-1].removesuffix(".py"))) if place else None


@lru_cache(maxsize=256)  # asked by every rule of every launch; resolving is system calls
def _place_in_tree(root: Path, file: str | Path) -> tuple[str, ...] | None:
    root, file = root.resolve(), Path(file).resolve()
    parts = file.relative_to(root).parts if root in file.parents else ()
    return parts if len(parts) > 1 and parts[0] in ("verl", "recipe") else None


def read_version(root: Path) -> str | None:
    f = root / "verl" / "version" / "version"
    try:
        return f.read_text().strip() or None
    except OSError:
        return None


def tree_at(root: Path, origin: str) -> VerlTree:
    root = Path(root).resolve()
    if not (root / "verl").is_dir() and (root.name == "verl" and (root / "trainer").is_dir()):
        root = root.parent
    if not (root / "verl" / "trainer").is_dir():
        raise LocateError(f"{root} is not a verl tree (no verl/trainer directory)")
    return VerlTree(root, read_version(root), origin)


def release_tree(version: str) -> VerlTree:
    """A verl release from the package index (`--verl VERSION`): downloaded once without
    dependencies (download.py: no pip, hash-checked) and unpacked into `<cache>/releases`."""
    import zipfile  # optional: only a --verl run unpacks a release; a Hydra job start never does

    from .. import download  # optional: the downloader, only for --verl (not at a Hydra job start)

    try:
        version = download.exact_version(version)  # before it becomes a path
    except download.DownloadError as ex:
        raise LocateError(f"--verl: {ex}") from None
    releases = cache_dir() / "releases"
    dest = releases / f"verl-{version}"
    tree = VerlTree(dest, read_version(dest) or version, f"verl=={version} (cached release)")
    if (dest / "verl" / "trainer").is_dir():
        return tree
    hint = "; pass --verl-root DIR with a verl checkout instead"
    try:
        tmp = new_entry(make_dir(releases))
    except OSError as ex:
        raise LocateError(
            f"cannot download verl {version}: no usable cache directory ({why_unusable(ex)}){hint}"
        ) from None
    try:
        wheel = download.wheel("verl", version, tmp)
        with zipfile.ZipFile(wheel) as zf:
            zf.extractall(tmp)  # member names with .. or a leading / are made safe by zipfile
        wheel.unlink()
        if not (tmp / "verl" / "trainer").is_dir():
            raise LocateError(f"the verl {version} wheel has no verl/trainer package{hint}")
        _put_release(tmp, dest, hint)
    except (download.DownloadError, OSError, zipfile.BadZipFile) as ex:
        raise LocateError(f"{ex}{hint}") from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # already gone when renamed into place
    return tree._replace(version=read_version(dest) or version)


def _put_release(tmp: Path, dest: Path, hint: str) -> None:
    """Rename the unpacked release into place. Two first runs at once: the second rename fails
    and finds the first one's release, which has the same content."""
    for _ in range(2):
        try:
            os.rename(tmp, dest)
            return
        except OSError:
            if (dest / "verl" / "trainer").is_dir():
                return
            if not is_marked(dest):
                raise LocateError(
                    f"{dest} exists and is not a verl release verl-lint downloaded; remove it{hint}"
                ) from None
            # A damaged release verl-lint wrote: moved aside atomically (onto an empty temp dir), removed.
            aside = tempfile.mkdtemp(dir=dest.parent)
            os.rename(dest, aside)
            shutil.rmtree(aside, ignore_errors=True)
    raise LocateError(f"cannot put verl into {dest}{hint}")


# ----------------------------------------------------- the tree's stamp ----

_SOURCE_SKIP = {"tests", "test", "docs", "__pycache__", ".git", "node_modules"}


def source_roots(tree_root: Path, extra: tuple[Path, ...]) -> list[Path]:
    """A tree's verl/ and recipe/ packages, and `extra` package dirs or files outside them."""
    out = [p for p in (tree_root / "verl", tree_root / "recipe") if p.is_dir()]
    return out + [p for p in extra if p.exists() and not any(p == r or r in p.parents for r in out)]


def source_files(roots: list[Path]) -> list[Path]:
    """The `.py` and `.yaml` files under `roots` (tests and docs left out), sorted."""
    out = []
    for root in roots:
        if root.is_file():
            out.append(root)
            continue
        for dirpath, dirs, names in os.walk(root):
            dirs[:] = sorted(d for d in dirs if d not in _SOURCE_SKIP and not d.startswith("."))
            out += [Path(dirpath, n) for n in sorted(names) if n.endswith((".py", ".yaml", ".yml"))]
    return out


def files_digest(root: Path, files: list[Path]) -> str:
    """A digest of the files' paths (relative to `root`), sizes and mtimes."""
    h = hashlib.sha256()
    for f in files:
        sys.audit("verl_lint.read", str(f))  # read through the stamp: the result cache depends on it (results.py)
        try:
            st = f.stat()
        except OSError:
            continue
        h.update(f"{os.path.relpath(f, root)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def tree_stamp(tree_root: Path) -> str:
    """What changes when the tree's code or configs do: an installed (or unpacked) wheel's RECORD
    (installers replace files, they never edit them in place), else the path, size and mtime of
    every `.py`/`.yaml` file under its verl/ and recipe/ (tests and docs left out)."""
    root = Path(tree_root).resolve()
    return wheel_record(root) or files_digest(root, source_files(source_roots(root, ())))


def stamp_covers(tree_root: Path) -> Callable[[str], bool]:
    """Whether an absolute path (a file, or a directory whose listing matters) is part of what
    tree_stamp covers, so a change to it changes the stamp."""
    root = Path(tree_root).resolve()
    tops = [str(t) + os.sep for t in source_roots(root, ())]
    wheel = wheel_record(root) is not None

    def covers(path: str) -> bool:
        top = next((t for t in tops if path.startswith(t) or path + os.sep == t), None)
        if top is None:
            return False
        if wheel or os.path.isdir(path):  # a directory's .py/.yaml names are in the stamp
            return True
        parts = Path(path[len(top) :]).parts
        return path.endswith((".py", ".yaml", ".yml")) and not any(
            p in _SOURCE_SKIP or p.startswith(".") for p in parts[:-1]
        )

    return covers


def find_checkout(start: Path) -> VerlTree | None:
    for p in [start, *start.parents]:
        if (p / "verl" / "trainer").is_dir() and (p / "verl" / "__init__.py").is_file():
            return VerlTree(p, read_version(p), "checkout")
    return None


@lru_cache(maxsize=1)
def installed_tree() -> VerlTree | None:
    try:
        spec = importlib.util.find_spec("verl")  # top-level only: does not import verl
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(list(spec.submodule_search_locations)[0]).parent
    return VerlTree(root, read_version(root) or installed_version("verl"), "installed package")


def verl_tree_for(script_dir: Path, explicit: VerlTree | None) -> VerlTree | None:
    if explicit is not None:
        return explicit
    return find_checkout(script_dir) or installed_tree()


# ------------------------------------------------------------ the app ----


def _module_file(module: str, roots: list[Path]) -> Path | None:
    rel = Path(*module.split("."))
    for root in roots:
        for cand in (root / rel.with_suffix(".py"), root / rel / "__main__.py"):
            if cand.is_file():
                return cand
    return None


def _search_roots(launch: Launch, tree: VerlTree | None) -> list[Path]:
    roots: list[Path] = []
    cwd = [Path(launch.cwd)] if launch.cwd else []
    script_dir = Path(launch.path).resolve().parent if launch.path != COMMAND_LINE else Path.cwd()
    for p in [*cwd, script_dir, *script_dir.parents]:
        if p not in roots:
            roots.append(p)
    if tree is not None:
        roots.insert(0, tree.root)
    return roots


@lru_cache(maxsize=256)
def read_hydra_main(file: Path) -> dict | None:
    """`@hydra.main(config_path=..., config_name=..., version_base=...)` read with ast, or None."""
    try:
        tree = ast.parse(file.read_bytes(), filename=str(file))
    except (OSError, SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for dec in node.decorator_list:
            if not isinstance(dec, ast.Call):
                continue
            f = dec.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
            if name != "main" or (owner and owner != "hydra"):
                continue
            args = {"config_path": None, "config_name": None, "version_base": "1.1"}
            for i, a in enumerate(dec.args[:3]):
                args[("config_path", "config_name", "version_base")[i]] = _const(a)
            for kw in dec.keywords:
                if kw.arg in args:
                    args[kw.arg] = _const(kw.value)
            return args
    return None


def _const(node: ast.AST):
    return node.value if isinstance(node, ast.Constant) else None


def locate_app(launch: Launch, tree: VerlTree | None) -> HydraApp | None:
    """The Hydra app of a launch, or None when the launch is not a Hydra app (a data script)."""
    roots = _search_roots(launch, tree)
    entry = launch.module or launch.file or ""
    if launch.module:
        file = _module_file(launch.module, roots)
        if file is None:
            if tree is not None and (tree.root / launch.module.split(".")[0]).is_dir():
                raise EntryPointNotFound(
                    launch,
                    f"module {launch.module} is not in {tree.describe()}",
                    _nearest_module(launch.module, tree.root),
                )
            if launch.module.split(".")[0] in ("verl", "recipe"):
                raise LocateError(
                    f"module {launch.module} not found: no verl tree found (verl is not installed here and no verl "
                    "checkout holds the script): pass --verl VERSION, --verl-root DIR or set verl-version in "
                    "[tool.verl-lint]"
                )
            return None
    else:
        file = next((r / launch.file for r in roots if (r / launch.file).is_file()), None)
        if file is None:
            return None
    file = file.resolve()
    main = read_hydra_main(file)
    if main is None:
        return None
    for flag, word in (
        ("--config-path", launch.config_path),
        ("--config-name", launch.config_name),
        ("--config-dir", launch.config_dir),
    ):
        if word is not None and word.text is None:
            raise NotAnalysable(
                word, f"{flag} is only known at run time ({word.unknown.reason if word.unknown else 'unknown'})"
            )
    config_name = launch.config_name.text if launch.config_name is not None else main["config_name"]
    config_path = main["config_path"]
    if launch.config_path is not None:  # relative: from the app's file, as Hydra resolves it
        word = launch.config_path
        config_path = _placed(word, launch, config_name) if os.path.isabs(word.text) else word.text
    dirs: list[Path] = []
    if launch.config_dir is not None and launch.config_dir.text:
        d = Path(_placed(launch.config_dir, launch, config_name))
        if not d.is_dir():
            raise ConfigNotFound(
                launch.config_dir.span,
                f"--config-dir {launch.config_dir.text} not found",
                "point --config-dir at an existing directory",
                "--config-dir",
            )
        dirs.append(d.resolve())
    if config_path is not None:
        try:
            dirs.append(_resolve_config_path(config_path, file, roots))
        except LocateError as ex:
            if launch.config_path is None:  # the app's own @hydra.main config_path: Hydra stops all the same
                raise ConfigNotFound(
                    launch.entry_span,
                    str(ex),
                    f"restore the config directory {file.name} names, or launch an entry point whose config exists",
                    "config_path",
                ) from None
            raise ConfigNotFound(
                launch.config_path.span,
                f"Primary config directory not found: {ex}",
                "point --config-path at an existing directory (a relative one is resolved from the app's file, as "
                "Hydra does)",
                "--config-path",
            ) from None
    if config_name is not None and dirs and not any(_config_file(d, config_name) for d in dirs):
        where = ", ".join(str(d) for d in dirs)
        if launch.config_name is not None:  # the script names a config that does not exist: a finding
            raise ConfigNotFound(launch.config_name.span, f"config '{config_name}' not found in {where}")
        raise LocateError(f"config '{config_name}' not found in {where}")
    searchpath = _primary_searchpath(dirs, config_name, launch, roots)
    return HydraApp(entry, file, tuple(dirs), config_name, searchpath, tree, main["version_base"])


def _nearest_module(module: str, root: Path) -> str | None:
    """The module of the same package with the closest name (`verl.trainer.main_ppoo` -> main_ppo)."""
    import difflib  # optional: only a suggestion needs it, kept out of the Hydra callback's start-up

    package, _, name = module.rpartition(".")
    d = root.joinpath(*package.split(".")) if package else root
    names = sorted(f.stem for f in d.glob("*.py") if f.stem != "__init__") if d.is_dir() else []
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6)
    return f"{package}.{close[0]}" if close and package else (close[0] if close else None)


def _placed(word: Word, launch: Launch, config_name: str | None) -> str:
    """The directory a --config-path / --config-dir word names. Built on an assumed working
    directory (`$(pwd)/conf`), it is the first place the script may run from where the directory
    exists (one with the config first), and the launch says which assumption it rests on; when
    no place has it the launch is not analysable: an error would rest on a guess."""
    found = places(word, launch.cwd, None, launch.run_from)
    if not found:
        raise NotAnalysable(word, f"{word.text} is relative to a working directory only known at run time")
    if word.cwd is None or not launch.run_from:
        return found[0]
    rel = os.path.relpath(word.text, word.cwd)
    have = [(d, c) for d, c in zip(found, launch.run_from) if os.path.isdir(d)]
    if not have:
        tried = ", ".join(launch.run_from)
        raise NotAnalysable(
            word,
            f"config directory {rel} not found relative to any assumed working directory (tried {tried}); pass --cwd",
        )
    d, c = next(((d, c) for d, c in have if config_name and _config_file(Path(d), config_name)), have[0])
    first, script_dir = launch.run_from[0], launch.run_from[-1]
    where = (
        "its own directory"
        if c == script_dir
        else "the repository root"
        if c == first
        else f"{os.path.relpath(c, first)}/ in the repository"
    )
    launch.assumed_cwd = f"assuming the script runs from {where}, where {rel} is; pass --cwd to say"
    return d


def _resolve_config_path(config_path: str, file: Path, roots: list[Path]) -> Path:
    if config_path.startswith("pkg://"):
        d = map_pkg(config_path[len("pkg://") :], roots)
        if d is None:
            raise LocateError(f"config_path {config_path} not found")
        return d
    if config_path.startswith("file://"):
        config_path = config_path[len("file://") :]
    d = (file.parent / config_path).resolve()
    if not d.is_dir():
        raise LocateError(f"config directory {d} not found (config_path={config_path!r} of {file.name})")
    return d


def _config_file(d: Path, name: str) -> Path | None:
    for cand in (d / name, d / f"{name}.yaml", d / f"{name}.yml"):
        if cand.is_file():
            return cand
    return None


def map_pkg(dotted: str, roots: list[Path]) -> Path | None:
    """The directory of `pkg://dotted` under `roots`, then under the `sys.path` directories.

    Hydra's own `pkg://` source imports the package (running every parent `__init__`), and so
    does `importlib.util.find_spec` of a dotted name: the directories are looked up by hand."""
    rel = Path(*[p for p in dotted.strip("/").replace("/", ".").split(".") if p])
    for r in [*roots, *(Path(e) for e in sys.path if e and os.path.isdir(e))]:
        if (r / rel).is_dir():
            return (r / rel).resolve()
    return None


class SearchPathError(Exception):
    """A `hydra.searchpath` entry verl-lint cannot map to a directory without running code."""


def map_searchpath(entries, cwd: str, roots: list[Path]) -> tuple[str, ...]:
    """`hydra.searchpath` entries as file:// URLs: `pkg://` found under `roots`, relative `file://` against `cwd`.

    Only directories ever reach Hydra: a `pkg://` or `structured://` entry it resolved itself
    would import a module (from the scanned tree, when that is on `sys.path`). An entry that
    cannot be mapped raises SearchPathError."""
    out = []
    for e in entries or []:
        e = str(e)
        if e.startswith("pkg://"):
            d = map_pkg(e[len("pkg://") :], roots)
            if d is None:
                raise SearchPathError(
                    f"hydra.searchpath entry {e}: package not found in the verl tree, the repository or sys.path"
                )
            out.append(f"file://{d}")
        elif e.startswith("file://") or "://" not in e:
            rel = e[len("file://") :] if e.startswith("file://") else e
            d = next((Path(r, rel) for r in [*([Path(cwd)] if cwd else []), *roots] if Path(r, rel).is_dir()), None)
            # Hydra skips a directory that does not exist (with a warning), as it would here.
            out.append(f"file://{d.resolve() if d else Path(cwd, rel)}")
        else:
            raise SearchPathError(
                f"hydra.searchpath entry {e}: verl-lint reads only file:// and pkg:// entries (others import code)"
            )
    return tuple(out)


def _primary_searchpath(dirs: list[Path], config_name: str | None, launch: Launch, roots) -> tuple[str, ...] | None:
    if config_name is None or any(w.text and w.text.startswith("hydra.searchpath=") for w in launch.overrides):
        return None  # a command-line hydra.searchpath replaces the primary's (compose maps it)
    for d in dirs:
        f = _config_file(d, config_name)
        if f is not None:
            try:
                entries = _declared_searchpath(f)
                return None if entries is None else map_searchpath(entries, launch.cwd, roots)
            except SearchPathError as ex:
                raise NotAnalysable(
                    launch.config_name or Word(config_name, launch.entry_span), f"{ex} (in {f.name})"
                ) from None
    return None


def forget_config_files() -> None:
    """Read the project's config files again: one changed in this process (`--fix`)."""
    _declared_searchpath.cache_clear()


@lru_cache(maxsize=256)
def _declared_searchpath(f: Path) -> tuple[str, ...] | None:
    """`hydra.searchpath` of a primary config file (read once per process); SearchPathError
    when it is there but not a plain list (compose hands Hydra only the mapped entries)."""
    try:
        text = f.read_text(encoding="utf-8")
    except OSError:
        return None
    if "searchpath" not in text:
        return None  # the common case: no need to parse ~1000 lines of YAML
    import yaml  # optional: only a config that names a searchpath needs it (~15 ms off a warm run)

    try:
        data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError:
        return None  # Hydra reports the YAML error itself
    hydra_node = data.get("hydra") if isinstance(data, dict) else None
    entries = hydra_node.get("searchpath") if isinstance(hydra_node, dict) else None
    if entries is None:
        return None
    if not isinstance(entries, list) or not all(isinstance(e, str) for e in entries):
        raise SearchPathError(f"hydra.searchpath is not a list of strings ({entries!r:.60})")
    return tuple(entries)
