"""The census of classified rows (publisher/reduce/census.py): runs of record_ids, E rows,
and the objects query-back asks for, capped where a table is better read whole."""

from __future__ import annotations

from publisher.model.rows import CLASSIFIED
from publisher.reduce.census import Census, whole
from publisher.reduce.census import KEYED_READ_LIMIT


def _asking(record_id: int, table: str, key: str) -> tuple:
    pairs = [{"column": "idu", "value": key}]
    return CLASSIFIED.row(record_id=record_id, event_type=5, table_name=table, key_pairs=pairs)


def test_runs_rejected_rows_and_wanted_keys_of_one_batch() -> None:
    rows = [
        _asking(1, "usr", "7"),
        CLASSIFIED.row(record_id=2, table_name="usr", status="E", reason="bad key"),
        _asking(3, "usr", "7"),
        CLASSIFIED.row(record_id=5, table_name="usr", status="S"),  # loopback: not asking
        _asking(6, "grp", "1"),
        CLASSIFIED.row(record_id=7, event_type=1, table_name="usr", canonical_key="idu=8"),
    ]
    census = Census()
    census.add(CLASSIFIED.batch(rows))
    assert census.runs == [(1, 3), (5, 7)] and census.rows == 6
    assert census.rejected == [(2, "E", "bad key")]
    assert census.wanted == {"usr": {("7",)}, "grp": {("1",)}}


def test_parts_merge_and_a_table_asked_too_often_is_read_whole() -> None:
    first, second = Census(), Census()
    half = KEYED_READ_LIMIT // 2 + 1
    first.add(CLASSIFIED.batch([_asking(i, "usr", str(i)) for i in range(1, half + 1)]))
    second.add(CLASSIFIED.batch([_asking(i, "usr", str(i)) for i in range(half + 1, 2 * half + 1)]))
    second.add(CLASSIFIED.batch([_asking(5000, "grp", "1")]))
    census = whole({0: first, 1: second})
    assert census.runs == [(1, 2 * half), (5000, 5000)]
    assert census.wanted == {"usr": None, "grp": {("1",)}}
    assert Census().rows == 0 and Census().wanted == {}


def test_the_whole_census_holds_its_rejected_rows_by_record_id() -> None:
    # Parts come in the order their tasks ended; the statuses need the E rows in order.
    later, earlier = Census(), Census()
    later.add(CLASSIFIED.batch([CLASSIFIED.row(record_id=9, status="E", reason="b"),
                                CLASSIFIED.row(record_id=7, status="E", reason="a")]))
    earlier.add(CLASSIFIED.batch([CLASSIFIED.row(record_id=2, status="E", reason="c")]))
    census = whole({1: later, 0: earlier})
    assert [note.record_id for note in census.rejected] == [2, 7, 9]
