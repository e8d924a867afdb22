"""What differs between databases, as data: one Dialect per SQLAlchemy backend."""

from __future__ import annotations

import base64
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL

from publisher.errors import ConfigError
from publisher.source.text import decoded_text


@dataclass(frozen=True)
class EarlyStatusSql:
    """What a status transaction begun early needs (delivery/status.py)."""

    prepare: str  # readies the session for a transaction left open while the cycle runs
    changed_here: str  # a condition true of the rows this transaction changed


@dataclass(frozen=True)
class Dialect:
    name: str  # SQLAlchemy backend name
    jdbc_url: str  # format string over the parts of the SQLAlchemy URL
    jdbc_driver: str
    jar: str  # from Debian's packages, installed by install.sh
    default_port: int | None
    has_schemas: bool
    database_is_file: bool  # the URL's database is a path (SQLite), not a server's name
    sql_dir: str  # folder under sql/
    max_bind_params: int
    # A number that orders event_time values, for future-event processing, and how many
    # seconds one of its units is.
    time_order: Callable[[sa.ColumnElement], sa.ColumnElement]
    time_unit_seconds: float
    now: Callable[[], sa.ColumnElement]
    # A text column cut to its first n characters in the database (and whole when shorter),
    # so that a huge value never leaves it whole (docs/parameters.md, Maximum Value Length).
    first_characters: Callable[[sa.ColumnElement, int], sa.ColumnElement]
    # Runs a script of several statements (the files under sql/) on a DBAPI connection.
    run_script: Callable[[Any, str], None]
    # One publisher per event log: SQL that tries to take a lock named :name for the life
    # of its session and returns a true value when it did; None: a lock file beside the
    # database (SQLite).
    lock_query: str | None = None
    # Prepares each new DBAPI connection (SQLite: the base64 function its triggers call, and
    # foreign keys enforced).
    on_connect: Callable[[Any], None] | None = None
    connect_args: dict[str, Any] = field(default_factory=dict)
    # The Python workers read big queries themselves with COPY (source/copy_read.py),
    # instead of Spark's JDBC source.
    copy_reads: bool = False
    # Text may be stored that is not UTF-8 (SQLite): Spark's JDBC source reads text columns
    # as bytes, decoded by our rule (source/text.py), never replaced by its own.
    text_as_bytes: bool = False
    # A Spark cycle's status UPDATE may run, uncommitted, while it reduces and renders
    # (delivery/status.py), where the rows it locks block nothing the triggers do (no gap
    # locks, no lock on the whole database). None: statuses are written at the end.
    early_statuses: EarlyStatusSql | None = None
    # SQL giving the channel on which the event log (:schema, None for the session's own,
    # and :table) announces logged rows, when it has the wake-up trigger of sql/<dialect>/
    # wake.sql; None: the database has none, and the service only polls.
    wake_channel_query: str | None = None

    def jdbc(self, url: URL) -> str:
        database = url.database or ""
        if self.database_is_file:
            if database in ("", ":memory:"):
                raise ConfigError(f"{url.render_as_string()}: Spark needs a database file, not memory")
            # Absolute: the executors may open it from another working directory.
            database = os.path.abspath(database)
        return self.jdbc_url.format(
            host=url.host or "127.0.0.1",
            port=url.port or self.default_port or "",
            database=database,
        )


def _substr(column: sa.ColumnElement, n: int) -> sa.ColumnElement:
    return sa.func.substr(column, 1, n)


def _sqlite_first_characters(column: sa.ColumnElement, n: int) -> sa.ColumnElement:
    # SQLite's substr() and length() stop at a NUL: a value holding one is read whole
    # unless its text before the NUL is already too long, so nothing after a NUL is lost.
    return sa.case((sa.func.length(column) > n, _substr(column, n)), else_=column)


def _sqlite_prepare(connection: sqlite3.Connection) -> None:
    # SQLite has no Base64 function; the documents require binary values Base64-encoded.
    connection.create_function(
        "base64",
        1,
        lambda blob: None if blob is None else base64.b64encode(bytes(blob)).decode("ascii"),
        deterministic=True,
    )
    # SQLite enforces foreign keys per connection, and only when asked: ON DELETE CASCADE
    # of the sample's child tables (docs/triggers.md) needs it.
    connection.execute("PRAGMA foreign_keys = ON")
    connection.text_factory = decoded_text  # text that is not UTF-8 (source/text.py)


