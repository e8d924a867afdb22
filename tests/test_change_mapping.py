"""The mapping the change readers share (publisher/source/cdc/mapping.py): row changes to
events, a source value's event log text, and the four readers giving the same events for
the same logical change, each through the encoder its own tests use."""

from __future__ import annotations

import datetime as dt
import struct
import uuid
from collections.abc import Sequence
from decimal import Decimal

import pytest
import sqlalchemy as sa
from hypothesis import given, settings
from hypothesis import strategies as st

from publisher.model.changes import ChangeEvent
from publisher.model.events import EventType
from publisher.source.cdc import openedge
from publisher.source.cdc.mapping import (
    KeyChangeWithoutBefore,
    KeyValueMissing,
    NoEventLogText,
    Operation,
    RowChange,
    event_log_text,
    row_change_events,
)
from publisher.source.cdc.qlik_ct import change_events
from tests import test_gbase8s as gbase8s
from tests import test_openedge as oe
from tests import test_qlik_ct as ct
from tests import test_qlik_kafka as kafka

I, U, U3, D = (
    EventType.INSERT_FIELD,
    EventType.UPDATE_FIELD,
    EventType.UPDATE_FIELD_REMOVE_ALL,
    EventType.DELETE_ROW,
)
KEY1, KEY2 = (("k", "1"),), (("k", "2"),)
ORDER = ("seq",)


def events(change: RowChange) -> list[tuple]:
    """The events of ``change`` without their order, checking each order's position."""
    made = row_change_events(change, ORDER)
    assert [e.order for e in made] == [(*ORDER, n) for n in range(len(made))]
    assert {e.table_name for e in made} <= {change.table}
    return [(e.key, e.event_type, e.column_name, e.old_value, e.new_value) for e in made]


def update(before: dict | None, after: dict, **marks: tuple[str, ...]) -> RowChange:
    return RowChange("t", ("k",), Operation.UPDATE, before, after, **marks)


# --- row changes to events ------------------------------------------------------------


def test_insert_gives_a_type_1_per_non_key_column_that_is_not_null() -> None:
    after = {"k": "1", "a": "x", "b": None, "c": ""}
    change = RowChange("t", ("k",), Operation.INSERT, after=after)
    assert events(change) == [(KEY1, I, "a", None, "x"), (KEY1, I, "c", None, "")]


def test_insert_covers_the_columns_it_is_given_in_their_order() -> None:
    after = {"k": "1", "a": "x", "b": "y"}
    change = RowChange("t", ("k",), Operation.INSERT, after=after, columns=("b", "k", "z"))
    assert events(change) == [(KEY1, I, "b", None, "y")]


def test_update_with_before_image_gives_the_columns_whose_text_differs() -> None:
    before = {"k": "1", "a": "x", "b": "y", "c": None}
    after = {"k": "1", "a": "x2", "b": "y", "c": "z"}
    assert events(update(before, after)) == [
        (KEY1, U, "a", "x", "x2"), (KEY1, U, "c", None, "z"),
    ]


def test_update_with_marked_columns_gives_them_whether_or_not_they_differ() -> None:
    before = {"k": "1", "a": "x", "b": "y"}
    after = {"k": "1", "a": "x", "b": "y2", "c": "new"}
    change = update(before, after, changed=("k", "a", "c"))
    # k is the key; c is not in the before image: a type 3.
    assert events(change) == [(KEY1, U, "a", "x", "x"), (KEY1, U3, "c", None, "new")]


def test_update_publishes_no_marked_column_the_after_image_does_not_cover() -> None:
    before = {"k": "1", "a": "x", "b": "y"}
    after = {"k": "1", "a": None, "b": "y2"}
    change = update(before, after, columns=("k", "a"), changed=("a", "b"))
    assert events(change) == [(KEY1, U, "a", "x", None)]


