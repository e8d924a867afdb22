"""Query-back as a join on Spark: the objects the cycle's query-back events name, matched with
the current rows of their tables.

The rows read (source/query_back.py) go through one Python pass that applies the
query-back state rules (reduce/query_back_state.py): each row's match text and its cells.
A class with child tables has each of them read once too, their rows' values grouped by
object (docs/classes.md). The result has one row per requested object (rows.STATE):
found, and the cells."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from publisher.model.catalogue import Catalogue, Table
from publisher.model.rows import CELLS, CURRENT, STATE
from publisher.reduce.query_back_state import (
    SEPARATOR,
    child_cells,
    current_cells,
    current_match,
)
from publisher.source.query_back import KEYED_READ_LIMIT

# (table, key column names, the wanted keys' text values or None for all) -> raw rows
ReadTable = Callable[[Table, Sequence[str], "list[tuple[str, ...]] | None"], DataFrame]


@dataclass(frozen=True)
class RequestShape:
    """The query-back requests of one table by one set of key columns."""

    table_name: str
    key_names: tuple[str, ...]
    objects: int  # an estimate: it says whether the keys are worth collecting


def current_pass(
    catalogue: Catalogue, table: Table, key_names: Sequence[str], child: bool
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """mapInArrow body over a table's rows as read: rows.CURRENT, rows matching nothing
    dropped. A ``child`` table's rows give their class's multi-valued cells."""

    def rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            out = []
            for row in batch.to_pylist():
                match = current_match(table, key_names, row)
                if match is not None:
                    cells = (
                        child_cells(catalogue, table, row) if child
                        else current_cells(catalogue, table, key_names, row)
                    )
                    out.append(CURRENT.row(match=match, cells=cells))
            yield CURRENT.batch(out)

    return rows


def _state_of(
    catalogue: Catalogue,
    table: Table,
    key_names: Sequence[str],
    wanted: DataFrame,
    read: ReadTable,
    keys: list[tuple[str, ...]] | None,
) -> DataFrame:
    """rows.STATE of the ``wanted`` objects (``keys``: their key values, or None to read
    whole tables): their current rows' cells, then those of their class's child tables,
    each read once."""
    current = read(table, key_names, keys).mapInArrow(
        current_pass(catalogue, table, key_names, child=False), CURRENT.ddl
    )
    if not table.is_unique(key_names):  # a view's pk_ columns, say: one row per key
        current = current.dropDuplicates(["match"])
    current = current.withColumn("found", F.lit(True))
    state = wanted.join(current, "match", "left")
    cells = [F.col("cells")]
    for index, child in enumerate(table.children()):
        name = f"child_cells_{index}"
        values = (
            read(child, child.key_columns, keys)
            .mapInArrow(current_pass(catalogue, child, child.key_columns, child=True), CURRENT.ddl)
            .groupBy("match")
            .agg(F.flatten(F.collect_list("cells")).alias(name))
        )
        state = state.join(values, "match", "left")
        cells.append(F.coalesce(F.col(name), F.array().cast(CELLS)))
    return state.select(
        "table_name",
        "canonical_key",
        F.coalesce("found", F.lit(False)).alias("found"),
        F.concat(*cells).alias("cells") if len(cells) > 1 else "cells",
    )


def current_state(
    spark: SparkSession,
    requests: DataFrame,
    shapes: Sequence[RequestShape],
    catalogue: Catalogue,
    read: ReadTable,
) -> DataFrame:
    """One row per requested object (``requests``: table_name, canonical_key, key_pairs in
    the table's key order, an object once or more, of ``shapes``): rows.STATE."""
    key_names = F.transform("key_pairs", lambda p: p["column"])
    parts = []
    for shape in shapes:
        table = catalogue.tables[shape.table_name]
        names = list(shape.key_names)
        key_values = [F.col("key_pairs")[i]["value"] for i in range(len(names))]
        wanted = requests.where(
            (F.col("table_name") == table.name) & (key_names == F.array(*map(F.lit, names)))
        ).select(
            "table_name",
            "canonical_key",
            F.concat_ws(SEPARATOR, *key_values).alias("match"),  # query_back_state.match_text
            F.array(*key_values).alias("key_values"),
        ).distinct()  # each column follows from canonical_key: hashed, not sorted, as a key
        keys = None  # the exact count decides between a keyed and a whole read
        if shape.objects <= 2 * KEYED_READ_LIMIT:
            found = [tuple(r.key_values) for r in wanted.select("key_values").collect()]
            keys = found if len(found) <= KEYED_READ_LIMIT else None
        parts.append(_state_of(catalogue, table, names, wanted.drop("key_values"), read, keys))
    if not parts:
        return spark.createDataFrame([], STATE.ddl)
    state = parts[0]
    for part in parts[1:]:
        state = state.unionByName(part)
    return state
