"""Qlik change masks (docs/change-formats.md, Qlik change tables; Qlik Kafka messages):
which columns a change-table row or a Kafka data message marks, and, for change tables
landed as files, which byte order the hex text uses, chosen per table from its DELETE
rows. Pure decoding, no I/O."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from typing import Literal

from publisher.errors import ConfigError, XdspubError
from publisher.source.cdc import shown

ByteOrder = Literal["little", "big"]

# "little": byte 0 holds bits 0..7 (the documented varbinary layout); "big": the hex text
# read as one big-endian integer, as public readers of landed files do.
BYTE_ORDERS: tuple[ByteOrder, ...] = ("little", "big")

# Whole bytes only: the seeds always show two digits a byte ("0B", "008080").
_HEX_BYTES = re.compile(r"(?:[0-9A-Fa-f]{2})*")


class MaskError(XdspubError):
    """A change mask that is not hex text or does not fit its table; ``mask`` names it."""

    def __init__(self, message: str, mask: str) -> None:
        super().__init__(message)
        self.mask = mask


def _set_bits(value: int) -> tuple[int, ...]:
    """The positions of the bits set in ``value``, lowest first."""
    return tuple(bit for bit in range(value.bit_length()) if value >> bit & 1)


def hex_mask_bytes(text: str) -> bytes:
    """The bytes hex text spells; anything but whole hex bytes is a MaskError."""
    # bytes.fromhex alone would accept spaces between bytes, int() underscores and "0x".
    if not _HEX_BYTES.fullmatch(text):
        raise MaskError(f"mask {shown(text)} is not hex text of whole bytes", text)
    return bytes.fromhex(text)


def hex_mask_value(text: str, order: ByteOrder) -> int:
    """The mask as an integer whose bit N is mask bit N, reading the hex text in ``order``.

    Absent trailing zero bytes (little) or leading zero bytes (big) change nothing.
    """
    return int.from_bytes(hex_mask_bytes(text), order)


# Change tables (docs/change-formats.md, Qlik change tables): bit N is change-table column
# ordinal N, headers first.


def _change_table_width(header_count: int, columns: Sequence[str]) -> int:
    return header_count + len(columns)


def _data_columns(value: int, header_count: int, columns: Sequence[str]) -> tuple[str, ...]:
    return tuple(name for i, name in enumerate(columns) if value >> (header_count + i) & 1)


def _marked_columns(value: int, header_count: int, columns: Sequence[str],
                    label: str) -> tuple[str, ...]:
    width = _change_table_width(header_count, columns)
    if value.bit_length() > width:
        raise MaskError(
            f"change mask {shown(label)} sets bit {value.bit_length() - 1}, beyond the last column "
            f"of the change table ({header_count} header and {len(columns)} data columns: "
            f"bits 0..{width - 1})",
            label,
        )
    return _data_columns(value, header_count, columns)


def change_table_columns(mask: bytes, header_count: int, columns: Sequence[str]) -> tuple[str, ...]:
    """The data columns a varbinary ``change_mask`` marks, in table order.

    ``mask`` is the documented little-endian byte array, ``columns`` the data columns in
    order after ``header_count`` header columns. Header bits are not data columns and are
    left out; a bit beyond the last column is a MaskError naming it.
    """
    value = int.from_bytes(mask, "little")
    return _marked_columns(value, header_count, columns, mask.hex().upper())


def change_table_columns_from_hex(text: str, order: ByteOrder, header_count: int,
                                  columns: Sequence[str]) -> tuple[str, ...]:
    """As change_table_columns, for a mask landed as hex text and read in ``order``."""
    return _marked_columns(hex_mask_value(text, order), header_count, columns, text)


def delete_fits(text: str, order: ByteOrder, header_count: int, columns: Sequence[str],
                keys: Collection[str]) -> bool:
    """Whether a DELETE row's hex mask, read in ``order``, marks exactly the key columns.

    Seed 000 says a DELETE sets "only the primary key (or unique index) columns" and that
    the mask tells which *data* columns changed; it says nothing of the header bits. So the
    header bits are ignored here, set or not: only the data bits must equal the keys. A
    bit beyond the table means this order does not fit.
    """
    value = hex_mask_value(text, order)
    if value.bit_length() > _change_table_width(header_count, columns):
        return False
    return set(_data_columns(value, header_count, columns)) == set(keys)


def _check_keys(table: str, columns: Sequence[str], keys: Collection[str]) -> None:
    unknown = sorted(set(keys) - set(columns))
    if unknown:
        raise ConfigError(f"change table {shown(table)} has no key column(s) {shown(unknown)}")


def choose_byte_order(table: str, delete_masks: Iterable[str], header_count: int,
                      columns: Sequence[str], keys: Collection[str]) -> ByteOrder | None:
    """The byte order of a table's hex masks, from the masks of its DELETE rows so far.

    The one order in which every DELETE row marks exactly the key columns (see
    delete_fits); None while both fit (no DELETE row yet, or only masks that read the same
    both ways), so the caller keeps both readings until a deciding row comes. When no order
    fits every row, a MaskError names the table and the first row (1-based, in the order
    given) after which none is left; a key that is not a column is a ConfigError.
    """
    _check_keys(table, columns, keys)
    remaining = BYTE_ORDERS
    for row, text in enumerate(delete_masks, start=1):
        remaining = tuple(
            order for order in remaining if delete_fits(text, order, header_count, columns, keys)
        )
        if not remaining:
            raise MaskError(
                f"change table {shown(table)}: no byte order makes every DELETE row mark "
                f"exactly the key columns {shown(sorted(keys))}; the first that fails is DELETE "
                f"row {row} with change mask {shown(text)}",
                text,
            )
    return remaining[0] if len(remaining) == 1 else None


# Kafka messages (docs/change-formats.md, Qlik Kafka messages): bit k-1 is the column of
# ordinal k. The worked checks fix the reading: "008080" over 16 columns marks ordinals 8
# and 16, so the hex text is one big-endian integer (byte by byte little-endian, it would
# mark ordinals 16 and 24).


def kafka_ordinals(text: str, column_count: int) -> tuple[int, ...]:
    """The 1-based ordinals a ``changeMask`` or ``columnMask`` marks, lowest first.

    Invalid hex text, or a bit for an ordinal beyond ``column_count``, is a MaskError.
    """
    value = hex_mask_value(text, "big")
    if value.bit_length() > column_count:
        raise MaskError(
            f"mask {shown(text)} marks ordinal {value.bit_length()}, beyond the table's "
            f"{column_count} columns",
            text,
        )
    return tuple(bit + 1 for bit in _set_bits(value))


def kafka_columns(text: str, columns: Sequence[str]) -> tuple[str, ...]:
    """The column names a Kafka mask marks; ``columns`` are in ordinal order (ordinal 1
    first), as the table's latest metadata message gives them."""
    return tuple(columns[ordinal - 1] for ordinal in kafka_ordinals(text, len(columns)))
