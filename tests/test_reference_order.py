"""One order a consumer can apply (docs/reduction.md, References and order): in a cycle's
documents, a command that names an object by a reference never comes before the command
that creates the object or gives it its key, and a delete never before the last command
that names the deleted object; runs stay whole where no reference ties two objects."""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
from lxml import etree

from publisher.explain import explain
from publisher.source.database import run_scripts
from publisher.source.triggers import trigger_script
from tests.conftest import SampleDb, canonical, make_sample_db

TABLES = ("dept", "staff", "staff_dept")
# The staff's department (a single-valued reference) and the departments it helps (a link
# table, a child table of staff: a multi-valued reference, staff_dept.dept_code).
SCHEMA = [
    "CREATE TABLE {dept} (dept_code VARCHAR(10) PRIMARY KEY, dname VARCHAR(40))",
    "CREATE TABLE {staff} (id INTEGER PRIMARY KEY, sname VARCHAR(40), "
    "dept_code VARCHAR(10) REFERENCES {dept} (dept_code))",
    "CREATE TABLE {staff_dept} (id INTEGER NOT NULL REFERENCES {staff} (id) ON DELETE CASCADE, "
    "dept_code VARCHAR(10) NOT NULL REFERENCES {dept} (dept_code))",
]
BEFORE = [  # published in a cycle of its own: what the consumer has
    "INSERT INTO {dept} (dept_code, dname) VALUES ('CH', 'Chemistry')",
    "INSERT INTO {staff} (id, sname) VALUES (1, 'Ann')",
    "INSERT INTO {staff} (id, sname) VALUES (2, 'Bob')",
]
# The reproduction: the department's key changes to CN, then a staff row changed
# earlier in the cycle is moved to it.
KEY_CHANGE = [
    "UPDATE {staff} SET sname = 'Anna' WHERE id = 1",
    "UPDATE {dept} SET dept_code = 'CN' WHERE dept_code = 'CH'",
    "UPDATE {staff} SET dept_code = 'CN' WHERE id = 1",
]
# A department made, named by a staff row changed before it, left, and deleted.
DELETED_AFTER = [
    "UPDATE {staff} SET sname = 'Robert' WHERE id = 2",
    "INSERT INTO {dept} (dept_code, dname) VALUES ('XX', 'Temporary')",
    "UPDATE {staff} SET dept_code = 'XX' WHERE id = 2",
    "UPDATE {staff} SET dept_code = NULL WHERE id = 2",
    "DELETE FROM {dept} WHERE dept_code = 'XX'",
]
# A link table row naming a department made after the staff row's first change.
LINKED = [
    "UPDATE {staff} SET sname = 'Bobby' WHERE id = 2",
    "INSERT INTO {dept} (dept_code, dname) VALUES ('HR', 'People')",
    "INSERT INTO {staff_dept} (id, dept_code) VALUES (2, 'HR')",
]


def _school(kind: str, tmp_path: Path, flavour: str = "field") -> SampleDb:
    """The sample database with the three tables above and their triggers, the
    departments and staff of BEFORE published already."""
    db = make_sample_db(kind, tmp_path)
    db.names = {t: db.table(t) for t in TABLES}
    _run(db, SCHEMA)
    script = trigger_script(db.database, db.schema, "indirect_process", TABLES, flavour)
    run_scripts(db.database, [script.ddl])
    _run(db, BEFORE)
    db.publish(tmp_path / "before.xml", allow_loopback=True)
    return db


def _run(db: SampleDb, statements: list[str]) -> None:
    for statement in statements:  # a transaction each: each change's triggers fire at once
        with db.engine.begin() as conn:
            conn.exec_driver_sql(statement.format(**db.names))


def _unresolved(document: etree._Element, existing: set[str]) -> list[str]:
    """Apply the commands as a consumer that resolves each reference when it applies the
    command does: each reference to an object it lacks then (never made, or deleted)."""
    found = []
    for number, command in enumerate(document.find("input"), 1):
        where = command.findtext("association")
        if command.tag == "delete":
            existing.discard(where)
            continue
        existing.add(where)  # an add, or a modify of an object it lacks: taken as an add
        for value in command.xpath(".//add-attr/value | .//add-value/value"):
            if value.get("type") == "dn" and value.text not in existing:
                found.append(f"command {number} ({command.tag} {where}) names {value.text}")
    return found


