"""The knowledge tables of the top-level `rules/` folder (installed as `verl_lint_knowledge`).

Read as package data only (`importlib.resources`), never by a path relative to this file:
whatever else is installed beside verl-lint cannot stand in for a table, and a missing table
is an error, not a rule pack that silently shrinks.

Every table is checked against its schema (`_schema`: a typed record class of `table_records.py`
or `data_tables.py` whose fields carry their checks, written in the vocabulary of
`table_checks.py`) when it is parsed: an unknown field, a value of the wrong type, a malformed
release or range, a duplicate key or rule code is a `TableError` naming the table and the line,
e.g. `rules/ineffective_keys.yaml:123: unknown field "kyes" in record VL205`.
The first table a process loads has every table checked (kept on disk like the parsed tables: a warm
start reads one small file), so a broken table stops a run before it starts, not halfway through.

One version vocabulary in every table, PEP 440: a release is a version string ("0.9.1", "0.10.2rc1"),
a range of releases a specifier set (">=0.6.0,<0.8.0"); `since` is the first release a record holds
for, `until` the first it no longer holds for.

Every table states the releases it was verified through (`Table.verified_through`): a hand-written
table in its `verified_through:` header, a generated engine snapshot by its `versions:` (the newest
one read), the generated verl assembly by its `derived_from:`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any, NamedTuple

import yaml
from packaging.version import Version

from .cache import memo
from .environment import MissingTable
from .table_checks import (
    Bad,
    Check,
    checks_of,
    child,
    choice,
    fields_of,
    is_text,
    is_version,
    line_of,
    list_of,
    map_of,
    record_of,
    required_of,
)
from .table_records import (
    IneffectiveRecord,
    RemovedRecord,
    one_subject,
)

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available: ~10x faster
STR_TAG = "tag:yaml.org,2002:str"
HEADER = "verified_through"  # the top-level field of a hand-written table
PRODUCTS = ("verl", "vllm", "vllm_ascend", "sglang", "torch", "torch_npu")  # what a table is verified against


class TableError(MissingTable):
    """A knowledge table that breaks its schema: a broken installation, one line naming the
    table file and line."""


@dataclass(frozen=True, eq=False)  # never compared: no generated __eq__/__hash__ (a job start defines it)
class Table:
    """A checked knowledge table."""

    name: str  # e.g. "engine_args/vllm.yaml"
    verified_through: Mapping[str, str]  # product (PRODUCTS) -> the newest release checked
    data: Any  # the typed records (table_records.py); an engine snapshot as parsed


def read_text(name: str) -> str:
    """The text of table `name` (e.g. "engine_args/vllm.yaml"), every table checked first;
    MissingTable when absent."""
    _check_every_table()
    return _text_of(name)


def load_table(name: str) -> Any:
    """The data of table `name` (the `.yaml` suffix may be omitted), typed (`table_records.py`): the
    records of ineffective_keys.yaml / removed_keys.yaml, one `EnvTable`, `AllocatorTable`,
    `KnobsTable`, `ModelsTable`, {engine: `AssemblyRecord`}; an engine snapshot (read by
    engines/schemas.py) as parsed. Parsed once per process: do not mutate the result."""
    return table(name).data


def table(name: str) -> Table:
    return _table(name if name.endswith((".yaml", ".yml")) else f"{name}.yaml")


@cache
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


@cache
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
    schema = _schema(name)
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
    except Bad as bad:
        raise TableError(f"rules/{name}:{line_of(bad.node)}: {bad}") from None
    finally:
        loader.dispose()
    return Table(name, schema.verified(got), schema.data(got, data))


# ------------------------------------------------------------ schemas ----


class _Schema(NamedTuple):
    check: Check  # of the whole document
    verified: Callable[[dict], dict[str, str]]  # the releases it was verified through, from the checked document
    data: Callable[[dict, Any], Any]  # what load_table returns, from the checked and the parsed document


def _verified(*required: str) -> Check:
    releases = map_of(is_version, keys=choice(*PRODUCTS))

    def check(node, value):
        got = releases(node, value)
        missing = [p for p in required if p not in got]
        if missing:
            raise Bad(node, f"no release of {', '.join(missing)}")
        return got

    return check


def _hand_written(cls: type, *products: str) -> _Schema:
    """A hand-written table, loaded as one `cls`: its `verified_through` header names a release of
    each of `products`, every field of `cls` is there."""
    check = fields_of({HEADER: _verified(*products), **checks_of(cls)}, (HEADER, *required_of(cls)))
    return _Schema(
        check, lambda got: got[HEADER], lambda got, data: cls(**{k: v for k, v in got.items() if k != HEADER})
    )


def _rule_table(cls: type, then: Callable[[Any, dict], None] | None = None) -> _Schema:
    check = fields_of(
        {HEADER: _verified("verl"), "records": list_of(record_of(cls, "code", then), unique="code")},
        (HEADER, "records"),
    )
    return _Schema(check, lambda got: got[HEADER], lambda got, data: got["records"])


# engine_args/<engine>.yaml, generated by scripts/make_engine_schemas.py (read by engines/schemas.py,
# which parses the generated text itself and builds its `Snapshot`; this schema checks it): each
# name maps to toggle points over `versions` (increasing), [since, removed, since, ...].
def _toggles_in_versions(node, got: dict) -> None:
    order = {v: i for i, v in enumerate(got["versions"])}
    if len(order) != len(got["versions"]) or sorted(got["versions"], key=Version) != list(got["versions"]):
        raise Bad(child(node, "versions"), "versions must be distinct and increasing")
    for kind in ("args", "env"):
        for name, toggles in got.get(kind, {}).items():
            at = [order.get(t, -1) for t in toggles]
            if -1 in at or at != sorted(set(at)):
                raise Bad(
                    child(child(node, kind), name),
                    f"toggles of {kind}.{name} must be increasing entries of `versions`, not {', '.join(toggles)}",
                )


_TOGGLES = map_of(list_of(is_text, nonempty=True))
_SNAPSHOT_FIELDS = {
    "engine": choice("vllm", "sglang", "vllm_ascend"),
    "versions": list_of(is_version, nonempty=True),
    "args": _TOGGLES,
    "env": _TOGGLES,
}
_SNAPSHOT = _Schema(
    fields_of(_SNAPSHOT_FIELDS, ("engine", "versions"), then=_toggles_in_versions),
    lambda got: {got["engine"]: got["versions"][-1]},
    lambda got, data: data,
)

_RULE_TABLES: dict[str, _Schema] = {
    "ineffective_keys.yaml": _rule_table(IneffectiveRecord),
    "removed_keys.yaml": _rule_table(RemovedRecord, one_subject),
    "engine_args/vllm.yaml": _SNAPSHOT,
    "engine_args/sglang.yaml": _SNAPSHOT,
    "engine_args/vllm_ascend.yaml": _SNAPSHOT,
}
_DATA_TABLES = (
    "env_vars.yaml",
    "allocator_options.yaml",
    "engine_args/verl_knobs.yaml",
    "engine_args/verl_assembly.yaml",
    "models.yaml",
)
TABLES = (*_RULE_TABLES, *_DATA_TABLES)  # every table verl-lint ships


def _schema(name: str) -> _Schema | None:
    if name == "models.yaml":
        return _models_schema()
    return _RULE_TABLES.get(name) or (_data_schemas().get(name) if name in _DATA_TABLES else None)


@cache
def _data_schemas() -> dict[str, _Schema]:
    from . import data_tables as d  # why: ~10 ms of record classes, only when a data table is read

    return {
        "env_vars.yaml": _hand_written(d.EnvTable, "verl", "vllm", "vllm_ascend"),
        "allocator_options.yaml": _hand_written(d.AllocatorTable, "torch", "torch_npu"),
        "engine_args/verl_knobs.yaml": _hand_written(d.KnobsTable, "verl"),
        # engine -> how verl builds its arguments; verified through the oldest release one was read from
        "engine_args/verl_assembly.yaml": _Schema(
            map_of(record_of(d.AssemblyRecord), keys=choice("vllm", "sglang")),
            lambda got: {"verl": min((a.derived_from[len("verl ") :] for a in got.values()), key=Version)},
            lambda got, data: got,
        ),
    }


@cache
def _models_schema() -> _Schema:
    from .model_records import ModelsTable  # why: the record classes, only when models.yaml is parsed

    return _hand_written(ModelsTable, "verl")
