"""Time Syntax (docs/parameters.md, docs/rendering.md): a table's DATE, TIME and TIMESTAMP
columns, on all three databases, published under each syntax by per-field events (the
values as a trigger logs them: the database's own text) and by query-back (the values as
the publisher reads them back: cast to text), through the cycle, the row publisher of
bench/ and `xdspub export --time-syntax`."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import sqlalchemy as sa
from lxml import etree

from publisher.cli import cli
from publisher.model import value_text as vt
from publisher.source.schema import reflect_catalogue
from tests.conftest import SampleDb, make_sample_db
from tests.test_value_paths import _values

BENCH = Path(__file__).resolve().parent.parent / "bench"
COLUMNS = ("d", "t", "ts", "z")
# Per database: the columns' types. z holds an offset where the database keeps one:
# PostgreSQL's TIMESTAMPTZ, and SQLite's text; MariaDB's TIMESTAMP is naive.
DDL = {
    "sqlite": "d DATE, t TIME, ts TIMESTAMP, z TIMESTAMP",
    "postgresql": "d DATE, t TIME(6), ts TIMESTAMP(6), z TIMESTAMPTZ",
    "mariadb": "d DATE, t TIME(6), ts DATETIME(6), z TIMESTAMP(6) NULL",
}
# The rows (id: d, t, ts, z); row 4's time is past one day (PostgreSQL's and SQLite's
# 24:00:00, MariaDB's TIME of hours), so only Time Syntax 1 takes it.
OFFSET_Z = ("2024-01-31 10:00:00+02", "2024-02-29 23:30:00.5-01:00")
NAIVE_Z = ("2024-01-31 10:00:00", "2024-02-29 23:30:00.5")


def _rows(kind: str) -> dict[int, tuple[str | None, ...]]:
    z = NAIVE_Z if kind == "mariadb" else OFFSET_Z
    return {
        1: ("2024-01-31", "10:00:00", "2024-01-31 10:00:00", z[0]),
        2: ("1969-12-31", "23:59:59.25", "2024-02-29 23:59:59.120", z[1]),
        3: (None, None, None, None),
        4: ("2000-02-29", "838:59:59" if kind == "mariadb" else "24:00:00",
            "2000-02-29 00:00:00.000001", None),
    }


# What each value publishes as, per Time Syntax 1, 2, 3 (None: E).
EXPECTED = {
    1: {
        "d": ("1706659200", "20240131", "2024-01-31"),
        "t": ("36000", "100000", "10:00:00"),
        "ts": ("1706695200", "20240131100000000000000", "2024-01-31 10:00:00.0"),
    },
    2: {
        "d": ("-86400", "19691231", "1969-12-31"),
        "t": ("86399", "235959", "23:59:59"),
        "ts": ("1709251199", "20240229235959120000000", "2024-02-29 23:59:59.12"),
    },
    4: {
        "d": ("951782400", "20000229", "2000-02-29"),
        "ts": ("951782400", "20000229000000000001000", "2000-02-29 00:00:00.000001"),
    },
}
EXPECTED_Z = {  # converted to UTC where the value has an offset
    "offset": {
        1: ("1706688000", "20240131080000000000000", "2024-01-31 08:00:00.0"),
        2: ("1709253000", "20240301003000500000000", "2024-03-01 00:30:00.5"),
    },
    "naive": {
        1: ("1706695200", "20240131100000000000000", "2024-01-31 10:00:00.0"),
        2: ("1709249400", "20240229233000500000000", "2024-02-29 23:30:00.5"),
    },
}
PAST_ONE_DAY = {"sqlite": "86400", "postgresql": "86400", "mariadb": "3020399"}


@pytest.fixture(scope="module", params=["sqlite", "postgresql", "mariadb"])
def time_db(request, tmp_path_factory):
    db = make_sample_db(request.param, tmp_path_factory.mktemp(request.param))
    db.kind = request.param
    times = db.table("times")
    db.execute(f"CREATE TABLE {times} (id INTEGER PRIMARY KEY, {DDL[db.kind]})")
    for key, values in _rows(db.kind).items():
        db.execute(f"INSERT INTO {times} (id, d, t, ts, z) VALUES (:id, :d, :t, :ts, :z)",
                   id=key, **dict(zip(COLUMNS, values)))
    yield db
    db.drop()


def _expected(db: SampleDb, syntax: int, query_back: bool) -> dict[str, dict[str, list[str]]]:
    """Per association, each attribute's values. Query-back renders every column, a NULL
    one with no value; row 4's time is E under Time Syntax 2 and 3."""
    z = EXPECTED_Z["naive" if db.kind == "mariadb" else "offset"]
    out: dict[str, dict[str, list[str]]] = {}
    for key, values in _rows(db.kind).items():
        texts = {**EXPECTED.get(key, {}), **({"z": z[key]} if key in z else {})}
        if key == 4:
            texts["t"] = (PAST_ONE_DAY[db.kind], None, None)
        attrs = {
            name: [texts[name][syntax - 1]] if name in texts else []
            for name, value in zip(COLUMNS, values)
            if query_back or value is not None
        }
        if key == 4 and syntax > 1:
            if query_back:
                continue  # the query-back row is E
            del attrs["t"]  # the t event is E
        if attrs:
            out[f"id={key},table=times,schema={db.schema}"] = attrs
    return out


