"""The reference consumer (docs/mirror.md): ``xdspub apply`` keeps a mirror of the published
objects with XDS semantics, and ``xdspub verify`` compares it with the database through the
catalogue and value rules a cycle publishes by."""

from __future__ import annotations

import re
import sqlite3
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
from click.testing import CliRunner

from publisher.cli import cli
from publisher.cycle import export, run_cycle
from publisher.delivery.documents import document_bytes
from publisher.delivery.sinks import open_sink
from publisher.mirror import Difference, apply_documents, verify_mirror
from publisher.progress import SilentRows
from publisher.source.database import run_scripts
from publisher.source.event_log import open_event_log
from publisher.source.init_db import init_db
from publisher.source.resync import resync
from publisher.source.triggers import trigger_script
from publisher.publications import triggerless
from publisher.settings import TriggerlessOptions
from tests.conftest import SampleDb, make_sample_db
from tests.test_brokers import jetstream, rabbitmq  # noqa: F401 (fixtures)

USR = "table=usr,schema=indirect"
TABLES = ("usr", "grp", "usr_phone", "usr_mbr_of")


def document(*commands: str) -> bytes:
    """An XDS document holding ``commands`` (XML text), as xdspub envelopes them."""
    return document_bytes([f"    {command}\n".encode() for command in commands])


def add(key: str, *attrs: tuple[str, str], class_name: str = "usr", event_id: int = 1) -> str:
    pieces = "".join(f'<add-attr attr-name="{name}">{value}</add-attr>' for name, value in attrs)
    return (f'<add class-name="{class_name}" event-id="{event_id}"><association>{key},table={class_name},'
            f'schema=indirect</association>{pieces}</add>')


def modify(key: str, *attrs: tuple[str, str], class_name: str = "usr", event_id: int = 1) -> str:
    pieces = "".join(f'<modify-attr attr-name="{name}">{inner}</modify-attr>' for name, inner in attrs)
    return (f'<modify class-name="{class_name}" event-id="{event_id}"><association>{key},table={class_name},'
            f'schema=indirect</association>{pieces}</modify>')


def delete(key: str, class_name: str = "usr", event_id: int = 1) -> str:
    return (f'<delete class-name="{class_name}" event-id="{event_id}"><association>{key},table={class_name},'
            f'schema=indirect</association></delete>')


def value(text: str, kind: str = "string") -> str:
    if kind == "dn":
        return f'<value type="dn" association-ref="{text}">{text}</value>'
    return f'<value type="{kind}">{text}</value>'


def held(mirror: Path) -> dict[str, dict[str, set[tuple[str, str]]]]:
    """The mirror's objects: association -> attribute -> {(type, text)}."""
    with sqlite3.connect(mirror) as connection:
        objects = {where: {} for (where,) in connection.execute("SELECT association FROM mirror_object")}
        for where, name, kind, text in connection.execute(
            "SELECT association, attr_name, type, value FROM mirror_value"
        ):
            objects[where].setdefault(name, set()).add((kind, text))
    return objects


