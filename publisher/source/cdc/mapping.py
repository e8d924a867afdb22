"""The step every change reader shares (docs/change-formats.md, Shared mapping): one row
change, as its format states it, into the events the event log holds; and the text a
source value has there.

A reader decodes its own input (records, messages, rows, masks, transactions,
continuations) into ``RowChange``s and maps each with ``row_change_events``:

- insert: a type 1 per covered column whose value is not NULL;
- update: when the before image has another key, a type 4 of the old key and the insert
  of the new row; else a type 2 per changed column, old and new, or a type 3 (new only)
  when there is no before image or it lacks the column;
- delete: one type 4.

Key columns are never attribute events: their values are the key. What the formats say
differently (which columns an insert covers, which an update marks changed) is data in
the ``RowChange``, not a branch here.
"""

from __future__ import annotations

import base64
import math
import struct
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, time
from decimal import Decimal
from enum import Enum
from typing import Literal

from publisher.model.changes import ChangeEvent
from publisher.model.events import EventType
from publisher.source.cdc import shown

__all__ = [
    "Image", "ImageRole", "Key", "KeyChangeWithoutBefore", "KeyValueMissing", "NoEventLogText",
    "Operation", "RowChange", "event_log_text", "row_change_events", "row_key",
]

Key = tuple[tuple[str, str], ...]  # key columns and their values as text, in key order
# A row image: column -> value as event log text, None for NULL. A column the image does
# not hold is absent, which is not NULL (a Kafka message may leave a column out).
Image = Mapping[str, str | None]
ImageRole = Literal["before", "after"]


class Operation(Enum):
    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"


@dataclass(frozen=True)
class RowChange:
    """One row change as its format states it.

    ``before`` is the row before the change: a delete's row, an update's before image
    (None when the format gives none). ``after`` is the row after it: an insert's row, an
    update's after image. ``key_columns`` are the table's key columns in key order.

    ``columns``: the columns the after image covers, in event order; an insert (and the
    insert of a key change) publishes these, an update publishes no other (None: every
    column of the after image, in its order).

    ``changed``: the columns the format marks as changed, each published whether or not
    its text differs (None: the format marks none, so the covered columns whose text
    differs from the before image, or every covered column, NULL included, when there is
    no before image to compare with)."""

    table: str
    key_columns: tuple[str, ...]
    operation: Operation
    before: Image | None = None
    after: Image | None = None
    columns: tuple[str, ...] | None = None
    changed: tuple[str, ...] | None = None

    @property
    def covered(self) -> Collection[str]:
        """The columns the after image covers, in event order."""
        assert self.after is not None  # RowChange checks, but for a delete
        return self.after if self.columns is None else self.columns

    def __post_init__(self) -> None:
        needs = "before" if self.operation is Operation.DELETE else "after"
        if getattr(self, needs) is None:
            raise ValueError(
                f"a {self.operation.value} of {shown(self.table)} needs its {needs} image"
            )


class KeyValueMissing(ValueError):
    """A key column NULL, or absent (the image has no such column), in an image
    (``image``: which one). The reader says where, in its own error (docs/change-formats.md,
    Errors)."""

    def __init__(self, table: str, column: str, image: ImageRole, absent: bool) -> None:
        super().__init__(
            f"key column {shown(column)} is not a column of {shown(table)}" if absent
            else f"key column {shown(column)} of {shown(table)} is NULL"
        )
        self.column, self.image, self.absent = column, image, absent


class KeyChangeWithoutBefore(ValueError):
    """An update that marks key columns changed but has no before image to name the old
    row by."""

    def __init__(self, table: str, columns: Sequence[str]) -> None:
        super().__init__(
            f"update changes key column(s) {shown(list(columns))} but has no before image to "
            "name the old row"
        )
        self.columns = tuple(columns)


def row_key(table: str, key_columns: Sequence[str], image: Image, role: ImageRole) -> Key:
    """The key of ``image``; KeyValueMissing when a key column is NULL or absent."""
    key = []
    for column in key_columns:
        value = image.get(column)
        if value is None:
            raise KeyValueMissing(table, column, role, absent=column not in image)
        key.append((column, value))
    return tuple(key)


