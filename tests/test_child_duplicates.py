"""A child table holding one value twice for a parent (docs/triggers.md, docs/classes.md
Child tables): the documents remove a value only when no row holds it any more, in both
trigger flavours, on the three databases; and `xdspub triggers` says which child tables
allow it."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from lxml import etree

from publisher.cli import cli
from tests.conftest import SampleDb, make_sample_db

PHONE = "usr_phone.phoneno"


def _values(element: etree._Element) -> set[str]:
    return {v.text for v in element.iter("value")}


def apply(mirror: dict[str, set[str]], document: etree._Element) -> None:
    """The documents' commands on ``mirror`` (an object's association -> its phone
    numbers), as a consumer applies them."""
    for command in document.find("input"):
        association = command.findtext("association")
        if command.tag == "delete":
            mirror.pop(association, None)
            continue
        values = mirror.setdefault(association, set())
        for attr in command:
            if attr.get("attr-name") != PHONE:
                continue
            if attr.tag == "add-attr":
                values |= _values(attr)
            for change in attr:
                if change.tag == "remove-all-values":
                    values.clear()
                elif change.tag == "remove-value":
                    values -= _values(change)
                elif change.tag == "add-value":
                    values |= _values(change)


def _one_row(kind: str, table: str, where: str) -> str:
    """A WHERE clause naming one row of ``table`` that satisfies ``where`` (the table has
    no key to name it by)."""
    row = {"sqlite": "rowid", "postgresql": "ctid"}.get(kind)
    if row is None:  # MariaDB: UPDATE and DELETE take LIMIT
        return f"{where} LIMIT 1"
    return f"{row} IN (SELECT {row} FROM {table} WHERE {where} LIMIT 1)"


def _held(db: SampleDb) -> dict[str, set[str]]:
    """The database's phone numbers by user association."""
    with db.engine.connect() as conn:
        rows = conn.exec_driver_sql(f"SELECT idu, phoneno FROM {db.table('usr_phone')}").all()
    held: dict[str, set[str]] = {}
    for idu, phone in rows:
        held.setdefault(f"idu={idu},table=usr,schema={db.schema}", set()).add(phone)
    return held


@pytest.mark.parametrize("flavour", ["field", "query-back"])
@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mariadb"])
def test_a_value_two_rows_hold_is_removed_with_the_last(kind: str, flavour: str, tmp_path: Path) -> None:
    db = make_sample_db(kind, tmp_path, triggers=flavour)
    phones = db.table("usr_phone")
    three = "idu = 3 AND phoneno = '555-0101'"
    steps = [
        ("two rows of user 3 hold 555-0101",
         [f"INSERT INTO {db.table('usr')} (idu, fname) VALUES (3, 'Ann')",
          f"INSERT INTO {db.table('usr')} (idu, fname) VALUES (4, 'Bob')",
          f"INSERT INTO {phones} (idu, phoneno) VALUES (3, '555-0101')",
          f"INSERT INTO {phones} (idu, phoneno) VALUES (3, '555-0101')",
          f"INSERT INTO {phones} (idu, phoneno) VALUES (3, '555-0102')"]),
        ("one of them deleted", [f"DELETE FROM {phones} WHERE {_one_row(kind, phones, three)}"]),
        ("one of two changed to another value",
         [f"INSERT INTO {phones} (idu, phoneno) VALUES (3, '555-0101')",
          f"UPDATE {phones} SET phoneno = '555-0199' WHERE {_one_row(kind, phones, three)}"]),
        ("one of two moved to user 4",
         [f"INSERT INTO {phones} (idu, phoneno) VALUES (3, '555-0101')",
          f"UPDATE {phones} SET idu = 4 WHERE {_one_row(kind, phones, three)}"]),
        ("the last one deleted", [f"DELETE FROM {phones} WHERE {three}"]),
        ("the last one changed", [f"UPDATE {phones} SET phoneno = '555-0100' WHERE idu = 4"]),
    ]
    mirror: dict[str, set[str]] = {}
    try:
        for step, (said, statements) in enumerate(steps):
            with db.engine.begin() as conn:
                for statement in statements:
                    conn.exec_driver_sql(statement)
            document, report = db.publish(tmp_path / f"step{step}.xml", allow_loopback=True)
            assert report.errors == [], said
            apply(mirror, document)
            assert {k: v for k, v in mirror.items() if v} == _held(db), said
        assert set(db.statuses().values()) == {"S"}
    finally:
        db.drop()


def test_triggers_say_which_child_tables_may_hold_a_value_twice(tmp_path: Path) -> None:
    db = make_sample_db("sqlite", tmp_path)
    try:
        db.execute("CREATE TABLE usr_mail (idu INTEGER NOT NULL REFERENCES usr (idu), "
                   "mail TEXT NOT NULL, PRIMARY KEY (idu, mail))")
        result = CliRunner().invoke(cli, ["triggers", "--db", str(db.engine.url)])
        assert result.exit_code == 0, result.output
        warned = [line for line in result.stderr.splitlines() if "may hold a value" in line]
        assert len(warned) == 2 and all(line.startswith("xdspub: warning: ") for line in warned)
        assert any("table usr_phone:" in line and "usr_phone.phoneno" in line for line in warned)
        assert any("table usr_mbr_of:" in line and "usr_mbr_of.idg" in line for line in warned)
        assert "usr_mail" not in result.stderr
        header = result.stdout.split("CREATE", 1)[0]
        assert sum("may hold a value" in line for line in header.splitlines()) == 2
    finally:
        db.drop()
