"""OpenEdge change tables (docs/change-formats.md, OpenEdge change tables) read
into ChangeEvents.

OpenEdge writes each captured change of a source table to its change table ``CDC_<table>``
(metadata columns, then the policy's fields) and its operation to the change tracking table
``_Cdc-Change-Tracking``, which all tables share. Two parts: ``RecordReassembler`` takes
one table's tracking rows joined with their change rows, reassembles the records split
over several rows and maps each change with the shared mapping
(``mapping.row_change_events``); ``read_changes`` reads the tables through SQLAlchemy and
merges them by the ordering key. Every input error is an
``OpenEdgeChangeError`` naming the change table and the ``_Change-Sequence``.

Where the spec is silent:
- Every image has its own tracking row: an update with its before image is a 3 and a 4 of
  one ``_Change-Sequence`` and ``_Tran-Id``. When the change table has an ``_Operation``
  column (the seed's ``_Change-Sequence-Id`` index names one), it is joined on too, which
  keeps the two images of an update apart.
- The tracking table's ``_Source-Table-Number`` tells the tables apart (configured per
  table); a tracking table without it serves one table. It is outer-joined, so operations
  5 to 12, which need no change row, are seen and logged.
- A continuation row at ``_Continuation-Position`` p holds the fields after field p (fields
  counted from 1 in the change table's column order); with ``_ArrayIndex`` k it holds the
  elements of array field p after element k, then the later fields. ``_Fragment`` 1 on a
  row: the first field the next row holds is split, its beginning in this row, its rest
  at the start of the next (text or bytes, joined).
- An array field is one change table column per element, ``<field>##<k>`` (the OpenEdge
  DataServer's names for array extents); element k is published as the column
  ``<field>##<k>``.
"""

from __future__ import annotations

import heapq
import logging
import re
from collections.abc import Iterable, Iterator, Mapping, MutableMapping, Sequence
from dataclasses import dataclass
from itertools import groupby
from operator import attrgetter

import sqlalchemy as sa

from publisher.errors import ConfigError, SourceInputError
from publisher.model.changes import ChangeEvent
from publisher.source.cdc import shown
from publisher.source.cdc.mapping import (
    Image,
    ImageRole,
    KeyValueMissing,
    NoEventLogText,
    Operation,
    RowChange,
    event_log_text,
    row_change_events,
)

__all__ = [
    "TRACKING_TABLE", "OpenEdgeChangeError", "ChangeTable", "ChangeRow", "Change",
    "RecordReassembler", "read_changes",
]

logger = logging.getLogger(__name__)

TRACKING_TABLE = "_Cdc-Change-Tracking"
TRAN_ID, TIME_STAMP, SEQUENCE = "_Tran-Id", "_Time-Stamp", "_Change-Sequence"
CONTINUATION, ARRAY_INDEX, FRAGMENT = "_Continuation-Position", "_ArrayIndex", "_Fragment"
OPERATION, TABLE_NUMBER = "_Operation", "_Source-Table-Number"
# The change table's metadata columns, in the order a row of the query carries them.
METADATA = (TRAN_ID, TIME_STAMP, SEQUENCE, CONTINUATION, ARRAY_INDEX, FRAGMENT)

CREATE, DELETE, BEFORE_UPDATE, AFTER_UPDATE = 1, 2, 3, 4
# Schema and partition operations: logged, not published.
UNPUBLISHED = {
    5: "field delete",
    6: "partition drop",
    7: "partition truncate",
    8: "partition deallocate",
    9: "multi-tenant partition deallocate",
    10: "multi-tenant partition drop",
    11: "merge partition drop",
    12: "field add",
}
OPERATIONS = frozenset({CREATE, DELETE, BEFORE_UPDATE, AFTER_UPDATE, *UNPUBLISHED})
# The operations one _Change-Sequence may publish together.
PUBLISHED = frozenset({(CREATE,), (DELETE,), (AFTER_UPDATE,), (BEFORE_UPDATE, AFTER_UPDATE)})
# What a published operation is to the shared mapping, which image its record is, and
# what errors call that image.
_OPERATIONS: dict[int, tuple[Operation, ImageRole, str]] = {
    CREATE: (Operation.INSERT, "after", "create"),
    DELETE: (Operation.DELETE, "before", "delete"),
    BEFORE_UPDATE: (Operation.UPDATE, "before", "before image"),
    AFTER_UPDATE: (Operation.UPDATE, "after", "after image"),
}
# An element number of more digits than an extent can have is no element: int() refuses
# 4300 digits and more.
ARRAY_ELEMENT = re.compile(r"(?P<field>.+)##(?P<element>[1-9][0-9]{0,8})")