def row_change_events(change: RowChange, order: tuple, *,
                      numbered: bool = True) -> list[ChangeEvent]:
    """The events of one row change, in event order, each with ``order`` followed by its
    position within the change (``numbered``) or ``order`` alone (the format orders its
    records and a record's events keep their emission order). Raises KeyValueMissing and
    KeyChangeWithoutBefore for the reader to place."""
    return [
        ChangeEvent((*order, position) if numbered else order, change.table, *event)
        for position, event in enumerate(_events(change))
    ]


# An event before it has its order: key, type, column, old value, new value.
_Unordered = tuple[Key, EventType, str | None, str | None, str | None]


def _events(change: RowChange) -> Iterator[_Unordered]:
    table, keys = change.table, change.key_columns
    before, after = change.before, change.after
    if change.operation is Operation.DELETE:
        assert before is not None  # RowChange checks
        yield row_key(table, keys, before, "before"), EventType.DELETE_ROW, None, None, None
        return
    assert after is not None  # RowChange checks
    key = row_key(table, keys, after, "after")
    if change.operation is Operation.INSERT:
        yield from _inserted(change, key, after)
        return
    if before is not None:
        old_key = row_key(table, keys, before, "before")
        if old_key != key:  # the old row goes, the new one comes
            yield old_key, EventType.DELETE_ROW, None, None, None
            yield from _inserted(change, key, after)
            return
    covered = change.covered
    if change.changed is not None:
        moved = [column for column in change.changed if column in keys]
        if before is None and moved:
            raise KeyChangeWithoutBefore(table, moved)
        # A changed column the after image does not cover has no new value to publish.
        within = frozenset(covered)
        changed = [column for column in change.changed if column in within]
    elif before is None:
        changed = list(covered)
    else:
        changed = [column for column in covered if before.get(column) != after.get(column)]
    for column in changed:
        if column in keys:
            continue
        new = after.get(column)
        if before is None or column not in before:
            yield key, EventType.UPDATE_FIELD_REMOVE_ALL, column, None, new
        else:
            yield key, EventType.UPDATE_FIELD, column, before[column], new


def _inserted(change: RowChange, key: Key, after: Image) -> Iterator[_Unordered]:
    """A type 1 per covered non-key column; a NULL adds nothing, as in the event log."""
    for column in change.covered:
        value = after.get(column)
        if column not in change.key_columns and value is not None:
            yield key, EventType.INSERT_FIELD, column, None, value


# --- values as text -------------------------------------------------------------------


class NoEventLogText(ValueError):
    """A value the event log has no text for: a collection, or a number that is not
    finite (its text would be a guess: fail loudly)."""


def event_log_text(value: object, *, single_precision: bool = False,
                   timespec: str = "auto") -> str | None:
    """A source value as the event log holds it; None (NULL) stays None.

    Text as it is; booleans true/false; binary in Base64; integers in digits; decimals in
    plain notation, keeping their scale ("1.50"); a float as Python writes it, or, with
    ``single_precision`` (a 32-bit column), the shortest text of its 32-bit value; dates
    and times in ISO form; date-times as "YYYY-MM-DD HH:MM:SS[.ffffff]" (``timespec`` as
    datetime.isoformat takes it), in UTC when they have a zone; any other scalar as its own
    text. NoEventLogText for a collection or a
    number that is not finite."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise NoEventLogText(f"{value} is not a finite number")
        return _float32_text(value) if single_precision else repr(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise NoEventLogText(f"{value} is not a finite number")
        return format(value, "f")
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        return value.isoformat(sep=" ", timespec=timespec)
    if isinstance(value, (date, time)):
        return value.isoformat()
    if isinstance(value, (Mapping, list, tuple, set, frozenset)):
        raise NoEventLogText(f"a {type(value).__name__} is not a single value")
    return str(value)


def _float32_text(value: float) -> str:
    """The shortest text that reads back as the same 32-bit float (a 32-bit value widened
    to Python's float would show 1.1 as 1.100000023841858)."""
    try:
        narrowed = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        narrowed = None
    if narrowed != value:  # not a 32-bit value (a double given for the column): all of it
        return repr(value)
    for digits in range(1, 9):
        nearest = float(f"{value:.{digits}g}")
        if struct.unpack("f", struct.pack("f", nearest))[0] == value:
            return repr(nearest)
    return repr(float(f"{value:.9g}"))  # 9 significant digits always suffice