def _association(db: SampleDb, table: str, key: str) -> str:
    return f"{key},table={table},schema={db.schema}"


def _known(db: SampleDb) -> set[str]:
    """What the consumer has after BEFORE."""
    return {_association(db, "dept", "dept_code=CH"), *(_association(db, "staff", f"id={i}") for i in (1, 2))}


def _commands(document: etree._Element) -> list[tuple[str, str, int]]:
    return [(c.tag, c.findtext("association"), int(c.get("event-id"))) for c in document.find("input")]


def _explained(db: SampleDb) -> list[str]:
    """What `xdspub explain` says the pending rows publish: each command, in its order."""
    settings = replace(db.settings, allow_loopback=True)
    published = {row.command: row.xml for row in explain(settings, [], True) if row.command}
    return [canonical(etree.fromstring(published[number])) for number in sorted(published)]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_reference_to_a_key_changed_object_comes_after_its_new_key(kind, tmp_path):
    db = _school(kind, tmp_path)
    try:
        _run(db, KEY_CHANGE)
        explained = _explained(db)
        document, report = db.publish(tmp_path / "out.xml", allow_loopback=True)
        assert explained == [canonical(c) for c in document.find("input")]
        assert report.errors == []
        assert _unresolved(document, _known(db)) == []
        staff, cn = _association(db, "staff", "id=1"), _association(db, "dept", "dept_code=CN")
        order = [(tag, where) for tag, where, _ in _commands(document)]
        # The staff's rename keeps its place; its move to CN comes after CN is made.
        assert order == [
            ("modify", staff),
            ("delete", _association(db, "dept", "dept_code=CH")),
            ("modify", cn),
            ("modify", staff),
        ]
    finally:
        db.drop()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_query_back_read_too_early_gives_way_to_a_later_one(kind, tmp_path):
    db = _school(kind, tmp_path, "query-back")
    try:
        _run(db, KEY_CHANGE)
        document, report = db.publish(tmp_path / "out.xml", allow_loopback=True)
        assert report.errors == []
        assert _unresolved(document, _known(db)) == []
        staff, cn = _association(db, "staff", "id=1"), _association(db, "dept", "dept_code=CN")
        # Both of the staff's type 6 read dept_code=CN: the later one publishes it.
        assert [(tag, where) for tag, where, _ in _commands(document)] == [
            ("delete", _association(db, "dept", "dept_code=CH")), ("modify", cn), ("modify", staff)
        ]
        assert set(db.statuses().values()) == {"S"}
    finally:
        db.drop()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_delete_comes_after_the_last_command_naming_the_deleted_object(kind, tmp_path):
    db = _school(kind, tmp_path)
    try:
        _run(db, DELETED_AFTER)
        document, _ = db.publish(tmp_path / "out.xml", allow_loopback=True)
        assert _unresolved(document, _known(db)) == []
        xx = _association(db, "dept", "dept_code=XX")
        commands = _commands(document)
        naming = [i for i, c in enumerate(document.find("input")) if c.xpath(f'.//value[text()="{xx}"]')]
        deleted = commands.index(("delete", xx, commands[-1][2]))
        assert naming and max(naming) < deleted == len(commands) - 1
    finally:
        db.drop()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_link_table_reference_comes_after_the_object_it_names(kind, tmp_path):
    db = _school(kind, tmp_path)
    try:
        _run(db, LINKED)
        document, _ = db.publish(tmp_path / "out.xml", allow_loopback=True)
        assert _unresolved(document, _known(db)) == []
        bob, hr = _association(db, "staff", "id=2"), _association(db, "dept", "dept_code=HR")
        assert [(tag, where) for tag, where, _ in _commands(document)] == [
            ("modify", bob), ("add", hr), ("modify", bob)
        ]
    finally:
        db.drop()


