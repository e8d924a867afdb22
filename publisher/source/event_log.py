"""The event log table (PUBLISHER.md section 1): its columns, and the pending rows as a
Spark DataFrame read through Spark's JDBC source."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import sqlalchemy as sa

from publisher.errors import ConfigError
from publisher.model.columns import ddl
from publisher.model.events import EVENT_LOG_COLUMNS, Status
from publisher.settings import Settings
from publisher.source.dialects import Dialect
from publisher.source.jdbc import read_query

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

# What the JDBC read yields, whatever types the database reports.
PENDING_COLUMNS = (
    ("record_id", "BIGINT"),
    ("table_key", "STRING"),
    ("event_type_text", "STRING"),
    ("event_order", "DOUBLE"),
    ("perpetrator", "STRING"),
    ("table_name", "STRING"),
    ("column_name", "STRING"),
    ("old_value", "STRING"),
    ("new_value", "STRING"),
)
PENDING_SCHEMA = ddl(PENDING_COLUMNS)


@dataclass(frozen=True)
class EventLog:
    table: sa.Table
    by_role: dict[str, str]  # default column name -> the table's own column name

    def column(self, role: str) -> sa.Column:
        return self.table.c[self.by_role[role]]


def open_event_log(engine: sa.Engine, dialect: Dialect, settings: Settings) -> EventLog:
    """Reflect the event log; refuse (ConfigError) when it lacks any of the ten columns.

    Columns are matched by their default names when all ten are there. A table that uses
    customised names (fewer than half of the defaults) is read by position, in the fixed
    order the documents prescribe; otherwise a missing default name is a missing column."""
    schema, _, name = settings.log_table.rpartition(".")
    schema = (schema or settings.schema) if dialect.has_schemas else None
    try:
        table = sa.Table(name, sa.MetaData(), schema=schema, autoload_with=engine)
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


def pending_select(
    log: EventLog, dialect: Dialect, future_events: bool, limit: int | None
) -> sa.Select:
    """The pending rows of one cycle (section 4); with a limit, the first in processing
    order. Spark does the ordering otherwise."""
    c = log.column
    event_order = dialect.time_order(c("event_time"))
    query = sa.select(
        c("record_id").label("record_id"),
        c("table_key").label("table_key"),
        c("event_type").label("event_type_text"),  # text: 2.5 must not read as 2
        event_order.label("event_order"),
        c("perpetrator").label("perpetrator"),
        c("table_name").label("table_name"),
        c("column_name").label("column_name"),
        c("old_value").label("old_value"),
        c("new_value").label("new_value"),
    ).where(c("status") == Status.NEW)
    if future_events:
        query = query.where(event_order <= dialect.time_order(dialect.now()))
    if not limit:
        return query
    order = (event_order, c("record_id")) if future_events else (c("record_id"),)
    return query.order_by(*order).limit(limit)


def read_pending(
    spark: SparkSession, engine: sa.Engine, log: EventLog, dialect: Dialect, settings: Settings
) -> DataFrame:
    """The cycle's pending rows, read in record_id ranges. The caller fixes them (a local
    checkpoint) before it uses them twice, so that later steps never re-read the table."""
    query = pending_select(log, dialect, settings.future_events, settings.query_limit)
    pending = query.subquery()
    with engine.connect() as conn:
        low, high, rows = conn.execute(
            sa.select(sa.func.min(pending.c.record_id), sa.func.max(pending.c.record_id), sa.func.count())
        ).one()
    split = ("record_id", low, high, rows) if rows else None
    return read_query(spark, engine, dialect, query, PENDING_SCHEMA, split)


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
