"""The vocabulary a knowledge table's schema is written in: checks that read a YAML node and
its parsed value, convert it, and on a violation raise `Bad` at the node (the loader turns it into
a `TableError` naming the table's file and line, the field and the record).

A typed record of a table is a frozen dataclass whose fields carry their check (`table_field`);
`record_of` reads a mapping as such a record, each field checked, unknown fields and missing
required ones errors."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import MISSING, dataclass, field, fields
from typing import Any

import yaml
from packaging.version import Version

STR_TAG = "tag:yaml.org,2002:str"


class Bad(Exception):
    """A schema violation at `node`; the enclosing field and record are added on the way out."""

    def __init__(self, node: yaml.Node | None, problem: str) -> None:
        super().__init__(problem)
        self.node, self.problem, self.field, self.record = node, problem, "", ""

    def __str__(self) -> str:
        where = f" in record {self.record}" if self.record else ""
        return f'field "{self.field}"{where}: {self.problem}' if self.field else f"{self.problem}{where}"


Check = Callable[[Any, Any], Any]  # (node, value) -> the value, converted; Bad when it breaks the schema


def line_of(node: yaml.Node | None) -> int:
    return node.start_mark.line + 1 if node is not None else 1


def show(value: Any) -> str:
    """A value as an error line quotes it."""
    if isinstance(value, (dict, list)):
        return "a mapping" if isinstance(value, dict) else "a list"
    if isinstance(value, str):
        return f'"{value}"' if len(value) <= 60 else f'"{value[:57]}..."'
    return "null" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def is_a(what: str, test: Callable[[Any], bool]) -> Check:
    def check(node, value):
        if not test(value):
            raise Bad(node, f"expected {what}, not {show(value)}")
        return value

    return check


is_text = is_a("text", lambda v: isinstance(v, str) and v != "")
is_string = is_a("a string", lambda v: isinstance(v, str))
is_bool = is_a("true or false", lambda v: isinstance(v, bool))
is_int = is_a("an integer", lambda v: isinstance(v, int) and not isinstance(v, bool))
is_scalar = is_a("a single value", lambda v: not isinstance(v, (dict, list)))


def choice(*options: str) -> Check:
    return is_a(f"one of {', '.join(options)}", lambda v: isinstance(v, str) and v in options)


def matching(pattern: str, what: str) -> Check:
    return is_a(what, lambda v: isinstance(v, str) and re.fullmatch(pattern, v) is not None)


def pep440(parse: Callable[[str], Any], what: str) -> Check:
    def check(node, value) -> str:
        if isinstance(value, str) and value.strip():
            try:
                parse(value)
                return value
            except ValueError:  # InvalidVersion, InvalidSpecifier
                pass
        raise Bad(node, f"{show(value)} is not a PEP 440 {what}")

    return check


def specifier_set(text: str) -> Any:
    from packaging.specifiers import SpecifierSet  # why: ~10 ms, only when a table is checked

    return SpecifierSet(text)


is_version = pep440(Version, 'release such as "0.9.1"')
is_range = pep440(specifier_set, 'version range such as ">=0.7.0,<0.8.0"')


def is_regex(node, value) -> str:
    try:
        re.compile(is_text(node, value))
    except re.error as ex:
        raise Bad(node, f"{show(value)} is not a regular expression ({ex})") from None
    return value


def null_or(check: Check, default: Any = None) -> Check:
    return lambda node, value: default if value is None else check(node, value)


def as_text(node, value) -> str:
    """A value compared in its str() form (`True`, `0.5`, `sync`)."""
    return str(is_scalar(node, value))


def one_or_more(check: Check) -> Check:
    return lambda node, value: (
        list_of(check, nonempty=True)(node, value) if isinstance(value, list) else check(node, value)
    )


def at_field(name: str, check: Check, node, value) -> Any:
    """`check` of field (or key) `name`: a violation inside it names the field."""
    try:
        return check(node, value)
    except Bad as bad:
        if not bad.record:
            bad.field = f"{name}.{bad.field}" if bad.field else name
        raise


def pairs(node, value) -> Iterator[tuple[Any, str, Any, Any]]:
    """(key node, key, value node, value) of a mapping whose keys are text, each key once."""
    if not isinstance(value, dict) or not isinstance(node, yaml.MappingNode):
        raise Bad(node, f"expected a mapping, not {show(value)}")
    seen: dict[str, int] = {}
    for kn, vn in node.value:
        if not isinstance(kn, yaml.ScalarNode) or kn.tag != STR_TAG:
            raise Bad(
                kn,
                f"a key must be text, not {show(kn.value) if isinstance(kn, yaml.ScalarNode) else 'a list or mapping'}",
            )
        if kn.value in seen:
            raise Bad(kn, f'duplicate key "{kn.value}" (first at line {seen[kn.value]})')
        seen[kn.value] = line_of(kn)
        yield kn, kn.value, vn, value[kn.value]


def list_of(item: Check, nonempty: bool = False, unique: str = "") -> Check:
    """A list of `item`s (as a tuple); `unique` names a field no two items may share."""

    def check(node, value):
        if not isinstance(value, list) or not isinstance(node, yaml.SequenceNode) or (nonempty and not value):
            raise Bad(node, f"expected a {'non-empty ' if nonempty else ''}list, not {show(value)}")
        out, seen = [], {}
        for n, v in zip(node.value, value):
            out.append(item(n, v))
            if unique:
                kn = next(k for k, _ in n.value if k.value == unique)  # a required field
                if v[unique] in seen:
                    bad = Bad(kn, f"duplicate {unique} (first at line {seen[v[unique]]})")
                    bad.record = v[unique]  # named as the record, not as the list's field
                    raise bad
                seen[v[unique]] = line_of(kn)
        return tuple(out)

    return check


def map_of(value_check: Check, keys: Check = is_text) -> Check:
    """A mapping from names to `value_check`ed values."""

    def check(node, value):
        out = {}
        for kn, key, vn, v in pairs(node, value):
            keys(kn, key)
            out[key] = at_field(key, value_check, vn, v)
        return out

    return check


def fields_of(
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
            for kn, key, vn, v in pairs(node, value):
                if key not in spec:
                    raise Bad(kn, f'unknown field "{key}"')
                out[key] = at_field(key, spec[key], vn, v)
            for key in required:
                if key not in out:
                    raise Bad(node, f'missing field "{key}"')
            if then is not None:
                then(node, out)
            return out
        except Bad as bad:
            name = value.get(label) if label and isinstance(value, dict) else None
            if not bad.record and isinstance(name, str):
                bad.record = name
            raise

    return check


def child(node, key: str):
    return next(vn for kn, vn in node.value if kn.value == key)


# ------------------------------------------------------- typed records ----

# A table's record class (`table_records.py`, `data_tables.py`, `model_records.py`): immutable, its
# records compared by identity (each exists once: one per record of a table loaded once), and
# defined without the generated __eq__, __hash__ and __repr__, which would cost a Hydra job's
# start ~0.5 ms per class.
table_record = dataclass(frozen=True, kw_only=True, eq=False, repr=False)


def table_field(check: Check, default: Any = MISSING) -> Any:
    """A record field read from the table, checked and converted by `check`; required unless
    it has a default."""
    return field(default=default, metadata={"check": check})


def checks_of(cls: type) -> dict[str, Check]:
    """The table fields of record class `cls` and their checks."""
    return {f.name: f.metadata["check"] for f in fields(cls) if "check" in f.metadata}


def required_of(cls: type) -> tuple[str, ...]:
    """The table fields of `cls` without a default."""
    return tuple(f.name for f in fields(cls) if "check" in f.metadata and f.default is MISSING)


def record_of(cls: type, label: str = "", then: Callable[[Any, dict], None] | None = None) -> Check:
    """A mapping read as a `cls`, each field checked (`label` names the field that identifies a
    record in an error, `then` checks the fields together); a `line` field of `cls` that is not a
    table field gets the line the record starts at."""
    check_fields = fields_of(checks_of(cls), required_of(cls), label, then)
    if any(f.name == "line" and "check" not in f.metadata for f in fields(cls)):
        return lambda node, value: cls(**check_fields(node, value), line=line_of(node))
    return lambda node, value: cls(**check_fields(node, value))