def test_update_without_before_image_is_type_3_for_every_column_null_included() -> None:
    after = {"k": "1", "a": "x", "b": None}
    assert events(update(None, after)) == [
        (KEY1, U3, "a", None, "x"), (KEY1, U3, "b", None, None),
    ]
    assert events(update(None, after, changed=("b",))) == [(KEY1, U3, "b", None, None)]


def test_update_marking_a_key_column_without_before_image_is_an_error() -> None:
    with pytest.raises(KeyChangeWithoutBefore, match=r"changes key column\(s\) \['k'\]") as info:
        events(update(None, {"k": "2", "a": "x"}, changed=("k", "a")))
    assert info.value.columns == ("k",)


def test_delete_is_one_type_4_keyed_from_its_row() -> None:
    change = RowChange("t", ("k",), Operation.DELETE, before={"k": "1", "a": "x"})
    assert events(change) == [(KEY1, D, None, None, None)]


def test_key_change_deletes_the_old_row_and_inserts_the_new() -> None:
    before = {"k": "1", "a": "x", "b": "y"}
    after = {"k": "2", "a": "x", "b": None}
    for marks in ({}, {"changed": ("k",)}):
        assert events(update(before, after, **marks)) == [
            (KEY1, D, None, None, None), (KEY2, I, "a", None, "x"),
        ]


def test_composite_key_in_key_order() -> None:
    change = RowChange("t", ("b", "a"), Operation.DELETE, before={"a": "1", "b": "2"})
    assert events(change) == [((("b", "2"), ("a", "1")), D, None, None, None)]


@pytest.mark.parametrize(
    ("change", "image", "absent"),
    [
        (RowChange("t", ("k",), Operation.INSERT, after={"k": None, "a": "x"}), "after", False),
        (RowChange("t", ("k",), Operation.DELETE, before={"a": "x"}), "before", True),
        (update({"k": None}, {"k": "1"}), "before", False),
        (update({"k": "1"}, {"a": "x"}), "after", True),
    ],
)
def test_null_or_absent_key_is_an_error_naming_column_and_image(
    change: RowChange, image: str, absent: bool
) -> None:
    with pytest.raises(KeyValueMissing) as info:
        events(change)
    assert (info.value.column, info.value.image, info.value.absent) == ("k", image, absent)
    assert str(info.value) == (
        "key column 'k' is not a column of 't'" if absent else "key column 'k' of 't' is NULL"
    )


def test_unnumbered_events_keep_the_order_given() -> None:
    change = RowChange("t", ("k",), Operation.INSERT, after={"k": "1", "a": "x", "b": "y"})
    made = row_change_events(change, (5, 2), numbered=False)
    assert [e.order for e in made] == [(5, 2), (5, 2)]


def test_an_image_the_operation_needs_is_required() -> None:
    with pytest.raises(ValueError, match="delete of 't' needs its before image"):
        RowChange("t", ("k",), Operation.DELETE, after={"k": "1"})
    with pytest.raises(ValueError, match="update of 't' needs its after image"):
        RowChange("t", ("k",), Operation.UPDATE, before={"k": "1"})


# --- values as text -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (None, None),
        ("a b ", "a b "),
        (True, "true"),
        (False, "false"),
        (b"\x00\x01\xff", "AAH/"),
        (bytearray(b"\xff"), "/w=="),
        (memoryview(b"\xff"), "/w=="),
        (-0, "0"),
        (2**70, "1180591620717411303424"),
        (0.1, "0.1"),
        (-0.0, "-0.0"),
        (1e300, "1e+300"),
        (Decimal("1.50"), "1.50"),
        (Decimal("-1E+3"), "-1000"),
        (Decimal("1E-7"), "0.0000001"),
        (dt.date(2020, 1, 15), "2020-01-15"),
        (dt.time(10, 0, 0, 123000), "10:00:00.123000"),
        (dt.datetime(2017, 3, 13, 12, 30), "2017-03-13 12:30:00"),
        (dt.datetime(2024, 3, 1, 10, 0, 0, 7, tzinfo=dt.UTC), "2024-03-01 10:00:00.000007"),
        (dt.datetime(2024, 3, 1, 12, 0, tzinfo=dt.timezone(dt.timedelta(hours=2))),
         "2024-03-01 10:00:00"),
        (uuid.UUID(int=1), "00000000-0000-0000-0000-000000000001"),
    ],
)
def test_event_log_text(value: object, text: str | None) -> None:
    assert event_log_text(value) == text


