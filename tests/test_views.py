"""Views in the driver's form (docs/classes.md, Views in the driver's form): the names that
declare attributes, and views publishing what the tables under them publish, through the
event log (in the driver and on Spark, on SQLite, PostgreSQL and MariaDB) and triggerless.

The sample's ``view_usr`` and a view of mixed-case names over the same tables are the
class ``usr`` in that form: each of their commands, its class, key and attribute names
mapped to the table form's, is the command ``usr`` publishes for the same events."""

from __future__ import annotations

import copy
from dataclasses import replace
from pathlib import Path

import pytest
from lxml import etree

from publisher.cycle import run
from publisher.delivery.sinks import open_sink
from publisher.errors import ConfigError
from publisher.model import value_text
from publisher.model.catalogue import Catalogue, Column, NotAClass, Table
from publisher.progress import row_progress_for
from publisher.publications.triggerless import TriggerlessPublication
from publisher.settings import Settings, TriggerlessOptions
from publisher.source.database import connect
from publisher.source.resync import resync
from publisher.source.schema import ViewColumn, reflect_catalogue, view_column
from tests.conftest import SampleDb, canonical, make_sample_db

MIXED = "UsrView"  # SQLite: names differing in case alone are one name
# Each view of usr: its key column, and its attributes' names in usr where they differ.
FORMS = {
    "view_usr": ("pk_empno", {"fk_manager": "manager", "fk_mbr_of": "usr_mbr_of.idg", "phoneno": "usr_phone.phoneno"}),
    MIXED: ("pk_Idu", {"FName": "fname", "fk_Boss": "manager", "fk_Groups": "usr_mbr_of.idg",
                       "Phone": "usr_phone.phoneno"}),
}
# The column_name each form's events give each usr attribute: a view's events name some
# attributes by the view column, others by the attribute.
LOGGED = {
    "usr": {"fname": "fname", "manager": "manager", "phone": "usr_phone.phoneno", "group": "usr_mbr_of.idg"},
    "view_usr": {"fname": "sv_fname", "manager": "fk_manager", "phone": "mv_phoneno", "group": "fk_mbr_of"},
    MIXED: {"fname": "FName", "manager": "fk__idu__Boss", "phone": "Phone", "group": "fk_mv__idg__Groups"},
}


def test_view_column_names_declare_attributes(tmp_path):
    assert [view_column(n) for n in (
        "sv_fname", "mv_phoneno", "fk_mv__idg__mbr_of", "fk_sv__idu__manager", "fk__idu__manager",
        "sv_FullName", "fk_mv__pk_Id__Member__Of", "pk_empno", "fname", "sv_", "SV_x", "fk_x", "fk_mv_idg",
        "fk_mv____x", "mv_sv_x",
    )] == [
        ViewColumn("fname", False), ViewColumn("phoneno", True), ViewColumn("fk_mbr_of", True, "idg"),
        ViewColumn("fk_manager", False, "idu"), ViewColumn("fk_manager", False, "idu"),
        ViewColumn("FullName", False), ViewColumn("fk_Member__Of", True, "pk_Id"),
        ViewColumn("pk_empno", False), ViewColumn("fname", False), ViewColumn("sv_", False),
        ViewColumn("SV_x", False), ViewColumn("fk_x", False), ViewColumn("fk_mv_idg", False),
        ViewColumn("fk_mv____x", False), ViewColumn("sv_x", True),
    ]
    # A reference is to the one class whose whole key is the column named; none or several: E.
    key = Column("k", 1, value_text.INT, False)
    classes = {name: Table(name, (key,), ("k",), True) for name in ("a", "b")}
    catalogue = Catalogue("S", classes)
    named = Column("fk_x", 2, value_text.DN, False, reference="k", source="fk__k__x", reference_by_key=True)
    with pytest.raises(NotAClass, match=r"column fk_x \(view column fk__k__x\) references key column k, "
                                          r"which classes a, b all have as their key \(schema S\)"):
        catalogue.referenced(named)
    with pytest.raises(NotAClass, match="which classes a, b"):  # a class left out still counts
        catalogue.selected(["a"]).referenced(named)
    assert Catalogue("S", {"a": classes["a"]}).referenced(named) is classes["a"]
    with pytest.raises(NotAClass, match="key column k, which no class of the published schema has"):
        Catalogue("S", {}).referenced(named)
    # Two columns declaring one attribute: a usage error naming both.
    engine, dialect = database = connect(f"sqlite:///{tmp_path / 'v.db'}", create=True)
    with engine.begin() as conn:
        conn.exec_driver_sql("CREATE TABLE t (id INTEGER PRIMARY KEY, x TEXT)")
        conn.exec_driver_sql("CREATE VIEW v AS SELECT id AS pk_id, x AS sv_x, x AS mv_x FROM t")
    with pytest.raises(ConfigError, match="view v: columns sv_x and mv_x both declare the attribute x"):
        reflect_catalogue(database, "indirect", "indirect_process")
    engine.dispose()