def write(folder: Path, name: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return folder / name


# --- apply ----------------------------------------------------------------------------------


def test_add_modify_pieces_in_order_and_delete(tmp_path):
    mirror = tmp_path / "m.db"
    folder = tmp_path / "docs"
    write(folder, "00000000000000000001.xml", document(
        add("idu=1", ("fname", value("Jack")), ("usr_phone.phoneno", value("1") + value("2") + value("3"))),
        add("idu=2", ("fname", value("Mary")), event_id=2),
    ))
    write(folder, "00000000000000000003.xml", document(modify(
        "idu=1",
        ("fname", "<remove-value>" + value("Jack") + "</remove-value><add-value>" + value("John") + "</add-value>"),
        ("usr_phone.phoneno", "<remove-value>" + value("2") + "</remove-value><add-value>" + value("4")
         + "</add-value>"),
        # remove-all-values, then add-value, in the order given: only the added value stays
        ("lname", "<add-value>" + value("Doe") + "</add-value><remove-all-values/><add-value>" + value("Roe")
         + "</add-value>"),
        event_id=3,
    )))
    write(folder, "00000000000000000004.xml", document(delete("idu=2", event_id=4)))

    report = apply_documents([str(folder)], mirror)

    assert report.failure is None
    assert (report.applied, report.commands) == (3, 4)
    assert held(mirror) == {f"idu=1,{USR}": {
        "fname": {("string", "John")},
        "lname": {("string", "Roe")},
        "usr_phone.phoneno": {("string", "1"), ("string", "3"), ("string", "4")},
    }}


def test_a_modify_of_an_object_the_mirror_lacks_is_an_add_and_an_add_replaces(tmp_path):
    mirror = tmp_path / "m.db"
    data = document(
        modify("idu=5", ("fname", "<remove-all-values/><add-value>" + value("Ann") + "</add-value>"),
               ("lname", "<remove-value>" + value("gone") + "</remove-value>")),
        add("idu=6", ("fname", value("Bob")), ("lname", value("Old")), event_id=2),
        add("idu=6", ("fname", value("Rob")), event_id=3),
        add("idu=7", event_id=4),  # an object announced without any attribute
    )

    report = apply_documents([str(write(tmp_path, "one.xml", data))], mirror)

    assert report.failure is None
    assert held(mirror) == {
        f"idu=5,{USR}": {"fname": {("string", "Ann")}},
        f"idu=6,{USR}": {"fname": {("string", "Rob")}},
        f"idu=7,{USR}": {},
    }


def test_an_unresolved_reference_fails_naming_the_document_and_command_and_applies_none_of_it(tmp_path):
    mirror = tmp_path / "m.db"
    folder = tmp_path / "docs"
    write(folder, "00000000000000000001.xml", document(add("idu=1", ("fname", value("Jo")))))
    grp = "idg=7,table=grp,schema=indirect"
    write(folder, "00000000000000000002.xml", document(
        add("idu=2", ("fname", value("Al")), event_id=2),
        # a reference to the object itself is resolved: it exists once its command applies
        modify("idu=3", ("manager", "<add-value>" + value(f"idu=3,{USR}", "dn") + "</add-value>"), event_id=3),
        modify("idu=1", ("usr_mbr_of.idg", "<add-value>" + value(grp, "dn") + "</add-value>"), event_id=5),
    ))
    write(folder, "00000000000000000009.xml", document(delete("idu=1", event_id=9)))

    run = CliRunner().invoke(cli, ["apply", str(folder), "--mirror", str(mirror)])

    assert run.exit_code == 1, run.output
    assert (f"xdspub: error: {folder}/00000000000000000002.xml: command 3 (modify event-id=5, idu=1,{USR}): "
            f"usr_mbr_of.idg references {grp}, which the mirror does not hold") in run.output
    assert "xdspub: 1 documents applied (1 commands)" in run.output
    assert held(mirror) == {f"idu=1,{USR}": {"fname": {("string", "Jo")}}}  # neither idu=2 nor the delete

    # Once the group is in the mirror, the same folder applies from the failed document on.
    write(folder, "00000000000000000000.xml", document(add("idg=7", class_name="grp", event_id=0)))
    report = apply_documents([str(folder)], mirror)
    assert report.failure is None
    assert (report.applied, len(report.skipped)) == (3, 1)
    assert set(held(mirror)) == {grp, f"idu=2,{USR}", f"idu=3,{USR}"}


def test_applying_the_same_folder_again_skips_each_document_applied(tmp_path):
    mirror = tmp_path / "m.db"
    folder = tmp_path / "docs"
    write(folder, "00000000000000000001.xml", document(add("idu=1", ("usr_phone.phoneno", value("1")))))
    write(folder, "00000000000000000002.xml", document(
        modify("idu=1", ("usr_phone.phoneno", "<remove-value>" + value("1") + "</remove-value>"), event_id=2)))
    write(folder, "heartbeat.xml", document('<status level="success" type="heartbeat"/>'))
    assert apply_documents([str(folder)], mirror).applied == 2

    # Applied again, the add would bring back the value the modify removed.
    run = CliRunner().invoke(cli, ["apply", str(folder), "--mirror", str(mirror)])

    assert run.exit_code == 0, run.output
    assert "xdspub: 0 documents applied (0 commands), 2 already applied, 1 without a command" in run.output
    assert held(mirror) == {f"idu=1,{USR}": {}}


def test_standard_input_holds_documents_one_after_another(tmp_path):
    mirror = tmp_path / "m.db"
    # As `poll --out -` or `consume --out -` write them; the demo puts comments between.
    stream = (b"<!-- a cycle -->\n" + document(add("idu=1", ("fname", value("A"))))
              + b"<!-- 1 rows -->\n" + document(modify(
                  "idu=1", ("fname", "<remove-all-values/><add-value>" + value("B") + "</add-value>"), event_id=2))
              + document(add("idu=2", event_id=3)).split(b"\n", 1)[1])  # without its declaration

    run = CliRunner().invoke(cli, ["apply", "--mirror", str(mirror)], input=stream)

    assert run.exit_code == 0, run.output
    assert "xdspub: 3 documents applied (3 commands)" in run.output
    assert held(mirror) == {f"idu=1,{USR}": {"fname": {("string", "B")}}, f"idu=2,{USR}": {}}


@pytest.mark.parametrize("body, reason", [
    (b'<?xml version="1.0"?>\n<!DOCTYPE nds [<!ENTITY e "x">]>\n<nds><input/></nds>', "DOCTYPE is not allowed"),
    (b"<nds><input><add>", "not well-formed"),
    (b'<nds dtdversion="4.0"><input><modify class-name="usr"><association>a</association></modify></input></nds>',
     "not a valid XDS document"),
])
@pytest.mark.not_xds("bad.xml")
def test_a_document_that_is_not_valid_xds_is_refused(tmp_path, body, reason):
    path = write(tmp_path, "bad.xml", body)

    run = CliRunner().invoke(cli, ["apply", str(path), "--mirror", str(tmp_path / "m.db")])

    assert run.exit_code == 1
    assert f"xdspub: error: {path}: " in run.output and reason in run.output


def test_usage_errors_exit_2(tmp_path):
    not_a_mirror = write(tmp_path, "x.db", b"")
    sqlite3.connect(not_a_mirror).execute("CREATE TABLE t (a)").connection.commit()
    runner = CliRunner()
    assert runner.invoke(cli, ["apply", str(tmp_path / "none"), "--mirror", str(tmp_path / "m.db")]).exit_code == 2
    assert not (tmp_path / "m.db").exists()
    refused = runner.invoke(cli, ["apply", str(tmp_path), "--mirror", str(not_a_mirror)])
    assert refused.exit_code == 2 and "not an xdspub mirror" in refused.output
    assert runner.invoke(cli, ["apply", "--mirror", str(tmp_path / "m.db"), "--nope"]).exit_code == 2


# --- a history published with triggers, applied, verified -------------------------------------


HISTORY: list[list[str]] = [
    [
        "INSERT INTO {grp} (idg, gname) VALUES (7, 'Staff'), (8, 'Board')",
        "INSERT INTO {usr} (idu, fname, lname, photo) VALUES (1, 'Jack', 'Frost', :aaaa)",
        "INSERT INTO {usr} (idu, fname, manager) VALUES (2, 'Mary', 1)",
        "INSERT INTO {usr_phone} (idu, phoneno) VALUES (2, '555-0100'), (2, '555-0101')",
        "INSERT INTO {usr_mbr_of} (idu, idg) VALUES (2, 7)",
    ],
    [
        "UPDATE {usr} SET fname = 'John', photo = :bbbb WHERE idu = 1",
        "UPDATE {usr_phone} SET phoneno = '555-0199' WHERE idu = 2 AND phoneno = '555-0101'",
        "INSERT INTO {usr_mbr_of} (idu, idg) VALUES (2, 8)",
        "INSERT INTO {usr} (idu) VALUES (3)",  # no value: an add alone, or nothing (query-back)
        "INSERT INTO {usr} (idu, fname) VALUES (4, 'Key')",
    ],
    [
        "UPDATE {usr} SET manager = NULL, lname = 'Major' WHERE idu = 2",
        "DELETE FROM {usr_phone} WHERE idu = 2 AND phoneno = '555-0100'",
        "DELETE FROM {usr_mbr_of} WHERE idu = 2 AND idg = 8",
        "DELETE FROM {grp} WHERE idg = 8",
        "DELETE FROM {usr} WHERE idu = 1",
        "UPDATE {usr} SET idu = 40 WHERE idu = 4",  # a key change
    ],
    [
        "INSERT INTO {usr_phone} (idu, phoneno) VALUES (40, '555-0400')",
        # usr 3 had no value: the query-back flavour announces it only now, before the
        # reference to it (docs/triggers.md)
        "UPDATE {usr} SET fname = 'Three' WHERE idu = 3",
        "UPDATE {usr} SET manager = 3 WHERE idu = 2",
        "UPDATE {grp} SET gname = 'All staff' WHERE idg = 7",
    ],
]
PHOTOS = {"aaaa": b"\xaa\xaa", "bbbb": b"\xbb\xbb"}


def changed(db: SampleDb, statements: list[str]) -> None:
    for statement in statements:
        binds = {name: photo for name, photo in PHOTOS.items() if f":{name}" in statement}
        db.execute(statement.format(**{name: db.table(name) for name in TABLES}), **binds)


def published_history(db: SampleDb, out: Path, mirror: Path, history: list[list[str]] = HISTORY,
                      **overrides: object) -> None:
    """Each change of ``history`` in a cycle of its own, to the folder ``out``, applied after
    each; ``overrides`` of the cycle's settings."""
    # The test changes the tables as the publisher's own user: its rows are not loopback here.
    settings = replace(db.settings, allow_loopback=True, **overrides)
    log = open_event_log(db.database, settings)
    for statements in history:
        changed(db, statements)
        report = run_cycle(settings, db.database, log, open_sink(str(out), 2))
        assert not report.errors
        assert report.on_spark == (settings.small_cycle_rows == 0)
        applied = apply_documents([str(out)], mirror)
        assert applied.failure is None, str(applied.failure)


@pytest.mark.parametrize("flavour", ["field", "query-back"])
@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mariadb"])
def test_a_history_published_with_triggers_reproduces_the_database(kind, flavour, tmp_path):
    db = make_sample_db(kind, tmp_path, triggers=flavour)
    try:
        mirror = tmp_path / "m.db"
        published_history(db, tmp_path / "out", mirror)
        settings = replace(db.settings, tables=("usr", "grp"))

        assert [str(d) for d in verify_mirror(settings, mirror)] == []

        objects = held(mirror)
        assert objects[f"idu=2,{USR}".replace("indirect", db.schema)] == {
            "fname": {("string", "Mary")},
            "lname": {("string", "Major")},
            "manager": {("dn", f"idu=3,table=usr,schema={db.schema}")},
            "usr_phone.phoneno": {("string", "555-0199")},
            "usr_mbr_of.idg": {("dn", f"idg=7,table=grp,schema={db.schema}")},
        }
        assert f"idu=40,table=usr,schema={db.schema}" in objects
    finally:
        db.drop()


def test_a_history_published_on_spark_reproduces_the_database(spark, tmp_path):
    db = make_sample_db("sqlite", tmp_path, triggers="field")
    try:
        mirror = tmp_path / "m.db"
        published_history(db, tmp_path / "out", mirror, small_cycle_rows=0)

        assert [str(d) for d in verify_mirror(replace(db.settings, tables=("usr", "grp")), mirror)] == []
    finally:
        db.drop()


def test_a_history_published_without_triggers_reproduces_the_database(tmp_path):
    """--mode triggerless: each cycle compares the tables with the last cycle's state."""
    db = make_sample_db("postgresql", tmp_path)
    try:
        settings = replace(db.settings, tables=("usr", "grp"))
        options = TriggerlessOptions(tmp_path / "state", "all")
        mirror, out = tmp_path / "m.db", tmp_path / "out"
        for statements in HISTORY:
            changed(db, statements)
            export(settings, str(out), opening=partial(triggerless.opened, options=options))
            assert apply_documents([str(out)], mirror).failure is None

        assert [str(d) for d in verify_mirror(settings, mirror)] == []
    finally:
        db.drop()


@pytest.mark.parametrize("kind", ["sqlite", "mariadb"])
def test_what_existed_before_the_triggers_published_by_resync_then_the_triggers(kind, tmp_path):
    db = make_sample_db(kind, tmp_path)
    try:
        changed(db, HISTORY[0] + HISTORY[1])
        init_db(db.database, db.schema, "indirect_process", True, "field")  # the triggers now
        resync(db.database, replace(db.settings, tables=("usr", "grp")), 2, False, SilentRows())
        mirror, settings = tmp_path / "m.db", replace(db.settings, tables=("usr", "grp"))
        published_history(db, tmp_path / "out", mirror, [[]])

        assert [str(d) for d in verify_mirror(settings, mirror)] == []
        # No value: its type 5 is an add alone (docs/rendering.md, Empty pieces).
        assert held(mirror)[f"idu=3,{USR}".replace("indirect", db.schema)] == {}

        published_history(db, tmp_path / "out", mirror, HISTORY[2:])

        assert [str(d) for d in verify_mirror(settings, mirror)] == []
    finally:
        db.drop()


@pytest.mark.parametrize("flavour", ["field", "query-back"])
def test_key_only_objects_are_announced_by_both_trigger_flavours_and_verify_agrees(flavour, tmp_path):
    db = make_sample_db("sqlite", tmp_path)
    try:
        db.execute("CREATE TABLE tag (code VARCHAR(10) NOT NULL PRIMARY KEY)")
        script = trigger_script(db.database, db.schema, "indirect_process", None, flavour, ("tag",))
        run_scripts(db.database, [script.ddl])
        mirror = tmp_path / "m.db"
        published_history(db, tmp_path / "out", mirror, [
            ["INSERT INTO tag (code) VALUES ('a'), ('007'), ('b c')"],
            ["DELETE FROM tag WHERE code = 'a'"],
        ])

        assert [str(d) for d in verify_mirror(replace(db.settings, tables=("tag",)), mirror)] == []
        expected = {"code=b c,table=tag,schema=indirect": {}, "code=007,table=tag,schema=indirect": {}}
        assert held(mirror) == expected
    finally:
        db.drop()


# --- verify ------------------------------------------------------------------------------------


@pytest.fixture
def verified(tmp_path) -> tuple[SampleDb, Path]:
    """The sample database on SQLite with field triggers, its history published and applied."""
    db = make_sample_db("sqlite", tmp_path, triggers="field")
    mirror = tmp_path / "m.db"
    published_history(db, tmp_path / "out", mirror)
    yield db, mirror
    db.drop()


def verify(db: SampleDb, mirror: Path, *options: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["verify", "--db", db.settings.db_url, "--mirror", str(mirror),
                                    "--tables", "usr,grp", *options], env=env)


def test_verify_finds_no_difference_after_the_history_and_says_how_many_objects(verified):
    db, mirror = verified

    run = verify(db, mirror)

    assert run.exit_code == 0, run.output
    # grp 7, usr 2, 3 and 40
    assert run.output == "xdspub: 4 objects of 2 classes compared, 0 differences\n"


def test_verify_prints_each_kind_of_difference(verified, tmp_path):
    db, mirror = verified
    grp = "idg=7,table=grp,schema=indirect"
    changes = document(
        delete("idu=3"),  # missing in the mirror
        add("idu=99", ("fname", value("Ghost"))),  # missing in the database
        modify("idu=2", ("fname", "<remove-all-values/><add-value>" + value("Maria") + "</add-value>"),
               ("usr_phone.phoneno", "<add-value>" + value("555-0000") + "</add-value>"),
               ("manager", "<remove-all-values/>"),
               ("nickname", "<add-value>" + value("M", "int") + "</add-value>")),
        modify("idg=7", ("gname", "<remove-all-values/>"), class_name="grp"),
    )
    assert apply_documents([str(write(tmp_path, "changes.xml", changes))], mirror).failure is None

    run = verify(db, mirror)

    assert run.exit_code == 1
    assert run.output.splitlines() == [
        f"{grp} gname: database [\"All staff\"] mirror []",
        f"idu=2,{USR} fname: database [\"Mary\"] mirror [\"Maria\"]",
        f"idu=2,{USR} manager: database [dn:\"idu=3,{USR}\"] mirror []",
        f"idu=2,{USR} nickname: database [] mirror [int:\"M\"]",
        f"idu=2,{USR} usr_phone.phoneno: database [\"555-0199\"] mirror [\"555-0000\", \"555-0199\"]",
        f"idu=3,{USR}: missing in the mirror",
        f"idu=99,{USR}: missing in the database",
        "xdspub: 5 objects of 2 classes compared, 7 differences",
    ]
    assert verify_mirror(replace(db.settings, tables=("usr", "grp")), mirror)[-1] == Difference(
        "usr", f"idu=99,{USR}", database=None, mirror=())


def test_verify_takes_the_value_rules_a_cycle_publishes_by(verified):
    """An object without any value is an object all the same; the Time Syntax and column
    policy options change what is compared."""
    db, mirror = verified
    db.execute("INSERT INTO usr (idu) VALUES (50)")  # logged, not yet published...
    db.execute("DELETE FROM indirect_process")
    assert f"idu=50,{USR}: missing in the mirror" in verify(db, mirror).output.splitlines()
    db.execute("DELETE FROM usr WHERE idu = 50")
    assert verify(db, mirror).exit_code == 0

    excluded = verify(db, mirror, "--exclude-columns", "usr.fname")

    # ...and a column never published is no attribute of the database's objects
    assert excluded.exit_code == 1
    assert f"idu=2,{USR} fname: database [] mirror [\"Mary\"]" in excluded.output.splitlines()
    hashed = verify(db, mirror, "--hash-columns", "usr.lname", env={"XDSPUB_HASH_KEY": "k"})
    assert hashed.exit_code == 1
    (line,) = [line for line in hashed.output.splitlines() if " lname: " in line]
    assert re.fullmatch(rf'idu=2,{USR} lname: database \["[0-9a-f]{{64}}"\] mirror \["Major"\]', line)


def test_apply_from_a_jetstream_stream_then_verify(sample_db, jetstream, tmp_path):  # noqa: F811
    stream, prefix = jetstream.stream()
    url = jetstream.url(stream, f"{prefix}.xds.{{class}}")
    sample_db.execute("INSERT INTO grp (idg, gname) VALUES (7, 'Staff')")
    sample_db.execute("INSERT INTO usr (idu, fname, manager) VALUES (1, 'Ann', NULL), (2, 'Bo', 1)")
    sample_db.execute("INSERT INTO usr_mbr_of (idu, idg) VALUES (2, 7)")
    sample_db.log(("idg=7", 5, "grp"), ("idu=1", 5, "usr"), ("idu=2", 5, "usr"))
    log = open_event_log(sample_db.database, sample_db.settings)
    run_cycle(sample_db.settings, sample_db.database, log, open_sink(url, 1))
    mirror = tmp_path / "m.db"

    first = CliRunner().invoke(cli, ["apply", url, "--mirror", str(mirror), "--wait", "1"])
    again = CliRunner().invoke(cli, ["apply", url, "--mirror", str(mirror), "--wait", "1"])

    assert first.exit_code == 0, first.output
    assert "xdspub: 3 documents applied (3 commands)" in first.output
    assert "xdspub: 0 documents applied (0 commands), 3 already applied" in again.output  # the stream keeps them
    assert verify_mirror(replace(sample_db.settings, tables=("usr", "grp")), mirror) == []


def test_the_readme_walkthrough_on_the_demo(tmp_path):
    """README.md, Apply and verify: the demo's documents reproduce its database's usr and
    grp; its view, published once by hand, is what verify shows without --tables."""
    demo = CliRunner().invoke(cli, ["demo", "--keep", str(tmp_path / "demo")])
    assert demo.exit_code == 0, demo.output
    documents = write(tmp_path, "demo.out", demo.stdout_bytes)  # not .xml: several documents
    mirror = str(tmp_path / "m.db")
    database = f"sqlite:///{tmp_path / 'demo' / 'demo.db'}"

    applied = CliRunner().invoke(cli, ["apply", str(documents), "--mirror", mirror])
    verified = CliRunner().invoke(cli, ["verify", "--db", database, "--tables", "usr,grp", "--mirror", mirror])
    every_class = CliRunner().invoke(cli, ["verify", "--db", database, "--mirror", mirror])

    assert applied.exit_code == 0, applied.output
    assert applied.output == "xdspub: 13 documents applied (14 commands)\n"
    assert (verified.exit_code, verified.output) == (0, "xdspub: 3 objects of 2 classes compared, 0 differences "
                                                     "(1 objects of other classes in the mirror not compared)\n")
    assert every_class.exit_code == 1
    assert every_class.output.splitlines() == [
        "pk_empno=1,table=view_usr,schema=indirect: missing in the mirror",
        "pk_empno=2,table=view_usr,schema=indirect: missing in the mirror",
        "pk_empno=3,table=view_usr,schema=indirect: missing in the database",
        "xdspub: 6 objects of 3 classes compared, 3 differences",
    ]


def test_apply_from_a_rabbitmq_queue(sample_db, rabbitmq, tmp_path):  # noqa: F811
    exchange = rabbitmq.exchange()
    queue = rabbitmq.queue(exchange=exchange)
    sample_db.execute("INSERT INTO usr (idu, fname) VALUES (1, 'Ann')")
    sample_db.log(("idu=1", 5, "usr"), ("idu=1", 6, "usr"), ("idu=2", 1, "usr", "fname", None, "Bo"))
    log = open_event_log(sample_db.database, sample_db.settings)
    run_cycle(sample_db.settings, sample_db.database, log,
              open_sink(rabbitmq.url(exchange=exchange, routing_key="xds.{class}"), 1))

    run = CliRunner().invoke(cli, ["apply", rabbitmq.url(queue=queue), "--mirror", str(tmp_path / "m.db"),
                                   "--wait", "1"])

    assert run.exit_code == 0, run.output
    assert "xdspub: 2 documents applied (2 commands)" in run.output
    assert held(tmp_path / "m.db") == {f"idu=1,{USR}": {"fname": {("string", "Ann")}},
                                       f"idu=2,{USR}": {"fname": {("string", "Bo")}}}
    assert rabbitmq.count(queue) == 0  # taken off the queue, as consume takes them


def test_an_object_the_database_cannot_publish_is_a_difference_with_its_reason(verified):
    db, mirror = verified
    db.execute("UPDATE usr SET fname = 'A' || char(1) WHERE idu = 3")  # as a cycle would make it E
    db.execute("DELETE FROM indirect_process")

    run = verify(db, mirror)

    assert run.exit_code == 1
    assert run.output.splitlines()[0] == (
        f"idu=3,{USR}: the database's object cannot be published: "
        "current value of fname has a character XML 1.0 cannot carry at position 2")
