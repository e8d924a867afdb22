"""A cycle's rows reduced on Spark (reduce/pipeline.py): read and classified in record_id
ranges, one shuffle by object, the object pass spilling its commands for the driver to
put in order (delivery/ordered.py)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from publisher.delivery.ordered import spill_writer, spilled_commands
from publisher.model.rows import CLASSIFIED, SPILLED
from publisher.plans import CycleSource, Phases, Reduced
from publisher.reduce import pipeline as p
from publisher.reduce.census import census_parts, counted, whole
from publisher.reduce.current import current_state
from publisher.render.object_pass import object_pass
from publisher.settings import Settings
from publisher.source.copy_read import ranges_through

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

    ranges = source.pending_ranges(parts_for(source.count()))
    parts = census_parts(spark.sparkContext)
    if ranges is None:
        classified = source.pending(spark).mapInArrow(counted(classify, parts), CLASSIFIED.ddl)
    else:
        numbers = spark.range(len(ranges), numPartitions=len(ranges))
        read_classify = ranges_through(ranges, classify)
        classified = numbers.mapInArrow(counted(read_classify, parts), CLASSIFIED.ddl)
    # Classified once, its census taken on the way; the object pass reads it after.
    classified = classified.localCheckpoint(eager=True)
    census = whole(parts.value)

    def read(table, key_names, wanted):
        return source.read_current(spark, table, key_names, wanted)

    def ranged(table, key_names):
        return source.current_ranges(table, key_names, parts_for)

    phases.begin("reducing and rendering", rows=census.rows)
    state = current_state(spark, census.wanted, source.catalogue, read, ranged)
    reports = (
        p.by_object(classified, state, census.rows)
        .mapInArrow(spill_writer(str(work), object_pass(source.catalogue)), SPILLED.ddl)
        .collect()
    )
    commands, noted = spilled_commands(reports)
    return Reduced(commands, census.runs, sorted([*census.rejected, *noted]))
