"""Qlik change masks: seed 000's change-table rules, seed 001's worked checks, the byte-order
evidence rule, and encode-then-decode round trips."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from publisher.errors import ConfigError
from publisher.source.cdc.qlik_mask import (
    BYTE_ORDERS,
    ByteOrder,
    MaskError,
    change_table_columns,
    change_table_columns_from_hex,
    choose_byte_order,
    hex_mask_value,
    kafka_columns,
    kafka_ordinals,
)

HEADERS = 5  # seed 000's example: bits 0..4 are headers, the first data column is bit 5
COLUMNS = tuple(f"c{i}" for i in range(12))  # c0 is bit 5, c3 bit 8, c8 bit 13


def encode(bits: Iterable[int], order: ByteOrder, length: int | None = None) -> bytes:
    """A mask with ``bits`` set; without ``length``, as short as it goes (no zero bytes)."""
    value = sum(1 << bit for bit in bits)
    return value.to_bytes((value.bit_length() + 7) // 8 if length is None else length, order)


# Change tables (seed 000).


def test_header_bits_come_first() -> None:
    assert change_table_columns(bytes([0b0010_0000]), HEADERS, COLUMNS) == ("c0",)
    assert change_table_columns(bytes([0b0001_1111]), HEADERS, COLUMNS) == ()
    assert change_table_columns(bytes([0b0000_0001]), 0, COLUMNS) == ("c0",)


def test_bytes_are_little_endian() -> None:
    # Byte 1 holds bits 8..15: its bit 0 is bit 8, the fourth data column.
    assert change_table_columns(bytes([0x00, 0x01]), HEADERS, COLUMNS) == ("c3",)
    assert change_table_columns(bytes([0x01, 0x00]), HEADERS, COLUMNS) == ()
    assert change_table_columns(bytes([0xE0, 0xFF]), HEADERS, COLUMNS) == COLUMNS[:11]


def test_trailing_zero_bytes_may_be_absent() -> None:
    full = change_table_columns(bytes([0x60, 0x00]), HEADERS, COLUMNS)
    assert full == change_table_columns(bytes([0x60]), HEADERS, COLUMNS) == ("c0", "c1")
    assert change_table_columns(b"", HEADERS, COLUMNS) == ()  # a before image's empty mask


def test_mask_longer_than_the_table_is_an_error() -> None:
    with pytest.raises(MaskError, match="sets bit 8"):
        change_table_columns(bytes([0x20, 0x01]), HEADERS, ("a", "b", "c"))
    with pytest.raises(MaskError, match="sets bit 17"):
        change_table_columns_from_hex("020000", "big", HEADERS, COLUMNS)


def test_zero_bytes_beyond_the_table_are_fine() -> None:
    assert change_table_columns(bytes([0x20, 0, 0, 0]), HEADERS, ("a", "b", "c")) == ("a",)
    assert change_table_columns_from_hex("00000020", "big", HEADERS, ("a", "b", "c")) == ("a",)


def test_hex_text_in_either_byte_order() -> None:
    assert hex_mask_value("0001", "little") == 1 << 8
    assert hex_mask_value("0001", "big") == 1
    assert change_table_columns_from_hex("0001", "little", HEADERS, COLUMNS) == ("c3",)
    assert change_table_columns_from_hex("0100", "big", HEADERS, COLUMNS) == ("c3",)
    assert hex_mask_value("", "big") == 0


@pytest.mark.parametrize("text", ["B", "0G", "0x0B", "0B 80", "0_B", " 0B", "0B\n"])
def test_text_that_is_not_hex_bytes_is_an_error(text: str) -> None:
    with pytest.raises(MaskError) as caught:
        hex_mask_value(text, "little")
    assert repr(text) in str(caught.value)
    assert caught.value.mask == text


# The byte-order evidence rule: DELETE rows mark exactly the key columns.


def test_evidence_picks_little_endian() -> None:
    # "0001": bit 8 (c3) little-endian; big-endian only header bit 0, so no key.
    assert choose_byte_order("t", ["0001"], HEADERS, COLUMNS, ["c3"]) == "little"


def test_evidence_picks_big_endian() -> None:
    assert choose_byte_order("t", ["0100"], HEADERS, COLUMNS, ["c3"]) == "big"


def test_evidence_is_undecided_while_both_fit() -> None:
    assert choose_byte_order("t", [], HEADERS, COLUMNS, ["c3"]) is None
    # One byte reads the same both ways; "2020" is bits 5 and 13 both ways.
    assert choose_byte_order("t", ["2020"], HEADERS, COLUMNS, ["c0", "c8"]) is None
    assert choose_byte_order("t", ["20"], HEADERS, COLUMNS, ["c0"]) is None


def test_evidence_decides_once_a_row_tells_the_orders_apart() -> None:
    # A zero byte on the high end: "202000" is bits 5 and 13 little-endian but bits 13 and
    # 21 big-endian, beyond the 17 columns; "002020" the reverse.
    keys = ["c0", "c8"]
    assert choose_byte_order("t", ["2020", "202000"], HEADERS, COLUMNS, keys) == "little"
    assert choose_byte_order("t", ["2020", "002020"], HEADERS, COLUMNS, keys) == "big"


def test_header_bits_on_delete_rows_are_ignored() -> None:
    assert choose_byte_order("t", ["1F01"], HEADERS, COLUMNS, ["c3"]) == "little"
    assert choose_byte_order("t", ["0101"], HEADERS, COLUMNS, ["c3"]) is None


def test_evidence_that_fits_neither_order_is_an_error() -> None:
    # "0003": bits 8 and 9 little-endian, header bits 0 and 1 big-endian; the key is c3 only.
    with pytest.raises(MaskError) as caught:
        choose_byte_order("people__ct", ["0001", "0003"], HEADERS, COLUMNS, ["c3"])
    message = str(caught.value)
    assert "'people__ct'" in message and "DELETE row 2" in message and "'0003'" in message


def test_rows_that_each_fit_another_order_are_an_error() -> None:
    with pytest.raises(MaskError, match=r"DELETE row 2 with change mask '0100'"):
        choose_byte_order("t", ["0001", "0100"], HEADERS, COLUMNS, ["c3"])


def test_a_mask_beyond_the_table_fits_no_order() -> None:
    with pytest.raises(MaskError, match="DELETE row 1"):
        # Bits 5 and 16 little-endian, 0 and 21 big-endian: both beyond bit 6.
        choose_byte_order("t", ["200001"], HEADERS, ("a", "b"), ["a"])


def test_an_unknown_key_column_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="'t' has no key column"):
        choose_byte_order("t", [], HEADERS, COLUMNS, ["nope"])


# Kafka messages (seed 001 and docs/change-formats.md, Qlik Kafka messages).


def test_kafka_worked_checks() -> None:
    assert kafka_ordinals("0B", 10) == (1, 2, 4)
    assert kafka_ordinals("008080", 16) == (8, 16)
    assert kafka_ordinals("00FFFF", 16) == tuple(range(1, 17))
    assert kafka_ordinals("00ffff", 16) == tuple(range(1, 17))


def test_kafka_columns_by_ordinal() -> None:
    names = tuple(f"col{k}" for k in range(1, 11))
    assert kafka_columns("0B", names) == ("col1", "col2", "col4")
    assert kafka_columns("", names) == ()


def test_kafka_mask_beyond_the_table_is_an_error() -> None:
    with pytest.raises(MaskError, match=r"'0400' marks ordinal 11, beyond the table's 10"):
        kafka_ordinals("0400", 10)
    with pytest.raises(MaskError, match="'008080'"):
        kafka_ordinals("008080", 15)


def test_kafka_invalid_hex_is_an_error() -> None:
    with pytest.raises(MaskError, match="'0Z'"):
        kafka_ordinals("0Z", 10)


# Round trips: encode a random subset, decode it back.


@st.composite
def change_tables(draw: st.DrawFn) -> tuple[int, tuple[str, ...], frozenset[int], int | None]:
    """Header count, data columns, marked data-column indexes, and a mask length (None:
    trailing zero bytes stripped; else the table's full width plus some zero padding)."""
    headers = draw(st.integers(0, 8))
    columns = tuple(f"c{i}" for i in range(draw(st.integers(1, 60))))
    marked = draw(st.frozensets(st.integers(0, len(columns) - 1)))
    full = (headers + len(columns) + 7) // 8
    length = draw(st.none() | st.integers(full, full + 3))
    return headers, columns, marked, length


def _bits(headers: int, marked: frozenset[int]) -> list[int]:
    return [headers + i for i in marked]


@given(change_tables())
def test_varbinary_masks_round_trip(table: tuple) -> None:
    headers, columns, marked, length = table
    mask = encode(_bits(headers, marked), "little", length)
    expected = tuple(name for i, name in enumerate(columns) if i in marked)
    assert change_table_columns(mask, headers, columns) == expected


@given(change_tables(), st.sampled_from(BYTE_ORDERS))
def test_hex_masks_round_trip_in_both_orders(table: tuple, order: ByteOrder) -> None:
    headers, columns, marked, length = table
    text = encode(_bits(headers, marked), order, length).hex().upper()
    expected = tuple(name for i, name in enumerate(columns) if i in marked)
    assert change_table_columns_from_hex(text, order, headers, columns) == expected


@given(change_tables(), st.sampled_from(BYTE_ORDERS), st.integers(0, 255))
def test_header_bits_never_decode_as_columns(
    table: tuple, order: ByteOrder, header_bits: int
) -> None:
    headers, columns, marked, length = table
    noise = [bit for bit in range(headers) if header_bits >> bit & 1]
    text = encode(_bits(headers, marked) + noise, order, length).hex()
    expected = tuple(name for i, name in enumerate(columns) if i in marked)
    assert change_table_columns_from_hex(text, order, headers, columns) == expected


@given(change_tables(), st.sampled_from(BYTE_ORDERS), st.integers(0, 16))
def test_a_bit_beyond_the_table_is_named(table: tuple, order: ByteOrder, extra: int) -> None:
    headers, columns, marked, _ = table
    beyond = headers + len(columns) + extra
    text = encode([*_bits(headers, marked), beyond], order).hex()
    with pytest.raises(MaskError, match=f"sets bit {beyond},"):
        change_table_columns_from_hex(text, order, headers, columns)


@given(change_tables(), st.sampled_from(BYTE_ORDERS), st.lists(st.booleans(), max_size=4))
def test_evidence_never_picks_the_wrong_order(
    table: tuple, order: ByteOrder, strips: list[bool]
) -> None:
    headers, columns, marked, length = table
    keys = [columns[i] for i in marked] or [columns[0]]
    bits = _bits(headers, {columns.index(key) for key in keys})
    masks = [encode(bits, order, None if strip else length).hex() for strip in strips]
    assert choose_byte_order("t", masks, headers, columns, keys) in (order, None)


@st.composite
def kafka_tables(draw: st.DrawFn) -> tuple[int, frozenset[int], int | None]:
    """Column count, marked ordinals, and a mask length (None: leading zero bytes stripped)."""
    count = draw(st.integers(1, 120))
    ordinals = draw(st.frozensets(st.integers(1, count)))
    full = (count + 7) // 8
    return count, ordinals, draw(st.none() | st.integers(full, full + 3))


@given(kafka_tables())
def test_kafka_masks_round_trip(table: tuple) -> None:
    count, ordinals, length = table
    text = encode([k - 1 for k in ordinals], "big", length).hex().upper()
    assert kafka_ordinals(text, count) == tuple(sorted(ordinals))
    names = tuple(f"col{k}" for k in range(1, count + 1))
    assert kafka_columns(text, names) == tuple(f"col{k}" for k in sorted(ordinals))
