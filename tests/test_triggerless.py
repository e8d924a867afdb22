"""Triggerless publication (docs/triggerless.md): each cycle compares the tables with the
previous cycle's state and publishes the differences.

The property: after random changes between cycles, applying every document in order to an
empty directory model gives the objects a fresh ``--startup all`` publishes of the
database as it is (and the names and aliases plain SQL reads), on SQLite, PostgreSQL and
MariaDB, with a schema of mixed-case, reserved-word and long names, a composite text key,
a key-only table, a child table and references."""

from __future__ import annotations

import datetime
import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from lxml import etree

from publisher.cli import cli
from publisher.cycle import run
from publisher.delivery.sinks import open_sink
from publisher.model import value_text
from publisher.model.catalogue import Catalogue, Column, Table
from publisher.outcome.state import CURRENT, StateError, folder_name
from publisher.publications.triggerless import TriggerlessPublication
from publisher.reduce.objects import KEY, ORDER, key_order, parent_objects
from publisher.render.xds import JDBC_NAMESPACE
from publisher.settings import Settings, TriggerlessOptions
from tests.test_unusual_schemas import LOG, PERSON, UnusualDb

Model = dict[tuple[str, str], dict[str, set[str]]]  # (class, association): attribute values


def apply(model: Model, folder: Path) -> None:
    """Every document in ``folder``, in name order, applied to ``model`` as a directory
    would apply it."""
    for path in sorted(folder.glob("*.xml")):
        for command in etree.parse(str(path)).getroot().find("input"):
            obj = (command.get("class-name"), command.findtext("association"))
            if command.tag == "add":
                assert obj not in model, f"{path.name}: add of an object that exists: {obj}"
                model[obj] = {a.get("attr-name"): {v.text for v in a} for a in command.iter("add-attr")}
            elif command.tag == "delete":
                assert model.pop(obj, None) is not None, f"{path.name}: delete of no object: {obj}"
            else:
                attributes = model.setdefault(obj, {})
                for attr in command.iter("modify-attr"):
                    values = attributes.setdefault(attr.get("attr-name"), set())
                    for piece in attr:
                        texts = {v.text for v in piece}
                        if piece.tag == "remove-all-values":
                            values.clear()
                        elif piece.tag == "remove-value":
                            assert texts <= values, f"{path.name}: {obj} removes {texts - values}"
                            values -= texts
                        else:
                            values |= texts
    for attributes in model.values():
        for name in [n for n, values in attributes.items() if not values]:
            del attributes[name]


class Publisher:
    """Triggerless cycles of one database into numbered folders."""

    def __init__(self, db: UnusualDb, tmp_path: Path, name: str = "state", **settings: object) -> None:
        self.db, self.tmp_path = db, tmp_path
        # Its histories delete whole classes on purpose: the delete guard is test_delete_guard's.
        self.settings = Settings(db_url=db.url, schema=db.schema, log_table=LOG,
                                 **{"release_deletes": True, **settings})
        self.state = tmp_path / name
        self.cycles = 0

    def cycle(self, startup: str = "resync", out: Path | None = None):
        self.cycles += 1
        out = out or self.tmp_path / f"{self.state.name}-{self.cycles}"
        options = TriggerlessOptions(self.state, startup)
        with TriggerlessPublication(self.settings, options, self.db.database) as publisher:
            report = run(self.settings, publisher, open_sink(str(out), 3))
        return out, report


def _snapshot(db: UnusualDb, tmp_path: Path, name: str) -> Model:
    """The database's objects as a fresh --startup all publishes them."""
    out, report = Publisher(db, tmp_path, name).cycle("all")
    assert report.failed == []
    model: Model = {}
    apply(model, out)
    return model


def _people(model: Model) -> dict[str, tuple]:
    """Each person of the model by key: full name and aliases, as published."""
    return {
        where.split(",", 1)[0]: (attributes.get("Full Name", set()), attributes.get("Alias.Alias", set()))
        for (name, where), attributes in model.items() if name == PERSON
    }


def _people_in(db: UnusualDb) -> dict[str, tuple]:
    """The same read from the database with plain SQL, not by the publisher."""
    with db.engine.connect() as conn:
        people = conn.execute(sa.select(db.person.c.ID, db.person.c["Full Name"])).all()
        aliases = conn.execute(sa.select(db.alias.c.Person, db.alias.c.Alias)).all()
    return {
        f"ID={pid}": ({name} if name is not None else set(), {a for p, a in aliases if p == pid})
        for pid, name in people
    }


