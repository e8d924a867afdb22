"""Qlik change tables (docs/change-formats.md, Qlik change tables) read into
ChangeEvents, from a database or from landed CSV/Parquet files with their ``.dfm``
metadata.

Three parts: ``ChangeTable`` is one change table's shape (header columns first, then the
source columns, and the key) and turns a record into a ``ChangeRow``; ``change_events``
pairs each before image with its update by change_seq, decodes the masks and maps the rows
of any number of tables with the shared mapping (``mapping.row_change_events``) to events
merged in change_seq order; ``ChangeTableDatabase`` (with ``PositionStore``) and
``read_files`` are the two ways in. ``read_database`` is a one-call poll. Input errors are
``SourceInputError``s naming the row: "<change table> change_seq <n>" in a database,
"<file> line <n>" (CSV) or "<file> row <n>" (Parquet) in files. Both ways read every row
before mapping any, so the rows held are bounded (``_Held``).

Masks: a binary mask (varbinary, bytea, BLOB, Parquet binary) is the documented
little-endian byte array; a hex-text mask (as in landed CSV) is read in the byte order
chosen per table from evidence: its DELETE rows must mark exactly the key columns
(qlik_mask.choose_byte_order), and every mask must fit the table. While both orders fit, a
mask that reads alike both ways is accepted and one that does not is an error, unless the
caller names the order (``byte_order``).
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa

from publisher.errors import ConfigError, SourceInputError
from publisher.model.changes import ChangeEvent
from publisher.source.cdc import (
    MAX_BUFFERED_BYTES,
    MAX_RECORD_BYTES,
    positions,
    shown,
    unpublishable,
)
from publisher.source.cdc.mapping import (
    Image,
    ImageRole,
    KeyChangeWithoutBefore,
    KeyValueMissing,
    NoEventLogText,
    Operation,
    RowChange,
    event_log_text,
    row_change_events,
)
from publisher.source.cdc.qlik_kafka import BINARY_TYPES
from publisher.source.cdc.qlik_mask import (
    BYTE_ORDERS,
    ByteOrder,
    MaskError,
    change_table_columns,
    change_table_columns_from_hex,
    choose_byte_order,
    hex_mask_value,
)

__all__ = [
    "HEADER_PREFIX", "POSITION_TABLE", "SUFFIX", "ChangeBatch", "ChangeRow", "ChangeTable",
    "ChangeTableDatabase", "PositionStore", "change_events", "read_database", "read_files",
]

HEADER_PREFIX = "header__"
SUFFIX = "__ct"
POSITION_TABLE = "xdspub_qlik_position"
INSERT, DELETE, UPDATE, BEFORE = "I", "D", "U", "B"
REQUIRED_HEADERS = ("change_seq", "change_oper")
# YYYYMMDDHHmmSShh and a 19-digit change number: fixed width, so text order is change order.
_CHANGE_SEQ = re.compile(r"\d{35}")
# The change_oper letters one change_seq may hold, sorted: one row, or a before image and
# its update (also while the update has not been seen yet).
_PAIRABLE = {INSERT, DELETE, UPDATE, BEFORE, BEFORE + UPDATE}
DATA_SUFFIXES = (".csv", ".parquet")
PARQUET_BATCH_ROWS = 4096  # a Parquet file is read a batch at a time, not whole
# What a row is to the shared mapping, and which image it holds.
_OPERATIONS: dict[str, tuple[Operation, ImageRole]] = {
    INSERT: (Operation.INSERT, "after"),
    DELETE: (Operation.DELETE, "before"),
    BEFORE: (Operation.UPDATE, "before"),
    UPDATE: (Operation.UPDATE, "after"),
}


# --- rows -----------------------------------------------------------------------------


@dataclass(frozen=True)
class ChangeTable:
    """One change table's shape: ``name`` is the source table (the events' table_name),
    ``headers`` the header columns without their prefix, in order (mask bits 0..n-1),
    ``columns`` the source columns after them, ``keys`` the key columns in key order."""

    name: str
    headers: tuple[str, ...]
    columns: tuple[str, ...]
    keys: tuple[str, ...]

    @classmethod
    def from_columns(cls, name: str, names: Sequence[str], keys: Sequence[str], prefix: str,
                     source: str) -> ChangeTable:
        """The shape of a change table whose columns are ``names``, in order; ``source``
        names it (the table or its .dfm) in configuration errors."""
        count = next((i for i, n in enumerate(names) if not n.startswith(prefix)), len(names))
        headers = tuple(n[len(prefix):] for n in names[:count])
        columns = tuple(names[count:])
        late = [n for n in columns if n.startswith(prefix)]
        if late:
            raise ConfigError(
                f"{source}: header column(s) {shown(late)} after the first data column"
            )
        missing = [prefix + h for h in REQUIRED_HEADERS if h not in headers]
        if missing:
            raise ConfigError(
                f"{source} has no column(s) {shown(missing)} (header prefix {shown(prefix)})"
            )
        if not keys:
            raise ConfigError(
                f"{source}: table {shown(name)} has no key columns (configure them, or mark "
                f"them with primaryKeyPos above 0 in the .dfm)"
            )
        unknown = [k for k in keys if k not in columns]
        if unknown:
            raise ConfigError(
                f"{source}: key column(s) {shown(unknown)} are not columns of {shown(name)}"
            )
        return cls(name, headers, columns, tuple(keys))

    @property
    def has_mask(self) -> bool:
        return "change_mask" in self.headers

    @property
    def width(self) -> int:
        """Mask bits the table has: headers and data columns."""
        return len(self.headers) + len(self.columns)

    def row(self, record: Sequence[object], where: str) -> ChangeRow:
        """The row ``record`` (headers, then data columns, in table order) holds."""
        header = dict(zip(self.headers, record))
        seq, oper, mask = header["change_seq"], header["change_oper"], header.get("change_mask")
        if not isinstance(seq, str) or not _CHANGE_SEQ.fullmatch(seq):
            raise SourceInputError(f"change_seq {shown(seq)} is not 35 digits", where)
        if oper not in (INSERT, DELETE, UPDATE, BEFORE):
            raise SourceInputError(f"change_oper {shown(oper)} is none of I, U, D, B", where)
        if isinstance(mask, (bytearray, memoryview)):
            mask = bytes(mask)
        if mask is not None and not isinstance(mask, (bytes, str)):
            raise SourceInputError(
                f"change_mask {shown(mask)} is neither binary nor hex text", where
            )
        values = {}
        for column, value in zip(self.columns, record[len(self.headers):]):
            try:
                values[column] = event_log_text(value)
            except NoEventLogText as exc:
                raise SourceInputError(f"column {shown(column)}: {exc}", where) from None
        return ChangeRow(self, where, seq, oper, mask, values)


@dataclass(frozen=True)
class ChangeRow:
    """One change-table row: ``mask`` binary, hex text or None (NULL, or no change_mask
    column), ``values`` the data columns as text."""

    table: ChangeTable
    where: str
    change_seq: str
    oper: str
    mask: bytes | str | None
    values: Mapping[str, str | None]


# --- rows to events -------------------------------------------------------------------


def change_events(rows: Iterable[ChangeRow],
                  byte_order: ByteOrder | None = None) -> list[ChangeEvent]:
    """The events of change-table rows of any tables, in change_seq order.

    Rows sharing a table and change_seq are one change: a before image (B) and its update
    (U); any other pairing, or a B without its U, is an error, so half a pair is never
    emitted. ``byte_order`` reads every hex-text mask in that order instead of choosing
    per table. Each change is one row change for the shared mapping
    (docs/change-formats.md, Shared mapping): I an insert covering the columns its mask
    marks, U an update (from its B when there is one) changing the columns its mask
    marks, D a delete. Without a change_mask column, an insert covers every column and an
    update marks none (the mapping compares with B). ``order`` is (change_seq, table,
    position).
    """
    rows = list(rows)
    by_table: dict[ChangeTable, list[ChangeRow]] = {}
    for row in rows:
        by_table.setdefault(row.table, []).append(row)
    orders = {table: _hex_byte_order(table, group, byte_order) for table, group in by_table.items()}
    events = []
    for change in _pairs(rows):
        marked = {oper: _marked(row, orders[row.table]) for oper, row in change.items()}
        events += _events(change, marked)
    events.sort(key=lambda event: event.order)
    return events


def _pairs(rows: list[ChangeRow]) -> list[dict[str, ChangeRow]]:
    """The changes: rows by table and change_seq, each keyed by its change_oper."""
    changes: dict[tuple[str, str], dict[str, ChangeRow]] = {}
    for row in rows:
        change = changes.setdefault((row.table.name, row.change_seq), {})
        if "".join(sorted([*change, row.oper])) not in _PAIRABLE:
            raise SourceInputError(
                f"change_seq {row.change_seq} of table {shown(row.table.name)} already has a "
                f"{'/'.join(change)} row: only a before image (B) and its update (U) share one",
                row.where,
            )
        change[row.oper] = row
    for change in changes.values():
        if UPDATE not in change and BEFORE in change:
            raise SourceInputError(
                "before image (B) without its update (U) of the same change_seq",
                change[BEFORE].where,
            )
    return list(changes.values())


def _hex_byte_order(table: ChangeTable, rows: list[ChangeRow],
                    configured: ByteOrder | None) -> ByteOrder | None:
    """The order of the table's hex-text masks: ``configured``, else the one order the
    evidence leaves (its DELETE rows mark exactly the keys, every mask fits the table),
    None while both are left."""
    texts = [row for row in rows if isinstance(row.mask, str)]
    if configured is not None or not texts:
        return configured
    deletes = [row for row in texts if row.oper == DELETE]
    try:
        chosen = choose_byte_order(
            table.name, [row.mask for row in deletes], len(table.headers), table.columns,
            table.keys,
        )
    except MaskError as exc:
        # A text fails at its first occurrence: the orders left only narrow.
        where = next(row.where for row in deletes if row.mask == exc.mask)
        raise SourceInputError(str(exc), where) from None
    orders = BYTE_ORDERS if chosen is None else (chosen,)
    for row in texts:
        try:
            fitting = tuple(
                o for o in orders if hex_mask_value(row.mask, o).bit_length() <= table.width
            )
        except MaskError as exc:
            raise SourceInputError(str(exc), row.where) from None
        if not fitting:
            raise SourceInputError(
                f"change mask {shown(row.mask)} ({' or '.join(orders)}-endian) marks a bit "
                f"beyond the last column of table {shown(table.name)} (bits "
                f"0..{table.width - 1})",
                row.where,
            )
        orders = fitting
    return orders[0] if len(orders) == 1 else None


def _marked(row: ChangeRow, order: ByteOrder | None) -> tuple[str, ...] | None:
    """The data columns the row's mask marks; None when the table has no change_mask."""
    table, mask = row.table, row.mask
    if not table.has_mask:
        return None
    try:
        if not isinstance(mask, str):
            return change_table_columns(mask or b"", len(table.headers), table.columns)
        readings = {
            o: change_table_columns_from_hex(mask, o, len(table.headers), table.columns)
            for o in (BYTE_ORDERS if order is None else (order,))
        }
    except MaskError as exc:
        raise SourceInputError(str(exc), row.where) from None
    if len(set(readings.values())) > 1:
        raise SourceInputError(
            f"change mask {shown(mask)} marks {shown(list(readings['little']))} little-endian "
            f"but {shown(list(readings['big']))} big-endian, and no DELETE row of table "
            f"{shown(table.name)} tells the byte order: name it (byte_order)",
            row.where,
        )
    return readings.popitem()[1]