def _views_and_users(db: SampleDb) -> None:
    """The mixed-case view beside the sample's, and five users: 1 with a manager, two
    phone numbers and two groups, 2 with a photo alone, 3 and 4 with a number and a group."""
    quote = db.engine.dialect.identifier_preparer.quote
    table = (lambda name: f"{quote(db.schema)}.{quote(name)}") if db.dialect.has_schemas else quote
    db.execute(
        f"CREATE VIEW {table(MIXED)} AS SELECT u.idu AS {quote('pk_Idu')}, u.fname AS {quote('sv_FName')}, "
        f"u.lname AS sv_lname, u.photo AS sv_photo, u.manager AS {quote('fk__idu__Boss')}, "
        f"m.idg AS {quote('fk_mv__idg__Groups')}, p.phoneno AS {quote('mv_Phone')} FROM {table('usr')} u "
        f"LEFT JOIN {table('usr_mbr_of')} m ON m.idu = u.idu LEFT JOIN {table('usr_phone')} p ON p.idu = u.idu"
    )
    for idu, fname, photo in ((1, "John", None), (2, "Ann", "AAEC"), (3, "Joe", None), (4, "Bob", None), (5, "Al", None)):
        db.add_user(idu, fname, "Doe" if idu == 1 else None, photo)
    db.execute(f"UPDATE {db.table('usr')} SET manager = 2 WHERE idu = 1")
    db.execute(f"INSERT INTO {db.table('grp')} (idg, gname) VALUES (7, 'Staff'), (8, 'Ops')")
    db.execute(f"INSERT INTO {db.table('usr_phone')} (idu, phoneno) VALUES (1, '555-2'), (1, '555-1'), "
               "(3, '555-3'), (4, '555-4')")
    db.execute(f"INSERT INTO {db.table('usr_mbr_of')} (idu, idg) VALUES (1, 8), (1, 7), (3, 7), (4, 8)")


def _as_table_form(command: etree._Element) -> etree._Element:
    """A view's command with the class, key and attribute names of usr's."""
    command = copy.deepcopy(command)
    view = command.get("class-name")
    key, names = FORMS[view]
    command.set("class-name", "usr")
    association = command.find("association")
    association.text = association.text.replace(f"{key}=", "idu=", 1).replace(f"table={view},", "table=usr,")
    for attribute in command.iter("add-attr", "modify-attr"):
        attribute.set("attr-name", names.get(attribute.get("attr-name"), attribute.get("attr-name")))
    return command


def assert_views_publish_as_usr(document: etree._Element, in_order: bool = True) -> None:
    """Each view's commands, in the table form, are usr's, in the same order (``in_order``),
    or in another: resync and triggerless put a usr after the manager it names, and a
    view's objects, whose references name usr's, in key order (docs/reduction.md,
    Triggerless and resync)."""
    by_class: dict[str, list[str]] = {}
    for command in document.find("input"):
        name = command.get("class-name")
        by_class.setdefault(name, []).append(canonical(command if name == "usr" else _as_table_form(command)))
    assert by_class["usr"] and set(by_class) == {"usr", *FORMS}
    for view in FORMS:
        if in_order:
            assert by_class[view] == by_class["usr"], view
        else:
            assert sorted(by_class[view]) == sorted(by_class["usr"]), view


