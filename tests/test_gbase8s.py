"""The GBase 8s / Informix CDC reader: seed 004 byte for byte, bad input with its byte
offsets, transactions, and a round trip through an encoder written here."""

from __future__ import annotations

import io
import logging
import struct
from datetime import date

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from publisher.model.changes import ChangeEvent
from publisher.model.events import EventType
from publisher.source.cdc.gbase8s import (
    CdcStreamError,
    RecordDecoder,
    RecordTransactions,
    TableLayout,
    read_changes,
)

# Seed 004, one dump column (one buffer the client read) a line, cut at the record's
# declared sizes: the stale bytes the dump shows after each record lie outside them.
SEED_004_BUFFERS = [
    "00000024 0000001D 00000042 000000C8 0000006F 00000000 00000004 00000001 00000001"
    " 63312069 6E746567 65722C20 63322076 61726368 61722832 302C3029 00",  # TABSCHEMA
    "00000018 00000000 00000042 000000C9 00000000 00000000",  # TIMEOUT
    "00000018 00000000 00000042 000000C9 00000000 00000000",  # TIMEOUT, "same as the second"
    "00000028 00000000 00000042 00000001 0000000B01746018 00000027 0000000067DFE90F"
    " 000007D5",  # BEGINTX
    "00000028 0000000F 00000042 00000028 0000000B01746050 00000027 0000006F 00000000"
    " 0B000000 0000000F 0009 616263616263616263",  # INSERT (size field 11 as dumped)
    "00000024 00000000 00000042 00000002 0000000B017460A0 00000027 0000000067DFE90F",  # COMMTX
]
SEED_004 = b"".join(bytes.fromhex(text) for text in SEED_004_BUFFERS)
TABLES = {0x6F: "t1"}
KEYS = {"t1": ["c1"]}
INSERT_AT = 153  # byte offsets of seed 004's records
COMMIT_AT = 208
SEED_004_EVENTS = [
    ChangeEvent(
        (0x0B017460A0, 0x0B01746050), "t1", (("c1", "15"),), EventType.INSERT_FIELD,
        "c2", None, "abcabcabc",
    )
]


def feed_all(chunks: list[bytes], tables=TABLES, keys=KEYS) -> list[ChangeEvent]:
    """The events of a stream fed to the incremental decoder in these chunks."""
    decoder, transactions = RecordDecoder(), RecordTransactions(tables, keys)
    events = []
    for chunk in chunks:
        for record in decoder.feed(chunk):
            events += transactions.apply(record)
    decoder.close()
    transactions.close()
    return events


def read_all(data: bytes, tables=TABLES, keys=KEYS) -> list[ChangeEvent]:
    return list(read_changes(io.BytesIO(data), tables, keys))


# --- an encoder -----------------------------------------------------------------------


def record(number: int, header: bytes = b"", payload: bytes = b"") -> bytes:
    return struct.pack(">IIII", 16 + len(header), len(payload), 66, number) + header + payload


def tabschema(table_id: int, columns: str, fixed_bytes: int, fixed: int, variable: int) -> bytes:
    header = struct.pack(">iiiii", table_id, 0, fixed_bytes, fixed, variable)
    return record(200, header, columns.encode() + b"\0")


def begin(seq: int, txid: int) -> bytes:
    return record(1, struct.pack(">Qiqi", seq, txid, 1_700_000_000, 2005))


def commit(seq: int, txid: int) -> bytes:
    return record(2, struct.pack(">Qiq", seq, txid, 1_700_000_000))


def rollback(seq: int, txid: int) -> bytes:
    return record(3, struct.pack(">Qi", seq, txid))


def discard(seq: int, txid: int) -> bytes:
    return record(62, struct.pack(">Qi", seq, txid))


def row(
    kind: int, seq: int, txid: int, table_id: int, fixed: bytes, variable: list[bytes]
) -> bytes:
    header = struct.pack(">Qiii", seq, txid, table_id, 0)
    header += b"".join(struct.pack(">I", len(value)) for value in variable)
    return record(kind, header, fixed + b"".join(variable))


