"""The GBase 8s / Informix CDC record stream (docs/change-formats.md, GBase 8s / Informix
CDC stream) read into ChangeEvents.

Three steps: ``RecordDecoder`` cuts the bytes, fed in chunks of any size, into typed records
by their declared sizes; ``TableLayout`` (from a TABSCHEMA record) decodes a row record's
bytes into column values as text; ``RecordTransactions`` buffers row records per
transaction, up to a bound, and maps each committed transaction's rows with the shared
mapping (``mapping.row_change_events``). ``read_changes`` chains them over a file or a
pipe. Every error is a ``CdcStreamError`` naming the byte where its record starts.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import BinaryIO

from publisher.errors import ConfigError, SourceInputError
from publisher.model.changes import ChangeEvent
from publisher.source.cdc import MAX_BUFFERED_BYTES, MAX_RECORD_BYTES, shown, unpublishable
from publisher.source.cdc.mapping import (
    Image,
    ImageRole,
    KeyValueMissing,
    Operation,
    RowChange,
    event_log_text,
    row_change_events,
    row_key,
)

__all__ = [
    "CdcStreamError", "BeginTx", "CommitTx", "RollbackTx", "RowRecord", "Discard", "Truncate",
    "TabSchema", "Timeout", "ErrorRecord", "Record", "RecordDecoder", "Column", "TableLayout",
    "RecordTransactions", "read_records", "read_changes",
]

logger = logging.getLogger(__name__)

PACKET_SCHEME = 66  # CDC_PKTSCHEME_LRECBINARY, the only scheme there is
COMMON_HEADER = struct.Struct(">IIII")  # header size, payload size, packet scheme, number

BEGINTX, COMMTX, RBTX = 1, 2, 3
INSERT, DELETE, UPDBEF, UPDAFT = 40, 41, 42, 43
DISCARD, TRUNCATE = 62, 119
TABSCHEMA, TIMEOUT, ERROR = 200, 201, 202
SESSION_DEAD = 1  # ERROR flags: the server ended the capture session


class CdcStreamError(SourceInputError):
    """A CDC stream this reader cannot read (docs/change-formats.md, Errors); ``offset`` is
    the byte where the record starts."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message, f"record at byte {offset}")
        self.offset = offset


# --- records --------------------------------------------------------------------------


@dataclass(frozen=True)
class BeginTx:
    offset: int
    seq: int
    txid: int
    start_time: int  # Unix seconds
    user_id: int


@dataclass(frozen=True)
class CommitTx:
    offset: int
    seq: int
    txid: int
    commit_time: int  # Unix seconds


@dataclass(frozen=True)
class RollbackTx:
    offset: int
    seq: int
    txid: int


@dataclass(frozen=True)
class RowRecord:
    """INSERT, DELETE, UPDBEF or UPDAFT (``kind`` is the record number). The size fields of
    the variable-length columns stay raw: how many there are is the table's to say."""

    offset: int
    kind: int
    seq: int
    txid: int
    table_id: int
    flags: int
    size_fields: bytes
    row: bytes


@dataclass(frozen=True)
class Discard:
    """Drop the transaction's records from ``seq`` on (a rollback to a savepoint)."""

    offset: int
    seq: int
    txid: int


@dataclass(frozen=True)
class Truncate:
    offset: int
    seq: int
    txid: int
    table_id: int


@dataclass(frozen=True)
class TabSchema:
    offset: int
    table_id: int
    flags: int
    fixed_bytes: int
    fixed_count: int
    var_count: int
    columns: str  # the column list, NUL removed


@dataclass(frozen=True)
class Timeout:
    offset: int
    seq: int


@dataclass(frozen=True)
class ErrorRecord:
    offset: int
    flags: int
    code: int


Record = (
    BeginTx | CommitTx | RollbackTx | RowRecord | Discard | Truncate | TabSchema | Timeout
    | ErrorRecord
)


