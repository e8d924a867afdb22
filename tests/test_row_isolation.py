"""One row cannot stop publishing (docs/statuses.md, One row's failure): whatever fails for a
row makes that row E with a bounded, escaped reason, and the rest of the cycle is published.
Each test logs hostile rows beside a plain one on SQLite, PostgreSQL and MariaDB and runs
one cycle in the driver; test_spark_cycle_isolates_rows_too runs the same on Spark."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import sqlalchemy as sa

from publisher.model.statuses import REASON_LIMIT
from tests.conftest import SampleDb, make_sample_db

DIGITS = "9" * 5000  # past Python's 4,300-digit limit of int()
PLAIN_ROW = ("idu=1", 1, "usr", "fname", None, "Jack")


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def db(request, tmp_path: Path) -> SampleDb:
    """The sample database, its event log's table_key and table_name TEXT (a log may have
    them so), and a
    table ``acct`` with an integer, a timestamp and a column whose name holds a control
    character."""
    db = make_sample_db(request.param, tmp_path)
    quote = db.engine.dialect.identifier_preparer.quote
    log = db.table("indirect_process")
    for column in ("table_key", "table_name"):
        if db.dialect.name == "postgresql":
            db.execute(f"ALTER TABLE {log} ALTER COLUMN {column} TYPE TEXT")
        elif db.dialect.name == "mysql":
            db.execute(f"ALTER TABLE {log} MODIFY {column} LONGTEXT")
    db.execute(
        f"CREATE TABLE {db.table('acct')} (id INTEGER NOT NULL PRIMARY KEY, n INTEGER, "
        f"t TIMESTAMP NULL, {quote('bad' + chr(1) + 'name')} VARCHAR(10), label VARCHAR(10))"
    )
    db.execute(f"INSERT INTO {db.table('acct')} (id, n, label) VALUES (1, 5, 'one')")
    yield db
    db.drop()


def _publish(db: SampleDb, tmp_path: Path, rows: dict[str, tuple], **settings):
    """Log ``rows`` (label: row) after the plain row, run one cycle: the document's
    associations, each label's status, and each label's reason."""
    db.log(PLAIN_ROW)
    for row in rows.values():
        db.log(row)
    root, report = db.publish(tmp_path / "out.xml", **settings)
    statuses = db.statuses()
    ids = sorted(statuses)
    labels = dict(zip(["plain", *rows], ids))
    reasons = {rid: why for rid, _, why in report.notes}
    published = [a.text for a in root.iter("association")]
    return (
        published,
        {label: statuses[rid] for label, rid in labels.items()},
        {label: reasons.get(rid) for label, rid in labels.items()},
    )


def test_huge_numbers_fail_their_row_alone(db: SampleDb, tmp_path: Path) -> None:
    rows = {
        "int": ("id=1", 1, "acct", "n", None, DIGITS),  # an int's text: canonical, published
        "time": ("id=1", 2, "acct", "t", None, DIGITS),  # seconds since 1970: published
        "hours": ("id=1", 2, "acct", "t", None, DIGITS + ":00"),
        "reference": ("idu=2", 1, "usr", "manager", None, DIGITS),
        "key": ("idu=" + DIGITS, 4, "usr"),
    }
    published, status, reason = _publish(db, tmp_path, rows)
    assert status == {"plain": "S", "int": "S", "time": "S", "hours": "E", "reference": "E", "key": "E"}
    assert [a.split(",")[0] for a in published] == ["idu=1", "id=1", "id=1"]  # an add, a modify
    assert "is not a valid time value" in reason["hours"]
    assert "is not a 64-bit integer" in reason["reference"]
    assert "999... (5,000 characters)" in reason["reference"]
    assert reason["key"] == "table_key is longer than 4096 characters"


def test_a_huge_table_key_is_refused_before_parsing(db: SampleDb, tmp_path: Path) -> None:
    rows = {
        "plain-huge": ("idu=" + "1" * 200_000, 5, "usr"),
        "pairs-huge": ("+".join(f"c{i}=v w" for i in range(25_000)), 5, "usr"),
        "at-limit": ("fname=" + "x" * 4090, 5, "usr"),
    }
    _published, status, reason = _publish(db, tmp_path, rows)
    assert status == {"plain": "S", "plain-huge": "E", "pairs-huge": "E", "at-limit": "E"}
    assert reason["plain-huge"] == reason["pairs-huge"] == "table_key is longer than 4096 characters"
    assert "the key of usr is idu" in reason["at-limit"]  # parsed: within the limit


def test_reasons_are_escaped_and_bounded(db: SampleDb, tmp_path: Path) -> None:
    forged = "usr\n2026-01-01T00:00:00Z info cycle rows=0"
    rows = {
        "newline": ("idu=1", 5, forged),
        "long": ("idu=1", 5, "t" * 3000),
        "bidi": ("idu=1", 5, "usr\u202e"),
    }
    _published, status, reason = _publish(db, tmp_path, rows)
    assert set(status.values()) == {"S", "E"} and status["plain"] == "S"
    assert "\n" not in reason["newline"] and "usr\\x0a2026" in reason["newline"]
    assert len(reason["long"]) == REASON_LIMIT and reason["long"].endswith("characters in all)")
    assert "usr\\u202e" in reason["bidi"]


def test_a_column_name_xml_cannot_carry_fails_query_back_alone(db: SampleDb, tmp_path: Path) -> None:
    rows = {
        "row-query-back": ("id=1", 6, "acct"),  # reads every column: the bad name too
        "field-query-back": ("id=1", 8, "acct", "label"),
        "field": ("id=1", 2, "acct", "n", "5", "6"),
    }
    published, status, reason = _publish(db, tmp_path, rows)
    assert status == {"plain": "S", "row-query-back": "E", "field-query-back": "S", "field": "S"}
    assert re.search(r"column name bad\\x01name has a character XML 1\.0 cannot carry", reason["row-query-back"])
    assert any("id=1,table=acct" in a for a in published)


def test_an_unforeseen_failure_fails_its_row_or_object_alone(
    db: SampleDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Failures no rule foresees, injected: in classifying one row, and in rendering one
    object's commands."""
    from publisher.reduce import rules
    from publisher.render import object_pass

    classify = rules.Classifier.__call__
    render = object_pass.command_xml

    def classify_or_fail(self, row):
        if row["table_key"] == "idu=66":
            raise RuntimeError("classifier broke\non this row")
        return classify(self, row)

    def render_or_fail(command):
        if command.association.startswith("idu=77,"):
            raise KeyError("renderer broke")
        return render(command)

    monkeypatch.setattr(rules.Classifier, "__call__", classify_or_fail)
    monkeypatch.setattr(object_pass, "command_xml", render_or_fail)
    rows = {
        "classify": ("idu=66", 1, "usr", "manager", None, "1"),  # a reference: the rules
        "render-1": ("idu=77", 1, "usr", "fname", None, "y"),
        "render-2": ("idu=77", 2, "usr", "lname", "a", "b"),
        "after": ("idu=88", 1, "usr", "fname", None, "z"),
    }
    published, status, reason = _publish(db, tmp_path, rows)
    assert status == {"plain": "S", "classify": "E", "render-1": "E", "render-2": "E", "after": "S"}
    assert reason["classify"] == (
        "cannot be published: unexpected RuntimeError: classifier broke\\x0aon this row (please report)"
    )
    assert reason["render-1"] == reason["render-2"] == (
        "cannot be published: unexpected KeyError: 'renderer broke' (please report)"
    )
    assert [a.split(",")[0] for a in published] == ["idu=1", "idu=88"]