def int32(value: int | None) -> bytes:
    return struct.pack(">i", -0x80000000 if value is None else value)


def int16(value: int | None) -> bytes:
    return struct.pack(">h", -0x8000 if value is None else value)


def day(value: date | None) -> bytes:
    return int32(None if value is None else (value - date(1899, 12, 31)).days)


def varchar(value: str) -> bytes:
    data = value.encode()
    return struct.pack(">H", len(data)) + data


# t2: a key, an int, a smallint, a date (fixed, 14 bytes), a varchar.
T2 = tabschema(7, "k integer, i integer, s smallint, d date, v varchar(255,0)", 14, 4, 1)


def t2_row(kind: int, seq: int, txid: int, values: dict) -> bytes:
    fixed = int32(values["k"]) + int32(values["i"]) + int16(values["s"]) + day(values["d"])
    return row(kind, seq, txid, 7, fixed, [varchar(values["v"])])


def t2_texts(values: dict) -> dict[str, str | None]:
    """A t2 row as the reader gives it: text, NULL as None."""
    d = values["d"]
    return {
        "i": None if values["i"] is None else str(values["i"]),
        "s": None if values["s"] is None else str(values["s"]),
        "d": None if d is None else d.isoformat(),
        "v": values["v"],
    }


T2_TABLES = {7: "t2"}
T2_KEYS = {"t2": ["k"]}


def t2_inserted(order: tuple, values: dict) -> list[ChangeEvent]:
    key = (("k", str(values["k"])),)
    return [
        ChangeEvent(order, "t2", key, EventType.INSERT_FIELD, column, None, text)
        for column, text in t2_texts(values).items()
        if text is not None
    ]


def t2_expected(order: tuple, op: tuple) -> list[ChangeEvent]:
    """The events of one operation, straight from the mapping in docs/change-formats.md."""
    if op[0] == "insert":
        return t2_inserted(order, op[1])
    if op[0] == "delete":
        return [ChangeEvent(order, "t2", (("k", str(op[1]["k"])),), EventType.DELETE_ROW)]
    before, after = op[1], op[2]
    if before["k"] != after["k"]:
        deleted = ChangeEvent(order, "t2", (("k", str(before["k"])),), EventType.DELETE_ROW)
        return [deleted, *t2_inserted(order, after)]
    old, new, key = t2_texts(before), t2_texts(after), (("k", str(before["k"])),)
    return [
        ChangeEvent(order, "t2", key, EventType.UPDATE_FIELD, c, old[c], new[c])
        for c in old
        if old[c] != new[c]
    ]


# --- seed 004 -------------------------------------------------------------------------


def test_seed_004_rebuilt_from_its_hex(tmp_path) -> None:
    path = tmp_path / "seed004.cdc"
    path.write_bytes(SEED_004)
    assert len(SEED_004) == 244
    with path.open("rb") as stream:
        events = list(read_changes(stream, TABLES, KEYS))
    assert events == SEED_004_EVENTS
    assert events[0].table_key == "c1=15"


def test_seed_004_one_byte_at_a_time() -> None:
    chunks = [SEED_004[index : index + 1] for index in range(len(SEED_004))]
    assert feed_all(chunks) == SEED_004_EVENTS


def test_seed_004_as_the_buffers_the_client_read() -> None:
    assert feed_all([bytes.fromhex(text) for text in SEED_004_BUFFERS]) == SEED_004_EVENTS


def test_seed_004_without_configured_keys_is_an_error() -> None:
    with pytest.raises(CdcStreamError, match=f"t1 has no key columns .*byte {INSERT_AT}"):
        read_all(SEED_004, keys={})
    with pytest.raises(CdcStreamError, match=f"table id 111 has no table name .*byte {INSERT_AT}"):
        read_all(SEED_004, tables={})


