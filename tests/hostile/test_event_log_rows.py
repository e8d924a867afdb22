"""Event-log rows crafted to attack the publisher, one cycle per database (issue 12, part 6,
items 1, 2, 4 and 9): table and column names naming another schema, a system catalog, or
holding quotes, semicolons and comment markers; table_key values with quotes, backslashes,
NUL and control characters, read back by key (fewer than 1,000 objects: the keyed read);
keys that are one object after canonicalisation.

Each row's outcome is asserted separately on the one cycle's result. On PostgreSQL and
MariaDB the publisher connects as a user with privileges on the published schema only, on
a private server that logs every statement, beside a victim schema."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from tests.hostile.conftest import (
    KINDS,
    SERVER_KINDS,
    WRITES,
    Cmd,
    HostileDb,
    Run,
    Statement,
    association,
    canonical_key,
    commands_of,
    make_hostile_db,
    parse_document,
)
from tests.hostile.payloads import ACCOUNTS, QUERIED, VANISHED

pytestmark = pytest.mark.slow

TABLE_NOT_PUBLISHED = "not in the published schema"
# A name with a dot names a child table's column (docs/classes.md, Bad input).
COLUMN_NOT_IN_TABLE = re.compile(r"not (?:in (?:the )?table|a column of|a child table of)", re.I)


def hostile_names(victim: str) -> dict[str, tuple]:
    """Rows whose table_name is not a table of the published schema: E, and never SQL."""
    return {
        "name-victim-1": ("id=1", 1, f"{victim}.secret", "data", None, "x"),
        "name-victim-4": ("id=1", 4, f"{victim}.secret"),
        "name-victim-5": ("id=1", 5, f"{victim}.secret"),
        "name-victim-6": ("id=2", 6, f"{victim}.secret"),
        "name-victim-7": ("id=1", 7, f"{victim}.secret", "data"),
        "name-victim-8": ("id=1", 8, f"{victim}.secret", "data"),
        "name-pg-authid-5": ("oid=10", 5, "pg_catalog.pg_authid"),
        "name-pg-authid-1": ("oid=10", 1, "pg_catalog.pg_authid", "rolname", None, "x"),
        "name-information-schema-6": ("table_name=usr", 6, "information_schema.tables"),
        "name-mysql-user-5": ("User=root", 5, "mysql.user"),
        "name-mysql-user-8": ("User=root", 8, "mysql.user", "authentication_string"),
        "name-sqlite-master-5": ("name=usr", 5, "sqlite_master"),
        "name-sqlite-master-2": ("name=usr", 2, "sqlite_master", "sql", "a", "b"),
        "name-semicolon-1": (
            "idu=1",
            1,
            f"usr; DROP TABLE {victim}.secret; --",
            "fname",
            None,
            "x",
        ),
        "name-semicolon-5": ("idu=1", 5, f"usr; DROP TABLE {victim}.secret; --"),
        "name-double-quote-5": ("idu=1", 5, f'usr"; DROP TABLE {victim}.secret; --'),
        "name-single-quote-7": ("idu=1", 7, "usr' OR '1'='1", "fname"),
        "name-comment-8": ("idu=1", 8, "usr/*", "fname"),
        "name-dashes-5": ("idu=1", 5, "usr--"),
        "name-quoted-5": ("idu=1", 5, '"usr"'),
        "name-backticks-6": ("idu=1", 6, "`usr`"),
        "name-subquery-5": ("idu=1", 5, f"(SELECT * FROM {victim}.secret)"),
    }


def hostile_columns(victim: str) -> dict[str, tuple]:
    """Per-field rows on usr whose column_name is not a column of usr: E, never SQL."""
    return {
        "column-drop-1": ("idu=1", 1, "usr", f"fname; DROP TABLE {victim}.secret; --", None, "x"),
        "column-dashes-2": ("idu=1", 2, "usr", "fname--", "a", "b"),
        "column-quoted-3": ("idu=1", 3, "usr", '"fname"', None, "x"),
        "column-catalog-7": ("idu=1", 7, "usr", "pg_catalog.x"),
        "column-comment-8": ("idu=1", 8, "usr", "fname/*"),
        "column-single-quote-8": ("idu=1", 8, "usr", "fname' OR '1'='1"),
        "column-subquery-7": ("idu=1", 7, "usr", f"(SELECT data FROM {victim}.secret)"),
        "column-victim-7": ("idu=1", 7, "usr", f"{victim}.secret.data"),
    }


# table_key values that name no object of usr: E, whatever the reason.
BAD_KEYS = {
    "key-other-column-5": ("fname=Jack", 5, "usr"),
    "key-semicolon-5": ("idu=1;DROP TABLE usr", 5, "usr"),
    "key-or-5": ("idu=1 OR 1=1", 5, "usr"),
    "key-escaped-quote-5": ('idu="1\\""', 5, "usr"),
}


def control_rows(kind: str) -> dict[str, tuple[tuple, str, int]]:
    """Rows with a character XML 1.0 cannot carry: (row, the field, its 1-based position).
    PostgreSQL's text cannot hold NUL at all, so NUL is tried on the other two."""
    # Each names an object no other row names, so that a row taken wrongly shows up as an
    # object of its own (test_only_the_expected_objects_are_published).
    rows = {
        "control-soh-5": (('login="a\x01b"', 5, "acct"), "table_key", 9),
        "control-esc-5": (("idu=8\x1b", 5, "usr"), "table_key", 6),
        "control-vt-5": (('login="\x0b"', 5, "acct"), "table_key", 8),
        "control-us-1": (('login="x\x1f"', 1, "acct", "fullname", None, "v"), "table_key", 9),
        "control-ff-4": (("idu=\x0c7", 4, "usr"), "table_key", 5),
        "control-value-1": (("idu=2", 1, "usr", "lname", None, "bell\x07"), "new_value", 5),
        "control-old-value-2": (("idu=2", 2, "usr", "lname", "\x02old", "new"), "old_value", 1),
    }
    if kind != "postgresql":
        rows["control-nul-5"] = (('login="a\x00b"', 5, "acct"), "table_key", 9)
        rows["control-nul-4"] = (("idu=9\x00", 4, "usr"), "table_key", 6)
        rows["control-nul-value-1"] = (
            ("idu=6", 1, "usr", "lname", None, "be\x00fore"),
            "new_value",
            3,
        )
    return rows


