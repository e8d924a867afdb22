"""Qlik change tables: seed 000's examples and mask rules, CSV and Parquet files with their
.dfm, database polling with a durable position (SQLite, PostgreSQL, MariaDB), bad input,
and round trips through a test encoder (files and database)."""

from __future__ import annotations

import base64
import csv
import json
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from publisher.errors import ConfigError, SourceInputError
from publisher.model.events import EventType
from publisher.source.cdc.qlik_ct import (
    ChangeTable,
    ChangeTableDatabase,
    PositionStore,
    change_events,
    read_database,
    read_files,
)
from publisher.source.cdc.qlik_mask import ByteOrder
from tests.conftest import server_url

I, U, R, D = (EventType.INSERT_FIELD, EventType.UPDATE_FIELD,
              EventType.UPDATE_FIELD_REMOVE_ALL, EventType.DELETE_ROW)
PREFIX = "header__"
# Seed 000's example: five header columns take bits 0..4, the first data column is bit 5.
HEADERS = ("change_seq", "change_oper", "change_mask", "stream_position", "operation")
OPERATION = {"I": "INSERT", "U": "UPDATE", "D": "DELETE", "B": "BEFOREIMAGE"}
USR = ("id", "fname", "lname", "photo")  # id bit 5, fname 6, lname 7, photo 8


def seq(number: int, time: str = "2017031312300000") -> str:
    """A change_seq: YYYYMMDDHHmmSShh and a 19-digit change number."""
    return time + f"{number:019d}"