def _random_changes(db: UnusualDb, rng: random.Random, ids: list[int]) -> None:
    person, line, tag, alias = db.person, db.line, db.tag, db.alias
    statements = []
    for _ in range(12):
        choice = rng.randrange(9)
        pid = rng.choice(ids) if ids else None
        if choice == 0 or pid is None:
            new = max(ids, default=0) + 1
            ids.append(new)
            manager = rng.choice(ids[:-1]) if len(ids) > 1 and rng.random() < 0.5 else None
            statements.append(sa.insert(person).values(
                {"ID": new, "Full Name": rng.choice(["Ann", "Bo", None, "Zoë <x>"]), "order": rng.randrange(5),
                 "code": rng.choice(["ab", None]), "blob": rng.choice([b"\x00\xff", None]), "manager": manager}))
        elif choice == 1:
            ids.remove(pid)
            statements.append(sa.update(person).where(person.c.manager == pid).values(manager=None))
            statements.append(sa.delete(person).where(person.c.ID == pid))
        elif choice == 2:
            statements.append(sa.update(person).where(person.c.ID == pid).values(
                {"Full Name": rng.choice(["Cy", None, "Dee & Co"]), "active": rng.choice([True, False, None])}))
        elif choice == 3:
            statements.append(sa.update(person).where(person.c.ID == pid).values(manager=rng.choice([*ids, None])))
        elif choice == 4:
            statements.append(sa.insert(alias).values(Person=pid, Alias=rng.choice(["a", "b", "c", "a b"])))
        elif choice == 5:
            statements.append(sa.delete(alias).where(alias.c.Person == pid))
        elif choice == 6:
            order = rng.choice(["O-1", "O 2", "Ö3"])
            statements.append(sa.delete(line).where(line.c.Order == order, line.c.user == pid))
            statements.append(sa.insert(line).values(Order=order, user=pid, Qty=rng.randrange(3)))
        elif choice == 7:
            statements.append(sa.delete(line).where(line.c.user == pid))
        else:
            value = rng.choice(["t1", "t2", "t 3"])
            statements.append(sa.delete(tag).where(tag.c.Value == value))
            if rng.random() < 0.6:
                statements.append(sa.insert(tag).values(Value=value))
    with db.engine.begin() as conn:
        for statement in statements:
            conn.execute(statement)


@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mariadb"])
def test_documents_applied_in_order_give_the_database(kind, tmp_path):
    db = UnusualDb(kind, tmp_path)
    try:
        rng = random.Random(24)
        publisher = Publisher(db, tmp_path)
        model: Model = {}
        ids: list[int] = []
        for round_ in range(5):
            _random_changes(db, rng, ids)
            out, report = publisher.cycle("all")
            assert report.failed == []
            apply(model, out)
            assert model == _snapshot(db, tmp_path, f"fresh-{round_}"), f"after cycle {round_ + 1}"
            assert _people(model) == _people_in(db), f"after cycle {round_ + 1}"
        kept = (publisher.state / folder_name(db.database.identity, db.schema) / CURRENT)
        before = kept.read_text(), kept.stat().st_mtime_ns
        out, report = publisher.cycle()
        assert (report.commands, report.state_kept) == (0, False)
        assert not out.exists() or not list(out.glob("*.xml"))
        assert (kept.read_text(), kept.stat().st_mtime_ns) == before
    finally:
        db.drop()


def _classes(folder: Path) -> list[tuple[str, str]]:
    return [(c.tag, c.findtext("association")) for p in sorted(folder.glob("*.xml"))
            for c in etree.parse(str(p)).getroot().find("input")]


