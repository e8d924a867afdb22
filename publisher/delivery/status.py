"""Status write-back (docs/statuses.md): one transaction per cycle, one statement per
status letter over ranges of record_ids, never one statement per row."""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa

from publisher.model.statuses import Status, StatusRange, is_deleted
from publisher.source.event_log import EventLog


def write_statuses(
    engine: sa.Engine, log: EventLog, ranges: Iterable[StatusRange], delete_processed: bool
) -> None:
    record_id, status = log.column("record_id"), log.column("status")
    in_range = sa.and_(
        record_id.between(sa.bindparam("low"), sa.bindparam("high")), status == Status.NEW
    )
    update = log.table.update().where(in_range).values({status: sa.bindparam("letter")})
    delete = log.table.delete().where(in_range)
    updates, deletes = [], []
    for letter, low, high in ranges:
        if is_deleted(letter, delete_processed):
            deletes.append({"low": low, "high": high})
        else:
            updates.append({"letter": letter, "low": low, "high": high})
    with engine.begin() as conn:
        if updates:
            conn.execute(update, updates)
        if deletes:
            conn.execute(delete, deletes)