# Keys of one object: the canonical one S, the others W, one command.
COLLISIONS = {
    "collide-idu-canonical": (("idu=1", 5, "usr"), "S"),
    "collide-idu-padded": (("idu= 1", 5, "usr"), "W"),
    "collide-idu-trailing": (("idu=1 ", 5, "usr"), "W"),
    "collide-idu-quoted": (('idu="1"', 5, "usr"), "W"),
    "collide-idu-zero": (("idu=01", 5, "usr"), "W"),
    "collide-idu-zeros": (("idu=0000000000000000000001", 5, "usr"), "W"),
    "collide-login-canonical": (("login=bob", 5, "acct"), "S"),
    "collide-login-quoted": (('login="bob"', 5, "acct"), "W"),
    "collide-login-padded": (("login= bob", 5, "acct"), "W"),
}

GOOD = {
    "good-add": ("idu=2", 1, "usr", "fname", None, "Ann"),
    "good-delete": ("idu=3", 4, "usr"),
}


@dataclass
class Cycle:
    db: HostileDb
    run: Run
    ids: dict[str, int]  # label -> record_id
    statuses: dict[int, str]
    commands: list[Cmd]
    before: dict  # every table but the event log, before the run
    after: dict
    victim_before: list
    victim_after: list
    statements: list[Statement]
    controls: dict[str, tuple[tuple, str, int]]
    names: dict[str, tuple]
    columns: dict[str, tuple]

    def status(self, label: str) -> str:
        return self.statuses[self.ids[label]]

    def reason(self, label: str) -> str | None:
        note = self.run.notes.get(self.ids[label])
        return note[1] if note else None

    def where(self, key: str, table: str) -> str:
        return association(key, table, self.db.schema)

    def by_association(self) -> dict[str, list[Cmd]]:
        found: dict[str, list[Cmd]] = {}
        for command in self.commands:
            found.setdefault(command.association, []).append(command)
        return found


