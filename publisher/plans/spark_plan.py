"""A cycle's rows reduced on Spark (reduce/pipeline.py): read and classified in record_id
ranges, one shuffle by object through the work folder (plans/exchange.py), the object pass
spilling its commands for the driver to put in order (delivery/ordered.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from publisher.delivery.ordered import spill_writer, spilled_commands
from publisher.model.rows import SPILLED
from publisher.plans import CycleSource, Phases, Reduced
from publisher.plans.exchange import Exchange
from publisher.reduce import pipeline as p
from publisher.reduce.census import census_parts, counted, whole
from publisher.reduce.current import state_frames
from publisher.render.object_pass import object_pass
from publisher.settings import Settings
from publisher.source.copy_read import ranged_frame

ROWS_PER_RANGE = 250_000  # rows a reading task takes, at most (and a range for each core)

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def reduce_on_spark(
    spark: SparkSession, settings: Settings, source: CycleSource, work: Path, phases: Phases
) -> Reduced:
    """The cycle's commands and statuses; the object pass spills into ``work``."""
    phases.begin("reading and classifying")
    classify = p.classify_rows(
        source.catalogue, source.loopback_user, settings.future_events, settings.max_value_length
    )
    cores = spark.sparkContext.defaultParallelism

    def parts_for(rows: int) -> int:
        return max(cores, -(-rows // ROWS_PER_RANGE))

    rows = source.count()
    ranges = source.pending_ranges(parts_for(rows))
    parts = census_parts(spark.sparkContext)
    if ranges is None:
        pending = (source.pending(spark), counted(classify, parts))
    else:
        numbers, read_classify = ranged_frame(spark, ranges, classify)
        pending = (numbers, counted(read_classify, parts))
    exchange = Exchange(spark, work, rows)
    exchange.write([pending])
    census = whole(parts.value)
    source.mark_early(census.runs, census.rejected)

    def read(table, key_names, wanted):
        return source.read_current(spark, table, key_names, wanted)

    def ranged(table, key_names):
        return source.current_ranges(table, key_names, parts_for)

    phases.begin("reducing and rendering", rows=census.rows)
    exchange.write(state_frames(spark, census.wanted, source.catalogue, read, ranged))
    numbers, objects = exchange.objects()
    passes = object_pass(source.catalogue)
    spill = spill_writer(str(work), lambda batches: passes(objects(batches)))
    commands, noted = spilled_commands(numbers.mapInArrow(spill, SPILLED.ddl).collect())
    return Reduced(commands, census.runs, sorted([*census.rejected, *noted]))
