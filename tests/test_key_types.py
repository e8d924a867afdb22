"""Every key and value type, on every database, in every path (docs/rendering.md, Value
types and Key text): a kept example set of tables, each with one type as its key and as a
value (and a composite key mixing them), changed through the generated triggers of both
flavours and published in the driver plan, by ``explain``, after ``resync``, triggerless
and on Spark. Each path must give the same association and the same value type and text."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from lxml import etree

from grammar import format_table_key
from publisher.cli import cli
from publisher.cycle import CycleReport, run, run_cycle
from publisher.delivery.sinks import FileSink, open_sink
from publisher.mirror import apply_documents, verify_mirror
from publisher.publications.triggerless import TriggerlessPublication
from publisher.settings import Settings, TriggerlessOptions
from publisher.source import resync as resync_module
from publisher.source.database import connect, run_scripts
from publisher.source.event_log import open_event_log
from publisher.source.triggers import FLAVOURS, trigger_script
from tests.conftest import SampleDb, make_sample_db, written_document

PUBLISHER = "xdspub-keys"  # not the user making the changes: they are no loopback
UUID1, UUID2 = "123e4567-e89b-12d3-a456-426614174000", "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"


@dataclass(frozen=True)
class Kind:
    """One type: its SQL, two values as SQL literals, and each one's key text and value
    (XDS type and text)."""

    name: str
    sql: str
    literals: tuple[str, str]
    keys: tuple[str, str]
    xds_type: str
    texts: tuple[str, str] | None = None  # as a value; None: as the key text


def same(name: str, sql: str, first: str, second: str, xds_type: str = "string") -> Kind:
    """A type whose values are quoted strings, their key and value texts as written."""
    return Kind(name, sql, (f"'{first}'", f"'{second}'"), (first, second), xds_type)


# Dates and timestamps are `time` values (Time Syntax 1): seconds since 1970 UTC.
DAY = ("1706659200", "1706745600")  # 2024-01-31, 2024-02-01
MOMENT = ("1706695200", "1706781600")  # 10:00:00 on those days
TYPES = {
    "postgresql": [
        same("uuid", "uuid", UUID1, UUID2),
        Kind("date", "date", ("'2024-01-31'", "'2024-02-01'"), ("2024-01-31", "2024-02-01"), "time", DAY),
        Kind("ts", "timestamp", ("'2024-01-31 10:00:00.5'", "'2024-02-01 10:00:00'"),
             ("2024-01-31 10:00:00.5", "2024-02-01 10:00:00"), "time", MOMENT),
        Kind("tstz", "timestamptz", ("'2024-01-31 12:00:00+02'", "'2024-02-01 10:00:00Z'"),
             ("2024-01-31 10:00:00+00", "2024-02-01 10:00:00+00"), "time", MOMENT),
        Kind("num", "numeric(12,2)", ("1.50", "-20.00"), ("1.50", "-20.00"), "string"),
        Kind("dec", "decimal", ("12345678901234567890.123", "7"), ("12345678901234567890.123", "7"), "string"),
        Kind("small", "smallint", ("32767", "-32768"), ("32767", "-32768"), "int"),
        Kind("big", "bigint", ("9223372036854775807", "-9223372036854775808"),
             ("9223372036854775807", "-9223372036854775808"), "int"),
        same("chr", "char(6)", "ab", "cd  e"),
        same("vc", "varchar(20)", "007", "a b"),
        same("txt", "text", "Größe", "7"),
        same("ci", "citext", "mixed", "MIXED"),
        Kind("bool", "boolean", ("true", "false"), ("true", "false"), "state"),
        Kind("bin", "bytea", ("'\\x00ff10'::bytea", "'\\x'::bytea"), ("AP8Q", ""), "octet"),
        same("mood", "{schema}.mood", "happy", "sad"),
    ],
    "mariadb": [
        same("uuid", "UUID", UUID1, UUID2),
        Kind("date", "DATE", ("'2024-01-31'", "'2024-02-01'"), ("2024-01-31", "2024-02-01"), "time", DAY),
        Kind("dt", "DATETIME", ("'2024-01-31 10:00:00'", "'2024-02-01 10:00:00'"),
             ("2024-01-31 10:00:00", "2024-02-01 10:00:00"), "time", MOMENT),
        Kind("num", "DECIMAL(12,2)", ("1.50", "-20.00"), ("1.50", "-20.00"), "string"),
        Kind("big", "BIGINT UNSIGNED", ("18446744073709551615", "9223372036854775808"),
             ("18446744073709551615", "9223372036854775808"), "int"),
        same("ci", "VARCHAR(20) COLLATE utf8mb4_general_ci", "mixed", "MIXED"),
        same("chr", "CHAR(6) COLLATE utf8mb4_general_ci", "ab", "AB"),
        Kind("bin", "BINARY(3)", ("x'00ff10'", "x'414243'"), ("AP8Q", "QUJD"), "octet"),
        Kind("vbin", "VARBINARY(8)", ("x'00ff10'", "x''"), ("AP8Q", ""), "octet"),
        Kind("bool", "BOOLEAN", ("TRUE", "FALSE"), ("true", "false"), "state"),
        Kind("bit", "BIT(1)", ("b'1'", "b'0'"), ("true", "false"), "state"),
    ],
    "sqlite": [
        Kind("untyped", "", ("7", "'007'"), ("7", "007"), "string"),
        same("txt", "TEXT", "007", "7"),
        Kind("int", "INTEGER", ("9223372036854775807", "-1"), ("9223372036854775807", "-1"), "int"),
        Kind("bool", "BOOLEAN", ("1", "0"), ("true", "false"), "state"),
        Kind("bin", "BLOB", ("x'00ff10'", "x''"), ("AP8Q", ""), "octet"),
        Kind("date", "DATE", ("'2024-01-31'", "'2024-02-01'"), ("2024-01-31", "2024-02-01"), "time", DAY),
        Kind("num", "NUMERIC(12,2)", ("'1.5'", "20"), ("1.5", "20"), "string"),
    ],
}
# The composite key of each database: three of its types, and a text value.
COMPOSITE = {
    "postgresql": ("uuid", "date", "bool"), "mariadb": ("uuid", "num", "bin"), "sqlite": ("untyped", "txt", "bin"),
}
MIXED = "kt_mixed"
DATABASES = list(TYPES)

Model = dict[tuple[str, str], dict[str, set[tuple[str, str]]]]  # (class, key): attr: {(type, text)}


def table_of(kind: Kind) -> str:
    return f"kt_{kind.name}"


def expected(kind_name: str, row: int) -> Model:
    """The objects after change ``row`` (0: the rows inserted, 1: each key and value swapped)."""
    model: Model = {}
    for kind in TYPES[kind_name]:
        value = (kind.texts or kind.keys)[1 - row]
        model[(table_of(kind), format_table_key([("k", kind.keys[row])]))] = {"v": {(kind.xds_type, value)}}
    parts = [k for k in TYPES[kind_name] if k.name in COMPOSITE[kind_name]]
    key = format_table_key([(f"c_{k.name}", k.keys[row]) for k in parts])
    model[(MIXED, key)] = {"v": {("string", f"row {row}")}}
    return model


class KeyTypesDb:
    """The sample database (its event log) with a table per type of ``kind_name``."""

    def __init__(self, kind_name: str, tmp_path: Path) -> None:
        self.kind, self.tmp_path = kind_name, tmp_path
        self.db: SampleDb = make_sample_db(kind_name, tmp_path)
        self.settings = replace(self.db.settings, publisher_user=PUBLISHER,
                                tables=(*(table_of(k) for k in TYPES[kind_name]), MIXED))
        self.cycles = 0
        if kind_name == "postgresql":
            try:
                self.db.execute("CREATE EXTENSION IF NOT EXISTS citext SCHEMA public")
            except sa.exc.IntegrityError:  # another test made it at the same moment
                pass
            self.db.execute(f"CREATE TYPE {self.db.schema}.mood AS ENUM ('sad', 'happy')")
        for kind in TYPES[kind_name]:
            sql = kind.sql.format(schema=self.db.schema)
            self.db.execute(f"CREATE TABLE {self.db.table(table_of(kind))} (k {sql} NOT NULL PRIMARY KEY, v {sql})")
        parts = [k for k in TYPES[kind_name] if k.name in COMPOSITE[kind_name]]
        columns = ", ".join(f"c_{k.name} {k.sql} NOT NULL" for k in parts)
        keys = ", ".join(f"c_{k.name}" for k in parts)
        self.db.execute(f"CREATE TABLE {self.db.table(MIXED)} ({columns}, v VARCHAR(10), PRIMARY KEY ({keys}))")

    def install(self, flavour: str) -> None:
        script = trigger_script(self.db.database, self.db.schema, "indirect_process",
                                list(self.settings.tables), flavour)
        run_scripts(self.db.database, [script.ddl])

    def change(self, row: int) -> None:
        """Row 0: insert each table's row; row 1: swap its key and value."""
        for kind in TYPES[self.kind]:
            first, second = kind.literals
            name = self.db.table(table_of(kind))
            if row == 0:
                self.db.execute(f"INSERT INTO {name} (k, v) VALUES ({first}, {second})")
            else:
                self.db.execute(f"UPDATE {name} SET k = {second}, v = {first}")
        parts = [k for k in TYPES[self.kind] if k.name in COMPOSITE[self.kind]]
        if row == 0:
            values = ", ".join(k.literals[0] for k in parts)
            columns = ", ".join(f"c_{k.name}" for k in parts)
            self.db.execute(f"INSERT INTO {self.db.table(MIXED)} ({columns}, v) VALUES ({values}, 'row 0')")
        else:
            sets = ", ".join(f"c_{k.name} = {k.literals[1]}" for k in parts)
            self.db.execute(f"UPDATE {self.db.table(MIXED)} SET {sets}, v = 'row 1'")

    def publish(self, **overrides: object) -> tuple[etree._Element, CycleReport]:
        self.cycles += 1
        settings = replace(self.settings, **overrides)
        out = self.tmp_path / f"cycle-{self.cycles}.xml"
        log = open_event_log(self.db.database, settings)
        report = run_cycle(settings, self.db.database, log, FileSink(out))
        assert report.errors == [], report.errors
        return written_document(out, report), report

    def explained(self) -> set[tuple[str, str]]:
        """(kind, association) of each command ``explain`` says the pending rows make."""
        args = ["explain", "--db", self.settings.db_url, "--schema", self.db.schema, "--publisher-user",
                PUBLISHER, "--tables", ",".join(self.settings.tables), "--format", "json"]
        result = CliRunner().invoke(cli, args, catch_exceptions=False)
        assert result.exit_code == 0, result.output
        lines = [json.loads(line) for line in result.output.splitlines()]
        failed = [line for line in lines if line["fate"] not in ("published", "superseded")]
        assert [(line["table_key"], line.get("reason")) for line in failed] == []
        return {(line["kind"], line["association"]) for line in lines if line["fate"] == "published"}

    def statuses(self) -> set[str]:
        return set(self.db.statuses().values())