def test_size_fields_big_endian_as_documented() -> None:
    big = SEED_004.replace(bytes.fromhex("0B0000000000000F"), bytes.fromhex("0000000B0000000F"))
    assert big != SEED_004
    assert read_all(big) == SEED_004_EVENTS


def test_stale_bytes_inside_the_declared_sizes_are_skipped() -> None:
    # A TIMEOUT whose sizes take in stale TABSCHEMA bytes, in its header and its payload.
    stale = bytes.fromhex("00000004 00000001 00000001 63312069")
    timeout = struct.pack(">IIII", 24 + 8, len(stale), 66, 201) + bytes(8) + stale[:8] + stale
    data = SEED_004[:65] + timeout + SEED_004[65:]
    assert read_all(data) == SEED_004_EVENTS


# --- bad input ------------------------------------------------------------------------


def test_truncated_record() -> None:
    with pytest.raises(CdcStreamError, match=f"runs past the end of the stream.*byte {COMMIT_AT}"):
        read_all(SEED_004[:-5])
    with pytest.raises(CdcStreamError, match=f"truncated record.*byte {COMMIT_AT}") as caught:
        read_all(SEED_004[: COMMIT_AT + 10])
    assert caught.value.offset == COMMIT_AT


def test_wrong_packet_scheme() -> None:
    data = bytearray(SEED_004)
    data[65 + 8 : 65 + 12] = struct.pack(">I", 67)
    with pytest.raises(CdcStreamError, match="packet scheme 67, expected 66.*byte 65"):
        read_all(bytes(data))


def test_header_smaller_than_its_kind_needs() -> None:
    data = bytearray(SEED_004)
    data[113:117] = struct.pack(">I", 36)  # BEGINTX needs 40
    with pytest.raises(CdcStreamError, match="BEGINTX header size 36 is smaller.*byte 113"):
        feed_all([bytes(data)])


def test_size_past_the_end() -> None:
    data = bytearray(SEED_004)
    data[INSERT_AT + 4 : INSERT_AT + 8] = struct.pack(">I", 1000)
    with pytest.raises(CdcStreamError, match=f"40 \\+ 1000 runs past the end.*byte {INSERT_AT}"):
        read_all(bytes(data))


def test_row_too_short_or_too_long() -> None:
    short = bytearray(SEED_004[:COMMIT_AT - 1] + SEED_004[COMMIT_AT:])
    short[INSERT_AT + 4 : INSERT_AT + 8] = struct.pack(">I", 14)
    with pytest.raises(CdcStreamError, match=f"row is 14 bytes, its columns take 15.*{INSERT_AT}"):
        read_all(bytes(short))
    long = bytearray(SEED_004[:COMMIT_AT] + b"x" + SEED_004[COMMIT_AT:])
    long[INSERT_AT + 4 : INSERT_AT + 8] = struct.pack(">I", 16)
    with pytest.raises(CdcStreamError, match=f"row is 16 bytes, its columns take 15.*{INSERT_AT}"):
        read_all(bytes(long))


def test_unknown_record_number_is_skipped(caplog) -> None:
    unknown = record(99, b"\1\2\3\4", b"whatever")
    data = SEED_004[:113] + unknown + SEED_004[113:]
    with caplog.at_level(logging.WARNING):
        assert read_all(data) == SEED_004_EVENTS
    assert "record number 99 of 28 bytes at byte 113" in caplog.text


def test_error_record() -> None:
    dead = record(202, struct.pack(">ii", 1, -25582))
    with pytest.raises(CdcStreamError, match=r"ended the CDC session \(error code -25582\).*113"):
        read_all(SEED_004[:113] + dead + SEED_004[113:])
    alive = record(202, struct.pack(">ii", 0, -1))
    assert read_all(SEED_004[:113] + alive + SEED_004[113:]) == SEED_004_EVENTS


