"""Differential test: `xdspub export` on Spark, `xdspub export` in the driver (a cycle of
few rows) and bench/row_publisher.py, the plain row-at-a-time publisher, on the same
backlog. Documents must be equal byte for byte, the statuses and exit codes equal too.

The backlog is bench/backlog.py's (random events of all eight types over a few hundred
objects, a fifth of them on the child table usr_phone) plus a handful of rows for the other
statuses: W (non-canonical keys), E (bad rows, unpublishable current values), loopback,
vanished rows, the view, and references and memberships of the logical class. The publishers
run on the same database: after each, the statuses are set back to 'N', which makes
it an identical copy (publishers change nothing else), and keeps the schema= of the
associations the same, so the documents can be compared as bytes."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from lxml import etree

from publisher.cli import cli
from tests.conftest import canonical, server_url

BENCH = Path(__file__).resolve().parent.parent / "bench"
LOOPBACK = "<publisher>"  # replaced by the URL's user
EXTRA = [  # table_key, event_type, table_name, column_name, old_value, new_value, perpetrator
    ("idu= 5", 6, "usr"),
    ('idu="6"', 2, "usr", "fname", "a", "b"),
    ("idu=", 1, "usr", "fname", None, "x"),
    ("idu=7", 9, "usr"),
    ("idu=7", 1, "nosuch", "fname", None, "x"),
    ("idu=7", 1, "usr", "nosuch", None, "x"),
    ("idu=abc", 6, "usr"),
    ("idu=7", 1, "usr", "fname", None, "a\x01b"),
    ("idu=7", 3, "usr", "lname", None, None),
    ("idu=999999", 6, "usr"),
    ("idu=8", 6, "usr"), ("idu=8", 2, "usr", "lname", "o", "n"), ("idu=8", 4, "usr"),
    ("idu=8", 1, "usr", "fname", None, "again"),
    ("idu=9", 8, "usr", "fname"), ("idu=9", 2, "usr", "fname", "o", "n"),
    ("idu=10", 6, "usr"),  # its current fname cannot be published: E
    ("idu=11", 8, "usr", "lname"),  # its current fname cannot be published, lname can: S
    ("pk_empno=3", 6, "view_usr"), ("pk_empno= 4", 2, "view_usr", "fname", "o", "n"),
    ("idu=12", 1, "usr", "fname", None, "mine", LOOPBACK),
    ("idu=12", 4, "usr", None, None, None, "someone"),
    # Logical classes: references, a multi-valued reference, query-back of child tables.
    ("idu=13", 2, "usr", "manager", "2", "3"), ("idu=13", 1, "usr", "usr_mbr_of.idg", None, "7"),
    ("idu=14", 8, "usr", "usr_mbr_of.idg"), ("idu=15", 2, "usr", "manager", "14", None),
    ("idu=15", 8, "usr", "manager"), ("idu=16", 1, "usr_mbr_of", "idg", None, "8"),
    ("idu=14", 1, "usr", "grp.gname", None, "x"), ("idu=14+", 1, "usr_phone", "phoneno", None, "x"),
    ("idu=14", 1, "usr", "manager", None, "boss"),
]


def _load_backlog(url: str, schema: str) -> str:
    """bench/backlog.py's backlog with the EXTRA rows; the prefix of its tables."""
    spec = importlib.util.spec_from_file_location("backlog", BENCH / "backlog.py")
    backlog = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backlog)
    backlog.load(url, schema, rows=3000, objects=300, seed=11, child_share=0.2)
    engine = sa.create_engine(url)
    prefix = "" if engine.dialect.name == "sqlite" else f"{schema}."
    names = backlog.EVENT_COLUMNS + ("perpetrator",)
    insert = sa.text(
        f"INSERT INTO {prefix}indirect_process ({', '.join(names)}) "
        f"VALUES ({', '.join(':' + n for n in names)})"
    )
    with engine.begin() as conn:
        conn.execute(sa.text(f"UPDATE {prefix}usr SET fname = 'bad\x01' WHERE idu IN (10, 11)"))
        conn.execute(sa.text(f"INSERT INTO {prefix}grp (idg, gname) VALUES (7, 'staff'), (8, 'admins')"))
        conn.execute(sa.text(f"INSERT INTO {prefix}usr_mbr_of (idu, idg) VALUES (14, 8), (14, 7), (6, 7)"))
        for row in EXTRA:
            values = dict(zip(names, row + (None,) * (len(names) - len(row))))
            if values["perpetrator"] == LOOPBACK:
                values["perpetrator"] = engine.url.username
            conn.execute(insert, values)
    engine.dispose()
    return prefix