def applied(model: Model, document: etree._Element, schema: str) -> Model:
    """``model`` with the document's commands applied as a directory would apply them."""
    model = {k: {a: set(v) for a, v in attrs.items()} for k, attrs in model.items()}
    for command in document.find("input"):
        association = command.findtext("association")
        key, suffix = association.split(",table=", 1)
        obj = (command.get("class-name"), key)
        assert suffix == f"{obj[0]},schema={schema}", association
        if command.tag == "delete":
            assert model.pop(obj, None) is not None, f"delete of no object: {obj}"
            continue
        attributes = model.setdefault(obj, {})
        for attr in command:
            if attr.tag not in ("add-attr", "modify-attr"):
                continue
            values = attributes.setdefault(attr.get("attr-name"), set())
            pieces = [attr] if attr.tag == "add-attr" else list(attr)
            for piece in pieces:
                texts = {(v.get("type"), v.text or "") for v in piece.iter("value")}
                if piece.tag == "remove-all-values":
                    values.clear()
                elif piece.tag == "remove-value":
                    values -= texts
                else:
                    values |= texts
    return model


def commands_of(document: etree._Element) -> set[tuple[str, str]]:
    return {(c.tag, c.findtext("association")) for c in document.find("input")}


@pytest.fixture(params=DATABASES)
def keys_db(request, tmp_path: Path):
    made = KeyTypesDb(request.param, tmp_path)
    yield made
    made.db.drop()