def _events(change: dict[str, ChangeRow],
            marked: dict[str, tuple[str, ...] | None]) -> list[ChangeEvent]:
    """The events of one change (its rows by change_oper, and the columns each marks)."""
    first = next(iter(change.values()))  # its rows share table and change_seq
    table = first.table
    images: dict[ImageRole, Image] = {}
    wheres: dict[ImageRole, str] = {}
    for oper, row in change.items():
        operation, role = _OPERATIONS[oper]  # a B and its U are both the update
        images[role], wheres[role] = row.values, row.where
    row_change = RowChange(
        table.name, table.keys, operation, images.get("before"), images.get("after"),
        columns=marked.get(INSERT), changed=marked.get(UPDATE),
    )
    try:
        return row_change_events(row_change, (first.change_seq, table.name))
    except KeyValueMissing as exc:
        raise SourceInputError(str(exc), wheres[exc.image]) from None
    except KeyChangeWithoutBefore as exc:
        raise SourceInputError(str(exc), wheres["after"]) from None


# --- database -------------------------------------------------------------------------


def _checked_position(position: str | None) -> str | None:
    if position is not None and not (
        isinstance(position, str) and _CHANGE_SEQ.fullmatch(position)
    ):
        raise ConfigError(f"position {shown(position)} is not a change_seq (35 digits)")
    return position