def mask(
    columns: Sequence[str], *marked: str, order: ByteOrder = "little", pad: int = 0,
    headers: int = len(HEADERS),
) -> bytes:
    """The mask marking ``marked``; as short as it goes, plus ``pad`` zero bytes (at the
    end little-endian, in front big-endian)."""
    value = sum(1 << (headers + columns.index(name)) for name in marked)
    return value.to_bytes((value.bit_length() + 7) // 8 + pad, order)


def simplify(events) -> list[tuple]:
    return [
        (e.table_name, e.table_key, e.event_type, e.column_name, e.old_value, e.new_value)
        for e in events
    ]


# --- files ----------------------------------------------------------------------------


def write_dfm(
    path: Path, table: str, columns: Sequence[str], keys: Sequence[str] = ("id",),
    headers: Sequence[str] = HEADERS, types: dict[str, str] | None = None,
    options: dict | None = None,
) -> None:
    """A .dfm in the layout Qlik's file target writes (dataInfo.columns with ordinal, name,
    type, length, precision, scale, primaryKeyPos)."""
    names = [PREFIX + h for h in headers] + list(columns)
    described = [
        {
            "ordinal": ordinal, "name": name, "type": (types or {}).get(name, "STRING"),
            "length": 100, "precision": 0, "scale": 0,
            "primaryKeyPos": keys.index(name) + 1 if name in keys else 0,
        }
        for ordinal, name in enumerate(names, start=1)
    ]
    document = {
        "dfmVersion": "1.1",
        "fileInfo": {"name": path.stem, "extension": path.suffix[1:], "content": "changes"},
        "formatInfo": {"format": "delimited", "options": options or {
            "fieldDelimiter": ",", "recordDelimiter": "\n", "nullValue": "",
            "quoteChar": "\"", "escapeChar": "",
        }},
        "dataInfo": {
            "sourceSchema": "idm", "sourceTable": table, "targetSchema": "idm",
            "targetTable": table + "__ct", "tableVersion": 1, "columns": described,
        },
    }
    path.with_suffix(".dfm").write_text(json.dumps(document, indent=4))


def ct_row(number: int, oper: str, change_mask: str | bytes | None, *values) -> list:
    """A change-table row with HEADERS: change_seq, change_oper, change_mask,
    stream_position, operation, then the data values."""
    return [seq(number), oper, change_mask, f"pos{number}", OPERATION.get(oper, oper), *values]


def write_csv(path: Path, rows: Sequence[Sequence], names: Sequence[str] | None = None,
              delimiter: str = ",") -> Path:
    """Rows as Qlik's file target writes them: NULL as an empty field, binary as hex."""
    with path.open("w", newline="", encoding="utf-8") as stream:
        writer = csv.writer(stream, delimiter=delimiter, lineterminator="\n")
        if names is not None:
            writer.writerow(names)
        for row in rows:
            writer.writerow(
                ["" if v is None else v.hex().upper() if isinstance(v, bytes) else v for v in row]
            )
    return path


def write_parquet(path: Path, rows: Sequence[Sequence], names: Sequence[str],
                  types: dict[str, pa.DataType]) -> Path:
    columns = {
        name: pa.array([row[i] for row in rows], type=types.get(name, pa.string()))
        for i, name in enumerate(names)
    }
    pq.write_table(pa.table(columns), path)
    return path


def landed(tmp_path: Path, rows: Sequence[Sequence], table: str = "usr",
           columns: Sequence[str] = USR, fmt: str = "csv", file: str | None = None,
           **dfm) -> Path:
    """One change-table file with its .dfm, in the folder Qlik gives each table."""
    folder = tmp_path / f"{table}__ct"
    folder.mkdir(exist_ok=True)
    path = folder / f"{file or '20170313-123000000'}.{fmt}"
    write_dfm(path, table, columns, types={"photo": "BYTES"} if "photo" in columns else None,
              **dfm)
    names = [PREFIX + h for h in dfm.get("headers", HEADERS)] + list(columns)
    if fmt == "csv":
        return write_csv(path, rows)
    return write_parquet(path, rows, names, {"photo": pa.binary()})


def hexed(*marked: str, columns: Sequence[str] = USR, order: ByteOrder = "little",
          pad: int = 0) -> str:
    return mask(columns, *marked, order=order, pad=pad).hex().upper()


SEED_ROWS = [
    ct_row(1000, "I", hexed("id", "fname", "lname"), "1", "Jack", "Frost", None),
    # Seed 000: the before image carries its update's change number (1001, not 1000).
    ct_row(1001, "B", "", "1", "Jack", "Frost", None),
    ct_row(1001, "U", hexed("fname"), "1", "John", "Frost", None),
    ct_row(1002, "U", hexed("lname"), "1", "John", "Doe", None),
    ct_row(1003, "D", hexed("id"), "1", "John", "Doe", None),
]
SEED_EVENTS = [
    ("usr", "id=1", I, "fname", None, "Jack"),
    ("usr", "id=1", I, "lname", None, "Frost"),
    ("usr", "id=1", U, "fname", "Jack", "John"),
    ("usr", "id=1", R, "lname", None, "Doe"),
    ("usr", "id=1", D, None, None, None),
]


def test_seed_000_insert_update_with_and_without_before_image_delete(tmp_path) -> None:
    events = read_files(landed(tmp_path, SEED_ROWS))
    assert simplify(events) == SEED_EVENTS
    assert [e.order[0] for e in events] == [seq(n) for n in (1000, 1000, 1001, 1002, 1003)]


def test_before_image_pairs_by_change_seq_wherever_it_stands(tmp_path) -> None:
    rows = [SEED_ROWS[2], SEED_ROWS[4], SEED_ROWS[0], SEED_ROWS[3], SEED_ROWS[1]]
    landed(tmp_path, rows[:3], file="a")
    landed(tmp_path, rows[3:], file="b")  # B and U in two files of the table
    assert simplify(read_files(tmp_path)) == SEED_EVENTS


def test_parquet_with_binary_masks_and_values(tmp_path) -> None:
    rows = [
        ct_row(1, "I", mask(USR, "id", "fname", "photo"), "7", "Ann", None, b"\xaa\xaa"),
        ct_row(2, "B", None, "7", "Ann", None, b"\xaa\xaa"),
        ct_row(3, "D", mask(USR, "id"), "8", None, None, None),
        ct_row(2, "U", mask(USR, "photo"), "7", "Ann", None, b"\xbb\xbb"),
    ]
    path = landed(tmp_path, rows, fmt="parquet")
    landed(tmp_path, [], fmt="parquet", file="empty")
    names = [PREFIX + h for h in HEADERS] + list(USR)
    write_parquet(path, rows, names, {PREFIX + "change_mask": pa.binary(), "photo": pa.binary()})
    assert simplify(read_files(tmp_path)) == [
        ("usr", "id=7", I, "fname", None, "Ann"),
        ("usr", "id=7", I, "photo", None, "qqo="),
        ("usr", "id=7", U, "photo", "qqo=", "u7s="),
        ("usr", "id=8", D, None, None, None),
    ]


def test_csv_binary_is_hex_and_published_as_base64(tmp_path) -> None:
    rows = [ct_row(1, "I", hexed("id", "photo"), "1", None, None, bytes(range(5)))]
    events = read_files(landed(tmp_path, rows))
    assert [e.new_value for e in events] == [base64.b64encode(bytes(range(5))).decode()]


def test_parquet_typed_values_as_text(tmp_path) -> None:
    import datetime as dt
    import decimal

    columns = ("id", "n", "ok", "price", "at")
    rows = [ct_row(1, "I", hexed(*columns, columns=columns), 5, 12, True,
                   decimal.Decimal("1.50"), dt.datetime(2017, 3, 13, 12, 30))]
    path = landed(tmp_path, [], columns=columns, fmt="parquet")
    names = [PREFIX + h for h in HEADERS] + list(columns)
    write_parquet(path, rows, names, {
        "id": pa.int64(), "n": pa.int32(), "ok": pa.bool_(), "price": pa.decimal128(5, 2),
        "at": pa.timestamp("s"),
    })
    assert [(e.table_key, e.new_value) for e in read_files(path)] == [
        ("id=5", "12"), ("id=5", "true"), ("id=5", "1.50"), ("id=5", "2017-03-13 12:30:00"),
    ]


def test_events_of_several_tables_merge_in_change_seq_order(tmp_path) -> None:
    landed(tmp_path, [ct_row(1, "I", hexed("id", "fname"), "1", "Ann", None, None),
                      ct_row(4, "D", hexed("id"), "1", None, None, None)])
    grp = ("gid", "name")
    landed(tmp_path, [ct_row(2, "I", hexed("gid", "name", columns=grp), "g", "Staff"),
                      ct_row(3, "D", hexed("gid", columns=grp), "g", None)],
           table="grp", columns=grp, keys=("gid",), fmt="parquet")
    assert [(e.order[0][-1], e.table_name, e.event_type) for e in read_files(tmp_path)] == [
        ("1", "usr", I), ("2", "grp", I), ("3", "grp", D), ("4", "usr", D),
    ]


def test_composite_key_in_primary_key_position_order(tmp_path) -> None:
    columns = ("a", "b", "v")
    rows = [ct_row(1, "I", hexed("a", "b", "v", columns=columns), "x", "y", "1")]
    events = read_files(landed(tmp_path, rows, columns=columns, keys=("b", "a")))
    assert [e.key for e in events] == [(("b", "y"), ("a", "x"))]


def test_keys_from_configuration_override_the_dfm(tmp_path) -> None:
    rows = [ct_row(1, "I", hexed("id", "fname", "lname"), "1", "Ann", "Lee", None)]
    events = read_files(landed(tmp_path, rows), keys={"usr": ["fname"]})
    assert simplify(events) == [
        ("usr", "fname=Ann", I, "id", None, "1"), ("usr", "fname=Ann", I, "lname", None, "Lee"),
    ]


def test_table_without_keys_is_a_config_error(tmp_path) -> None:
    with pytest.raises(ConfigError, match="table 'usr' has no key columns"):
        read_files(landed(tmp_path, SEED_ROWS, keys=()))
    with pytest.raises(ConfigError, match=r"key column\(s\) \['nope'\]"):
        read_files(tmp_path, keys={"usr": ["nope"]})


def test_header_line_delimiter_quotes_and_null_value_from_the_dfm(tmp_path) -> None:
    options = {"fieldDelimiter": ";", "recordDelimiter": "\n", "nullValue": "NULL",
               "quoteChar": "'", "escapeChar": ""}
    path = landed(tmp_path, [], options=options)
    names = [PREFIX + h for h in HEADERS] + list(USR)
    text = ";".join(names) + "\n" + ";".join(
        [seq(1), "I", hexed("id", "fname", "lname"), "p", "INSERT", "1", "'a;b\nc'", "", "NULL"]
    ) + "\n"
    path.write_text(text)
    assert simplify(read_files(path)) == [
        ("usr", "id=1", I, "fname", None, "a;b\nc"), ("usr", "id=1", I, "lname", None, ""),
    ]


def test_other_header_prefix_and_no_change_mask_column(tmp_path) -> None:
    # The public .dfm sample has change_seq, change_oper and timestamp only: without a mask,
    # an insert sets every column and an update the ones that differ from its before image.
    headers = ("change_seq", "change_oper", "timestamp")
    rows = [
        [seq(1), "I", "t", "1", "Ann", None, None],
        [seq(2), "B", "t", "1", "Ann", None, None],
        [seq(2), "U", "t", "1", "Ann", "Lee", None],
        [seq(3), "U", "t", "1", "Bo", "Lee", None],
    ]
    folder = tmp_path / "usr__ct"
    folder.mkdir()
    path = folder / "x.csv"
    write_dfm(path, "usr", USR, headers=[])  # the header columns are added below
    document = json.loads(path.with_suffix(".dfm").read_text())
    document["dataInfo"]["columns"] = (
        [{"name": "hdr_" + h, "type": "STRING", "primaryKeyPos": 0} for h in headers]
        + document["dataInfo"]["columns"]
    )
    path.with_suffix(".dfm").write_text(json.dumps(document))
    write_csv(path, rows)
    assert simplify(read_files(path, header_prefix="hdr_")) == [
        ("usr", "id=1", I, "fname", None, "Ann"),
        ("usr", "id=1", U, "lname", None, "Lee"),
        ("usr", "id=1", R, "fname", None, "Bo"),
        ("usr", "id=1", R, "lname", None, "Lee"),
        ("usr", "id=1", R, "photo", None, None),
    ]
    with pytest.raises(ConfigError, match=r"no column\(s\) \['header__change_seq'"):
        read_files(path)


# --- mask rules (seed 000) and the byte-order evidence rule ---------------------------


def rows_of(*records: list, columns: Sequence[str] = USR, keys=("id",), headers=HEADERS):
    table = ChangeTable.from_columns(
        "usr", [PREFIX + h for h in headers] + list(columns), keys, PREFIX, "usr__ct"
    )
    return [table.row(record, f"row {n}") for n, record in enumerate(records, start=1)]


def test_first_data_column_is_the_bit_after_the_headers() -> None:
    events = change_events(rows_of(ct_row(1, "I", bytes([0b0010_0000 | 0b1_1111]), "1", "x",
                                          "y", None)))
    assert events == []  # bit 5 is the key; header bits 0..4 are no columns
    events = change_events(rows_of(ct_row(1, "I", bytes([0b0100_0000]), "1", "x", "y", None)))
    assert [e.column_name for e in events] == ["fname"]
    one_header = rows_of([seq(1), "I", "1", "x", "y", None],
                         headers=("change_seq", "change_oper"))  # no mask column
    assert [e.column_name for e in change_events(one_header)] == ["fname", "lname"]


def test_byte_0_holds_bits_0_to_7_and_trailing_zero_bytes_may_be_absent() -> None:
    # photo is bit 8: bit 0 of byte 1.
    for change_mask in (bytes([0, 1]), bytes([0, 1, 0, 0])):
        events = change_events(rows_of(ct_row(1, "I", change_mask, "1", "x", "y", b"\x01")))
        assert [e.column_name for e in events] == ["photo"]
    short, full = bytes([0x40]), bytes([0x40, 0, 0])
    for change_mask in (short, full, "40", "400000"):
        events = change_events(rows_of(ct_row(1, "I", change_mask, "1", "x", "y", None)))
        assert [e.column_name for e in events] == ["fname"]


def test_empty_or_null_masks_mark_nothing() -> None:
    for change_mask in (b"", None, ""):
        assert change_events(rows_of(ct_row(1, "U", change_mask, "1", "x", "y", None))) == []


def test_update_changing_the_key_deletes_and_adds() -> None:
    events = change_events(rows_of(
        ct_row(5, "B", b"", "1", "Ann", None, None),
        ct_row(5, "U", mask(USR, "id"), "2", "Ann", None, None),
    ))
    assert simplify(events) == [
        ("usr", "id=1", D, None, None, None), ("usr", "id=2", I, "fname", None, "Ann"),
    ]


WIDE = tuple(f"c{i}" for i in range(20))  # 25 bits: two-byte masks fit in both orders


def test_delete_rows_decide_the_byte_order_of_hex_masks(tmp_path) -> None:
    # c1 and c4 are bits 6 and 9: "4002" little-endian, "0240" big-endian; read in the
    # other order each is bits 1 and 14 (c9). The DELETE row marks the key c3 (bit 8).
    for order in ("little", "big"):
        rows = [ct_row(1, "I", hexed("c1", "c4", columns=WIDE, order=order), *range(20)),
                ct_row(2, "D", hexed("c3", columns=WIDE, order=order), *range(20))]
        path = landed(tmp_path, rows, columns=WIDE, keys=("c3",), file=order)
        assert [e.column_name for e in read_files(path)] == ["c1", "c4", None]


def test_undecided_masks_that_read_alike_are_accepted(tmp_path) -> None:
    rows = [ct_row(1, "I", "60", "1", "a", "b", None)]  # one byte: the same both ways
    assert [e.column_name for e in read_files(landed(tmp_path, rows))] == ["fname"]


def test_masks_that_fit_the_table_in_one_order_only_decide_it(tmp_path) -> None:
    # "4001": little-endian bits 6 and 8; big-endian bits 0 and 14, beyond the 9 columns.
    rows = [ct_row(1, "I", "4001", "1", "a", "b", b"\x01")]
    assert [e.column_name for e in read_files(landed(tmp_path, rows))] == ["fname", "photo"]


def test_undecided_masks_that_read_differently_are_an_error(tmp_path) -> None:
    rows = [ct_row(1, "I", "4001", *range(20))]  # both readings fit WIDE
    path = landed(tmp_path, rows, columns=WIDE, keys=("c0",))
    with pytest.raises(SourceInputError, match="no DELETE row of table 'usr' tells") as caught:
        read_files(path)
    assert caught.value.where == f"{path} line 1"
    assert [e.column_name for e in read_files(path, byte_order="little")] == ["c1", "c3"]
    assert [e.column_name for e in read_files(path, byte_order="big")] == ["c9"]
    # A DELETE row that marks c0 in only one order decides it: "2000" is bit 5 little-endian.
    write_csv(path, [*rows, ct_row(2, "D", "2000", *range(20))])
    assert [e.column_name for e in read_files(path)][:2] == ["c1", "c3"]


def test_delete_rows_that_fit_no_order_name_the_row(tmp_path) -> None:
    rows = [
        ct_row(1, "D", hexed("photo", order="little"), "1", None, None, None),
        ct_row(2, "D", hexed("photo", order="big"), "2", None, None, None),
    ]
    path = landed(tmp_path, rows, keys=("photo",))
    with pytest.raises(SourceInputError, match="no byte order makes every DELETE row") as caught:
        read_files(path)
    assert caught.value.where == f"{path} line 2"


def test_mask_longer_than_the_table_names_its_row(tmp_path) -> None:
    rows = [ct_row(1, "I", "60", "1", "a", None, None), ct_row(2, "I", "600004", "2", "a",
                                                                None, None)]
    path = landed(tmp_path, rows)
    with pytest.raises(SourceInputError, match="beyond the last column of table 'usr'") as caught:
        read_files(path)
    assert caught.value.where == f"{path} line 2"
    binary = rows_of(ct_row(9, "I", bytes([0x60, 0x02]), "1", "a", None, None))
    with pytest.raises(SourceInputError, match="sets bit 9") as caught:
        change_events(binary)
    assert caught.value.where == "row 1"


# --- bad input ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "rows, line, pattern",
    [
        ([SEED_ROWS[0], ct_row(5, "X", "", "1", None, None, None)], 2,
         "change_oper 'X' is none of I, U, D, B"),
        ([SEED_ROWS[0], SEED_ROWS[1]], 2, r"before image \(B\) without its update"),
        ([ct_row(1, "I", hexed("id", "fname"), None, "a", None, None)], 1,
         "key column 'id' of 'usr' is NULL"),
        ([SEED_ROWS[0], ct_row(1000, "D", hexed("id"), "1", None, None, None)], 2,
         "change_seq .* already has a I row"),
        ([SEED_ROWS[1], SEED_ROWS[2], SEED_ROWS[2]], 3, "already has a B/U row"),
        ([["2017", "I", "", "p", "INSERT", "1", None, None, None]], 1, "'2017' is not 35 digits"),
        ([ct_row(1, "I", "6G", "1", None, None, None)], 1, "'6G' is not hex text"),
        ([ct_row(1, "I", "60", "1", None, None, "zz")], 1, "binary column 'photo' holds 'zz'"),
        ([ct_row(1, "I", "60", "1", None, None)], 1, "8 fields, but the .dfm lists 9"),
        ([ct_row(1, "U", hexed("id"), "2", None, None, None)], 1,
         r"changes key column\(s\) \['id'\] but has no before image"),
    ],
)
def test_bad_rows_name_the_file_and_line(tmp_path, rows, line, pattern) -> None:
    path = landed(tmp_path, rows)
    with pytest.raises(SourceInputError, match=pattern) as caught:
        read_files(tmp_path)
    assert caught.value.where == f"{path} line {line}"
    assert str(caught.value).endswith(f"({path} line {line})")