def test_logged_rows_cut_an_add_and_keep_untied_runs_whole(tmp_path):
    """Rows logged by hand (the sample schema: usr.manager names a usr, usr_mbr_of.idg a
    grp): an add cut by a reference goes on as a modify, and a run no reference ties
    stays one command."""
    db = make_sample_db("sqlite", tmp_path)
    try:
        db.log(
            ("idu=3", 1, "usr", "fname", None, "Ann"),
            ("idu=5", 1, "usr", "fname", None, "Eve"),  # untied: one add with lname
            ("idg=9", 1, "grp", "gname", None, "new"),
            ("idu=3", 1, "usr", "lname", None, "Lee"),
            ("idu=3", 1, "usr", "usr_mbr_of.idg", None, "9"),
            ("idu=5", 1, "usr", "lname", None, "Ray"),
            ("idu=3", 1, "usr", "usr_phone.phoneno", None, "555"),
            ("idg=9", 4, "grp"),
        )
        document, report = db.publish(tmp_path / "out.xml")
        assert report.errors == []
        assert _unresolved(document, set()) == []
        u3, u5, g9 = (f"{k},table={t},schema=indirect" for k, t in (("idu=3", "usr"), ("idu=5", "usr"), ("idg=9", "grp")))
        assert _commands(document) == [
            ("add", u3, 1), ("add", u5, 2), ("add", g9, 3), ("modify", u3, 5), ("delete", g9, 8)
        ]
        cut = document.find("input")[3]
        # The rest of the add: the membership and the phone as values added.
        assert [a.get("attr-name") for a in cut.iter("modify-attr")] == ["usr_mbr_of.idg", "usr_phone.phoneno"]
        assert [a.get("attr-name") for a in document.find("input")[0].iter("add-attr")] == ["fname", "lname"]
        assert [a.get("attr-name") for a in document.find("input")[1].iter("add-attr")] == ["fname", "lname"]
    finally:
        db.drop()


def test_spark_orders_references_as_the_driver_does(spark, tmp_path):
    db = _school("sqlite", tmp_path)
    try:
        _run(db, KEY_CHANGE + DELETED_AFTER + LINKED)
        driver, _ = db.publish(tmp_path / "driver.xml", allow_loopback=True, dry_run=True)
        on_spark, report = db.publish(tmp_path / "spark.xml", allow_loopback=True, small_cycle_rows=0)
        assert report.on_spark
        assert canonical(on_spark) == canonical(driver)
        assert _unresolved(on_spark, _known(db)) == []
    finally:
        db.drop()


# --- triggerless and resync: classes in reference order, a self-reference's chain ----------

# A class whose name sorts before the class it references (a_person -> z_unit), naming
# objects of its own class by a single-valued reference (manager) and a multi-valued one
# (a_person_helps.helps).
CHAIN_TABLES = ("z_unit", "a_person", "a_person_helps")
CHAIN_CLASSES = CHAIN_TABLES[:2]
CHAIN_SCHEMA = [
    "CREATE TABLE {z_unit} (code VARCHAR(10) PRIMARY KEY, uname VARCHAR(40))",
    "CREATE TABLE {a_person} (id INTEGER PRIMARY KEY, pname VARCHAR(40), "
    "unit_code VARCHAR(10) REFERENCES {z_unit} (code), manager INTEGER REFERENCES {a_person} (id))",
    "CREATE TABLE {a_person_helps} (id INTEGER NOT NULL REFERENCES {a_person} (id) ON DELETE CASCADE, "
    "helps INTEGER NOT NULL REFERENCES {a_person} (id))",
]
# Each person names one with a later key: 1 -> 3 -> 2 (manager), 4 helps 5.
CHAIN = [
    "INSERT INTO {z_unit} (code, uname) VALUES ('U1', 'Unit')",
    "INSERT INTO {a_person} (id, pname) VALUES (2, 'Top')",
    "INSERT INTO {a_person} (id, pname, manager) VALUES (3, 'Middle', 2)",
    "INSERT INTO {a_person} (id, pname, manager, unit_code) VALUES (1, 'Low', 3, 'U1')",
    "INSERT INTO {a_person} (id, pname) VALUES (5, 'Helped')",
    "INSERT INTO {a_person} (id, pname) VALUES (4, 'Helper')",
    "INSERT INTO {a_person_helps} (id, helps) VALUES (4, 5)",
]
# New objects naming later new ones, an object changed to name one, and the chain deleted
# with the unit it names.
CHAIN_CHANGED = [
    "INSERT INTO {a_person} (id, pname) VALUES (7, 'New top')",
    "INSERT INTO {a_person} (id, pname, manager) VALUES (6, 'New', 7)",
    "UPDATE {a_person} SET manager = 6 WHERE id = 4",
    "DELETE FROM {a_person} WHERE id = 1",
    "DELETE FROM {a_person} WHERE id = 3",
    "DELETE FROM {a_person} WHERE id = 2",
    "DELETE FROM {z_unit} WHERE code = 'U1'",
]