def _statuses(url: str, prefix: str, reset: bool = False) -> list[tuple[int, str]]:
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        rows = conn.execute(
            sa.text(f"SELECT record_id, status FROM {prefix}indirect_process ORDER BY record_id")
        ).all()
        if reset:
            conn.execute(sa.text(f"UPDATE {prefix}indirect_process SET status = 'N'"))
    engine.dispose()
    return [tuple(r) for r in rows]


def _documents(out: Path) -> dict[str, bytes]:
    files = sorted(out.iterdir()) if out.is_dir() else [out]
    return {f.name: f.read_bytes() for f in files}


@pytest.mark.parametrize(
    ("database", "out_name", "batch_size"),
    [("sqlite", "docs", "7"), ("postgresql", "all.xml", "1")],
)
def test_spark_driver_and_row_publishers_agree(database, out_name, batch_size, tmp_path, spark):
    if database == "sqlite":
        url, schema = f"sqlite:///{tmp_path / 'backlog.db'}", "indirect"
    else:
        url, schema = server_url(database), f"xt_{uuid.uuid4().hex[:10]}"
    runs = {}
    try:
        prefix = _load_backlog(url, schema)
        options = ["--db", url, "--schema", schema, "--log-table", f"{prefix}indirect_process",
                   "--batch-size", batch_size]
        explained = CliRunner().invoke(cli, ["explain", *options[:6], "--format", "json"],
                                       catch_exceptions=False)
        assert explained.exit_code == 0, explained.output
        for plan, rows in (("spark", "0"), ("driver", "100000")):
            out = tmp_path / plan / out_name
            out.parent.mkdir()
            exported = CliRunner().invoke(
                cli, ["export", *options, "--out", str(out), "--master", "local[2]",
                      "--small-cycle-rows", rows],
                catch_exceptions=False,
            )
            runs[plan] = (exported.exit_code, _statuses(url, prefix, reset=True), _documents(out))
            assert ("Spark start" in exported.output) == (plan == "spark"), exported.output
        row_out = tmp_path / "row" / out_name
        row_out.parent.mkdir()
        published = subprocess.run(
            [sys.executable, str(BENCH / "row_publisher.py"), *options, "--out", str(row_out)],
            capture_output=True, text=True,
        )
        runs["row"] = (published.returncode, _statuses(url, prefix), _documents(row_out))
    finally:
        if database != "sqlite":
            engine = sa.create_engine(url)
            with engine.begin() as conn:
                conn.execute(sa.text(f"DROP SCHEMA IF EXISTS {schema} CASCADE"))
            engine.dispose()

    code, statuses, documents = runs["row"]
    _explain_agrees(explained.output, statuses, documents)
    assert code == 1, published.stderr
    assert {s for _, s in statuses} == {"S", "W", "E"}
    for plan in ("spark", "driver"):
        assert runs[plan][0] == code, plan
        assert runs[plan][1] == statuses, plan
        assert runs[plan][2] == documents, plan


def _explain_agrees(explained: str, statuses: list[tuple[int, str]], documents: dict[str, bytes]) -> None:
    """`xdspub explain` before the cycle said what it did: each row's status, and each
    published row's command (its place in the cycle's order and its XML)."""
    rows = [json.loads(line) for line in explained.splitlines()]
    assert [(r["record_id"], r["status"]) for r in rows] == statuses
    commands = [
        canonical(command)
        for name in sorted(documents)
        for command in etree.fromstring(documents[name]).find("input")
    ]
    published = {r["command"]: r["xml"] for r in rows if r["fate"] == "published"}
    assert sorted(published) == list(range(1, len(commands) + 1))
    assert [canonical(etree.fromstring(published[n])) for n in sorted(published)] == commands


def test_scale_benchmark_runs_and_both_publishers_agree(spark):
    """bench/scale.py end to end on a small backlog: it must keep working, and it checks
    the two publishers' documents and statuses itself (its figures are not asserted)."""
    url = server_url("postgresql")
    schema = f"xt_{uuid.uuid4().hex[:10]}"
    result = subprocess.run(
        [sys.executable, str(BENCH / "scale.py"), "--url", url, "--schema", schema,
         "--rows", "3000", "--objects", "300"],
        capture_output=True, text=True, timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "same output: yes" in result.stdout
    assert "export / row publisher: events/s x" in result.stdout
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        left = conn.execute(sa.text("SELECT count(*) FROM pg_namespace WHERE nspname = :s"), {"s": schema})
        assert left.scalar() == 0  # the benchmark drops its schema
    engine.dispose()
