"""The rules in plain Python, without Spark or a database (the quick loop): classification
(docs/table-key.md, docs/statuses.md), precedence and runs (docs/reduction.md), and the
documented examples rendered from the rules alone."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from lxml import etree

from publisher.model import value_text as vt
from publisher.model.catalogue import Catalogue, Column, MultiValued, Table
from publisher.model.commands import Attr, AttrOp, Command, CommandKind
from publisher.reduce.query_back_state import child_cells, current_cells, read_back
from publisher.reduce.rules import (
    Classifier,
    Event,
    Rejected,
    Statuses,
    object_commands,
)
from publisher.render.xds import command_xml
from tests.conftest import LOG_COLUMNS, canonical

USR = Table(
    "usr",
    (
        Column("idu", 1, vt.INT, False),
        Column("fname", 2, vt.STRING, False),
        Column("lname", 3, vt.STRING, True),
        Column("photo", 4, vt.OCTET, False),
    ),
    ("idu",),
    key_is_primary=True,
)
ACCT = Table("acct", (Column("login", 1, vt.STRING, False), Column("name", 2, vt.STRING, False)), ("login",))
PAIR = Table(
    "pair",
    (Column("a", 1, vt.INT, False), Column("b", 2, vt.STRING, False), Column("v", 3, vt.STRING, False)),
    ("a", "b"),
)
NOKEY = Table("nokey", (Column("x", 1, vt.STRING, False),), ())
CATALOGUE = Catalogue("indirect", {t.name: t for t in (USR, ACCT, PAIR, NOKEY)})
ASSOC = "idu=1,table=usr,schema=indirect"


def publish(
    *rows: tuple,
    current: dict[tuple[str, str], dict] | None = None,
    limit: int | None = None,
    catalogue: Catalogue = CATALOGUE,
    children: dict[tuple[str, str], list] | None = None,
) -> tuple[list[Command], Statuses]:
    """The commands and statuses of event-log rows (table_key, event_type, table_name,
    column_name, old_value, new_value), record_ids from 1; ``current`` holds query-back's
    current rows by (table, canonical key), values as the database's text, and
    ``children`` their child tables' cells."""
    classify = Classifier(catalogue, limit)
    statuses: Statuses = {}
    objects: dict[tuple[str, str], list[Event]] = {}
    for record_id, row in enumerate(rows, 1):
        values = dict(zip(LOG_COLUMNS, row + (None,) * (len(LOG_COLUMNS) - len(row))))
        try:
            event, _pairs = classify({"record_id": record_id, **values})
        except Rejected as exc:
            statuses[record_id] = ("E", str(exc))
            continue
        objects.setdefault((event.class_name, event.canonical_key), []).append(event)
    commands = []
    for (table_name, key), events in objects.items():
        table = catalogue.tables[table_name]
        found = (current or {}).get((table_name, key))
        cells = None
        if found is not None:
            cells = current_cells(catalogue, table, table.key_columns, found)
            cells += (children or {}).get((table_name, key), [])
        state = read_back(cells)
        commands += object_commands(table, "indirect", events, lambda: state, statuses)
    return sorted(commands, key=lambda c: c.event_id), statuses


def single(attr: Attr) -> str | None:
    """A single-valued attribute's new value, or None."""
    assert len(attr.new) <= 1
    return attr.new[0] if attr.new else None


def shape(commands: list[Command]) -> list[tuple]:
    return [(c.kind, c.association, [(a.op, a.name, a.old, single(a)) for a in c.attrs]) for c in commands]


# Precedence (docs/reduction.md) -------------------------------------------------------


def test_a_field_query_back_supersedes_that_fields_events_only():
    commands, statuses = publish(
        ("idu=1", 2, "usr", "fname", "Jack", "Jim"), ("idu=1", 8, "usr", "fname"),
        ("idu=1", 2, "usr", "lname", "Frost", "Doe"),
        current={("usr", "idu=1"): {"idu": "1", "fname": "John", "lname": "Doe", "photo": None}},
    )
    assert shape(commands) == [
        ("modify", ASSOC, [(AttrOp.REPLACE, "fname", None, "John"), (AttrOp.MODIFY, "lname", "Frost", "Doe")])
    ]
    assert statuses == {1: ("S", None), 2: ("S", None), 3: ("S", None)}