def _chain_db(kind: str, tmp_path: Path) -> SampleDb:
    db = make_sample_db(kind, tmp_path)
    db.names = {t: db.table(t) for t in CHAIN_TABLES}
    _run(db, CHAIN_SCHEMA)
    return db


def _chain_settings(db: SampleDb, **overrides: object):
    return replace(db.settings, **{"tables": CHAIN_CLASSES, "allow_loopback": True, "release_deletes": True,
                                   **overrides})


def _person(db: SampleDb, key: int) -> str:
    return _association(db, "a_person", f"id={key}")


def _triggerless(db: SampleDb, tmp_path: Path, out: str, **overrides: object) -> etree._Element:
    """One triggerless cycle (startup all), its documents as one list of commands."""
    from publisher.cycle import export
    from publisher.publications import triggerless
    from publisher.settings import TriggerlessOptions

    folder = tmp_path / out
    report = export(_chain_settings(db, **overrides), str(folder),
                    opening=partial(triggerless.opened, options=TriggerlessOptions(tmp_path / "state", "all")))
    assert report.failed == []
    document = etree.Element("output")
    commands = etree.SubElement(document, "input")
    for path in sorted(folder.glob("*.xml")):
        commands.extend(etree.parse(str(path)).getroot().find("input"))
    return document


@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mariadb"])
def test_triggerless_orders_adds_by_reference_and_deletes_in_reverse(kind, tmp_path):
    db = _chain_db(kind, tmp_path)
    try:
        _run(db, CHAIN)
        first = _triggerless(db, tmp_path, "first")
        assert _unresolved(first, set()) == []
        unit = _association(db, "z_unit", "code=U1")
        assert [(tag, where) for tag, where, _ in _commands(first)] == [
            ("add", unit), *(("add", _person(db, k)) for k in (2, 5, 3, 4, 1))
        ]
        _run(db, CHAIN_CHANGED)
        second = _triggerless(db, tmp_path, "second")
        known = {unit, *(_person(db, k) for k in range(1, 6))}
        assert _unresolved(second, known) == []
        assert [(tag, where) for tag, where, _ in _commands(second)] == [
            ("add", _person(db, 7)), ("add", _person(db, 6)), ("modify", _person(db, 4)),
            *(("delete", _person(db, k)) for k in (1, 3, 2)), ("delete", unit),
        ]
        assert [event_id for *_, event_id in _commands(second)] == sorted(e for *_, e in _commands(second))
    finally:
        db.drop()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mariadb"])
def test_resync_logs_a_class_after_those_it_names_and_an_object_after_those_it_names(kind, tmp_path):
    from publisher.progress import SilentRows
    from publisher.source.resync import resync

    db = _chain_db(kind, tmp_path)
    try:
        _run(db, CHAIN)
        script = trigger_script(db.database, db.schema, "indirect_process", CHAIN_TABLES, "field")
        run_scripts(db.database, [script.ddl])
        # A chunk of 2 objects: an interrupted pass would resume in the same order.
        report = resync(db.database, _chain_settings(db), 2, False, SilentRows())
        assert [(c.name, c.logged) for c in report.classes] == [("z_unit", 1), ("a_person", 5)]
        document, cycle = db.publish(tmp_path / "out.xml", allow_loopback=True, tables=CHAIN_CLASSES)
        assert cycle.errors == []
        assert _unresolved(document, set()) == []
        assert [where for _, where, _ in _commands(document)] == [
            _association(db, "z_unit", "code=U1"), *(_person(db, k) for k in (2, 5, 3, 4, 1))
        ]
    finally:
        db.drop()


