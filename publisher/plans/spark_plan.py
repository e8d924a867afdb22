"""A cycle's rows reduced on Spark (reduce/pipeline.py): read and classified in record_id
ranges, one shuffle by object through the work folder (plans/exchange.py), the object pass
spilling its commands for the driver to put in order (delivery/ordered.py)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from publisher.delivery.lineage import consumed_fates
from publisher.delivery.ordered import spilled_commands, spilled_fates
from publisher.errors import SinkError
from publisher.model.rows import SPILLED
from publisher.plans import CycleSource, Phases, Reduced
from publisher.plans.exchange import Exchange, read_ranges
from publisher.plans.reads import ReadTable, frame, state_frames
from publisher.plans.tasks import census_parts, counted, spill_writer
from publisher.reduce import pipeline as p
from publisher.reduce.census import whole
from publisher.reduce.current import Unread, Wanted, state_reads
from publisher.reduce.references import ordered_creations, referenced_classes
from publisher.render.object_pass import object_pass
from publisher.settings import Settings
from publisher.source.query_back import isolated


if TYPE_CHECKING:
    from pyspark.sql import SparkSession


def _state(spark: SparkSession, exchange: Exchange, source: CycleSource, wanted: Wanted,
           read: ReadTable) -> Unread:
    """The query-back state written to the exchange, in one job; when that job fails, what
    the database refuses to read, learnt in the driver (a keyed read object by object), and
    the job again without it (docs/statuses.md, Read failures)."""
    try:
        exchange.write(state_frames(spark, wanted, source.catalogue, read))
        return Unread()
    except SinkError:
        raise
    except Exception:
        unread = Unread()
        for table, part, keyed in state_reads(source.catalogue, wanted):
            _, failed = isolated(partial(source.current.check, part, part.key_columns), part, keyed)
            unread.add(table, failed)
        if not unread:
            raise  # not a read the database refuses
    exchange.write(state_frames(spark, unread.readable(wanted), source.catalogue, read))
    return unread


def reduce_on_spark(settings: Settings, source: CycleSource, work: Path, phases: Phases) -> Reduced:
    """The cycle's commands and statuses, on the process's Spark session (started by the
    cycle: plans/session.start_spark); the object pass spills into ``work``."""
    from publisher.plans.session import spark_session

    spark = spark_session(settings.spark_master)
    phases.begin("reading and classifying")
    classify = p.classify_rows(
        source.catalogue, source.loopback_user, settings.future_events, settings.max_value_length
    )
    parts_for = read_ranges(spark)

    rows = source.count()
    parts = census_parts(spark.sparkContext)
    exchange = Exchange(spark, work, rows)
    lineage = settings.lineage is not None
    exchange.write([frame(spark, source.pending_read(parts_for(rows)), counted(classify, parts, lineage, referenced_classes(source.catalogue)))])
    census = whole(parts.value)
    source.mark_early(census.runs, census.rejected)

    def read(table, key_names, wanted):
        return source.current.read(table, key_names, wanted, parts_for)

    phases.begin("reducing and rendering", rows=census.rows)
    unread = _state(spark, exchange, source, census.wanted, read)
    numbers, objects = exchange.objects()
    passes = object_pass(source.catalogue, lineage, unread, ordered_creations(census.marks))
    spill = spill_writer(str(work), lambda batches: passes(objects(batches)))
    reports = numbers.mapInArrow(spill, SPILLED.ddl).collect()
    commands, noted = spilled_commands(reports)
    fates = pa.concat_tables([consumed_fates(census.consumed), spilled_fates(reports)]) if lineage else None
    return Reduced(commands, census.runs, sorted([*census.rejected, *noted]),
                   census.loopback, census.not_selected, census.excluded, fates)
