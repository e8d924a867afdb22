"""``xdspub skip`` (docs/statuses.md, Cut-over from a running publisher): pending rows
consumed without publishing them, for a publisher that takes over an event log another
one has published so far ("process future changes only").

One transaction under the publisher lock: the bounds of the rows to skip, then one UPDATE
(or DELETE) of the pending rows within them, so that nothing outside what was counted is
touched and a row that stopped being pending is left alone."""

from __future__ import annotations

from datetime import datetime

import sqlalchemy as sa

from publisher.errors import ConfigError
from publisher.model.statuses import Status, is_deleted
from publisher.outcome.by_hand import Changed, change_under_lock
from publisher.settings import Settings
from publisher.source.database import Database
from publisher.source.event_log import EventLog
from publisher.source.schema import published_catalogue


def skip_pending(settings: Settings, through: int | None, before: datetime | None) -> Changed:
    """Consume (S, or delete with Delete Processed Rows) the pending rows whose record_id
    is at most ``through`` and whose event_time (UTC) is before ``before``, of the table
    selection's classes and child tables when there is one; with Dry Run, only count them."""
    if through is None and before is None:
        raise ConfigError("skip needs --through RECORD_ID or --before TIME")

    def skip(conn: sa.Connection, db: Database, log: EventLog) -> Changed:
        c = log.column
        pending = [c("status") == Status.NEW]
        if through is not None:
            pending.append(c("record_id") <= through)
        if before is not None:
            moment = db.dialect.time_order(sa.literal(before, sa.DateTime()))
            pending.append(db.dialect.time_order(c("event_time")) < moment)
        if settings.tables:
            catalogue = published_catalogue(settings, db)
            pending.append(c("table_name").in_([*catalogue.tables, *catalogue.child_tables]))
        record_id = c("record_id")
        bounds = sa.select(sa.func.count(), sa.func.min(record_id), sa.func.max(record_id))
        rows, low, high = conn.execute(bounds.where(*pending)).one()
        if not rows or settings.dry_run:
            return Changed(rows, low, high)
        within = [*pending, record_id.between(low, high)]
        if is_deleted(Status.DONE, settings.delete_processed):
            statement = log.table.delete().where(*within)
        else:
            statement = log.table.update().where(*within).values({c("status"): Status.DONE})
        return Changed(conn.execute(statement).rowcount, low, high)

    return change_under_lock(settings, skip)
