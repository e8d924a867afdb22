"""What differs between databases, as data: one Dialect per SQLAlchemy backend."""

from __future__ import annotations

import base64
import os
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import CITEXT
from sqlalchemy.engine import URL

from publisher.errors import ConfigError
from publisher.source.text import decoded_text


@dataclass(frozen=True)
class EarlyStatusSql:
    """What a status transaction begun early needs (outcome/status.py)."""

    prepare: str  # readies the session for a transaction left open while the cycle runs
    changed_here: str  # a condition true of the rows this transaction changed


@dataclass(frozen=True)
class PublisherLockSql:
    """The publisher lock (outcome/lock.py; docs/delivery.md, One publisher per event log):
    a lock on the event log's lock table (init-db makes it, sql/<dialect>/event_log.sql),
    taken in a READ COMMITTED transaction left open on a connection of its own. ``{table}``
    stands for the lock table's quoted, qualified name."""

    prepare: str  # readies that transaction: no idle timeout may end it
    take: str  # takes the lock at once or fails
    privilege: str  # what the publisher's user needs on the lock table to take it
    error_code: Callable[[BaseException], object]  # the code of a DBAPI error
    busy: object  # take's error code when another session holds the lock
    missing: object  # ... when the lock table does not exist
    denied: object  # ... when the user lacks the privilege
    found: str | None = None  # returns the row take locked, where it locks a row
    # init-db gives the lock table the event log's owner: SQL giving the log's owner
    # (:log) when it is not the lock table's (:lock), both quoted names, and the statement
    # that gives it ({table}, {owner}); None where tables have no owners.
    other_owner: str | None = None
    give_owner: str | None = None
    # Who holds the lock (:table, its name), read without taking it: one row (user,
    # client, application, since) or none; None where only taking it can tell.
    holder: str | None = None


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
    # A number that orders event_time values, for future-event processing, and how many
    # seconds one of its units is.
    time_order: Callable[[sa.ColumnElement], sa.ColumnElement]
    time_unit_seconds: float
    now: Callable[[], sa.ColumnElement]
    # The database's local date and time as text, YYYY-MM-DD HH:MM:SS.fff (a triggerless
    # cycle's jdbc:database-local-time, docs/triggerless.md).
    local_time: str
    # A text column cut to its first n characters in the database (and whole when shorter),
    # so that a huge value never leaves it whole (docs/parameters.md, Maximum Value Length).
    first_characters: Callable[[sa.ColumnElement, int], sa.ColumnElement]
    # Runs a script of several statements (the files under sql/) on a DBAPI connection.
    run_script: Callable[[Any, str], None]
    # A binary key's Base64 text as the value its column is compared with
    # (source/query_back.py), in SQL that Spark's JDBC source runs too.
    binary_key: Callable[[str], object]
    # The longest name the database takes, in bytes of UTF-8 (MariaDB counts 64
    # characters, never fewer than 64 bytes); None: no limit that matters. A longer name
    # xdspub derives is shortened (source/identifiers.py).
    identifier_bytes: int | None = None
    # One publisher per event log; None: a lock file beside the database (SQLite).
    publisher_lock: PublisherLockSql | None = None
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
    # (outcome/status.py), where the rows it locks block nothing the triggers do (no gap
    # locks, no lock on the whole database). None: statuses are written at the end.
    early_statuses: EarlyStatusSql | None = None
    # SQL giving the channel on which the event log (:schema, None for the session's own,
    # and :table) announces logged rows, when it has the wake-up trigger (WAKE_TRIGGER) of
    # sql/<dialect>/wake.sql; None: the database has none, and the service only polls.
    wake_channel_query: str | None = None
    # A key's text cast to its column's reflected type where a query binds it
    # (source/query_back.py): PostgreSQL compares a uuid, date, numeric, enum ... with no
    # text; MariaDB and SQLite convert a text themselves.
    casts_key_texts: bool = False
    # A BIT column's value as a number, where its text is wanted (source/schema.py is_bit).
    bit_number: Callable[[sa.ColumnElement], sa.ColumnElement] = lambda column: column
    # A binary key column as binary_key's values are compared with.
    binary_key_column: Callable[[sa.ColumnElement], sa.ColumnElement] = lambda column: column
    # A column type whose text the session's time zone decides (PostgreSQL's timestamptz,
    # MariaDB's TIMESTAMP). Every path writes its values as utc_text gives them, in UTC,
    # whatever the zone of the session that writes them (docs/rendering.md, Key text).
    zoned: Callable[[Any], bool] = lambda sql_type: False
    utc_text: Callable[[sa.ColumnElement], sa.ColumnElement] = lambda column: sa.cast(column, sa.Text)
    # A zoned key column's text (utc_text's) as the value it is compared with; None: as
    # any other key text (casts_key_texts: PostgreSQL's text says its offset).
    utc_key: Callable[[str], sa.ColumnElement] | None = None
    # A key column type whose values compare equal to other texts (a case-insensitive
    # collation: 'abc' names the row of 'ABC'; trailing blanks, accents): a value that
    # names such a key (a reference, a child row's link) is published as the key the named
    # row holds, not as its own text (docs/rendering.md, Key text).
    collated: Callable[[Any], bool] = lambda sql_type: False
    # SQL giving the schema of the collating type's own equality (PostgreSQL's citext),
    # which a trigger function names: its search_path holds pg_catalog alone, where = on
    # citext would compare the texts as they are. None: the type's = needs no schema.
    collated_equality_schema: str | None = None

    def schema_named(self, schema: str | None) -> str | None:
        """The schema to name in SQL: None where the database has none (SQLite)."""
        return schema if self.has_schemas else None

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


