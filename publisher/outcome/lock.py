"""One active publisher per event log (docs/delivery.md, One publisher per event log).

PostgreSQL and MariaDB: a lock on the event log's lock table, which init-db makes beside
it, held by a transaction left open on a connection kept for the life of the service, so
that it is released when the process or its connection dies, and only a user granted
rights on the lock table can take it. SQLite: an flock on a file beside the database."""

from __future__ import annotations

import errno
import fcntl
import os
import shlex
import stat
from dataclasses import dataclass

import sqlalchemy as sa

from publisher.errors import ConfigError, PublisherBusy
from publisher.settings import Settings
from publisher.source.database import Database, run_named
from publisher.source.identifiers import lock_table_name, quoted


@dataclass(frozen=True)
class LockName:
    """The event log a publisher lock guards: its schema and name."""

    schema: str
    log_table: str

    def __str__(self) -> str:
        return f"xdspub:{self.schema}.{self.log_table}"


def lock_name(settings: Settings) -> LockName:
    schema, _, table = settings.log_table.rpartition(".")  # the log's place, as export finds it
    return LockName(schema or settings.schema, table)


class PublisherLock:
    def __init__(self, db: Database, name: LockName) -> None:
        self.db, self.name = db, name
        self._connection: sa.Connection | None = None
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        """Take the lock if it is free; True when this process holds it. ConfigError when
        the lock table is missing or the user may not lock it."""
        sql = self.db.dialect.publisher_lock
        if sql is None:
            return self._try_file_lock()
        self.release()
        table = self._lock_table()
        connection = self.db.engine.connect().execution_options(isolation_level="READ COMMITTED")
        try:
            connection.exec_driver_sql(sql.prepare)
            run_named(connection, sql.take.format(table=table))
            if sql.found and run_named(connection, sql.found.format(table=table)).first() is None:
                raise ConfigError(f"the lock table {table} has no row: run `xdspub init-db` again")
        except sa.exc.DBAPIError as exc:
            _discard(connection)
            code = sql.error_code(exc.orig)
            if code == sql.busy:
                return False
            if code == sql.missing:
                again = f"--schema {shlex.quote(self.name.schema)} --log-table {shlex.quote(self.name.log_table)}"
                raise ConfigError(
                    f"the event log has no lock table {table} (made by an earlier xdspub): run "
                    f"`xdspub init-db {again}` again, which adds it and keeps the data "
                    "(docs/delivery.md, One publisher per event log)"
                ) from None
            if code == sql.denied:
                raise ConfigError(
                    f"the database user may not take the publisher lock: it needs {sql.privilege} "
                    f"on {table} (docs/triggers.md, Grants)"
                ) from None
            raise
        except ConfigError:
            _discard(connection)
            raise
        self._connection = connection  # its transaction stays open: it holds the lock
        return True

    def acquire(self) -> None:
        """Take the lock, or PublisherBusy when another publisher holds it."""
        if not self.try_acquire():
            raise PublisherBusy(f"another publisher is active on {self.name.log_table} (lock {self.name})")

    def holder(self) -> str | None:
        """Who holds the lock, as far as the database tells, without keeping it: a text
        naming the holder; None: free."""
        sql = self.db.dialect.publisher_lock
        if sql is not None and sql.holder is not None:
            with self.db.engine.connect() as connection:
                found = connection.execute(sa.text(sql.holder), {"table": self._lock_table()}).first()
            if found is None:
                return None
            user, client, application, since = found
            return f"user {user} from {client or 'a local socket'} ({application or 'no application name'}) since {since}"
        if self.try_acquire():  # free: let go at once
            self.release()
            return None
        return "another session (the database does not tell which)"

    def held(self) -> bool:
        """Whether the lock is still ours: its session must still be alive. The lock's
        transaction is left open."""
        if self.db.dialect.publisher_lock is None:
            return self._fd is not None
        if self._connection is None:
            return False
        try:
            self._connection.exec_driver_sql("SELECT 1").scalar()
            return True
        except sa.exc.DBAPIError:
            self.release()
            return False

    def release(self) -> None:
        if self._connection is not None:
            try:
                _discard(self._connection)  # closing the session frees the lock
            finally:
                self._connection = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _lock_table(self) -> str:
        name = quoted(self.db.engine, "lock table", lock_table_name(self.db.dialect, self.name.log_table))
        return f"{quoted(self.db.engine, 'schema', self.name.schema)}.{name}"

    def _try_file_lock(self) -> bool:
        if self._fd is not None:
            return True
        path = f"{self.db.engine.url.database}.xdspub-lock"
        try:
            # Never through a link planted in the database's folder, and not inherited by
            # the processes the publisher starts.
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ConfigError(f"the lock file {path} is a symbolic link: remove it") from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ConfigError(f"the lock file {path} is not a regular file: remove it")
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True


def _discard(connection: sa.Connection) -> None:
    """Close the connection's session, not return it to the pool."""
    connection.invalidate()
    connection.close()
