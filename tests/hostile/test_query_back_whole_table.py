"""Hostile VARCHAR keys read back when more than 1,000 objects of a table are queried back in
one cycle, so that the table is read whole and joined with the requests (issue 12, part 6,
item 2): each key finds exactly its own row, a key of no row finds none, no SQL error."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from tests.hostile.conftest import (
    KINDS,
    SERVER_KINDS,
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

FILLERS = 1_100  # with the hostile keys, well past the 1,000 objects of a keyed read


@dataclass
class WholeRead:
    db: HostileDb
    run: Run
    ids: dict[str, int]
    statuses: dict[int, str]
    found: dict[str, list[Cmd]]
    statements: list[Statement]

    def where(self, login: str) -> str:
        return association(canonical_key("login", login), "acct", self.db.schema)


@pytest.fixture(scope="module", params=KINDS)
def whole(request, tmp_path_factory, servers) -> WholeRead:
    kind = request.param
    folder = tmp_path_factory.mktemp(f"whole-{kind}")
    db = make_hostile_db(kind, folder / "db", servers)
    try:
        db.create_acct()
        accounts = dict(ACCOUNTS)
        accounts.update({f"user{i:05d}": f"Filler {i}" for i in range(FILLERS)})
        db.insert("acct", [{"login": k, "fullname": v} for k, v in accounts.items()])
        rows = {f"acct-{i}": (canonical_key("login", v), 5, "acct") for i, v in enumerate(QUERIED)}
        rows.update(
            {f"gone-{i}": (canonical_key("login", v), 5, "acct") for i, v in enumerate(VANISHED)}
        )
        rows.update({f"fill-{i}": (f"login=user{i:05d}", 5, "acct") for i in range(FILLERS)})
        ids = db.log(rows)
        out = folder / "out.xml"
        mark = db.log_mark()
        run = db.export(out)
        statements = db.statements(mark)
        found: dict[str, list[Cmd]] = {}
        if out.exists():
            for command in commands_of(parse_document(out)):
                found.setdefault(command.association, []).append(command)
        yield WholeRead(db, run, ids, db.statuses(), found, statements)
    finally:
        db.drop()


def test_the_cycle_publishes_every_row(whole: WholeRead) -> None:
    assert whole.run.code == 0, whole.run.describe()
    assert set(whole.statuses.values()) == {"S"}, whole.run.describe()


def test_hostile_keys_find_exactly_their_own_row(whole: WholeRead) -> None:
    wrong = {}
    for login in QUERIED:
        published = [c.values.get("fullname") for c in whole.found.get(whole.where(login), [])]
        if published != [[ACCOUNTS[login]]]:
            wrong[login] = published
    assert not wrong, f"{wrong}\n{whole.run.describe()}"


def test_fillers_find_their_own_row(whole: WholeRead) -> None:
    wrong = {
        i: whole.found.get(whole.where(f"user{i:05d}"))
        for i in range(FILLERS)
        if [c.values.get("fullname") for c in whole.found.get(whole.where(f"user{i:05d}"), [])]
        != [[f"Filler {i}"]]
    }
    assert not wrong, f"{len(wrong)} fillers wrong, e.g. {dict(list(wrong.items())[:5])}"


def test_keys_of_no_row_and_decoys_publish_nothing(whole: WholeRead) -> None:
    expected = {whole.where(login) for login in QUERIED} | {
        whole.where(f"user{i:05d}") for i in range(FILLERS)
    }
    assert set(whole.found) == expected
    assert all(len(commands) == 1 for commands in whole.found.values())


@pytest.mark.parametrize("whole", SERVER_KINDS, indirect=True)
def test_the_table_was_read_whole(whole: WholeRead) -> None:
    """What makes this the whole-table read: the server ran a read of acct, none by key."""
    reads = [s.sql for s in whole.statements if re.search(r"\bFROM\s+\S*\bacct\b", s.sql, re.I)]
    assert reads, "no read of acct was logged"
    keyed = [sql[:200] for sql in reads if re.search(r"\blogin\b\s+IN\b", sql, re.I)]
    assert not keyed, f"acct was read by key: {keyed}"