@dataclass(frozen=True)
class ChangeBatch:
    """One poll's events, in change_seq order, and ``position``: the change_seq to save
    (PositionStore.save) once the events are delivered; the position read from when
    nothing was new."""

    events: list[ChangeEvent]
    position: str | None


class ChangeTableDatabase:
    """The change tables ``<table><suffix>`` of the tables ``keys`` names (table -> key
    columns), polled by change_seq.

    The tables are reflected once; each ``read`` reads, after ``position``, the changes up
    to a change_seq every table has been read to, so a before image and its update (same
    change_seq) always come in the same batch. Rows committed in change_seq order (as
    Qlik applies them) are never skipped."""

    def __init__(self, engine: sa.Engine, keys: Mapping[str, Sequence[str]], *,
                 schema: str | None = None, header_prefix: str = HEADER_PREFIX,
                 suffix: str = SUFFIX, byte_order: ByteOrder | None = None) -> None:
        if not keys:
            raise ConfigError("no change tables configured")
        self._engine, self._byte_order = engine, byte_order
        self._tables: list[tuple[ChangeTable, sa.Table, sa.Column]] = []
        metadata = sa.MetaData()
        for name, key in keys.items():
            try:
                table = sa.Table(name + suffix, metadata, schema=schema, autoload_with=engine)
            except sa.exc.NoSuchTableError:
                raise ConfigError(f"change table {name + suffix} does not exist") from None
            shape = ChangeTable.from_columns(
                name, [c.name for c in table.columns], key, header_prefix, table.fullname
            )
            self._tables.append((shape, table, table.c[header_prefix + "change_seq"]))

    def read(self, position: str | None, limit: int | None = None) -> ChangeBatch:
        """The changes after ``position`` (None: from the start), at most ``limit``
        change_seq values (a before image and its update are one)."""
        if limit is not None and limit < 1:
            raise ConfigError(f"limit {limit} is not 1 or more")
        _checked_position(position)
        with self._engine.connect() as conn:
            upto = self._upto(conn, position, limit)
            if upto is None:
                return ChangeBatch([], position)
            rows = []
            for shape, table, seq in self._tables:
                query = sa.select(table).where(seq <= upto).order_by(seq)
                if position is not None:
                    query = query.where(seq > position)
                at = shape.headers.index("change_seq")
                for record in conn.execute(query):
                    where = f"{table.fullname} change_seq {record[at]}"
                    rows.append(shape.row(tuple(record), where))
        return ChangeBatch(change_events(rows, self._byte_order), upto)

    def _upto(self, conn: sa.Connection, position: str | None, limit: int | None) -> str | None:
        """The newest change_seq of this batch: the newest of all, or the limit-th."""
        found: set[str] = set()
        for _, _, seq in self._tables:
            if limit is None:
                query = sa.select(sa.func.max(seq))
            else:
                query = sa.select(seq).distinct().order_by(seq).limit(limit)
            if position is not None:
                query = query.where(seq > position)
            found.update(value for value in conn.execute(query).scalars() if value is not None)
        return sorted(found)[:limit][-1] if found else None


