"""Status write-back (docs/statuses.md): one transaction per cycle, one statement per
status letter over ranges of record_ids, never one statement per row.

Where the database lets an uncommitted UPDATE of the rows read block nothing the triggers
do (Dialect.early_statuses), a Spark cycle starts that transaction as soon as its rows are
classified (EarlyStatuses) and commits it once the documents are durable: the UPDATE runs
while the commands are reduced and rendered, and a crash before the commit rolls it back.
Should that transaction fail or be lost, the cycle writes the statuses afresh, as without
it, once the documents are durable."""

from __future__ import annotations

import threading
from collections.abc import Iterable

import sqlalchemy as sa

from publisher.model.statuses import Status, StatusRange, is_deleted
from publisher.source.dialects import EarlyStatusSql
from publisher.source.event_log import EventLog


def write_ranges(conn: sa.Connection, log: EventLog, ranges: Iterable[StatusRange],
                 delete_processed: bool, was: str = Status.NEW, *also: sa.ColumnElement[bool]) -> int:
    """``ranges``' letters on their rows whose status is ``was`` and of which ``also`` holds
    (or those rows deleted); how many rows changed."""
    record_id, status = log.column("record_id"), log.column("status")
    in_range = sa.and_(
        record_id.between(sa.bindparam("low"), sa.bindparam("high")), status == was, *also
    )
    update = log.table.update().where(in_range).values({status: sa.bindparam("letter")})
    delete = log.table.delete().where(in_range)
    updates, deletes = [], []
    for letter, low, high in ranges:
        if is_deleted(letter, delete_processed):
            deletes.append({"low": low, "high": high})
        else:
            updates.append({"letter": letter, "low": low, "high": high})
    changed = conn.execute(update, updates).rowcount if updates else 0
    return changed + (conn.execute(delete, deletes).rowcount if deletes else 0)


def write_statuses(engine: sa.Engine, log: EventLog, ranges: Iterable[StatusRange],
                   delete_processed: bool) -> None:
    with engine.begin() as conn:
        write_ranges(conn, log, ranges, delete_processed)


class EarlyStatuses:
    """A cycle's statuses in one transaction begun early: ``begin`` marks the rows read as
    the census knows them (S, and E for the rows rejected on reading) in a thread of its
    own; ``commit`` marks the rows the object pass found otherwise (W, E: they are S by
    then, in this transaction) and commits; ``close`` rolls back what was not committed."""

    def __init__(self, engine: sa.Engine, log: EventLog, sql: EarlyStatusSql) -> None:
        self.engine, self.log, self.sql = engine, log, sql
        self.conn: sa.Connection | None = None
        self.thread: threading.Thread | None = None
        self.failure: BaseException | None = None

    def begin(self, ranges: list[StatusRange]) -> None:
        self.conn = self.engine.connect()
        self.conn.begin()
        self.conn.execute(sa.text(self.sql.prepare))
        self.thread = threading.Thread(target=self._mark, args=(ranges,), daemon=True)
        self.thread.start()

    def _mark(self, ranges: list[StatusRange]) -> None:
        try:
            write_ranges(self.conn, self.log, ranges, False)
        except BaseException as exc:  # raised in the cycle's thread, by commit
            self.failure = exc

    def _wait(self) -> None:
        if self.thread is not None:
            self.thread.join()
            self.thread = None

    @property
    def begun(self) -> bool:
        return self.conn is not None

    def commit(self, exceptions: list[StatusRange]) -> None:
        self._wait()
        if self.failure is not None:
            raise self.failure
        # Only rows this transaction made S: another session's S stays.
        mine = sa.text(self.sql.changed_here)
        write_ranges(self.conn, self.log, exceptions, False, Status.DONE, mine)
        self.conn.commit()

    def close(self) -> None:
        self._wait()
        if self.conn is not None:
            self.conn.close()  # rolls back an open transaction
            self.conn = None