def test_a_row_query_back_supersedes_field_query_backs_and_field_events():
    commands, _ = publish(
        ("idu=1", 8, "usr", "fname"), ("idu=1", 6, "usr"), ("idu=1", 1, "usr", "lname", None, "X"),
        current={("usr", "idu=1"): {"idu": "1", "fname": "John", "lname": "Doe  ", "photo": b"\xbb"}},
    )
    [command] = commands
    assert [(a.name, single(a)) for a in command.attrs] == [("fname", "John"), ("lname", "Doe"), ("photo", "uw==")]
    assert command.event_id == 2  # the 8 is superseded: the command starts at the 6


def test_a_delete_is_never_superseded_and_query_back_before_it_has_no_effect():
    commands, statuses = publish(
        ("idu=1", 6, "usr"), ("idu=1", 4, "usr"), ("idu=1", 1, "usr", "fname", None, "X"),
        current={("usr", "idu=1"): {"idu": "1", "fname": "Y", "lname": None, "photo": None}},
    )
    assert [c.kind for c in commands] == [CommandKind.DELETE, CommandKind.ADD]
    assert set(statuses.values()) == {("S", None)}


def test_field_events_of_one_object_group_into_runs_of_one_kind():
    commands, _ = publish(
        ("idu=1", 1, "usr", "fname", None, "Jack"), ("idu=2", 4, "usr"),
        ("idu=1", 1, "usr", "lname", None, "Frost"), ("idu=1", 2, "usr", "fname", "Jack", "John"),
        ("idu=1", 1, "usr", "photo", None, "qqo="),
    )
    assert [(c.kind, c.event_id, len(c.attrs)) for c in commands] == [
        (CommandKind.ADD, 1, 2), (CommandKind.DELETE, 2, 0), (CommandKind.MODIFY, 4, 1), (CommandKind.ADD, 5, 1)
    ]


def test_a_query_back_of_a_vanished_row_has_no_effect():
    commands, statuses = publish(("idu=9", 6, "usr"), ("idu=9", 7, "usr", "fname"))
    assert commands == [] and statuses == {1: ("S", None), 2: ("S", None)}
    # It supersedes nothing, and splits no run.
    commands, _ = publish(
        ("idu=9", 1, "usr", "fname", None, "A"), ("idu=9", 6, "usr"), ("idu=9", 1, "usr", "lname", None, "B")
    )
    assert shape(commands) == [
        ("add", "idu=9,table=usr,schema=indirect", [(AttrOp.ADD, "fname", None, "A"), (AttrOp.ADD, "lname", None, "B")])
    ]


def test_an_unpublishable_current_value_makes_the_query_back_an_error_that_supersedes_nothing():
    commands, statuses = publish(
        ("idu=1", 6, "usr"), ("idu=1", 1, "usr", "lname", None, "Doe"),
        current={("usr", "idu=1"): {"idu": "1", "fname": "Jo\x02hn", "lname": None, "photo": None}},
    )
    assert statuses[1] == ("E", "current value of fname has a character XML 1.0 cannot carry at position 3")
    assert shape(commands) == [("add", ASSOC, [(AttrOp.ADD, "lname", None, "Doe")])]


def test_empty_pieces_add_nothing_and_an_empty_modify_is_not_sent():
    commands, _ = publish(
        ("idu=1", 1, "usr", "fname", None, None), ("idu=2", 2, "usr", "fname", None, None),
        ("idu=3", 3, "usr", "fname", "x", None),
    )
    assert shape(commands) == [
        ("add", ASSOC, []),
        ("modify", "idu=3,table=usr,schema=indirect", [(AttrOp.REPLACE, "fname", None, None)]),
    ]


# Keys (docs/table-key.md) -------------------------------------------------------------


def test_keys_that_collide_after_canonicalisation_are_one_object_and_W():
    commands, statuses = publish(
        ("idu=1", 1, "usr", "fname", None, "A"), ("idu= 1", 1, "usr", "lname", None, "B"),
        ('idu="1"', 1, "usr", "photo", None, "qqo="), ("idu=01", 2, "usr", "fname", "A", "C"),
        ("login=bob", 1, "acct", "name", None, "Bob"), ('login="bob"', 1, "acct", "name", None, "Rob"),
    )
    assert [c.association for c in commands] == [ASSOC, ASSOC, "login=bob,table=acct,schema=indirect"]
    assert [letter for letter, _ in statuses.values()] == ["S", "W", "W", "W", "S", "W"]
    assert statuses[4] == ("W", "table_key idu=01 is not canonical; published as idu=1")