def test_bad_files(tmp_path) -> None:
    path = landed(tmp_path, SEED_ROWS)
    path.with_suffix(".dfm").unlink()
    with pytest.raises(SourceInputError, match="no .dfm metadata file") as caught:
        read_files(tmp_path)
    assert caught.value.where == str(path)
    path.with_suffix(".dfm").write_text("{not json")
    with pytest.raises(SourceInputError, match="not JSON"):
        read_files(tmp_path)
    path.with_suffix(".dfm").write_text('{"dataInfo": {"sourceTable": "usr", "columns": 3}}')
    with pytest.raises(SourceInputError, match="columns must be a JSON list, not 3"):
        read_files(tmp_path)
    with pytest.raises(ConfigError, match="not a directory, nor a .csv or .parquet file"):
        read_files([tmp_path / "missing.csv"])
    parquet = landed(tmp_path, [], fmt="parquet", file="p")
    parquet.write_bytes(b"not parquet")
    with pytest.raises(SourceInputError, match="cannot read Parquet") as caught:
        read_files(parquet)
    assert caught.value.where == str(parquet)


def test_csv_fields_longer_than_the_csv_modules_default(tmp_path) -> None:
    """csv's own limit is 128 KiB a field; a field may be as long as a record."""
    long = "x" * (1 << 20)
    rows = [ct_row(1, "I", hexed("id", "fname"), "1", long, None, None)]
    assert [e.new_value for e in read_files(landed(tmp_path, rows))] == [long]