class PositionStore(positions.PositionStore):
    """The change_seq a task's output has been delivered up to (positions.PositionStore,
    in POSITION_TABLE unless told)."""

    def __init__(self, engine: sa.Engine, task: str, *, table: str = POSITION_TABLE,
                 schema: str | None = None) -> None:
        super().__init__(engine, task, table=table, schema=schema)

    def save(self, position: str) -> None:
        if _checked_position(position) is None:
            raise ConfigError("a position to save is a change_seq, not None")
        super().save(position)


def read_database(engine: sa.Engine, keys: Mapping[str, Sequence[str]], position: str | None, *,
                  limit: int | None = None, schema: str | None = None,
                  header_prefix: str = HEADER_PREFIX, suffix: str = SUFFIX,
                  byte_order: ByteOrder | None = None) -> ChangeBatch:
    """One poll of the change tables (see ChangeTableDatabase; a poll loop keeps one)."""
    database = ChangeTableDatabase(
        engine, keys, schema=schema, header_prefix=header_prefix, suffix=suffix,
        byte_order=byte_order,
    )
    return database.read(position, limit)


# --- files ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Metadata:
    """What a .dfm file tells: the table, its columns in file order, the binary data
    columns (hex text in CSV) and the CSV format options."""

    table: ChangeTable
    names: tuple[str, ...]
    binary: frozenset[str]
    options: Mapping[str, object]


