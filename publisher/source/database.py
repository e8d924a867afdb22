"""Opening the database: the SQLAlchemy engine and its Dialect."""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

import sqlalchemy as sa

from publisher.errors import ConfigError, DatabaseUnreachable
from publisher.source.dialects import Dialect, dialect_of


class Database(NamedTuple):
    """One database as xdspub reaches it: its engine, and the dialect that says how it
    differs from the others. The schema is not part of it: it is the publication's
    (``Settings.schema``, a catalogue's ``schema``) and a database may hold several."""

    engine: sa.Engine
    dialect: Dialect

    @property
    def identity(self) -> str:
        """Which database this is, for what is kept of it (a triggerless state, a hold):
        its URL without password (SQLite: its file's full path)."""
        url = self.engine.url.set(password=None, query={})
        if self.dialect.database_is_file and url.database:
            url = url.set(database=str(Path(url.database).resolve()))
        return url.render_as_string(hide_password=True)

    def __enter__(self) -> Database:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.engine.dispose()  # the pool's connections closed now, not when collected


def connect(url: str, create: bool = False) -> Database:
    """An engine that has answered once, or DatabaseUnreachable (exit 3).

    An SQLite file that does not exist is created only when ``create`` is set; otherwise a
    mistyped path would silently publish from an empty new database."""
    try:
        dialect = dialect_of(sa.engine.make_url(url).get_backend_name())
        engine = sa.create_engine(url, connect_args=dialect.connect_args, pool_pre_ping=True)
    except sa.exc.NoSuchModuleError as exc:
        raise ConfigError(f"bad database URL {shown_url(url)!r}: {exc}") from None
    except (sa.exc.ArgumentError, ValueError):  # the message may repeat the URL, password and all
        raise ConfigError(f"bad database URL {shown_url(url)!r}: not an SQLAlchemy URL") from None
    database = engine.url.database
    if dialect.database_is_file and not create and not (database and Path(database).is_file()):
        raise DatabaseUnreachable(f"SQLite database file {database!r} does not exist")
    if dialect.on_connect is not None:
        prepare = dialect.on_connect
        sa.event.listen(engine, "connect", lambda dbapi_connection, _record: prepare(dbapi_connection))
    try:
        with engine.connect():
            pass
    except sa.exc.DBAPIError as exc:
        raise DatabaseUnreachable(f"cannot reach {engine.url!r}: {first_line(exc)}") from None
    return Database(engine, dialect)


def first_line(exc: sa.exc.DBAPIError) -> str:
    """The first line of the database's own message: not the SQL and parameters SQLAlchemy
    adds, nor the hints a driver gives on later lines (docs/statuses.md, Reasons)."""
    lines = str(exc.orig if exc.orig is not None else exc).strip().splitlines()
    return lines[0] if lines else type(exc.orig or exc).__name__


def libpq_conninfo(engine: sa.Engine) -> str:
    """The connection string of the engine's PostgreSQL connections, for psycopg connections
    of our own: every libpq parameter SQLAlchemy passes (the URL's query too: sslmode, a
    socket folder as host ...), none of the driver's own."""
    from psycopg import pq
    from psycopg.conninfo import make_conninfo

    libpq = {option.keyword.decode() for option in pq.Conninfo.get_defaults()}
    _, kwargs = engine.dialect.create_connect_args(engine.url)
    return make_conninfo(**{k: v for k, v in kwargs.items() if k in libpq})


def shown_url(url: str) -> str:
    """A database URL as it may be shown: its password hidden, even when it does not parse
    (docs/delivery.md, Secrets)."""
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except (sa.exc.ArgumentError, ValueError):
        # Not a URL SQLAlchemy reads: hide all that could be user and password.
        return re.sub(r"^(.*?//)?.*@", lambda m: f"{m.group(1) or ''}***@", url)


_PLACEHOLDER = re.compile(r"\{\{(\w+)\}\}")


def filled(template: str, values: dict[str, str]) -> str:
    """A script of sql/ with each ``{{name}}`` replaced by ``values[name]``, in one pass, so
    that a value holding a placeholder's text is never filled in again."""
    return _PLACEHOLDER.sub(lambda match: values[match[1]], template)


def run_named(connection: sa.Connection, statement: str) -> sa.CursorResult:
    """A statement that holds quoted names and no parameters, sent as written: no ``:`` or
    ``%`` in a name is taken for a parameter."""
    return connection.exec_driver_sql(statement, execution_options={"no_parameters": True})


def run_scripts(db: Database, scripts: list[str]) -> None:
    """Run multi-statement SQL scripts on one connection, then commit."""
    with db.engine.connect() as conn:
        raw = conn.connection.driver_connection
        for script in scripts:
            db.dialect.run_script(raw, script)
        raw.commit()

