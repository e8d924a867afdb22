"""Every path a value takes to its XDS text gives the same text, on every value type and all
three databases (docs/rendering.md, Value text).

A table holds one column of each kind. Random rows go in; each row is then published twice:
by per-field events whose values are the database's own text of the columns (what a
per-field trigger writes), and by an insert-row query-back, which reads the row back. The
query-back cycle runs through Spark and through bench/row_publisher.py, whose documents
must be equal byte for byte; and each value must read the same by both events, or be E by
both."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lxml import etree

from tests.conftest import SampleDb, make_sample_db

BENCH = Path(__file__).resolve().parent.parent / "bench"
# The kinds of column, per database: (name, DDL type).
KINDS = {
    "sqlite": [("i", "BIGINT"), ("b", "BOOLEAN"), ("d", "DATE"), ("ts", "TIMESTAMP"),
               ("t", "TIME"), ("s", "VARCHAR(40)"), ("c", "CHAR(8)"), ("n", "NUMERIC(10, 2)"),
               ("bin", "BLOB")],
    "postgresql": [("i", "BIGINT"), ("b", "BOOLEAN"), ("d", "DATE"), ("ts", "TIMESTAMP"),
                   ("t", "TIME"), ("s", "VARCHAR(40)"), ("c", "CHAR(8)"), ("n", "NUMERIC(10, 2)"),
                   ("bin", "BYTEA")],
    "mariadb": [("i", "BIGINT"), ("b", "BOOLEAN"), ("d", "DATE"), ("ts", "DATETIME(6)"),
                ("t", "TIME"), ("s", "VARCHAR(40)"), ("c", "CHAR(8)"), ("n", "DECIMAL(10, 2)"),
                ("bin", "BLOB")],
}
TEXT = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
ROW = st.fixed_dictionaries(
    {
        "i": st.none() | st.integers(-(2**63), 2**63 - 1),
        "b": st.none() | st.booleans(),
        "d": st.none() | st.dates(dt.date(1900, 1, 1), dt.date(2100, 12, 31)),
        "ts": st.none() | st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 12, 31)),
        "t": st.none() | st.times().map(lambda t: t.replace(microsecond=0)),
        "s": st.none() | TEXT,
        "c": st.none() | TEXT.map(lambda s: s[:8]),
        "n": st.none() | st.decimals(-(10**7), 10**7, places=2, allow_nan=False),
        "bin": st.none() | st.binary(max_size=12),
    }
)


@pytest.fixture(scope="module", params=["sqlite", "postgresql", "mariadb"])
def value_db(request, tmp_path_factory):
    db = make_sample_db(request.param, tmp_path_factory.mktemp(request.param))
    db.kind = request.param
    columns = ", ".join(f"{name} {kind}" for name, kind in KINDS[request.param])
    db.execute(f"CREATE TABLE {db.table('vals')} (id INTEGER PRIMARY KEY, {columns})")
    yield db
    db.drop()


def _bound(value: object) -> object:
    """A value as every driver binds it: dates, times and decimals as their text."""
    if isinstance(value, (dt.date, dt.time, decimal.Decimal)):
        return str(value)
    return value


def _values(document: etree._Element) -> dict[str, dict[str, list[str]]]:
    """Per association, each attribute's values (of add-attr or add-value)."""
    out: dict[str, dict[str, list[str]]] = {}
    for command in document.find("input"):
        attrs = out.setdefault(command.findtext("association"), {})
        for attr in command.iter("add-attr", "modify-attr"):
            attrs[attr.get("attr-name")] = [v.text or "" for v in attr.iter("value")]
    return out


def _by_object(db: SampleDb, report) -> dict[str, set[str]]:
    """The E rows' columns per object, from the event log."""
    errors = {record_id for record_id, _ in report.errors}
    with db.engine.connect() as conn:
        rows = conn.execute(
            sa.text(f"SELECT record_id, table_key, column_name FROM {db.table('indirect_process')}")
        ).all()
    out: dict[str, set[str]] = {}
    for record_id, key, column in rows:
        if record_id in errors:
            out.setdefault(key, set()).add(column or "*")
    return out


def _written(path: Path) -> bytes | None:
    """The document a publisher wrote; None where it had no command, and wrote none."""
    return path.read_bytes() if path.exists() else None


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(rows=st.lists(ROW, min_size=1, max_size=25))
def test_field_events_and_query_back_give_the_same_text(value_db: SampleDb, rows, tmp_path_factory):
    db, run = value_db, uuid.uuid4().hex[:6]
    log, vals = db.table("indirect_process"), db.table("vals")
    names = [name for name, _ in KINDS[db.kind]]
    db.execute(f"DELETE FROM {vals}")
    db.execute(f"DELETE FROM {log}")
    with db.engine.begin() as conn:
        conn.execute(sa.text(f"INSERT INTO {vals} (id, {', '.join(names)}) VALUES "
                             f"(:id, {', '.join(':' + n for n in names)})"),
                     [{"id": k, **{n: _bound(v) for n, v in row.items()}} for k, row in enumerate(rows, 1)])
        # What a per-field trigger logs: each column as the database's text, binary in Base64.
        source = sa.table("vals", *(sa.column(n) for n in ["id", *names]),
                          schema=db.dialect.schema_named(db.schema))
        texts = conn.execute(sa.select(source.c.id, source.c.bin, *(
            sa.cast(source.c[n], sa.Text).label(n) for n in names if n != "bin"))).mappings().all()
        for row in texts:
            for name in names:
                value = row[name]
                if name == "bin" and value is not None:
                    value = base64.b64encode(bytes(value)).decode()
                if value is not None:
                    conn.execute(sa.text(f"INSERT INTO {log} (table_key, event_type, table_name, "
                                         "column_name, new_value) VALUES (:k, 1, 'vals', :c, :v)"),
                                 {"k": f"id={row['id']}", "c": name, "v": value})
    out = tmp_path_factory.mktemp(f"paths-{run}")
    by_field, field_report = db.publish(out / "field.xml")
    field_errors = _by_object(db, field_report)

    db.execute(f"DELETE FROM {log}")
    with db.engine.begin() as conn:
        for k in range(1, len(rows) + 1):
            conn.execute(sa.text(f"INSERT INTO {log} (table_key, event_type, table_name) "
                                 "VALUES (:k, 5, 'vals')"), {"k": f"id={k}"})
    by_query_back, back_report = db.publish(out / "spark.xml", dry_run=True)
    back_errors = _by_object(db, back_report)
    baseline = subprocess.run(
        [sys.executable, str(BENCH / "row_publisher.py"), "--db", db.settings.db_url,
         "--schema", db.schema, "--out", str(out / "rows.xml"), "--dry-run"],
        capture_output=True, text=True,
    )
    assert baseline.returncode in (0, 1), baseline.stderr
    assert _written(out / "rows.xml") == _written(out / "spark.xml")

    fields, backs = _values(by_field), _values(by_query_back)
    for k in range(1, len(rows) + 1):
        association = f"id={k},table=vals,schema={db.schema}"
        bad = field_errors.get(f"id={k}", set())
        assert (k in {int(key[3:]) for key in back_errors}) == bool(bad)
        if bad:
            continue
        published = {name: values for name, values in backs.get(association, {}).items() if values}
        assert fields.get(association, {}) == published, (k, rows[k - 1])