class _Held:
    """What the files read so far hold, up to ``bound`` bytes (docs/change-formats.md,
    Errors)."""

    def __init__(self, bound: int) -> None:
        self.bound, self.size = bound, 0

    def add(self, size: int, where: str) -> None:
        """Hold ``size`` bytes more, if the bound leaves room; else an error naming
        ``where``, the file or row that would go past it."""
        if self.size + size > self.bound:
            raise SourceInputError(
                f"the files read would hold {self.size + size} bytes with this one, more "
                f"than the {self.bound} read before publishing (files are read whole first: "
                "read fewer at a time)",
                where,
            )
        self.size += size


def _member(parent: object, name: str, kind: type, where: str, default: object = None) -> object:
    value = parent.get(name, default) if isinstance(parent, dict) else None
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise SourceInputError(
            f"{name} must be a JSON {kind.__name__}, not {shown(value)}", where
        )
    return value


def _publishable(label: str, name: str, where: str) -> None:
    """A table or column name the .dfm declares must be one XML can carry: the .dfm is
    refused otherwise (docs/change-formats.md, Errors)."""
    if problem := unpublishable(name):
        raise SourceInputError(f"{label} {problem}", where)


def _metadata(path: Path, keys: Mapping[str, Sequence[str]], prefix: str) -> _Metadata:
    """The .dfm beside ``path``. Read: dataInfo.sourceTable, dataInfo.columns (name, type,
    primaryKeyPos) and formatInfo.options; nothing else is needed."""
    dfm = path.with_suffix(".dfm")
    where = str(dfm)
    if not dfm.is_file():
        raise SourceInputError("no .dfm metadata file beside the data file", str(path))
    if dfm.stat().st_size > MAX_RECORD_BYTES:
        raise SourceInputError(
            f"a .dfm of {dfm.stat().st_size} bytes, more than the {MAX_RECORD_BYTES} one may "
            "have",
            where,
        )
    try:
        document = json.loads(dfm.read_text(encoding="utf-8-sig"))
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError is a ValueError
        raise SourceInputError(f"not JSON: {exc}", where) from None
    except RecursionError:
        raise SourceInputError("not JSON: nested too deep", where) from None
    info = _member(document, "dataInfo", dict, where)
    name = _member(info, "sourceTable", str, where)
    names, binary, positions = [], set(), {}
    _publishable("sourceTable", name, where)
    for column in _member(info, "columns", list, where):
        column_name = _member(column, "name", str, where)
        _publishable("column name", column_name, where)
        names.append(column_name)
        if _member(column, "type", str, where, "").upper() in BINARY_TYPES:
            binary.add(column_name)
        if (position := _member(column, "primaryKeyPos", int, where, 0)) > 0:
            positions[column_name] = position
    if len(set(positions.values())) != len(positions):
        raise SourceInputError(
            f"primaryKeyPos values {shown(sorted(positions.values()))} repeat", where
        )
    key = keys.get(name) or sorted(positions, key=positions.__getitem__)
    table = ChangeTable.from_columns(name, names, key, prefix, where)
    options = _member(_member(document, "formatInfo", dict, where, {}), "options", dict, where, {})
    return _Metadata(table, tuple(names), frozenset(binary) & set(table.columns), options)


