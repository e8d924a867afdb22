"""One polling cycle, end to end: read the pending rows, reduce them on Spark, render the
commands in the executors, make the documents durable, then write the statuses."""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

import sqlalchemy as sa

from publisher.delivery.lock import PublisherLock, lock_name
from publisher.delivery.sinks import Sink, open_sink
from publisher.delivery.status import write_statuses
from publisher.errors import ConfigError, PublisherBusy
from publisher.model.catalogue import Catalogue, Table
from publisher.model.rows import PENDING
from publisher.model.statuses import StatusRange
from publisher.progress import CycleProgress, Silent
from publisher.reduce.loopback import loopback_user
from publisher.report import CycleReport
from publisher.settings import Settings
from publisher.source.cdc.formats import ChangeInput
from publisher.source.changes import StagedChanges, stage_changes
from publisher.source.database import connect
from publisher.source.dialects import Dialect
from publisher.source.event_log import EventLog, open_event_log, read_pending
from publisher.source.query_back import read_current
from publisher.source.schema import reflect_catalogue
from publisher.spark import spark_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class _Phases:
    """Shows each phase of a cycle on the progress display and records how long it took."""

    def __init__(self, report: CycleReport, progress: CycleProgress) -> None:
        self.report, self.progress = report, progress
        self.current: tuple[str, float] | None = None

    def begin(self, name: str, **counts: int) -> None:
        self.end()
        self.progress.phase(name, **counts)
        self.current = (name, time.monotonic())

    def end(self) -> None:
        if self.current is not None:
            name, started = self.current
            self.report.phases.append((name, time.monotonic() - started))
            self.current = None


def export(settings: Settings, out: str, progress: CycleProgress | None = None) -> CycleReport:
    """``xdspub export``: every pending row, as one cycle."""
    engine, dialect = connect(settings.db_url)
    log = open_event_log(engine, dialect, settings)
    sink = open_sink(out, settings.batch_size)
    lock = PublisherLock(engine, dialect, lock_name(settings))
    try:
        if not lock.try_acquire():
            raise PublisherBusy(f"another publisher is active on {settings.log_table} (lock {lock.name})")
        return run_cycle(settings, engine, dialect, log, sink, progress)
    finally:
        lock.release()
        engine.dispose()


def export_changes(
    settings: Settings, changes: ChangeInput, out: str, progress: CycleProgress | None = None
) -> CycleReport:
    """``xdspub export --source FORMAT``: the events of a change stream, as one cycle; the
    stream's position is saved only once the documents are durable."""
    folder = Path(out)
    if folder.suffix != ".xml" and folder.is_dir() and any(folder.glob("*.xml")):
        # Documents are named by their first event's place in the stream, which starts at
        # 1 each run: an earlier run's documents would be overwritten.
        raise ConfigError(f"{out} holds documents already: give change formats an empty folder")
    sink = open_sink(out, settings.batch_size)
    with tempfile.TemporaryDirectory(prefix="xdspub-changes-") as directory:
        staged = stage_changes(changes.events, Path(directory), settings.schema)
        source = _StagedSource(staged, changes.delivered)
        return _run(settings, source, sink, progress)


def run_cycle(
    settings: Settings,
    engine: sa.Engine,
    dialect: Dialect,
    log: EventLog,
    sink: Sink,
    progress: CycleProgress | None = None,
) -> CycleReport:
    """One cycle: the pending rows to documents in ``sink``, then their statuses."""
    return _run(settings, _EventLogSource(settings, engine, dialect, log), sink, progress)


class CycleSource(Protocol):
    """Where a cycle's rows come from, and where their outcome goes."""

    catalogue: Catalogue
    loopback_user: str | None  # rows this user made are consumed unpublished

    def pending(self, spark: SparkSession) -> DataFrame:
        """The rows to publish (rows.PENDING)."""

    def read_current(
        self, spark: SparkSession, table: Table, key_names: Sequence[str], wanted: list | None
    ) -> DataFrame:
        """The current rows of ``table`` for query-back (current.ReadTable)."""

    def acknowledge(self, ranges: list[StatusRange]) -> None:
        """The documents are durable: record the rows' outcome."""


