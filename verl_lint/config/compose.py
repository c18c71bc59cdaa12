"""Compose a launch's config with Hydra's own code, fast.

Hydra composes in two separable stages: the defaults tree (primary config, config
group choices, `hydra.*` overrides) and then the value overrides (`k=v`, `+k=v`,
`++k=v`, `~k`), applied in command-line order by
`ConfigLoaderImpl._apply_overrides_to_config`. The first stage is expensive (YAML
loading and merging, ~200 ms) and shared by almost every launch; the second is
cheap. So each distinct first stage ("base") is composed once by real Hydra,
pickled (in memory and in an on-disk cache keyed by the config tree's content), and
every launch applies its value overrides with Hydra's own function to a fresh copy, or,
in `check` (`Composer.lending`), to the base itself, lent to it and put back after it
(config/loan.py). A plain `a.b=VALUE` on a value node the base has is set as OmegaConf itself
sets it, without the checks at each step (`hydra_api.apply_override`).

Value overrides are applied one at a time so that one bad override becomes one
located diagnostic and the rest of the launch is still composed and checked.
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import omegaconf
import yaml
from omegaconf import DictConfig, OmegaConf, open_dict
from omegaconf.errors import OmegaConfBaseException

from ..cache import entry, store
from ..catalogue import (
    OVERRIDE_SYNTAX_ERROR,
)
from ..launch.locate import HydraApp, NotAnalysable, SearchPathError, map_searchpath
from ..limits import Timeout, expired
from ..model import Diagnostic, Span, Unknown, Word
from .compose_errors import base_error, describe, first_line, override_error
from .loan import Loan
from .user_files import FileValue, Merged, file_values, is_user_file, merged_entry


def _hydra():
    """Hydra's internals, imported and set up when the first launch is composed."""
    from . import hydra_api  # heavy by design: importing Hydra costs ~100-300 ms; only composing needs it

    return hydra_api


@dataclass(eq=False, repr=False)  # an entity, compared by identity: cheaper to define
class AppliedOverride:
    """One override of a launch as Hydra applied it (`ok` is False when Hydra rejected it)."""

    word: Word
    line: str  # the text Hydra receives (`???` stands in for an unknown value)
    key: str  # dotted key without +/~ (or the group name)
    kind: str  # "set" | "add" | "force_add" | "delete" | "group" | "hydra"
    value_unknown: Unknown | None = None
    ok: bool = True
    in_file: bool = False  # a value a project config file chose (`word.span` is its YAML line), not an override
    # `key=` (an empty value): the value it replaced, resolved (its type says what '' breaks); else None
    replaced: object = None


def file_setting(v: FileValue) -> AppliedOverride:
    """A value a project config file chose, as the override it amounts to: the rules judge it as
    they judge the command line's, at its line in the file (`add` where verl's config lacks the key)."""
    line = f"{v.key}={v.text}"
    cwd = os.getcwd()  # shown as the user would name it: relative to where verl-lint runs, when under it
    path = os.path.relpath(v.path, cwd) if v.path.startswith(cwd + os.sep) else v.path
    span = Span(path, v.line, v.col, v.end_line, v.end_col, *v.key_bytes)
    return AppliedOverride(Word(line, span), line, v.key, "add" if v.added else "set", in_file=True)


