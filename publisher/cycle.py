"""One polling cycle, end to end: read the pending rows, reduce them and render the
commands (on Spark, or in the driver when they are few: publisher/plans), make the
documents durable, then write the statuses."""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import ExitStack, contextmanager
from functools import cached_property
from pathlib import Path
import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa

from publisher.delivery.lineage import LineageRecord
from publisher.delivery.lock import PublisherLock, lock_name
from publisher.delivery.sinks import Sink, open_sink
from publisher.delivery.status import EarlyStatuses, write_statuses
from publisher.delivery.work import WorkFolder, sweep_once
from publisher.errors import ConfigError, PublisherBusy, SinkError
from publisher.model.catalogue import Table
from publisher.model.rows import PENDING, Note
from publisher.model.statuses import Status, StatusRange
from publisher.plans import CycleSource, Phases, Reduced
from publisher.progress import CycleProgress, Silent
from publisher.reduce.loopback import loopback_user
from publisher.reduce.status_ranges import status_ranges
from publisher.report import CycleReport
from publisher.settings import Settings
from publisher.source.cdc.formats import ChangeInput
from publisher.source.changes import StagedChanges, stage_changes
from publisher.source.copy_read import CopyRanges
from publisher.source.database import connect
from publisher.source.dialects import Dialect
from publisher.source.event_log import (
    EventLog,
    PendingBounds,
    open_event_log,
    pending_bounds,
    pending_read,
    pending_rows,
)
from publisher.source.jdbc import JdbcQuery
from publisher.source.query_back import current_check, current_read, current_table
from publisher.source.schema import published_catalogue


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
    # A work folder in TMPDIR, so that one a killed export left is swept as beside --out.
    staging = Path(tempfile.gettempdir())
    sweep_once(staging)
    with WorkFolder(staging) as directory:
        staged = stage_changes(changes.events, directory, settings.schema)
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
    return _run(settings, EventLogSource(settings, engine, dialect, log), sink, progress)


class EventLogSource:
    """The event log: rows read through JDBC, query-back against the published schema,
    statuses written back."""

    def __init__(self, settings: Settings, engine: sa.Engine, dialect: Dialect, log: EventLog) -> None:
        self.settings, self.engine, self.dialect, self.log = settings, engine, dialect, log
        self.catalogue = published_catalogue(settings, engine, dialect)
        self.loopback_user = loopback_user(
            settings.publisher_user, engine.url.username, settings.allow_loopback
        )
        sql = dialect.early_statuses
        early = sql is not None and not (settings.dry_run or settings.delete_processed)
        self.early = EarlyStatuses(engine, log, sql) if early else None

    @cached_property
    def bounds(self) -> PendingBounds:
        return pending_bounds(self.engine, self.log, self.dialect, self.settings)

    def count(self) -> int:
        return self.bounds.rows

    def pending_read(self, parts: int) -> CopyRanges | JdbcQuery:
        return pending_read(self.engine, self.log, self.dialect, self.settings, self.bounds, parts)

    def pending_rows(self) -> pa.Table:
        return pending_rows(self.engine, self.log, self.dialect, self.settings, self.bounds)

    def current_read(
        self, table: Table, key_names: Sequence[str], wanted: list | None, parts: Callable[[int], int]
    ) -> CopyRanges | JdbcQuery:
        return current_read(self.engine, self.dialect, self.catalogue, table, key_names, wanted, parts)

    def current_rows(self, table: Table, key_names: Sequence[str], wanted: list | None) -> pa.Table:
        schema = self.catalogue.schema if self.dialect.has_schemas else None
        return current_table(self.engine, schema, table, key_names, wanted)

    def current_check(self, table: Table, key_names: Sequence[str], wanted: list | None) -> None:
        schema = self.catalogue.schema if self.dialect.has_schemas else None
        current_check(self.engine, schema, table, key_names, wanted)

    def mark_early(self, runs: list[tuple[int, int]], rejected: list[Note]) -> None:
        if self.early is not None:
            self.early.begin(status_ranges(runs, ((r.record_id, r.status) for r in rejected)))

    def acknowledge(self, ranges: list[StatusRange]) -> None:
        if self.early is not None and self.early.begun:
            try:
                # The rows are S or E already, in the open transaction: mark the others.
                self.early.commit([r for r in ranges if r[0] != Status.DONE])
                return
            except sa.exc.DBAPIError:
                self.early.close()  # lost or failed: the documents are durable, so afresh
        write_statuses(self.engine, self.log, ranges, self.settings.delete_processed)

    def close(self) -> None:
        if self.early is not None:
            self.early.close()


