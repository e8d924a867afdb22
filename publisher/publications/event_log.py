"""The event log as a publication (docs/event-log.md): rows read through JDBC, query-back
against the published schema, statuses written back once the documents are durable."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from functools import cached_property

import pyarrow as pa
import sqlalchemy as sa

from publisher.errors import ConfigError
from publisher.model.catalogue import Catalogue
from publisher.model.rows import Note
from publisher.model.statuses import Status, StatusRange
from publisher.outcome.record import publication_name
from publisher.outcome.lock import PublisherLock, lock_name
from publisher.outcome.status import EarlyStatuses, write_statuses
from publisher.plans import Phases
from publisher.publications import Planned, Publication, WorkFolder, planned_rows
from publisher.reduce.loopback import loopback_user
from publisher.reduce.status_ranges import status_ranges
from publisher.settings import Settings
from publisher.source.copy_read import CopyRanges
from publisher.source.database import Database, connect, libpq_conninfo
from publisher.source.event_log import (
    EventLog,
    PendingBounds,
    open_event_log,
    pending_bounds,
    pending_probe,
    pending_read,
    pending_rows,
)
from publisher.source.jdbc import JdbcQuery
from publisher.source.query_back import CurrentRows
from publisher.source.schema import published_catalogue


class EventLogPublication(Publication):
    """The event log of ``settings``: each cycle reflects the published schema afresh,
    reads the pending rows (the plans' CycleSource), and writes their statuses."""

    def __init__(self, settings: Settings, db: Database, log: EventLog) -> None:
        self.settings, self.db, self.log = settings, db, log
        self.lock = PublisherLock(db, lock_name(settings))
        self.record_name = publication_name(db.identity, settings, triggerless=False)
        self.loopback_user = loopback_user(settings.publisher_user, db.engine.url.username, settings.allow_loopback)
        # The first cycle of a run whose publisher user was taken from the URL.
        self.first_contact = settings.publisher_user is None
        sql = db.dialect.early_statuses
        self.early_sql = sql if not (settings.dry_run or settings.delete_processed) else None
        self.early: EarlyStatuses | None = None

    @cached_property
    def catalogue(self) -> Catalogue:
        """The published schema, reflected afresh each cycle: a column added while the
        service runs is published from the next cycle on."""
        return published_catalogue(self.settings, self.db)

    @cached_property
    def current(self) -> CurrentRows:
        return CurrentRows(self.db, self.catalogue)

    def start(self) -> int:
        for name in ("catalogue", "current"):
            self.__dict__.pop(name, None)
        self.bounds: PendingBounds = pending_bounds(self.db, self.log, self.settings)
        self.early = EarlyStatuses(self.db.engine, self.log, self.early_sql) if self.early_sql else None
        self.ranges: list[StatusRange] = []
        return self.count()

    def waiting(self) -> tuple[int, float]:
        query = pending_probe(self.log, self.db.dialect, self.settings.future_events)
        with self.db.engine.connect() as conn:
            count, lag = conn.execute(query).one()
        return count, max(0.0, float(lag or 0))

    def wake_channel(self) -> tuple[str, str] | str | None:
        table = self.log.table
        if not self.db.dialect.wake_channel_query:
            return None
        with self.db.engine.connect() as conn:
            channel = conn.execute(
                sa.text(self.db.dialect.wake_channel_query), {"schema": table.schema, "table": table.name}
            ).scalar()
        if channel is None:
            return "the event log has no wake-up trigger (init-db --wake)"
        return libpq_conninfo(self.db.engine), channel

    # -- what the plans read (plans.CycleSource)

    def count(self) -> int:
        return self.bounds.rows

    def pending_read(self, parts: int) -> CopyRanges | JdbcQuery:
        return pending_read(self.db, self.log, self.settings, self.bounds, parts)

    def pending_rows(self) -> pa.Table:
        return pending_rows(self.db, self.log, self.settings, self.bounds)

    def mark_early(self, runs: list[tuple[int, int]], rejected: list[Note]) -> None:
        if self.early is not None:
            self.early.begin(status_ranges(runs, ((r.record_id, r.status) for r in rejected)))

    # -- the cycle

    def plan(self, phases: Phases, work: WorkFolder) -> Planned:
        planned, self.ranges = planned_rows(self.settings, self, phases, work)
        report = phases.report
        if self.first_contact and report.rows:
            if report.loopback == report.rows:
                # The usual first try, changes made as the user the publisher connects as:
                # consumed, only SQL could put them back (docs/statuses.md, Loopback).
                raise ConfigError(f"nothing was published or marked: {report.loopback_hint()}")
            self.first_contact = False
        return planned

    def class_objects(self, deletes: Mapping[str, int]) -> dict[str, int]:
        # The rows are gone from the table already: what it holds now, and them.
        return {name: self.current.count(name) + count for name, count in deletes.items()}

    def acknowledge(self, phases: Phases) -> None:
        phases.begin("writing statuses")
        if self.early is not None and self.early.begun:
            try:
                # The rows are S or E already, in the open transaction: mark the others.
                self.early.commit([r for r in self.ranges if r[0] != Status.DONE])
                return
            except sa.exc.DBAPIError:
                self.early.close()  # lost or failed: the documents are durable, so afresh
        write_statuses(self.db.engine, self.log, self.ranges, self.settings.delete_processed)

    def close(self) -> None:
        if self.early is not None:
            self.early.close()


@contextmanager
def opened(settings: Settings) -> Iterator[EventLogPublication]:
    """``xdspub export``'s event log: connected, and the publisher lock held (PublisherBusy when another publisher has it)."""
    with connect(settings.db_url) as db:
        publication = EventLogPublication(settings, db, open_event_log(db, settings))
        try:
            publication.lock.acquire()
            yield publication
        finally:
            publication.lock.release()