@dataclass(eq=False, repr=False)  # an entity, compared by identity: cheaper to define
class Composition:
    """A launch's composed config (None when it does not compose), its overrides and findings."""

    app: HydraApp
    config: DictConfig | None
    overrides: list[AppliedOverride] = field(default_factory=list)
    diagnostics: list[Diagnostic] = field(default_factory=list)
    base_lines: tuple[str, ...] = ()
    used_fallback: bool = False
    # The values the project's own config files chose (outside verl's package), located in them:
    # the user's choice, unlike verl's shipped defaults. Hydra merges them before the overrides.
    file_settings: list[AppliedOverride] = field(default_factory=list)
    # verl's own config files Hydra merged at the root (`ppo_trainer` under a project's my_grpo).
    verl_configs: tuple[str, ...] = ()
    _setters: tuple | None = field(default=None, repr=False)  # `setters`' index and answers

    @property
    def settings(self) -> list[AppliedOverride]:
        """Everything the user chose, in the order it takes effect: config files, then overrides."""
        return [*self.file_settings, *self.overrides]

    def setters(self, key: str) -> list[AppliedOverride]:
        """Settings (file values, then overrides) that set `key` or a parent of it, in order.
        Rules ask this of hundreds of keys per launch: the settings are indexed by key once, and
        each key's answer is kept (again when the settings lists change)."""
        lists = (id(self.file_settings), len(self.file_settings), id(self.overrides), len(self.overrides))
        if self._setters is None or self._setters[0] != lists:
            by_key: dict[str, list[int]] = {}
            for i, o in enumerate(self.settings):
                if o.ok and o.kind != "group":
                    by_key.setdefault(o.key, []).append(i)
            self._setters = (lists, by_key, {})
        _, by_key, answers = self._setters
        hit = answers.get(key)
        if hit is None:
            parts = key.split(".")
            at = sorted(i for n in range(1, len(parts) + 1) for i in by_key.get(".".join(parts[:n]), ()))
            settings = self.settings
            hit = answers[key] = [settings[i] for i in at]
        return hit

    def last_setter(self, key: str) -> AppliedOverride | None:
        s = self.setters(key)
        return s[-1] if s else None


def override_kind(parsed) -> str:
    """hydra | delete | force_add | add | set, for a parsed Hydra override (groups are told apart later)."""
    if parsed.is_hydra_override():
        return "hydra"
    if parsed.is_delete():
        return "delete"
    if parsed.is_force_add():
        return "force_add"
    return "add" if parsed.is_add() else "set"


class ComposeError(Exception):
    pass