def _row(offset: int, number: int, header: bytes, payload: bytes) -> RowRecord:
    seq, txid, table_id, flags = struct.unpack_from(">Qiii", header)
    return RowRecord(offset, number, seq, txid, table_id, flags, header[20:], payload)


def _tabschema(offset: int, number: int, header: bytes, payload: bytes) -> TabSchema:
    end = payload.find(b"\0")
    if end < 0:
        raise CdcStreamError("TABSCHEMA column list is not NUL-ended", offset)
    try:
        columns = payload[:end].decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CdcStreamError(f"TABSCHEMA column list is not UTF-8: {exc.reason}", offset) from None
    record = TabSchema(offset, *struct.unpack_from(">iiiii", header), columns)
    if min(record.fixed_bytes, record.fixed_count, record.var_count) < 0:
        raise CdcStreamError(
            f"TABSCHEMA declares {record.fixed_bytes} fixed bytes, {record.fixed_count} fixed- "
            f"and {record.var_count} variable-length columns: none may be negative",
            offset,
        )
    return record


_Parser = Callable[[int, int, bytes, bytes], Record]


def _fixed(kind: Callable[..., Record], fields: str) -> _Parser:
    """The parser of a record whose fields are all in its header."""
    return lambda offset, number, header, payload: kind(offset, *struct.unpack_from(fields, header))


# Per record number: the header bytes it needs after the common 16, and its parser.
_KINDS: dict[int, tuple[str, int, _Parser]] = {
    BEGINTX: ("BEGINTX", 24, _fixed(BeginTx, ">Qiqi")),
    COMMTX: ("COMMTX", 20, _fixed(CommitTx, ">Qiq")),
    RBTX: ("RBTX", 12, _fixed(RollbackTx, ">Qi")),
    INSERT: ("INSERT", 20, _row),
    DELETE: ("DELETE", 20, _row),
    UPDBEF: ("UPDBEF", 20, _row),
    UPDAFT: ("UPDAFT", 20, _row),
    DISCARD: ("DISCARD", 12, _fixed(Discard, ">Qi")),
    TRUNCATE: ("TRUNCATE", 16, _fixed(Truncate, ">Qii")),
    TABSCHEMA: ("TABSCHEMA", 20, _tabschema),
    TIMEOUT: ("TIMEOUT", 8, _fixed(Timeout, ">Q")),
    ERROR: ("ERROR", 8, _fixed(ErrorRecord, ">ii")),
}