def test_triggerless_on_spark_orders_as_in_the_driver(spark, tmp_path):
    db = _chain_db("sqlite", tmp_path)
    try:
        _run(db, CHAIN)
        _triggerless(db, tmp_path, "first")
        _run(db, CHAIN_CHANGED)
        driver = _triggerless(db, tmp_path, "driver", dry_run=True)
        on_spark = _triggerless(db, tmp_path, "spark", small_cycle_rows=0)
        assert canonical(on_spark) == canonical(driver)
        assert len(_commands(on_spark)) == 7
    finally:
        db.drop()


def test_the_reference_order_of_classes():
    from publisher.model.catalogue import Catalogue, Column, Table

    def of(name: str, *named: str) -> Table:
        references = (Column(f"r{i}", i + 1, "dn", False, reference=n) for i, n in enumerate(named))
        return Table(name, (Column("id", 0, "int", False), *references), ("id",), True)

    classes = [of("a", "z", "gone"), of("b", "a"), of("z"), of("m", "n"), of("n", "m"), of("s", "s"), of("c", "m")]
    catalogue = Catalogue("s", {t.name: t for t in classes}, left_out={"gone": of("gone")})
    # Each class after those it names (a left-out one waits for nothing), by depth then
    # name; the cycle (m, n) breaks at m, not at c, which names m from outside it.
    assert [t.name for t in catalogue.reference_order()] == ["m", "s", "z", "a", "c", "n", "b"]
    assert catalogue.self_references(catalogue.tables["s"]) == ["r0"]
    assert catalogue.self_references(catalogue.tables["a"]) == []


def test_chain_depths_break_a_cycle_at_its_lowest_ranked_object():
    import numpy as np

    from publisher.model.chains import chain_depths, chain_order

    # 0 -> 2 -> 1; 3 -> 4 -> 3 (a cycle); 5 names itself.
    source, target = np.array([0, 2, 3, 4, 5]), np.array([2, 1, 4, 3, 5])
    rank = np.arange(6)
    assert chain_depths(source, target, rank).tolist() == [2, 0, 1, 0, 1, 0]
    assert chain_order(source, target, rank).tolist() == [1, 3, 5, 2, 4, 0]


def test_a_cycle_is_broken_at_its_own_object_not_at_one_waiting_for_it():
    import numpy as np

    from publisher.model.chains import chain_depths

    # 0 waits for the cycle 1 -> 2 -> 1 without being in it: the cycle breaks at 1.
    source, target = np.array([0, 1, 2]), np.array([1, 2, 1])
    assert chain_depths(source, target, np.arange(3)).tolist() == [1, 0, 1]


# New objects naming each other: 8 and 9 by manager, 10 and 11 by help.
CYCLES = [
    "INSERT INTO {a_person} (id, pname) VALUES (8, 'Eight')",
    "INSERT INTO {a_person} (id, pname, manager) VALUES (9, 'Nine', 8)",
    "UPDATE {a_person} SET manager = 9 WHERE id = 8",
    "INSERT INTO {a_person} (id, pname) VALUES (10, 'Ten')",
    "INSERT INTO {a_person} (id, pname) VALUES (11, 'Eleven')",
    "INSERT INTO {a_person_helps} (id, helps) VALUES (10, 11)",
    "INSERT INTO {a_person_helps} (id, helps) VALUES (11, 10)",
]


