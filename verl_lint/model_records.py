"""The typed records of models.yaml (the bundled facts of popular models, `models.py`): fields
declared with their checks (`table_checks.table_field`), validated when the table is loaded.

Apart from the other data tables' records (`data_tables.py`): a Hydra job start whose launch names a
model loads this table and none of theirs, and defining their classes would cost it ~4 ms.
"""

from __future__ import annotations

from typing import Any

from .table_checks import is_a, is_text, list_of, map_of, matching, record_of, table_field, table_record

_CONFIG_VALUE = is_a(
    "a number, text, true/false or a mapping of them",
    lambda v: (
        not isinstance(v, list)
        and (not isinstance(v, dict) or all(not isinstance(x, (dict, list)) for x in v.values()))
    ),
)


@table_record
class ModelRecord:
    """A popular model's config.json fields, its public source and its nominal size."""

    id: str = table_field(is_text)  # the hub id
    also: tuple[str, ...] = table_field(list_of(is_text), ())  # other hub ids of the same config
    source: str = table_field(matching(r"https://\S+", "an https address"))
    params: float = table_field(is_a("billions of parameters", lambda v: isinstance(v, (int, float)) and v > 0))
    config: dict[str, Any] = table_field(map_of(_CONFIG_VALUE))


@table_record
class ModelsTable:
    """models.yaml: the popular models' records, each hub id once."""

    models: tuple[ModelRecord, ...] = table_field(list_of(record_of(ModelRecord, "id"), nonempty=True, unique="id"))
