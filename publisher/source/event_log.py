"""The event log table (docs/event-log.md): its columns, and its pending rows, read by the
driver or described for the Python workers to read."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa
import sqlalchemy as sa

from publisher.errors import ConfigError
from publisher.model.events import EVENT_LOG_COLUMNS, TABLE_KEY_LIMIT
from publisher.model.rows import PENDING
from publisher.model.statuses import Status
from publisher.settings import Settings
from publisher.source.copy_read import CopyRanges, copy_ranges, even_ranges
from publisher.source.database import Database
from publisher.source.dialects import Dialect
from publisher.source.jdbc import JdbcQuery, jdbc_query
from publisher.source.text import database_text

# Text columns a row could make huge: each is read up to the Maximum Value Length and one
# character more, so that a longer value is seen (and its row rejected) without its bulk.
_BOUNDED = ("table_key", "perpetrator", "table_name", "column_name", "old_value", "new_value")

# rows.PENDING columns read from another event log column: event_type as text, so that 2.5
# is never read as 2.
_ROLES = {"event_type_text": "event_type"}


@dataclass(frozen=True)
class EventLog:
    table: sa.Table
    by_role: dict[str, str]  # default column name -> the table's own column name

    def column(self, role: str) -> sa.Column:
        return self.table.c[self.by_role[role]]


def open_event_log(db: Database, settings: Settings) -> EventLog:
    """Reflect the event log; refuse (ConfigError) when it lacks any of the ten columns.

    Columns are matched by their default names when all ten are there. A table that uses
    customised names (fewer than half of the defaults) is read by position, in the fixed
    order the documents prescribe; otherwise a missing default name is a missing column."""
    schema, _, name = settings.log_table.rpartition(".")
    schema = db.dialect.schema_named(schema or settings.schema)
    try:
        table = sa.Table(name, sa.MetaData(), schema=schema, autoload_with=db.engine)
    except sa.exc.NoSuchTableError:
        raise ConfigError(f"event log table {settings.log_table!r} does not exist") from None
    names = [c.name for c in table.columns]
    if set(EVENT_LOG_COLUMNS) <= set(names):
        by_role = {role: role for role in EVENT_LOG_COLUMNS}
    elif (
        len(names) >= len(EVENT_LOG_COLUMNS)
        and 2 * len(set(EVENT_LOG_COLUMNS) & set(names)) < len(EVENT_LOG_COLUMNS)
    ):
        by_role = dict(zip(EVENT_LOG_COLUMNS, names))
    else:
        missing = [c for c in EVENT_LOG_COLUMNS if c not in names]
        raise ConfigError(
            f"event log {table.fullname!r} lacks column(s) {', '.join(missing)}: "
            f"it has {len(names)} of the {len(EVENT_LOG_COLUMNS)} the publisher needs"
        )
    return EventLog(table, by_role)


def _pending_columns(log: EventLog, dialect: Dialect, settings: Settings) -> list[sa.ColumnElement]:
    """The rows.PENDING columns of event log rows, long texts cut past the Maximum Value
    Length."""
    c = log.column
    longest = settings.max_value_length + 1

    def column(name: str) -> sa.ColumnElement:
        if name == "event_order":
            return dialect.time_order(c("event_time")).label(name)
        role = _ROLES.get(name, name)
        value = c(role)
        if role == "table_key":
            value = dialect.first_characters(value, min(longest, TABLE_KEY_LIMIT + 1))
        elif role in _BOUNDED:
            value = dialect.first_characters(value, longest)
        return value.label(name)

    return list(map(column, PENDING.names))


def pending_select(log: EventLog, dialect: Dialect, settings: Settings) -> sa.Select:
    """The pending rows of one cycle (rows.PENDING; docs/event-log.md); with a Query Limit,
    the first in processing order. Spark does the ordering otherwise."""
    c = log.column
    event_order = dialect.time_order(c("event_time"))
    query = sa.select(*_pending_columns(log, dialect, settings)).where(c("status") == Status.NEW)
    if settings.future_events:
        query = query.where(event_order <= dialect.time_order(dialect.now()))
    if not settings.query_limit:
        return query
    order = (event_order, c("record_id")) if settings.future_events else (c("record_id"),)
    return query.order_by(*order).limit(settings.query_limit)


@dataclass(frozen=True)
class PendingBounds:
    """How many rows a cycle reads, and their lowest and highest record_id."""

    rows: int
    low: int | None
    high: int | None


def pending_bounds(db: Database, log: EventLog, settings: Settings) -> PendingBounds:
    pending = pending_select(log, db.dialect, settings).subquery()
    with db.engine.connect() as conn:
        low, high, rows = conn.execute(
            sa.select(sa.func.min(pending.c.record_id), sa.func.max(pending.c.record_id), sa.func.count())
        ).one()
    return PendingBounds(rows, low, high)


def pending_read(db: Database, log: EventLog, settings: Settings, bounds: PendingBounds,
                 parts: int) -> CopyRanges | JdbcQuery:
    """The cycle's pending rows for the Python workers to read: in ``parts`` record_id
    ranges by COPY (source/copy_read.py) where the database has it, else through Spark's
    JDBC source, in record_id ranges when they are many. The cycle reads them once (into
    the work folder's files, plans/exchange.py), so that later steps never re-read the
    table."""
    ranges = _pending_ranges(db, log, settings, bounds, parts)
    if ranges is not None:
        return ranges
    split = ("record_id", bounds.low, bounds.high, bounds.rows) if bounds.rows else None
    return jdbc_query(db, pending_select(log, db.dialect, settings), PENDING.arrow, split)


def _pending_ranges(db: Database, log: EventLog, settings: Settings, bounds: PendingBounds,
                    parts: int) -> CopyRanges | None:
    if not db.dialect.copy_reads or not bounds.rows:
        return None
    ranges = even_ranges(bounds.low, bounds.high, parts)
    return copy_ranges(db.engine, pending_select(log, db.dialect, settings), PENDING.arrow, "record_id", ranges)


def pending_rows(db: Database, log: EventLog, settings: Settings,
                 bounds: PendingBounds) -> pa.Table:
    """The cycle's pending rows (rows.PENDING) read by the driver, for a cycle of few rows:
    with COPY where the database has it, as the Python workers read a big cycle's."""
    ranges = _pending_ranges(db, log, settings, bounds, 1)
    if ranges is not None:
        return pa.Table.from_batches(list(ranges.read(0)), PENDING.arrow)
    return selected_pending_rows(db, log, settings)


def selected_pending_rows(db: Database, log: EventLog, settings: Settings) -> pa.Table:
    """The cycle's pending rows (rows.PENDING), through SQLAlchemy: any database."""

    with db.engine.connect() as conn:
        result = conn.execute(pending_select(log, db.dialect, settings)).mappings()
        rows = [PENDING.row(**{name: _pending_value(name, v) for name, v in row.items()}) for row in result]
    return pa.Table.from_batches([PENDING.batch(rows)])


def _pending_value(name: str, value: object) -> object:
    """A rows.PENDING value as the database driver gave it: the texts as text."""
    if name == "record_id" or value is None:
        return value
    return float(value) if name == "event_order" else database_text(value)


def chosen_rows(db: Database, log: EventLog, settings: Settings, record_ids: Sequence[int],
                pending: bool) -> tuple[pa.Table, dict[int, str | None]]:
    """The rows ``xdspub explain`` looks at (rows.PENDING): those of ``record_ids`` whatever
    their status, and the pending ones with ``pending``; and each one's status as logged."""
    c = log.column
    wanted = []
    if record_ids:
        wanted.append(c("record_id").in_(sorted(set(record_ids))))
    if pending:
        wanted.append(c("status") == Status.NEW)
    if not wanted:
        return PENDING.arrow.empty_table(), {}
    query = sa.select(*_pending_columns(log, db.dialect, settings), c("status").label("logged_status"))
    query = query.where(sa.or_(*wanted)).order_by(c("record_id"))
    with db.engine.connect() as conn:
        result = conn.execute(query).mappings()
        rows, logged = [], {}
        for row in result:
            logged[row["record_id"]] = _pending_value("logged_status", row["logged_status"])
            rows.append(PENDING.row(**{name: _pending_value(name, row[name]) for name in PENDING.names}))
    return pa.Table.from_batches([PENDING.batch(rows)]), logged


def pending_probe(log: EventLog, dialect: Dialect, future_events: bool) -> sa.Select:
    """How many rows are pending, and how many seconds ago the oldest of them happened:
    one cheap query, computed by the database whatever its time format."""
    c = log.column
    event_order = dialect.time_order(c("event_time"))
    now_order = dialect.time_order(dialect.now())
    lag = (now_order - sa.func.min(event_order)) * dialect.time_unit_seconds
    query = sa.select(sa.func.count(), lag).where(c("status") == Status.NEW)
    if future_events:
        query = query.where(event_order <= now_order)
    return query