def _csv_records(path: Path, metadata: _Metadata,
                 held: _Held) -> Iterator[tuple[list[object], str]]:
    """Records of a CSV change-table file as the .dfm's options describe it; a first line
    of the column names is skipped. Its rows are held until every file is read: its bytes
    count as held."""
    options, names = metadata.options, list(metadata.names)
    dfm = str(path.with_suffix(".dfm"))
    if options.get("recordDelimiter", "\n") not in ("\n", "\r\n"):
        raise SourceInputError(
            f"record delimiter {shown(options['recordDelimiter'])} is not supported "
            "(only \\n)",
            dfm,
        )
    null, quote = options.get("nullValue", ""), options.get("quoteChar", '"') or None
    held.add(path.stat().st_size, str(path))
    # The csv module's limit is the whole process's: raised to a record's bound, never
    # lowered.
    csv.field_size_limit(max(csv.field_size_limit(), MAX_RECORD_BYTES))
    with path.open(encoding="utf-8", newline="") as text:
        try:
            reader = csv.reader(
                text, delimiter=options.get("fieldDelimiter", ","), quotechar=quote,
                escapechar=options.get("escapeChar") or None, strict=True,
                quoting=csv.QUOTE_MINIMAL if quote else csv.QUOTE_NONE,
            )
        except TypeError as exc:  # a delimiter, quote or escape that is not one character
            raise SourceInputError(f"formatInfo.options: {exc}", dfm) from None
        start = 1
        try:
            for number, fields in enumerate(reader):
                where, start = f"{path} line {start}", reader.line_num + 1
                if number == 0 and fields == names:
                    continue
                if len(fields) != len(names):
                    raise SourceInputError(
                        f"{len(fields)} fields, but the .dfm lists {len(names)} columns", where
                    )
                yield [
                    _csv_value(name, field, null, metadata.binary, where)
                    for name, field in zip(names, fields)
                ], where
        except csv.Error as exc:
            raise SourceInputError(f"CSV: {exc}", f"{path} line {start}") from None
        except UnicodeDecodeError:
            raise _not_utf8(path) from None


def _not_utf8(path: Path) -> SourceInputError:
    """The error of a file that is not UTF-8, naming the line and byte; read again whole
    to find them (the text is read a chunk at a time, which knows neither)."""
    data = path.read_bytes()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        return SourceInputError(
            f"not UTF-8 text (byte {data[exc.start]:#04x} at byte {exc.start})",
            f"{path} line {line}",
        )
    return SourceInputError("not UTF-8 text (it changed while it was read)", str(path))