def test_startup_options_and_a_modify_of_changed_values_only(tmp_path):
    db = UnusualDb("sqlite", tmp_path)
    with db.engine.begin() as conn:
        conn.execute(sa.insert(db.person), [{"ID": 2, "Full Name": "Bo"}, {"ID": 10, "Full Name": "Ann"}])
        conn.execute(sa.insert(db.alias), [{"Person": 10, "Alias": "x"}, {"Person": 10, "Alias": "y"}])
    person = f"table={PERSON},schema=Mixed"
    resync, report = Publisher(db, tmp_path, "resync").cycle("resync")
    assert "there is no state yet" in report.state_unused
    # Key order is the key's: 2 before 10.
    assert _classes(resync) == [("modify", f"ID=2,{person}"), ("modify", f"ID=10,{person}")]
    assert len(etree.parse(str(next(resync.glob("*.xml")))).findall(".//remove-all-values")) >= 12
    everything, _ = Publisher(db, tmp_path, "all").cycle("all")
    assert [kind for kind, _ in _classes(everything)] == ["add", "add"]
    future = Publisher(db, tmp_path, "future")
    quiet, report = future.cycle("future")
    assert (report.commands, report.state_kept, list(quiet.glob("*.xml"))) == (0, True, [])
    with db.engine.begin() as conn:
        conn.execute(sa.update(db.person).where(db.person.c.ID == 10).values({"Full Name": "Anna", "order": 4}))
        conn.execute(sa.delete(db.alias).where(db.alias.c.Alias == "x"))
        conn.execute(sa.insert(db.alias).values(Person=10, Alias="z"))
    changed, report = future.cycle()
    (document,) = changed.glob("*.xml")
    modify = etree.parse(str(document)).getroot().find("input/modify")
    pieces = {a.get("attr-name"): [(p.tag, [v.text for v in p]) for p in a] for a in modify.iter("modify-attr")}
    assert pieces == {
        "Full Name": [("remove-value", ["Ann"]), ("add-value", ["Anna"])],
        "order": [("add-value", ["4"])],
        "Alias.Alias": [("remove-value", ["x"]), ("add-value", ["z"])],
    }
    # The second generation's first command names the document.
    assert document.name == f"{2 * 10**12 + 1:020d}.xml"
    db.drop()


def test_a_state_for_other_settings_is_not_used_and_says_why(tmp_path):
    db = UnusualDb("sqlite", tmp_path)
    with db.engine.begin() as conn:
        conn.execute(sa.insert(db.person).values({"ID": 1, "born": datetime.date(2020, 1, 2)}))
    Publisher(db, tmp_path).cycle("future")
    _, report = Publisher(db, tmp_path, time_syntax=2).cycle("future")
    assert "time_syntax" in report.state_unused
    _, report = Publisher(db, tmp_path, time_syntax=2).cycle("future")
    assert report.state_unused is None
    db.drop()


def test_a_class_created_between_cycles_has_its_objects_added_alone(tmp_path):
    db = UnusualDb("sqlite", tmp_path)
    with db.engine.begin() as conn:
        conn.execute(sa.insert(db.tag).values(Value="t"))
    publisher = Publisher(db, tmp_path)
    publisher.cycle("future")
    with db.engine.begin() as conn:
        conn.execute(sa.text('CREATE TABLE "New Class" (id INTEGER PRIMARY KEY, label TEXT)'))
        conn.execute(sa.text("""INSERT INTO "New Class" VALUES (1, 'one')"""))
    out, report = publisher.cycle("all")
    assert report.state_unused is None
    assert _classes(out) == [("add", "id=1,table=New Class,schema=Mixed")]
    db.drop()


def test_future_events_carry_the_database_local_time(tmp_path):
    db = UnusualDb("sqlite", tmp_path)
    with db.engine.begin() as conn:
        conn.execute(sa.insert(db.tag).values(Value="t"))
    out, _ = Publisher(db, tmp_path, future_events=True).cycle("all")
    (command,) = etree.parse(str(next(out.glob("*.xml")))).getroot().find("input")
    assert len(command.get(f"{{{JDBC_NAMESPACE}}}database-local-time")) == len("2026-11-26 06:40:00.123")
    db.drop()