class Composer:
    """Composes launches; keeps parsed overrides, repositories and bases between calls."""

    def __init__(self, cache: bool = True, cache_root: Path | None = None):
        self.use_disk_cache = cache
        self.cache_root = cache_root
        self._parsed: dict[str, object] = {}
        self._repos: dict[tuple, object] = {}
        self._bases: dict[tuple, bytes | Exception] = {}
        self._tree_hash: dict[tuple, str] = {}
        self._groups: dict[int, dict[str, bool]] = {}  # id(repository) -> {key: is a config group}
        # Bases unpickled once and lent to one launch at a time (`lending`), and the loan open now.
        self._live: dict[tuple, tuple] = {}
        self._loan: Loan | None = None
        self._lent: set[tuple] = set()
        self.stats = {"base_hits": 0, "base_disk_hits": 0, "base_misses": 0}

    # -- parsing and classification ------------------------------------
    def parse(self, line: str):
        hit = self._parsed.get(line)
        if hit is None:
            try:
                hit = _hydra().parse_override(line)
            except _hydra().OverrideParseException as ex:
                hit = ex
            self._parsed[line] = hit
        return hit

    def _search_path(self, app: HydraApp):
        h = _hydra()
        csp = h.create_config_search_path(f"file://{app.config_dirs[-1]}" if app.config_dirs else None)
        for d in app.config_dirs[:-1]:  # --config-dir is prepended before the schema source, as Hydra does
            csp.prepend(provider="command-line", path=f"file://{d}", anchor=h.SearchPathQuery(provider="schema"))
        return csp

    def _repo(self, app: HydraApp, searchpath: tuple[str, ...] | None):
        key = (app.config_dirs, searchpath)
        repo = self._repos.get(key)
        if repo is None:
            h = _hydra()
            csp = self._search_path(app)
            for sp in searchpath or ():
                csp.append(provider="hydra.searchpath in main", path=sp)
            repo = h.ConfigRepository(config_search_path=csp)
            self._repos[key] = repo
        return repo

    def _is_group(self, repo, key: str) -> bool:
        """Hydra's `group_exists`, memoized: it scans every search-path source on each call."""
        cache = self._groups.setdefault(id(repo), {})
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = repo.group_exists(key)
        return hit

    # -- composition ----------------------------------------------------
    def compose(self, app: HydraApp, words: list[Word], anchor: Span) -> Composition:
        """Compose `words` (a launch's overrides) for `app`; `anchor` locates config-level errors."""
        h = _hydra()
        h.hydra.version.setbase(app.version_base)
        h.JobRuntime.instance().set("name", app.file.stem)
        comp = Composition(app, None)
        searchpath = app.searchpath
        applied: list[tuple[AppliedOverride, object]] = []
        for w in words:
            ao, parsed = self._prepare(w, comp)
            if ao is None:
                continue
            if ao.kind == "hydra" and parsed.get_key_element() == "hydra.searchpath":
                try:
                    roots = [*([app.verl.root] if app.verl else []), *app.file.parents]  # where the app imports from
                    searchpath = map_searchpath(parsed.value(), str(Path(w.span.path).parent), roots)
                except SearchPathError as ex:
                    raise NotAnalysable(w, str(ex)) from None
                ao.line = "hydra.searchpath=[" + ",".join(searchpath) + "]"
            applied.append((ao, parsed))
        repo = self._repo(app, searchpath)
        # Hydra rejects sweeps (`k=a,b`) of every override right after parsing, before the
        # defaults list and before any value override (_load_configuration_impl), so a sweep
        # is reported before any group or value error, and is not composed.
        rejected: set[int] = set()
        for ao, parsed in applied:
            try:
                h.ConfigLoaderImpl.validate_sweep_overrides_legal([parsed], h.RunMode.RUN, True)
            except Exception as ex:  # noqa: BLE001 - a finding, like every Hydra failure
                ao.ok = False
                rejected.add(id(ao))
                comp.diagnostics.append(override_error(ex, ao, None))
        base_lines: list[str] = []
        in_base: list[tuple[AppliedOverride, object]] = []
        value: list[tuple[AppliedOverride, object]] = []
        for ao, parsed in applied:
            comp.overrides.append(ao)
            if id(ao) in rejected:
                continue
            if ao.kind == "hydra" and parsed.key_or_group == "hydra.searchpath":
                base_lines.append(ao.line)  # changes the repository: part of the base
                in_base.append((ao, parsed))
            elif not isinstance(parsed.value(), dict) and self._is_group(repo, parsed.key_or_group):
                if ao.kind != "hydra":  # `hydra/launcher=...` stays a hydra override
                    ao.kind = "group"
                base_lines.append(ao.line)
                in_base.append((ao, parsed))
            else:
                # Value overrides, `hydra.*` ones included: Hydra applies them all in
                # command-line order after composing (config_overrides), so the first error
                # is in command-line order, and a `hydra.run.dir=...` per script does not
                # make a base of its own.
                value.append((ao, parsed))
        if not any(l.startswith("hydra.searchpath=") for l in base_lines):
            # Always explicit, so Hydra never resolves the primary config's own entries (a
            # `pkg://` one would import a package): locate mapped them to directories.
            base_lines.append("hydra.searchpath=[" + ",".join(searchpath or ()) + "]")
        comp.base_lines = tuple(base_lines)
        keep_hydra = any(ao.kind == "hydra" for ao, _ in value)
        base = self._base(app, tuple(base_lines), comp, in_base, anchor, keep_hydra)
        if base is None:
            return comp
        cfg, located, comp.verl_configs = base
        comp.file_settings = [file_setting(v) for v in located]
        loan = self._loan if self._loan is not None and self._loan.cfg is cfg else None
        for ao, parsed in value:
            if ao.value_unknown is None and ao.kind == "set" and parsed.value() == "":
                ao.replaced = OmegaConf.select(cfg, ao.key, default=None, throw_on_resolution_failure=False)
            if loan is not None:
                loan.before(parsed.key_or_group, parsed.is_delete())
            try:
                h.apply_override(parsed, cfg)
            except (h.HydraException, Exception) as ex:  # noqa: BLE001 - every Hydra failure becomes a finding
                ao.ok = False
                comp.diagnostics.append(override_error(ex, ao, cfg))
        if keep_hydra:
            if loan is not None:
                loan.before("hydra", True)
            with open_dict(cfg):
                cfg.pop("hydra", None)  # as hydra.compose() does
        comp.config = cfg
        return comp

    @contextmanager
    def lending(self) -> Iterator[None]:
        """A launch composed in this block gets the composer's own unpickled base instead of a
        fresh copy, and every change its overrides make to it is put back when the block ends
        (unpickling a base per launch was a third of composing one). Its config is valid only
        inside the block. A block left by an exception (a time limit in the middle of a change)
        gives its base up: the next launch unpickles it again."""
        outer, loan = self._loan, Loan()
        self._loan = loan
        kept = False
        try:
            yield
            kept = loan.put_back()
        finally:
            self._loan = outer
            if loan.key is not None:
                self._lent.discard(loan.key)
                if not kept:
                    self._live.pop(loan.key, None)

    def _prepare(self, w: Word, comp: Composition):
        if w.text is not None:
            line = w.text
            unknown = None
        else:
            # `key=$UNSET`: the key is known; compose `key=???` so the key is still checked
            # and every interpolation that reads it resolves to "unknown".
            prefix = w.prefix
            m = re.match(r"^(~|\+\+|\+)?([A-Za-z0-9_./@\-\[\]]+)=", prefix)
            if not m:
                return None, None
            line = f"{m.group(0)}???"
            unknown = w.unknown
        parsed = self.parse(line)
        if isinstance(parsed, Exception):
            comp.diagnostics.append(
                OVERRIDE_SYNTAX_ERROR.finding(
                    f"Hydra cannot parse this override: {first_line(parsed)}",
                    w.span,
                    help="quote values containing spaces, commas or brackets for Hydra, e.g. key='[a,b]' inside "
                    "single quotes",
                    key=line.split("=", 1)[0].lstrip("+~"),
                )
            )
            return None, None
        return AppliedOverride(w, line, parsed.key_or_group, override_kind(parsed), unknown), parsed

    def _base(
        self,
        app: HydraApp,
        base_lines: tuple[str, ...],
        comp: Composition,
        applied,
        anchor: Span,
        keep_hydra: bool = False,
    ) -> tuple[DictConfig, tuple[FileValue, ...], tuple[str, ...]] | None:
        """The composed base, the values the project's own files chose in it and verl's own config
        files merged at its root (None: it fails)."""
        key = (app.config_dirs, app.config_name, base_lines, app.version_base, keep_hydra)
        blob = self._bases.get(key)
        if blob is None:
            path = self._disk_path(app, key)
            blob = _load_disk(path) if path else None
            if blob is None:
                self.stats["base_misses"] += 1
                blob = self._compose_base(app, base_lines, keep_hydra)
                if expired():  # the time limit fired while composing: whatever came out is not kept
                    raise Timeout()
                if path:
                    store(path, blob if isinstance(blob, bytes) else pickle.dumps(blob))
            else:
                self.stats["base_disk_hits"] += 1
            self._bases[key] = blob
        else:
            self.stats["base_hits"] += 1
        if isinstance(blob, Exception):
            comp.diagnostics.append(base_error(blob, applied, anchor, app))
            return None
        loan = self._loan
        if loan is not None and loan.key is None and key not in self._lent:
            live = self._live.get(key)
            if live is None:
                live = self._live[key] = _unpickled(blob)
            loan.take(key, live[0])
            self._lent.add(key)
            return live
        return _unpickled(blob)

    def _compose_base(self, app: HydraApp, base_lines: tuple[str, ...], keep_hydra: bool = False) -> bytes | Exception:
        h = _hydra()
        loader = h.ConfigLoaderImpl(config_search_path=self._search_path(app))
        merged: list[Merged | None] = []
        load_single = loader._load_single_config
        verl_root = app.verl.root if app.verl else None

        def recording(default, repo):  # the defaults list, in the order Hydra merges it
            loaded = load_single(default=default, repo=repo)
            merged.append(merged_entry(loaded.path, default, verl_root))
            return loaded

        loader._load_single_config = recording
        try:
            # Hydra warns about the user's configs (`Defaults list is missing _self_`) on stderr,
            # where they read as verl-lint's own noise: not shown.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                cfg = loader.load_configuration(
                    config_name=app.config_name, overrides=list(base_lines), run_mode=h.RunMode.RUN, from_shell=True
                )
        except Exception as ex:  # noqa: BLE001 - a config's own error is reported as a located diagnostic
            _raise_unless_config_error(ex)
            return ComposeError(describe(ex))
        if not keep_hydra:  # kept only for launches with hydra.* value overrides to apply
            with open_dict(cfg):
                cfg.pop("hydra", None)
        verl_configs = tuple(m.name for m in merged if m is not None and not m.user and not m.package)
        return pickle.dumps((cfg, file_values(merged, verl_root), verl_configs), protocol=pickle.HIGHEST_PROTOCOL)

    # -- on-disk cache of bases ------------------------------------------
    def _tree_digest(self, app: HydraApp) -> str:
        dirs = tuple(app.config_dirs) + tuple(
            Path(s[len("file://") :]) for s in app.searchpath or () if s.startswith("file://")
        )
        digest = self._tree_hash.get(dirs)
        if digest is None:
            hsh = hashlib.sha256()
            for d in dirs:
                for root, dnames, fnames in os.walk(d):
                    dnames.sort()
                    for fn in sorted(fnames):
                        if fn.endswith((".yaml", ".yml")):
                            p = os.path.join(root, fn)
                            hsh.update(p.encode())
                            try:
                                hsh.update(Path(p).read_bytes())
                            except OSError:
                                pass
            digest = hsh.hexdigest()
            self._tree_hash[dirs] = digest
        return digest

    def _disk_path(self, app: HydraApp, key: tuple) -> Path | None:
        if not self.use_disk_cache:
            return None
        ident = repr((key, self._tree_digest(app), _hydra().hydra.__version__, omegaconf.__version__))
        return entry("bases", ident, self.cache_root)


