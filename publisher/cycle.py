"""One polling cycle, end to end: read the pending rows, reduce them on Spark, render the
commands in the executors, make the documents durable, then write the statuses."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import sqlalchemy as sa

from publisher.delivery.lock import PublisherLock, lock_name
from publisher.delivery.sinks import Sink, open_sink
from publisher.errors import PublisherBusy
from publisher.delivery.status import write_statuses
from publisher.model.events import Status
from publisher.settings import Settings
from publisher.source.database import connect
from publisher.source.dialects import Dialect
from publisher.source.event_log import EventLog, open_event_log, read_pending
from publisher.source.query_back import CURRENT_SCHEMA, current_rows
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

    def summary(self) -> str:
        letters = ", ".join(f"{k}={v}" for k, v in sorted(self.by_status.items())) or "none"
        return (
            f"{self.rows} rows read, {self.commands} commands, {self.documents} documents; "
            f"statuses {letters}"
        )

    @property
    def errors(self) -> list[tuple[int, str]]:
        return [(rid, why) for rid, letter, why in self.notes if letter == Status.ERROR]


def export(settings: Settings, out: str) -> CycleReport:
    """``xdspub export``: every pending row, as one cycle."""
    engine, dialect = connect(settings.db_url)
    log = open_event_log(engine, dialect, settings)
    sink = open_sink(out, settings.batch_size)
    lock = PublisherLock(engine, dialect, lock_name(settings))
    try:
        if not lock.try_acquire():
            raise PublisherBusy(f"another publisher is active on {settings.log_table} (lock {lock.name})")
        return run_cycle(settings, engine, dialect, log, sink)
    finally:
        lock.release()
        engine.dispose()


def run_cycle(
    settings: Settings, engine: sa.Engine, dialect: Dialect, log: EventLog, sink: Sink
) -> CycleReport:
    """One cycle: the pending rows to documents in ``sink``, then their statuses."""
    # Spark is imported here, not at module level, so the CLI's --help stays light.
    from publisher.reduce import pipeline as p
    from publisher.reduce.keys import parsed_keys
    from publisher.render.xds import RENDERED_SCHEMA, render_batches

    spark = spark_session(settings.spark_master)
    catalogue = reflect_catalogue(engine, dialect, settings.schema, settings.log_table)
    publisher_user = settings.publisher_user or engine.url.username
    events = read_pending(spark, engine, log, dialect, settings)
    columns = spark.createDataFrame(catalogue.column_rows(), COLUMNS_SCHEMA)
    classified = (
        events.transform(p.with_event_type)
        .transform(p.with_order(settings.future_events))
        .transform(p.with_keys(parsed_keys(events)))
        .transform(p.with_schema(columns))
        .transform(p.classify(settings.schema, publisher_user, settings.allow_loopback))
        .localCheckpoint(eager=True)
    )
    requests = (
        (r.table_name, r.canonical_key, [(k.column, k.value) for k in r.key_pairs])
        for r in p.query_back_requests(classified).toLocalIterator()
    )
    current = spark.createDataFrame(
        list(current_rows(engine, dialect, catalogue, requests)), CURRENT_SCHEMA
    )
    decided = p.decide(classified, current).localCheckpoint(eager=True)

    report = CycleReport()
    rendered = (
        decided.transform(p.commands(settings.schema, current))
        .mapInArrow(render_batches, RENDERED_SCHEMA)
        .orderBy("ord_time", "event_id")
        .toLocalIterator()
    )

    def counted():
        for row in rendered:
            report.commands += 1
            yield row.event_id, bytes(row.xml)

    report.documents = sink.write(counted())

    statuses = p.statuses(decided)
    ranges = [(r.status, r.low, r.high) for r in p.status_ranges(statuses).collect()]
    for letter, low, high in ranges:  # a range is consecutive record_ids: its size is exact
        report.by_status[letter] += high - low + 1
    report.rows = sum(report.by_status.values())
    report.notes = [
        (r.record_id, r.status, r.reason)
        for r in statuses.where("reason IS NOT NULL").orderBy("record_id").collect()
    ]
    if not settings.dry_run:
        write_statuses(engine, log, ranges, settings.delete_processed)
    return report
