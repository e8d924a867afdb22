"""Statuses an operator changes by hand, ``xdspub skip`` and ``xdspub requeue``
(docs/statuses.md): under the publisher lock, so that no running publisher reads or marks
the rows meanwhile, in one transaction that counts the rows before it changes them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

from publisher.outcome.lock import PublisherLock, lock_name
from publisher.settings import Settings
from publisher.source.database import Database, connect
from publisher.source.event_log import EventLog, open_event_log


@dataclass(frozen=True)
class Changed:
    """How many rows were changed (or would be, with Dry Run), and the lowest and highest
    record_id among them (None: none)."""

    rows: int
    low: int | None
    high: int | None

    def summary(self, verb: str, past: str, dry_run: bool) -> str:
        """``skipped 1200 rows (record_id 301..1500)``; ``would skip ...`` with Dry Run."""
        where = f" (record_id {self.low}..{self.high})" if self.rows else ""
        return f"{f'would {verb}' if dry_run else past} {self.rows} rows{where}"


Change = Callable[[sa.Connection, Database, EventLog], Changed]


def change_under_lock(settings: Settings, change: Change) -> Changed:
    """``change`` run on the event log in one transaction, the publisher lock held
    (PublisherBusy, exit code 2, when another publisher holds it)."""
    with connect(settings.db_url) as db:
        lock = PublisherLock(db, lock_name(settings))
        try:
            log = open_event_log(db, settings)
            lock.acquire()
            with db.engine.begin() as conn:
                return change(conn, db, log)
        finally:
            lock.release()
