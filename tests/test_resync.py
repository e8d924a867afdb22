"""``xdspub resync`` (docs/initial-load.md) on SQLite, PostgreSQL and MariaDB, on a schema
with a mixed-case name, reserved-word, spaced and long names, a composite key holding text
the table_key must quote, and a child table: one type 5 event per object in the canonical
form the triggers write, in key order, which an export publishes as type 5 rows are; a run
that fails mid-way resumes after its last chunk; a bad --tables is a usage error."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from lxml import etree

from grammar import format_table_key
from publisher.cli import cli
from publisher.cycle import run_cycle
from publisher.delivery.sinks import FileSink
from publisher.settings import Settings
from publisher.source import resync as resync_module
from publisher.source.event_log import open_event_log
from tests.conftest import written_document
from tests.test_unusual_schemas import DATABASES, LINE, LOG, PERSON, TAG, UnusualDb

LOG_READ = ("table_key", "event_type", "perpetrator", "table_name", "status")
RATE = "50% off"  # a % and a : in names: not taken for parameters


@pytest.fixture(params=DATABASES)
def loaded(request, tmp_path: Path):
    """The unusual schema with objects in each class, no triggers."""
    db = UnusualDb(request.param, tmp_path)
    db.rate = sa.Table(RATE, db.metadata, sa.Column("a:b", sa.String(10), primary_key=True),
                       sa.Column("v", sa.Integer))
    db.rate.create(db.engine)
    with db.engine.begin() as conn:
        conn.execute(db.rate.insert(), [{"a:b": "%s", "v": 1}, {"a:b": ":x", "v": 2}])
        for person in (
            {"ID": 1, "Full Name": "Ann O'Neil", "select": "x; DROP"},
            {"ID": 2},  # no value: its type 5 publishes nothing (docs/rendering.md#empty-pieces)
            {"ID": 3, "Full Name": "Cy", "order": 4},
        ):
            conn.execute(db.person.insert().values(person))
        conn.execute(db.alias.insert(), [{"Person": 1, "Alias": "Bo"}, {"Person": 1, "Alias": "Al"}])
        conn.execute(db.line.insert(), [
            {"Order": "A+1", "user": 7, "Qty": 2, "note": None},
            {"Order": "A+1", "user": 10, "Qty": 3, "note": None},
            {"Order": " lead", "user": 2, "Qty": 1, "note": None},
            {"Order": 'q"\\', "user": 3, "Qty": None, "note": "n"},
            {"Order": "select", "user": 1, "Qty": 5, "note": None},
        ])
        conn.execute(db.tag.insert(), [{"Value": "x y"}, {"Value": "a;b"}])
    yield db
    db.drop()


def xdspub(*args: str) -> object:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def resync(db: UnusualDb, *args: str) -> object:
    return xdspub("resync", "--db", db.url, "--schema", db.schema, "--log-table", LOG, *args)


def logged(db: UnusualDb) -> list[tuple]:
    log = sa.Table(LOG, sa.MetaData(schema=db.db_schema), autoload_with=db.engine)
    with db.engine.connect() as conn:
        rows = conn.execute(sa.select(*(log.c[c] for c in LOG_READ)).order_by(log.c.record_id))
        return [(r[0], int(r[1]), *r[2:]) for r in rows]


def objects_in_key_order(db: UnusualDb) -> list[tuple[str, str]]:
    """(class, canonical table_key) of every object, each class's in the database's key
    order, the classes by name: what resync logs, made here in Python."""
    found = []
    with db.engine.connect() as conn:
        for table in sorted((db.line, db.person, db.tag, db.rate), key=lambda t: t.name):
            keys = list(table.primary_key.columns)
            for row in conn.execute(sa.select(*keys).order_by(*keys)):
                found.append((table.name, format_table_key([(k.name, str(v)) for k, v in zip(keys, row)])))
    return found


def publish(db: UnusualDb, out: Path) -> tuple[etree._Element, object]:
    """An export in the driver as the URL's user, whose own changes are loopback."""
    settings = Settings(db_url=db.url, schema=db.schema, log_table=LOG)
    log = open_event_log(db.database, settings)
    report = run_cycle(settings, db.database, log, FileSink(out))
    return written_document(out, report), report


def commands(document: etree._Element) -> list[tuple]:
    """Each command as (kind, class, association, ((attribute, sorted values), ...))."""
    return [
        (
            c.tag,
            c.get("class-name"),
            c.findtext("association"),
            tuple(
                (a.get("attr-name"), tuple(sorted(v.text for v in a.iter("value"))))
                for a in c.findall("modify-attr")
            ),
        )
        for c in document.find("input")
    ]


