"""Reading a query through Spark's JDBC source, split by ranges of an integer column when
it is big enough to be worth reading in parallel."""

from __future__ import annotations

from typing import TYPE_CHECKING

import sqlalchemy as sa

from publisher.source.dialects import Dialect

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ROWS_PER_PARTITION = 250_000  # below this a second connection costs more than it saves
FETCH_SIZE = 10_000


def jdbc_sql(query: sa.Select, engine: sa.Engine) -> str:
    """``query`` as SQL text for a JDBC driver, its values inlined and escaped by the
    engine's own dialect. Where the Python driver's paramstyle is a %-format, that text is
    a format string (each ``%`` written ``%%``): formatted with no parameters, it is the SQL
    the server reads, as the driver itself would send it."""
    sql = str(query.compile(engine, compile_kwargs={"literal_binds": True}))
    return sql % () if engine.dialect.paramstyle in ("format", "pyformat") else sql


def read_query(
    spark: SparkSession,
    engine: sa.Engine,
    dialect: Dialect,
    query: sa.Select,
    schema: str,
    split: tuple[str, int, int, int] | None = None,
) -> DataFrame:
    """``query`` as a DataFrame of ``schema`` (Spark's customSchema: the types it reads the
    columns as). ``split``: (column, lowest, highest, rows) to read in record ranges."""
    sql = jdbc_sql(query, engine)
    url = engine.url
    reader = (
        spark.read.format("jdbc")
        .option("url", dialect.jdbc(url))
        .option("driver", dialect.jdbc_driver)
        .option("customSchema", schema)
        .option("fetchsize", FETCH_SIZE)
    )
    if url.username:
        reader = reader.option("user", url.username)
    if url.password:
        reader = reader.option("password", url.password)
    partitions = 1 if split is None else min(
        max(1, split[3] // ROWS_PER_PARTITION), 4 * spark.sparkContext.defaultParallelism
    )
    if partitions == 1:
        return reader.option("query", sql).load()
    column, low, high, _rows = split
    return (
        reader.option("dbtable", f"({sql}) AS split_query")
        .option("partitionColumn", column)
        .option("lowerBound", low)
        .option("upperBound", high + 1)
        .option("numPartitions", partitions)
        .load()
    )
