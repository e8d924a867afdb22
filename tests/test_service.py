"""``xdspub poll`` as a real process: signals, kill -9 and restart, takeover, faults,
logs, metrics, heartbeat and post-polling statements."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa
from lxml import etree

from publisher.source.init_db import init_db
from tests.conftest import SampleDb, free_port, make_sample_db
from tests.private_servers import start_private_server

pytestmark = pytest.mark.slow  # each test runs the service as a process of its own

INTERVAL = 1


class Poll:
    """One ``xdspub poll`` process in a process group of its own (with its Spark JVM)."""

    def __init__(self, db, out: Path, log_path: Path, *extra: str) -> None:
        self.log_path = log_path
        self.stream = open(log_path, "ab")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "publisher", "poll", "--db", db.settings.db_url,
             "--schema", db.schema, "--out", str(out), "--interval", str(INTERVAL),
             "--master", "local[2]", *extra],
            stdout=subprocess.DEVNULL, stderr=self.stream, start_new_session=True,
        )

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 120) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return time.monotonic()
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"no {what} within {timeout}s; log:\n{self.log()[-3000:]}")

    def wait_log(self, text: str, timeout: float = 120) -> float:
        return self.wait_for(lambda: text in self.log(), repr(text), timeout)

    def terminate(self) -> int:
        self.process.send_signal(signal.SIGTERM)  # the service's own process only
        code = self.process.wait(timeout=120)
        self.stream.close()
        return code

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)  # the whole service, JVM included
        self.process.wait(timeout=30)
        self.stream.close()


@pytest.fixture(params=["postgresql", "mariadb"])
def server(request, tmp_path):
    db = make_sample_db(request.param, tmp_path)
    yield db
    db.drop()


def drop_other_sessions(db) -> None:
    """Every other session on the test database is killed, as a network fault would."""
    with db.engine.begin() as conn:
        if db.dialect.name == "postgresql":
            conn.execute(sa.text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND pid <> pg_backend_pid()"
            ))
            return
        ids = conn.execute(sa.text(
            "SELECT id FROM information_schema.processlist "
            "WHERE db = DATABASE() AND id <> CONNECTION_ID()"
        )).scalars().all()
        for session in ids:
            conn.execute(sa.text(f"KILL {int(session)}"))


@pytest.fixture(params=["postgresql", "mariadb"])
def private_server(request, tmp_path):
    """A server of the test's own, which it may restart, with the sample schema."""
    server = start_private_server(request.param)
    try:
        db = SampleDb(server.url, f"xt_{uuid.uuid4().hex[:10]}")
        yield server, db
        db.engine.dispose()
    finally:
        server.stop()


@pytest.fixture
def lite(tmp_path):
    db = make_sample_db("sqlite", tmp_path)
    yield db
    db.drop()


def deletes(db, first: int, count: int) -> None:
    """Type-4 events on distinct objects: each row is one command and one document."""
    log = db.table("indirect_process")
    with db.engine.begin() as conn:
        conn.execute(
            sa.text(f"INSERT INTO {log} (table_key, event_type, table_name) VALUES (:k, 4, 'usr')"),
            [{"k": f"idu={i}"} for i in range(first, first + count)],
        )


def assert_marked_rows_were_delivered(db, out: Path) -> dict[int, str]:
    statuses = db.statuses()
    delivered = {int(p.stem) for p in out.glob("*.xml")}
    marked = {rid for rid, letter in statuses.items() if letter != "N"}
    assert marked <= delivered, f"marked without a document: {sorted(marked - delivered)[:10]}"
    return statuses


def test_sigterm_finishes_the_cycle_and_exits_0(lite, tmp_path):
    deletes(lite, 1, 200)
    poll = Poll(lite, tmp_path / "out", tmp_path / "poll.log")
    poll.wait_log("lock acquired")
    assert poll.terminate() == 0
    log = poll.log()
    assert log.index("info cycle rows=200") < log.index("info stopped")
    assert set(lite.statuses().values()) == {"S"}


