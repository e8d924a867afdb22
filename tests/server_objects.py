"""Objects of a test's own on the PostgreSQL and MariaDB test servers: users made with a
random name, given only the privileges a test grants, and dropped afterwards; schemas
dropped by their quoted name."""

from __future__ import annotations

import contextlib
import uuid

import sqlalchemy as sa

from publisher.source.database import run_named
from publisher.source.identifiers import sql_quote
from tests.conftest import SampleDb

MARIADB_HOSTS = ("%", "localhost", "127.0.0.1")


def drop_schema(engine: sa.Engine, schema: str) -> None:
    """Drop a schema (MariaDB: a database) and all it holds, whatever its name."""
    kind = "SCHEMA" if engine.dialect.name == "postgresql" else "DATABASE"
    cascade = " CASCADE" if kind == "SCHEMA" else ""
    with engine.begin() as conn:
        run_named(conn, f"DROP {kind} IF EXISTS {sql_quote(engine)(schema)}{cascade}")


class DbUser:
    """A user with no privileges (PostgreSQL: a LOGIN role; MariaDB: the user at every host
    the tests connect from), and an engine that connects as it to ``db``'s database."""

    def __init__(self, db: SampleDb, label: str) -> None:
        self.db, self.kind = db, db.dialect.name
        self.name = f"{label}_{uuid.uuid4().hex[:8]}"
        if self.kind == "postgresql":
            db.execute(f"CREATE ROLE {self.name} LOGIN")
        else:
            for host in MARIADB_HOSTS:
                db.execute(f"CREATE USER '{self.name}'@'{host}'")
        url = db.engine.url.set(username=self.name, password=None)
        if self.kind != "postgresql":  # the URL's database must be one the user may use
            url = url.set(database=db.schema)
        self.engine = sa.create_engine(url)

    def grant(self, privileges: str, on: str) -> None:
        """GRANT ``privileges`` ON ``on`` (PostgreSQL: also USAGE on the schema)."""
        if self.kind == "postgresql":
            self.db.execute(f"GRANT USAGE ON SCHEMA {self.db.schema} TO {self.name}")
            self.db.execute(f"GRANT {privileges} ON {on} TO {self.name}")
        else:
            for host in MARIADB_HOSTS:
                self.db.execute(f"GRANT {privileges} ON {on} TO '{self.name}'@'{host}'")

    def execute(self, sql: str) -> None:
        with self.engine.begin() as conn:
            conn.exec_driver_sql(sql)

    def drop(self) -> None:
        self.engine.dispose()
        with contextlib.suppress(sa.exc.DBAPIError):
            if self.kind == "postgresql":
                self.db.execute(f"DROP OWNED BY {self.name}")
                self.db.execute(f"DROP ROLE {self.name}")
            else:
                for host in MARIADB_HOSTS:
                    self.db.execute(f"DROP USER '{self.name}'@'{host}'")
