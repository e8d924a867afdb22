"""The reads a Spark cycle runs: what the source layer describes as plain data (COPY
ranges, a query for Spark's JDBC source, staged Parquet files) as a frame and the
mapInArrow body to run over it, so that each read's rows go straight into a pass."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING

import pyarrow as pa

from publisher.model.catalogue import Catalogue, Table
from publisher.model.rows import PENDING, Passes
from publisher.plans.tasks import numbers_taken, task_numbers
from publisher.reduce.current import current_pass, state_reads
from publisher.source.changes import StagedChanges
from publisher.source.copy_read import CopyRanges
from publisher.source.jdbc import FETCH_SIZE, JdbcQuery, Retyped

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

Read = CopyRanges | JdbcQuery | StagedChanges
Frame = tuple["DataFrame", Passes]  # rows, and the mapInArrow body to run over them
# (table, key column names, the wanted keys' text values or None for all) -> its read
ReadTable = Callable[[Table, Sequence[str], "list[tuple[str, ...]] | None"], Read]


def frame(spark: SparkSession, read: Read, body: Passes) -> Frame:
    """``read`` as a frame, and ``body`` run over its rows as they are read."""
    if isinstance(read, CopyRanges):
        return _ranged(spark, read, body)
    if isinstance(read, StagedChanges):
        return spark.read.schema(PENDING.ddl).parquet(str(read.directory)), body
    return _jdbc(spark, read), _retyped(read.retyped, body)


def _ranged(spark: SparkSession, ranges: CopyRanges, body: Passes) -> Frame:
    """One task a range: the range numbers, and the body that reads each range there and
    puts its rows through ``body`` as they come, one pass from the database to ``body``'s
    rows."""

    def read(numbers: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for index in numbers_taken(numbers):
            yield from body(ranges.read(index))

    return task_numbers(spark, len(ranges), alone=True), read


def _retyped(retyped: Retyped, body: Passes) -> Passes:
    """``body`` over batches Spark read with other types than it takes, retyped first."""
    if retyped == Retyped():
        return body
    return lambda batches: body(map(retyped, batches))


def _jdbc(spark: SparkSession, query: JdbcQuery) -> DataFrame:
    reader = (
        spark.read.format("jdbc")
        .option("url", query.url)
        .option("driver", query.driver)
        .option("customSchema", query.custom_schema())
        .option("fetchsize", FETCH_SIZE)
    )
    if query.user:
        reader = reader.option("user", query.user)
    if query.password:
        reader = reader.option("password", query.password)
    partitions = query.partitions(spark.sparkContext.defaultParallelism)
    if partitions == 1:
        return reader.option("query", query.sql).load()
    column, low, high, _rows = query.split
    return (
        reader.option("dbtable", f"({query.sql}) AS split_query")
        .option("partitionColumn", column)
        .option("lowerBound", low)
        .option("upperBound", high + 1)
        .option("numPartitions", partitions)
        .load()
    )


def state_frames(spark: SparkSession, wanted: Mapping[str, object], catalogue: Catalogue,
                 read: ReadTable) -> list[Frame]:
    """The reads of the current rows (rows.STATE) of the objects ``wanted`` names (table
    name -> their keys' values, None for too many to name; reduce/census.py), and of
    their tables' child tables, each with the body that gives its rows.STATE."""
    return [
        frame(spark, read(part, part.key_columns, keyed), current_pass(catalogue, table, part))
        for table, part, keyed in state_reads(catalogue, wanted)
    ]