def test_good_records_before_a_bad_one_are_handed_over() -> None:
    decoder = RecordDecoder()
    records = decoder.feed(SEED_004[:113] + record(1, b"short"))
    assert len(records) == 3
    with pytest.raises(CdcStreamError, match="byte 113"):
        decoder.feed(b"")


def test_tabschema_column_list_that_cannot_be_parsed() -> None:
    bad = tabschema(7, "k integer, v varchar(20", 4, 1, 1)
    with pytest.raises(CdcStreamError, match="cannot parse TABSCHEMA column.*byte 0"):
        read_all(bad, T2_TABLES, T2_KEYS)
    miscounted = tabschema(7, "k integer, v varchar(20,0)", 4, 2, 1)
    with pytest.raises(CdcStreamError, match="lists 2 columns.*byte 0"):
        read_all(miscounted, T2_TABLES, T2_KEYS)
    not_ended = record(200, struct.pack(">iiiii", 7, 0, 4, 1, 0), b"k integer")
    with pytest.raises(CdcStreamError, match="not NUL-ended.*byte 0"):
        read_all(not_ended, T2_TABLES, T2_KEYS)


# 50 KB of blanks: the regular expression this reader used backtracked in time cubic in
# their length (2,000 blanks took 42 s; this many, days). Parsed by hand, it is linear.
BLANKS = " " * 50_000


@pytest.mark.parametrize(
    ("columns", "parsed"),
    [
        (f"k{BLANKS}integer{BLANKS}not{BLANKS}null{BLANKS}", ("k", 4)),
        (f"{BLANKS}k integer,{BLANKS}v{BLANKS}char{BLANKS}({BLANKS}3{BLANKS}){BLANKS}",
         ("v", 3)),
        (f"k integer{BLANKS}!", None),
        (f"k a{BLANKS}x!", None),
        (f"k integer{BLANKS}not{BLANKS}null{BLANKS}!", None),
        (f"k char({BLANKS}3{BLANKS},{BLANKS}", None),
    ],
    ids=["type-not-null", "char-size", "mark-after", "type-words", "not-null-then", "open-size"],
)
def test_tabschema_with_long_runs_of_blanks(columns: str, parsed: tuple | None) -> None:
    count = columns.count(",") + 1
    data = tabschema(7, columns, 4 + (parsed[1] if parsed and parsed[0] == "v" else 0), count, 0)
    decoder = RecordDecoder()
    layout = TableLayout.from_record(decoder.feed(data)[0]) if parsed else None
    if parsed is None:
        with pytest.raises(CdcStreamError, match=r"cannot parse TABSCHEMA column .*\.\.\. "
                           r"\(\d+ characters\) \(record at byte 0\)"):
            TableLayout.from_record(decoder.feed(data)[0])
    else:
        assert (layout.columns[-1].name, layout.columns[-1].size) == parsed


@pytest.mark.parametrize(
    ("columns", "pattern"),
    [
        ("k integer, v\x01 char(3)",
         r"TABSCHEMA column name 'v\\x01' has a character XML 1.0 cannot carry at position 2"),
        ("k integer, v\ufffe char(3)", r"column name 'v\\ufffe' has a character XML"),
        ("k integer, v char(" + "9" * 5000 + ")", r"cannot parse TABSCHEMA column 'v char\(999"),
        ("k integer, v char(3,4,5)", r"cannot parse TABSCHEMA column 'v char\(3,4,5\)'"),
    ],
    ids=["control", "fffe", "5000-digits", "three-sizes"],
)
def test_tabschema_names_and_sizes_that_cannot_be(columns: str, pattern: str) -> None:
    bad = T2 + tabschema(8, columns, 7, 2, 0)
    with pytest.raises(CdcStreamError, match=pattern + rf".*\(record at byte {len(T2)}\)"):
        read_all(bad, T2_TABLES, T2_KEYS)