def _csv_value(name: str, field: str, null: object, binary: frozenset[str], where: str) -> object:
    if field == null:
        return None
    if name not in binary:
        return field
    try:
        return bytes.fromhex(field)
    except ValueError:
        message = f"binary column {shown(name)} holds {shown(field)}, not hex text"
        raise SourceInputError(message, where) from None


def _parquet_records(path: Path, metadata: _Metadata,
                     held: _Held) -> Iterator[tuple[list[object], str]]:
    """Records of a Parquet change-table file, a batch at a time; the values of its
    records count as held."""
    number = 0
    try:
        parquet = pq.ParquetFile(path)
        names = tuple(parquet.schema_arrow.names)
        if names != metadata.names:
            raise SourceInputError(
                f"columns {shown(list(names))} are not the .dfm's {shown(list(metadata.names))}",
                str(path),
            )
        for batch in parquet.iter_batches(batch_size=PARQUET_BATCH_ROWS):
            for record in _batch_records(batch, path, number):
                number += 1
                where = f"{path} row {number}"
                held.add(sum(_value_size(value) for value in record), where)
                yield record, where
    except (pa.ArrowException, OSError, ValueError) as exc:  # a name not UTF-8, too
        raise SourceInputError(f"cannot read Parquet: {shown(str(exc))}", str(path)) from None


def _batch_records(batch: pa.RecordBatch, path: Path, before: int) -> list[list[object]]:
    """A batch's records as Python values; a value Python cannot hold (a date out of its
    range) is an error naming its row, ``before`` the rows of the batches before."""
    try:
        return [list(record) for record in zip(*(column.to_pylist() for column in batch))]
    except (ValueError, OverflowError, pa.ArrowException):
        for row in range(batch.num_rows):  # which one: only once it is known to fail
            for name, column in zip(batch.schema.names, batch.columns):
                try:
                    column[row].as_py()
                except (ValueError, OverflowError, pa.ArrowException) as exc:
                    raise SourceInputError(
                        f"column {shown(name)}: {shown(str(exc))}",
                        f"{path} row {before + row + 1}",
                    ) from None
        raise


def _value_size(value: object) -> int:
    """What a value read from Parquet holds: the length of text or bytes, 8 else."""
    return len(value) if isinstance(value, (str, bytes)) else 8


def _data_files(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    given = [Path(paths)] if isinstance(paths, (str, Path)) else [Path(p) for p in paths]
    files = []
    for path in given:
        if path.is_dir():
            files += sorted(p for p in path.rglob("*") if p.suffix in DATA_SUFFIXES)
        elif path.is_file() and path.suffix in DATA_SUFFIXES:
            files.append(path)
        else:
            raise ConfigError(f"{path} is not a directory, nor a .csv or .parquet file")
    return files


def read_files(paths: str | Path | Iterable[str | Path],
               keys: Mapping[str, Sequence[str]] | None = None, *,
               header_prefix: str = HEADER_PREFIX, byte_order: ByteOrder | None = None,
               max_buffered_bytes: int = MAX_BUFFERED_BYTES) -> list[ChangeEvent]:
    """The events of landed change-table files, merged in change_seq order.

    ``paths``: a directory (searched recursively) or files and directories; each .csv or
    .parquet file needs its .dfm beside it (same name). ``keys`` (table -> key columns)
    overrides the .dfm's primaryKeyPos. Every file is read before any event is returned:
    before images pair with updates across files, and a table's DELETE rows decide its
    masks' byte order. What the files hold is bounded by ``max_buffered_bytes``: a CSV
    file's bytes, a Parquet file's values (text and bytes by their length, others 8).
    """
    rows, held = [], _Held(max_buffered_bytes)
    for path in _data_files(paths):
        metadata = _metadata(path, keys or {}, header_prefix)
        read = _parquet_records if path.suffix == ".parquet" else _csv_records
        rows += (
            metadata.table.row(record, where) for record, where in read(path, metadata, held)
        )
    return change_events(rows, byte_order)
