"""The lineage record (docs/delivery.md, Lineage): on the differential backlog, on Spark
and in the driver, every row has one line, and a published row's line names the document
and the command that carried it; `poll` writes one file per cycle."""

from __future__ import annotations

import json
import time
import uuid
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from lxml import etree

from publisher.cli import cli
from publisher.cycle import run_cycle
from publisher.delivery.sinks import FileSink
from publisher.errors import SinkError
from publisher.model.commands import association
from publisher.reduce.rules import Classifier
from publisher.settings import Settings
from publisher.source.database import connect
from publisher.source.event_log import open_event_log
from publisher.source.schema import published_catalogue
from tests.conftest import make_sample_db, server_url
from tests.test_differential import _load_backlog
from tests.test_service import Poll, deletes

PUBLISHER = "lin_publisher"
MORE = [  # table_key, event_type, table_name, column_name, old_value, new_value, perpetrator
    ("idu=20", 2, "usr", "fname", None, None),  # a modify with nothing to send
    ("idu=21", 1, "usr", "fname", None, "mine", PUBLISHER),  # loopback
    ("idg=7", 1, "grp", "gname", None, "left out"),  # not selected
]
RULES = {"row beats field", "query-back beats field", "before a delete",
         "query-back of a vanished row", "no attribute to send", "loopback", "not selected"}


def _log_rows(url: str, prefix: str) -> list[dict]:
    engine = sa.create_engine(url)
    names = ("record_id", "table_key", "event_type", "table_name", "column_name", "old_value",
             "new_value", "status")
    with engine.begin() as conn:
        for row in MORE:
            conn.execute(sa.text(
                f"INSERT INTO {prefix}indirect_process (table_key, event_type, table_name, "
                "column_name, old_value, new_value, perpetrator) VALUES (:k, :t, :n, :c, :o, :v, :p)"
            ), dict(zip("ktncovp", row + (None,) * (7 - len(row)))))
        rows = conn.execute(sa.text(
            f"SELECT {', '.join(names)} FROM {prefix}indirect_process ORDER BY record_id"
        )).all()
    engine.dispose()
    return [dict(zip(names, row)) for row in rows]


def _lines(record: Path) -> list[str]:
    files = sorted(record.iterdir()) if record.is_dir() else [record]
    return [line for f in files for line in f.read_text().splitlines()]


def _commands(out: Path) -> dict[str, list[etree._Element]]:
    return {f.name: list(etree.parse(str(f)).getroot().find("input")) for f in out.glob("*.xml")}


@pytest.mark.parametrize(("database", "record_name"),
                         [("sqlite", "lineage.jsonl"), ("postgresql", "lineage/"), ("mariadb", "lineage/")])
def test_the_lineage_names_the_right_document_for_every_row(database, record_name, tmp_path, spark):
    if database == "sqlite":
        url, schema = f"sqlite:///{tmp_path / 'backlog.db'}", "indirect"
    else:
        url, schema = server_url(database), f"lin_{uuid.uuid4().hex[:10]}"
    try:
        prefix = _load_backlog(url, schema)
        rows = _log_rows(url, prefix)
        options = ["--db", url, "--schema", schema, "--log-table", f"{prefix}indirect_process",
                   "--batch-size", "5", "--tables", "usr", "--publisher-user", PUBLISHER,
                   "--master", "local[2]"]
        records = {}
        for plan, small in (("spark", "0"), ("driver", "100000")):  # Spark's a dry run
            records[plan] = tmp_path / plan / record_name
            out = tmp_path / plan / "out"
            exported = CliRunner().invoke(cli, [
                "export", *options, "--out", str(out), "--small-cycle-rows", small,
                "--lineage", str(records[plan]), *(["--dry-run"] if plan == "spark" else []),
            ], catch_exceptions=False)
            assert exported.exit_code == 1, exported.output  # E rows
        settings = Settings(url, schema=schema, tables=("usr",))
        connected = connect(url)
        classify = Classifier(published_catalogue(settings, connected))
        statuses = {r["record_id"]: r["status"] for r in _log_rows(url, prefix)[: len(rows)]}
        connected.engine.dispose()
    finally:
        if database != "sqlite":  # a MariaDB schema is a database
            drop = "DROP SCHEMA IF EXISTS {} CASCADE" if database == "postgresql" else "DROP DATABASE IF EXISTS {}"
            engine = sa.create_engine(url)
            with engine.begin() as conn:
                conn.execute(sa.text(drop.format(schema)))
            engine.dispose()

    assert _lines(records["spark"]) == _lines(records["driver"])
    lines = [json.loads(line) for line in _lines(records["driver"])]
    assert [line["record_id"] for line in lines] == sorted(statuses)  # each row once, in order
    documents = _commands(tmp_path / "driver" / "out")
    by_id = {r["record_id"]: r for r in rows}
    rules = Counter()
    for line in lines:
        row = by_id[line["record_id"]]
        assert line["status"] == statuses[row["record_id"]], line
        assert ("reason" in line) == (line["status"] != "S"), line
        if "document" not in line:
            assert ("rule" in line) != (line["status"] == "E"), line
            rules[line.get("rule")] += 1
            continue
        command = documents[line["document"]][line["command"] - 1]
        event, _ = classify({**row, "event_type": str(row["event_type"]), "perpetrator": None})
        assert command.findtext("association") == association(event.canonical_key, event.class_name, schema)
        assert int(command.get("event-id")) <= row["record_id"]
        if row["event_type"] == 4:
            assert command.tag == "delete", line
        elif event.column_name is not None:
            assert event.column_name in {a.get("attr-name") for a in command}, line
    assert RULES <= set(rules), rules


