"""Query-back reads (docs/rendering.md, Query-back): the current rows of a published table.

Every column is selected as the database's own text (binary columns as bytes), so that one
rule (model/value_text.py) turns them into XDS text whatever reads them: Spark's JDBC source
here, or the row publisher of bench/ with SQLAlchemy. Key values are bound as values,
never spliced into the SQL; names come from the reflected catalogue only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import pyarrow as pa
import sqlalchemy as sa

from publisher.model import value_text
from publisher.model.catalogue import Catalogue, Table
from publisher.source.database import database_text
from publisher.source.dialects import Dialect
from publisher.source.jdbc import read_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Up to this many requested objects are read by their keys; more, and the table is read
# whole (in ranges of its integer key when it has one) and joined in Spark.
KEYED_READ_LIMIT = 1_000


def current_select(
    table: Table,
    schema: str | None,
    key_names: Sequence[str],
    wanted: Sequence[Sequence[str]] | None,
    raw: str | None = None,
) -> sa.Select:
    """The rows of ``table`` whose ``key_names`` hold one of ``wanted`` (key texts), or
    every row when ``wanted`` is None. ``raw``: a column selected as it is, not as text
    (the integer column a partitioned read splits on)."""
    source = sa.table(table.name, *(sa.column(c.name) for c in table.columns), schema=schema)
    selected = [
        source.c[c.name] if c.xds_type == value_text.OCTET or c.name == raw
        else sa.cast(source.c[c.name], sa.Text).label(c.name)
        for c in table.columns
    ]
    query = sa.select(*selected)
    if wanted is None:
        return query
    columns = [table.column(name) for name in key_names]
    binds = [
        tuple(int(v) if c.xds_type == value_text.INT else v for c, v in zip(columns, key))
        for key in wanted
    ]
    if len(key_names) == 1:
        return query.where(source.c[key_names[0]].in_([b[0] for b in binds]))
    return query.where(sa.tuple_(*(source.c[n] for n in key_names)).in_(binds))


def read_current(
    spark: SparkSession,
    engine: sa.Engine,
    dialect: Dialect,
    catalogue: Catalogue,
    table: Table,
    key_names: Sequence[str],
    wanted: list[tuple[str, ...]] | None,
) -> DataFrame:
    """``current_select`` through Spark's JDBC source: every column a string, binary ones
    bytes. A whole read of a table with an integer key is split in ranges of it."""
    schema = catalogue.schema if dialect.has_schemas else None
    split = raw = None
    if wanted is None and table.column(key_names[0]).xds_type == value_text.INT:
        raw = key_names[0]
        source = sa.table(table.name, sa.column(raw), schema=schema)
        key = source.c[raw]
        with engine.connect() as conn:
            low, high, rows = conn.execute(
                sa.select(sa.func.min(key), sa.func.max(key), sa.func.count()).select_from(source)
            ).one()
        split = (raw, low, high, rows) if rows else None
    query = current_select(table, schema, key_names, wanted, raw)
    columns = ", ".join(
        f"`{c.name}` {'BINARY' if c.xds_type == value_text.OCTET else 'STRING'}"
        for c in table.columns
    )
    return read_query(spark, engine, dialect, query, columns, split)


def current_table(
    engine: sa.Engine, schema: str | None, table: Table, key_names: Sequence[str], wanted: list | None
) -> pa.Table:
    """``current_select`` read by the driver, for a cycle of few rows: the same columns as
    ``read_current``'s, every one a string, binary ones bytes. ``schema``: the schema the
    table is in, where the database has schemas."""
    fields = [
        (c.name, pa.binary() if c.xds_type == value_text.OCTET else pa.string())
        for c in table.columns
    ]
    with engine.connect() as conn:
        rows = conn.execute(current_select(table, schema, key_names, wanted)).all()
    columns = zip(*rows) if rows else ([] for _ in fields)
    return pa.table(
        [pa.array([_value(v, kind) for v in column], kind) for column, (_, kind) in zip(columns, fields)],
        schema=pa.schema(fields),
    )


def _value(value: object, kind: pa.DataType) -> object:
    if kind == pa.binary() and isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value if kind == pa.binary() else database_text(value)
