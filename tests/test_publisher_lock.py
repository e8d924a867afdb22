"""The publisher lock (outcome/lock.py; docs/delivery.md, One publisher per event log): one
holder at a time, freed when its session dies; on PostgreSQL and MariaDB a lock on the event
log's lock table, which only a user granted rights on it can take, held by a transaction
that holds back no vacuum or purge; a missing lock table is named with its remedy; on
SQLite a lock file that is never opened through a link."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from publisher.cli import cli
from publisher.errors import ConfigError
from publisher.outcome.lock import PublisherLock, lock_name
from publisher.source.database import Database
from publisher.source.identifiers import lock_table_name
from publisher.source.init_db import init_db
from tests.conftest import SampleDb, make_sample_db
from tests.server_objects import DbUser

DATABASES = ["sqlite", "postgresql", "mariadb"]
SERVERS = DATABASES[1:]


@pytest.fixture(params=DATABASES)
def db(request, tmp_path: Path):
    made = make_sample_db(request.param, tmp_path)
    yield made
    made.drop()


@pytest.fixture(params=SERVERS)
def server_db(request, tmp_path: Path):
    made = make_sample_db(request.param, tmp_path)
    yield made
    made.drop()


def _lock(db: SampleDb, engine: sa.Engine | None = None) -> PublisherLock:
    return PublisherLock(Database(engine or db.engine, db.dialect), lock_name(db.settings))


def can_take(lock: PublisherLock) -> bool:
    """Whether ``lock`` can be taken now; released again."""
    try:
        return lock.try_acquire()
    finally:
        lock.release()


def _lock_table(db: SampleDb) -> str:
    return db.table(lock_table_name(db.dialect, "indirect_process"))


def _session_id(lock: PublisherLock) -> int:
    """The lock's own session (its connection is the lock's alone)."""
    query = "SELECT pg_backend_pid()" if lock.db.dialect.name == "postgresql" else "SELECT CONNECTION_ID()"
    return lock._connection.exec_driver_sql(query).scalar()


def test_one_holder_at_a_time(db):
    first, second = _lock(db), _lock(db)
    try:
        assert first.try_acquire()
        assert not second.try_acquire()
        assert first.held() and first.held()  # checking keeps it
        assert not second.try_acquire()
        first.release()
        assert second.try_acquire()
        assert not first.try_acquire()
    finally:
        first.release()
        second.release()


def test_export_refuses_while_another_publisher_holds_the_lock(db, tmp_path):
    holder = _lock(db)
    assert holder.try_acquire()
    try:
        url = db.engine.url.render_as_string(hide_password=False)
        args = ["export", "--db", url, "--schema", db.schema, "--out", str(tmp_path / "o.xml")]
        result = CliRunner().invoke(cli, args)
    finally:
        holder.release()
    assert result.exit_code == 2 and "another publisher is active" in result.stderr
    assert not (tmp_path / "o.xml").exists()


def test_the_lock_is_freed_when_its_session_dies(server_db):
    first, second = _lock(server_db), _lock(server_db)
    try:
        assert first.try_acquire()
        kill = "SELECT pg_terminate_backend({})" if server_db.dialect.name == "postgresql" else "KILL {}"
        server_db.execute(kill.format(_session_id(first)))
        assert not first.held()
        assert second.try_acquire()
    finally:
        first.release()
        second.release()


def test_the_lock_holds_back_no_vacuum_or_purge(server_db):
    lock = _lock(server_db)
    try:
        assert lock.try_acquire() and lock.held()
        session = _session_id(lock)
        with server_db.engine.connect() as conn:
            if server_db.dialect.name == "postgresql":
                # Its transaction stays open (held() commits nothing), with no transaction
                # ID and no snapshot: nothing for VACUUM to wait for.
                row = conn.execute(
                    sa.text("SELECT state, backend_xid, backend_xmin FROM pg_stat_activity WHERE pid = :p"),
                    {"p": session},
                ).one()
                assert tuple(row) == ("idle in transaction", None, None)
            else:
                # Its transaction stays open, READ COMMITTED, with no read view: nothing for
                # purge to wait for.
                row = conn.execute(
                    sa.text("SELECT trx_isolation_level, trx_rows_locked FROM information_schema.INNODB_TRX "
                            "WHERE trx_mysql_thread_id = :p"),
                    {"p": session},
                ).one()
                assert tuple(row) == ("READ COMMITTED", 1)
                status = conn.exec_driver_sql("SHOW ENGINE INNODB STATUS").one()[2]
                blocks = [t.split("\n--------")[0] for t in status.split("---TRANSACTION")]
                mine = [t for t in blocks if f"MariaDB thread id {session}," in t]
                assert len(mine) == 1 and "Trx read view" not in mine[0]
    finally:
        lock.release()


def test_a_user_without_rights_on_the_lock_table_cannot_take_the_lock(server_db):
    intruder = DbUser(server_db, "intruder")
    try:
        # All rights on the published tables, and SELECT on every table of the schema (a
        # reporting grant): none that takes the lock.
        for table in ("usr", "grp", "usr_phone", "usr_mbr_of"):
            intruder.grant("ALL PRIVILEGES", server_db.table(table))
        postgresql = server_db.dialect.name == "postgresql"
        every_table = f"ALL TABLES IN SCHEMA {server_db.schema}" if postgresql else f"{server_db.schema}.*"
        intruder.grant("SELECT", every_table)
        if server_db.dialect.name == "postgresql":  # the lock of earlier versions was anyone's
            name = f"xdspub:{server_db.schema}.indirect_process"
            intruder.execute(f"SELECT pg_advisory_lock(hashtext('{name}'))")
        with pytest.raises(ConfigError, match="may not take the publisher lock"):
            _lock(server_db, intruder.engine).try_acquire()
        assert can_take(_lock(server_db))
        # The privilege docs/triggers.md names is enough.
        intruder.grant(server_db.dialect.publisher_lock.privilege, _lock_table(server_db))
        assert can_take(_lock(server_db, intruder.engine))
    finally:
        intruder.drop()


def test_init_db_again_neither_waits_on_a_running_publisher_nor_holds_up_the_triggers(server_db):
    lock = _lock(server_db)
    try:
        assert lock.try_acquire()
        done = threading.Event()

        def again() -> None:
            init_db(server_db.database, server_db.schema, "indirect_process", True, "field")
            done.set()

        threading.Thread(target=again, daemon=True).start()
        assert done.wait(60), "init-db waited on the publisher lock"
        server_db.execute(f"INSERT INTO {server_db.table('usr')} (idu, fname) VALUES (1, 'Ann')")
        assert lock.held() and not can_take(_lock(server_db))
    finally:
        lock.release()
    assert list(server_db.statuses().values()) == ["N"]


def test_a_missing_lock_table_is_named_with_its_remedy(server_db):
    kind = "VIEW" if server_db.dialect.name == "postgresql" else "TABLE"
    server_db.execute(f"DROP {kind} {_lock_table(server_db)}")
    remedy = f"run `xdspub init-db --schema {server_db.schema} --log-table indirect_process` again"
    with pytest.raises(ConfigError, match=f"no lock table .*: {remedy}"):
        _lock(server_db).try_acquire()
    init_db(server_db.database, server_db.schema, "indirect_process", False, "none")
    assert can_take(_lock(server_db))


def test_init_db_gives_the_lock_table_the_event_logs_owner(tmp_path):
    db = make_sample_db("postgresql", tmp_path)
    owner = DbUser(db, "owner")
    try:
        log, lock = db.table("indirect_process"), _lock_table(db)
        db.execute(f"ALTER TABLE {log} OWNER TO {owner.name}")
        db.execute(f"DROP VIEW {lock}")
        init_db(db.database, db.schema, "indirect_process", False, "none")  # as root
        with db.engine.connect() as conn:
            owners = conn.execute(
                sa.text("SELECT pg_get_userbyid(relowner) FROM pg_class WHERE oid = CAST(:t AS regclass)"),
                {"t": lock},
            ).scalar()
        assert owners == owner.name
        db.execute(f"GRANT USAGE ON SCHEMA {db.schema} TO {owner.name}")
        assert can_take(_lock(db, owner.engine))
    finally:
        db.drop()
        owner.drop()


def test_the_sqlite_lock_file_is_never_opened_through_a_link(tmp_path):
    db = make_sample_db("sqlite", tmp_path)
    try:
        target = tmp_path / "elsewhere"
        target.write_text("not the publisher's")
        link = Path(f"{db.engine.url.database}.xdspub-lock")
        link.symlink_to(target)
        with pytest.raises(ConfigError, match="is a symbolic link"):
            _lock(db).try_acquire()
        url = db.engine.url.render_as_string()
        result = CliRunner().invoke(cli, ["export", "--db", url, "--out", str(tmp_path / "o.xml")])
        assert result.exit_code == 2 and "is a symbolic link" in result.stderr
        assert target.read_text() == "not the publisher's"
        link.unlink()
        lock = _lock(db)
        try:
            assert lock.try_acquire()
            opened = [
                int(fd) for fd in os.listdir("/proc/self/fd")
                if os.path.realpath(f"/proc/self/fd/{fd}") == str(link)
            ]
            assert opened and not any(os.get_inheritable(fd) for fd in opened)
        finally:
            lock.release()
    finally:
        db.drop()