def test_poll_writes_one_lineage_file_a_cycle(tmp_path):
    db = make_sample_db("sqlite", tmp_path)
    try:
        deletes(db, 1, 100)
        record, out = tmp_path / "lineage", tmp_path / "out"
        poll = Poll(db, out, tmp_path / "poll.log", "--query-limit", "40", "--lineage", f"{record}/")
        poll.wait_for(lambda: set(db.statuses().values()) == {"S"}, "every row published")
        assert poll.terminate() == 0
    finally:
        db.drop()
    files = sorted(record.iterdir())
    assert [len(f.read_text().splitlines()) for f in files] == [40, 40, 20]
    lines = [json.loads(line) for f in files for line in f.read_text().splitlines()]
    assert lines == [
        {"record_id": i, "status": "S", "document": f"{i:020d}.xml", "command": 1} for i in range(1, 101)
    ]
    assert all((out / line["document"]).exists() for line in lines)


@pytest.mark.parametrize("plan", ["driver", pytest.param("spark", marks=pytest.mark.slow)])
def test_a_triggerless_lineage_names_each_objects_document_command_and_change(plan, tmp_path):
    db = make_sample_db("sqlite", tmp_path)
    with db.engine.begin() as conn:
        for number in range(1, 8):
            conn.execute(sa.text("INSERT INTO usr (idu, fname, lname) VALUES (:n, 'F', 'L')"), {"n": 100 + number})
    out, record = tmp_path / "out", tmp_path / "lineage.jsonl"
    small = ["--small-cycle-rows", "0"] if plan == "spark" else []
    result = CliRunner().invoke(cli, ["export", "--db", db.settings.db_url, "--mode", "triggerless",
                                      "--state-dir", str(tmp_path / "state"), "--startup", "all",
                                      "--out", str(out), "--batch-size", "3", "--lineage", str(record), *small])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in record.read_text().splitlines()]
    commands = [(path.name, place, command) for path in sorted(out.glob("*.xml"))
                for place, command in enumerate(etree.parse(str(path)).getroot().find("input"), 1)]
    assert [(line["document"], line["command"]) for line in lines] == [(d, p) for d, p, _ in commands]
    for line, (_, _, command) in zip(lines, commands):
        assert list(line) == ["class", "object", "status", "document", "command", "rule"]
        assert line["status"] == "S" and line["rule"] == "added"
        assert command.findtext("association") == association(line["object"], line["class"], db.schema)
    assert {line["object"] for line in lines if line["class"] == "usr"} >= {f"idu={100 + n}" for n in range(1, 8)}
    db.drop()


class _FailingSink(FileSink):
    """Writes nothing, and fails once the lineage's thread has had time to write."""

    def publish(self, commands) -> int:
        time.sleep(0.5)
        raise SinkError(f"cannot write {self.path}: no room")


@pytest.mark.parametrize("folder", [True, False])
def test_a_cycle_whose_documents_fail_takes_its_lines_back(sample_db, tmp_path, folder):
    sample_db.log(("idu=1", 1, "usr", "fname", None, "Ann"), ("idu=2", 4, "usr"))
    target = tmp_path / "lineage"
    if folder:
        target.mkdir()
    else:
        target.write_bytes(b'{"record_id":0}\n')
    settings = replace(sample_db.settings, lineage=str(target))
    log = open_event_log(sample_db.database, settings)
    with pytest.raises(SinkError):
        run_cycle(settings, sample_db.database, log, _FailingSink(tmp_path / "out.xml"))
    assert (list(target.iterdir()) == []) if folder else target.read_bytes() == b'{"record_id":0}\n'
    assert set(sample_db.statuses().values()) == {"N"}
    run_cycle(settings, sample_db.database, log, FileSink(tmp_path / "out.xml"))
    written = target.read_text() if not folder else next(target.iterdir()).read_text()
    assert [json.loads(line)["record_id"] for line in written.splitlines()][-2:] == [1, 2]