def test_max_errors_stops_the_service_after_a_cycle_with_more_e_rows(lite, tmp_path):
    lite.log(("idu=1", 9, "usr"), ("idu=2", 9, "usr"))  # unknown event_type: E
    poll = Poll(lite, tmp_path / "out", tmp_path / "poll.log", "--max-errors", "2")
    poll.wait_log("info cycle rows=2 commands=0 documents=0 status_E=2")  # not more than 2: on
    with lite.engine.begin() as conn:  # one transaction: one cycle reads all four
        conn.execute(
            sa.text(f"INSERT INTO {lite.table('indirect_process')} (table_key, event_type, table_name) "
                    "VALUES (:k, :t, 'usr')"),
            [{"k": f"idu={i}", "t": 4 if i == 4 else 9} for i in range(3, 7)],
        )
    code = poll.process.wait(timeout=120)
    poll.stream.close()
    assert code == 7, poll.log()
    assert poll.log().rstrip().endswith(
        'error stopped reason="a cycle marked 3 rows E, more than --max-errors 2" exit_code=7'
    )
    # That cycle was published and marked before the service stopped.
    assert lite.statuses() == {1: "E", 2: "E", 3: "E", 4: "S", 5: "E", 6: "E"}
    assert [p.name for p in (tmp_path / "out").glob("*.xml")] == ["00000000000000000004.xml"]


def test_tables_without_a_key_are_named_once_a_run(lite, tmp_path):
    """docs/classes.md, Keys: triggerless passes a keyless table by every cycle; the
    service names it once."""
    lite.execute("CREATE TABLE audit_note (note TEXT)")
    poll = Poll(lite, tmp_path / "out", tmp_path / "poll.log", "--mode", "triggerless",
                "--startup", "all", "--state-dir", str(tmp_path / "state"))
    poll.wait_for(lambda: poll.log().count(" info cycle ") >= 3, "three cycles")
    assert poll.terminate() == 0
    named = [line for line in poll.log().splitlines() if " tables not read " in line]
    assert len(named) == 1 and " warning tables not read tables=audit_note " in named[0]


def test_kill_9_at_any_moment_then_restart_loses_nothing(server, tmp_path):
    out = tmp_path / "out"
    deletes(server, 1, 300)
    for attempt, moment in enumerate((1, 60, 150)):
        poll = Poll(server, out, tmp_path / f"poll{attempt}.log", "--query-limit", "40")
        poll.wait_for(lambda: len(list(out.glob("*.xml"))) >= moment, f"{moment} documents")
        poll.kill()
        assert_marked_rows_were_delivered(server, out)
    poll = Poll(server, out, tmp_path / "final.log", "--query-limit", "40")
    # The killed services may have published the last rows already (small cycles are
    # quick): stop this one once it runs, not while its interpreter starts.
    poll.wait_log("lock acquired")
    poll.wait_for(lambda: set(server.statuses().values()) == {"S"}, "every row published")
    assert poll.terminate() == 0
    assert_marked_rows_were_delivered(server, out)
    assert len(list(out.glob("*.xml"))) == 300


def test_a_second_publisher_waits_and_takes_over(server, tmp_path):
    out = tmp_path / "out"
    first = Poll(server, out, tmp_path / "first.log")
    first.wait_log("lock acquired")
    second = Poll(server, out, tmp_path / "second.log")
    second.wait_log("waiting for the publisher lock")
    deletes(server, 1, 5)
    first.wait_for(lambda: set(server.statuses().values()) == {"S"}, "the first's cycle")
    assert "lock acquired" not in second.log()

    first.kill()
    killed = time.monotonic()
    took_over = second.wait_log("lock acquired")
    assert took_over - killed <= 2 * INTERVAL + 1
    deletes(server, 6, 5)
    second.wait_for(lambda: set(server.statuses().values()) == {"S"}, "the second's cycle")
    assert second.terminate() == 0