def test_tabschema_negative_counts() -> None:
    bad = tabschema(7, "k integer, v varchar(20,0)", 4, -1, 3)
    with pytest.raises(CdcStreamError, match="4 fixed bytes, -1 fixed- and 3 variable-length "
                       r"columns: none may be negative \(record at byte 0\)"):
        read_all(bad, T2_TABLES, T2_KEYS)


def test_unsupported_type_names_the_column() -> None:
    data = (
        tabschema(7, "k integer, amount decimal(16,2)", 13, 2, 0)
        + begin(1, 5)
        + row(40, 2, 5, 7, int32(1) + bytes(9), [])
    )
    unsupported = r"'amount' of type 'decimal\(16,2\)' is not supported yet"
    with pytest.raises(CdcStreamError, match=unsupported):
        read_all(data, T2_TABLES, T2_KEYS)


def test_null_key_is_an_error() -> None:
    data = T2 + begin(1, 5) + t2_row(40, 2, 5, {"k": None, "i": 1, "s": 1, "d": None, "v": ""})
    at = len(T2) + len(begin(1, 5))
    with pytest.raises(CdcStreamError, match=f"key column 'k' of 't2' is NULL.*byte {at}"):
        read_all(data, T2_TABLES, T2_KEYS)


def test_fixed_types() -> None:
    columns = "id bigint, name char(6), f float, r smallfloat, b bigint, c char(3), d date"
    data = (
        tabschema(9, columns, 8 + 6 + 8 + 4 + 8 + 3 + 4, 7, 0)
        + begin(1, 5)
        + row(
            40, 2, 5, 9,
            struct.pack(">q", 2**40) + "Zoë  ".encode() + struct.pack(">d", 2.5)
            + struct.pack(">f", 0.1) + struct.pack(">q", -(2**63)) + b"\0\0\0" + int32(None),
            [],
        )
        + commit(3, 5)
    )
    events = read_all(data, {9: "t9"}, {"t9": ["id"]})
    assert [(e.column_name, e.new_value) for e in events] == [
        ("name", "Zoë"), ("f", "2.5"), ("r", "0.1"),
    ]
    assert events[0].key == (("id", str(2**40)),)


# --- transactions ---------------------------------------------------------------------


def t2_values(k: int, v: str) -> dict:
    return {"k": k, "i": None, "s": None, "d": None, "v": v}


def test_interleaved_transactions_in_commit_order() -> None:
    data = (
        T2 + begin(1, 10) + begin(2, 11)
        + t2_row(40, 3, 10, t2_values(1, "a"))
        + t2_row(40, 4, 11, t2_values(2, "b"))
        + commit(5, 11)
        + t2_row(41, 6, 10, t2_values(3, "c"))
        + commit(7, 10)
    )
    assert read_all(data, T2_TABLES, T2_KEYS) == [
        ChangeEvent((5, 4), "t2", (("k", "2"),), EventType.INSERT_FIELD, "v", None, "b"),
        ChangeEvent((7, 3), "t2", (("k", "1"),), EventType.INSERT_FIELD, "v", None, "a"),
        ChangeEvent((7, 6), "t2", (("k", "3"),), EventType.DELETE_ROW),
    ]


def test_rollback_drops_the_transaction() -> None:
    data = (
        T2 + begin(1, 10) + begin(2, 11)
        + t2_row(40, 3, 10, t2_values(1, "a"))
        + t2_row(40, 4, 11, t2_values(2, "b"))
        + rollback(5, 10)
        + commit(6, 11)
    )
    assert [e.key for e in read_all(data, T2_TABLES, T2_KEYS)] == [(("k", "2"),)]


def test_discard_drops_records_from_its_seq_on() -> None:
    data = (
        T2 + begin(1, 10)
        + t2_row(40, 3, 10, t2_values(1, "a"))
        + t2_row(40, 4, 10, t2_values(2, "b"))
        + t2_row(40, 5, 10, t2_values(3, "c"))
        + discard(4, 10)
        + t2_row(40, 7, 10, t2_values(4, "d"))
        + commit(8, 10)
    )
    events = read_all(data, T2_TABLES, T2_KEYS)
    assert [(e.order, e.new_value) for e in events] == [((8, 3), "a"), ((8, 7), "d")]