def test_a_foreign_or_unwritable_state_folder_is_refused_and_nothing_is_written(tmp_path):
    db = UnusualDb("sqlite", tmp_path)
    state = tmp_path / "state"
    folder = state / folder_name(db.database.identity, db.schema)
    folder.mkdir(parents=True)
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(StateError, match="holds files xdspub did not write"):
        Publisher(db, tmp_path).cycle()
    result = CliRunner().invoke(cli, ["export", "--db", db.url, "--schema", db.schema, "--log-table", LOG,
                                      "--mode", "triggerless", "--state-dir", "/proc/xdspub", "--out",
                                      str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "cannot use the state folder /proc/xdspub" in result.output
    result = CliRunner().invoke(cli, ["export", "--db", db.url, "--mode", "triggerless", "--query-limit", "5",
                                      "--delete-processed", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2 and "--query-limit, --delete-processed go with the event log" in result.output
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
    db.drop()


_KILLED_AT_THE_SWAP = """
import os, signal, sys
from publisher.outcome import state
state.NewGeneration.commit = lambda self: os.kill(os.getpid(), signal.SIGKILL)
from publisher.cli import cli
cli(sys.argv[1:])
"""


def test_a_kill_between_the_documents_and_the_state_swap_loses_nothing(tmp_path):
    db = UnusualDb("sqlite", tmp_path)
    with db.engine.begin() as conn:
        conn.execute(sa.insert(db.tag).values(Value="t"))
    args = ["export", "--db", db.url, "--schema", db.schema, "--log-table", LOG, "--mode", "triggerless",
            "--state-dir", str(tmp_path / "state"), "--startup", "all", "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    with db.engine.begin() as conn:
        conn.execute(sa.insert(db.person).values({"ID": 1, "Full Name": "Ann"}))
    killed = subprocess.run([sys.executable, "-c", _KILLED_AT_THE_SWAP, *args, "--out", str(tmp_path / "a")],
                            env=env, capture_output=True)
    assert killed.returncode == -signal.SIGKILL
    again = subprocess.run([sys.executable, "-m", "publisher", *args, "--out", str(tmp_path / "b")],
                           env=env, capture_output=True)
    assert again.returncode == 0, again.stderr
    first = {p.name: p.read_bytes() for p in (tmp_path / "a").glob("*.xml")}
    assert first and first == {p.name: p.read_bytes() for p in (tmp_path / "b").glob("*.xml")}
    done = subprocess.run([sys.executable, "-m", "publisher", *args, "--out", str(tmp_path / "c")],
                          env=env, capture_output=True)
    assert done.returncode == 0 and not list((tmp_path / "c").glob("*.xml"))
    db.drop()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mariadb"])
def test_spark_and_the_driver_publish_the_same_bytes(kind, tmp_path, spark):
    db = UnusualDb(kind, tmp_path)
    try:
        rng = random.Random(5)
        ids: list[int] = []
        driver = Publisher(db, tmp_path, "driver")
        # Every class on Spark; and bigger classes on Spark, few changes rendered in the driver.
        on_spark = [Publisher(db, tmp_path, f"spark-{rows}", small_cycle_rows=rows, spark_master="local[2]")
                    for rows in (0, 3)]
        for startup in ("resync", "all", "all"):
            _random_changes(db, rng, ids)
            one, first = driver.cycle(startup)
            documents = {p.name: p.read_bytes() for p in one.glob("*.xml")}
            assert documents and not first.on_spark
            for publisher in on_spark:
                other, second = publisher.cycle(startup)
                assert second.on_spark or publisher is not on_spark[0]
                assert first.summary() == second.summary()
                assert documents == {p.name: p.read_bytes() for p in other.glob("*.xml")}
    finally:
        db.drop()


@pytest.mark.slow
def test_a_class_read_as_its_state_was_kept_is_not_compared(tmp_path, spark):
    """docs/triggerless.md, A cycle with no change: on PostgreSQL, a class whose COPY ranges
    give the digests the state kept is not compared; a change in one range compares it all;
    rows moved by an update to the same values keep the state again with their digests."""
    db = UnusualDb("postgresql", tmp_path)
    try:
        person, alias = db.person, db.alias
        with db.engine.begin() as conn:
            conn.execute(sa.insert(person), [{"ID": i, "Full Name": f"P{i}", "blob": b"\x00" if i % 2 else None}
                                             for i in range(1, 41)])
            conn.execute(sa.insert(alias), [{"Person": i, "Alias": f"a{i}"} for i in range(1, 41, 3)])
            # The ranges read by a scan in the rows' order on disk, as big tables are.
            conn.exec_driver_sql(f"ANALYZE {db.engine.dialect.identifier_preparer.format_table(person)}")
        publisher = Publisher(db, tmp_path, small_cycle_rows=0, spark_master="local[2]")
        model: Model = {}
        out, report = publisher.cycle("all")
        apply(model, out)
        assert report.on_spark and report.unchanged_classes == []
        out, report = publisher.cycle()
        assert (report.unchanged_classes, report.commands, report.state_kept) == ([PERSON], 0, False)
        assert report.objects == 40
        with db.engine.begin() as conn:  # the first of two ranges, then the other's child rows
            conn.execute(sa.update(person).where(person.c.ID == 1).values({"Full Name": "Ann"}))
        out, report = publisher.cycle()
        apply(model, out)
        assert (report.unchanged_classes, report.commands) == ([], 1)
        assert model == _snapshot(db, tmp_path, "after-one")
        with db.engine.begin() as conn:
            conn.execute(sa.delete(alias).where(alias.c.Person == 40))
        out, report = publisher.cycle()
        apply(model, out)
        assert (report.unchanged_classes, report.commands) == ([], 1)
        assert model == _snapshot(db, tmp_path, "after-two")
        with db.engine.begin() as conn:
            conn.execute(sa.update(person).where(person.c.ID < 10).values({"Full Name": person.c["Full Name"]}))
        _out, report = publisher.cycle()
        assert (report.unchanged_classes, report.commands, report.state_kept) == ([], 0, True)
        _out, report = publisher.cycle()
        assert (report.unchanged_classes, report.commands, report.state_kept) == ([PERSON], 0, False)
    finally:
        db.drop()


@pytest.mark.slow
def test_the_service_publishes_each_interval_and_stops_on_sigterm(tmp_path):
    from tests.conftest import make_sample_db
    from tests.test_service import Poll

    import urllib.request

    from tests.conftest import free_port

    db = make_sample_db("sqlite", tmp_path)
    db.add_user(1, "Ann", None, None)
    db.execute("CREATE TABLE marker (n INTEGER)")
    out, lineage, port = tmp_path / "out", tmp_path / "lineage.jsonl", free_port()
    poll = Poll(db, out, tmp_path / "poll.log", "--mode", "triggerless", "--startup", "all", "--tables", "usr",
                "--state-dir", str(tmp_path / "state"), "--lineage", str(lineage), "--metrics-port", str(port),
                "--post-statements", "INSERT INTO marker VALUES (1)")
    try:
        poll.wait_for(lambda: len(_classes(out)) == 1, "the first object's add")
        db.execute("UPDATE usr SET fname = 'Anna' WHERE idu = 1")
        poll.wait_for(lambda: len(_classes(out)) == 2, "its modify")
        # The cycle counts its rows once its documents are renamed and its work folder gone.
        metrics = ""

        def counted() -> bool:
            nonlocal metrics
            metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
            return 'xdspub_rows_total{status="S"} 2.0' in metrics

        poll.wait_for(counted, "the cycle's metrics", timeout=30)
    finally:
        assert poll.terminate() == 0
    assert [kind for kind, _ in _classes(out)] == ["add", "modify"]
    assert "state not used" in poll.log() and "info stopped" in poll.log()
    # --lineage, the metrics and the Post Polling Statements serve triggerless too.
    assert [(json.loads(line)["object"], json.loads(line)["rule"]) for line in lineage.read_text().splitlines()] == [
        ("idu=1", "added"), ("idu=1", "changed")]
    assert 'xdspub_rows_total{status="S"} 2.0' in metrics and "xdspub_pending_rows 0.0" in metrics
    with db.engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM marker")).scalar() == 2
    db.drop()


def test_binary_keys_are_kept_in_the_order_of_their_bytes_as_text():
    """A binary key's objects (bytes that are seldom UTF-8) read as text, and come in the
    order of their bytes (docs/triggerless.md)."""
    key = Column("k", 1, value_text.OCTET, False)
    table = Table("bk", (key, Column("v", 2, value_text.STRING, False)), ("k",), key_is_primary=True)
    batch = pa.RecordBatch.from_pydict(
        {"k": pa.array([b"\xff\x80", b"\x00\x01", b"", b"\x7f"], pa.binary()), "v": ["a", "b", "c", "d"]}
    )
    objects = pa.Table.from_batches([parent_objects(Catalogue("s", {"bk": table}), table)(batch)])
    rows = objects.to_pylist()
    assert [r[ORDER + "k"] for r in rows] == ["ff80", "0001", "", "7f"]
    in_order = [rows[i][KEY] for i in key_order(table, objects).to_pylist()]
    assert in_order == ['k=""', 'k="AAE="', 'k="fw=="', 'k="/4A="']
