"""A query-back read the database refuses for one object (docs/statuses.md, Read failures):
the batch is read again object by object, the object still refused is E, all its rows,
with the first line of the database's message, and the rest of the cycle publishes; a
whole table's read that fails makes E the objects of its class that need it."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from lxml import etree

from publisher.cycle import run
from publisher.delivery.sinks import open_sink
from publisher.explain import explain
from publisher.publications.triggerless import TriggerlessPublication
from publisher.settings import TriggerlessOptions
from tests.conftest import SampleDb, make_sample_db

# A view whose read raises for the row idu = 3 only, as each database raises.
FAILING = {
    "sqlite": ("json(CASE WHEN idu = 3 THEN '{{' ELSE idu END)", "malformed JSON"),
    "postgresql": ("100 / (idu - 3)", "division by zero"),
    "mariadb": ("{schema}.risky_value(idu)", "no value for 3"),
}
MARIADB_FUNCTION = (
    "CREATE FUNCTION {schema}.risky_value(x INTEGER) RETURNS INTEGER DETERMINISTIC "
    "BEGIN IF x = 3 THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'no value for 3'; "
    "END IF; RETURN x; END"
)


def _risky(kind: str, tmp_path: Path) -> tuple[SampleDb, str]:
    """The sample with users 1 to 4 and the view ``risky`` over them; the message the
    database gives for user 3."""
    db = make_sample_db(kind, tmp_path)
    expression, message = FAILING[kind]
    with db.engine.begin() as conn:
        if kind == "mariadb":
            conn.exec_driver_sql(MARIADB_FUNCTION.format(schema=db.schema))
        for idu in range(1, 5):
            conn.exec_driver_sql(f"INSERT INTO {db.table('usr')} (idu, fname) VALUES ({idu}, 'u{idu}')")
        conn.exec_driver_sql(
            f"CREATE VIEW {db.table('risky')} AS SELECT idu AS pk_idu, fname AS sv_fname, "
            f"{expression.format(schema=db.schema)} AS sv_ratio FROM {db.table('usr')}"
        )
    return db, message


def _associations(document: etree._Element) -> list[str]:
    return sorted(c.findtext("association").split(",table=")[0] + "@" + c.get("class-name")
                  for c in document.find("input"))


def _check_isolated(db: SampleDb, message: str, report, document: etree._Element) -> None:
    assert _associations(document) == ["idu=1@usr", "pk_idu=1@risky", "pk_idu=4@risky"]
    assert db.statuses() == {1: "S", 2: "E", 3: "E", 4: "S", 5: "S"}  # both rows of pk_idu=3 E
    failed = dict(report.errors)
    assert sorted(failed) == [2, 3]
    for reason in failed.values():
        assert reason.startswith("the current rows of risky could not be read: ")
        assert message in reason and "\n" not in reason and "\\x0a" not in reason


def _log_events(db: SampleDb) -> None:
    db.log(
        ("pk_idu=1", 5, "risky"),
        ("pk_idu=3", 6, "risky"),
        ("pk_idu=3", 2, "risky", "fname", "u3", "u3"),  # the object's other row: E too
        ("pk_idu=4", 6, "risky"),
        ("idu=1", 6, "usr"),  # another class, read whole from the same table: published
    )


@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mariadb"])
def test_a_read_refused_for_one_object_fails_that_object_alone(kind: str, tmp_path: Path) -> None:
    db, message = _risky(kind, tmp_path)
    try:
        _log_events(db)
        explained = {e.record_id: e for e in explain(db.settings, [], pending=True)}
        assert {r: e.status for r, e in explained.items()} == {1: "S", 2: "E", 3: "E", 4: "S", 5: "S"}
        assert message in explained[2].reason
        document, report = db.publish(tmp_path / "out.xml")
        _check_isolated(db, message, report, document)
    finally:
        db.drop()


def _check_whole_table(kind: str, tmp_path: Path, **overrides: object) -> None:
    db, message = _risky(kind, tmp_path)
    try:
        db.log(*((f"pk_idu={n}", 6, "risky") for n in range(1, 1102)), ("idu=1", 6, "usr"))
        document, report = db.publish(tmp_path / "out.xml", **overrides)
        assert _associations(document) == ["idu=1@usr"]
        statuses = db.statuses()
        assert [r for r, status in statuses.items() if status != "E"] == [1102]
        assert sorted(r for r, _ in report.errors) == list(range(1, 1102))
        assert all(message in reason for _, reason in report.errors)
    finally:
        db.drop()


def test_a_whole_table_read_refused_fails_its_class_alone(tmp_path: Path) -> None:
    """More objects than are read by key: the table is read whole, and its failure is
    every asked object's of the class (the objects that vanished too)."""
    _check_whole_table("sqlite", tmp_path)


@pytest.mark.slow
def test_on_spark_a_whole_table_read_refused_fails_its_class_alone(tmp_path: Path) -> None:
    """PostgreSQL reads the whole view in ranges of its integer key by COPY, in the Python
    workers."""
    _check_whole_table("postgresql", tmp_path, small_cycle_rows=0)


@pytest.mark.slow
def test_on_spark_a_read_refused_for_one_object_fails_that_object_alone(tmp_path: Path) -> None:
    db, message = _risky("postgresql", tmp_path)
    try:
        _log_events(db)
        document, report = db.publish(tmp_path / "out.xml", small_cycle_rows=0)
        assert report.on_spark
        _check_isolated(db, message, report, document)
    finally:
        db.drop()


def _published(folder: Path) -> set[str]:
    """The classes of the commands in a folder of documents."""
    return {c.get("class-name") for path in folder.glob("*.xml")
            for c in etree.parse(str(path)).getroot().find("input")}


@pytest.mark.parametrize("kind, overrides", [
    ("sqlite", {}),
    pytest.param("postgresql", {"small_cycle_rows": 0}, marks=pytest.mark.slow, id="postgresql-spark"),
])
def test_triggerless_a_class_read_refused_keeps_its_state_and_the_rest_publishes(
    kind: str, overrides: dict, tmp_path: Path
) -> None:
    db, message = _risky(kind, tmp_path)
    options = TriggerlessOptions(tmp_path / "state", "all")
    settings = replace(db.settings, **overrides)

    def cycle(name: str):
        with TriggerlessPublication(settings, options, db.database) as publisher:
            report = run(settings, publisher, open_sink(str(tmp_path / name), 3))
        assert report.on_spark == bool(overrides)
        return report

    try:
        report = cycle("first")
        assert _published(tmp_path / "first") == {"usr", "view_usr"}
        [(name, key, reason)] = report.failed
        assert (name, key) == ("risky", "(every object)") and message in reason and "\n" not in reason
        with db.engine.begin() as conn:
            conn.exec_driver_sql(f"DROP VIEW {db.table('risky')}")
            conn.exec_driver_sql(f"CREATE VIEW {db.table('risky')} AS SELECT idu AS pk_idu, "
                                 f"fname AS sv_fname FROM {db.table('usr')}")
        report = cycle("second")
        assert report.failed == [] and _published(tmp_path / "second") == {"risky"}
    finally:
        db.drop()
