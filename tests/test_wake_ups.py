"""The event log's wake-up notifications on PostgreSQL (sql/postgresql/event_log.sql,
service/wake_ups.py): one per committed transaction that logged rows, none for one rolled
back, and the service's listener wakes on them."""

from __future__ import annotations

import threading

import psycopg
import pytest
from psycopg import sql

from publisher.service.wake_ups import WakeUps
from publisher.source.database import libpq_conninfo
from tests.conftest import make_sample_db


@pytest.fixture
def pg(tmp_path):
    db = make_sample_db("postgresql", tmp_path)
    yield db
    db.drop()


def channel(db) -> str:
    return db.dialect.wake_channel(db.schema, "indirect_process")


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
