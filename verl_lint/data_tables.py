"""The typed records of the data tables (env_vars.yaml, allocator_options.yaml, the engine_args
knobs and assembly; models.yaml's are in `model_records.py`): one record type per table, each field
declared with its check (`table_checks.table_field`) and validated when the table is loaded;
`knowledge.load_table` returns them as they are (the users read fields, never guard a dict).

Imported when one of these tables is first loaded (a rule table's records are in
`table_records.py`): defining the classes costs a Hydra job's start ~10 ms that most jobs never need.
"""

from __future__ import annotations

import fnmatch
import re
from typing import Any

from packaging.version import Version

from .table_checks import (
    Bad,
    child,
    choice,
    is_bool,
    is_int,
    is_range,
    is_regex,
    is_string,
    is_text,
    is_version,
    list_of,
    map_of,
    matching,
    null_or,
    one_or_more,
    record_of,
    show,
    table_field,
    table_record,
)

# ---------------------------------------------------------- env_vars.yaml ----


def _since_before_until(node, got: dict) -> None:
    if "since" in got and "until" in got and Version(got["since"]) >= Version(got["until"]):
        raise Bad(child(node, "until"), f"until {got['until']} is not after since {got['since']}")


@table_record
class EnvRecord:
    """What an engine does with an environment variable (a VL5xx finding; fields described in the table)."""

    name: str = table_field(is_text)  # the variable, or an fnmatch pattern
    value: str | None = table_field(is_regex, None)  # only values matching it (whole, case-insensitive)
    since: str | None = table_field(is_version, None)  # the first engine release it holds for
    until: str | None = table_field(is_version, None)  # the first engine release it no longer holds for
    verl: str = table_field(is_range, "")  # the verl releases it holds for ("": every one)
    code: str = table_field(matching(r"VL5\d\d", "a VL5xx rule code"))
    severity: str | None = table_field(choice("error", "warning", "info"), None)  # None: the rule's
    message: str = table_field(is_text)
    help: str = table_field(is_text, "")
    evidence: tuple[str, ...] = table_field(list_of(is_text), ())

    def name_matches(self, name: str) -> bool:
        return fnmatch.fnmatchcase(name, self.name)

    def value_matches(self, value: str | None) -> bool:
        if self.value is None:
            return True
        return value is not None and re.fullmatch(self.value, value.strip(), re.IGNORECASE) is not None


@table_record
class EnvSkip:
    """The variables verl's workers do not pass on to the engine: exact names and prefixes."""

    names: tuple[str, ...] = table_field(list_of(is_text), ())
    prefixes: tuple[str, ...] = table_field(list_of(is_text), ())


_ENV_RECORDS = list_of(record_of(EnvRecord, "name", _since_before_until))


@table_record
class EnvTable:
    worker_env_skip: EnvSkip = table_field(record_of(EnvSkip))
    vllm: tuple[EnvRecord, ...] = table_field(_ENV_RECORDS)
    vllm_ascend: tuple[EnvRecord, ...] = table_field(_ENV_RECORDS)


# ------------------------------------------------- allocator_options.yaml ----

ALLOCATOR_TYPES = (
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


@table_record
class AllocatorOption:
    """A key of the caching allocator's settings string, and the format of its value."""

    key: str = table_field(is_text)
    # cuda: the first torch release that accepts it; npu: the first torch-npu release on each release line
    since: tuple[str, ...] = table_field(lambda node, value: _tuple(one_or_more(is_version)(node, value)))
    type: str = table_field(choice(*ALLOCATOR_TYPES))
    verified: bool = table_field(is_bool, True)  # false: from the research notes, not re-checked on a wheel
    choices: tuple[str, ...] | None = table_field(list_of(is_text, nonempty=True), None)
    min: int | None = table_field(is_int, None)
    max: int | None = table_field(is_int, None)


def _tuple(value: Any) -> tuple:
    return value if isinstance(value, tuple) else (value,)


@table_record
class AllocatorVar:
    """An environment variable an allocator reads its settings from."""

    allocator: str = table_field(choice("cuda", "npu"))
    rocm_only: bool = table_field(is_bool, False)
    cuda_since: str | None = table_field(is_version, None)
    npu_since: str | None = table_field(is_version, None)


_OPTIONS = list_of(record_of(AllocatorOption, "key"), unique="key")


@table_record
class AllocatorTable:
    env_vars: dict[str, AllocatorVar] = table_field(map_of(record_of(AllocatorVar)))
    reset_on_parse: tuple[str, ...] = table_field(list_of(is_text))  # reset to their default by every parse
    cuda: tuple[AllocatorOption, ...] = table_field(_OPTIONS)
    npu: tuple[AllocatorOption, ...] = table_field(_OPTIONS)
    # the first torch-npu release on each line with torch.npu.memory._set_allocator_settings
    npu_set_allocator_settings_since: tuple[str, ...] = table_field(list_of(is_version, nonempty=True))


# ------------------------------------------------------- engine_args/*.yaml ----


@table_record
class KnobsTable:
    """engine_args/verl_knobs.yaml: the rollout knobs verl builds an engine's arguments from."""

    # engine -> engine argument -> the rollout knob verl builds it from (None: none)
    worker_mapping: dict[str, dict[str, str | None]] = table_field(map_of(map_of(null_or(is_text))))
    knob_values: dict[str, str] = table_field(map_of(is_text))  # knob -> the value it needs, as a verl expression


def _verl_release(node, value) -> str:
    """`verl RELEASE` (kept as written)."""
    if isinstance(value, str) and value.startswith("verl "):
        is_version(node, value[len("verl ") :])
        return value
    raise Bad(node, f'expected "verl RELEASE", not {show(value)}')


@table_record
class AssemblyEntry:
    """One place where verl's server code sets, keeps or consumes an engine argument (assembly.py's `ArgSet`)."""

    key: str = table_field(is_text)
    phase: str = table_field(choice("pre", "default", "after"))
    kind: str = table_field(choice("set", "setdefault", "pop"))
    value: str | None = table_field(is_string, None)
    condition: tuple[str, ...] = table_field(list_of(is_text), ())
    line: int = table_field(is_int)


@table_record
class AssemblyRecord:
    """How one verl release builds an engine's arguments (engine_args/verl_assembly.yaml, generated by
    scripts/make_engine_schemas.py --assembly)."""

    derived_from: str = table_field(_verl_release)  # "verl RELEASE": the release it was read from
    path: str = table_field(is_text)
    function: str = table_field(is_text)
    spread_line: int = table_field(is_int)
    locals: dict[str, str] = table_field(map_of(is_text))
    entries: tuple[AssemblyEntry, ...] = table_field(list_of(record_of(AssemblyEntry)))
