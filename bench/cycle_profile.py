"""Where a cycle's time goes, step by step, on a backlog made by bench/backlog.py:

    python3 bench/backlog.py postgresql+psycopg://root@127.0.0.1:5432/test --schema prof
    python3 bench/cycle_profile.py postgresql+psycopg://root@127.0.0.1:5432/test --schema prof

It runs the Spark plan's steps one at a time on a warm session, each timed apart (the JDBC
read to Spark's no-op sink), then times the two Python passes alone, in this process, on a
slice of the same rows (the object pass on the first bucket's): microseconds a row on one
core. Nothing is written but a temporary folder, and no status changes."""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pyarrow as pa

from publisher.delivery.ordered import spilled_commands
from publisher.model.rows import PENDING, SPILLED
from publisher.plans.exchange import Exchange
from publisher.plans.reads import frame, state_frames
from publisher.plans.exchange import ROWS_PER_RANGE
from publisher.plans.tasks import census_parts, counted, spill_writer
from publisher.reduce import pipeline as p
from publisher.reduce.census import whole
from publisher.reduce.references import ordered_creations, referenced_classes
from publisher.render.object_pass import object_pass
from publisher.settings import Settings
from publisher.source.copy_read import CopyRanges
from publisher.source.database import connect
from publisher.source.event_log import (
    open_event_log,
    pending_bounds,
    pending_read,
    pending_select,
)
from publisher.source.jdbc import jdbc_query
from publisher.source.query_back import current_read
from publisher.source.schema import reflect_catalogue
from publisher.plans.session import spark_session

SLICE = 200_000  # rows for the one-core figures


def _seconds(step) -> float:
    began = time.monotonic()
    step()
    return time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--schema", default="prof")
    parser.add_argument("--time-syntax", type=int, default=1, choices=range(1, 4), metavar="N")
    args = parser.parse_args()
    settings = Settings(
        args.db, schema=args.schema, log_table=f"{args.schema}.indirect_process",
        time_syntax=args.time_syntax,
    )
    engine, dialect = database = connect(args.db)
    log = open_event_log(database, settings)
    catalogue = reflect_catalogue(
        database, settings.schema, settings.log_table, settings.time_syntax
    )
    spark = spark_session("local[*]")
    spark.range(1).count()
    classify = p.classify_rows(catalogue, engine.url.username, False, settings.max_value_length)
    bounds = pending_bounds(database, log, settings)
    cores = spark.sparkContext.defaultParallelism
    read_parts = max(cores, min(bounds.rows // ROWS_PER_RANGE, 4 * cores))
    split = ("record_id", bounds.low, bounds.high, bounds.rows) if bounds.rows else None
    jdbc = jdbc_query(database, pending_select(log, dialect, settings), PENDING.arrow, split)
    pending, jdbc_classify = frame(spark, jdbc, classify)
    print(f"JDBC read of the pending rows: {_seconds(lambda: pending.write.format('noop').mode('overwrite').save()):.2f} s")
    parts = census_parts(spark.sparkContext)
    with tempfile.TemporaryDirectory() as work:
        exchange = Exchange(spark, Path(work), bounds.rows)
        read = pending_read(database, log, settings, bounds, read_parts)
        classifying = frame(spark, read, counted(classify, parts, False, referenced_classes(catalogue)))
        how = f"COPY in {len(read)} ranges" if isinstance(read, CopyRanges) else "JDBC"
        seconds = _seconds(lambda: exchange.write([classifying]))
        print(f"read ({how}), classify and census, rows to {exchange.buckets} buckets: {seconds:.2f} s")
        census = whole(parts.value)

        def current(table, key_names, wanted):
            return current_read(
                database, catalogue, table, key_names, wanted,
                lambda rows: max(cores, -(-rows // ROWS_PER_RANGE)),
            )

        frames = state_frames(spark, census.wanted, catalogue, current)
        print(f"query-back state to the buckets: {_seconds(lambda: exchange.write(frames)):.2f} s")
        numbers, objects = exchange.objects()
        creations = ordered_creations(census.marks)
        passes = object_pass(catalogue, False, creations)
        fixed = {}

        def spilled() -> None:
            spill = spill_writer(work, lambda batches: passes(objects(batches)))
            fixed["commands"], _ = spilled_commands(numbers.mapInArrow(spill, SPILLED.ddl).collect())

        print(f"buckets read and sorted, object pass (precedence, runs, lxml), spilled: {_seconds(spilled):.2f} s")
        print(f"commands read back in order: {_seconds(lambda: sum(1 for _ in fixed['commands'])):.2f} s")
        del fixed["commands"]
        grouped = pa.Table.from_batches(list(objects(iter([pa.record_batch({"id": [0]})]))))

    # One core, no Spark: the two passes on the first SLICE rows of their own inputs.
    raw = pa.Table.from_batches(pending.limit(SLICE).toArrow().to_batches())
    began = time.perf_counter()
    list(jdbc_classify(iter(raw.to_batches(10_000))))
    per_row = (time.perf_counter() - began) / raw.num_rows * 1e6
    print(f"classify pass alone: {per_row:.1f} us a row on one core")
    grouped = grouped.slice(0, SLICE)
    began = time.perf_counter()
    list(object_pass(catalogue, False, creations)(iter(grouped.to_batches(10_000))))
    per_row = (time.perf_counter() - began) / grouped.num_rows * 1e6
    print(f"object pass alone: {per_row:.1f} us a row on one core")
    engine.dispose()


if __name__ == "__main__":
    main()