# The name of the event log's wake-up trigger: a trigger's name need only be unique on its
# table, so one name serves every event log, and the lookup (wake_channel_query) and
# init-db (sql/postgresql/wake.sql) cannot disagree.
WAKE_TRIGGER = "xdspub_wake"


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
    time_order=lambda column: sa.func.julianday(column),
    time_unit_seconds=86400.0,
    now=lambda: sa.literal_column("'now'"),
    local_time="SELECT strftime('%Y-%m-%d %H:%M:%f', 'now', 'localtime')",
    first_characters=_sqlite_first_characters,
    run_script=lambda connection, script: connection.executescript(script),
    on_connect=_sqlite_prepare,
    text_as_bytes=True,
    # By the column's hex: SQLite has no function from Base64 (nor, before 3.41, from hex)
    # that Spark's JDBC connections know, and a bytes literal is written as text.
    binary_key=lambda text: base64.b64decode(text).hex().upper(),
    binary_key_column=sa.func.hex,
)

def _run_each_result(connection: Any, script: str) -> None:
    # PyMySQL runs a multi-statement script when the connection allows it (see
    # connect_args); every result must be read before the connection is used again.
    with connection.cursor() as cursor:
        cursor.execute(script)
        while cursor.nextset():
            pass


# A transaction left open on purpose (the early statuses, the publisher lock): no server
# timeout may end it, the idle one nor PostgreSQL 17's transaction_timeout.
_PG_NO_TIMEOUTS = (
    "SELECT set_config('idle_in_transaction_session_timeout', '0', true),"
    " CASE WHEN current_setting('server_version_num')::int >= 170000"
    " THEN set_config('transaction_timeout', '0', true) END"
)

POSTGRESQL = Dialect(
    name="postgresql",
    jdbc_url="jdbc:postgresql://{host}:{port}/{database}",
    jdbc_driver="org.postgresql.Driver",
    jar="/usr/share/java/postgresql.jar",
    default_port=5432,
    has_schemas=True,
    database_is_file=False,
    sql_dir="postgresql",
    time_order=lambda column: sa.extract("epoch", column),
    time_unit_seconds=1.0,
    now=lambda: sa.literal_column("(clock_timestamp() AT TIME ZONE 'utc')"),
    local_time="SELECT to_char(clock_timestamp(), 'YYYY-MM-DD HH24:MI:SS.MS')",
    first_characters=_substr,
    run_script=lambda connection, script: connection.execute(script),
    identifier_bytes=63,  # NAMEDATALEN - 1: PostgreSQL cuts a longer name
    publisher_lock=PublisherLockSql(
        # A lock on a view: a view has no storage, so a lock held for the life of the
        # service keeps no VACUUM waiting, not even one against transaction ID wraparound.
        # The transaction takes no transaction ID and, READ COMMITTED, holds no snapshot
        # between statements: it holds back no vacuum elsewhere either.
        prepare=_PG_NO_TIMEOUTS,
        take="LOCK TABLE {table} IN EXCLUSIVE MODE NOWAIT",
        holder=(
            "SELECT a.usename, host(a.client_addr), a.application_name, a.backend_start FROM pg_locks l "
            "JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.relation = to_regclass(:table) "
            "AND l.granted AND l.mode = 'ExclusiveLock'"
        ),
        privilege="UPDATE",
        error_code=lambda error: getattr(error, "sqlstate", None),
        busy="55P03",  # lock_not_available
        missing="42P01",  # undefined_table
        denied="42501",  # insufficient_privilege
        other_owner=(
            "SELECT pg_get_userbyid(event_log.relowner) FROM pg_class event_log, pg_class lock_table"
            " WHERE event_log.oid = CAST(:log AS regclass) AND lock_table.oid = CAST(:lock AS regclass)"
            " AND event_log.relowner <> lock_table.relowner"
        ),
        give_owner="ALTER VIEW {table} OWNER TO {owner}",
    ),
    copy_reads=True,
    casts_key_texts=True,
    binary_key=lambda text: sa.func.decode(text, "base64"),
    zoned=lambda sql_type: isinstance(sql_type, sa.DateTime) and bool(sql_type.timezone),
    collated=lambda sql_type: isinstance(sql_type, CITEXT),
    collated_equality_schema=(
        "SELECT n.nspname FROM pg_extension e JOIN pg_namespace n ON n.oid = e.extnamespace "
        "WHERE e.extname = 'citext'"
    ),
    # As CAST AS TEXT writes it in a session whose TimeZone is UTC: 2024-01-31 10:00:00+00.
    utc_text=lambda column: sa.cast(sa.func.timezone("UTC", column), sa.Text).concat("+00"),
    early_statuses=EarlyStatusSql(
        # A server's idle-in-transaction timeout would end the session mid-cycle.
        prepare=_PG_NO_TIMEOUTS,
        changed_here="xmin = pg_current_xact_id()::xid",
    ),
    wake_channel_query=(
        "SELECT 'xdspub_' || c.oid FROM pg_class c"
        " JOIN pg_namespace n ON n.oid = c.relnamespace"
        f" JOIN pg_trigger t ON t.tgrelid = c.oid AND t.tgname = '{WAKE_TRIGGER}'"
        " WHERE c.relname = :table AND n.nspname = coalesce(:schema, current_schema())"
    ),
)

