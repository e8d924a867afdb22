"""On PostgreSQL a Spark cycle writes its statuses in a transaction begun as soon as its rows
are classified and committed once the documents are durable (docs/statuses.md,
Write-back): no other session sees a row marked before its document is durable, the rows
the object pass finds otherwise (W) get their letter, and a failed delivery marks nothing
and leaves nothing locked."""

from __future__ import annotations

import time
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa

from publisher.cycle import run_cycle
from publisher.delivery.sinks import FileSink
from publisher.errors import SinkError
from publisher.outcome.status import EarlyStatuses
from publisher.source.event_log import open_event_log
from tests.conftest import SampleDb, make_sample_db

ROWS = (
    ("idu=1", 1, "usr", "fname", None, "Ana"),
    ("idu= 2", 1, "usr", "fname", None, "Bo"),  # not canonical: W
    ("idu=3", 9, "usr", "fname", None, "Cy"),  # unknown event type: E when read
    ("idu=4", 4, "usr"),
)


@pytest.fixture
def pg_db(tmp_path: Path, spark) -> SampleDb:
    db = make_sample_db("postgresql", tmp_path)
    db.log(*ROWS)
    yield db
    db.drop()


class WatchedSink(FileSink):
    """A file sink that records the statuses other sessions see while it writes, and may fail."""

    def __init__(self, path: Path, db: SampleDb, fail: bool = False, kill: bool = False) -> None:
        super().__init__(path)
        self.db, self.fail, self.kill, self.seen, self.locked = db, fail, kill, None, None

    def _locked_rows(self) -> int:
        """How many event log rows another transaction holds, once it holds all of them
        (the early UPDATE runs in a thread of its own: give it a few seconds)."""
        log = self.db.table("indirect_process")
        query = f"SELECT count(*) FROM (SELECT 1 FROM {log} FOR UPDATE SKIP LOCKED) AS free"
        deadline = time.monotonic() + 10
        while True:
            with self.db.engine.begin() as conn:
                free = conn.execute(sa.text(query)).scalar_one()
            if not free or time.monotonic() > deadline:
                return len(ROWS) - free
            time.sleep(0.05)

    def publish(self, commands) -> int:
        self.seen = self.db.statuses()
        self.locked = self._locked_rows()
        if self.kill:  # the early transaction's session ends, as a server timeout would end it
            self.db.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE pid <> pg_backend_pid() AND state = 'idle in transaction' AND query LIKE :q",
                q=f"%{self.db.table('indirect_process')}%",
            )
        if self.fail:
            raise SinkError(f"cannot write {self.path}: no room")
        return super().publish(commands)


def _cycle(db: SampleDb, sink: FileSink):
    settings = replace(db.settings, spark_master="local[2]", small_cycle_rows=0)
    log = open_event_log(db.database, settings)
    return run_cycle(settings, db.database, log, sink)


def test_rows_are_marked_only_once_the_documents_are_durable(pg_db: SampleDb, tmp_path: Path) -> None:
    sink = WatchedSink(tmp_path / "out.xml", pg_db)
    report = _cycle(pg_db, sink)
    assert report.on_spark
    assert set(sink.seen.values()) == {"N"}
    assert sink.locked == len(ROWS)  # updated already, in the transaction not yet committed
    assert sorted(pg_db.statuses().values()) == ["E", "S", "S", "W"]


def test_a_failed_delivery_marks_nothing_and_holds_no_lock(pg_db: SampleDb, tmp_path: Path) -> None:
    with pytest.raises(SinkError):
        _cycle(pg_db, WatchedSink(tmp_path / "out.xml", pg_db, fail=True))
    assert set(pg_db.statuses().values()) == {"N"}
    # The rolled-back transaction left its rows free: the next cycle marks them.
    pg_db.execute(f"SET lock_timeout = '5s'; UPDATE {pg_db.table('indirect_process')} SET status = 'N'")
    _cycle(pg_db, WatchedSink(tmp_path / "again.xml", pg_db))
    assert sorted(pg_db.statuses().values()) == ["E", "S", "S", "W"]


def test_a_lost_early_transaction_is_written_afresh_once_the_documents_are_durable(
    pg_db: SampleDb, tmp_path: Path
) -> None:
    sink = WatchedSink(tmp_path / "out.xml", pg_db, kill=True)
    _cycle(pg_db, sink)
    assert sink.locked == len(ROWS) and set(sink.seen.values()) == {"N"}
    assert sorted(pg_db.statuses().values()) == ["E", "S", "S", "W"]


def test_a_row_another_session_marked_keeps_its_letter(pg_db: SampleDb) -> None:
    settings = replace(pg_db.settings)
    log = open_event_log(pg_db.database, settings)
    ids = sorted(pg_db.statuses())
    # Set to S by someone else after the cycle read it, before its early UPDATE.
    pg_db.execute(f"UPDATE {pg_db.table('indirect_process')} SET status = 'S' WHERE record_id = {ids[1]}")
    early = EarlyStatuses(pg_db.engine, log, pg_db.dialect.early_statuses)
    try:
        early.begin([("S", ids[0], ids[-1])])
        early.commit([("W", ids[1], ids[1]), ("W", ids[2], ids[2])])  # the object pass's W rows
    finally:
        early.close()
    statuses = pg_db.statuses()
    assert [statuses[i] for i in ids] == ["S", "S", "W", "S"]