Record = dict[str, object]  # a whole image: field column -> value as read


class OpenEdgeChangeError(SourceInputError):
    """A change this reader cannot read (docs/change-formats.md, Errors), named by its
    change table and sequence."""

    def __init__(self, message: str, change_table: str, sequence: int) -> None:
        super().__init__(message, f"{change_table} {SEQUENCE} {sequence}")
        self.change_table = change_table
        self.sequence = sequence


@dataclass(frozen=True)
class ChangeTable:
    """A captured source table: ``name`` is the table name the events carry, ``keys`` its
    key fields (configured: a change table does not mark them), ``table_number`` its
    ``_Source-Table-Number`` in the shared tracking table and ``cdc_table`` its change
    table when not ``CDC_<name>``."""

    name: str
    keys: tuple[str, ...]
    table_number: int | None = None
    cdc_table: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "keys", tuple(self.keys))
        if not self.keys:
            raise ConfigError(f"table {self.name!r} has no key fields configured")

    @property
    def change_table(self) -> str:
        return self.cdc_table or f"CDC_{self.name}"


@dataclass(frozen=True)
class ChangeRow:
    """A tracking row joined with one of its change rows; ``values`` (field column ->
    value) is None when the tracking row has no change row. NULL continuation, array
    index and fragment are read as 0."""

    sequence: int
    operation: int | None
    tran_id: object
    time_stamp: object
    continuation: int
    array_index: int
    fragment: int
    values: Mapping[str, object] | None


@dataclass(frozen=True)
class Change:
    """One published change (a ``_Change-Sequence``) of a table: ``order`` is
    (``_Time-Stamp``, ``_Change-Sequence``, table name), the start of its events' order."""

    table: str
    sequence: int
    order: tuple
    events: tuple[ChangeEvent, ...]


@dataclass(frozen=True)
class _Cell:
    """A field column as continuations count it: ``field`` is its 1-based field number,
    ``element`` its array element (0 for a scalar field)."""

    column: str
    field: int
    element: int


def _cells(columns: Sequence[str]) -> tuple[_Cell, ...]:
    """The field columns in order; the element columns of one array field count as one
    field."""
    cells: list[_Cell] = []
    array = None
    for column in columns:
        match = ARRAY_ELEMENT.fullmatch(column)
        base, element = (match["field"], int(match["element"])) if match else (column, 0)
        number = cells[-1].field if cells else 0
        if not (element > 1 and base == array):
            number += 1
        cells.append(_Cell(column, number, element))
        array = base if element else None
    return tuple(cells)


