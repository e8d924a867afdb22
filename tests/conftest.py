"""Shared fixtures: one Spark session for the whole run, and SQLite event logs to publish."""

from __future__ import annotations

import base64
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


@pytest.fixture(scope="session")
def spark():
    from publisher.spark import spark_session

    return spark_session("local[2]")


class SampleDb:
    """An SQLite database with the sample schema (no triggers unless asked) and its log."""

    def __init__(self, path: Path, triggers: str = "none") -> None:
        self.path = path
        self.settings = Settings(db_url=f"sqlite:///{path}", spark_master="local[2]")
        self.engine, self.dialect = connect(self.settings.db_url, create=True)
        init_db(self.engine, self.dialect, "indirect", "indirect_process", True, triggers)

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
            self.execute(f"INSERT INTO indirect_process ({names}) VALUES ({binds})", **values)

    def add_user(self, idu: int, fname: str | None, lname: str | None, photo_b64: str | None) -> None:
        photo = base64.b64decode(photo_b64) if photo_b64 is not None else None
        self.execute(
            "INSERT INTO usr (idu, fname, lname, photo) VALUES (:i, :f, :l, :p)",
            i=idu, f=fname, l=lname, p=photo,
        )

    def statuses(self) -> dict[int, str]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.text("SELECT record_id, status FROM indirect_process"))
            return {r[0]: r[1] for r in rows}

    def publish(self, out: Path, **overrides: object) -> tuple[etree._Element, CycleReport]:
        settings = replace(self.settings, **overrides)
        log = open_event_log(self.engine, self.dialect, settings)
        report = run_cycle(settings, self.engine, self.dialect, log, FileSink(out))
        return etree.parse(str(out)).getroot(), report


@pytest.fixture
def sample_db(tmp_path: Path, spark) -> SampleDb:
    db = SampleDb(tmp_path / "sample.db")
    yield db
    db.engine.dispose()


@pytest.fixture
def publish(sample_db: SampleDb, tmp_path: Path) -> Callable[..., tuple[etree._Element, CycleReport]]:
    def run(**overrides: object):
        return sample_db.publish(tmp_path / "out.xml", **overrides)

    return run


def canonical(element: etree._Element) -> str:
    """XML compared whitespace aside and without event-id (PUBLISHER.md section 4)."""
    element = etree.fromstring(etree.tostring(element))
    for node in element.iter():
        node.attrib.pop("event-id", None)
        if node.text is not None:
            node.text = node.text.strip() or None
        node.tail = None
    return etree.tostring(element, method="c14n").decode()