class _EventLogSource:
    """The event log: rows read through JDBC, query-back against the published schema,
    statuses written back."""

    def __init__(self, settings: Settings, engine: sa.Engine, dialect: Dialect, log: EventLog) -> None:
        self.settings, self.engine, self.dialect, self.log = settings, engine, dialect, log
        self.catalogue = reflect_catalogue(
            engine, dialect, settings.schema, settings.log_table, settings.time_syntax
        )
        self.loopback_user = loopback_user(
            settings.publisher_user, engine.url.username, settings.allow_loopback
        )

    def pending(self, spark: SparkSession) -> DataFrame:
        return read_pending(spark, self.engine, self.log, self.dialect, self.settings)

    def read_current(
        self, spark: SparkSession, table: Table, key_names: Sequence[str], wanted: list | None
    ) -> DataFrame:
        return read_current(spark, self.engine, self.dialect, self.catalogue, table, key_names, wanted)

    def acknowledge(self, ranges: list[StatusRange]) -> None:
        write_statuses(self.engine, self.log, ranges, self.settings.delete_processed)


class _StagedSource:
    """A change stream staged as event log rows: no query-back (its events carry their
    values), and the stream's own acknowledgement in place of statuses."""

    loopback_user = None  # the formats carry no perpetrator

    def __init__(self, staged: StagedChanges, delivered: Callable[[], None]) -> None:
        self.staged, self.catalogue, self.delivered = staged, staged.catalogue, delivered

    def pending(self, spark: SparkSession) -> DataFrame:
        return spark.read.schema(PENDING.ddl).parquet(str(self.staged.directory))

    def read_current(
        self, spark: SparkSession, table: Table, key_names: Sequence[str], wanted: list | None
    ) -> DataFrame:
        raise AssertionError("change formats have no query-back events")

    def acknowledge(self, ranges: list[StatusRange]) -> None:
        self.delivered()


def _run(
    settings: Settings, source: CycleSource, sink: Sink, progress: CycleProgress | None
) -> CycleReport:
    progress = progress or Silent()
    try:
        return _cycle(settings, source, sink, progress)
    finally:
        progress.close()


def _cycle(
    settings: Settings, source: CycleSource, sink: Sink, progress: CycleProgress
) -> CycleReport:
    # Spark is imported here, not at module level, so the CLI's --help stays light.
    from pyspark.sql import functions as F

    from publisher.delivery.ordered import order_commands
    from publisher.model.rows import CLASSIFIED, NOTES, REDUCED
    from publisher.reduce import pipeline as p
    from publisher.reduce.current import current_state
    from publisher.reduce.status_ranges import id_runs, status_ranges
    from publisher.render.object_pass import object_pass

    started = time.monotonic()
    spark = spark_session(settings.spark_master)
    report = CycleReport(spark_start_seconds=time.monotonic() - started)
    progress.attach(spark)
    phases = _Phases(report, progress)
    phases.begin("reading and classifying")
    classify = p.classify_rows(
        source.catalogue, source.loopback_user, settings.future_events, settings.max_value_length
    )
    # Fixed once: the query-back requests, the object pass and the statuses all read it.
    classified = (
        source.pending(spark).mapInArrow(classify, CLASSIFIED.ddl).localCheckpoint(eager=True)
    )

    def read(table, key_names, wanted):
        return source.read_current(spark, table, key_names, wanted)

    census = p.census(classified)
    phases.begin("reducing and rendering", rows=census.rows)
    requests = p.query_back_requests(classified)
    state = current_state(spark, requests, census.shapes, source.catalogue, read)
    reduced = (
        p.by_object(classified, state, census.rows)
        .mapInArrow(object_pass(source.catalogue), REDUCED.ddl)
        .localCheckpoint(eager=True)
    )
    # One pass: how many commands, and the rows the object pass did not leave S.
    count, noted = reduced.agg(
        F.count("xml"),
        F.collect_list(F.when(F.col("xml").isNull(), F.struct(*NOTES.names))),
    ).first()
    commands = reduced.where("xml IS NOT NULL").select("cmd_time", "cmd_id", "xml")
    phases.begin("ordering commands", commands=count)
    ordered = order_commands(commands, count)
    report.commands = ordered.total
    phases.begin("writing documents", commands=ordered.total)
    report.documents = sink.publish(ordered)
    phases.begin("finding status ranges", documents=report.documents)

    # Few: the E and W rows.
    exceptions = sorted([*census.rejected, *(p.Note(**n.asDict()) for n in noted)])
    runs = [(census.low, census.high)] if census.contiguous else id_runs(classified)
    ranges = status_ranges(runs, ((r.record_id, r.status) for r in exceptions))
    for letter, low, high in ranges:  # a range is consecutive record_ids: its size is exact
        report.by_status[letter] += high - low + 1
    report.rows = sum(report.by_status.values())
    report.notes = [(r.record_id, r.status, r.reason) for r in exceptions]
    if not settings.dry_run:
        phases.begin("writing statuses")
        source.acknowledge(ranges)
    phases.end()
    return report