def _unpickled(blob: bytes):
    """A fresh copy of a pickled base. Unpickling a config makes thousands of objects at once:
    without the collector meanwhile it takes a third of the time (nothing it makes is garbage)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(blob)
    finally:
        if enabled:
            gc.enable()


def live_file_settings(
    sources: list[tuple[str, str]], config_name: str | None, group_lines: list[str], verl_root: Path | None
) -> list[AppliedOverride]:
    """The values a running job's project config files chose, located as `check` locates them:
    its defaults list rebuilt by Hydra from the job's config sources (`(provider, "file:///dir")`)
    and group overrides, only when one of those directories is the project's own (a plain verl
    launch pays nothing)."""
    dirs = [url[len("file://") :] for _, url in sources if url.startswith("file://")]
    if not any(is_user_file(os.path.realpath(d), verl_root) for d in dirs):
        return []
    h = _hydra()
    csp = h.ConfigSearchPathImpl()
    for provider, url in sources:
        csp.append(provider, url)
    repo = h.CachingConfigRepository(h.ConfigRepository(config_search_path=csp))
    overrides = h.PARSER.parse_overrides(group_lines)
    defaults = h.create_defaults_list(
        repo=repo, config_name=config_name, overrides_list=overrides, prepend_hydra=False, skip_missing=False
    )
    loaded = [(repo.load_config(d.config_path), d) for d in defaults.defaults if d.config_path]
    merged = [merged_entry(config.path, d, verl_root) for config, d in loaded if config is not None]
    return [file_setting(v) for v in file_values(merged, verl_root)]


def _load_disk(path: Path) -> bytes | ComposeError | None:
    """A stored base (the pickled config, its file values and verl's configs merged at the root) or a
    config's stored error; None for a missing, corrupt or wrong-type entry (composed again and rewritten)."""
    try:
        data = path.read_bytes()
        obj = pickle.loads(data)
    except Exception:  # noqa: BLE001 - a corrupt cache entry is a miss
        return None
    if isinstance(obj, ComposeError):
        return obj
    return data if isinstance(obj, tuple) and len(obj) == 3 and isinstance(obj[0], DictConfig) else None


# ------------------------------------------------------------ errors ----


def _raise_unless_config_error(ex: BaseException) -> None:
    """Re-raise what a config cannot cause: the time limit firing (limits.Timeout),
    RecursionError, MemoryError, an I/O error. Only what Hydra, OmegaConf and YAML raise for
    bad configs (the same for the same files, so it may be cached) becomes CONFIG_COMPOSITION_ERROR."""
    # Hydra also trips its own asserts and attribute lookups on odd input (`critic=${oc.select:...}`
    # in a defaults list): as deterministic as its exceptions, so findings too.
    config_errors = (
        _hydra().HydraException,
        OmegaConfBaseException,
        yaml.YAMLError,
        ValueError,
        TypeError,
        LookupError,
        AssertionError,
        AttributeError,
    )
    seen = set()
    while ex is not None and id(ex) not in seen:  # Hydra wraps errors (`raise ... from ex`): check the chain
        seen.add(id(ex))
        if not isinstance(ex, config_errors):
            raise ex
        ex = ex.__cause__