def float32(value: float) -> float:
    """``value`` narrowed to 32 bits, as a 32-bit column's value reads into Python."""
    return struct.unpack("f", struct.pack("f", value))[0]


@pytest.mark.parametrize(
    ("value", "text"),
    [(float32(1.1), "1.1"), (float32(16777217.0), "16777216.0"), (float32(-0.0), "-0.0"),
     (float32(3.4028234663852886e38), "3.4028235e+38"),
     (0.123456789012, "0.123456789012")],  # the last is no 32-bit value: all its digits
)
def test_single_precision_is_the_shortest_text_of_the_32_bit_value(
    value: float, text: str
) -> None:
    assert event_log_text(value, single_precision=True) == text


@pytest.mark.parametrize(
    "value",
    [float("nan"), float("inf"), Decimal("NaN"), Decimal("-Infinity"), [1], {"a": 1}, (1,)],
)
def test_values_without_event_log_text(value: object) -> None:
    with pytest.raises(NoEventLogText):
        event_log_text(value)


# --- the four readers agree -----------------------------------------------------------

TABLE, KEY, VALUE = "usr", "id", "v"
COLUMNS = (KEY, VALUE)
IDS = st.integers(-(2**31) + 1, 2**31 - 1)  # an Informix INTEGER (its smallest is NULL)
# The value column's type, and what each format can hold in it: text (an Informix VARCHAR
# has no NULL) or an integer that may be NULL.
VALUES = {
    "varchar": st.text(st.characters(blacklist_categories=("Cs", "Cc")), max_size=8),
    "integer": st.none() | IDS,
}


@st.composite
def logical_changes(draw) -> tuple[str, str, dict | None, dict | None]:
    """(value type, operation, before, after) of one change of the two-column table."""
    kind = draw(st.sampled_from(sorted(VALUES)))

    def rows() -> dict:
        return {KEY: draw(IDS), VALUE: draw(VALUES[kind])}

    operation = draw(st.sampled_from(["insert", "update", "delete"]))
    if operation == "insert":
        return kind, operation, None, rows()
    if operation == "delete":
        return kind, operation, rows(), None
    before, after = rows(), rows()
    if draw(st.booleans()):
        after[KEY] = before[KEY]
    return kind, operation, before, after


def as_text(value: object) -> str | None:
    return None if value is None else str(value)


def expected(operation: str, before: dict | None, after: dict | None) -> list[tuple]:
    """The mapping in docs/change-formats.md, written out for the two-column table."""
    inserted = [] if after is None or after[VALUE] is None else [
        (((KEY, str(after[KEY])),), I, VALUE, None, as_text(after[VALUE]))
    ]
    if operation == "insert":
        return inserted
    old_key = ((KEY, str(before[KEY])),)
    if operation == "delete" or before[KEY] != after[KEY]:
        return [(old_key, D, None, None, None), *([] if operation == "delete" else inserted)]
    if before[VALUE] == after[VALUE]:
        return []
    return [(old_key, U, VALUE, as_text(before[VALUE]), as_text(after[VALUE]))]


def simplified(events: list[ChangeEvent]) -> list[tuple]:
    assert {e.table_name for e in events} <= {TABLE}
    return [(e.key, e.event_type, e.column_name, e.old_value, e.new_value) for e in events]


def changed(before: dict, after: dict) -> list[str]:
    return [column for column in COLUMNS if before[column] != after[column]]