CYCLES_DELETED = [
    "UPDATE {a_person} SET manager = NULL WHERE id = 8",
    "DELETE FROM {a_person} WHERE id = 9",
    "DELETE FROM {a_person} WHERE id = 8",
    "DELETE FROM {a_person_helps} WHERE id IN (10, 11)",
    "DELETE FROM {a_person} WHERE id IN (10, 11)",
]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_triggerless_splits_the_add_that_breaks_a_cycle_of_new_objects(kind, tmp_path):
    db = _chain_db(kind, tmp_path)
    try:
        _run(db, CYCLES)
        document = _triggerless(db, tmp_path, "out")
        assert _unresolved(document, set()) == []
        assert [(tag, where) for tag, where, _ in _commands(document)] == [
            ("add", _person(db, 8)), ("add", _person(db, 10)), ("add", _person(db, 9)), ("add", _person(db, 11)),
            ("modify", _person(db, 8)), ("modify", _person(db, 10)),
        ]
        first = document.find("input")[0]
        assert [a.get("attr-name") for a in first.iter("add-attr")] == ["pname"]
        modify = document.find("input")[4]
        assert [(a.get("attr-name"), [v.text for v in a.iter("value")]) for a in modify.iter("modify-attr")] == [
            ("manager", [_person(db, 9)])
        ]
        # Deleted, the cycles break alike: a modify takes the reference away before the
        # object it names is deleted.
        _run(db, CYCLES_DELETED)
        deleted = _triggerless(db, tmp_path, "deleted")
        assert [(tag, where) for tag, where, _ in _commands(deleted)] == [
            ("modify", _person(db, 8)), ("modify", _person(db, 10)),
            *(("delete", _person(db, k)) for k in (9, 11, 8, 10)),
        ]
        taken = deleted.find("input")[0]
        assert [(a.get("attr-name"), [v.text for v in a.iter("value")]) for a in taken.iter("modify-attr")] == [
            ("manager", [_person(db, 9)])
        ]
        assert taken.find(".//remove-value") is not None
    finally:
        db.drop()


def test_triggerless_on_spark_splits_a_cycle_as_in_the_driver(spark, tmp_path):
    db = _chain_db("sqlite", tmp_path)
    try:
        _run(db, CYCLES)
        driver = _triggerless(db, tmp_path, "driver", dry_run=True)
        on_spark = _triggerless(db, tmp_path, "spark", small_cycle_rows=0)
        assert canonical(on_spark) == canonical(driver)
        assert len(_commands(on_spark)) == 6
        _run(db, CYCLES_DELETED)
        driver = _triggerless(db, tmp_path, "driver-deleted", dry_run=True)
        on_spark = _triggerless(db, tmp_path, "spark-deleted", small_cycle_rows=0)
        assert canonical(on_spark) == canonical(driver)
        assert len(_commands(on_spark)) == 6
    finally:
        db.drop()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_an_interrupted_resync_resumes_in_reference_order(kind, tmp_path, monkeypatch):
    import sqlalchemy as sa

    from tests.test_key_types import resync_broken_then_resumed

    db = _chain_db(kind, tmp_path)
    try:
        _run(db, CHAIN)
        resync_broken_then_resumed(monkeypatch, db.settings.db_url, db.schema, "a_person")
        with db.engine.connect() as conn:
            logged = conn.execute(sa.text(f"SELECT table_key FROM {db.table('indirect_process')} ORDER BY record_id"))
            assert [r[0] for r in logged] == [f"id={k}" for k in (2, 5, 3, 4, 1)]
    finally:
        db.drop()


# A staff row made, then a department, then a link table row naming it: with query-back
# triggers, the staff's type 5 reads the link made after the department, and the link row's
# type 8 reads it after; with field triggers, a staff row given a new key (type 4, then a
# row query-back, type 5), and the link row's logged type 1.
READ_TOO_EARLY = {
    "query-back": ([
        "INSERT INTO {staff} (id, sname) VALUES (3, 'Cid')",
        "INSERT INTO {dept} (dept_code, dname) VALUES ('HR', 'People')",
        "INSERT INTO {staff_dept} (id, dept_code) VALUES (3, 'HR')",
    ], 3, ()),
    "field": ([
        "UPDATE {staff} SET id = 5 WHERE id = 2",
        "INSERT INTO {dept} (dept_code, dname) VALUES ('HR', 'People')",
        "INSERT INTO {staff_dept} (id, dept_code) VALUES (5, 'HR')",
    ], 5, ("staff", "id=2")),
}