def test_csv_field_longer_than_a_record(tmp_path) -> None:
    path = landed(tmp_path, [SEED_ROWS[0]])
    with path.open("a") as stream:  # the field as it is, faster than csv writes it
        stream.write(f"{seq(2)},I,,p,INSERT,1,{'x' * (64 * 1024 * 1024 + 1)},,\n")
    with pytest.raises(SourceInputError, match=r"CSV: field larger than field limit "
                       r"\(67108864\)") as caught:
        read_files(tmp_path)
    assert caught.value.where == f"{path} line 2"


def test_files_read_hold_a_bounded_size(tmp_path) -> None:
    """CSV files count their bytes, Parquet files their values; the file or row that would
    take what is held past the bound is named, before anything is published."""
    first = landed(tmp_path, SEED_ROWS[:3], file="a")
    second = landed(tmp_path, SEED_ROWS[3:], file="b")
    room = first.stat().st_size + second.stat().st_size
    assert simplify(read_files(tmp_path, max_buffered_bytes=room)) == SEED_EVENTS
    with pytest.raises(SourceInputError, match=(
        rf"the files read would hold {room} bytes with this one, more than the {room - 1} "
        r"read before publishing"
    )) as caught:
        read_files(tmp_path, max_buffered_bytes=room - 1)
    assert caught.value.where == str(second)
    parquet_folder = tmp_path / "parquet"
    parquet_folder.mkdir()
    parquet = landed(parquet_folder, SEED_ROWS, fmt="parquet")
    row_sizes = [
        sum(len(v) if isinstance(v, str) else 8 for v in row) for row in SEED_ROWS
    ]  # masks, texts and NULLs (8 each) as Parquet gives them
    with pytest.raises(SourceInputError, match="more than the") as caught:
        read_files(parquet_folder, max_buffered_bytes=sum(row_sizes[:3]))
    assert caught.value.where == f"{parquet} row 4"
    assert len(read_files(parquet_folder, max_buffered_bytes=sum(row_sizes))) == 5