class RecordReassembler:
    """Turns one table's joined rows, in ``_Change-Sequence`` order, into changes.

    The rows of an operation form one record, reassembled from its continuation rows
    (ordered by ``_Continuation-Position`` and ``_ArrayIndex``) before anything is mapped;
    a record whose first row is missing, whose positions do not advance, or whose last row
    says a fragment follows is an error, and nothing of it is emitted.

    Each change is one row change for the shared mapping (docs/change-formats.md, Shared
    mapping), every field covered and none marked changed: 1 an insert, 2 a delete, 3 with
    its 4 (same sequence and transaction) an update from the 3 to the 4 (the fields whose
    text differs), 4 alone an update without a before image (every field, NULL included:
    nothing says what changed). 5 to 12 are logged as warnings and publish nothing; a 3
    without its 4, operations that cannot share a sequence, an unknown operation or a NULL
    key field is an error.
    """

    def __init__(self, table: ChangeTable, fields: Sequence[str]) -> None:
        missing = [key for key in table.keys if key not in fields]
        if missing:
            raise ConfigError(
                f"key field(s) {', '.join(missing)} of table {table.name} are not fields of "
                f"{table.change_table}"
            )
        self.table = table
        self._cells = _cells(fields)
        # The last sequence read, published or not: where the next read can start.
        self.last_sequence: int | None = None

    def changes(self, rows: Iterable[ChangeRow]) -> Iterator[Change]:
        """The changes of ``rows`` (a sequence's rows together) that publish events."""
        for sequence, group in groupby(rows, key=attrgetter("sequence")):
            events = self.events(sequence, list(group))
            self.last_sequence = sequence
            if events:
                yield Change(self.table.name, sequence, events[0].order[:3], tuple(events))

    def events(self, sequence: int, rows: Sequence[ChangeRow]) -> list[ChangeEvent]:
        """The events of one sequence's rows, in field order."""
        found = {row.operation for row in rows}
        unknown = found - OPERATIONS
        if unknown:
            listed = ", ".join(sorted("NULL" if op is None else str(op) for op in unknown))
            raise self._error(f"unknown {OPERATION} {listed}", sequence)
        operations = tuple(sorted(found))
        if len(operations) == 1 and operations[0] in UNPUBLISHED:
            op = operations[0]
            logger.warning(
                "OpenEdge %s (%s %d) is not published (%s %s %d)",
                UNPUBLISHED[op], OPERATION, op, self.table.change_table, SEQUENCE, sequence,
            )
            return []
        if operations == (BEFORE_UPDATE,):
            raise self._error(
                f"a before image ({OPERATION} 3) without its after image (4)", sequence
            )
        if operations not in PUBLISHED:
            listed = " and ".join(map(str, operations))
            raise self._error(f"{OPERATION}s {listed} cannot share one {SEQUENCE}", sequence)
        records = {
            op: self._record(sequence, op, [row for row in rows if row.operation == op])
            for op in operations
        }
        stamp = self._shared(sequence, rows)
        try:
            return row_change_events(
                self._row_change(sequence, records), (stamp, sequence, self.table.name)
            )
        except KeyValueMissing as exc:
            image = next(
                name for op, (_, role, name) in _OPERATIONS.items()
                if op in records and role == exc.image
            )
            raise self._error(
                f"key field {shown(exc.column)} is NULL in the {image}", sequence
            ) from None

    def _row_change(self, sequence: int, records: dict[int, Record]) -> RowChange:
        """The row change of a published combination of operations (PUBLISHED)."""
        images: dict[ImageRole, Image] = {}
        for op, record in records.items():
            operation, role, _ = _OPERATIONS[op]
            images[role] = self._image(sequence, record)
        return RowChange(
            self.table.name, self.table.keys, operation, images.get("before"), images.get("after")
        )

    def _image(self, sequence: int, record: Record) -> Image:
        """A record's values as text."""
        image = {}
        for column, value in record.items():
            try:
                image[column] = event_log_text(value)
            except NoEventLogText as exc:
                raise self._error(f"field {shown(column)}: {exc}", sequence) from None
        return image

    def _shared(self, sequence: int, rows: Sequence[ChangeRow]) -> object:
        """The ``_Time-Stamp`` of a change, whose rows must agree on it and on their
        transaction."""
        for label, values in (
            (TRAN_ID, {row.tran_id for row in rows}),
            (TIME_STAMP, {row.time_stamp for row in rows}),
        ):
            if len(values) > 1:
                found = ", ".join(map(shown, sorted(map(str, values))))
                raise self._error(f"the rows of one change have {label} {found}", sequence)
        stamp = rows[0].time_stamp
        if stamp is None:
            raise self._error(f"{TIME_STAMP} is NULL", sequence)
        return stamp

    def _record(self, sequence: int, operation: int, rows: list[ChangeRow]) -> Record:
        """The whole image of one operation, from its first row and its continuations."""
        if any(row.values is None for row in rows):
            raise self._error(
                f"{OPERATION} {operation} has no row in {self.table.change_table}", sequence
            )
        rows = sorted(rows, key=lambda row: (row.continuation, row.array_index))
        for row in rows:
            if row.fragment not in (0, 1) or row.array_index < 0 or row.continuation < 0:
                raise self._error(
                    f"{OPERATION} {operation} has a row with {CONTINUATION} "
                    f"{row.continuation}, {ARRAY_INDEX} {row.array_index}, {FRAGMENT} "
                    f"{row.fragment}: not a continuation this reader knows",
                    sequence,
                )
        if rows[0].continuation != 0:
            raise self._error(
                f"{OPERATION} {operation} starts at {CONTINUATION} {rows[0].continuation}: "
                "its first row (0) is missing",
                sequence,
            )
        starts = [0] + [self._start(sequence, row) for row in rows[1:]]
        for earlier, later, row in zip(starts, starts[1:], rows[1:]):
            if later <= earlier:
                raise self._error(
                    f"{OPERATION} {operation}: the row at {CONTINUATION} {row.continuation}, "
                    f"{ARRAY_INDEX} {row.array_index} holds nothing after the row before it "
                    "(two rows at one position: duplicate tracking rows, or an update's "
                    f"images in a change table without {OPERATION})",
                    sequence,
                )
        if rows[-1].fragment:
            raise self._error(
                f"{OPERATION} {operation}: the row at {CONTINUATION} {rows[-1].continuation} "
                f"has {FRAGMENT} 1, but the continuation never comes",
                sequence,
            )
        record: Record = {}
        ends = [*starts[1:], len(self._cells)]
        for index, (row, start, end) in enumerate(zip(rows, starts, ends)):
            assert row.values is not None  # checked above
            for cell in self._cells[start:end]:
                record[cell.column] = row.values[cell.column]
            if index and rows[index - 1].fragment:
                column = self._cells[start].column
                record[column] = self._joined(
                    sequence, column, rows[index - 1].values, row.values
                )
        return record

    def _start(self, sequence: int, row: ChangeRow) -> int:
        """The first cell a continuation row holds: the one after field
        ``_Continuation-Position`` (after its element ``_ArrayIndex`` when not 0)."""
        if row.array_index:
            for index, cell in enumerate(self._cells):
                if cell.field == row.continuation and cell.element == row.array_index:
                    start = index + 1
                    break
            else:
                raise self._error(
                    f"{CONTINUATION} {row.continuation}, {ARRAY_INDEX} {row.array_index}: "
                    f"field {row.continuation} has no such array element",
                    sequence,
                )
        else:
            start = sum(1 for cell in self._cells if cell.field <= row.continuation)
        if start >= len(self._cells):
            raise self._error(
                f"continuation row at {CONTINUATION} {row.continuation}, {ARRAY_INDEX} "
                f"{row.array_index} holds no field ({len(self._cells)} field columns)",
                sequence,
            )
        return start

    def _joined(self, sequence: int, column: str, head: Mapping[str, object] | None,
                rest: Mapping[str, object] | None) -> object:
        """A field split by ``_Fragment``: its beginning and its rest, joined."""
        assert head is not None and rest is not None  # rows without values are refused first
        first, second = head[column], rest[column]
        if isinstance(first, str) and isinstance(second, str):
            return first + second
        binary = (bytes, bytearray, memoryview)
        if isinstance(first, binary) and isinstance(second, binary):
            return bytes(first) + bytes(second)
        raise self._error(
            f"field {shown(column)} is split ({FRAGMENT} 1) into {type(first).__name__} and "
            f"{type(second).__name__}, not two pieces of text or bytes",
            sequence,
        )

    def _error(self, message: str, sequence: int) -> OpenEdgeChangeError:
        return OpenEdgeChangeError(message, self.table.change_table, sequence)