@pytest.fixture(scope="module", params=KINDS)
def cycle(request, tmp_path_factory, servers) -> Cycle:
    kind = request.param
    folder = tmp_path_factory.mktemp(f"hostile-{kind}")
    db = make_hostile_db(kind, folder / "db", servers)
    try:
        db.execute(f"INSERT INTO {db.table('usr')} (idu, fname, lname) VALUES (1, 'Jack', 'Frost')")
        db.execute(f"INSERT INTO {db.table('usr')} (idu, fname, lname) VALUES (3, 'Gone', 'Soon')")
        db.create_acct()
        db.insert("acct", [{"login": k, "fullname": v} for k, v in ACCOUNTS.items()])
        victim = db.victim if kind != "sqlite" else "victim"
        names, columns, controls = (
            hostile_names(victim),
            hostile_columns(victim),
            control_rows(kind),
        )
        rows: dict[str, tuple] = {**GOOD, **names, **columns, **BAD_KEYS}
        rows.update({label: row for label, (row, _, _) in controls.items()})
        rows.update({label: row for label, (row, _) in COLLISIONS.items()})
        rows.update(
            {f"acct-{i}": (canonical_key("login", v), 5, "acct") for i, v in enumerate(QUERIED)}
        )
        rows.update(
            {f"gone-{i}": (canonical_key("login", v), 5, "acct") for i, v in enumerate(VANISHED)}
        )
        ids = db.log(rows)
        before = db.snapshot()
        victim_before = db.victim_rows() if kind != "sqlite" else []
        mark = db.log_mark()
        out = folder / "out.xml"
        run = db.export(out)
        statements = db.statements(mark)
        commands = commands_of(parse_document(out)) if out.exists() else []
        yield Cycle(
            db,
            run,
            ids,
            db.statuses(),
            commands,
            before,
            db.snapshot(),
            victim_before,
            db.victim_rows() if kind != "sqlite" else [],
            statements,
            controls,
            names,
            columns,
        )
    finally:
        db.drop()


def test_the_cycle_ends_with_exit_1_and_a_well_formed_document(cycle: Cycle) -> None:
    run = cycle.run
    assert run.code == 1, run.describe()  # E rows, listed on standard error
    assert "Traceback" not in run.stderr, run.describe()
    assert cycle.commands, "no command was published"


@pytest.mark.parametrize("which", ["names", "columns"])
def test_hostile_names_are_errors_saying_why(cycle: Cycle, which: str) -> None:
    rows = cycle.names if which == "names" else cycle.columns
    wrong = {}
    for label in rows:
        status, reason = cycle.status(label), cycle.reason(label) or ""
        expected = (
            TABLE_NOT_PUBLISHED in reason
            if which == "names"
            else bool(COLUMN_NOT_IN_TABLE.search(reason))
        )
        if status != "E" or not expected:
            wrong[label] = (status, reason)
    assert not wrong, (
        f"{which}: rows not E with the expected reason: {wrong}\n{cycle.run.describe()}"
    )


def test_keys_naming_no_object_are_errors(cycle: Cycle) -> None:
    wrong = {label: cycle.status(label) for label in BAD_KEYS if cycle.status(label) != "E"}
    assert not wrong, wrong


def test_control_characters_are_errors_naming_their_position(cycle: Cycle) -> None:
    wrong = {}
    for label, (_row, field_name, position) in cycle.controls.items():
        status, reason = cycle.status(label), cycle.reason(label) or ""
        if status != "E" or not re.search(rf"\b{position}\b", reason):
            wrong[label] = (
                status,
                reason,
                f"expected E naming position {position} of {field_name}",
            )
    assert not wrong, wrong


def test_the_rest_of_the_cycle_is_published(cycle: Cycle) -> None:
    assert cycle.status("good-add") == "S" and cycle.status("good-delete") == "S"
    found = cycle.by_association()
    add = found.get(cycle.where("idu=2", "usr"), [])
    assert [(c.kind, c.values) for c in add] == [("add", {"fname": ["Ann"]})]
    assert [c.kind for c in found.get(cycle.where("idu=3", "usr"), [])] == ["delete"]


def test_quoted_keys_find_exactly_their_own_row(cycle: Cycle) -> None:
    """Keyed query-back of a VARCHAR key: each login's own fullname, once; no SQL error."""
    found = cycle.by_association()
    wrong = {}
    for i, login in enumerate(QUERIED):
        label = f"acct-{i}"
        published = [
            c.values.get("fullname")
            for c in found.get(cycle.where(canonical_key("login", login), "acct"), [])
        ]
        if cycle.status(label) != "S" or published != [[ACCOUNTS[login]]]:
            wrong[login] = (cycle.status(label), cycle.reason(label), published)
    assert not wrong, f"{wrong}\n{cycle.run.describe()}"


def test_keys_of_no_row_publish_nothing(cycle: Cycle) -> None:
    """A key that a careless query would widen (OR, LIKE wildcards) finds no row: S, and
    no command."""
    found = cycle.by_association()
    wrong = {}
    for i, login in enumerate(VANISHED):
        where = cycle.where(canonical_key("login", login), "acct")
        if cycle.status(f"gone-{i}") != "S" or where in found:
            wrong[login] = (cycle.status(f"gone-{i}"), found.get(where))
    assert not wrong, wrong