@pytest.mark.parametrize(
    ("dfm", "pattern"),
    [
        (lambda doc: doc["dataInfo"]["columns"][6].update(name="fn\x01ame"),
         r"column name 'fn\\x01ame' has a character XML 1.0 cannot carry at position 3"),
        (lambda doc: doc["dataInfo"]["columns"][7].update(name="l\ud800name"),
         r"column name 'l\\ud800name' has a character XML 1.0 cannot carry at position 2"),
        (lambda doc: doc["dataInfo"].update(sourceTable="u\x1bsr"),
         r"sourceTable 'u\\x1bsr' has a character XML 1.0 cannot carry at position 2"),
        (lambda doc: doc["formatInfo"]["options"].update(fieldDelimiter=",,"),
         r"formatInfo.options: \"delimiter\" must be a 1-character string"),
        (lambda doc: doc["formatInfo"]["options"].update(quoteChar=5),
         r"formatInfo.options: .*quotechar"),
        (lambda doc: doc["dataInfo"].update(sourceTable=["a" * 1000]),
         r"sourceTable must be a JSON str, not \['aaaa.*\.\.\.$"),
    ],
    ids=["control-column", "surrogate-column", "escape-table", "delimiter", "quote",
         "long-value"],
)
def test_dfm_that_cannot_be_read(tmp_path, dfm, pattern) -> None:
    path = landed(tmp_path, SEED_ROWS)
    document = json.loads(path.with_suffix(".dfm").read_text())
    dfm(document)
    path.with_suffix(".dfm").write_text(json.dumps(document))
    with pytest.raises(SourceInputError, match=pattern.removesuffix("$")) as caught:
        read_files(tmp_path)
    assert caught.value.where == str(path.with_suffix(".dfm"))
    if pattern.endswith("$"):  # bounded: 200 characters of the value shown
        assert len(str(caught.value)) < 300 + len(caught.value.where)


