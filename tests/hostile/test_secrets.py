"""Passwords never appear in logs, errors, metrics or process arguments, and Spark's UI is
off or on 127.0.0.1 only (issue 12, part 6, item 8).

The database URL holds a password and is given through XDSPUB_DB. The machine's
PostgreSQL uses trust authentication, so a URL with any password connects (MariaDB's root
has none, and refuses one: it is used here for the failures only). Every process of the
publisher's tree (the driver, the Spark JVM, the Python workers) has its command line
sampled while it runs; every listening socket they own must be on the loopback."""

from __future__ import annotations

import json
import urllib.request
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.conftest import SampleDb, free_port, server_url
from tests.hostile.conftest import (
    MASTER,
    Run,
    Xdspub,
    is_loopback,
    run_xdspub,
    unavailable,
)

pytestmark = pytest.mark.slow

PASSWORD = "S3cretPassw0rd"


def with_password(url: str) -> str:
    return sa.engine.make_url(url).set(password=PASSWORD).render_as_string(hide_password=False)


@pytest.fixture
def pg(tmp_path: Path):
    """The sample schema on the machine's PostgreSQL, and its URL with a password."""
    url = server_url("postgresql")
    secret = with_password(url)
    engine = sa.create_engine(secret)
    try:
        with engine.connect():
            pass
    except sa.exc.DBAPIError as exc:
        unavailable(
            f"PostgreSQL does not take a URL with a password (no trust authentication?): {exc.orig}"
        )
    finally:
        engine.dispose()
    db = SampleDb(url, f"xt_{uuid.uuid4().hex[:10]}")
    log = db.table("indirect_process")
    for i in range(1, 4):
        db.execute(
            f"INSERT INTO {log} (table_key, event_type, table_name) VALUES ('idu={i}', 4, 'usr')"
        )
    db.execute(f"INSERT INTO {log} (table_key, event_type, table_name) VALUES ('idu=9', 42, 'usr')")
    yield db, secret
    db.drop()


def assert_secret_kept(run: Run, *also: str) -> None:
    """The password is in none of the run's outputs, ``also``, or command lines."""
    assert PASSWORD not in run.stdout.decode(errors="replace"), "password on standard output"
    assert PASSWORD not in run.stderr, f"password on standard error:\n{run.stderr[-2000:]}"
    for text in also:
        assert PASSWORD not in text, f"password in:\n{text[-2000:]}"
    shown = [c[:200] for c in run.cmdlines if PASSWORD in c]
    assert not shown, f"password in process arguments: {shown}"


def assert_loopback_only(run: Run) -> None:
    exposed = sorted(entry for entry in run.listeners if not is_loopback(entry[0]))
    assert not exposed, f"listening beyond the loopback: {exposed}"


def test_export_keeps_the_password_secret(pg, tmp_path: Path) -> None:
    db, secret = pg
    run = run_xdspub(
        "export",
        "--schema",
        db.schema,
        "--out",
        str(tmp_path / "out.xml"),
        "--master",
        MASTER,
        "--small-cycle-rows",
        "0",  # on Spark: its JVM and workers are what may leak
        env={"XDSPUB_DB": secret},
        sockets=True,
    )
    assert run.code == 1, run.describe()  # one E row (event_type 42)
    assert "java" in run.tree_commands, "the Spark JVM was never seen in the process tree"
    assert_secret_kept(run)
    assert run.listeners, "no listening socket of the export was seen"
    assert_loopback_only(run)


@pytest.mark.parametrize("log_format", ["text", "json"])
def test_poll_keeps_the_password_secret(pg, tmp_path: Path, log_format: str) -> None:
    db, secret = pg
    port = free_port()
    poll = Xdspub(
        "poll",
        "--schema",
        db.schema,
        "--out",
        str(tmp_path / "out"),
        "--interval",
        "1",
        "--metrics-port",
        str(port),
        "--log-format",
        log_format,
        "--master",
        MASTER,
        env={"XDSPUB_DB": secret},
        stderr=tmp_path / "poll.log",
        sockets=True,
    )
    try:
        cycle = '"event": "cycle"' if log_format == "json" else " cycle "
        poll.wait_log(cycle)
        metrics = (
            urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=30).read().decode()
        )
    finally:
        run = poll.terminate()
    assert run.code == 0, run.describe()
    if log_format == "json":
        lines = [json.loads(line) for line in run.stderr.splitlines() if line.startswith("{")]
        assert any(line.get("event") == "row" for line in lines)  # the E row was logged
    assert "xdspub_rows_total" in metrics
    assert_secret_kept(run, metrics)
    assert_loopback_only(run)


def failing_urls() -> dict[str, tuple[str, str, tuple[int, ...]]]:
    """(URL, extra option, the exit codes it may give) of runs that fail, each holding the
    password."""
    return {
        "unreachable-postgresql": (
            f"postgresql+psycopg://root:{PASSWORD}@127.0.0.1:{free_port()}/test",
            "",
            (3,),
        ),
        "unreachable-mariadb": (
            f"mysql+pymysql://root:{PASSWORD}@127.0.0.1:{free_port()}/test",
            "",
            (3,),
        ),
        "no-such-driver": (f"postgresql+nosuchdriver://u:{PASSWORD}@h/db", "", (2,)),
        "no-such-database-kind": (f"nosuchdb://u:{PASSWORD}@h/db", "", (2,)),
        "bad-port": (f"postgresql+psycopg://u:{PASSWORD}@h:port/db", "", (2, 3)),
        "not-a-url": (f"u:{PASSWORD}@h/db", "", (2,)),
    }


@pytest.mark.parametrize("case", list(failing_urls()))
def test_failing_export_keeps_the_password_secret(case: str) -> None:
    url, _, codes = failing_urls()[case]
    run = run_xdspub(
        "export", "--out", "-", "--master", MASTER, env={"XDSPUB_DB": url}, timeout=300
    )
    assert run.code in codes, run.describe()
    assert_secret_kept(run)


def test_export_of_a_missing_event_log_keeps_the_password_secret(pg) -> None:
    db, secret = pg
    run = run_xdspub(
        "export",
        "--schema",
        db.schema,
        "--log-table",
        "no_such_log",
        "--out",
        "-",
        "--master",
        MASTER,
        env={"XDSPUB_DB": secret},
        timeout=300,
    )
    assert run.code == 2, run.describe()
    assert_secret_kept(run)


def test_export_of_a_missing_database_keeps_the_password_secret(pg) -> None:
    _db, secret = pg
    url = sa.engine.make_url(secret).set(database="no_such_database_xdspub")
    run = run_xdspub(
        "export",
        "--out",
        "-",
        "--master",
        MASTER,
        env={"XDSPUB_DB": url.render_as_string(hide_password=False)},
        timeout=300,
    )
    assert run.code in (2, 3), run.describe()
    assert_secret_kept(run)


@pytest.mark.parametrize("case", ["unreachable-postgresql", "no-such-driver", "bad-port"])
def test_failing_poll_keeps_the_password_secret(tmp_path: Path, case: str) -> None:
    url, _, _ = failing_urls()[case]
    poll = Xdspub(
        "poll",
        "--out",
        str(tmp_path / "out"),
        "--interval",
        "1",
        "--master",
        MASTER,
        env={"XDSPUB_DB": url},
        stderr=tmp_path / "poll.log",
    )
    try:
        poll.wait_for(lambda: poll.stderr_text().strip() != "", "a first log line", timeout=120)
    finally:
        run = poll.terminate()
    assert_secret_kept(run)
