"""One active publisher per event log (docs/delivery.md, One publisher per event log).

PostgreSQL and MariaDB: a session-level lock (advisory lock, GET_LOCK) taken on a
connection kept open for the life of the service, so it is released when the process or
its connection dies. SQLite: an flock on a file beside the database."""

from __future__ import annotations

import fcntl
import os

import sqlalchemy as sa

from publisher.settings import Settings
from publisher.source.dialects import Dialect


def lock_name(settings: Settings) -> str:
    return f"xdspub:{settings.schema}.{settings.log_table}"


class PublisherLock:
    def __init__(self, engine: sa.Engine, dialect: Dialect, name: str) -> None:
        self.engine, self.dialect, self.name = engine, dialect, name
        self._connection: sa.Connection | None = None
        self._fd: int | None = None

    def try_acquire(self) -> bool:
        """Take the lock if it is free; True when this process holds it."""
        if self.dialect.lock_query is None:
            return self._try_file_lock()
        self.release()
        connection = self.engine.connect()
        try:
            taken = connection.execute(sa.text(self.dialect.lock_query), {"name": self.name}).scalar()
            connection.commit()
        except sa.exc.DBAPIError:
            connection.close()
            raise
        if taken:
            self._connection = connection
            return True
        connection.close()
        return False

    def held(self) -> bool:
        """Whether the lock is still ours: its session must still be alive."""
        if self.dialect.lock_query is None:
            return self._fd is not None
        if self._connection is None:
            return False
        try:
            self._connection.execute(sa.text("SELECT 1")).scalar()
            self._connection.commit()
            return True
        except sa.exc.DBAPIError:
            self.release()
            return False

    def release(self) -> None:
        if self._connection is not None:
            try:
                self._connection.invalidate()  # closing the session frees the lock
            finally:
                self._connection = None
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _try_file_lock(self) -> bool:
        if self._fd is not None:
            return True
        path = f"{self.engine.url.database}.xdspub-lock"
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return False
        self._fd = fd
        return True