@pytest.fixture
def sqlite_db(tmp_path: Path) -> SampleDb:
    db = make_sample_db("sqlite", tmp_path)
    yield db
    db.drop()


def _log_not_utf8(db: SampleDb) -> None:
    """A logged value and a published row read back, each holding the byte 0xff."""
    db.log(PLAIN_ROW)
    db.execute(
        "INSERT INTO indirect_process (table_key, event_type, table_name, column_name, new_value) "
        "VALUES ('idu=2', 1, 'usr', 'fname', CAST(x'41ff42' AS TEXT))"
    )
    db.execute("INSERT INTO usr (idu, fname, lname) VALUES (3, CAST(x'43ff44' AS TEXT), 'ok')")
    db.log(("idu=3", 6, "usr"), ("idu=3", 8, "usr", "lname"))


def _check_not_utf8(db: SampleDb, root, report) -> None:
    assert db.statuses() == {1: "S", 2: "E", 3: "E", 4: "S"}
    reasons = {rid: why for rid, _, why in report.notes}
    assert reasons[2] == "new_value has a character XML 1.0 cannot carry at position 2"
    assert reasons[3] == "current value of fname has a character XML 1.0 cannot carry at position 2"
    assert [a.text.split(",")[0] for a in root.iter("association")] == ["idu=1", "idu=3"]
    assert [v.text for v in root.iter("value")] == ["Jack", "ok"]  # nothing replaced


def test_sqlite_text_that_is_not_utf8_fails_its_row_alone(sqlite_db: SampleDb, tmp_path: Path) -> None:
    _log_not_utf8(sqlite_db)
    root, report = sqlite_db.publish(tmp_path / "out.xml")
    _check_not_utf8(sqlite_db, root, report)


def test_spark_cycle_isolates_rows_too(sqlite_db: SampleDb, tmp_path: Path, spark) -> None:
    """The same on Spark: its JDBC reads neither replace the bytes that are not UTF-8."""
    _log_not_utf8(sqlite_db)
    root, report = sqlite_db.publish(tmp_path / "out.xml", small_cycle_rows=0)
    assert report.on_spark
    _check_not_utf8(sqlite_db, root, report)
