"""The knowledge tables of the top-level `rules/` folder (installed as `verl_lint_knowledge`).

Read as package data only (`importlib.resources`), never by a path relative to this file:
whatever else is installed beside verl-lint cannot stand in for a table, and a missing table
is an error, not a rule pack that silently shrinks.

Every table is checked against its schema (`_SCHEMAS`) when it is parsed: an unknown field, a value of
the wrong type, a malformed release or range, a duplicate key or rule code is a `TableError` naming
the table and the line, e.g. `rules/ineffective_keys.yaml:123: unknown field "kyes" in record VL205`.
The first table a process loads has every table checked (kept on disk like the parsed tables: a warm
start reads one small file), so a broken table stops a run before it starts, not halfway through.

One version vocabulary in every table, PEP 440: a release is a version string ("0.9.1", "0.10.2rc1"),
a range of releases a specifier set (">=0.6.0,<0.8.0"); `since` is the first release a record holds
for, `until` the first it no longer holds for.

Every table states the releases it was verified through (`Table.verified_through`): a hand-written
table in its `verified_through:` header, a generated engine snapshot by its `versions:` (the newest
one read), the generated verl assembly by its `derived_from:`."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import MISSING, dataclass, field, fields
from functools import lru_cache
from typing import Any, NamedTuple

import yaml
from packaging.version import Version

from .cache import memo
from .environment import MissingTable

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10x faster
_STR = "tag:yaml.org,2002:str"
HEADER = "verified_through"  # the top-level field of a hand-written table
PRODUCTS = ("verl", "vllm", "vllm_ascend", "sglang", "torch", "torch_npu")  # what a table is verified against


class TableError(MissingTable):
    """A knowledge table that breaks its schema: a broken installation, one line naming the
    table file and line."""


@dataclass(frozen=True)
class Table:
    """A checked knowledge table."""

    name: str  # e.g. "engine_args/vllm.yaml"
    verified_through: Mapping[str, str]  # product (PRODUCTS) -> the newest release checked
    data: Any  # the typed records of a rule table; else the parsed YAML without its header


def read_text(name: str) -> str:
    """The text of table `name` (e.g. "engine_args/vllm.yaml"), every table checked first;
    MissingTable when absent."""
    _check_every_table()
    return _text_of(name)


def load_table(name: str) -> Any:
    """The data of table `name` (the `.yaml` suffix may be omitted): the typed records of
    ineffective_keys.yaml / removed_keys.yaml, else the parsed YAML without the
    `verified_through` header. Parsed once per process: do not mutate the result."""
    return table(name).data


def table(name: str) -> Table:
    return _table(name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")


@lru_cache(maxsize=None)
def _table(name: str) -> Table:
    _check_every_table()
    return _parsed(name)


def _text_of(name: str) -> str:
    from importlib import resources  # why: ~2 ms (zipfile); a Hydra job start reads the tables from the cache

    res = resources.files("verl_lint_knowledge").joinpath(name)
    try:
        return res.read_text(encoding="utf-8")
    except OSError:
        raise MissingTable(f"verl-lint's knowledge table {name} is not installed (reinstall verl-lint)") from None
    except UnicodeDecodeError as ex:
        raise TableError(f"rules/{name}: not UTF-8 text ({ex.reason} at byte {ex.start})") from None


@lru_cache(maxsize=None)
def _parsed(name: str) -> Table:
    # Parsing is most of the rule pack's load time (~15 ms for the rule tables, ~70 ms for the engine
    # snapshots, even with libyaml), which the Hydra callback pays at every job start. The entry is
    # keyed, like every cache entry, on the size and mtime of every table (cache.code_digest): the
    # text is read only to parse it.
    return memo(
        "tables", f"{yaml.__version__}\0{_LOADER.__name__}\0{name}", lambda: check_table(name, _text_of(name)), Table
    )


@lru_cache(maxsize=1)
def _check_every_table() -> None:
    # Keyed, like every cache entry, on the size and mtime of every table and module.
    memo("tables", "every table checked", lambda: all(_parsed(n) for n in TABLES), bool)


def check_table(name: str, text: str) -> Table:
    """Table `name` parsed from `text` and checked against its schema; TableError naming the
    file and line of the first violation."""
    schema = _SCHEMAS.get(name)
    if schema is None:
        raise TableError(f"rules/{name}: not a table verl-lint knows")
    loader = _LOADER(text)
    try:
        node = loader.get_single_node()  # the node tree once: its marks give the lines
        data = loader.construct_document(node) if node is not None else None
        got = schema.check(node, data)
    except yaml.YAMLError as ex:
        mark = getattr(ex, "problem_mark", None) or getattr(ex, "context_mark", None)
        raise TableError(
            f"rules/{name}:{mark.line + 1 if mark else 1}: not valid YAML: {getattr(ex, 'problem', None) or ex}"
        ) from None
    except _Bad as bad:
        raise TableError(f"rules/{name}:{_line(bad.node)}: {bad}") from None
    finally:
        loader.dispose()
    return Table(name, schema.verified(got), schema.data(got, data))


# ------------------------------------------------------------- checks ----


class _Bad(Exception):
    """A schema violation at `node`; the enclosing field and record are added on the way out."""

    def __init__(self, node: yaml.Node | None, problem: str) -> None:
        super().__init__(problem)
        self.node, self.problem, self.field, self.record = node, problem, "", ""

    def __str__(self) -> str:
        where = f" in record {self.record}" if self.record else ""
        return f'field "{self.field}"{where}: {self.problem}' if self.field else f"{self.problem}{where}"


Check = Callable[[Any, Any], Any]  # (node, value) -> the value, converted; _Bad when it breaks the schema


def _line(node: yaml.Node | None) -> int:
    return node.start_mark.line + 1 if node is not None else 1


def _show(value: Any) -> str:
    """A value as an error line quotes it."""
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 60 else f'"{value[:57]}..."'
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def _is(what: str, test: Callable[[Any], bool]) -> Check:
    def check(node, value):
        if not test(value):
            raise _Bad(node, f"expected {what}, not {_show(value)}")
        return value

    return check


_text = _is("text", lambda v: isinstance(v, str) and v != "")
_string = _is("a string", lambda v: isinstance(v, str))
_bool = _is("true or false", lambda v: isinstance(v, bool))
_int = _is("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))
_scalar = _is("a single value", lambda v: not isinstance(v, (dict, list)))


def _choice(*options: str) -> Check:
    return _is(f"one of {', '.join(options)}", lambda v: isinstance(v, str) and v in options)


def _matching(pattern: str, what: str) -> Check:
    return _is(what, lambda v: isinstance(v, str) and re.fullmatch(pattern, v) is not None)


def _pep440(parse: Callable[[str], Any], what: str) -> Check:
    def check(node, value) -> str:
        if isinstance(value, str) and value.strip():
            try:
                parse(value)
                return value
            except ValueError:  # InvalidVersion, InvalidSpecifier
                pass
        raise _Bad(node, f"{_show(value)} is not a PEP 440 {what}")

    return check


def _specifier_set(text: str) -> Any:
    from packaging.specifiers import SpecifierSet  # why: ~10 ms, only when a table is checked

    return SpecifierSet(text)


_version = _pep440(Version, 'release such as "0.9.1"')
_range = _pep440(_specifier_set, 'version range such as ">=0.7.0,<0.8.0"')


def _regex(node, value) -> str:
    try:
        re.compile(_text(node, value))
    except re.error as ex:
        raise _Bad(node, f"{_show(value)} is not a regular expression ({ex})") from None
    return value


def _null_or(check: Check, default: Any = None) -> Check:
    return lambda node, value: default if value is None else check(node, value)


def _as_text(node, value) -> str:
    """A value compared in its str() form (`True`, `0.5`, `sync`)."""
    return str(_scalar(node, value))


def _one_or_more(check: Check) -> Check:
    return lambda node, value: (
        _list(check, nonempty=True)(node, value) if isinstance(value, list) else check(node, value)
    )


def _at(name: str, check: Check, node, value) -> Any:
    """`check` of field (or key) `name`: a violation inside it names the field."""
    try:
        return check(node, value)
    except _Bad as bad:
        if not bad.record:
            bad.field = f"{name}.{bad.field}" if bad.field else name
        raise


def _pairs(node, value) -> Iterator[tuple[Any, str, Any, Any]]:
    """(key node, key, value node, value) of a mapping whose keys are text, each key once."""
    if not isinstance(value, dict) or not isinstance(node, yaml.MappingNode):
        raise _Bad(node, f"expected a mapping, not {_show(value)}")
    seen: dict[str, int] = {}
    for kn, vn in node.value:
        if not isinstance(kn, yaml.ScalarNode) or kn.tag != _STR:
            raise _Bad(
                kn,
                f"a key must be text, not {_show(kn.value) if isinstance(kn, yaml.ScalarNode) else 'a list or mapping'}",
            )
        if kn.value in seen:
            raise _Bad(kn, f'duplicate key "{kn.value}" (first at line {seen[kn.value]})')
        seen[kn.value] = _line(kn)
        yield kn, kn.value, vn, value[kn.value]


def _list(item: Check, nonempty: bool = False, unique: str = "") -> Check:
    """A list of `item`s (as a tuple); `unique` names a field no two items may share."""

    def check(node, value):
        if not isinstance(value, list) or not isinstance(node, yaml.SequenceNode) or (nonempty and not value):
            raise _Bad(node, f"expected a {'non-empty ' if nonempty else ''}list, not {_show(value)}")
        out, seen = [], {}
        for n, v in zip(node.value, value):
            out.append(item(n, v))
            if unique:
                kn = next(k for k, _ in n.value if k.value == unique)  # a required field
                if v[unique] in seen:
                    bad = _Bad(kn, f"duplicate {unique} (first at line {seen[v[unique]]})")
                    bad.record = v[unique]  # named as the record, not as the list's field
                    raise bad
                seen[v[unique]] = _line(kn)
        return tuple(out)

    return check


def _map(value_check: Check, keys: Check = _text) -> Check:
    """A mapping from names to `value_check`ed values."""

    def check(node, value):
        out = {}
        for kn, key, vn, v in _pairs(node, value):
            keys(kn, key)
            out[key] = _at(key, value_check, vn, v)
        return out

    return check


def _fields(
    spec: dict[str, Check],
    required: tuple[str, ...] = (),
    label: str = "",
    then: Callable[[Any, dict], None] | None = None,
) -> Check:
    """A mapping with the fields of `spec` (dict of the converted values present); `label` names
    the field that identifies a record in an error, `then` checks the fields together."""

    def check(node, value):
        try:
            out = {}
            for kn, key, vn, v in _pairs(node, value):
                if key not in spec:
                    raise _Bad(kn, f'unknown field "{key}"')
                out[key] = _at(key, spec[key], vn, v)
            for key in required:
                if key not in out:
                    raise _Bad(node, f'missing field "{key}"')
            if then is not None:
                then(node, out)
            return out
        except _Bad as bad:
            name = value.get(label) if label and isinstance(value, dict) else None
            if not bad.record and isinstance(name, str):
                bad.record = name
            raise

    return check


def _child(node, key: str):
    return next(vn for kn, vn in node.value if kn.value == key)


# -------------------------------------------------------------- facts ----

FILE_FACTS = ("contains", "lacks", "exists")
FACTS = (*FILE_FACTS, "reads", "not_read", "field", "config_key", "worker", "any", "all")
WORKERS = ("ref",)  # the workers a {worker: NAME} fact knows (verl_lint/rules/roles.py)


class Fact(NamedTuple):
    """One piece of evidence a record needs (its `requires:`), as written in the table:

    {file: P, contains: S} / {file: P, lacks: S}   the file (relative to the tree root) contains
                                                     the text S / does not (a missing file lacks it)
    {file: P, exists: true|false}                  the file is there / is not
    {reads: NAME} / {not_read: NAME}               the code of the tree (and of the launch's own
                                                     app) mentions NAME / does not beyond the config
                                                     declarations (the reader index, reader.py);
                                                     NAME `{name}` is the last name of the key set
    {field: verl.mod.Class.name}                   the config dataclass declares that field
    {config_key: KEY}                              the launch's composed config has KEY
    {worker: ref}                                  the launch's entry point creates that worker
    {any: [facts]} / {all: [facts]}                one of / all of
    """

    kind: str
    subject: str = ""  # the file, name, field or key
    arg: object = None  # the text (contains/lacks), the bool (exists) or the sub-facts (any/all)


def _fact(node, raw) -> Fact:
    if not isinstance(raw, dict):
        raise _Bad(node, f"a fact must be a mapping such as {{file: ..., contains: ...}}, not {_show(raw)}")
    kinds = [key for _, key, _, _ in _pairs(node, raw) if key != "file"]
    if len(kinds) != 1 or kinds[0] not in FACTS:
        raise _Bad(node, f"unknown fact {raw!r} (one of: {', '.join(FACTS)})")
    kind, value = kinds[0], raw[kinds[0]]
    if kind in FILE_FACTS:
        path = raw.get("file")
        if not isinstance(path, str) or not path or path.startswith("/"):
            raise _Bad(node, f"fact {kind!r} needs `file:`, a path relative to the tree root")
        if kind == "exists" and not isinstance(value, bool):
            raise _Bad(node, f"`exists:` is true or false, not {_show(value)}")
        if kind != "exists" and (not isinstance(value, str) or not value):
            raise _Bad(node, f"`{kind}:` needs the text to look for")
        return Fact(kind, path, value)
    if "file" in raw:
        raise _Bad(node, f"fact {kind!r} takes no `file:`")
    if kind in ("any", "all"):
        if not isinstance(value, list) or not value:
            raise _Bad(node, f"`{kind}:` needs a list of facts")
        return Fact(kind, "", _list(_fact)(_child(node, kind), value))
    if not isinstance(value, str) or not value or kind == "worker" and value not in WORKERS:
        raise _Bad(node, f"`{kind}:` needs a name" + (f" (one of: {', '.join(WORKERS)})" if kind == "worker" else ""))
    if kind == "field" and value.count(".") < 2:
        raise _Bad(node, f"`field:` is module.Class.field, not {_show(value)}")
    return Fact(kind, value)


# ------------------------------------------------------- rule records ----


class Example(NamedTuple):
    """An example launch of verl.trainer.main_ppo (ppo_trainer config)."""

    launch: str | tuple[str, ...]  # one override line as written in a script (a whole script line
    # for an entry-point record), or the override list of one launch
    verl: str = ""  # the releases it runs on, when narrower than the record's range


def _example(node, value) -> Example:
    launch = _one_or_more(_text)
    if isinstance(value, dict):
        got = _fields({"script": launch, "verl": _range}, required=("script",))(node, value)
        return Example(got["script"], got.get("verl", ""))
    return Example(launch(node, value))


def _conditions(node, value) -> tuple[tuple[str, str], ...]:
    return tuple(_map(_as_text)(node, value).items())


def _field(check: Check, default: Any = MISSING) -> Any:
    """A record field read from the table, checked and converted by `check`; required unless
    it has a default."""
    return field(default=default, metadata={"check": check})


@dataclass(frozen=True, kw_only=True)
class RuleRecord:
    """A record of ineffective_keys.yaml or removed_keys.yaml: one registered rule."""

    code: str = _field(_matching(r"VL\d{3}", "a rule code such as VL205"))
    name: str = _field(_matching(r"[a-z0-9]+(-[a-z0-9]+)*", "a kebab-case rule name"))
    severity: str = _field(_choice("error", "warning", "info"))
    summary: str = _field(_text, "")  # one line for the rule's documentation (default: its name)
    # The finding's message and help: {key} is the override's key, {value} its value (and
    # {replacement}, {version} for removed keys).
    message: str = _field(_text)
    help: str = _field(_text)
    evidence: tuple[str, ...] = _field(_list(_text), ())  # the file:line of a release each record rests on
    # The evidence, checked in the verl tree being linted (all must hold; see Fact), each file read once per
    # process. Only where the tree has no source to check (no Python file in verl/workers) does the range decide.
    requires: tuple[Fact, ...] = _field(_list(_fact, nonempty=True), ())
    # Example launches that get the finding / do not, each run on the releases of the record's
    # range where the tests have them: a string is an override line as written in a script, a
    # list the override list of one launch; {script: ..., verl: RANGE} narrows the releases.
    bad: tuple[Example, ...] = _field(_list(_example), ())
    good: tuple[Example, ...] = _field(_list(_example), ())
    line: int = 0  # where the record starts in its table (not a table field)

    @property
    def fallback(self) -> str:
        """The verl range that decides where the tree has no source to check `requires` in."""
        raise NotImplementedError


@dataclass(frozen=True, kw_only=True)
class IneffectiveRecord(RuleRecord):
    """A key that composes fine but that verl ignores or overwrites (ineffective_keys.yaml, 2xx)."""

    # Dotted keys as written in an override (no +/~ prefix); a trailing ".*" matches any key below.
    keys: tuple[str, ...] = _field(_list(_text, nonempty=True))
    # The verl releases in which the record holds: the fallback used only when the tree has no source
    # to check; a dev, rc, post or local version then counts as its release (0.7.0.dev is 0.7.0).
    verl: str = _field(_range)
    # Conditions that must all hold on the composed, resolved config; values are the str() form
    # of the config value ("True"/"False" for bools). In a launch passing "$@", a condition key
    # the script does not set is its caller's to choose: no finding.
    when: tuple[tuple[str, str], ...] = _field(_conditions, ())
    value: str | None = _field(
        _null_or(_as_text), None
    )  # only overrides that set this value (str() form) trigger the record
    # Silent when the launch overrides one of these (a visible choice: use_kl_loss=False by a leftover coefficient).
    unless_set: tuple[str, ...] = _field(_list(_text), ())
    # verl entry points it applies to, whatever the config's name (verified on main_ppo's trainer and workers;
    # verl's other apps read some keys themselves); a project's own entry point: registry.Rule.entry_points.
    entry_points: tuple[str, ...] = _field(_list(_text, nonempty=True), ("verl.trainer.main_ppo",))
    # Values that agree with what verl does anyway while the key is ignored (kl_coef=0 with the
    # KL off is how users say "off"): no finding. Compared with the composed value, numbers
    # numerically (0 matches 0.0), booleans and null exactly, other values as text. A value only
    # known at run time (`$N`) may be one of them: no finding either.
    silent_values: tuple[Any, ...] = _field(_list(_scalar), ())

    @property
    def fallback(self) -> str:
        return self.verl


def _one_subject(node, got: dict) -> None:
    subjects = [k for k in ("keys", "module", "config_name") if got.get(k)]
    if len(subjects) != 1:
        raise _Bad(node, f"a record is about one of keys, module, config_name, not {' and '.join(subjects) or 'none'}")


@dataclass(frozen=True, kw_only=True)
class RemovedRecord(RuleRecord):
    """A key, value, entry point or config name removed or renamed between verl releases
    (removed_keys.yaml, 4xx); exactly one of keys, module, config_name."""

    # Dotted keys as the user writes them (no +/~); a trailing ".*" matches any key below, and
    # "{rest}" in `replacement` stands for the part matched by ".*".
    keys: tuple[str, ...] = _field(_list(_text, nonempty=True), ())
    module: str | None = _field(_text, None)  # a removed `python -m` entry point
    config_name: str | None = _field(_text, None)  # a deprecated --config-name
    # The first release in which the key/value no longer works (compose error or wrong
    # behaviour); for severity=warning records (deprecated but still working) the first release
    # in which the deprecation applies. The fallback gate is ">= removed" (a dev/rc/local
    # version counting as its release) where `requires` cannot be checked.
    removed: str = _field(_version)
    value: str | None = _field(
        _null_or(_as_text), None
    )  # only set when the record is about one value of the key (str() form)
    replacement: str = _field(_null_or(_text, ""), "")  # mostly the key in the composed config it moved to
    rename: bool = _field(_bool, False)  # true only if writing the same value at `replacement` is exactly equivalent

    @property
    def fallback(self) -> str:
        return f">={self.removed}"


def _record(cls: type, then: Callable[[Any, dict], None] | None = None) -> Check:
    spec = {f.name: f.metadata["check"] for f in fields(cls) if "check" in f.metadata}
    required = tuple(f.name for f in fields(cls) if "check" in f.metadata and f.default is MISSING)
    check_fields = _fields(spec, required, "code", then)
    return lambda node, value: cls(**check_fields(node, value), line=_line(node))


# ------------------------------------------------------------ schemas ----


class _Schema(NamedTuple):
    check: Check  # of the whole document
    verified: Callable[[dict], dict[str, str]]  # the releases it was verified through, from the checked document
    data: Callable[[dict, Any], Any]  # what load_table returns, from the checked and the parsed document


def _verified(*required: str) -> Check:
    releases = _map(_version, keys=_choice(*PRODUCTS))

    def check(node, value):
        got = releases(node, value)
        missing = [p for p in required if p not in got]
        if missing:
            raise _Bad(node, f"no release of {', '.join(missing)}")
        return got

    return check


def _hand_written(spec: dict[str, Check], *products: str) -> _Schema:
    """A hand-written table: its `verified_through` header names a release of each of `products`."""
    check = _fields({HEADER: _verified(*products), **spec}, (HEADER, *spec))
    return _Schema(check, lambda got: got[HEADER], lambda got, data: {k: v for k, v in data.items() if k != HEADER})


def _rule_table(cls: type, then: Callable[[Any, dict], None] | None = None) -> _Schema:
    check = _fields(
        {HEADER: _verified("verl"), "records": _list(_record(cls, then), unique="code")}, (HEADER, "records")
    )
    return _Schema(check, lambda got: got[HEADER], lambda got, data: got["records"])


def _since_before_until(node, got: dict) -> None:
    if "since" in got and "until" in got and Version(got["since"]) >= Version(got["until"]):
        raise _Bad(_child(node, "until"), f"until {got['until']} is not after since {got['since']}")


# env_vars.yaml (read as a dict by the VL5xx env rules; its fields are described in the table)
_ENV_FIELDS = {
    **{
        "name": _text,
        "value": _regex,
        "since": _version,
        "until": _version,
        "verl": _range,
        "code": _matching(r"VL5\d\d", "a VL5xx rule code"),
    },
    **{"severity": _choice("error", "warning", "info"), "message": _text, "help": _text, "evidence": _list(_text)},
}
_ENV_RECORD = _fields(_ENV_FIELDS, ("name", "code", "message"), label="name", then=_since_before_until)

# allocator_options.yaml (read as a dict by the allocator rules; its fields are described in the table)
_ALLOCATOR_TYPES = (
    "bool",
    "int",
    "mb",
    "fraction",
    "float",
    "backend",
    "roundup",
    "pow2_le_128",
    "page_size",
    "range",
    "any",
)
_OPTION_FIELDS = {
    "key": _text,
    "since": _one_or_more(_version),
    "type": _choice(*_ALLOCATOR_TYPES),
    "verified": _bool,
    "choices": _list(_text, nonempty=True),
    "min": _int,
    "max": _int,
}
_OPTIONS = _list(_fields(_OPTION_FIELDS, ("key", "since", "type"), label="key"), unique="key")
_ALLOCATOR_VAR = _fields(
    {"allocator": _choice("cuda", "npu"), "rocm_only": _bool, "cuda_since": _version, "npu_since": _version},
    ("allocator",),
)


# engine_args/verl_assembly.yaml, generated by scripts/make_engine_schemas.py --assembly (read as
# a dict by engines/): `derived_from: verl RELEASE` is the release it was read from.
def _verl_release(node, value) -> str:
    if isinstance(value, str) and value.startswith("verl "):
        return _version(node, value[len("verl ") :])
    raise _Bad(node, f'expected "verl RELEASE", not {_show(value)}')


_ENTRY_FIELDS = {
    "key": _text,
    "phase": _choice("pre", "default", "after"),
    "kind": _choice("set", "setdefault", "pop"),
    "value": _string,
    "condition": _list(_text),
    "line": _int,
}
_ENTRIES = _list(_fields(_ENTRY_FIELDS, ("key", "phase", "kind", "line")))
_ASSEMBLY_FIELDS = {
    "derived_from": _verl_release,
    "path": _text,
    "function": _text,
    "spread_line": _int,
    "locals": _map(_text),
    "entries": _ENTRIES,
}


# engine_args/<engine>.yaml, generated by scripts/make_engine_schemas.py (read by engines/):
# each name maps to toggle points over `versions` (increasing), [since, removed, since, ...].
def _toggles_in_versions(node, got: dict) -> None:
    order = {v: i for i, v in enumerate(got["versions"])}
    if len(order) != len(got["versions"]) or sorted(got["versions"], key=Version) != list(got["versions"]):
        raise _Bad(_child(node, "versions"), "versions must be distinct and increasing")
    for kind in ("args", "env"):
        for name, toggles in got.get(kind, {}).items():
            at = [order.get(t, -1) for t in toggles]
            if -1 in at or at != sorted(set(at)):
                raise _Bad(
                    _child(_child(node, kind), name),
                    f"toggles of {kind}.{name} must be increasing entries of `versions`, not {', '.join(toggles)}",
                )


_TOGGLES = _map(_list(_text, nonempty=True))
_SNAPSHOT_FIELDS = {
    "engine": _choice("vllm", "sglang", "vllm_ascend"),
    "versions": _list(_version, nonempty=True),
    "args": _TOGGLES,
    "env": _TOGGLES,
}
_SNAPSHOT = _Schema(
    _fields(_SNAPSHOT_FIELDS, ("engine", "versions"), then=_toggles_in_versions),
    lambda got: {got["engine"]: got["versions"][-1]},
    lambda got, data: data,
)

# models.yaml (read by models.py): a model's config.json fields, its public source, its nominal size
_CONFIG_VALUE = _is(
    "a number, text, true/false or a mapping of them",
    lambda v: (
        not isinstance(v, list)
        and (not isinstance(v, dict) or all(not isinstance(x, (dict, list)) for x in v.values()))
    ),
)
_MODEL_FIELDS = {
    "id": _text,
    "also": _list(_text),
    "source": _matching(r"https://\S+", "an https address"),
    "params": _is("billions of parameters", lambda v: isinstance(v, (int, float)) and v > 0),
}
_MODEL = _fields({**_MODEL_FIELDS, "config": _map(_CONFIG_VALUE)}, ("id", "source", "params", "config"), label="id")

_SCHEMAS: dict[str, _Schema] = {
    "ineffective_keys.yaml": _rule_table(IneffectiveRecord),
    "removed_keys.yaml": _rule_table(RemovedRecord, _one_subject),
    "env_vars.yaml": _hand_written(
        {
            "worker_env_skip": _fields({"names": _list(_text), "prefixes": _list(_text)}),
            "vllm": _list(_ENV_RECORD),
            "vllm_ascend": _list(_ENV_RECORD),
        },
        "verl",
        "vllm",
        "vllm_ascend",
    ),
    "allocator_options.yaml": _hand_written(
        {
            "env_vars": _map(_ALLOCATOR_VAR),
            "reset_on_parse": _list(_text),
            "cuda": _OPTIONS,
            "npu": _OPTIONS,
            "npu_set_allocator_settings_since": _list(_version, nonempty=True),
        },
        "torch",
        "torch_npu",
    ),
    "engine_args/verl_knobs.yaml": _hand_written(
        {"worker_mapping": _map(_map(_null_or(_text))), "knob_values": _map(_text)}, "verl"
    ),
    "engine_args/verl_assembly.yaml": _Schema(
        _map(_fields(_ASSEMBLY_FIELDS, tuple(_ASSEMBLY_FIELDS)), keys=_choice("vllm", "sglang")),
        lambda got: {"verl": min((a["derived_from"] for a in got.values()), key=Version)},
        lambda got, data: data,
    ),
    "engine_args/vllm.yaml": _SNAPSHOT,
    "engine_args/sglang.yaml": _SNAPSHOT,
    "engine_args/vllm_ascend.yaml": _SNAPSHOT,
    "models.yaml": _hand_written({"models": _list(_MODEL, nonempty=True, unique="id")}, "verl"),
}
TABLES = tuple(_SCHEMAS)  # every table verl-lint ships
