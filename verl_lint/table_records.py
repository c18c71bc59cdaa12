"""The typed records of the rule tables (ineffective_keys.yaml, removed_keys.yaml: one registered
rule each), each field declared with its check (`table_checks.table_field`) and validated when the
table is loaded (`knowledge.py`), with their `Fact`s and examples. The data tables' records are in
`data_tables.py`."""

from __future__ import annotations

from typing import Any, NamedTuple

from .table_checks import (
    Bad,
    as_text,
    child,
    choice,
    is_bool,
    is_range,
    is_scalar,
    is_text,
    is_version,
    list_of,
    map_of,
    matching,
    null_or,
    pairs,
    show,
    table_field,
    table_record,
)

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
        raise Bad(node, f"a fact must be a mapping such as {{file: ..., contains: ...}}, not {show(raw)}")
    kinds = [key for _, key, _, _ in pairs(node, raw) if key != "file"]
    if len(kinds) != 1 or kinds[0] not in FACTS:
        raise Bad(node, f"unknown fact {raw!r} (one of: {', '.join(FACTS)})")
    kind, value = kinds[0], raw[kinds[0]]
    if kind in FILE_FACTS:
        path = raw.get("file")
        if not isinstance(path, str) or not path or path.startswith("/"):
            raise Bad(node, f"fact {kind!r} needs `file:`, a path relative to the tree root")
        if kind == "exists" and not isinstance(value, bool):
            raise Bad(node, f"`exists:` is true or false, not {show(value)}")
        if kind != "exists" and (not isinstance(value, str) or not value):
            raise Bad(node, f"`{kind}:` needs the text to look for")
        return Fact(kind, path, value)
    if "file" in raw:
        raise Bad(node, f"fact {kind!r} takes no `file:`")
    if kind in ("any", "all"):
        if not isinstance(value, list) or not value:
            raise Bad(node, f"`{kind}:` needs a list of facts")
        return Fact(kind, "", list_of(_fact)(child(node, kind), value))
    if not isinstance(value, str) or not value or kind == "worker" and value not in WORKERS:
        raise Bad(node, f"`{kind}:` needs a name" + (f" (one of: {', '.join(WORKERS)})" if kind == "worker" else ""))
    if kind == "field" and value.count(".") < 2:
        raise Bad(node, f"`field:` is module.Class.field, not {show(value)}")
    return Fact(kind, value)


# ------------------------------------------------------- rule records ----


def _conditions(node, value) -> tuple[tuple[str, str], ...]:
    return tuple(map_of(as_text)(node, value).items())


@table_record
class RuleRecord:
    """A record of ineffective_keys.yaml or removed_keys.yaml: one registered rule."""

    code: str = table_field(matching(r"VL\d{3}", "a rule code such as VL205"))
    name: str = table_field(matching(r"[a-z0-9]+(-[a-z0-9]+)*", "a kebab-case rule name"))
    severity: str = table_field(choice("error", "warning", "info"))
    summary: str = table_field(is_text, "")  # one line for the rule's documentation (default: its name)
    # The finding's message and help: {key} is the override's key, {value} its value (and
    # {replacement}, {version} for removed keys).
    message: str = table_field(is_text)
    help: str = table_field(is_text)
    evidence: tuple[str, ...] = table_field(list_of(is_text), ())  # the file:line of a release each record rests on
    # The evidence, checked in the verl tree being linted (all must hold; see Fact), each file read once per
    # process. Only where the tree has no source to check (no Python file in verl/workers) does the range decide.
    requires: tuple[Fact, ...] = table_field(list_of(_fact, nonempty=True), ())
    # Its bad/good examples are fixtures: verl_lint/rules/examples/CODE/ (examples.py).
    line: int = 0  # where the record starts in its table (not a table field)

    @property
    def fallback(self) -> str:
        """The verl range that decides where the tree has no source to check `requires` in."""
        raise NotImplementedError


@table_record
class IneffectiveRecord(RuleRecord):
    """A key that composes fine but that verl ignores or overwrites (ineffective_keys.yaml, 2xx)."""

    # Dotted keys as written in an override (no +/~ prefix); a trailing ".*" matches any key below.
    keys: tuple[str, ...] = table_field(list_of(is_text, nonempty=True))
    # The verl releases in which the record holds: the fallback used only when the tree has no source
    # to check; a dev, rc, post or local version then counts as its release (0.7.0.dev is 0.7.0).
    verl: str = table_field(is_range)
    # Conditions that must all hold on the composed, resolved config; values are the str() form
    # of the config value ("True"/"False" for bools). In a launch passing "$@", a condition key
    # the script does not set is its caller's to choose: no finding.
    when: tuple[tuple[str, str], ...] = table_field(_conditions, ())
    value: str | None = table_field(
        null_or(as_text), None
    )  # only overrides that set this value (str() form) trigger the record
    # Silent when the launch overrides one of these (a visible choice: use_kl_loss=False by a leftover coefficient).
    unless_set: tuple[str, ...] = table_field(list_of(is_text), ())
    # verl entry points it applies to, whatever the config's name (verified on main_ppo's trainer and workers;
    # verl's other apps read some keys themselves); a project's own entry point: registry.Rule.entry_points.
    entry_points: tuple[str, ...] = table_field(list_of(is_text, nonempty=True), ("verl.trainer.main_ppo",))
    # Values that agree with what verl does anyway while the key is ignored (kl_coef=0 with the
    # KL off is how users say "off"): no finding. Compared with the composed value, numbers
    # numerically (0 matches 0.0), booleans and null exactly, other values as text. A value only
    # known at run time (`$N`) may be one of them: no finding either.
    silent_values: tuple[Any, ...] = table_field(list_of(is_scalar), ())

    @property
    def fallback(self) -> str:
        return self.verl


def one_subject(node, got: dict) -> None:
    subjects = [k for k in ("keys", "module", "config_name") if got.get(k)]
    if len(subjects) != 1:
        raise Bad(node, f"a record is about one of keys, module, config_name, not {' and '.join(subjects) or 'none'}")


@table_record
class RemovedRecord(RuleRecord):
    """A key, value, entry point or config name removed or renamed between verl releases
    (removed_keys.yaml, 4xx); exactly one of keys, module, config_name."""

    # Dotted keys as the user writes them (no +/~); a trailing ".*" matches any key below, and
    # "{rest}" in `replacement` stands for the part matched by ".*".
    keys: tuple[str, ...] = table_field(list_of(is_text, nonempty=True), ())
    module: str | None = table_field(is_text, None)  # a removed `python -m` entry point
    config_name: str | None = table_field(is_text, None)  # a deprecated --config-name
    # The first release in which the key/value no longer works (compose error or wrong
    # behaviour); for severity=warning records (deprecated but still working) the first release
    # in which the deprecation applies. The fallback gate is ">= removed" (a dev/rc/local
    # version counting as its release) where `requires` cannot be checked.
    removed: str = table_field(is_version)
    value: str | None = table_field(
        null_or(as_text), None
    )  # only set when the record is about one value of the key (str() form)
    replacement: str = table_field(null_or(is_text, ""), "")  # mostly the key in the composed config it moved to
    rename: bool = table_field(
        is_bool, False
    )  # true only if writing the same value at `replacement` is exactly equivalent

    @property
    def fallback(self) -> str:
        return f">={self.removed}"
