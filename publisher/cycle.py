"""One polling cycle, end to end: read the pending rows, reduce them on Spark, render the
commands in the executors, make the documents durable, then write the statuses."""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

import sqlalchemy as sa

from publisher.delivery.lock import PublisherLock, lock_name
from publisher.delivery.sinks import Sink, open_sink
from publisher.errors import PublisherBusy
from publisher.delivery.status import write_statuses
from publisher.model.events import Status
from publisher.progress import CycleProgress, Silent
from publisher.settings import Settings
from publisher.source.database import connect
from publisher.source.dialects import Dialect
from publisher.source.event_log import EventLog, open_event_log, read_pending
from publisher.source.query_back import read_current
from publisher.source.schema import reflect_catalogue
from publisher.spark import spark_session

COLUMNS_SCHEMA = "table_name STRING, column_name STRING, ordinal INT, xds_type STRING, is_char BOOLEAN"


@dataclass
class CycleReport:
    rows: int = 0
    commands: int = 0
    documents: int = 0
    by_status: Counter = field(default_factory=Counter)
    notes: list[tuple[int, str, str]] = field(default_factory=list)  # record_id, letter, why
    spark_start_seconds: float = 0.0  # starting the Spark session (0 when it was warm)
    phases: list[tuple[str, float]] = field(default_factory=list)  # (phase, seconds) in order

    @property
    def seconds(self) -> float:
        """The cycle itself, after the session was up: its phases follow one another."""
        return sum(seconds for _, seconds in self.phases)

    def timing(self) -> str:
        text = f"Spark start {self.spark_start_seconds:.2f} s, cycle {self.seconds:.2f} s"
        steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.phases)
        return f"{text} ({steps})" if steps else text

    def summary(self) -> str:
        letters = ", ".join(f"{k}={v}" for k, v in sorted(self.by_status.items())) or "none"
        return (
            f"{self.rows} rows read, {self.commands} commands, {self.documents} documents; "
            f"statuses {letters}"
        )

    @property
    def errors(self) -> list[tuple[int, str]]:
        return [(rid, why) for rid, letter, why in self.notes if letter == Status.ERROR]


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


def run_cycle(
    settings: Settings,
    engine: sa.Engine,
    dialect: Dialect,
    log: EventLog,
    sink: Sink,
    progress: CycleProgress | None = None,
) -> CycleReport:
    """One cycle: the pending rows to documents in ``sink``, then their statuses."""
    progress = progress or Silent()
    try:
        return _cycle(settings, engine, dialect, log, sink, progress)
    finally:
        progress.close()


def _cycle(
    settings: Settings,
    engine: sa.Engine,
    dialect: Dialect,
    log: EventLog,
    sink: Sink,
    progress: CycleProgress,
) -> CycleReport:
    # Spark is imported here, not at module level, so the CLI's --help stays light.
    from publisher.delivery.ordered import order_commands
    from publisher.reduce import pipeline as p
    from publisher.reduce.current import current_state
    from publisher.reduce.keys import parsed_keys, with_plain_keys
    from publisher.reduce.status_ranges import status_ranges

    started = time.monotonic()
    spark = spark_session(settings.spark_master)
    report = CycleReport(spark_start_seconds=time.monotonic() - started)
    progress.attach(spark)
    phases = _Phases(report, progress)
    phases.begin("reading the event log")
    catalogue = reflect_catalogue(engine, dialect, settings.schema, settings.log_table)
    publisher_user = settings.publisher_user or engine.url.username
    # Fixed once, with the plain keys split: the key parser and the classification both read it.
    events = (
        read_pending(spark, engine, log, dialect, settings)
        .transform(with_plain_keys)
        .localCheckpoint(eager=True)
    )
    phases.begin("classifying")
    columns = spark.createDataFrame(catalogue.column_rows(), COLUMNS_SCHEMA)
    classified = (
        events.transform(p.with_event_type)
        .transform(p.with_order(settings.future_events))
        .transform(p.with_keys(parsed_keys(events)))
        .transform(p.with_schema(columns))
        .transform(p.classify(settings.schema, publisher_user, settings.allow_loopback))
        .localCheckpoint(eager=True)
    )

    def read(table, key_names, wanted):
        return read_current(spark, engine, dialect, catalogue, table, key_names, wanted)

    phases.begin("reducing")
    state = current_state(spark, p.query_back_requests(classified), catalogue, read)
    decided = p.decide(classified, state).localCheckpoint(eager=True)

    rows_read = decided.count()
    phases.begin("ordering commands", rows=rows_read)
    commands = order_commands(decided.transform(p.command_rows(settings.schema)), rows_read)
    report.commands = commands.total
    phases.begin("rendering and writing", commands=commands.total)
    report.documents = sink.publish(commands)
    phases.begin("finding status ranges", documents=report.documents)

    statuses = p.statuses(decided)
    ranges = status_ranges(statuses)
    for letter, low, high in ranges:  # a range is consecutive record_ids: its size is exact
        report.by_status[letter] += high - low + 1
    report.rows = sum(report.by_status.values())
    report.notes = [
        (r.record_id, r.status, r.reason)
        for r in statuses.where("reason IS NOT NULL").orderBy("record_id").toLocalIterator()
    ]
    if not settings.dry_run:
        phases.begin("writing statuses")
        write_statuses(engine, log, ranges, settings.delete_processed)
    phases.end()
    return report