@pytest.mark.slow
def test_a_view_in_the_drivers_form_publishes_what_its_tables_publish(any_db, tmp_path, spark):
    _views_and_users(any_db)
    for form, key in (("usr", "idu"), ("view_usr", "pk_empno"), (MIXED, "pk_Idu")):
        named = LOGGED[form]
        any_db.log(
            (f"{key}=1", 6, form), (f"{key}=2", 5, form),
            (f"{key}=3", 2, form, named["fname"], "Joe", "Jo"), (f"{key}=3", 1, form, named["phone"], None, "555-9"),
            (f"{key}=3", 2, form, named["group"], "7", None), (f"{key}=3", 2, form, named["manager"], None, "1"),
            (f"{key}=4", 7, form, named["phone"]), (f"{key}=4", 8, form, named["group"]),
            (f"{key}=5", 4, form),
        )
    in_driver, report = any_db.publish(tmp_path / "driver.xml")
    assert not report.on_spark and set(any_db.statuses().values()) == {"S"}
    assert_views_publish_as_usr(in_driver)
    any_db.execute(f"UPDATE {any_db.table('indirect_process')} SET status = 'N'")
    on_spark, report = any_db.publish(tmp_path / "spark.xml", small_cycle_rows=0)
    assert report.on_spark and canonical(on_spark) == canonical(in_driver)
    # docs/initial-load.md: resync logs one type 5 an object, however many rows a view
    # gives its key; the views' objects load as usr's do.
    tables = replace(any_db.settings, tables=("usr", *FORMS))
    logged = resync(any_db.database, tables, 2, True, row_progress_for(True))
    # usr first: the views' references name it.
    assert [(c.name, c.logged) for c in logged.classes] == [("usr", 5), (MIXED, 5), ("view_usr", 5)]
    loaded, _ = any_db.publish(tmp_path / "resync.xml")
    assert_views_publish_as_usr(loaded, in_order=False)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_triggerless_cycles_publish_a_view_as_its_tables(kind, tmp_path, spark):
    """docs/triggerless.md: the views' objects, read whole (in the driver, and on Spark by
    COPY ranges on PostgreSQL, by JDBC on SQLite), change as usr's do."""
    db = make_sample_db(kind, tmp_path)
    try:
        _views_and_users(db)
        publishers = [
            Settings(db_url=db.settings.db_url, schema=db.schema, spark_master="local[2]",
                     tables=("usr", *FORMS), small_cycle_rows=rows)
            for rows in (10_000, 0)
        ]

        def cycle(number: int, startup: str) -> None:
            documents = []
            for settings in publishers:
                out = tmp_path / f"{number}-{settings.small_cycle_rows}.xml"
                options = TriggerlessOptions(tmp_path / f"state-{settings.small_cycle_rows}", startup)
                with TriggerlessPublication(settings, options, db.database) as publisher:
                    report = run(settings, publisher, open_sink(str(out), 128))
                assert report.on_spark == (settings.small_cycle_rows == 0) and not report.failed
                documents.append(etree.parse(str(out)).getroot())
                assert_views_publish_as_usr(documents[-1], in_order=False)
            assert canonical(documents[0]) == canonical(documents[1])

        cycle(1, "all")  # every object added
        db.execute(f"UPDATE {db.table('usr')} SET fname = 'Jo', manager = 1 WHERE idu = 3")
        db.execute(f"DELETE FROM {db.table('usr_phone')} WHERE phoneno IN ('555-2', '555-4')")
        db.execute(f"INSERT INTO {db.table('usr_mbr_of')} (idu, idg) VALUES (2, 7), (4, 7)")
        db.execute(f"DELETE FROM {db.table('usr')} WHERE idu = 5")
        cycle(2, "resync")  # a value, a reference, values removed and added, a delete
    finally:
        db.drop()
