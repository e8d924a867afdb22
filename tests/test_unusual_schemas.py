"""Publication triggers on a schema unlike the sample (docs/triggers.md), on SQLite,
PostgreSQL and MariaDB: a mixed-case schema, mixed-case, reserved-word, spaced and non-ASCII
names, a table name too long for its triggers' names, a composite key, a key-only table, a
child table and many column types; the triggers install, each operation's trigger fires,
and every inserted object is announced (field flavour), so that publishing gives an
``<add>`` for it even with no value to add. A foreign key without an index is warned of."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from lxml import etree

from publisher.cli import cli
from publisher.settings import Settings
from publisher.source.database import connect, run_scripts
from publisher.source.init_db import init_db
from publisher.source.triggers import trigger_script
from tests.conftest import LOG_COLUMNS, canonical, server_url, written_document
from tests.server_objects import drop_schema

DATABASES = ["sqlite", "postgresql", "mariadb"]
LOG = "Event Log"
# 63 characters: PostgreSQL's longest name, one short of MariaDB's; its triggers' names
# (<table>_log_<op>) are too long for both.
PERSON = "Personen_mit_einem_sehr_langen_Tabellennamen_der_Firma_Beispiel"
LINE, TAG, ALIAS = "Order Line", "Tag", "Alias"


class UnusualDb:
    """The schema in a new SQLite file, or a new mixed-case schema (a database on MariaDB)
    of a server, with an event log named ``Event Log``."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        if kind == "sqlite":
            url, self.schema = f"sqlite:///{tmp_path / 'unusual.db'}", "Mixed"
        else:
            url, self.schema = server_url(kind), f"Xt_{uuid.uuid4().hex[:8]}_Mixed"
        self.engine, self.dialect = self.database = connect(url, create=True)
        self.db_schema = self.dialect.schema_named(self.schema)
        init_db(self.database, self.schema, LOG, False, "none")
        self.metadata = sa.MetaData(schema=self.db_schema)
        prefix = f"{self.db_schema}." if self.db_schema else ""
        self.person = sa.Table(
            PERSON, self.metadata,
            sa.Column("ID", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("Full Name", sa.String(40)),
            sa.Column("order", sa.SmallInteger),
            sa.Column("select", sa.Text),
            sa.Column("Größe", sa.Numeric(10, 2)),
            sa.Column("ratio", sa.Float),
            sa.Column("active", sa.Boolean),
            sa.Column("born", sa.Date),
            sa.Column("seen", sa.DateTime),
            sa.Column("code", sa.CHAR(8)),
            sa.Column("blob", sa.LargeBinary),
            sa.Column("big", sa.BigInteger),
            sa.Column("manager", sa.Integer),
            # Named: MariaDB's own name for it (<table>_ibfk_1) would be too long.
            sa.ForeignKeyConstraint(["manager"], [f"{prefix}{PERSON}.ID"], name="person_manager"),
        )
        self.line = sa.Table(
            LINE, self.metadata,
            sa.Column("Order", sa.String(20), primary_key=True),
            sa.Column("user", sa.Integer, primary_key=True, autoincrement=False),
            sa.Column("Qty", sa.Integer),
            sa.Column("note", sa.Text),
        )
        self.tag = sa.Table(TAG, self.metadata, sa.Column("Value", sa.String(30), primary_key=True))
        self.alias = sa.Table(
            ALIAS, self.metadata,
            sa.Column("Person", sa.Integer, nullable=False),
            sa.Column("Alias", sa.String(30), nullable=False),
            sa.ForeignKeyConstraint(["Person"], [f"{prefix}{PERSON}.ID"], ondelete="CASCADE"),
        )
        self.metadata.create_all(self.engine)
        self.url = self.engine.url.render_as_string(hide_password=False)

    def install(self, flavour: str) -> None:
        script = trigger_script(self.database, self.schema, LOG, None, flavour)
        run_scripts(self.database, [script.ddl])

    def change(self, *statements: sa.Executable) -> list[tuple]:
        """Run the statements (one transaction) and return the rows they logged."""
        log = sa.Table(LOG, sa.MetaData(schema=self.db_schema), autoload_with=self.engine)
        with self.engine.begin() as conn:
            since = conn.execute(sa.select(sa.func.max(log.c.record_id))).scalar() or 0
            for statement in statements:
                conn.execute(statement)
            rows = conn.execute(
                sa.select(*(log.c[c] for c in LOG_COLUMNS))
                .where(log.c.record_id > since)
                .order_by(log.c.record_id)
            )
            return [(r[0], int(r[1]), *r[2:]) for r in rows]

    def publish(self, out: Path) -> etree._Element:
        from publisher.cycle import run_cycle
        from publisher.delivery.sinks import FileSink
        from publisher.source.event_log import open_event_log

        settings = Settings(db_url=self.url, schema=self.schema, log_table=LOG, allow_loopback=True)
        log = open_event_log(self.database, settings)
        report = run_cycle(settings, self.database, log, FileSink(out))
        assert report.errors == []
        return written_document(out, report)

    def drop(self) -> None:
        if self.db_schema is not None:
            drop_schema(self.engine, self.schema)
        self.engine.dispose()


@pytest.fixture(params=DATABASES)
def unusual(request, tmp_path: Path):
    db = UnusualDb(request.param, tmp_path)
    yield db
    db.drop()


FULL_ROW = {
    "ID": 1, "Full Name": "Ann O'Neil", "order": 3, "select": "x; DROP", "Größe": 12.5,
    "ratio": 0.25, "active": True, "seen": None, "code": "ab", "blob": b"\x00\xff", "big": 2**40,
}


def test_field_triggers_log_every_operation_and_announce_every_insert(unusual, tmp_path):
    db = unusual
    db.install("field")
    person, line, tag, alias = db.person, db.line, db.tag, db.alias

    logged = db.change(person.insert().values(**FULL_ROW))
    assert [(r[0], r[1], r[2], r[3]) for r in logged] == [
        ("ID=1", 1, PERSON, c) for c in FULL_ROW if c != "ID" and FULL_ROW[c] is not None
    ]
    values = {r[3]: r[5] for r in logged}
    assert values["Full Name"] == "Ann O'Neil" and values["blob"] == "AP8="
    assert values["big"] == str(2**40) and values["code"] == "ab"

    # All its values NULL, a key-only table, a composite key with only NULL values: one
    # type 1 each, of the first non-key column (or the first key column), no value.
    assert db.change(person.insert().values(ID=2)) == [("ID=2", 1, PERSON, "Full Name", None, None)]
    assert db.change(tag.insert().values(Value="x y")) == [("Value=x y", 1, TAG, "Value", None, None)]
    assert db.change(line.insert().values(Order="A+1", user=7)) == [
        ('Order="A+1"+user=7', 1, LINE, "Qty", None, None)
    ]
    assert db.change(alias.insert().values(Person=2, Alias="Bo")) == [
        ("ID=2", 1, PERSON, "Alias.Alias", None, "Bo")
    ]

    # The update and delete triggers of the long table name are there too.
    assert db.change(person.update().where(person.c.ID == 2).values({"Full Name": "Bo", "manager": 1})) == [
        ("ID=2", 2, PERSON, "Full Name", None, "Bo"),
        ("ID=2", 2, PERSON, "manager", None, "1"),
    ]
    assert db.change(line.update().values(Qty=2)) == [('Order="A+1"+user=7', 2, LINE, "Qty", None, "2")]
    assert db.change(tag.update().values(Value="z")) == [
        ("Value=x y", 4, TAG, None, None, None), ("Value=z", 5, TAG, None, None, None)
    ]
    assert db.change(alias.delete()) == [("ID=2", 2, PERSON, "Alias.Alias", "Bo", None)]
    assert db.change(person.delete().where(person.c.ID == 2)) == [("ID=2", 4, PERSON, None, None, None)]
    assert db.change(line.delete()) == [('Order="A+1"+user=7', 4, LINE, None, None, None)]


def _add(table: str, key: str, schema: str, attributes: str = "") -> str:
    association = f"{key},table={table},schema={schema}"
    return f'<add class-name="{table}"><association>{association}</association>{attributes}</add>'


def _commands(document: etree._Element) -> list[str]:
    return [canonical(c) for c in document.find("input")]


def _expected(*commands: str) -> list[str]:
    return [canonical(etree.fromstring(c)) for c in commands]


CY = '<value type="string">Cy</value>'


def test_objects_without_values_are_published_as_adds(unusual, tmp_path):
    db = unusual
    db.install("field")
    db.change(
        db.person.insert().values(ID=5),
        db.tag.insert().values(Value="solo"),
        db.line.insert().values(Order="select", user=1),
        db.person.insert().values({"ID": 6, "Full Name": "Cy"}),
    )
    assert _commands(db.publish(tmp_path / "out.xml")) == _expected(
        _add(PERSON, "ID=5", db.schema),
        _add(TAG, "Value=solo", db.schema),
        _add(LINE, "Order=select+user=1", db.schema),
        _add(PERSON, "ID=6", db.schema, f'<add-attr attr-name="Full Name">{CY}</add-attr>'),
    )


def test_query_back_triggers_log_every_operation_and_publish(unusual, tmp_path):
    db = unusual
    db.install("query-back")
    person, line = db.person, db.line
    assert db.change(person.insert().values(ID=1), line.insert().values(Order="o", user=2, Qty=3)) == [
        ("ID=1", 5, PERSON, None, None, None), ("Order=o+user=2", 5, LINE, None, None, None)
    ]
    alias = ("ID=1", 8, PERSON, "Alias.Alias", None, None)
    assert db.change(db.alias.insert().values(Person=1, Alias="Al")) == [alias]
    assert db.change(person.update().values({"Full Name": "Di"})) == [("ID=1", 6, PERSON, None, None, None)]
    assert db.change(line.delete()) == [("Order=o+user=2", 4, LINE, None, None, None)]
    names = {
        c.findtext("association").split(",")[0]: [a.get("attr-name") for a in c if a.tag != "association"]
        for c in db.publish(tmp_path / "out.xml").find("input")
    }
    # Read back: its values first; type 6 also clears every other attribute.
    assert names["ID=1"][:2] == ["Full Name", "Alias.Alias"]
    assert set(names["ID=1"]) == {c.name for c in person.columns if c.name != "ID"} | {"Alias.Alias"}


def _index_warnings(db: UnusualDb) -> list[str]:
    """The warnings of a foreign key without an index (other warnings, such as a child table
    without a key over its columns, are tested elsewhere)."""
    args = ["triggers", "--db", db.url, "--schema", db.schema, "--log-table", LOG]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return [
        line for line in result.stderr.splitlines()
        if line.startswith("xdspub: warning:") and "CREATE INDEX" in line
    ]


def test_triggers_warns_of_a_foreign_key_without_an_index(unusual):
    warnings = _index_warnings(unusual)
    if unusual.kind == "mariadb":  # InnoDB indexes every foreign key itself
        assert warnings == []
        return
    assert len(warnings) == 2, warnings
    assert any("manager" in w and PERSON in w for w in warnings)
    assert any(ALIAS in w and "Person" in w for w in warnings)
    with unusual.engine.begin() as conn:
        sa.Index("alias_person", unusual.alias.c.Person).create(conn)
        sa.Index("person_manager_lead", unusual.person.c.manager, unusual.person.c.ID).create(conn)
    assert _index_warnings(unusual) == []