def through_gbase8s(
    kind: str, operation: str, before: dict | None, after: dict | None
) -> list[ChangeEvent]:
    if kind == "varchar":
        schema = gbase8s.tabschema(7, f"{KEY} integer, {VALUE} varchar(255,0)", 4, 1, 1)
    else:
        schema = gbase8s.tabschema(7, f"{KEY} integer, {VALUE} integer", 8, 2, 0)

    def row(record: int, seq: int, values: dict) -> bytes:
        fixed = gbase8s.int32(values[KEY])
        if kind == "varchar":
            return gbase8s.row(record, seq, 1, 7, fixed, [gbase8s.varchar(values[VALUE])])
        return gbase8s.row(record, seq, 1, 7, fixed + gbase8s.int32(values[VALUE]), [])

    if operation == "insert":
        rows = row(40, 2, after)
    elif operation == "delete":
        rows = row(41, 2, before)
    else:
        rows = row(42, 2, before) + row(43, 3, after)
    data = schema + gbase8s.begin(1, 1) + rows + gbase8s.commit(4, 1)
    return gbase8s.read_all(data, {7: TABLE}, {TABLE: [KEY]})


def through_qlik_kafka(
    kind: str, operation: str, before: dict | None, after: dict | None, form: str
) -> list[ChangeEvent]:
    types = [(KEY, "INT4", 1), (VALUE, "STRING" if kind == "varchar" else "INT4", 0)]
    if operation == "update":
        ordinals = [COLUMNS.index(column) + 1 for column in changed(before, after)]
        message = kafka.message(TABLE, "UPDATE", after, before, change_mask=kafka.mask(ordinals))
    elif operation == "insert":
        message = kafka.message(TABLE, "INSERT", after)
    else:
        message = kafka.message(TABLE, "DELETE", before)
    return kafka.read_as(form, kafka.metadata(TABLE, types), message)


def through_qlik_ct(
    kind: str, operation: str, before: dict | None, after: dict | None
) -> list[ChangeEvent]:
    def row(oper: str, marked: Sequence[str], values: dict) -> list:
        return ct.ct_row(1, oper, ct.mask(COLUMNS, *marked), *(values[c] for c in COLUMNS))

    if operation == "insert":
        records = [row("I", COLUMNS, after)]
    elif operation == "delete":
        records = [row("D", [KEY], before)]
    else:
        records = [row("B", [], before), row("U", changed(before, after), after)]
    return change_events(ct.rows_of(*records, columns=COLUMNS, keys=(KEY,)))


def through_openedge(
    kind: str, operation: str, before: dict | None, after: dict | None
) -> list[ChangeEvent]:
    cdc = oe.Cdc("sqlite://")
    cdc.tracking()
    value = sa.String(255) if kind == "varchar" else sa.Integer
    table = cdc.change_table(
        f"CDC_{TABLE}", (KEY,), [sa.Column(KEY, sa.Integer), sa.Column(VALUE, value)]
    )
    cdc.metadata.create_all(cdc.engine)
    if operation == "insert":
        cdc.change(table, 1, 1, after)
    elif operation == "delete":
        cdc.change(table, 1, 2, before)
    else:
        cdc.change(table, 1, 3, before)
        cdc.change(table, 1, 4, after)
    try:
        return cdc.read(tables=(openedge.ChangeTable(TABLE, (KEY,), table_number=1),))
    finally:
        cdc.drop()


@settings(max_examples=150, deadline=None)
@given(logical_changes(), st.sampled_from(kafka.FORMS))
def test_the_four_readers_give_the_same_events_for_the_same_change(
    change: tuple, form: str
) -> None:
    kind, operation, before, after = change
    want = expected(operation, before, after)
    assert simplified(through_gbase8s(*change)) == want
    assert simplified(through_qlik_kafka(*change, form)) == want
    assert simplified(through_qlik_ct(*change)) == want
    assert simplified(through_openedge(*change)) == want