class RecordDecoder:
    """Cuts a CDC byte stream into records, whatever the chunks it arrives in.

    Each record is taken by its header and payload sizes, never by scanning: bytes after a
    record's fields but inside its sizes (stale buffer content, as in the documented capture) are skipped with
    it. Unknown record numbers are logged and skipped the same way."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self._offset = 0  # stream offset of _pending[0]

    def feed(self, data: bytes) -> list[Record]:
        """The records ``data`` completes, in stream order; the rest waits for more. A bad
        record raises once the good records before it have been handed over."""
        self._pending += data
        pending, records, pos = self._pending, [], 0
        while len(pending) - pos >= COMMON_HEADER.size:
            offset = self._offset + pos
            header_size, payload_size, scheme, number = COMMON_HEADER.unpack_from(pending, pos)
            end = pos + header_size + payload_size
            try:
                kind = _checked_kind(offset, header_size, payload_size, scheme, number)
                if end > len(pending):
                    break
                header = bytes(pending[pos + COMMON_HEADER.size : pos + header_size])
                payload = bytes(pending[pos + header_size : end])
                if kind is not None:
                    records.append(kind[2](offset, number, header, payload))
            except CdcStreamError:
                if pos:
                    break  # the bad record stays pending and raises on the next call
                raise
            if kind is None:
                logger.warning(
                    "skipping CDC record number %d of %d bytes at byte %d",
                    number, header_size + payload_size, offset,
                )
            pos = end
        del pending[:pos]
        self._offset += pos
        return records

    def close(self) -> None:
        """End of stream: anything still pending is a bad or truncated record."""
        self.feed(b"")
        if not self._pending:
            return
        if len(self._pending) < COMMON_HEADER.size:
            raise CdcStreamError(
                f"truncated record: the stream ends {len(self._pending)} bytes into its "
                f"{COMMON_HEADER.size}-byte header",
                self._offset,
            )
        header_size, payload_size, _, _ = COMMON_HEADER.unpack_from(self._pending)
        raise CdcStreamError(
            f"record size {header_size} + {payload_size} runs past the end of the stream, "
            f"{len(self._pending)} bytes on",
            self._offset,
        )


def _checked_kind(offset: int, header_size: int, payload_size: int, scheme: int,
                  number: int) -> tuple[str, int, _Parser] | None:
    """The record kind of a common header (None for an unknown number), if the header is
    sound for it."""
    if scheme != PACKET_SCHEME:
        raise CdcStreamError(f"packet scheme {scheme}, expected {PACKET_SCHEME}", offset)
    if header_size + payload_size > MAX_RECORD_BYTES:
        raise CdcStreamError(
            f"record size {header_size} + {payload_size} is more than the "
            f"{MAX_RECORD_BYTES} bytes a record may have",
            offset,
        )
    kind = _KINDS.get(number)
    name, needs = (kind[0], kind[1]) if kind else (f"record number {number}", 0)
    if header_size < COMMON_HEADER.size + needs:
        raise CdcStreamError(
            f"{name} header size {header_size} is smaller than the "
            f"{COMMON_HEADER.size + needs} bytes it needs",
            offset,
        )
    return kind


def read_records(stream: BinaryIO, chunk_size: int = 1 << 16) -> Iterator[Record]:
    """The records of a binary file or pipe, read ``chunk_size`` bytes at a time (from a
    pipe, whatever has arrived, so records come out as soon as they are complete)."""
    read = getattr(stream, "read1", stream.read)
    decoder = RecordDecoder()
    while chunk := read(chunk_size):
        yield from decoder.feed(chunk)
    decoder.close()


# --- row layout -----------------------------------------------------------------------

# A decoder: a column's bytes in the row to its value as event log text, None for NULL.
_Decode = Callable[[bytes], str | None]

DATE_EPOCH = date(1899, 12, 31)  # day 0 of an Informix DATE
_INT_NULLS = {2: -0x8000, 4: -0x80000000, 8: -0x8000000000000000}


def _integer(raw: bytes) -> str | None:
    # The smallest value of each width is NULL, outside the type's range.
    value = int.from_bytes(raw, "big", signed=True)
    return None if value == _INT_NULLS[len(raw)] else event_log_text(value)


def _date(raw: bytes) -> str | None:
    days = int.from_bytes(raw, "big", signed=True)
    if days == _INT_NULLS[4]:
        return None
    return event_log_text(DATE_EPOCH + timedelta(days=days))


def _float(raw: bytes) -> str | None:
    # All bytes 0xFF is Informix's NULL float (a NaN no arithmetic produces).
    if raw == b"\xff" * len(raw):
        return None
    single = len(raw) == 4
    value = struct.unpack(">f" if single else ">d", raw)[0]
    return event_log_text(value, single_precision=single)


def _char(raw: bytes) -> str | None:
    if raw[:1] == b"\0":
        return None
    return raw.rstrip(b" ").decode("utf-8")


def _varchar(raw: bytes) -> str | None:
    if len(raw) < 2:
        raise ValueError(f"{len(raw)} bytes cannot hold the 2-byte length prefix")
    length = int.from_bytes(raw[:2], "big")
    if length != len(raw) - 2:
        raise ValueError(f"length prefix {length} disagrees with the size field {len(raw)}")
    return raw[2:].decode("utf-8")


@dataclass(frozen=True)
class Column:
    """One column of a TABSCHEMA list: ``size`` is its bytes in the row (None for a
    variable-length column), ``decode`` None for a type this reader cannot decode."""

    name: str
    type_text: str
    size: int | None
    decode: _Decode | None


# Fixed-length types: bytes in the row (None: from the declaration, CHAR(n)) and decoder.
_FIXED_TYPES: dict[str, tuple[int | None, _Decode]] = {
    "integer": (4, _integer),
    "int": (4, _integer),
    "serial": (4, _integer),
    "smallint": (2, _integer),
    "bigint": (8, _integer),
    "bigserial": (8, _integer),
    "date": (4, _date),
    "float": (8, _float),
    "double precision": (8, _float),
    "smallfloat": (4, _float),
    "real": (4, _float),
    "char": (None, _char),
    "character": (None, _char),
    "nchar": (None, _char),
}
_VARIABLE_TYPES = {"varchar", "nvarchar", "character varying", "lvarchar"}

_TYPE_CHARACTERS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_ ")
_MAX_SIZE_DIGITS = 10  # "(n)" past this says more than any record holds


def _column(text: str, offset: int) -> Column:
    """One column of a TABSCHEMA list: its name, blanks, type words (letters, digits, _
    and spaces, a letter first; datetime and interval qualifiers such as "year to
    fraction" are type words), then optionally "(n)" or "(n,m)" and NOT NULL, blanks
    allowed between. Parsed by hand: a regular expression doing the same backtracks on
    runs of blanks, in time quadratic in their length and worse. A name XML cannot carry
    is refused with its record, as a schema's (docs/change-formats.md, Errors)."""
    name, declared = (text.split(None, 1) + ["", ""])[:2]
    declared = declared.rstrip()
    type_words, words = declared, declared.split()
    if len(words) > 2 and [word.lower() for word in words[-2:]] == ["not", "null"]:
        type_words = declared[: declared.lower().rindex("not")].rstrip()
    sizes: list[str] = []
    if type_words.endswith(")"):
        type_words, _, inside = type_words[:-1].rpartition("(")
        type_words, sizes = type_words.rstrip(), [part.strip() for part in inside.split(",")]
    if (
        not name or any(c in ",()" for c in name)
        or not type_words[:1].isascii() or not type_words[:1].isalpha()
        or not set(type_words) <= _TYPE_CHARACTERS
        or len(sizes) > 2
        or not all(size.isdecimal() and len(size) <= _MAX_SIZE_DIGITS for size in sizes)
    ):
        raise CdcStreamError(f"cannot parse TABSCHEMA column {shown(text.strip())}", offset)
    if problem := unpublishable(name):
        raise CdcStreamError(f"TABSCHEMA column name {problem}", offset)
    type_name = " ".join(type_words.lower().split())
    if type_name in _VARIABLE_TYPES:
        return Column(name, declared, None, _varchar)
    if type_name not in _FIXED_TYPES:
        # DECIMAL, MONEY, DATETIME, INTERVAL, INT8, ...: known by name only; a row of the
        # table fails when decoded rather than guessing a format.
        return Column(name, declared, None, None)
    size, decode = _FIXED_TYPES[type_name]
    return Column(name, declared, size or int(sizes[0] if sizes else 1), decode)


def _split_columns(text: str) -> list[str]:
    """The column list cut at the commas outside parentheses."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(text):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:index])
            start = index + 1
    parts.append(text[start:])
    return parts


@dataclass(frozen=True)
class TableLayout:
    """A captured table as its TABSCHEMA record declares it: the columns in declared order,
    the first ``fixed_count`` of them fixed-length (``fixed_bytes`` in all), as they lie in
    a row."""

    table_id: int
    columns: tuple[Column, ...]
    fixed_count: int
    fixed_bytes: int

    @classmethod
    def from_record(cls, record: TabSchema) -> TableLayout:
        """The layout of a TABSCHEMA record, checked against its counts and sizes."""
        offset = record.offset
        columns = tuple(_column(text, offset) for text in _split_columns(record.columns))
        if len(columns) != record.fixed_count + record.var_count:
            raise CdcStreamError(
                f"TABSCHEMA lists {len(columns)} columns, but declares {record.fixed_count} "
                f"fixed-length and {record.var_count} variable-length",
                offset,
            )
        for index, column in enumerate(columns):
            fixed = index < record.fixed_count
            if column.decode is not None and (column.size is not None) != fixed:
                raise CdcStreamError(
                    f"TABSCHEMA column {shown(column.name)} {shown(column.type_text)} is listed "
                    f"among the {'fixed' if fixed else 'variable'}-length columns",
                    offset,
                )
        sizes = [column.size for column in columns[: record.fixed_count]]
        known = [size for size in sizes if size is not None]
        if len(known) == len(sizes) and sum(known) != record.fixed_bytes:
            raise CdcStreamError(
                f"TABSCHEMA fixed-length columns take {sum(known)} bytes, "
                f"but it declares {record.fixed_bytes}",
                offset,
            )
        return cls(record.table_id, columns, record.fixed_count, record.fixed_bytes)

    def decode(self, record: RowRecord) -> dict[str, str | None]:
        """The row's image: its values as text by column name, in declared order; NULL is
        None."""
        offset = record.offset
        for column in self.columns:
            if column.decode is None:
                raise CdcStreamError(
                    f"column {shown(column.name)} of type {shown(column.type_text)} is not "
                    "supported yet",
                    offset,
                )
        var_sizes = self._var_sizes(record)
        if self.fixed_bytes + sum(var_sizes) != len(record.row):
            raise CdcStreamError(
                f"{_KINDS[record.kind][0]} row is {len(record.row)} bytes, its columns take "
                f"{self.fixed_bytes + sum(var_sizes)}",
                offset,
            )
        # Every type decoded here has its size: fixed ones in the column, the rest in the
        # record header.
        sizes = [column.size or 0 for column in self.columns[: self.fixed_count]] + var_sizes
        values: dict[str, str | None] = {}
        pos = 0
        for column, size in zip(self.columns, sizes):
            decode = column.decode
            assert decode is not None  # checked above
            try:
                values[column.name] = decode(record.row[pos : pos + size])
            except (ValueError, OverflowError) as exc:  # UnicodeDecodeError, NoEventLogText too
                raise CdcStreamError(
                    f"column {shown(column.name)} {shown(column.type_text)}: {exc}", offset
                ) from None
            pos += size
        return values

    def _var_sizes(self, record: RowRecord) -> list[int]:
        """The variable-length column sizes. The documents say big-endian like every other
        integer, but the documented capture shows its single size 11 as ``0B000000``: both readings are
        accepted, whichever adds up to the row (big-endian first)."""
        count = len(self.columns) - self.fixed_count
        if len(record.size_fields) < 4 * count:
            raise CdcStreamError(
                f"{_KINDS[record.kind][0]} header has {len(record.size_fields) // 4} size "
                f"fields, its table has {count} variable-length columns",
                record.offset,
            )
        raw = record.size_fields[: 4 * count]
        big = list(struct.unpack(f">{count}I", raw))
        little = list(struct.unpack(f"<{count}I", raw))
        for sizes in (big, little):
            if self.fixed_bytes + sum(sizes) == len(record.row):
                return sizes
        return min(big, little, key=sum)  # neither adds up: the caller reports the mismatch


# --- transactions to events -----------------------------------------------------------

# What a row record is to the shared mapping, and which of its images it holds.
_OPERATIONS: dict[int, tuple[Operation, ImageRole]] = {
    INSERT: (Operation.INSERT, "after"),
    DELETE: (Operation.DELETE, "before"),
    UPDBEF: (Operation.UPDATE, "before"),
    UPDAFT: (Operation.UPDATE, "after"),
}


# What an open transaction holds before its rows: its BEGINTX record's fields.
_BEGIN_BYTES = COMMON_HEADER.size + _KINDS[BEGINTX][1]


@dataclass(frozen=True)
class _Row:
    """A decoded row record waiting in its transaction; ``size`` is the record's bytes."""

    offset: int
    kind: int
    seq: int
    table_id: int
    table_name: str
    values: Image
    size: int


class RecordTransactions:
    """Turns records into events, a committed transaction at a time.

    Row records wait per transaction id from BEGINTX; COMMTX emits that transaction's
    events, so transactions come out in commit order, each with ``order`` = (COMMTX seq,
    record seq). RBTX drops a transaction, DISCARD its records from its seq on; TRUNCATE is
    logged, not published; TIMEOUT is ignored; ERROR ends the stream when the session is
    dead. A transaction still open when the stream ends or fails emits nothing.

    Each row is one row change for the shared mapping (docs/change-formats.md, Shared
    mapping): INSERT its after image, DELETE its before image, UPDBEF with the UPDAFT
    right after it (same transaction and table) an update, every column covered and those
    whose text differs changed (either side may be NULL). A row's key is checked as its
    record arrives, so a NULL key names its record even in a transaction that never
    commits.

    ``tables`` maps the table ids the capture was started with to table names, ``keys``
    each table name to its key columns (TABSCHEMA does not mark keys).

    The open transactions hold at most ``max_buffered_bytes`` of records (their row
    records, and a BEGINTX's fields each): the record that would take them past it is an
    error naming its transaction (docs/change-formats.md, Errors)."""

    def __init__(self, tables: Mapping[int, str], keys: Mapping[str, Sequence[str]],
                 max_buffered_bytes: int = MAX_BUFFERED_BYTES) -> None:
        for name, columns in keys.items():
            if not columns:
                raise ConfigError(f"table {name!r} has no key columns configured")
        self._tables = dict(tables)
        self._keys = {name: tuple(columns) for name, columns in keys.items()}
        self._layouts: dict[int, TableLayout] = {}
        self._open: dict[int, list[_Row]] = {}
        self._max_buffered, self._buffered = max_buffered_bytes, 0
        self._handlers: dict[type, Callable[..., list[ChangeEvent]]] = {
            BeginTx: self._begin,
            CommitTx: self._commit,
            RollbackTx: self._rollback,
            RowRecord: self._row,
            Discard: self._discard,
            Truncate: self._truncate,
            TabSchema: self._tabschema,
            Timeout: lambda record: [],
            ErrorRecord: self._error,
        }

    def apply(self, record: Record) -> list[ChangeEvent]:
        """The events ``record`` releases (only a COMMTX releases any)."""
        return self._handlers[type(record)](record)

    def close(self) -> None:
        """End of stream: open transactions are dropped, never half emitted."""
        if self._open:
            logger.warning(
                "CDC stream ended inside %d transaction(s) (txid %s): not emitted",
                len(self._open), ", ".join(str(t) for t in self._open),
            )
        self._open.clear()
        self._buffered = 0

    def _transaction(self, txid: int, offset: int) -> list[_Row]:
        if txid not in self._open:
            raise CdcStreamError(f"transaction {txid} was not begun", offset)
        return self._open[txid]

    def _hold(self, size: int, txid: int, offset: int) -> None:
        """Count ``size`` more bytes held, if the bound leaves room."""
        if self._buffered + size > self._max_buffered:
            raise CdcStreamError(
                f"open transactions would hold {self._buffered + size} bytes of records "
                f"with this one, more than the {self._max_buffered} a reader holds until "
                f"their commit (transaction {txid})",
                offset,
            )
        self._buffered += size

    def _end(self, txid: int) -> list[_Row]:
        """The rows of a transaction that ends, no longer held."""
        rows = self._open.pop(txid)
        self._buffered -= _BEGIN_BYTES + sum(row.size for row in rows)
        return rows

    def _begin(self, record: BeginTx) -> list[ChangeEvent]:
        if record.txid in self._open:
            raise CdcStreamError(f"transaction {record.txid} begun twice", record.offset)
        self._hold(_BEGIN_BYTES, record.txid, record.offset)
        self._open[record.txid] = []
        return []

    def _rollback(self, record: RollbackTx) -> list[ChangeEvent]:
        self._transaction(record.txid, record.offset)
        self._end(record.txid)
        return []

    def _discard(self, record: Discard) -> list[ChangeEvent]:
        rows = self._transaction(record.txid, record.offset)
        kept = [row for row in rows if row.seq < record.seq]
        self._buffered -= sum(row.size for row in rows) - sum(row.size for row in kept)
        rows[:] = kept
        return []

    def _truncate(self, record: Truncate) -> list[ChangeEvent]:
        logger.warning(
            "TRUNCATE of table %s (transaction %d) at byte %d is not published",
            self._tables.get(record.table_id, f"id {record.table_id}"), record.txid,
            record.offset,
        )
        return []

    def _tabschema(self, record: TabSchema) -> list[ChangeEvent]:
        self._layouts[record.table_id] = TableLayout.from_record(record)
        return []

    def _error(self, record: ErrorRecord) -> list[ChangeEvent]:
        if record.flags & SESSION_DEAD:
            raise CdcStreamError(
                f"the server ended the CDC session (error code {record.code})", record.offset
            )
        logger.warning("CDC error code %d at byte %d", record.code, record.offset)
        return []

    def _row(self, record: RowRecord) -> list[ChangeEvent]:
        rows = self._transaction(record.txid, record.offset)
        name = self._tables.get(record.table_id)
        if name is None:
            raise CdcStreamError(
                f"table id {record.table_id} has no table name configured", record.offset
            )
        if name not in self._keys:
            raise CdcStreamError(f"table {name} has no key columns configured", record.offset)
        layout = self._layouts.get(record.table_id)
        if layout is None:
            raise CdcStreamError(f"table id {record.table_id} has had no TABSCHEMA", record.offset)
        values = layout.decode(record)
        try:
            row_key(name, self._keys[name], values, _OPERATIONS[record.kind][1])
        except KeyValueMissing as exc:
            raise CdcStreamError(str(exc), record.offset) from None
        # The record as it came: its header (with the size fields) and its row.
        size = COMMON_HEADER.size + _KINDS[record.kind][1] + len(record.size_fields)
        size += len(record.row)
        self._hold(size, record.txid, record.offset)
        rows.append(
            _Row(record.offset, record.kind, record.seq, record.table_id, name, values, size)
        )
        return []

    def _commit(self, record: CommitTx) -> list[ChangeEvent]:
        self._transaction(record.txid, record.offset)
        rows = self._end(record.txid)
        events: list[ChangeEvent] = []
        index = 0
        while index < len(rows):
            row = rows[index]
            if row.kind == UPDAFT:
                raise CdcStreamError("UPDAFT without an UPDBEF before it", row.offset)
            after = None
            if row.kind == UPDBEF:
                after = rows[index + 1] if index + 1 < len(rows) else None
                if after is None or after.kind != UPDAFT or after.table_id != row.table_id:
                    raise CdcStreamError("UPDBEF is not followed by its UPDAFT", row.offset)
                index += 1
            change = self._row_change(row, after)
            events += row_change_events(change, (record.seq, row.seq), numbered=False)
            index += 1
        return events

    def _row_change(self, row: _Row, after: _Row | None) -> RowChange:
        """The row change of a row record (an UPDBEF with its UPDAFT ``after``)."""
        operation, role = _OPERATIONS[row.kind]
        images: dict[ImageRole, Image] = {role: row.values}
        if after is not None:
            images["after"] = after.values
        return RowChange(
            row.table_name, self._keys[row.table_name], operation, images.get("before"),
            images.get("after"),
        )


def read_changes(stream: BinaryIO, tables: Mapping[int, str], keys: Mapping[str, Sequence[str]],
                 chunk_size: int = 1 << 16,
                 max_buffered_bytes: int = MAX_BUFFERED_BYTES) -> Iterator[ChangeEvent]:
    """The events of a CDC stream (a binary file or pipe), a committed transaction at a
    time; see ``RecordTransactions`` for ``tables``, ``keys``, ``max_buffered_bytes`` and
    the mapping."""
    transactions = RecordTransactions(tables, keys, max_buffered_bytes)
    for record in read_records(stream, chunk_size):
        yield from transactions.apply(record)
    transactions.close()