@pytest.mark.parametrize("flavour", sorted(READ_TOO_EARLY))
@pytest.mark.parametrize("kind", ["sqlite", "mariadb"])
def test_a_row_query_back_leaves_a_reference_read_too_early_to_a_later_event_of_it(kind, flavour, tmp_path):
    """The staff's row query-back names HR, made after it; a later event of that attribute
    after HR is made (a field query-back, or a logged change): the row publishes the rest
    where it stands, the later event the link, after HR's command."""
    statements, staff_id, deleted = READ_TOO_EARLY[flavour]
    db = _school(kind, tmp_path, flavour)
    try:
        _run(db, statements)
        document, report = db.publish(tmp_path / "out.xml", allow_loopback=True)
        assert report.errors == [] and set(db.statuses().values()) == {"S"}
        assert _unresolved(document, _known(db)) == []
        staff, hr = _association(db, "staff", f"id={staff_id}"), _association(db, "dept", "dept_code=HR")
        commands = [c for c in document.find("input") if c.tag != "delete"]
        assert [(c.tag, c.findtext("association")) for c in commands] == [
            ("modify", staff), ("add" if flavour == "field" else "modify", hr), ("modify", staff)
        ]
        assert [c.findtext("association") for c in document.find("input") if c.tag == "delete"] == (
            [_association(db, *deleted)] if deleted else []
        )
        assert [a.get("attr-name") for a in commands[0].iter("modify-attr")] == ["sname"]
        assert [a.get("attr-name") for a in commands[2].iter("modify-attr")] == ["staff_dept.dept_code"]
    finally:
        db.drop()


# Classes that name each other (dept_head: a department's head, and a person's department):
# the cycle of classes breaks at dept_head, the first by name.
CIRCLE_TABLES = ("dept_head", "person_in")
CIRCLE_SCHEMA = {
    "sqlite": [  # SQLite takes a reference to a table made later, and no ALTER TABLE of it
        "CREATE TABLE {dept_head} (code VARCHAR(10) PRIMARY KEY, dname VARCHAR(40), "
        "head INTEGER REFERENCES {person_in} (id))",
        "CREATE TABLE {person_in} (id INTEGER PRIMARY KEY, dept VARCHAR(10) REFERENCES {dept_head} (code))",
    ],
    "postgresql": [
        "CREATE TABLE {dept_head} (code VARCHAR(10) PRIMARY KEY, dname VARCHAR(40), head INTEGER)",
        "CREATE TABLE {person_in} (id INTEGER PRIMARY KEY, dept VARCHAR(10) REFERENCES {dept_head} (code))",
        "ALTER TABLE {dept_head} ADD FOREIGN KEY (head) REFERENCES {person_in} (id)",
    ],
}
CIRCLE = [
    "INSERT INTO {dept_head} (code, dname) VALUES ('HR', 'People')",
    "INSERT INTO {person_in} (id, dept) VALUES (1, 'HR')",
    "UPDATE {dept_head} SET head = 1 WHERE code = 'HR'",
]
CIRCLE_CHANGED = [
    "INSERT INTO {dept_head} (code, dname) VALUES ('IT', 'Computers')",
    "INSERT INTO {person_in} (id, dept) VALUES (2, 'IT')",
    "UPDATE {dept_head} SET head = 2 WHERE code = 'IT'",
    "UPDATE {dept_head} SET head = 2, dname = 'Staff' WHERE code = 'HR'",
]


def _circle_db(kind: str, tmp_path: Path) -> SampleDb:
    db = make_sample_db(kind, tmp_path)
    db.names = {t: db.table(t) for t in CIRCLE_TABLES}
    _run(db, CIRCLE_SCHEMA[kind])
    return db


def _circled(db: SampleDb, tmp_path: Path, out: str, **overrides: object) -> etree._Element:
    return _triggerless(db, tmp_path, out, tables=CIRCLE_TABLES, **overrides)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_triggerless_gives_the_references_that_break_a_cycle_of_classes_after_every_add(kind, tmp_path):
    """A department names its head, a person their department: the department's add goes
    without its head, and a completing modify after every add gives it; a changed
    department whose head changes is modified there whole."""
    db = _circle_db(kind, tmp_path)
    try:
        _run(db, CIRCLE)
        document = _circled(db, tmp_path, "out")
        assert _unresolved(document, set()) == []
        hr, it = _association(db, "dept_head", "code=HR"), _association(db, "dept_head", "code=IT")
        one, two = _association(db, "person_in", "id=1"), _association(db, "person_in", "id=2")
        assert [(tag, where) for tag, where, _ in _commands(document)] == [("add", hr), ("add", one), ("modify", hr)]
        assert [a.get("attr-name") for a in document.find("input")[0].iter("add-attr")] == ["dname"]
        head = document.find("input")[2]
        assert [(a.get("attr-name"), [v.text for v in a.iter("value")]) for a in head.iter("modify-attr")] == [
            ("head", [one])
        ]
        _run(db, CIRCLE_CHANGED)
        changed = _circled(db, tmp_path, "changed")
        assert _unresolved(changed, {hr, one}) == []
        assert [(tag, where) for tag, where, _ in _commands(changed)] == [
            ("add", it), ("add", two), ("modify", hr), ("modify", it)
        ]
        assert [a.get("attr-name") for a in changed.find("input")[2].iter("modify-attr")] == ["dname", "head"]
    finally:
        db.drop()