SQLITE = Dialect(
    name="sqlite",
    jdbc_url="jdbc:sqlite:{database}",
    jdbc_driver="org.sqlite.JDBC",
    jar="/usr/share/java/sqlite-jdbc.jar",
    default_port=None,
    has_schemas=False,
    database_is_file=True,
    sql_dir="sqlite",
    max_bind_params=32766,
    time_order=lambda column: sa.func.julianday(column),
    time_unit_seconds=86400.0,
    now=lambda: sa.literal_column("'now'"),
    first_characters=_sqlite_first_characters,
    run_script=lambda connection, script: connection.executescript(script),
    on_connect=_sqlite_prepare,
    text_as_bytes=True,
)

def _run_each_result(connection: Any, script: str) -> None:
    # PyMySQL runs a multi-statement script when the connection allows it (see
    # connect_args); every result must be read before the connection is used again.
    with connection.cursor() as cursor:
        cursor.execute(script)
        while cursor.nextset():
            pass


POSTGRESQL = Dialect(
    name="postgresql",
    jdbc_url="jdbc:postgresql://{host}:{port}/{database}",
    jdbc_driver="org.postgresql.Driver",
    jar="/usr/share/java/postgresql.jar",
    default_port=5432,
    has_schemas=True,
    database_is_file=False,
    sql_dir="postgresql",
    max_bind_params=32767,
    time_order=lambda column: sa.extract("epoch", column),
    time_unit_seconds=1.0,
    now=lambda: sa.literal_column("(clock_timestamp() AT TIME ZONE 'utc')"),
    first_characters=_substr,
    run_script=lambda connection, script: connection.execute(script),
    lock_query="SELECT pg_try_advisory_lock(hashtext(:name))",
    copy_reads=True,
    early_statuses=EarlyStatusSql(
        # A server's idle-in-transaction timeout would end the session mid-cycle.
        prepare="SET LOCAL idle_in_transaction_session_timeout = 0",
        changed_here="xmin = pg_current_xact_id()::xid",
    ),
    wake_channel_query=(
        "SELECT 'xdspub_' || c.oid FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        " JOIN pg_trigger t ON t.tgrelid = c.oid AND t.tgname = c.relname || '_wake'"
        " WHERE c.relname = :table AND n.nspname = coalesce(:schema, current_schema())"
    ),
)

MARIADB = Dialect(
    name="mysql",
    # The mysql scheme makes Spark quote identifiers with backticks; MariaDB's driver takes it.
    jdbc_url="jdbc:mysql://{host}:{port}/{database}",
    jdbc_driver="org.mariadb.jdbc.Driver",
    jar="/usr/share/java/mariadb-java-client.jar",
    default_port=3306,
    has_schemas=True,
    database_is_file=False,
    sql_dir="mariadb",
    max_bind_params=65535,
    time_order=lambda column: sa.func.timestampdiff(
        sa.literal_column("MICROSECOND"), sa.literal_column("'1970-01-01'"), column
    ),
    time_unit_seconds=1e-6,
    now=lambda: sa.func.utc_timestamp(6),
    first_characters=_substr,
    run_script=_run_each_result,
    lock_query="SELECT GET_LOCK(:name, 0)",
    connect_args={"client_flag": 1 << 16},  # CLIENT.MULTI_STATEMENTS, for init-db scripts
)

DIALECTS = {d.name: d for d in (SQLITE, POSTGRESQL, MARIADB)} | {"mariadb": MARIADB}


def dialect_of(backend: str) -> Dialect:
    """The Dialect of a SQLAlchemy backend name (``mysql`` serves MariaDB)."""
    try:
        return DIALECTS[backend]
    except KeyError:
        raise ConfigError(
            f"database {backend!r} is not supported (supported: sqlite, postgresql, mariadb)"
        ) from None