class _StagedSource:
    """A change stream staged as event log rows: no query-back (its events carry their
    values), and the stream's own acknowledgement in place of statuses."""

    loopback_user = None  # the formats carry no perpetrator

    def __init__(self, staged: StagedChanges, delivered: Callable[[], None]) -> None:
        self.staged, self.catalogue, self.delivered = staged, staged.catalogue, delivered

    def count(self) -> int:
        return self.staged.rows

    def pending_read(self, parts: int) -> StagedChanges:
        return self.staged

    def pending_rows(self) -> pa.Table:
        return pq.read_table(self.staged.directory, schema=PENDING.arrow)

    def current_read(
        self, table: Table, key_names: Sequence[str], wanted: list | None, parts: Callable[[int], int]
    ) -> None:
        raise AssertionError("change formats have no query-back events")

    def current_rows(self, table: Table, key_names: Sequence[str], wanted: list | None) -> pa.Table:
        raise AssertionError("change formats have no query-back events")

    def current_check(self, table: Table, key_names: Sequence[str], wanted: list | None) -> None:
        raise AssertionError("change formats have no query-back events")

    def mark_early(self, runs: list[tuple[int, int]], rejected: list[Note]) -> None:
        pass  # the stream is acknowledged whole, at the end

    def acknowledge(self, ranges: list[StatusRange]) -> None:
        self.delivered()

    def close(self) -> None:
        pass


def _run(
    settings: Settings, source: CycleSource, sink: Sink, progress: CycleProgress | None
) -> CycleReport:
    progress = progress or Silent()
    try:
        return _cycle(settings, source, sink, progress)
    finally:
        source.close()
        progress.close()


@contextmanager
def work_folder(sink: Sink) -> Iterator[Path]:
    """A Spark cycle's scratch folder beside the output (docs/delivery.md), removed after;
    the ones that killed cycles left there are swept first."""
    sweep_once(sink.work_parent)
    try:
        work = WorkFolder(sink.work_parent)
    except OSError as exc:
        raise SinkError(f"cannot write in {sink.work_parent}: {exc.strerror or exc}") from exc
    with work as path:
        yield path


def _publish_with_lineage(sink: Sink, reduced: Reduced, lineage: LineageRecord) -> int:
    """The documents and the lineage record written at once: the lines need only the
    documents' names, which the sink knows before writing them. Both are durable before
    the statuses; when the documents fail, the cycle's lines are taken back
    (docs/delivery.md, Lineage)."""
    documents = sink.documents(reduced.commands)
    with ThreadPoolExecutor(1) as pool:
        lines = pool.submit(lineage.write, reduced.fates, reduced.exceptions, documents)
        try:
            written = sink.publish(reduced.commands)
        except BaseException:
            wait([lines])
            lineage.take_back()
            raise
        lines.result()
    return written


def _cycle(
    settings: Settings, source: CycleSource, sink: Sink, progress: CycleProgress
) -> CycleReport:
    report = CycleReport()
    phases = Phases(report, progress)
    lineage = LineageRecord(settings.lineage) if settings.lineage else None
    with ExitStack() as scratch:
        if source.count() <= settings.small_cycle_rows:
            from publisher.plans.driver_plan import reduce_in_driver

            reduced = reduce_in_driver(settings, source, phases)
        else:
            # Spark loads only here, so the CLI's --help and driver cycles stay light.
            from publisher.plans.spark_plan import reduce_on_spark

            work = scratch.enter_context(work_folder(sink))
            reduced = reduce_on_spark(settings, source, work, phases)
        phases.begin("writing documents", commands=reduced.commands.total)
        report.commands = reduced.commands.total
        if lineage is None:
            report.documents = sink.publish(reduced.commands)
        else:
            report.documents = _publish_with_lineage(sink, reduced, lineage)
    ranges = status_ranges(reduced.runs, ((r.record_id, r.status) for r in reduced.exceptions))
    for letter, low, high in ranges:  # a range is consecutive record_ids: its size is exact
        report.by_status[letter] += high - low + 1
    report.rows = sum(report.by_status.values())
    report.notes = [(r.record_id, r.status, r.reason) for r in reduced.exceptions]
    report.loopback, report.loopback_user = reduced.loopback, source.loopback_user
    report.not_selected, report.excluded = reduced.not_selected, reduced.excluded
    if not settings.dry_run:
        phases.begin("writing statuses")
        source.acknowledge(ranges)
    phases.end()
    return report