def test_dfm_nested_too_deep_or_too_long(tmp_path) -> None:
    path = landed(tmp_path, SEED_ROWS)
    dfm = path.with_suffix(".dfm")
    dfm.write_text("[" * 100_000)  # Python's json raises RecursionError
    with pytest.raises(SourceInputError, match="not JSON: nested too deep") as caught:
        read_files(tmp_path)
    assert caught.value.where == str(dfm)
    with dfm.open("w") as stream:
        stream.truncate(64 * 1024 * 1024 + 1)  # sparse: nothing is written
    with pytest.raises(SourceInputError, match=r"a .dfm of 67108865 bytes, more than the "
                       "67108864 one may have"):
        read_files(tmp_path)


def test_parquet_value_python_cannot_record_names_its_row(tmp_path) -> None:
    columns = ("id", "born")
    rows = [ct_row(n, "I", hexed(*columns, columns=columns), str(n), n) for n in (1, 2)]
    rows[1][-1] = 2**31 - 1  # days after 1970: past year 9999
    path = landed(tmp_path, [], columns=columns, fmt="parquet")
    names = [PREFIX + h for h in HEADERS] + list(columns)
    write_parquet(path, rows, names, {"born": pa.date32()})
    with pytest.raises(SourceInputError, match="column 'born': ") as caught:
        read_files(tmp_path)
    assert caught.value.where == f"{path} row 2"


def test_nothing_is_emitted_when_any_row_is_bad(tmp_path) -> None:
    landed(tmp_path, SEED_ROWS)
    landed(tmp_path, [ct_row(2000, "B", "", "9", None, None, None)], file="z")
    with pytest.raises(SourceInputError, match="without its update"):
        read_files(tmp_path)


# --- database -------------------------------------------------------------------------

DB_HEADERS = (  # the seven default header columns: the first data column is bit 7
    ("change_seq", sa.String(35)), ("change_oper", sa.String(1)),
    ("change_mask", sa.LargeBinary()), ("stream_position", sa.String(128)),
    ("operation", sa.String(12)), ("transaction_id", sa.String(32)),
    ("timestamp", sa.DateTime()),
)


class ChangeDb:
    """Change tables in a database (a schema of their own on a server)."""

    def __init__(self, engine: sa.Engine, schema: str | None) -> None:
        self.engine, self.schema = engine, schema
        self.metadata = sa.MetaData()

    def create(self, name: str, columns: Sequence[tuple[str, sa.types.TypeEngine]]) -> sa.Table:
        table = sa.Table(
            name + "__ct", self.metadata,
            *(sa.Column(PREFIX + h, t) for h, t in DB_HEADERS),
            *(sa.Column(c, t) for c, t in columns),
            schema=self.schema,
        )
        table.create(self.engine)
        return table

    def insert(self, table: sa.Table, *rows: tuple[int, str, bytes | None, dict]) -> None:
        """Rows as (change number, change_oper, mask, data values)."""
        with self.engine.begin() as conn:
            for number, oper, change_mask, values in rows:
                conn.execute(table.insert().values(
                    **{PREFIX + "change_seq": seq(number), PREFIX + "change_oper": oper,
                       PREFIX + "change_mask": change_mask,
                       PREFIX + "stream_position": str(number),
                       PREFIX + "operation": OPERATION[oper],
                       PREFIX + "transaction_id": "0" * 32},
                    **values,
                ))


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def change_db(request, tmp_path) -> Iterator[ChangeDb]:
    if request.param == "sqlite":
        engine = sa.create_engine(f"sqlite:///{tmp_path / 'ct.db'}")
        yield ChangeDb(engine, None)
        engine.dispose()
        return
    engine = sa.create_engine(server_url(request.param))
    schema = f"xt_{uuid.uuid4().hex[:10]}"
    with engine.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    try:
        yield ChangeDb(engine, schema)
    finally:
        drop = "DROP SCHEMA {} CASCADE" if request.param == "postgresql" else "DROP DATABASE {}"
        with engine.begin() as conn:
            conn.execute(sa.text(drop.format(schema)))
        engine.dispose()


USR_DB = (("id", sa.Integer()), ("fname", sa.String(50)), ("lname", sa.String(50)),
          ("photo", sa.LargeBinary()))


def db_mask(*marked: str, columns: Sequence[str] = USR, pad: int = 0) -> bytes:
    return mask(columns, *marked, headers=len(DB_HEADERS), pad=pad)


def row(key: int, fname=None, lname=None, photo=None) -> dict:
    return {"id": key, "fname": fname, "lname": lname, "photo": photo}