def _check(db: SampleDb, document: etree._Element, syntax: int, query_back: bool) -> None:
    """The document holds the expected values, each of its syntax's value type."""
    assert _values(document) == _expected(db, syntax, query_back), syntax
    assert {v.get("type") for v in document.iter("value")} == {"time" if syntax == 1 else "string"}


def _errors(db: SampleDb, notes) -> dict[str, tuple[str, str]]:
    """The E rows by their table_key and column, with the reason."""
    with db.engine.connect() as conn:
        rows = conn.execute(
            sa.text(f"SELECT record_id, table_key, column_name FROM {db.table('indirect_process')}")
        ).all()
    where = {record_id: (key, column) for record_id, key, column in rows}
    return {where[record_id]: why for record_id, letter, why in notes if letter == "E"}


def _log_as_triggers_do(db: SampleDb) -> None:
    """One type-1 event per non-NULL cell, its value the database's own text as a
    per-field trigger writes it (PostgreSQL ::text, MariaDB the column into LONGTEXT,
    SQLite the stored text); and one event whose value is no time."""
    log, times = db.table("indirect_process"), db.table("times")
    db.execute(f"DELETE FROM {log}")
    key = "CONCAT('id=', id)" if db.kind == "mariadb" else "'id=' || id"
    for column in COLUMNS:
        value = f"{column}::text" if db.kind == "postgresql" else column
        db.execute(
            f"INSERT INTO {log} (table_key, event_type, table_name, column_name, new_value) "
            f"SELECT {key}, 1, 'times', '{column}', {value} FROM {times} "
            f"WHERE {column} IS NOT NULL ORDER BY id"
        )
    db.log(("id=9", 1, "times", "t", None, "half past ten"))


def _log_query_back(db: SampleDb) -> None:
    db.execute(f"DELETE FROM {db.table('indirect_process')}")
    db.log(*((f"id={key}", 6, "times") for key in _rows(db.kind)))  # 6: NULLs too


def test_time_columns_are_reflected_by_kind_and_syntax(time_db):
    for syntax in (1, 2, 3):
        catalogue = reflect_catalogue(
            time_db.database, time_db.schema, "indirect_process", syntax
        )
        columns = {c.name: c for c in catalogue.tables["times"].columns}
        kinds = {"d": "date", "t": "time", "ts": "timestamp", "z": "timestamp"}
        for name, kind in kinds.items():
            assert columns[name].time_form == f"{kind}:{syntax}"
            assert columns[name].xds_type == (vt.TIME if syntax == 1 else vt.STRING)
        assert columns["id"].time_form is None


def test_per_field_events_publish_each_time_syntax(time_db, tmp_path):
    _log_as_triggers_do(time_db)
    for syntax in (1, 2, 3):
        document, report = time_db.publish(tmp_path / f"field{syntax}.xml", dry_run=True,
                                           time_syntax=syntax)
        _check(time_db, document, syntax, query_back=False)
        errors = _errors(time_db, report.notes)
        assert errors.pop(("id=9", "t")) == "new_value half past ten is not a valid time value"
        if syntax == 1:
            assert errors == {}
        else:
            ((where, why),) = errors.items()
            assert where == ("id=4", "t") and why.endswith("is not a valid time value")


def test_query_back_publishes_each_time_syntax(time_db, tmp_path):
    _log_query_back(time_db)
    for syntax in (1, 2, 3):
        out = tmp_path / f"spark{syntax}.xml"
        document, report = time_db.publish(out, dry_run=True, time_syntax=syntax)
        _check(time_db, document, syntax, query_back=True)
        errors = _errors(time_db, report.notes)
        if syntax == 1:
            assert errors == {}
        else:
            past = "838:59:59.000000" if time_db.kind == "mariadb" else "24:00:00"
            assert errors == {("id=4", None): f"current value '{past}' of t is not a valid time value"}
        rows = subprocess.run(
            [sys.executable, str(BENCH / "row_publisher.py"), "--db", time_db.settings.db_url,
             "--schema", time_db.schema, "--out", str(tmp_path / f"rows{syntax}.xml"),
             "--dry-run", "--time-syntax", str(syntax)],
            capture_output=True, text=True,
        )
        assert rows.returncode == (0 if syntax == 1 else 1), rows.stderr
        assert (tmp_path / f"rows{syntax}.xml").read_bytes() == out.read_bytes()


def test_export_takes_the_time_syntax_option(time_db, tmp_path):
    from click.testing import CliRunner

    _log_query_back(time_db)
    common = ["export", "--db", time_db.settings.db_url, "--schema", time_db.schema,
              "--master", "local[2]", "--dry-run", "--quiet"]
    for syntax, args, env in (
        (3, ["--time-syntax", "3"], {"XDSPUB_TIME_SYNTAX": "2"}),  # the option beats the variable
        (2, [], {"XDSPUB_TIME_SYNTAX": "2"}),
    ):
        out = tmp_path / f"cli{syntax}.xml"
        result = CliRunner().invoke(cli, [*common, "--out", str(out), *args], env=env,
                                    catch_exceptions=False)
        assert result.exit_code == 1, result.output  # row 4 is E
        _check(time_db, etree.parse(str(out)).getroot(), syntax, query_back=True)
    bad = CliRunner().invoke(cli, [*common, "--out", "-", "--time-syntax", "4"])
    assert bad.exit_code == 2 and "--time-syntax" in bad.output
