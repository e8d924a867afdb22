"""Database servers of a test's own, on a free port in a temporary directory: a test that
restarts its server restarts one of these, never the machine's, which the other tests
(and other sessions' CI) are using.

They run from the machine's own server binaries: PostgreSQL's initdb and pg_ctl as the
``postgres`` user (PostgreSQL refuses to run as root), MariaDB's mariadb-install-db and
mariadbd. Each has the database ``test`` and the user ``root`` without a password."""

from __future__ import annotations

import glob
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import sqlalchemy as sa

from tests.conftest import free_port


def _wait_until_up(url: str, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    engine = sa.create_engine(url)
    try:
        while True:
            try:
                with engine.connect():
                    return
            except sa.exc.OperationalError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"{what} did not come up within {timeout} s") from None
                time.sleep(0.2)
    finally:
        engine.dispose()


class PrivatePostgres:
    """``settings``: extra server settings as ``name=value`` (each passed as ``-c``), e.g.
    ``log_statement=all``; the server's log is ``log_path``."""

    kind = "postgresql"

    def __init__(self, settings: Sequence[str] = ()) -> None:
        self.settings = tuple(settings)
        self.port = free_port()
        self.home = Path(tempfile.mkdtemp(prefix="xdspub-pg-"))
        shutil.chown(self.home, "postgres", "postgres")  # a pytest tmp_path is root's alone
        self.bin = Path(sorted(glob.glob("/usr/lib/postgresql/*/bin"))[-1])
        self.url = f"postgresql+psycopg://root@127.0.0.1:{self.port}/test"
        self._as_postgres("initdb", "-D", str(self.home / "data"), "-A", "trust", "-U", "root",
                          "--no-sync", "-E", "UTF8")
        self.start()
        with sa.create_engine(self.url.replace("/test", "/postgres")).connect() as conn:
            conn.execution_options(isolation_level="AUTOCOMMIT").execute(sa.text("CREATE DATABASE test"))

    def _as_postgres(self, program: str, *args: str) -> None:
        subprocess.run(["runuser", "-u", "postgres", "--", str(self.bin / program), *args],
                       check=True, capture_output=True)

    def _pg_ctl(self, *args: str) -> None:
        options = f"-p {self.port} -k {self.home} -c listen_addresses=127.0.0.1"
        options += "".join(f" -c {setting}" for setting in self.settings)
        self._as_postgres("pg_ctl", "-D", str(self.home / "data"), "-l", str(self.home / "log"),
                          "-o", options, "-w", *args)

    @property
    def log_path(self) -> Path:
        """The server's log (pg_ctl -l): what ``log_statement`` logs goes here."""
        return self.home / "log"

    def start(self) -> None:
        self._pg_ctl("start")

    def restart(self) -> None:
        self._pg_ctl("-m", "fast", "restart")

    def stop(self) -> None:
        self._pg_ctl("-m", "immediate", "stop")
        shutil.rmtree(self.home, ignore_errors=True)


class PrivateMariaDB:
    """``options``: extra mariadbd options, ``{home}`` standing for the server's folder,
    e.g. ``--general-log-file={home}/general.log``."""

    kind = "mariadb"

    def __init__(self, options: Sequence[str] = ()) -> None:
        self.port = free_port()
        self.home = Path(tempfile.mkdtemp(prefix="xdspub-mariadb-"))
        self.options = tuple(option.replace("{home}", str(self.home)) for option in options)
        self.url = f"mysql+pymysql://root@127.0.0.1:{self.port}/test"
        subprocess.run(
            ["mariadb-install-db", "--no-defaults", f"--datadir={self.home / 'data'}", "--user=root",
             "--auth-root-authentication-method=normal", "--skip-test-db"],
            check=True, capture_output=True,
        )
        self.process: subprocess.Popen | None = None
        self.start()
        with sa.create_engine(self.url.replace("/test", "/")).begin() as conn:
            conn.execute(sa.text("CREATE DATABASE test"))

    def start(self) -> None:
        self.process = subprocess.Popen(
            ["mariadbd", "--no-defaults", f"--datadir={self.home / 'data'}", f"--port={self.port}",
             f"--socket={self.home / 'sock'}", "--bind-address=127.0.0.1", "--user=root",
             f"--log-error={self.home / 'error.log'}", *self.options],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        _wait_until_up(self.url.replace("/test", "/"), "the private MariaDB")

    def _stop_process(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # a clean shutdown, as a restart by the operator
            self.process.wait(timeout=60)

    def restart(self) -> None:
        self._stop_process()
        self.start()

    def stop(self) -> None:
        self._stop_process()
        shutil.rmtree(self.home, ignore_errors=True)


def start_private_server(kind: str, extra: Sequence[str] = ()) -> PrivatePostgres | PrivateMariaDB:
    """A private server of ``kind``; ``extra``: PostgreSQL settings or mariadbd options
    (see each class)."""
    return {"postgresql": PrivatePostgres, "mariadb": PrivateMariaDB}[kind](extra)

