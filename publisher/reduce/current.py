"""Query-back as a join: the objects the cycle's query-back events name, matched with the
current rows of their tables, read through the JDBC source.

The result has one row per requested object: table_name, canonical_key, found, and cells,
the current non-key values in table order with their XDS text or why they cannot be
published. Keys are matched as text: integer keys canonically, CHAR keys without their
pad spaces, other types as the database writes them."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from publisher.model import values
from publisher.model.catalogue import Catalogue, Table
from publisher.reduce.xds_text import forbidden_position, octet_text, xds_text
from publisher.source.query_back import KEYED_READ_LIMIT

CELLS_TYPE = (
    "ARRAY<STRUCT<ordinal: INT, column_name: STRING, xds_type: STRING, "
    "value: STRING, value_error: STRING>>"
)
STATE_SCHEMA = f"table_name STRING, canonical_key STRING, found BOOLEAN, cells {CELLS_TYPE}"
_SEPARATOR = "\u0001"  # cannot occur in a published value (XML 1.0 forbids it)

# (table, key column names, the wanted keys' text values or None for all) -> raw rows
ReadTable = Callable[[Table, Sequence[str], "list[tuple[str, ...]] | None"], DataFrame]


def _key_text(raw: Column, xds_type: str, is_char: bool) -> Column:
    if xds_type == values.INT:
        return raw.try_cast("long").cast("string")
    return F.rtrim(raw) if is_char else raw


def _cell(table: Table, column_name: str) -> Column:
    column = table.column(column_name)
    raw = F.col(f"`{column_name}`")
    if column.xds_type == values.OCTET:
        text, valid = octet_text(raw), F.lit(True)
    else:
        text, valid = xds_text(raw, F.lit(column.xds_type), F.lit(column.is_char))
    position = forbidden_position(text)
    error = F.when(
        ~valid,
        F.format_string(
            f"current value '%s' of {column.name} is not a valid {column.xds_type} value", raw
        ),
    ).when(
        position > 0,
        F.format_string(
            f"current value of {column.name} has a character XML 1.0 cannot carry at position %d",
            position,
        ),
    )
    return F.struct(
        F.lit(column.ordinal).alias("ordinal"),
        F.lit(column.name).alias("column_name"),
        F.lit(column.xds_type).alias("xds_type"),
        F.when(valid, text).alias("value"),
        error.alias("value_error"),
    )


def _state_of(
    table: Table, key_names: Sequence[str], wanted: DataFrame, rows: DataFrame
) -> DataFrame:
    match = F.concat_ws(
        _SEPARATOR,
        *(
            _key_text(F.col(f"`{name}`"), table.column(name).xds_type, table.column(name).is_char)
            for name in key_names
        ),
    )
    others = [c.name for c in table.columns if c.name not in key_names]
    current = rows.select(
        match.alias("match"), F.array(*(_cell(table, n) for n in others)).alias("cells")
    )
    if not table.is_unique(key_names):  # a view's pk_ columns, say: one row per key
        current = current.dropDuplicates(["match"])
    current = current.withColumn("found", F.lit(True))
    return wanted.join(current, "match", "left").select(
        "table_name", "canonical_key", F.coalesce("found", F.lit(False)).alias("found"), "cells"
    )


@dataclass(frozen=True)
class RequestShape:
    """The query-back requests of one table by one set of key columns."""

    table_name: str
    key_names: tuple[str, ...]
    objects: int  # an estimate: it says whether the keys are worth collecting


def current_state(
    spark: SparkSession,
    requests: DataFrame,
    shapes: Sequence[RequestShape],
    catalogue: Catalogue,
    read: ReadTable,
) -> DataFrame:
    """One row per requested object (``requests``: table_name, canonical_key, key_pairs,
    an object once or more, of ``shapes``): STATE_SCHEMA."""
    key_names = F.transform("key_pairs", lambda p: p["column"])
    parts = []
    for shape in shapes:
        table = catalogue.tables[shape.table_name]
        names = list(shape.key_names)
        values_text = [
            _key_text(F.col("key_pairs")[i]["value"], table.column(n).xds_type, False)
            for i, n in enumerate(names)
        ]
        wanted = requests.where(
            (F.col("table_name") == table.name) & (key_names == F.array(*map(F.lit, names)))
        ).select(
            "table_name",
            "canonical_key",
            F.concat_ws(_SEPARATOR, *values_text).alias("match"),
            F.array(*values_text).alias("key_values"),
        ).distinct()  # each column follows from canonical_key: hashed, not sorted, as a key
        keys = None  # the exact count decides between a keyed and a whole read
        if shape.objects <= 2 * KEYED_READ_LIMIT:
            found = [tuple(r.key_values) for r in wanted.select("key_values").collect()]
            keys = found if len(found) <= KEYED_READ_LIMIT else None
        parts.append(_state_of(table, names, wanted.drop("key_values"), read(table, names, keys)))
    if not parts:
        return spark.createDataFrame([], STATE_SCHEMA)
    state = parts[0]
    for part in parts[1:]:
        state = state.unionByName(part)
    return state
