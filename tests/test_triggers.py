"""``xdspub triggers`` (docs/triggers.md): the generated triggers install on SQLite,
PostgreSQL and MariaDB and write exactly the event log rows of each change, in both
flavours; string keys are written in the table_key grammar the publisher parses; the
command prints and installs them."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from grammar import format_table_key, parse_table_key
from publisher.cli import cli
from publisher.source.database import run_scripts
from publisher.source.init_db import init_db
from publisher.source.triggers import trigger_script
from tests.conftest import LOG_COLUMNS, SampleDb, make_sample_db

DATABASES = ["sqlite", "postgresql", "mariadb"]
PHONE, MEMBER = "usr_phone.phoneno", "usr_mbr_of.idg"

# Each change to the sample schema, and the rows each flavour's triggers log for it:
# (table_key, event_type, table_name, column_name, old_value, new_value).
CHANGES = [
    (
        "a user",
        ["INSERT INTO {usr} (idu, fname) VALUES (2, 'Mary')"],
        [("idu=2", 1, "usr", "fname", None, "Mary")],
        [("idu=2", 5, "usr", None, None, None)],
    ),
    (
        "a user with a photo",
        ["INSERT INTO {usr} (idu, fname, lname, photo) VALUES (3, 'Joe', 'Bloggs', :photo)"],
        [
            ("idu=3", 1, "usr", "fname", None, "Joe"),
            ("idu=3", 1, "usr", "lname", None, "Bloggs"),
            ("idu=3", 1, "usr", "photo", None, "qqo="),
        ],
        [("idu=3", 5, "usr", None, None, None)],
    ),
    (
        "two phones",
        [
            "INSERT INTO {usr_phone} (idu, phoneno) VALUES (3, '555-0100')",
            "INSERT INTO {usr_phone} (idu, phoneno) VALUES (3, '555-0101')",
        ],
        [("idu=3", 1, "usr", PHONE, None, "555-0100"), ("idu=3", 1, "usr", PHONE, None, "555-0101")],
        [("idu=3", 8, "usr", PHONE, None, None), ("idu=3", 8, "usr", PHONE, None, None)],
    ),
    (
        "a phone changed",
        ["UPDATE {usr_phone} SET phoneno = '555-0199' WHERE phoneno = '555-0101'"],
        [("idu=3", 2, "usr", PHONE, "555-0101", "555-0199")],
        [("idu=3", 8, "usr", PHONE, None, None)],
    ),
    (
        "a phone removed",
        ["DELETE FROM {usr_phone} WHERE phoneno = '555-0100'"],
        [("idu=3", 2, "usr", PHONE, "555-0100", None)],
        [("idu=3", 8, "usr", PHONE, None, None)],
    ),
    (
        "a manager set",
        ["UPDATE {usr} SET manager = 2 WHERE idu = 3"],
        [("idu=3", 2, "usr", "manager", None, "2")],
        [("idu=3", 6, "usr", None, None, None)],
    ),
    (
        "the manager cleared",
        ["UPDATE {usr} SET manager = NULL WHERE idu = 3"],
        [("idu=3", 2, "usr", "manager", "2", None)],
        [("idu=3", 6, "usr", None, None, None)],
    ),
    (
        "an update that changes no value",
        ["UPDATE {usr} SET fname = fname WHERE idu = 3"],
        [],
        [("idu=3", 6, "usr", None, None, None)],
    ),
    (
        # Announced all the same: the first non-key column, no value (docs/triggers.md).
        "a user with no value",
        ["INSERT INTO {usr} (idu) VALUES (4)"],
        [("idu=4", 1, "usr", "fname", None, None)],
        [("idu=4", 5, "usr", None, None, None)],
    ),
    (
        "a group",
        ["INSERT INTO {grp} (idg, gname) VALUES (7, 'staff')"],
        [("idg=7", 1, "grp", "gname", None, "staff")],
        [("idg=7", 5, "grp", None, None, None)],
    ),
    (
        "a membership",
        ["INSERT INTO {usr_mbr_of} (idu, idg) VALUES (3, 7)"],
        [("idu=3", 1, "usr", MEMBER, None, "7")],
        [("idu=3", 8, "usr", MEMBER, None, None)],
    ),
    (
        "the membership removed",
        ["DELETE FROM {usr_mbr_of} WHERE idu = 3 AND idg = 7"],
        [("idu=3", 2, "usr", MEMBER, "7", None)],
        [("idu=3", 8, "usr", MEMBER, None, None)],
    ),
    (
        "a phone moved to another user",
        ["UPDATE {usr_phone} SET idu = 2 WHERE idu = 3"],
        [("idu=3", 2, "usr", PHONE, "555-0199", None), ("idu=2", 1, "usr", PHONE, None, "555-0199")],
        [("idu=3", 8, "usr", PHONE, None, None), ("idu=2", 8, "usr", PHONE, None, None)],
    ),
    (
        "a phone and a membership again",
        [
            "INSERT INTO {usr_phone} (idu, phoneno) VALUES (3, '555-0102')",
            "INSERT INTO {usr_mbr_of} (idu, idg) VALUES (3, 7)",
        ],
        [("idu=3", 1, "usr", PHONE, None, "555-0102"), ("idu=3", 1, "usr", MEMBER, None, "7")],
        [("idu=3", 8, "usr", PHONE, None, None), ("idu=3", 8, "usr", MEMBER, None, None)],
    ),
    (
        # The cascaded deletes of its phone and membership log nothing: the parent is gone
        # (PostgreSQL, SQLite), or no trigger fires for them (MariaDB).
        "the user deleted",
        ["DELETE FROM {usr} WHERE idu = 3"],
        [("idu=3", 4, "usr", None, None, None)],
        [("idu=3", 4, "usr", None, None, None)],
    ),
    (
        "a user without phones",
        ["INSERT INTO {usr} (idu, fname) VALUES (5, 'Ann')"],
        [("idu=5", 1, "usr", "fname", None, "Ann")],
        [("idu=5", 5, "usr", None, None, None)],
    ),
    (
        "its key changed",
        ["UPDATE {usr} SET idu = 6 WHERE idu = 5"],
        [("idu=5", 4, "usr", None, None, None), ("idu=6", 5, "usr", None, None, None)],
        [("idu=5", 4, "usr", None, None, None), ("idu=6", 5, "usr", None, None, None)],
    ),
]


@pytest.fixture
def sample(tmp_path: Path):
    """Makes sample databases (``kind``, with ``triggers``), dropped after the test."""
    made: list[SampleDb] = []

    def make(kind: str, triggers: str) -> SampleDb:
        made.append(make_sample_db(kind, tmp_path, triggers=triggers))
        return made[-1]

    yield make
    for db in made:
        db.drop()


def _logged(db: SampleDb, since: int = 0) -> list[tuple]:
    with db.engine.connect() as conn:
        rows = conn.execute(sa.text(
            f"SELECT {', '.join(LOG_COLUMNS)} FROM {db.table('indirect_process')} "
            "WHERE record_id > :since ORDER BY record_id"
        ), {"since": since})
        return [(r[0], int(r[1]), *r[2:]) for r in rows]


def _last_record_id(db: SampleDb) -> int:
    with db.engine.connect() as conn:
        return conn.execute(sa.text(f"SELECT MAX(record_id) FROM {db.table('indirect_process')}")).scalar() or 0


@pytest.mark.parametrize("flavour", ["field", "query-back"])
@pytest.mark.parametrize("kind", DATABASES)
def test_each_change_logs_exactly_its_rows(kind, flavour, sample):
    db = sample(kind, flavour)
    tables = {t: db.table(t) for t in ("usr", "grp", "usr_phone", "usr_mbr_of")}
    for title, statements, field_rows, query_back_rows in CHANGES:
        since = _last_record_id(db)
        for statement in statements:
            db.execute(statement.format(**tables), **({"photo": b"\xaa\xaa"} if ":photo" in statement else {}))
        expected = field_rows if flavour == "field" else query_back_rows
        assert _logged(db, since) == expected, title
    with db.engine.connect() as conn:
        users = {r[0] for r in conn.execute(sa.text(f"SELECT perpetrator FROM {db.table('indirect_process')}"))}
    assert users == ({None} if kind == "sqlite" else {db.engine.url.username})


@pytest.mark.parametrize("kind", DATABASES)
def test_a_cascaded_delete_of_another_parent_logs_the_children_where_triggers_fire(kind, sample):
    db = sample(kind, "field")
    db.execute(f"INSERT INTO {db.table('usr')} (idu) VALUES (2)")
    db.execute(f"INSERT INTO {db.table('grp')} (idg) VALUES (7)")
    db.execute(f"INSERT INTO {db.table('usr_mbr_of')} (idu, idg) VALUES (2, 7)")
    since = _last_record_id(db)
    db.execute(f"DELETE FROM {db.table('grp')} WHERE idg = 7")
    removed = ("idu=2", 2, "usr", MEMBER, "7", None)
    deleted = ("idg=7", 4, "grp", None, None, None)
    # MariaDB fires no trigger for a cascaded foreign-key action (docs/triggers.md).
    expected = [deleted] if kind == "mariadb" else [removed, deleted]
    assert sorted(_logged(db, since), key=str) == sorted(expected, key=str)


# Keys that need the grammar's quotes (docs/table-key.md): each one a table_key that
# parses back to the value and is already canonical.
TEXT_KEYS = [
    "plain",
    "John Smith",
    "a+b",
    'say "hi"',
    "back\\slash",
    ", ; ' + \" = \\ < >",
    " leading",
    "trailing ",
    "tab\tinside",
    "\tlead tab",
    "Größe 漢字",
    "",
]


@pytest.mark.parametrize("flavour", ["field", "query-back"])
@pytest.mark.parametrize("kind", DATABASES)
def test_string_keys_round_trip_through_the_grammar(kind, flavour, sample):
    db = sample(kind, "none")
    varchar = "VARCHAR(40) COLLATE utf8mb4_bin" if kind == "mariadb" else "VARCHAR(40)"
    suffix = " ENGINE = InnoDB DEFAULT CHARSET = utf8mb4" if kind == "mariadb" else ""
    acct, alias = db.table("acct"), db.table("acct_alias")
    db.execute(
        f"CREATE TABLE {acct} (code {varchar} NOT NULL, region CHAR(8) NOT NULL, n INTEGER NOT NULL, "
        f"label VARCHAR(40), PRIMARY KEY (code, region, n)){suffix}"
    )
    db.execute(
        f"CREATE TABLE {alias} (code {varchar} NOT NULL, region CHAR(8) NOT NULL, n INTEGER NOT NULL, "
        f"alias VARCHAR(40) NOT NULL, FOREIGN KEY (code, region, n) REFERENCES {acct} (code, region, n) "
        f"ON DELETE CASCADE){suffix}"
    )
    _install(db, ["acct", "acct_alias"], flavour)
    # region is a CHAR key: its pad spaces (and the trailing space given) are not its value.
    for n, code in enumerate(TEXT_KEYS):
        db.execute(f"INSERT INTO {acct} (code, region, n, label) VALUES (:c, 'a=b ', :n, 'x')", c=code, n=n)
        db.execute(f"INSERT INTO {alias} (code, region, n, alias) VALUES (:c, 'a=b ', :n, 'y')", c=code, n=n)
    logged = _logged(db)
    assert len(logged) == 2 * len(TEXT_KEYS)  # the parent row's event, the child row's
    for n, code in enumerate(TEXT_KEYS):
        for key, _type, table_name, *_ in logged[2 * n : 2 * n + 2]:
            assert table_name == "acct"
            assert parse_table_key(key) == [("code", code), ("region", "a=b"), ("n", str(n))]
            assert format_table_key(parse_table_key(key)) == key  # canonical: not W


def _install(db: SampleDb, tables: list[str], flavour: str) -> None:
    script = trigger_script(db.database, db.schema, "indirect_process", tables, flavour)
    run_scripts(db.database, [script.ddl])


# The command --------------------------------------------------------------------------


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def bare_db(tmp_path: Path) -> str:
    """The sample schema with no triggers, on SQLite."""
    url = f"sqlite:///{tmp_path / 'bare.db'}"
    assert run("init-db", "--db", url, "--sample", "--triggers", "none").exit_code == 0
    return url


def test_the_command_prints_the_ddl_of_every_table(bare_db):
    result = run("triggers", "--db", bare_db)
    assert result.exit_code == 0, result.output
    # The sample indexes every reference column; its child tables have no key, so a value
    # may be held twice (tests/test_child_duplicates.py).
    assert "reference column" not in result.stderr
    for table in ("usr", "grp", "usr_phone", "usr_mbr_of"):
        for operation in ("insert", "update", "delete"):
            assert f"CREATE TRIGGER {table}_log_{operation} AFTER {operation.upper()} ON {table}" in result.stdout
    assert "view_usr" not in result.stdout
    engine = sa.create_engine(bare_db)
    with engine.connect() as conn:
        assert conn.execute(sa.text("SELECT count(*) FROM sqlite_master WHERE type = 'trigger'")).scalar() == 0
    engine.dispose()


def test_the_command_installs_the_named_tables_triggers(bare_db):
    result = run("triggers", "--db", bare_db, "--table", "usr", "--table", "usr_phone",
                 "--flavour", "query-back", "--install")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    engine = sa.create_engine(bare_db)
    with engine.begin() as conn:
        names = {r[0] for r in conn.execute(sa.text("SELECT name FROM sqlite_master WHERE type = 'trigger'"))}
        conn.execute(sa.text("INSERT INTO usr (idu) VALUES (1)"))
        conn.execute(sa.text("INSERT INTO usr_phone (idu, phoneno) VALUES (1, '555')"))
        rows = conn.execute(sa.text("SELECT table_key, event_type, column_name FROM indirect_process")).all()
    engine.dispose()
    assert names == {f"{t}_log_{o}" for t in ("usr", "usr_phone") for o in ("insert", "update", "delete")}
    assert rows == [("idu=1", 5, None), ("idu=1", 8, PHONE)]


@pytest.mark.parametrize(
    ("table", "words"),
    [("nosuch", "--table nosuch: no class or child table"), ("view_usr", "--table view_usr: a view")],
)
def test_a_table_that_takes_no_triggers_is_a_usage_error(bare_db, table, words):
    result = run("triggers", "--db", bare_db, "--table", "usr", "--table", table)
    assert result.exit_code == 2
    assert words in result.stderr and result.stdout == ""


@pytest.mark.parametrize("kind", ["postgresql", "mariadb"])
def test_the_command_installs_on_the_servers(kind, sample):
    db = sample(kind, "none")
    url = db.engine.url.render_as_string(hide_password=False)
    result = run("triggers", "--db", url, "--schema", db.schema, "--table", "grp", "--install")
    assert result.exit_code == 0, result.output
    # The sample indexes every reference column (usr.manager too): nothing to warn of.
    assert "reference column" not in run("triggers", "--db", url, "--schema", db.schema).stderr
    db.execute(f"INSERT INTO {db.table('grp')} (idg, gname) VALUES (7, 'staff')")
    assert _logged(db) == [("idg=7", 1, "grp", "gname", None, "staff")]


def test_init_db_replaces_the_sample_triggers_of_the_other_flavour(sample):
    db = sample("sqlite", "field")
    init_db(db.database, db.schema, "indirect_process", True, "query-back")
    db.execute("INSERT INTO usr (idu, fname) VALUES (1, 'Jack')")
    assert _logged(db) == [("idu=1", 5, "usr", None, None, None)]


def test_a_log_table_with_its_own_column_names_is_written_by_position(tmp_path):
    url = f"sqlite:///{tmp_path / 'renamed.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "CREATE TABLE journal (id INTEGER PRIMARY KEY, k TEXT, s CHAR(1) DEFAULT 'N', t SMALLINT, "
            "at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, who TEXT, tab TEXT, col TEXT, was TEXT, now_is TEXT)"
        ))
        conn.execute(sa.text("CREATE TABLE item (id INTEGER PRIMARY KEY, label TEXT)"))
    engine.dispose()
    result = run("triggers", "--db", url, "--log-table", "journal", "--install")
    assert result.exit_code == 0, result.output
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO item (id, label) VALUES (1, 'x')"))
        rows = conn.execute(sa.text("SELECT k, t, tab, col, was, now_is FROM journal")).all()
    engine.dispose()
    assert rows == [("id=1", 1, "item", "label", None, "x")]
