"""The event log's wake-up trigger on PostgreSQL (sql/postgresql/wake.sql, made by
``init-db --wake``) and the service's listener (service/wake_ups.py): one notification per
committed transaction that logged rows, none for one rolled back, and the listener wakes
on them; no trigger where the database has no notifications."""

from __future__ import annotations

import threading

import psycopg
import pytest
import sqlalchemy as sa
from psycopg import sql

from publisher.errors import ConfigError
from publisher.service.wake_ups import WakeUps
from publisher.source.database import libpq_conninfo
from publisher.source.init_db import init_db
from tests.conftest import make_sample_db


@pytest.fixture
def pg(tmp_path):
    db = make_sample_db("postgresql", tmp_path)
    init_db(db.database, db.schema, "indirect_process", False, "none", wake=True)
    yield db
    db.drop()


def channel(db, schema: str | None = None) -> str | None:
    with db.engine.connect() as conn:
        query = sa.text(db.dialect.wake_channel_query)
        return conn.execute(query, {"schema": schema or db.schema, "table": "indirect_process"}).scalar()


def received(listener: psycopg.Connection) -> list[str]:
    return [n.channel for n in listener.notifies(timeout=0.5)]


def test_one_notification_a_transaction_that_logged_rows(pg):
    log = pg.table("indirect_process")
    with psycopg.connect(libpq_conninfo(pg.engine), autocommit=True) as listener:
        listener.execute(sql.SQL("LISTEN {}").format(sql.Identifier(channel(pg))))
        with pg.engine.begin() as conn:  # three statements, one transaction
            for idu in range(3):
                conn.exec_driver_sql(f"INSERT INTO {log} (table_key, event_type, table_name) "
                                     f"VALUES ('idu={idu}', 4, 'usr')")
        assert received(listener) == [channel(pg)]

        with pg.engine.connect() as conn:
            conn.exec_driver_sql(f"INSERT INTO {log} (table_key, event_type) VALUES ('idu=9', 4)")
            conn.rollback()
        assert received(listener) == []

        pg.log(("idu=1", 4, "usr"), ("idu=2", 4, "usr"))  # two transactions
        assert received(listener) == [channel(pg)] * 2


def test_the_listener_wakes_the_service(pg):
    wake = threading.Event()
    with WakeUps(libpq_conninfo(pg.engine), channel(pg), wake, longest_pause=1.0):
        assert wake.wait(10)  # set once listening: rows may have come before
        wake.clear()
        pg.log(("idu=1", 4, "usr"))
        assert wake.wait(10)


def test_no_channel_without_the_trigger_and_no_trigger_without_notifications(pg, tmp_path):
    assert channel(pg).startswith("xdspub_")
    assert channel(pg, "no_such_schema") is None
    plain = make_sample_db("postgresql", tmp_path)
    try:
        assert channel(plain) is None  # init-db without --wake
    finally:
        plain.drop()
    lite = make_sample_db("sqlite", tmp_path)
    with pytest.raises(ConfigError, match="--wake"):
        init_db(lite.database, lite.schema, "indirect_process", False, "none", wake=True)
    lite.drop()