@pytest.mark.parametrize("flavour", ["field", "query-back"])
def test_each_type_as_key_and_value_publishes_one_text_in_every_path(keys_db, flavour, tmp_path):
    db = keys_db
    db.install(flavour)
    model: Model = {}
    for row in (0, 1):
        db.change(row)
        explained = db.explained()
        document, _ = db.publish()
        assert explained == commands_of(document)
        model = applied(model, document, db.db.schema)
        assert model == expected(db.kind, row), f"after change {row}"
        assert db.statuses() == {"S"}

    # resync logs each object as the triggers key it; its export gives the same objects.
    result = CliRunner().invoke(cli, ["resync", "--db", db.settings.db_url, "--schema", db.db.schema,
                                      "--tables", ",".join(db.settings.tables)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    document, _ = db.publish()
    assert applied({}, document, db.db.schema) == expected(db.kind, 1)
    assert db.statuses() == {"S"}

    # Triggerless: the database's objects read whole, keyed by the same texts.
    assert triggerless(db.db, db.settings, tmp_path) == expected(db.kind, 1)


def triggerless(db: SampleDb, settings: Settings, tmp_path: Path) -> Model:
    """The objects a first triggerless cycle (--startup all) publishes."""
    options = TriggerlessOptions(tmp_path / "state", "all")
    with TriggerlessPublication(settings, options, db.database) as publisher:
        report = run(settings, publisher, open_sink(str(tmp_path / "triggerless"), 3))
    assert report.failed == []
    assert report.on_spark == (settings.small_cycle_rows == 0)  # every class has rows
    model: Model = {}
    for path in sorted((tmp_path / "triggerless").glob("*.xml")):
        model = applied(model, etree.parse(str(path)).getroot(), db.schema)
    return model


@pytest.mark.slow
def test_spark_publishes_the_same_keys_and_values(keys_db, spark, tmp_path):
    """Spark's reads (JDBC, or COPY on PostgreSQL) of the keyed rows of the driver plan,
    and of whole tables (triggerless): an unsigned BIGINT past 2**63 is read whole, not
    split on."""
    db = keys_db
    db.install("query-back")
    model: Model = {}
    for row in (0, 1):
        db.change(row)
        document, report = db.publish(small_cycle_rows=0, spark_master="local[2]")
        assert report.on_spark
        model = applied(model, document, db.db.schema)
        assert model == expected(db.kind, row), f"after change {row}"
    assert db.statuses() == {"S"}
    spark_settings = replace(db.settings, small_cycle_rows=0, spark_master="local[2]")
    assert triggerless(db.db, spark_settings, tmp_path) == expected(db.kind, 1)


def _values(document: etree._Element) -> dict[str, list[tuple[str, str, str]]]:
    """Each command's association: its (attribute, type, text) values, sorted."""
    return {
        c.findtext("association").split(",table=")[0]: sorted(
            (a.get("attr-name"), v.get("type"), v.text) for a in c if a.get("attr-name") for v in a.iter("value")
        )
        for c in document.find("input")
    }


def test_a_postgresql_uuid_date_or_numeric_key_is_read_back(tmp_path):
    """Query-back binds each key text as a value of its column's type: PostgreSQL compares
    a uuid, date, numeric or timestamp with no character varying."""
    db = make_sample_db("postgresql", tmp_path)
    try:
        for name, sql, key in (("u", "uuid", UUID1), ("d", "date", "2024-01-31"), ("n", "numeric(6,2)", "1.50"),
                               ("t", "timestamp", "2024-01-31 10:00:00")):
            db.execute(f"CREATE TABLE {db.table(name)} (k {sql} PRIMARY KEY, v text)")
            db.execute(f"INSERT INTO {db.table(name)} VALUES ('{key}', 'of {name}')")
            db.log((f"k={key}", 6, name), (f"k={key}", 8, name, "v"))
        # A child table's rows, read by the parent's uuid key.
        db.execute(f"CREATE TABLE {db.table('u_tag')} (k uuid NOT NULL REFERENCES {db.table('u')}, tag text NOT NULL)")
        db.execute(f"INSERT INTO {db.table('u_tag')} VALUES ('{UUID1}', 'x'), ('{UUID1}', 'y')")
        db.log((f"k={UUID1}", 8, "u", "u_tag.tag"))
        document, report = db.publish(tmp_path / "out.xml", tables=("u", "d", "n", "t"))
        assert report.errors == [] and set(db.statuses().values()) == {"S"}
        assert _values(document) == {
            f"k={UUID1}": [("u_tag.tag", "string", "x"), ("u_tag.tag", "string", "y"), ("v", "string", "of u")],
            "k=2024-01-31": [("v", "string", "of d")],
            "k=1.50": [("v", "string", "of n")], "k=2024-01-31 10:00:00": [("v", "string", "of t")],
        }
    finally:
        db.drop()


@pytest.mark.parametrize("kind", DATABASES)
def test_a_boolean_column_is_state_on_every_database(kind, tmp_path):
    """MariaDB's BOOLEAN is TINYINT(1): it publishes as PostgreSQL's and SQLite's boolean
    do, type state, as does MariaDB's BIT(1)."""
    db = make_sample_db(kind, tmp_path)
    try:
        bit = kind == "mariadb"
        flag = db.table("flag")
        db.execute(f"CREATE TABLE {flag} (k INTEGER PRIMARY KEY, f BOOLEAN{', b BIT(1)' if bit else ''})")
        db.log(("k=1", 1, "flag", "f", None, "true" if kind == "postgresql" else "1"), ("k=2", 6, "flag"))
        db.execute(f"INSERT INTO {flag} (k, f) VALUES (2, FALSE)")
        if bit:
            db.execute(f"UPDATE {flag} SET b = 0")
        document, report = db.publish(tmp_path / "out.xml", tables=("flag",))
        read_back = [*([("b", "state", "false")] if bit else []), ("f", "state", "false")]
        assert _values(document) == {"k=1": [("f", "state", "true")], "k=2": read_back}
        assert report.errors == []
    finally:
        db.drop()


def test_an_integer_key_past_a_signed_bigint_names_no_row_of_a_signed_column(tmp_path):
    """2**63 is a key of an unsigned BIGINT only: on a signed column its query-back finds
    nothing (SQLite could not even bind it), and the cycle goes on."""
    db = make_sample_db("sqlite", tmp_path)
    try:
        db.execute("CREATE TABLE big (k INTEGER PRIMARY KEY, v TEXT)")
        db.execute("INSERT INTO big VALUES (1, 'one')")
        db.log((f"k={2**63}", 6, "big"), ("k=1", 6, "big"))
        document, report = db.publish(tmp_path / "out.xml", tables=("big",))
        assert report.errors == [] and _values(document) == {"k=1": [("v", "string", "one")]}
    finally:
        db.drop()


def resync_broken_then_resumed(monkeypatch: pytest.MonkeyPatch, url: str, schema: str, table: str) -> None:
    """``resync`` of ``table`` a row a chunk, its connection broken as it records its second
    chunk (exit 5), then run again to the end: it resumes after the first chunk's key."""
    record, calls = resync_module._Passes.record, []

    def failing(self, conn, name, last_key, count):
        calls.append(last_key)
        if len(calls) == 2:
            raise RuntimeError("the connection broke")
        record(self, conn, name, last_key, count)

    args = ["resync", "--db", url, "--schema", schema, "--tables", table, "--chunk", "1"]
    monkeypatch.setattr(resync_module._Passes, "record", failing)
    assert CliRunner().invoke(cli, args, catch_exceptions=False).exit_code == 5
    monkeypatch.setattr(resync_module._Passes, "record", record)
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("kind", DATABASES)
def test_a_resync_resumes_after_a_boolean_key(kind, tmp_path, monkeypatch):
    """The key text a resumed resync starts after is bound back as a boolean: `true` on
    PostgreSQL's boolean, 1 on MariaDB's TINYINT(1)."""
    db = make_sample_db(kind, tmp_path)
    try:
        db.execute(f"CREATE TABLE {db.table('flag')} (k BOOLEAN NOT NULL PRIMARY KEY, v VARCHAR(5))")
        db.execute(f"INSERT INTO {db.table('flag')} (k, v) VALUES (FALSE, 'no'), (TRUE, 'yes')")
        resync_broken_then_resumed(monkeypatch, db.settings.db_url, db.schema, "flag")
        with db.engine.connect() as conn:
            logged = conn.execute(sa.text(f"SELECT table_key FROM {db.table('indirect_process')} ORDER BY record_id"))
            assert [r[0] for r in logged] == ["k=false", "k=true"]
    finally:
        db.drop()


# A zoned time (docs/rendering.md, Key text): (its type, the changing session's zone, and
# xdspub's own sessions' as URL options); its rows are written as Asia/Kolkata's times.
ZONED = {
    "postgresql": ("timestamptz", "SET TIME ZONE 'Asia/Kolkata'", {"options": "-c TimeZone=America/New_York"}),
    "mariadb": ("TIMESTAMP NULL", "SET time_zone = '+05:30'", {"init_command": "SET time_zone = '-05:00'"}),
}
KOLKATA = ("'2024-01-31 15:30:00'", "'2024-02-01 15:30:00'")  # 10:00 UTC on those days
UTC_TEXT = {"postgresql": "{} 10:00:00+00", "mariadb": "{} 10:00:00"}


class ZonedDb:
    """A table keyed by a zoned time with a zoned value for each trigger flavour, changed
    in one zone and published by xdspub's sessions in another."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind, self.tmp_path, self.cycles = kind, tmp_path, 0
        self.db = make_sample_db(kind, tmp_path)
        sql, self.changing_zone, options = ZONED[kind]
        url = sa.engine.make_url(self.db.settings.db_url).update_query_dict(options)
        self.url = url.render_as_string(hide_password=False)
        self.engine, self.dialect = self.database = connect(self.url)
        self.settings = replace(self.db.settings, db_url=self.url, publisher_user=PUBLISHER,
                                tables=tuple(f"tz_{f.replace('-', '_')}" for f in FLAVOURS))
        for flavour, table in zip(FLAVOURS, self.settings.tables):
            self.db.execute(f"CREATE TABLE {self.db.table(table)} (k {sql} NOT NULL PRIMARY KEY, v {sql})")
            script = trigger_script(self.database, self.db.schema, "indirect_process", [table], flavour)
            run_scripts(self.database, [script.ddl])

    def change(self, row: int) -> None:
        """In the changing session's zone: row 0 inserted, row 1 its key and value swapped."""
        with self.db.engine.begin() as conn:
            conn.execute(sa.text(self.changing_zone))
            for table in self.settings.tables:
                name = self.db.table(table)
                conn.execute(sa.text(f"INSERT INTO {name} (k, v) VALUES ({KOLKATA[0]}, {KOLKATA[1]})" if row == 0
                                     else f"UPDATE {name} SET k = {KOLKATA[1]}, v = {KOLKATA[0]}"))

    def publish(self, **overrides: object) -> etree._Element:
        self.cycles += 1
        settings = replace(self.settings, **overrides)
        out = self.tmp_path / f"zoned-{self.cycles}.xml"
        log = open_event_log(self.database, settings)
        report = run_cycle(settings, self.database, log, FileSink(out))
        assert report.errors == [] and set(self.db.statuses().values()) == {"S"}, report.errors
        self.on_spark = report.on_spark
        return written_document(out, report)

    def expected(self, row: int) -> Model:
        days = ("2024-01-31", "2024-02-01")
        key = format_table_key([("k", UTC_TEXT[self.kind].format(days[row]))])
        return {(table, key): {"v": {("time", MOMENT[1 - row])}} for table in self.settings.tables}


@pytest.fixture(params=["postgresql", "mariadb"])
def zoned_db(request, tmp_path: Path):
    made = ZonedDb(request.param, tmp_path)
    yield made
    made.engine.dispose()
    made.db.drop()


def test_a_zoned_time_has_one_utc_text_whatever_the_sessions_zone(zoned_db, tmp_path):
    """A timestamptz (MariaDB TIMESTAMP) key and value logged by the triggers of both
    flavours in one zone, read back by xdspub's sessions in another, by triggerless and
    after resync: one UTC text, so that a key change deletes the object that was added."""
    db = zoned_db
    model: Model = {}
    for row in (0, 1):
        db.change(row)
        model = applied(model, db.publish(), db.db.schema)
        assert model == db.expected(row), f"after change {row}"
    result = CliRunner().invoke(cli, ["resync", "--db", db.url, "--schema", db.db.schema,
                                      "--tables", ",".join(db.settings.tables)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    assert applied({}, db.publish(), db.db.schema) == db.expected(1)
    options = TriggerlessOptions(tmp_path / "state", "all")
    with TriggerlessPublication(db.settings, options, db.database) as publisher:
        assert run(db.settings, publisher, open_sink(str(tmp_path / "triggerless"), 3)).failed == []
    model = {}
    for path in sorted((tmp_path / "triggerless").glob("*.xml")):
        model = applied(model, etree.parse(str(path)).getroot(), db.db.schema)
    assert model == db.expected(1)


@pytest.mark.slow
def test_spark_reads_a_zoned_time_as_the_driver_does(tmp_path, spark):
    """Spark's JDBC source reads in its Java time zone (PostgreSQL's driver sets the
    session's to it), the Python workers' COPY in the URL's: the key the triggers wrote in
    a third zone still names the row, and the texts are the driver's."""
    db = ZonedDb("postgresql", tmp_path)
    try:
        db.change(0)
        document = db.publish(small_cycle_rows=0, spark_master="local[2]")
        assert db.on_spark
        assert applied({}, document, db.db.schema) == db.expected(0)
    finally:
        db.engine.dispose()
        db.db.drop()


def test_a_resync_resumes_after_a_zoned_key(tmp_path, monkeypatch):
    """The UTC text of a MariaDB TIMESTAMP key a resumed resync starts after is compared
    in xdspub's session's zone: 12:00 UTC, after 10:00 UTC, is not taken for before it."""
    db = ZonedDb("mariadb", tmp_path)
    try:
        with db.db.engine.begin() as conn:
            conn.execute(sa.text(db.changing_zone))
            conn.execute(sa.text(f"INSERT INTO {db.db.table('tz_field')} (k) VALUES ({KOLKATA[0]}),"
                                 " ('2024-01-31 17:30:00')"))
        resync_broken_then_resumed(monkeypatch, db.url, db.db.schema, "tz_field")
        with db.engine.connect() as conn:
            logged = conn.execute(sa.text(f"SELECT table_key FROM {db.db.table('indirect_process')}"
                                          " WHERE event_type = 5 ORDER BY record_id"))  # not the triggers' 1
            assert [r[0] for r in logged] == ["k=2024-01-31 10:00:00", "k=2024-01-31 12:00:00"]
    finally:
        db.engine.dispose()
        db.db.drop()


COLLATED = {"mariadb": "VARCHAR(10)", "postgresql": "{schema}.citext"}


@pytest.mark.parametrize("kind", sorted(COLLATED))
@pytest.mark.parametrize("flavour", [*FLAVOURS, "triggerless"])
def test_a_value_naming_a_collated_key_is_published_as_the_named_row_holds_it(kind, flavour, tmp_path):
    """Under a case-insensitive collation (MariaDB's default, PostgreSQL's citext) 'CN'
    names the row of 'cn': a reference, a link table's reference and a child row's link in
    another case are published as the key that row holds, the association its object has."""
    db = make_sample_db(kind, tmp_path)
    try:
        if kind == "postgresql":
            try:
                db.execute("CREATE EXTENSION IF NOT EXISTS citext SCHEMA public")
            except sa.exc.IntegrityError:  # another test made it at the same moment
                pass
        sql = COLLATED[kind].format(schema="public")
        tables = ("dept", "staff")  # with their child tables dept_alias, staff_depts
        db.execute(f"CREATE TABLE {db.table('dept')} (code {sql} NOT NULL PRIMARY KEY, name VARCHAR(10))")
        db.execute(f"CREATE TABLE {db.table('staff')} (id INT NOT NULL PRIMARY KEY, "
                   f"dept {sql} NULL REFERENCES {db.table('dept')} (code))")
        db.execute(f"CREATE TABLE {db.table('dept_alias')} (code {sql} NOT NULL REFERENCES {db.table('dept')} (code), "
                   "alias VARCHAR(10) NOT NULL)")
        db.execute(f"CREATE TABLE {db.table('staff_depts')} (id INT NOT NULL REFERENCES {db.table('staff')} (id), "
                   f"dept {sql} NOT NULL REFERENCES {db.table('dept')} (code))")
        settings = replace(db.settings, publisher_user=PUBLISHER, tables=tables)
        if flavour != "triggerless":
            script = trigger_script(db.database, db.schema, "indirect_process",
                                    [*tables, "dept_alias", "staff_depts"], flavour)
            run_scripts(db.database, [script.ddl])
        db.execute(f"INSERT INTO {db.table('dept')} (code, name) VALUES ('cn', 'China')")
        db.execute(f"INSERT INTO {db.table('staff')} (id, dept) VALUES (1, 'CN')")
        db.execute(f"INSERT INTO {db.table('dept_alias')} (code, alias) VALUES ('Cn', 'zh')")
        db.execute(f"INSERT INTO {db.table('staff_depts')} (id, dept) VALUES (1, 'cN')")
        out = tmp_path / "out"
        if flavour == "triggerless":
            with TriggerlessPublication(settings, TriggerlessOptions(tmp_path / "state", "all"),
                                        db.database) as publisher:
                assert run(settings, publisher, open_sink(str(out), 3)).failed == []
        else:
            report = run_cycle(settings, db.database, open_event_log(db.database, settings),
                               open_sink(str(out), 3))
            assert report.errors == []
        model: Model = {}
        for path in sorted(out.glob("*.xml")):
            model = applied(model, etree.parse(str(path)).getroot(), db.schema)
        cn = f"code=cn,table=dept,schema={db.schema}"
        assert model == {
            ("dept", "code=cn"): {"name": {("string", "China")}, "dept_alias.alias": {("string", "zh")}},
            ("staff", "id=1"): {"dept": {("dn", cn)}, "staff_depts.dept": {("dn", cn)}},
        }
    finally:
        db.drop()


# A binary type of each database, and two of its values (one not UTF-8) as SQL literals,
# with their key texts.
BINARY = {
    "postgresql": ("bytea", ("'\\xff80'::bytea", "'\\x0001'::bytea")),
    "mariadb": ("VARBINARY(8)", ("x'ff80'", "x'0001'")),
    "sqlite": ("BLOB", ("x'ff80'", "x'0001'")),
}
BINARY_KEYS = ("/4A=", "AAE=")


@pytest.mark.parametrize("flavour", ["field", "query-back", "triggerless"])
@pytest.mark.parametrize("kind", DATABASES)
def test_a_reference_to_a_binary_key_is_the_association_of_the_object_it_names(kind, flavour, tmp_path):
    """A reference to a binary-keyed class (a parent's column, a link table's, a view's fk_
    column read back) holds the Base64 key text of the object it names, whichever path
    logged or read it; on MariaDB the link table's trigger takes bytes that are not UTF-8
    (docs/rendering.md, Key text)."""
    published_binary_references(kind, flavour, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("flavour", ["query-back", "triggerless"])
@pytest.mark.parametrize("kind", DATABASES)
def test_spark_reads_a_reference_to_a_binary_key_as_the_driver_does(kind, flavour, spark, tmp_path):
    published_binary_references(kind, flavour, tmp_path, small_cycle_rows=0, spark_master="local[2]")


def published_binary_references(kind: str, flavour: str, tmp_path: Path, **overrides: object) -> None:
    """The objects of a binary-keyed class and of the references to it, logged by the
    triggers of ``flavour`` (or read triggerless) and published under ``overrides``,
    are those of the database, and a mirror of them verifies."""
    db = make_sample_db(kind, tmp_path)
    try:
        sql, (first, second) = BINARY[kind]
        bk, ref, link = db.table("bk"), db.table("bk_ref"), db.table("bk_link")
        db.execute(f"CREATE TABLE {bk} (k {sql} NOT NULL PRIMARY KEY, v VARCHAR(10))")
        db.execute(f"CREATE TABLE {ref} (id INTEGER NOT NULL PRIMARY KEY, r {sql} NULL REFERENCES {bk} (k))")
        db.execute(f"CREATE TABLE {link} (k {sql} NOT NULL REFERENCES {bk} (k), r {sql} NOT NULL REFERENCES {bk} (k))")
        db.execute(f"CREATE VIEW {db.table('bk_view')} AS SELECT id AS pk_id, r AS fk__k__boss FROM {ref}")
        tables = ("bk", "bk_ref")  # bk_link is a child table of bk; views take no triggers
        if flavour != "triggerless":
            script = trigger_script(db.database, db.schema, "indirect_process", None, flavour, tables)
            run_scripts(db.database, [script.ddl])
        db.execute(f"INSERT INTO {bk} (k, v) VALUES ({first}, 'first'), ({second}, 'second')")
        db.execute(f"INSERT INTO {ref} (id, r) VALUES (1, {first}), (2, {second})")
        # Each object links itself: a reference to an object published later is a matter
        # of order, not of text (docs/reduction.md, References and order).
        db.execute(f"INSERT INTO {link} (k, r) VALUES ({first}, {first}), ({second}, {second})")
        settings = replace(db.settings, publisher_user=PUBLISHER, tables=(*tables, "bk_view"), **overrides)
        if flavour == "triggerless":
            model, published = triggerless(db, settings, tmp_path), tmp_path / "triggerless"
        else:
            db.log(("pk_id=1", 5, "bk_view"), ("pk_id=2", 5, "bk_view"))
            document, report = db.publish(tmp_path / "out.xml", publisher_user=PUBLISHER, tables=settings.tables,
                                          **overrides)
            assert report.errors == [] and set(db.statuses().values()) == {"S"}
            assert report.on_spark == bool(overrides)
            model, published = applied({}, document, db.schema), tmp_path / "out.xml"
        # A mirror of the documents holds every object a reference names, and verify reads
        # the binary keys back (docs/mirror.md).
        mirror = tmp_path / "mirror.db"
        assert apply_documents([published], mirror).failure is None
        assert verify_mirror(settings, mirror) == []

        def names(key: str) -> set[tuple[str, str]]:
            return {("dn", f"{format_table_key([('k', key)])},table=bk,schema={db.schema}")}

        one, other = (format_table_key([("k", k)]) for k in BINARY_KEYS)
        assert model == {
            ("bk", one): {"v": {("string", "first")}, "bk_link.r": names(BINARY_KEYS[0])},
            ("bk", other): {"v": {("string", "second")}, "bk_link.r": names(BINARY_KEYS[1])},
            ("bk_ref", "id=1"): {"r": names(BINARY_KEYS[0])},
            ("bk_ref", "id=2"): {"r": names(BINARY_KEYS[1])},
            ("bk_view", "pk_id=1"): {"fk_boss": names(BINARY_KEYS[0])},
            ("bk_view", "pk_id=2"): {"fk_boss": names(BINARY_KEYS[1])},
        }
    finally:
        db.drop()