def test_stream_ending_inside_a_transaction_emits_nothing_of_it(caplog) -> None:
    data = (
        T2 + begin(1, 10) + begin(2, 11)
        + t2_row(40, 3, 10, t2_values(1, "a"))
        + t2_row(40, 4, 11, t2_values(2, "b"))
        + commit(5, 11)
        + t2_row(40, 6, 10, t2_values(3, "c"))
    )
    with caplog.at_level(logging.WARNING):
        assert [e.new_value for e in read_all(data, T2_TABLES, T2_KEYS)] == ["b"]
    assert "txid 10" in caplog.text


def test_update_gives_changed_columns_and_a_key_change_deletes_and_adds() -> None:
    before = {"k": 1, "i": 5, "s": None, "d": date(2024, 2, 29), "v": "x"}
    after = {"k": 1, "i": None, "s": 3, "d": date(2024, 2, 29), "v": "x"}
    moved = {**after, "k": 2}
    data = (
        T2 + begin(1, 10)
        + t2_row(42, 2, 10, before) + t2_row(43, 3, 10, after)
        + t2_row(42, 4, 10, after) + t2_row(43, 5, 10, moved)
        + commit(6, 10)
    )
    key1, key2 = (("k", "1"),), (("k", "2"),)
    assert read_all(data, T2_TABLES, T2_KEYS) == [
        ChangeEvent((6, 2), "t2", key1, EventType.UPDATE_FIELD, "i", "5", None),
        ChangeEvent((6, 2), "t2", key1, EventType.UPDATE_FIELD, "s", None, "3"),
        ChangeEvent((6, 4), "t2", key1, EventType.DELETE_ROW),
        ChangeEvent((6, 4), "t2", key2, EventType.INSERT_FIELD, "s", None, "3"),
        ChangeEvent((6, 4), "t2", key2, EventType.INSERT_FIELD, "d", None, "2024-02-29"),
        ChangeEvent((6, 4), "t2", key2, EventType.INSERT_FIELD, "v", None, "x"),
    ]


def test_update_before_image_without_after_image() -> None:
    data = T2 + begin(1, 10) + t2_row(42, 2, 10, t2_values(1, "a")) + commit(3, 10)
    at = len(T2) + len(begin(1, 10))
    with pytest.raises(CdcStreamError, match=f"UPDBEF is not followed by its UPDAFT.*byte {at}"):
        read_all(data, T2_TABLES, T2_KEYS)


ROW_SIZE = len(t2_row(40, 3, 10, t2_values(1, "a")))  # the same for every one-letter v
BEGIN_SIZE = len(begin(1, 10))


def test_open_transactions_hold_a_bounded_size() -> None:
    """Room for two BEGINTX and three rows: the fourth row held refuses the stream, naming
    its transaction and byte; a commit, a rollback and a DISCARD free what they drop."""
    room = 2 * BEGIN_SIZE + 3 * ROW_SIZE
    held = T2 + begin(1, 10) + begin(2, 11) + b"".join(
        t2_row(40, 3 + n, 10 + n % 2, t2_values(n, "a")) for n in range(3)
    )
    over = t2_row(40, 9, 11, t2_values(9, "a"))
    with pytest.raises(CdcStreamError, match=(
        rf"open transactions would hold {room + ROW_SIZE} bytes of records with this one, "
        rf"more than the {room} a reader holds until their commit \(transaction 11\) "
        rf"\(record at byte {len(held)}\)"
    )):
        list(read_changes(io.BytesIO(held + over), T2_TABLES, T2_KEYS, max_buffered_bytes=room))
    freed = (
        held + discard(4, 11) + over  # drops row 1, of transaction 11
        + commit(20, 11) + rollback(21, 10)  # everything
        + begin(22, 12) + b"".join(t2_row(40, 23 + n, 12, t2_values(n, "b")) for n in range(3))
        + commit(30, 12)
    )
    events = list(read_changes(io.BytesIO(freed), T2_TABLES, T2_KEYS, max_buffered_bytes=room))
    assert [e.key[0][1] for e in events] == ["9", "0", "1", "2"]