def test_triggerless_on_spark_breaks_a_cycle_of_classes_as_in_the_driver(spark, tmp_path):
    db = _circle_db("sqlite", tmp_path)
    try:
        _run(db, CIRCLE + CIRCLE_CHANGED)
        driver = _circled(db, tmp_path, "driver", dry_run=True)
        on_spark = _circled(db, tmp_path, "spark", small_cycle_rows=0)
        assert canonical(on_spark) == canonical(driver)
        assert len(_commands(on_spark)) == 6
    finally:
        db.drop()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_resync_gives_the_references_that_break_a_cycle_of_classes_after_every_class(kind, tmp_path):
    """resync logs the departments, then the people, then a type 8 of each department's
    head: the department's type 5 leaves its head, read before the person was made, to it."""
    from publisher.progress import SilentRows
    from publisher.source.resync import resync

    db = _circle_db(kind, tmp_path)
    try:
        _run(db, CIRCLE + CIRCLE_CHANGED)
        settings = replace(db.settings, tables=CIRCLE_TABLES, allow_loopback=True)
        report = resync(db.database, settings, 1, False, SilentRows())
        assert report.summary().endswith(
            "4 type 5 events logged: dept_head 2, person_in 2; then 2 type 8 events: dept_head head 2"
        ), report.summary()
        document, published = db.publish(tmp_path / "out.xml", tables=CIRCLE_TABLES, allow_loopback=True)
        assert published.errors == []
        assert _unresolved(document, set()) == []
        hr, it = _association(db, "dept_head", "code=HR"), _association(db, "dept_head", "code=IT")
        one, two = _association(db, "person_in", "id=1"), _association(db, "person_in", "id=2")
        assert [(tag, where) for tag, where, _ in _commands(document)] == [
            ("modify", hr), ("modify", it), ("modify", one), ("modify", two), ("modify", hr), ("modify", it)
        ]
        heads = [[a.get("attr-name") for a in c.iter("modify-attr")] for c in document.find("input")]
        assert heads[0] == heads[1] == ["dname"] and heads[4] == heads[5] == ["head"]
    finally:
        db.drop()


@pytest.mark.parametrize("kind", ["sqlite", "mariadb"])
def test_resync_gives_the_references_that_close_a_cycle_of_objects_after_its_class(kind, tmp_path):
    """8 and 9 name each other (manager), 10 and 11 help each other: the first of each
    cycle is logged before the other, then a type 8 of the reference that closes it."""
    from publisher.progress import SilentRows
    from publisher.source.resync import resync

    db = _chain_db(kind, tmp_path)
    try:
        _run(db, CYCLES)
        report = resync(db.database, _chain_settings(db), 3, False, SilentRows())
        assert [(c.name, c.logged) for c in report.classes] == [("z_unit", 0), ("a_person", 4)]
        document, cycle = db.publish(tmp_path / "out.xml", allow_loopback=True, tables=CHAIN_CLASSES)
        assert cycle.errors == []
        assert _unresolved(document, set()) == []
        assert [where for _, where, _ in _commands(document)] == [
            *(_person(db, k) for k in (8, 10, 9, 11, 10, 8))  # the type 8s in the order of their texts
        ]
        closing = [[a.get("attr-name") for a in c.iter("modify-attr")] for c in document.find("input")][4:]
        assert closing == [["a_person_helps.helps"], ["manager"]]
    finally:
        db.drop()