def test_resync_logs_every_object_as_the_triggers_key_it_and_export_publishes_them(loaded, tmp_path):
    db = loaded
    result = resync(db, "--chunk", "2")
    assert result.exit_code == 0, result.output
    assert (
        f"a new pass): 12 type 5 events logged: {RATE} 2, {LINE} 5, {PERSON} 3, {TAG} 2" in result.stderr
    )
    expected = objects_in_key_order(db)
    assert logged(db) == [(key, 5, "xdspub-resync", table, "N") for table, key in expected]

    document, report = publish(db, tmp_path / "out.xml")
    assert report.errors == [] and set(db_statuses(db)) == {"S"}  # canonical keys: no W
    s = db.schema
    assert sorted(commands(document)) == sorted([
        ("modify", RATE, f"a:b=%s,table={RATE},schema={s}", (("v", ("1",)),)),
        ("modify", RATE, f"a:b=:x,table={RATE},schema={s}", (("v", ("2",)),)),
        ("modify", LINE, f'Order=" lead"+user=2,table={LINE},schema={s}', (("Qty", ("1",)),)),
        ("modify", LINE, f'Order="A+1"+user=7,table={LINE},schema={s}', (("Qty", ("2",)),)),
        ("modify", LINE, f'Order="A+1"+user=10,table={LINE},schema={s}', (("Qty", ("3",)),)),
        ("modify", LINE, f'Order="q\\"\\\\"+user=3,table={LINE},schema={s}', (("note", ("n",)),)),
        ("modify", LINE, f"Order=select+user=1,table={LINE},schema={s}", (("Qty", ("5",)),)),
        ("modify", PERSON, f"ID=1,table={PERSON},schema={s}", (
            ("Full Name", ("Ann O'Neil",)), ("select", ("x; DROP",)), ("Alias.Alias", ("Al", "Bo")),
        )),
        ("modify", PERSON, f"ID=3,table={PERSON},schema={s}", (("Full Name", ("Cy",)), ("order", ("4",)))),
        # Objects without any value are announced by an add alone (docs/rendering.md, Empty pieces).
        ("add", PERSON, f"ID=2,table={PERSON},schema={s}", ()),
        ("add", TAG, f'Value="a;b",table={TAG},schema={s}', ()),
        ("add", TAG, f"Value=x y,table={TAG},schema={s}", ()),
    ])
    # The commands follow the log's order: each class's objects in key order.
    order = [key for _, key in expected]
    published = [c[2].rsplit(",table=", 1)[0] for c in commands(document)]
    assert published == [k for k in order if k in published]


def db_statuses(db: UnusualDb) -> list[str]:
    return [row[-1] for row in logged(db)]


def test_a_run_that_fails_mid_way_resumes_after_its_last_chunk(loaded, monkeypatch):
    db = loaded
    record = resync_module._Passes.record
    calls = []

    def failing(self, conn, name, last_key, count):
        calls.append(name)
        if name == LINE and calls.count(LINE) == 2:
            raise RuntimeError("the connection broke")
        record(self, conn, name, last_key, count)

    monkeypatch.setattr(resync_module._Passes, "record", failing)
    broken = CliRunner().invoke(cli, ["resync", "--db", db.url, "--schema", db.schema, "--log-table", LOG,
                                      "--chunk", "2", "--tables", LINE])
    assert broken.exit_code == 5
    expected = [(key, 5, "xdspub-resync", table, "N") for table, key in objects_in_key_order(db)]
    lines = [e for e in expected if e[3] == LINE]
    assert logged(db) == lines[:2]  # the failed chunk's events rolled back with it
    monkeypatch.setattr(resync_module._Passes, "record", record)

    # Resumed after the first chunk, with its text keys bound back to the key's types;
    # the other classes, not in the interrupted pass, join it.
    result = resync(db, "--chunk", "2")
    assert result.exit_code == 0, result.output
    resumed = f"resumed the interrupted pass): 10 type 5 events logged: {RATE} 2, {LINE} 3 (and 2 before"
    assert resumed in result.stderr
    assert logged(db) == lines[:2] + [e for e in expected if e not in lines[:2]]

    # A finished pass is not resumed: the next run is a new one.
    again = resync(db, "--chunk", "3", "--tables", f" {TAG} ,{LINE}", "--tables", f"{PERSON},{RATE}")
    assert "a new pass): 12 type 5 events logged" in again.stderr
    assert logged(db)[12:] == expected


def test_tables_that_are_no_class_are_usage_errors(tmp_path):
    db = UnusualDb("sqlite", tmp_path)
    for name, why in (("Nope", "no class or child table of that name"), ("Alias", "a child table")):
        result = resync(db, "--tables", f"{TAG},{name}")
        assert result.exit_code == 2 and why in result.stderr, result.output
    assert logged(db) == []
    # The environment variable is split at commas: a name may hold blanks.
    with db.engine.begin() as conn:
        conn.execute(db.line.insert().values({"Order": "o", "user": 1}))
    result = CliRunner().invoke(cli, ["resync", "--db", db.url, "--log-table", LOG],
                                env={"XDSPUB_TABLES": f"{TAG}, {LINE}"})
    assert f"1 type 5 events logged: {LINE} 1, {TAG} 0" in result.stderr, result.output
    db.drop()
