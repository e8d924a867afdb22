"""What differs between databases, as data: one Dialect per SQLAlchemy backend."""

from __future__ import annotations

import base64
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL

from publisher.errors import ConfigError


@dataclass(frozen=True)
class Dialect:
    name: str  # SQLAlchemy backend name
    jdbc_url: str  # format string over the parts of the SQLAlchemy URL
    jdbc_driver: str
    jar: str  # from Debian's packages, installed by install.sh
    has_schemas: bool
    sql_dir: str  # folder under sql/
    max_bind_params: int
    # A number that orders event_time values, for future-event processing.
    time_order: Callable[[sa.ColumnElement], sa.ColumnElement]
    now: Callable[[], sa.ColumnElement]
    # Runs a script of several statements (the files under sql/) on a DBAPI connection.
    run_script: Callable[[Any, str], None]
    # Prepares each new DBAPI connection (SQLite: the base64 function its triggers call).
    on_connect: Callable[[Any], None] | None = None

    def jdbc(self, url: URL) -> str:
        if url.database in (None, "", ":memory:") and not self.has_schemas:
            raise ConfigError(f"{url.render_as_string()}: Spark needs a database file, not memory")
        return self.jdbc_url.format(
            host=url.host or "127.0.0.1", port=url.port or "", database=url.database or ""
        )


def _sqlite_base64(connection: sqlite3.Connection) -> None:
    # SQLite has no Base64 function; the documents require binary values Base64-encoded.
    connection.create_function(
        "base64",
        1,
        lambda blob: None if blob is None else base64.b64encode(bytes(blob)).decode("ascii"),
        deterministic=True,
    )


SQLITE = Dialect(
    name="sqlite",
    jdbc_url="jdbc:sqlite:{database}",
    jdbc_driver="org.sqlite.JDBC",
    jar="/usr/share/java/sqlite-jdbc.jar",
    has_schemas=False,
    sql_dir="sqlite",
    max_bind_params=32766,
    time_order=lambda column: sa.func.julianday(column),
    now=lambda: sa.literal_column("'now'"),
    run_script=lambda connection, script: connection.executescript(script),
    on_connect=_sqlite_base64,
)

DIALECTS = {d.name: d for d in (SQLITE,)}


def dialect_of(engine: sa.Engine) -> Dialect:
    try:
        return DIALECTS[engine.dialect.name]
    except KeyError:
        raise ConfigError(
            f"database {engine.dialect.name!r} is not supported (supported: {', '.join(DIALECTS)})"
        ) from None