def _mariadb_utc(column: sa.ColumnElement) -> sa.ColumnElement:
    # From the seconds since 1970 a TIMESTAMP holds (UNIX_TIMESTAMP reads them, its
    # fraction included, without the session's zone, which CONVERT_TZ would need and which
    # repeats an hour when summer time ends), so that its text keeps the column's
    # fraction digits. Its zero date (no second since 1970: its range begins at 00:00:01)
    # stays the zero date.
    seconds = sa.func.unix_timestamp(column)
    since_1970 = sa.func.timestampadd(
        sa.literal_column("SECOND"), seconds, sa.literal_column("TIMESTAMP'1970-01-01 00:00:00'")
    )
    return sa.func.if_(seconds == 0, column, since_1970)


def _binary_collation(sql_type: sa.String) -> bool:
    """A MariaDB text type compared byte for byte (BINARY, a _bin collation)."""
    return bool(getattr(sql_type, "binary", False)) or (sql_type.collation or "").endswith("_bin")


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
    time_order=lambda column: sa.func.timestampdiff(
        sa.literal_column("MICROSECOND"), sa.literal_column("'1970-01-01'"), column
    ),
    time_unit_seconds=1e-6,
    now=lambda: sa.func.utc_timestamp(6),
    local_time="SELECT LEFT(DATE_FORMAT(NOW(3), '%Y-%m-%d %H:%i:%s.%f'), 23)",
    first_characters=_substr,
    run_script=_run_each_result,
    identifier_bytes=64,
    publisher_lock=PublisherLockSql(
        # A row lock of InnoDB, taken by an UPDATE that changes nothing: a locking read
        # (SELECT ... FOR UPDATE) needs only SELECT on MariaDB, which a reporting user
        # granted on the whole database has. A transaction that has only locked a row
        # (READ COMMITTED: no read view between statements) holds back no purge.
        prepare=(
            "SET SESSION idle_transaction_timeout = 0, idle_readonly_transaction_timeout = 0,"
            " idle_write_transaction_timeout = 0, innodb_lock_wait_timeout = 0"
        ),
        take="UPDATE {table} SET id = 1 WHERE id = 1",
        found="SELECT id FROM {table} WHERE id = 1",
        privilege="UPDATE",
        error_code=lambda error: error.args[0] if error.args else None,
        busy=1205,  # ER_LOCK_WAIT_TIMEOUT, at once with innodb_lock_wait_timeout 0
        missing=1146,  # ER_NO_SUCH_TABLE
        denied=1142,  # ER_TABLEACCESS_DENIED_ERROR
    ),
    connect_args={"client_flag": 1 << 16},  # CLIENT.MULTI_STATEMENTS, for init-db scripts
    binary_key=sa.func.from_base64,
    bit_number=lambda column: column + 0,  # CAST AS CHAR of a BIT writes its bytes
    zoned=lambda sql_type: isinstance(sql_type, sa.TIMESTAMP),
    # Text under a collation that is not binary: by default case- and accent-insensitive.
    collated=lambda sql_type: isinstance(sql_type, sa.String) and not _binary_collation(sql_type),
    utc_text=lambda column: sa.cast(_mariadb_utc(column), sa.Text),
    # The session's time of a UTC text: a TIMESTAMP column is compared in it.
    utc_key=lambda text: sa.func.convert_tz(text, "+00:00", sa.literal_column("@@session.time_zone")),
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