# --- reading --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """How one table is read: its reassembler and the query of its joined rows."""

    reassembler: RecordReassembler
    query: sa.Select
    fields: tuple[str, ...]


def _reflected(connection: sa.Connection, name: str, schema: str | None) -> sa.Table:
    try:
        return sa.Table(name, sa.MetaData(), schema=schema, autoload_with=connection)
    except sa.exc.NoSuchTableError:
        where = f" in schema {schema}" if schema else ""
        raise ConfigError(f"OpenEdge table {name}{where} not found") from None


def _require(table: sa.Table, columns: Iterable[str]) -> None:
    missing = [column for column in columns if column not in table.c]
    if missing:
        raise ConfigError(f"OpenEdge table {table.name} has no column(s) {', '.join(missing)}")


def _plan(connection: sa.Connection, tracking: sa.Table, table: ChangeTable, schema: str | None,
          after: int | None) -> _Plan:
    change = _reflected(connection, table.change_table, schema)
    _require(change, METADATA)
    fields = tuple(
        column.name for column in change.columns if column.name not in (*METADATA, OPERATION)
    )
    # Reflected tables quote their hyphenated names themselves.
    joined = change.c[SEQUENCE] == tracking.c[SEQUENCE]
    if OPERATION in change.c:
        joined &= change.c[OPERATION] == tracking.c[OPERATION]
    query = (
        sa.select(
            tracking.c[SEQUENCE], tracking.c[OPERATION],
            *(change.c[name] for name in METADATA), *(change.c[name] for name in fields),
        )
        .select_from(tracking.outerjoin(change, joined))
        .order_by(tracking.c[SEQUENCE], tracking.c[OPERATION])
    )
    if TABLE_NUMBER in tracking.c:
        query = query.where(tracking.c[TABLE_NUMBER] == table.table_number)
    if after is not None:
        query = query.where(tracking.c[SEQUENCE] > after)
    return _Plan(RecordReassembler(table, fields), query, fields)


