"""Query-back (PUBLISHER.md section 2): the current rows of a published table, read through
Spark's JDBC source. Every column is read as text, binary ones as bytes, so that Spark
applies one set of XDS value rules whatever the database."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import sqlalchemy as sa

from publisher.model import values
from publisher.model.catalogue import Catalogue, Table
from publisher.source.dialects import Dialect
from publisher.source.jdbc import read_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# Up to this many requested objects are read by their keys; more, and the table is read
# whole (in ranges of its integer key when it has one) and joined in Spark.
KEYED_READ_LIMIT = 1_000


def _spark_type(xds_type: str) -> str:
    return "BINARY" if xds_type == values.OCTET else "STRING"


def read_current(
    spark: SparkSession,
    engine: sa.Engine,
    dialect: Dialect,
    catalogue: Catalogue,
    table: Table,
    key_names: Sequence[str],
    wanted: list[tuple[str, ...]] | None,
) -> DataFrame:
    """The rows of ``table`` whose ``key_names`` columns hold one of ``wanted`` (text
    values), or every row when ``wanted`` is None."""
    schema = catalogue.schema if dialect.has_schemas else None
    sa_table = sa.table(table.name, *(sa.column(c.name) for c in table.columns), schema=schema)
    query = sa.select(sa_table)
    split = None
    if wanted is not None:
        key_columns = [table.column(name) for name in key_names]
        binds = [
            tuple(int(v) if c.xds_type == values.INT else v for c, v in zip(key_columns, key))
            for key in wanted
        ]
        if len(key_names) == 1:
            query = query.where(sa_table.c[key_names[0]].in_([b[0] for b in binds]))
        else:
            query = query.where(sa.tuple_(*(sa_table.c[n] for n in key_names)).in_(binds))
    elif table.column(key_names[0]).xds_type == values.INT:
        key = sa_table.c[key_names[0]]
        with engine.connect() as conn:
            low, high, rows = conn.execute(
                sa.select(sa.func.min(key), sa.func.max(key), sa.func.count()).select_from(sa_table)
            ).one()
        split = (key_names[0], low, high, rows) if rows else None
    columns = ", ".join(f"`{c.name}` {_spark_type(c.xds_type)}" for c in table.columns)
    return read_query(spark, engine, dialect, query, columns, split)