def test_poll_save_then_poll_again_yields_only_the_new_rows(change_db) -> None:
    usr = change_db.create("usr", USR_DB)
    grp = change_db.create("grp", (("gid", sa.String(10)), ("name", sa.String(50))))
    keys = {"usr": ["id"], "grp": ["gid"]}
    change_db.insert(usr, (1, "I", db_mask("id", "fname", "photo", pad=2),
                           row(1, "Ann", None, b"\xaa\xaa")))
    change_db.insert(grp, (2, "I", mask(("gid", "name"), "gid", "name", headers=7),
                           {"gid": "g", "name": "Staff"}))
    store = PositionStore(change_db.engine, "task1", schema=change_db.schema)
    source = ChangeTableDatabase(change_db.engine, keys, schema=change_db.schema)
    assert store.load() is None

    first = source.read(store.load())
    assert simplify(first.events) == [
        ("usr", "id=1", I, "fname", None, "Ann"), ("usr", "id=1", I, "photo", None, "qqo="),
        ("grp", "gid=g", I, "name", None, "Staff"),
    ]
    assert first.position == seq(2)
    store.save(first.position)

    change_db.insert(usr, (4, "U", db_mask("lname"), row(1, "Ann", "Lee")),
                     (4, "B", b"", row(1, "Ann", None, b"\xaa\xaa")),
                     (5, "D", db_mask("id"), row(1)))
    change_db.insert(grp, (3, "U", mask(("gid", "name"), "name", headers=7),
                           {"gid": "g", "name": "Staff2"}))
    again = PositionStore(change_db.engine, "task1", schema=change_db.schema)  # a restart
    second = read_database(change_db.engine, keys, again.load(), schema=change_db.schema)
    assert simplify(second.events) == [
        ("grp", "gid=g", R, "name", None, "Staff2"),
        ("usr", "id=1", U, "lname", None, "Lee"),
        ("usr", "id=1", D, None, None, None),
    ]
    again.save(second.position)
    again.save(second.position)  # the same position twice (MariaDB counts no change)
    assert store.load() == seq(5)
    nothing = source.read(store.load())
    assert nothing.events == [] and nothing.position == seq(5)
    assert PositionStore(change_db.engine, "task2", schema=change_db.schema).load() is None


def test_not_saving_replays_the_batch(change_db) -> None:
    usr = change_db.create("usr", USR_DB)
    change_db.insert(usr, (1, "I", db_mask("id", "fname"), row(1, "Ann")))
    store = PositionStore(change_db.engine, "t", schema=change_db.schema)
    source = ChangeTableDatabase(change_db.engine, {"usr": ["id"]}, schema=change_db.schema)
    batch = source.read(store.load())
    # Delivery failed, nothing saved: the next poll reads the same changes again.
    assert source.read(store.load()) == batch and len(batch.events) == 1


def test_limit_never_splits_a_before_image_from_its_update(change_db) -> None:
    usr = change_db.create("usr", USR_DB)
    change_db.insert(
        usr,
        (1, "I", db_mask("id", "fname"), row(1, "a")),
        (2, "B", None, row(1, "a")),
        (2, "U", db_mask("fname"), row(1, "b")),
        (3, "B", None, row(1, "b")),
        (3, "U", db_mask("fname"), row(1, "c")),
    )
    source = ChangeTableDatabase(change_db.engine, {"usr": ["id"]}, schema=change_db.schema)
    positions, events = [None], []
    while True:
        batch = source.read(positions[-1], limit=1)
        if batch.position == positions[-1]:
            break
        positions.append(batch.position)
        events += batch.events
    assert positions[1:] == [seq(1), seq(2), seq(3)]
    assert [(e.event_type, e.old_value, e.new_value) for e in events] == [
        (I, None, "a"), (U, "a", "b"), (U, "b", "c"),
    ]
    assert source.read(seq(1), limit=5).position == seq(3)


def test_database_errors_name_the_change_table_and_change_seq(change_db) -> None:
    usr = change_db.create("usr", USR_DB)
    change_db.insert(usr, (1, "I", db_mask("id"), row(1)), (2, "B", None, row(1)))
    with pytest.raises(SourceInputError, match="without its update") as caught:
        read_database(change_db.engine, {"usr": ["id"]}, None, schema=change_db.schema)
    assert caught.value.where.endswith(f"usr__ct change_seq {seq(2)}")


def test_database_configuration_errors(change_db) -> None:
    change_db.create("usr", USR_DB)
    engine, schema = change_db.engine, change_db.schema
    with pytest.raises(ConfigError, match="change table nope__ct does not exist"):
        ChangeTableDatabase(engine, {"nope": ["id"]}, schema=schema)
    with pytest.raises(ConfigError, match="has no key columns"):
        ChangeTableDatabase(engine, {"usr": []}, schema=schema)
    source = ChangeTableDatabase(engine, {"usr": ["id"]}, schema=schema)
    with pytest.raises(ConfigError, match="not a change_seq"):
        source.read("2017")
    with pytest.raises(ConfigError, match="limit 0"):
        source.read(None, limit=0)


# --- round trips through a test encoder ----------------------------------------------

# usr's key is its fourth column: with five headers, bit 8, so an unpadded DELETE mask
# ("0001" or "0100") tells the byte orders apart. grp's masks fit one byte.
TABLES = {"usr": (("a", "b", "c", "id", "photo", "d"), ("id",)), "grp": (("gid", "name"), ("gid",))}
TEXT = st.text(alphabet="ab ,\"\n\u00e9;", min_size=1, max_size=6)


@st.composite
def histories(draw: st.DrawFn) -> list[tuple]:
    """Changes over TABLES as (table, oper, key, before, after, with_before); values are
    text, bytes for photo, or None."""
    rows: dict[str, dict[str, dict]] = {name: {} for name in TABLES}
    changes = []
    for _ in range(draw(st.integers(0, 14))):
        name = draw(st.sampled_from(sorted(TABLES)))
        columns, (key,) = TABLES[name]
        current = rows[name]
        action = draw(st.sampled_from(["insert", "update", "delete"] if current else ["insert"]))
        if action == "insert":
            used = set(current)
            value = str(draw(st.integers(0, 10**6).filter(lambda v, used=used: str(v) not in used)))
            after = {c: value if c == key else draw(_values(c)) for c in columns}
            current[value] = after
            changes.append((name, "I", value, None, after, False))
            continue
        value = draw(st.sampled_from(sorted(current)))
        before = current.pop(value)
        if action == "delete":
            changes.append((name, "D", value, before, None, False))
            continue
        after = {c: v if c == key or draw(st.booleans()) else draw(_values(c))
                 for c, v in before.items()}
        current[value] = after
        changes.append((name, "U", value, before, after, draw(st.booleans())))
    return changes