def _rows(result: Iterable[sa.Row], fields: Sequence[str]) -> Iterator[ChangeRow]:
    for row in result:
        sequence, operation, tran_id, stamp, joined, continuation, index, fragment, *values = row
        yield ChangeRow(
            sequence, operation, tran_id, stamp, continuation or 0, index or 0, fragment or 0,
            None if joined is None else dict(zip(fields, values)),
        )


def read_changes(engine: sa.Engine, tables: Sequence[ChangeTable], *, schema: str | None = None,
                 tracking_table: str = TRACKING_TABLE,
                 positions: MutableMapping[str, int] | None = None) -> Iterator[ChangeEvent]:
    """The events of the tables' changes, each table's in ``_Change-Sequence`` order, the
    tables merged by (``_Time-Stamp``, ``_Change-Sequence``).

    ``positions`` maps a table name to the last ``_Change-Sequence`` read: only later
    changes are read, and it is advanced as changes are read (when the caller asks for
    the event after a change's last one, and at the end past the changes that published
    nothing), so a caller polls by passing the same mapping again. The tables are
    checked at once: a missing table or column, a key field that is not a field, or a
    shared tracking table without table numbers is a ConfigError before any row is read.
    """
    positions = {} if positions is None else positions
    names = [table.name for table in tables]
    if len(set(names)) != len(names):
        raise ConfigError(f"a table is named twice in {names}")
    with engine.connect() as connection:
        tracking = _reflected(connection, tracking_table, schema)
        _require(tracking, (SEQUENCE, OPERATION))
        if TABLE_NUMBER in tracking.c:
            unnumbered = [table.name for table in tables if table.table_number is None]
            if unnumbered:
                raise ConfigError(
                    f"{tracking_table} is shared by tables ({TABLE_NUMBER}): give table(s) "
                    f"{', '.join(unnumbered)} their table number"
                )
        elif len(tables) > 1:
            raise ConfigError(
                f"{tracking_table} has no {TABLE_NUMBER}: it cannot tell the rows of "
                f"{len(tables)} tables apart"
            )
        plans = [
            _plan(connection, tracking, table, schema, positions.get(table.name))
            for table in tables
        ]
    return _changes(engine, plans, positions)


def _changes(engine: sa.Engine, plans: Sequence[_Plan],
             positions: MutableMapping[str, int]) -> Iterator[ChangeEvent]:
    with engine.connect() as connection:
        streams = [
            plan.reassembler.changes(_rows(connection.execute(plan.query), plan.fields))
            for plan in plans
        ]
        for change in heapq.merge(*streams, key=attrgetter("order")):
            yield from change.events
            positions[change.table] = change.sequence
    for plan in plans:
        if plan.reassembler.last_sequence is not None:
            positions[plan.reassembler.table.name] = plan.reassembler.last_sequence