def test_dropped_connections_and_an_unwritable_sink_are_retried(server, tmp_path):
    out = tmp_path / "out"
    poll = Poll(server, out, tmp_path / "poll.log")
    poll.wait_log("lock acquired")

    drop_other_sessions(server)
    deletes(server, 1, 3)
    poll.wait_for(lambda: set(server.statuses().values()) == {"S"}, "publication after a drop")

    out.rename(tmp_path / "moved")
    out.write_text("not a folder")
    deletes(server, 4, 3)
    poll.wait_log("cycle failed")
    assert [s for s in server.statuses().values()].count("N") == 3
    out.unlink()
    (tmp_path / "moved").rename(out)
    poll.wait_for(lambda: set(server.statuses().values()) == {"S"}, "publication after the sink is back")
    assert poll.terminate() == 0
    assert_marked_rows_were_delivered(server, out)
    if server.dialect.name == "postgresql":  # an event log made without init-db --wake
        assert "info polling only" in poll.log()


def test_logged_rows_wake_the_service_before_its_interval_ends(tmp_path):
    """PostgreSQL, the event log made with init-db --wake: its trigger notifies, so a service
    polling every ten minutes still publishes within seconds; also after its listening
    session is killed."""
    db = make_sample_db("postgresql", tmp_path)
    try:
        init_db(db.database, db.schema, "indirect_process", False, "none", wake=True)
        out = tmp_path / "out"
        poll = Poll(db, out, tmp_path / "poll.log", "--interval", "600")
        poll.wait_log("info listening")
        deletes(db, 1, 3)
        poll.wait_for(lambda: set(db.statuses().values()) == {"S"}, "publication on a wake-up", 60)

        drop_other_sessions(db)
        poll.wait_for(lambda: poll.log().count("info listening") == 2, "listening again", 60)
        deletes(db, 4, 3)
        poll.wait_for(lambda: set(db.statuses().values()) == {"S"}, "publication after a drop", 60)
        assert poll.terminate() == 0
        assert_marked_rows_were_delivered(db, out)
    finally:
        db.drop()


@pytest.mark.restarts_server
def test_a_database_restart_is_retried(private_server, tmp_path):
    server, db = private_server
    out = tmp_path / "out"
    poll = Poll(db, out, tmp_path / "poll.log")
    poll.wait_log("lock acquired")
    deletes(db, 1, 3)
    poll.wait_for(lambda: set(db.statuses().values()) == {"S"}, "publication before the restart")

    server.restart()
    deletes(db, 4, 3)
    poll.wait_for(lambda: set(db.statuses().values()) == {"S"}, "publication after a restart")
    assert poll.terminate() == 0
    assert_marked_rows_were_delivered(db, out)


def test_json_logs_metrics_heartbeat_and_post_polling_statements(lite, tmp_path):
    lite.execute("CREATE TABLE marker (n INTEGER)")
    port = free_port()
    out = tmp_path / "out"
    deletes(lite, 1, 3)
    lite.log(("idu=1", 9, "usr"))
    poll = Poll(lite, out, tmp_path / "poll.log", "--log-format", "json", "--metrics-port", str(port),
                "--heartbeat", "0.02", "--post-statements", "INSERT INTO marker VALUES (1)")
    poll.wait_for(lambda: (out / "heartbeat.xml").exists(), "a heartbeat")
    metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
    assert poll.terminate() == 0

    lines = [json.loads(line) for line in poll.log().splitlines() if line.startswith("{")]
    cycle = next(line for line in lines if line["event"] == "cycle")
    assert cycle["rows"] == 4 and cycle["status_S"] == 3 and cycle["status_E"] == 1
    error = next(line for line in lines if line["event"] == "row")
    assert error["record_id"] == 4 and "unknown event_type 9" in error["reason"]
    assert 'xdspub_rows_total{status="S"} 3.0' in metrics
    assert "xdspub_pending_rows 0.0" in metrics
    assert "xdspub_cycle_duration_seconds_count 1.0" in metrics
    status = etree.parse(str(out / "heartbeat.xml")).find("input/status")
    assert status.attrib == {"level": "success", "type": "heartbeat"}
    with lite.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM marker")).scalar() == 1