# --- round trip -----------------------------------------------------------------------

T2_ROWS = st.fixed_dictionaries(
    {
        "k": st.integers(0, 5),
        "i": st.none() | st.integers(-(2**31) + 1, 2**31 - 1),
        "s": st.none() | st.integers(-(2**15) + 1, 2**15 - 1),
        "d": st.none() | st.dates(),
        "v": st.text(max_size=8) | st.sampled_from(["", "é", "漢字", "\U0001f600"]),
    }
)
OPERATIONS = st.one_of(
    st.tuples(st.just("insert"), T2_ROWS),
    st.tuples(st.just("delete"), T2_ROWS),
    st.builds(
        lambda before, after, same_key: (
            "update", before, {**after, "k": before["k"]} if same_key else after
        ),
        T2_ROWS, T2_ROWS, st.booleans(),
    ),
)
TRANSACTIONS = st.lists(
    st.tuples(st.lists(OPERATIONS, max_size=4), st.sampled_from(["commit", "rollback", "open"])),
    max_size=5,
)


def encode(transactions: list, schedule: list[int]) -> tuple[bytes, list[ChangeEvent]]:
    """The stream of these transactions interleaved as ``schedule`` says (a transaction
    index per step), and the events a reader must give for it."""
    steps = []  # per transaction: what each of its turns writes
    for operations, outcome in transactions:
        turns: list = [("begin",)]
        for op in operations:
            if op[0] == "update":
                turns += [("row", 42, op[1], op), ("row", 43, op[2], None)]
            else:
                turns.append(("row", 40 if op[0] == "insert" else 41, op[1], op))
        if outcome != "open":
            turns.append((outcome,))
        steps.append(turns)
    data, expected, seq = [T2], [], 0
    done = [0] * len(steps)
    seqs: list[list] = [[] for _ in steps]  # (record seq, operation) of each transaction
    for index in schedule:
        if done[index] == len(steps[index]):
            continue  # an open transaction's missing end
        turn = steps[index][done[index]]
        done[index] += 1
        seq += 1
        txid = 100 + index
        if turn[0] == "begin":
            data.append(begin(seq, txid))
        elif turn[0] == "row":
            data.append(t2_row(turn[1], seq, txid, turn[2]))
            if turn[3] is not None:
                seqs[index].append((seq, turn[3]))
        elif turn[0] == "rollback":
            data.append(rollback(seq, txid))
        else:
            data.append(commit(seq, txid))
            for record_seq, op in seqs[index]:
                expected += t2_expected((seq, record_seq), op)
    return b"".join(data), expected


@st.composite
def streams(draw) -> tuple[bytes, list[ChangeEvent]]:
    transactions = draw(TRANSACTIONS)
    # Enough turns for each transaction's records; the ones left over are skipped.
    turns = [
        index
        for index, (operations, _) in enumerate(transactions)
        for _ in range(2 + 2 * len(operations))
    ]
    return encode(transactions, draw(st.permutations(turns)))


@settings(max_examples=150, deadline=None)
@given(streams(), st.data())
def test_round_trip(stream: tuple[bytes, list[ChangeEvent]], data) -> None:
    encoded, expected = stream
    assert read_all(encoded, T2_TABLES, T2_KEYS) == expected
    cuts = sorted(data.draw(st.lists(st.integers(0, len(encoded)), max_size=12)))
    chunks = [encoded[a:b] for a, b in zip([0, *cuts], [*cuts, len(encoded)])]
    assert feed_all(chunks, T2_TABLES, T2_KEYS) == expected
