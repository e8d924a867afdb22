"""The classification pass two ways: the pyarrow fast path for common rows against the rules
alone for every row. Random rows, good and bad; the same classified rows must come out."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from publisher.model import value_text as values
from publisher.model.catalogue import Catalogue, Column, MultiValued, Table
from publisher.reduce.loopback import loopback_user
from publisher.reduce.pipeline import classify_rows

CATALOGUE = Catalogue(
    "indirect",
    {
        "usr": Table(
            "usr",
            (
                Column("idu", 1, values.INT, False),
                Column("fname", 2, values.STRING, False),
                Column("code", 3, values.STRING, True),
                Column("photo", 4, values.OCTET, False),
                Column("active", 5, values.STATE, False),
                Column("born", 6, values.TIME, False),
                Column("age", 7, values.INT, False),
                # Time Syntax 2 and 3: string columns whose values are not taken as they are
                Column("t2", 8, values.STRING, False, time_form="time:2"),
                Column("t3", 9, values.STRING, False, time_form="time:3"),
                Column("d3", 10, values.STRING, False, time_form="date:3"),
                Column("ts1", 11, values.TIME, False, time_form="timestamp:1"),
            ),
            ("idu",),
            multi_valued=(
                MultiValued("usr_phone", ("idu",), Column("phoneno", 2, values.STRING, False)),
                MultiValued("usr_tag", ("uid",), Column("code", 2, values.STRING, True)),  # linked by uid
            ),
        ),
        "grp": Table(
            "grp", (Column("gname", 1, values.STRING, False), Column("gid", 2, values.STRING, False)),
            ("gname",),
        ),
    },
    {"usr_phone": "usr", "usr_tag": "usr"},
)
PUBLISHER = "idm"
LIMIT = 12  # Maximum Value Length: some texts below are longer

texts = st.sampled_from(
    ["1", "-7", " 3", "x", "", "AAE=", "abc ", "yes", "2024-01-02T03:04:05", "12:30",
     "a\x01b", "\ufffe", "é", "99999999999999999999", "a\t", " b", "100000", "10:00:00",
     "24:00:00", "2024-01-28", "2024-02-30", "2024-1-2", None]
)
keys = st.sampled_from(
    ["idu=1", "idu=-2", "idu=x", "idu= 1", 'idu="1"', "idu=1+fname=a", "fname=a", "gname=g1",
     "gname=g 1", "gid=2", "nope=1", "idu=", "idu=é", "idu=1\x01", "uid=3", "", None]
)
rows = st.fixed_dictionaries(
    {
        "table_key": keys,
        "event_type_text": st.sampled_from(["1", "2", "3", "4", "5", "6", "7", "8", " 2", "9", "2.5", None]),
        "event_order": st.sampled_from([0.0, 1.5, None]),
        "perpetrator": st.sampled_from([PUBLISHER, "app", None]),
        "table_name": st.sampled_from(["usr", "grp", "usr_phone", "usr_tag", "other", None]),
        "column_name": st.sampled_from(
            ["fname", "code", "photo", "active", "born", "age", "idu", "gid", "zz", "f\x01",
             "t2", "t3", "d3", "ts1", "usr_phone.phoneno", "usr_tag.code", "phoneno",
             "usr_phone.zz", None]
        ),
        "old_value": texts,
        "new_value": texts,
    }
)
PENDING = pa.schema(
    [("record_id", pa.int64()), ("table_key", pa.string()),
     ("event_type_text", pa.string()), ("event_order", pa.float64()),
     ("perpetrator", pa.string()), ("table_name", pa.string()),
     ("column_name", pa.string()), ("old_value", pa.string()), ("new_value", pa.string())]
)


def classified(
    batch: pa.RecordBatch, vectorised: bool, loopback: bool, future: bool, selection: tuple[str, ...] = ()
) -> list:
    user = loopback_user(PUBLISHER, None, loopback)
    catalogue = CATALOGUE.selected(selection) if selection else CATALOGUE
    run = classify_rows(catalogue, user, future, LIMIT, vectorised)
    return pa.Table.from_batches(list(run(iter([batch])))).sort_by("record_id").to_pylist()


@settings(max_examples=300, deadline=None)
@given(st.lists(rows, max_size=40), st.booleans(), st.booleans(),
       st.sampled_from([(), ("usr",), ("grp",)]))
def test_fast_path_gives_what_the_rules_give(rows, allow_loopback, future_events, selection) -> None:
    batch = pa.RecordBatch.from_pylist(
        [{"record_id": i, **row} for i, row in enumerate(rows)], schema=PENDING
    )
    fast = classified(batch, True, allow_loopback, future_events, selection)
    assert fast == classified(batch, False, allow_loopback, future_events, selection)


def test_rows_of_left_out_tables_take_the_fast_path_unless_loopback() -> None:
    batch = pa.RecordBatch.from_pylist(
        [{"record_id": i, "table_key": "idu=x", "event_type_text": "9", "event_order": 0.0,
          "perpetrator": who, "table_name": table, "column_name": None,
          "old_value": None, "new_value": None}
         for i, (table, who) in enumerate([("usr", "app"), ("usr_tag", "app"), ("usr", PUBLISHER)])],
        schema=PENDING,
    )
    fast, rest = list(classify_rows(CATALOGUE.selected(["grp"]), PUBLISHER, False, LIMIT)(iter([batch])))
    assert fast.column("status").to_pylist() == ["S", "S"]
    assert fast.column("reason").to_pylist() == ["not selected"] * 2
    assert rest.to_pylist()[0]["reason"] is None  # loopback, by the rules


def test_common_rows_take_the_fast_path() -> None:
    # A column's event, and a multi-valued attribute's in its class's form.
    batch = pa.RecordBatch.from_pylist(
        [{"record_id": 1, "table_key": "idu=1", "event_type_text": "2", "event_order": 0.0,
          "perpetrator": "app", "table_name": "usr", "column_name": column,
          "old_value": "a", "new_value": "b"} for column in ("fname", "usr_phone.phoneno")]
    )
    run = classify_rows(CATALOGUE, PUBLISHER, False, LIMIT)
    out = list(run(iter([batch])))
    assert [b.num_rows for b in out] == [2, 0]  # the fast batch, then an empty rest


def test_child_table_rows_take_the_fast_path_under_their_class() -> None:
    batch = pa.RecordBatch.from_pylist(
        [{"record_id": 1, "table_key": "uid=3", "event_type_text": "8", "event_order": 0.0,
          "perpetrator": "app", "table_name": "usr_tag", "column_name": "code",
          "old_value": None, "new_value": None}],
        schema=PENDING,
    )
    fast, rest = list(classify_rows(CATALOGUE, PUBLISHER, False, LIMIT)(iter([batch])))
    assert rest.num_rows == 0
    row = fast.to_pylist()[0]
    assert (row["table_name"], row["canonical_key"], row["column_name"]) == ("usr", "idu=3", "usr_tag.code")
    assert row["key_pairs"] == [{"column": "idu", "value": "3"}]
    assert fast.to_pylist() == classified(batch, False, False, False)



def test_time_values_under_syntax_2_and_3_are_taken_as_is_only_when_surely_their_own() -> None:
    def row(record_id: int, column: str, value: str) -> dict:
        return {"record_id": record_id, "table_key": "idu=1", "event_type_text": "1",
                "event_order": 0.0, "perpetrator": "app", "table_name": "usr",
                "column_name": column, "old_value": None, "new_value": value}

    batch = pa.RecordBatch.from_pylist(
        [row(1, "t2", "100000"), row(2, "t2", "10:00:00"), row(3, "t3", "10:00:00"),
         row(4, "d3", "2024-01-28"), row(5, "d3", "2024-02-30")],
        schema=PENDING,
    )
    fast, rest = list(classify_rows(CATALOGUE, PUBLISHER, False, LIMIT)(iter([batch])))
    assert fast.column("record_id").to_pylist() == [3, 4]
    assert rest.column("record_id").to_pylist() == [1, 2, 5]
    rules = classified(batch, False, False, False)
    assert [r["status"] for r in rules] == ["E", None, None, None, "E"]
    assert [r["new_text"] for r in rules][1:4] == ["100000", "10:00:00", "2024-01-28"]
