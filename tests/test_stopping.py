"""Stopping ``xdspub export`` (docs/delivery.md, Stopping export; Durability): SIGINT and
SIGTERM end it with 130 and 143 and one line, Spark's JVM with it; nothing is marked that
was not delivered, no temporary file is left, and what a killed run left is swept by the
next one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import sqlalchemy as sa

from publisher.delivery.work import WORK_PREFIX
from tests.conftest import SampleDb

pytestmark = pytest.mark.slow  # each test runs export as a process of its own

OLD = b"<the last export's document/>"


def deletes(db: SampleDb, count: int) -> None:
    """Type-4 events on distinct objects: each row is one command (no query-back)."""
    with db.engine.begin() as conn:
        conn.execute(
            sa.text("INSERT INTO indirect_process (table_key, event_type, table_name) VALUES (:k, 4, 'usr')"),
            [{"k": f"idu={i}"} for i in range(1, count + 1)],
        )


def export(db: SampleDb, out: Path, *extra: str) -> subprocess.Popen:
    """``xdspub export`` in a process group of its own, as a shell starts a command."""
    return subprocess.Popen(
        # The deletes are many on purpose: not the delete guard's to hold.
        [sys.executable, "-m", "publisher", "export", "--db", db.settings.db_url, "--out", str(out),
         "--max-deletes", "none", *extra],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True,
    )


def when(condition: Callable[[], bool], process: subprocess.Popen, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert process.poll() is None, process.stderr.read().decode()
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def entries(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


@pytest.mark.not_xds("stopped/out.xml")
def test_ctrl_c_on_spark_exits_130_with_one_line_and_leaves_nothing(sample_db, tmp_path):
    deletes(sample_db, 50_000)
    folder = tmp_path / "stopped"
    folder.mkdir()
    (folder / "out.xml").write_bytes(OLD)
    process = export(sample_db, folder / "out.xml", "--small-cycle-rows", "0", "--master", "local[2]")
    # Ctrl-C while Spark plans the cycle: the terminal signals the whole process group.
    when(lambda: any(name.startswith(WORK_PREFIX) for name in entries(folder)), process)
    os.killpg(process.pid, signal.SIGINT)
    assert process.wait(60) == 130
    assert process.stderr.read().decode() == "xdspub: stopped by SIGINT\n"
    assert entries(folder) == ["out.xml"] and (folder / "out.xml").read_bytes() == OLD
    assert set(sample_db.statuses().values()) == {"N"}
    assert group_ended(process.pid)  # Spark's JVM, and a Python worker it was starting


def group_ended(group: int, timeout: float = 30) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def test_ctrl_c_while_spark_starts_leaves_no_jvm(sample_db, tmp_path):
    """pyspark stopped in mid-start would leave its JVM running for ever."""
    deletes(sample_db, 10)
    process = export(sample_db, tmp_path / "out.xml", "--small-cycle-rows", "0", "--master", "local[2]")
    children = Path(f"/proc/{process.pid}/task/{process.pid}/children")
    when(lambda: children.read_text().strip() != "", process)  # Spark's JVM is starting
    os.killpg(process.pid, signal.SIGINT)
    assert process.wait(60) == 130
    assert process.stderr.read().decode() == "xdspub: stopped by SIGINT\n"
    assert group_ended(process.pid) and set(sample_db.statuses().values()) == {"N"}


def test_sigterm_while_documents_are_written_exits_143_and_leaves_nothing(sample_db, tmp_path):
    deletes(sample_db, 20_000)
    out = tmp_path / "documents"
    process = export(sample_db, out, "--small-cycle-rows", "100000")
    # Documents being written: temporary files in a work folder of the output folder.
    staged = lambda: out.is_dir() and any(  # noqa: E731
        name.endswith(".tmp") for work in out.glob(f"{WORK_PREFIX}*") for name in entries(work))
    when(staged, process)
    process.send_signal(signal.SIGTERM)  # as `kill PID` or systemd sends it
    assert process.wait(60) == 143
    assert process.stderr.read().decode() == "xdspub: stopped by SIGTERM\n"
    assert entries(out) == []
    assert set(sample_db.statuses().values()) == {"N"}


WRITER = """
import sys, time
from pathlib import Path
from publisher.delivery.documents import write_durably

def write(stream):
    stream.write(b"<half a document")
    stream.flush()
    print("writing", flush=True)
    time.sleep(600)

write_durably(Path(sys.argv[1]), write)
"""


@pytest.mark.not_xds("out.xml")
def test_what_a_killed_export_left_is_swept_by_the_next_run(sample_db, tmp_path):
    out = tmp_path / "out.xml"
    out.write_bytes(OLD)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(out)], stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "writing\n"
    finally:
        writer.kill()  # kill -9 in mid-write
        writer.wait()
    (left,) = [p for p in tmp_path.iterdir() if p.name.startswith(WORK_PREFIX)]
    assert any(p.name.startswith(".out.xml.") and p.name.endswith(".tmp") for p in left.iterdir())
    process = export(sample_db, out)  # nothing pending: no document, but the sweep
    assert process.wait(60) == 0, process.stderr.read().decode()
    assert not left.exists() and out.read_bytes() == OLD
