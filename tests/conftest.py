"""Shared fixtures: one Spark session for the whole run, and SQLite event logs to publish."""

from __future__ import annotations

import base64
import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from lxml import etree

from publisher.cycle import CycleReport, run_cycle
from publisher.delivery.sinks import FileSink
from publisher.settings import Settings
from publisher.source.database import connect
from publisher.source.event_log import open_event_log
from publisher.source.init_db import init_db

LOG_COLUMNS = ("table_key", "event_type", "table_name", "column_name", "old_value", "new_value")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the Spark session is slow: the quick loop (`-m "not slow"`) is the
    rules and readers in plain Python. Tests that start Spark in a process of their own
    carry the marker themselves."""
    for item in items:
        if "spark" in item.fixturenames:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="session")
def spark():
    from publisher.spark import spark_session

    return spark_session("local[2]")


SERVERS = {
    "postgresql": os.environ.get("XDSPUB_TEST_POSTGRESQL", "postgresql+psycopg://root@127.0.0.1:5432/test"),
    "mariadb": os.environ.get("XDSPUB_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306/test"),
}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def unavailable(message: str) -> None:
    """Something a test needs is missing: a failure in CI, a skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def server_url(name: str) -> str:
    """The test server's URL; unreachable is a failure in CI and a skip elsewhere."""
    url = SERVERS[name]
    try:
        engine = sa.create_engine(url)
        with engine.connect():
            pass
        engine.dispose()
    except sa.exc.DBAPIError as exc:
        unavailable(f"{name} test server unreachable at {url}: {exc.orig}")
    return url


class SampleDb:
    """A database with the sample schema (no triggers unless asked) and its event log.

    SQLite: a new file. PostgreSQL and MariaDB: a new schema, dropped afterwards."""

    def __init__(self, url: str, schema: str = "indirect", triggers: str = "none") -> None:
        self.settings = Settings(db_url=url, schema=schema, spark_master="local[2]")
        self.engine, self.dialect = connect(url, create=True)
        self.schema = schema
        init_db(self.engine, self.dialect, schema, "indirect_process", True, triggers)

    def table(self, name: str) -> str:
        return f"{self.schema}.{name}" if self.dialect.has_schemas else name

    def drop(self) -> None:
        if self.dialect.has_schemas:
            drop = "DROP SCHEMA {} CASCADE" if self.dialect.name == "postgresql" else "DROP DATABASE {}"
            with self.engine.begin() as conn:
                conn.execute(sa.text(drop.format(self.schema)))
        self.engine.dispose()

    def execute(self, sql: str, **params: object) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.text(sql), params)

    def log(self, *rows: tuple, **columns: object) -> None:
        """Append event log rows given as (table_key, event_type, table_name, column_name,
        old_value, new_value) tuples, shorter tuples padded with NULL."""
        for row in rows:
            values = dict(zip(LOG_COLUMNS, row + (None,) * (len(LOG_COLUMNS) - len(row))))
            values.update(columns)
            names = ", ".join(values)
            binds = ", ".join(f":{n}" for n in values)
            self.execute(f"INSERT INTO {self.table('indirect_process')} ({names}) VALUES ({binds})", **values)

    def add_user(self, idu: int, fname: str | None, lname: str | None, photo_b64: str | None) -> None:
        photo = base64.b64decode(photo_b64) if photo_b64 is not None else None
        self.execute(
            f"INSERT INTO {self.table('usr')} (idu, fname, lname, photo) VALUES (:i, :f, :l, :p)",
            i=idu, f=fname, l=lname, p=photo,
        )

    def statuses(self) -> dict[int, str]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.text(f"SELECT record_id, status FROM {self.table('indirect_process')}"))
            return {r[0]: r[1] for r in rows}

    def publish(self, out: Path, **overrides: object) -> tuple[etree._Element, CycleReport]:
        settings = replace(self.settings, **overrides)
        log = open_event_log(self.engine, self.dialect, settings)
        report = run_cycle(settings, self.engine, self.dialect, log, FileSink(out))
        return etree.parse(str(out)).getroot(), report


def make_sample_db(kind: str, tmp_path: Path, triggers: str = "none") -> SampleDb:
    if kind == "sqlite":
        return SampleDb(f"sqlite:///{tmp_path / 'sample.db'}", triggers=triggers)
    return SampleDb(server_url(kind), f"xt_{uuid.uuid4().hex[:10]}", triggers)


@pytest.fixture
def sample_db(tmp_path: Path, spark) -> SampleDb:
    db = make_sample_db("sqlite", tmp_path)
    yield db
    db.drop()


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def any_db(request, tmp_path: Path, spark) -> SampleDb:
    """The sample database on each of the three databases in turn."""
    db = make_sample_db(request.param, tmp_path)
    yield db
    db.drop()


@pytest.fixture
def publish(sample_db: SampleDb, tmp_path: Path) -> Callable[..., tuple[etree._Element, CycleReport]]:
    def run(**overrides: object):
        return sample_db.publish(tmp_path / "out.xml", **overrides)

    return run


def canonical(element: etree._Element) -> str:
    """XML compared whitespace aside and without event-id (docs/reduction.md, Command order and event-id)."""
    element = etree.fromstring(etree.tostring(element))
    for node in element.iter():
        node.attrib.pop("event-id", None)
        if node.text is not None:
            node.text = node.text.strip() or None
        node.tail = None
    return etree.tostring(element, method="c14n").decode()