def _values(column: str) -> st.SearchStrategy:
    return st.none() | (st.binary(min_size=1, max_size=4) if column == "photo" else TEXT)


def _text(value: str | bytes | None) -> str | None:
    return base64.b64encode(value).decode() if isinstance(value, bytes) else value


def expected(changes: list[tuple]) -> list[tuple]:
    """The events the reader must give for ``changes``."""
    out = []
    for name, oper, value, before, after, with_before in changes:
        columns, (key,) = TABLES[name]
        table_key = f"{key}={value}"
        if oper == "D":
            out.append((name, table_key, D, None, None, None))
            continue
        for column in columns:
            new = _text(after[column])
            if column == key:
                continue
            if oper == "I":
                if new is not None:
                    out.append((name, table_key, I, column, None, new))
            elif after[column] != before[column]:
                old = _text(before[column])
                out.append((name, table_key, U, column, old, new) if with_before
                           else (name, table_key, R, column, None, new))
    return out


def encode(changes: list[tuple], draw: st.DrawFn, mask_of) -> dict[str, list[list]]:
    """Change-table rows per table (headers, then data values), in change_seq order but
    with each before image drawn before or after its update; ``mask_of(table, columns)``
    writes a mask."""
    tables: dict[str, list[list]] = {name: [] for name in TABLES}
    number = 0
    for name, oper, _, before, after, with_before in changes:
        columns, keys = TABLES[name]
        number += draw(st.integers(1, 3))
        if oper == "I":
            marked = columns
        elif oper == "D":
            marked = keys
        else:
            marked = [c for c in columns if after[c] != before[c]]
        image = after if oper != "D" else before
        rows = [ct_row(number, oper, mask_of(name, marked), *(image[c] for c in columns))]
        if with_before:
            b = ct_row(number, "B", mask_of(name, ()), *(before[c] for c in columns))
            rows.insert(draw(st.integers(0, 1)), b)
        tables[name] += rows
    return tables


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.sampled_from(["little", "big"]), st.booleans(), st.booleans(),
       st.sampled_from(["csv", "parquet"]), st.data())
def test_round_trip_through_files(changes, order, configured, header_line, fmt, data) -> None:
    if not configured:
        # One unpadded DELETE of usr settles the byte order.
        row = {c: b"z" if c == "photo" else "z" for c in TABLES["usr"][0]} | {"id": "deciding"}
        changes = [*changes, ("usr", "I", "deciding", None, row, False),
                   ("usr", "D", "deciding", row, None, False)]

    def mask_of(name: str, marked: Sequence[str]) -> str | bytes:
        columns = TABLES[name][0]
        deciding = not configured and name == "usr" and list(marked) == ["id"]
        pad = 0 if deciding else data.draw(st.integers(0, 2))
        text = mask(columns, *marked, order=order, pad=pad).hex()
        return text.upper() if data.draw(st.booleans()) else text

    tables = encode(changes, data.draw, mask_of)
    with tempfile.TemporaryDirectory() as folder:
        for name, rows in tables.items():
            columns, keys = TABLES[name]
            split = data.draw(st.integers(0, len(rows)))
            for part, chunk in enumerate((rows[:split], rows[split:])):
                path = Path(folder) / f"{name}__ct" / f"part{part}.{fmt}"
                path.parent.mkdir(exist_ok=True)
                write_dfm(path, name, columns, keys, types={"photo": "BYTES"})
                names = [PREFIX + h for h in HEADERS] + list(columns)
                if fmt == "csv":
                    write_csv(path, chunk, names if header_line else None)
                else:
                    write_parquet(path, chunk, names, {"photo": pa.binary()})
        events = read_files(folder, byte_order=order if configured else None)
    assert simplify(events) == expected(changes)
    assert [e.order for e in events] == sorted(e.order for e in events)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(histories(), st.data())
def test_round_trip_through_a_database_polled_in_batches(changes, data) -> None:
    def mask_of(name: str, marked: Sequence[str]) -> bytes | None:
        if not marked and data.draw(st.booleans()):
            return None
        columns = TABLES[name][0]
        return mask(columns, *marked, headers=len(DB_HEADERS), pad=data.draw(st.integers(0, 2)))

    tables = encode(changes, data.draw, mask_of)
    with tempfile.TemporaryDirectory() as folder:
        engine = sa.create_engine(f"sqlite:///{folder}/ct.db")
        db = ChangeDb(engine, None)
        for name, rows in tables.items():
            columns, _ = TABLES[name]
            table = db.create(name, [(c, sa.LargeBinary() if c == "photo" else sa.Text())
                                     for c in columns])
            db.insert(table, *(
                (int(r[0][16:]), r[1], r[2], dict(zip(columns, r[len(HEADERS):]))) for r in rows
            ))
        keys = {name: list(k) for name, (_, k) in TABLES.items()}
        source = ChangeTableDatabase(engine, keys)
        store = PositionStore(engine, "prop")
        events = []
        while True:
            position = store.load()
            batch = source.read(position, limit=data.draw(st.none() | st.integers(1, 4)))
            if batch.position == position:
                break
            events += batch.events
            store.save(batch.position)
        engine.dispose()
    assert simplify(events) == expected(changes)