def test_only_the_expected_objects_are_published(cycle: Cycle) -> None:
    expected = {
        cycle.where("idu=1", "usr"),
        cycle.where("idu=2", "usr"),
        cycle.where("idu=3", "usr"),
        cycle.where("login=bob", "acct"),
        *(cycle.where(canonical_key("login", login), "acct") for login in QUERIED),
    }
    published = [c.association for c in cycle.commands]
    unexpected, missing = set(published) - expected, expected - set(published)
    assert not unexpected and not missing, (
        f"published but not expected: {sorted(unexpected)}; "
        f"expected but not published: {sorted(missing)}"
    )
    repeated = {a for a in published if published.count(a) > 1}
    assert not repeated, f"published more than once: {repeated}"


def test_keys_equal_after_canonicalisation_are_one_object(cycle: Cycle) -> None:
    wrong = {
        label: (cycle.status(label), cycle.reason(label), letter)
        for label, (_row, letter) in COLLISIONS.items()
        if cycle.status(label) != letter
    }
    assert not wrong, f"(status, reason, expected): {wrong}"
    found = cycle.by_association()
    one = found.get(cycle.where("idu=1", "usr"), [])
    assert [(c.kind, c.values.get("fname")) for c in one] == [("modify", ["Jack"])]
    bob = found.get(cycle.where("login=bob", "acct"), [])
    assert [(c.kind, c.values.get("fullname")) for c in bob] == [("modify", ["Bob"])]


def test_nothing_but_the_statuses_changed(cycle: Cycle) -> None:
    """The published schema's tables (SQLite: every table and sqlite_master) and the victim
    schema's table are as they were."""
    assert cycle.after == cycle.before
    if cycle.db.kind != "sqlite":
        assert cycle.victim_after == cycle.victim_before
        assert len(cycle.victim_after) == 2


@pytest.mark.parametrize("cycle", SERVER_KINDS, indirect=True)
def test_no_statement_reached_outside_the_published_schema(cycle: Cycle) -> None:
    """The server's log of the publisher user's statements: none names the victim schema,
    a system catalog the hostile rows named, or holds what the hostile names held; no
    write but the status UPDATE of the event log."""
    statements = cycle.statements
    assert statements, "the server logged no statement of the publisher's user"
    markers = re.compile(
        "|".join(
            [
                re.escape(cycle.db.victim),
                r"\bpg_authid\b",
                r"\bmysql\.user\b",
                r"\bsqlite_master\b",
                r"\bDROP\b",
                "fname--",
                r"fname/\*",
                r"usr/\*",
                "usr--",
            ]
        ),
        re.I,
    )
    named = [s.text[:300] for s in statements if markers.search(s.text)]
    assert not named, f"statements naming hostile names: {named}"
    status_update = re.compile(
        rf"^\W*UPDATE\s+[`\"]?{cycle.db.schema}[`\"]?\.[`\"]?indirect_process[`\"]?\s+SET\s+[`\"]?status",
        re.I,
    )
    # The publisher lock (docs/delivery.md): its own lock object beside the log, never data
    # (PostgreSQL: a LOCK of its view; MariaDB: an UPDATE of its one row that changes nothing).
    lock_table = rf"[`\"]?{cycle.db.schema}[`\"]?\.[`\"]?indirect_process_lock[`\"]?"
    publisher_lock = re.compile(
        rf"^\W*(LOCK\s+TABLE\s+{lock_table}\s+IN\s+EXCLUSIVE\s+MODE\s+NOWAIT"
        rf"|UPDATE\s+{lock_table}\s+SET\s+id\s*=\s*1\s+WHERE\s+id\s*=\s*1)\s*$",
        re.I,
    )
    writes = [
        s.sql[:300] for s in statements
        if WRITES.match(s.sql) and not status_update.match(s.sql) and not publisher_lock.match(s.sql)
    ]
    assert not writes, f"writes other than the status update: {writes}"
    assert any(status_update.match(s.sql) for s in statements), "no status update logged"


@pytest.mark.parametrize("cycle", SERVER_KINDS, indirect=True)
def test_a_publisher_privileged_on_its_schema_only_meets_no_denial(cycle: Cycle) -> None:
    assert not re.search(
        r"permission denied|access denied|command denied", cycle.run.stderr, re.I
    ), cycle.run.describe()
    errors = [s.text[:300] for s in cycle.statements if s.kind in ("ERROR", "FATAL")]
    assert not errors, f"the server refused statements of the publisher: {errors}"