def test_a_compound_key_is_canonical_in_the_tables_key_order():
    commands, statuses = publish(("b=x+a=1", 1, "pair", "v", None, "1"), ("a=1+b=x", 4, "pair"))
    assert {c.association for c in commands} == {"a=1+b=x,table=pair,schema=indirect"}
    assert statuses[1][0] == "W" and statuses[2] == ("S", None)


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (("fname=Jack", 6, "usr"), "table_key names fname; the key of usr is idu"),
        (("a=1", 4, "pair"), "table_key names a; the key of pair is a+b"),
        (("x=1", 4, "nokey"), "table nokey has no key (no primary key, no pk_ column)"),
        (("idu=1", 4, "victim.secret"), "table victim.secret is not in the published schema indirect"),
        (("idu=1", 1, "usr", "fname; DROP TABLE usr; --", None, "x"), "column fname; DROP TABLE usr; -- is not in table usr"),
        (("idu=1", 2, "usr", "idu", "1", "one"), "new_value one is not a valid int value"),
        (("idu=x", 6, "usr"), "table_key value x of idu is not an integer"),
        (("idu=\x001", 4, "usr"), "table_key has a character XML 1.0 cannot carry at position 5"),
        (("idu=1", 1, "usr", "fname", None, "x" * 11), "new_value is longer than 10 characters"),
        (("idu=1" + " " * 10, 4, "usr"), "table_key is longer than 10 characters"),
    ],
)
def test_rows_that_cannot_become_xds_are_E_with_their_reason(row, reason):
    commands, statuses = publish(row, limit=10)
    assert commands == [] and statuses == {1: ("E", reason)}


def test_a_value_that_is_not_rendered_is_not_checked():
    _, statuses = publish(("idu=1", 1, "usr", "fname", "x" * 11, "ok"), limit=10)
    assert statuses == {1: ("S", None)}


# The documented examples, from the rules alone -----------------------------------------

CASES = sorted((Path(__file__).parent / "conformance").glob("*.json"))


# The sample schema as the database describes it (docs/classes.md): what the cases run on.
SAMPLE_USR = Table(
    "usr",
    (*USR.columns, Column("manager", 5, vt.DN, False, reference="usr")),
    ("idu",),
    key_is_primary=True,
    multi_valued=(
        MultiValued("usr_mbr_of", ("idu",), Column("idg", 2, vt.DN, False, reference="grp")),
        MultiValued("usr_phone", ("idu",), Column("phoneno", 2, vt.STRING, False)),
    ),
)
GRP = Table("grp", (Column("idg", 1, vt.INT, False), Column("gname", 2, vt.STRING, False)), ("idg",), True)
SAMPLE = Catalogue("indirect", {"usr": SAMPLE_USR, "grp": GRP}, {"usr_mbr_of": "usr", "usr_phone": "usr"})


# The cases on the sample schema: those making a table of their own run on the databases only.
SAMPLE_CASES = [c for c in CASES if "ddl" not in json.loads(c.read_text())]


@pytest.mark.parametrize("case", SAMPLE_CASES, ids=[c.stem for c in SAMPLE_CASES])
def test_documented_example_from_the_rules_alone(case: Path):
    data = json.loads(case.read_text())
    texts = {
        table: [{k: None if v is None else str(v) for k, v in row.items()} for row in rows]
        for table, rows in data.get("tables", {}).items()
    }
    texts.setdefault("usr", [])
    for idu, fname, lname, photo in data.get("usr", []):
        photo = None if photo is None else base64.b64decode(photo)
        texts["usr"].append({"idu": str(idu), "fname": fname, "lname": lname, "photo": photo})
    current = {
        (table, f"{t.key_columns[0]}={row[t.key_columns[0]]}"): {c.name: row.get(c.name) for c in t.columns}
        for table, t in SAMPLE.tables.items() for row in texts.get(table, [])
    }
    children: dict[tuple[str, str], list] = {}
    for child in SAMPLE_USR.children():
        for row in texts.get(child.name, []):
            key = ("usr", f"idu={row['idu']}")
            children.setdefault(key, []).extend(child_cells(SAMPLE, child, row))
    commands, statuses = publish(
        *map(tuple, data["log"]), current=current, catalogue=SAMPLE, children=children
    )
    expected = etree.fromstring(case.with_suffix(".xml").read_bytes())
    wanted = list(expected) if expected.tag == "input" else [expected]
    assert [canonical(etree.fromstring(command_xml(c))) for c in commands] == [canonical(c) for c in wanted]
    assert {letter for letter, _ in statuses.values()} == {"S"}
