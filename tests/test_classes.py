"""Logical classes read from the database's own constraints (docs/classes.md), on the three
databases: which tables are classes and which are child tables, multi-valued attributes and
references, and bad input naming them (E with a reason, the rest of the cycle published)."""

from __future__ import annotations

import pytest

from publisher.model import value_text as vt
from publisher.model.catalogue import MultiValued
from publisher.source.schema import reflect_catalogue


def test_the_sample_schema_is_two_classes_with_child_tables_and_references(any_db) -> None:
    catalogue = reflect_catalogue(any_db.database, any_db.schema, "indirect_process")

    assert catalogue.child_tables == {"usr_mbr_of": "usr", "usr_phone": "usr"}
    usr, grp = catalogue.tables["usr"], catalogue.tables["grp"]
    assert [(m.name, m.link, m.xds_type, m.column.reference) for m in usr.multi_valued] == [
        ("usr_mbr_of.idg", ("idu",), vt.DN, "grp"),
        ("usr_phone.phoneno", ("idu",), vt.STRING, None),
    ]
    assert (usr.column("manager").xds_type, usr.column("manager").reference) == (vt.DN, "usr")
    assert grp.multi_valued == () and "usr_phone" not in catalogue.tables
    assert usr.key_columns == ("idu",) and isinstance(usr.attribute("usr_phone.phoneno"), MultiValued)


def test_the_first_foreign_key_by_column_order_owns_a_two_key_child_table(any_db) -> None:
    any_db.execute(
        f"CREATE TABLE {any_db.table('grp_has')} ("
        f"idg INTEGER NOT NULL REFERENCES {any_db.table('grp')} (idg), "
        f"idu INTEGER NOT NULL REFERENCES {any_db.table('usr')} (idu))"
    )
    catalogue = reflect_catalogue(any_db.database, any_db.schema, "indirect_process")

    (member,) = catalogue.tables["grp"].multi_valued
    assert (member.name, member.link, member.column.reference) == ("grp_has.idu", ("idg",), "usr")
    assert catalogue.child_tables["grp_has"] == "grp"


def test_a_table_with_a_nullable_column_is_no_child_table(any_db) -> None:
    any_db.execute(
        f"CREATE TABLE {any_db.table('usr_note')} ("
        f"idu INTEGER NOT NULL REFERENCES {any_db.table('usr')} (idu), note VARCHAR(20))"
    )
    catalogue = reflect_catalogue(any_db.database, any_db.schema, "indirect_process")

    assert "usr_note" not in catalogue.child_tables and "usr_note" in catalogue.tables
    assert [m.child_table for m in catalogue.tables["usr"].multi_valued] == ["usr_mbr_of", "usr_phone"]


BAD = [  # (log row, reason)
    (("idu=3", 1, "usr", "grp.gname", None, "x"), "column grp.gname: table grp is not a child table of usr"),
    (("idu=3", 2, "usr", "nosuch.phoneno", "a", "b"), "column nosuch.phoneno: table nosuch is not a child table of usr"),
    (("idu=3", 1, "usr_phone", "nosuch", None, "x"), "column usr_phone.nosuch is not in table usr"),
    (("idu=3+", 1, "usr_phone", "phoneno", None, "555"), "malformed table_key"),
    (("idu=x", 2, "usr_phone", "phoneno", "1", "2"), "table_key value x of idu is not an integer"),
    (("idu=3", 1, "usr", "manager", None, "boss"), "new_value boss is not an integer"),
    (("idu=3", 1, "usr", "code", None, "A1"), "column code references codes, which is not a class"),
]


def test_bad_class_input_is_e_with_its_reason_and_the_rest_is_published(any_db, tmp_path) -> None:
    # A reference to a table that is not a class: codes has a unique key but no primary key.
    any_db.execute(f"CREATE TABLE {any_db.table('codes')} (code VARCHAR(8) NOT NULL UNIQUE)")
    any_db.execute(
        f"ALTER TABLE {any_db.table('usr')} ADD COLUMN code VARCHAR(8) "
        f"REFERENCES {any_db.table('codes')} (code)"
        if any_db.dialect.name != "mariadb" else
        f"ALTER TABLE {any_db.table('usr')} ADD COLUMN code VARCHAR(8), "
        f"ADD FOREIGN KEY (code) REFERENCES {any_db.table('codes')} (code)"
    )
    any_db.log(*(row for row, _ in BAD), ("idu=3", 1, "usr_phone", "phoneno", None, "555-0101"))

    document, report = any_db.publish(tmp_path / "out.xml")

    reasons = {record_id: reason for record_id, _, reason in report.notes}
    for record_id, (_, reason) in enumerate(BAD, 1):
        assert reason in reasons[record_id], (record_id, reasons.get(record_id))
    statuses = any_db.statuses()
    assert [statuses[i] for i in range(1, len(BAD) + 2)] == ["E"] * len(BAD) + ["S"]
    (command,) = document.find("input")
    assert command.tag == "modify" and command.find("modify-attr").get("attr-name") == "usr_phone.phoneno"


@pytest.mark.parametrize("column_form", ["usr_phone.phoneno", "phoneno"])
def test_a_query_back_of_a_child_attribute_reads_the_child_table_once(
    any_db, tmp_path, column_form
) -> None:
    any_db.execute(f"INSERT INTO {any_db.table('usr')} (idu, fname) VALUES (3, 'Ann'), (4, 'Bob')")
    any_db.execute(
        f"INSERT INTO {any_db.table('usr_phone')} (idu, phoneno) VALUES "
        "(3, 'b'), (3, 'a'), (4, 'c'), (3, 'a')"
    )
    table = "usr" if column_form.startswith("usr_") else "usr_phone"
    any_db.log(("idu=3", 8, table, column_form), ("idu=4", 7, table, column_form))

    document, report = any_db.publish(tmp_path / "out.xml")

    values = [[v.text for v in c.iter("value")] for c in document.find("input")]
    assert values == [["a", "b"], ["c"]]  # sorted, each value once (docs/classes.md)
    assert report.errors == []
