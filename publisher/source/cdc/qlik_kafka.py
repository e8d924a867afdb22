"""Qlik Kafka messages (SOURCES.md section B, seed 001) read from JSON lines into
ChangeEvents.

Two steps: ``parse_message`` turns one line, bare or wrapped as
``{"magic": "atMSG", "type": "MD" | "DT", "message": {...}}``, into a typed
``TableMetadata`` or ``DataMessage``; ``ChangeAssembler`` keeps the latest metadata per
table and table version, maps each data message to events and holds them until their
transaction is whole. ``read_changes`` chains them over a file or any text stream. Every
error is a ``KafkaMessageError`` naming the 1-based line. Only JSON is read: Avro-encoded
messages are refused with a ConfigError (no Avro decoder is installed).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import NoReturn, TextIO, TypeVar

from publisher.errors import ConfigError, SourceInputError
from publisher.model.changes import ChangeEvent
from publisher.model.events import EventType
from publisher.source.cdc.qlik_mask import MaskError, kafka_columns

__all__ = [
    "KafkaMessageError",
    "Column",
    "TableMetadata",
    "DataMessage",
    "Message",
    "IncompleteTransaction",
    "ChangeAssembler",
    "parse_message",
    "read_messages",
    "read_changes",
]

logger = logging.getLogger(__name__)

MAGIC = "atMSG"
METADATA_TYPE, DATA_TYPE = "MD", "DT"
REFRESH, INSERT, UPDATE, DELETE = "REFRESH", "INSERT", "UPDATE", "DELETE"
OPERATIONS = (REFRESH, INSERT, UPDATE, DELETE)
# Qlik's binary data types; their values must already be Base64 text, as the event log
# holds binary.
BINARY_TYPES = frozenset({"BYTES", "BLOB", "BINARY", "VARBINARY"})


class KafkaMessageError(SourceInputError):
    """A message this reader cannot read; ``line`` is its 1-based line in the input."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message, f"line {line}")
        self.line = line


@dataclass(frozen=True)
class _Number:
    """A JSON number kept as the text it was written as, so values are published unchanged
    ("1.50" stays "1.50", -0 stays "-0", a 20-digit integer loses nothing)."""

    text: str


JsonValue = str | bool | _Number | None | list | dict
Row = Mapping[str, JsonValue]
Key = tuple[tuple[str, str], ...]


# --- messages -------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    """A column of a metadata message's ``tableStructure.tableColumns``."""

    name: str
    ordinal: int  # 1-based; mask bit ordinal-1
    type: str
    length: int | None
    precision: int | None
    scale: int | None
    key_position: int  # primaryKeyPosition: 0 = not a key column


@dataclass(frozen=True)
class TableMetadata:
    """A metadata message: one table version's structure. ``columns`` are in ordinal order,
    ``keys`` the key column names in primaryKeyPosition order."""

    line: int
    schema_id: str | None
    server: str | None
    task: str | None
    schema: str | None
    table: str
    table_version: int | None
    timestamp: str | None
    columns: tuple[Column, ...]
    keys: tuple[str, ...]
    data_schema: str | None

    @cached_property
    def names(self) -> tuple[str, ...]:
        """The column names in ordinal order, as the masks count them."""
        return tuple(column.name for column in self.columns)

    @cached_property
    def by_name(self) -> dict[str, Column]:
        return {column.name: column for column in self.columns}


@dataclass(frozen=True)
class DataMessage:
    """A data message: one row change. ``table_version`` is None when the message names
    none (the table's latest metadata applies); ``change_sequence`` is "" for a REFRESH
    without one (seed 001: the header applies to CDC operations only)."""

    line: int
    schema: str | None
    table: str
    table_version: int | None
    operation: str
    change_sequence: str
    timestamp: str | None
    stream_position: str | None
    transaction_id: str | None
    event_counter: int | None
    last_event: bool
    change_mask: str | None
    column_mask: str | None
    data: Row | None
    before_data: Row | None


Message = TableMetadata | DataMessage


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def parse_message(text: str, line: int) -> Message:
    """The message one JSON line holds, bare or in its ``atMSG`` wrapper."""
    try:
        value = json.loads(
            text, parse_int=_Number, parse_float=_Number, parse_constant=_reject_constant
        )
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise KafkaMessageError(f"invalid JSON: {exc}", line) from None
    if not isinstance(value, dict):
        raise KafkaMessageError("a message must be a JSON object", line)
    kind, message = _unwrap(value, line)
    is_metadata = "tableStructure" in message
    is_data = "headers" in message or "data" in message
    if is_metadata == is_data:
        raise KafkaMessageError(
            "message is neither metadata (tableStructure) nor data (headers, data)"
            if not is_metadata
            else "message has both metadata (tableStructure) and data (headers, data)",
            line,
        )
    if kind is not None and kind != (METADATA_TYPE if is_metadata else DATA_TYPE):
        raise KafkaMessageError(
            f"wrapper type {kind!r} but the message is {'metadata' if is_metadata else 'data'}",
            line,
        )
    return _metadata(message, line) if is_metadata else _data(message, line)


def _unwrap(value: dict, line: int) -> tuple[str | None, dict]:
    """The wrapper's type and the message inside; (None, value) for a bare message."""
    if "magic" not in value:
        return None, value
    if value["magic"] != MAGIC:
        raise KafkaMessageError(f"magic {value['magic']!r}, expected {MAGIC!r}", line)
    kind = value.get("type")
    if kind not in (METADATA_TYPE, DATA_TYPE):
        raise KafkaMessageError(
            f"message type {kind!r} is neither metadata ({METADATA_TYPE!r}) nor data "
            f"({DATA_TYPE!r})",
            line,
        )
    message = value.get("message")
    if not isinstance(message, dict):
        # An Avro-encoded message would land here as text.
        raise KafkaMessageError(
            "the wrapper's message is not a JSON object (Avro-encoded messages are not "
            "supported)",
            line,
        )
    return kind, message


# Typed field access: each names the field and the line when the value has the wrong type.


def _object(parent: Mapping, name: str, line: int) -> dict:
    value = parent.get(name)
    if not isinstance(value, dict):
        raise KafkaMessageError(f"{name} must be a JSON object, not {_shown(value)}", line)
    return value


def _optional_object(parent: Mapping, name: str, line: int) -> dict | None:
    return None if parent.get(name) is None else _object(parent, name, line)


def _string(parent: Mapping, name: str, line: int) -> str | None:
    value = parent.get(name)
    if value is not None and not isinstance(value, str):
        raise KafkaMessageError(f"{name} must be text, not {_shown(value)}", line)
    return value


def _integer(parent: Mapping, name: str, line: int) -> int | None:
    value = parent.get(name)
    if value is None:
        return None
    # Integral JSON numbers only: "1" (text) or 1.0 would be guesses.
    if isinstance(value, _Number) and value.text.lstrip("-").isdigit():
        return int(value.text)
    raise KafkaMessageError(f"{name} must be an integer, not {_shown(value)}", line)


_T = TypeVar("_T")


def _required(
    read: Callable[[Mapping, str, int], _T | None], parent: Mapping, name: str, line: int
) -> _T:
    value = read(parent, name, line)
    if value is None:
        raise KafkaMessageError(f"{name} is missing", line)
    return value


def _shown(value: JsonValue) -> str:
    if isinstance(value, _Number):
        return value.text
    if isinstance(value, (dict, list)):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    return json.dumps(value)


def _metadata(message: dict, line: int) -> TableMetadata:
    lineage = _object(message, "lineage", line)
    table_columns = _object(_object(message, "tableStructure", line), "tableColumns", line)
    columns = []
    for name, spec in table_columns.items():
        if not isinstance(spec, dict):
            raise KafkaMessageError(f"column {name!r} must be a JSON object", line)
        ordinal = _required(_integer, spec, "ordinal", line)
        key_position = _integer(spec, "primaryKeyPosition", line) or 0
        columns.append(
            Column(
                name, ordinal, _required(_string, spec, "type", line),
                _integer(spec, "length", line), _integer(spec, "precision", line),
                _integer(spec, "scale", line), key_position,
            )
        )
    columns.sort(key=lambda column: column.ordinal)
    # Mask bit k-1 is ordinal k: the ordinals must be exactly 1..n for the masks to fit.
    ordinals = [column.ordinal for column in columns]
    if ordinals != list(range(1, len(columns) + 1)):
        raise KafkaMessageError(f"column ordinals {ordinals} are not 1..{len(columns)}", line)
    keyed = sorted(
        (column for column in columns if column.key_position), key=lambda c: c.key_position
    )
    positions = [column.key_position for column in keyed]
    if len(set(positions)) != len(positions) or any(position < 0 for position in positions):
        raise KafkaMessageError(
            f"primaryKeyPosition values {positions} repeat or are negative", line
        )
    return TableMetadata(
        line,
        _string(message, "schemaId", line),
        _string(lineage, "server", line),
        _string(lineage, "task", line),
        _string(lineage, "schema", line),
        _required(_string, lineage, "table", line),
        _integer(lineage, "tableVersion", line),
        _string(lineage, "timestamp", line),
        tuple(columns),
        tuple(column.name for column in keyed),
        _string(message, "dataSchema", line),
    )


def _naming(message: dict, headers: dict, line: int) -> tuple[str | None, str, int | None]:
    """Schema, table and table version of a data message. Seed 001 puts ``schema`` and
    ``table`` on the message itself; a ``lineage`` object (as on metadata) or the headers
    may carry them too. Every place that names one must agree."""
    places = (message, _optional_object(message, "lineage", line) or {}, headers)
    table = _agreed(places, "table", _string, line)
    if table is None:
        raise KafkaMessageError("data message names no table", line)
    return (
        _agreed(places, "schema", _string, line),
        table,
        _agreed(places, "tableVersion", _integer, line),
    )


def _agreed(
    places: Sequence[Mapping], name: str, read: Callable[[Mapping, str, int], _T | None],
    line: int,
) -> _T | None:
    """The one value the places give for ``name``, None if none gives one."""
    values = {read(place, name, line) for place in places} - {None}
    if len(values) > 1:
        raise KafkaMessageError(f"the message names {name} {sorted(values, key=str)}", line)
    return values.pop() if values else None


def _data(message: dict, line: int) -> DataMessage:
    headers = _object(message, "headers", line)
    schema, table, version = _naming(message, headers, line)
    operation = _required(_string, headers, "operation", line)
    if operation not in OPERATIONS:
        raise KafkaMessageError(
            f"operation {operation!r} is none of {', '.join(OPERATIONS)}", line
        )
    # Seed 001: changeSequence applies to CDC operations only, not to a full load.
    sequence = (
        _string(headers, "changeSequence", line)
        if operation == REFRESH
        else _required(_string, headers, "changeSequence", line)
    )
    last = headers.get("transactionLastEvent")
    if last is not None and not isinstance(last, bool):
        raise KafkaMessageError(
            f"transactionLastEvent must be true or false, not {_shown(last)}", line
        )
    return DataMessage(
        line, schema, table, version, operation, sequence or "",
        _string(headers, "timestamp", line),
        _string(headers, "streamPosition", line),
        _string(headers, "transactionId", line),
        _integer(headers, "transactionEventCounter", line),
        bool(last),
        _string(headers, "changeMask", line),
        _string(headers, "columnMask", line),
        _optional_object(message, "data", line),
        _optional_object(message, "beforeData", line),
    )


def read_messages(stream: TextIO) -> Iterator[Message]:
    """The messages of a JSON lines file or text stream, one a line; blank lines are
    skipped (but counted)."""
    for line, text in enumerate(stream, start=1):
        if text.strip():
            yield parse_message(text, line)


# --- messages to events ---------------------------------------------------------------


@dataclass(frozen=True)
class IncompleteTransaction:
    """A transaction the input ended inside: never emitted. ``counters`` are the
    transactionEventCounter values that arrived, ``last`` the last event's counter if it
    came, ``first_line`` the line of its first message to arrive."""

    transaction_id: str
    counters: tuple[int, ...]
    last: int | None
    first_line: int


@dataclass
class _Transaction:
    """The events of a transaction's messages so far, by transactionEventCounter."""

    first_line: int
    parts: dict[int, list[ChangeEvent]] = field(default_factory=dict)
    last: int | None = None


class ChangeAssembler:
    """Turns messages into events, a whole transaction at a time.

    Metadata messages replace the metadata of their table and table version; a data
    message uses the version it names, else the latest metadata of its table. Each data
    message is mapped when it arrives (so errors name its line); its events wait under
    its transactionId until counters 1..n have all arrived and n is marked
    transactionLastEvent, then come out in counter order. Transactions may interleave and
    arrive out of counter order. REFRESH messages (full load) and messages without a
    transactionEventCounter belong to no transaction and come out at once. A transaction
    still open at ``close`` emits nothing and is listed in ``incomplete``.

    Mapping: REFRESH and INSERT give a type 1 per present non-key column (columnMask; all
    columns without one) whose value is not null; UPDATE a type 2 per non-key column its
    changeMask marks, old from beforeData (type 3 without beforeData, or when beforeData
    lacks the column); DELETE one type 4, keyed from data (seed 001: beforeData is for
    UPDATE), or from beforeData when data is null. An UPDATE whose beforeData has another
    key is the delete of the old row and the insert of the new one. ``order`` is
    (changeSequence, transactionEventCounter or 0, position within the message)."""

    def __init__(self) -> None:
        self._versions: dict[tuple[str | None, str], dict[int | None, TableMetadata]] = {}
        self._latest: dict[tuple[str | None, str], TableMetadata] = {}
        self._open: dict[str, _Transaction] = {}
        self.incomplete: tuple[IncompleteTransaction, ...] = ()

    def apply(self, message: Message) -> list[ChangeEvent]:
        """The events ``message`` releases: its own, a whole transaction's, or none yet."""
        if isinstance(message, TableMetadata):
            table = (message.schema, message.table)
            self._versions.setdefault(table, {})[message.table_version] = message
            self._latest[table] = message
            return []
        events = _events(self._metadata(message), message)
        if message.operation == REFRESH or message.event_counter is None:
            return events
        return self._collect(message, events)

    def close(self) -> tuple[IncompleteTransaction, ...]:
        """End of input: open transactions are dropped, never half emitted, and reported
        (a warning, ``incomplete`` and the return value)."""
        self.incomplete = tuple(
            IncompleteTransaction(txid, tuple(sorted(tx.parts)), tx.last, tx.first_line)
            for txid, tx in self._open.items()
        )
        self._open.clear()
        for tx in self.incomplete:
            logger.warning(
                "Qlik Kafka input ended inside transaction %s (from line %d; counters %s of "
                "%s): not emitted",
                tx.transaction_id, tx.first_line, list(tx.counters),
                tx.last if tx.last is not None else "an unknown last",
            )
        return self.incomplete

    def _metadata(self, message: DataMessage) -> TableMetadata:
        table = (message.schema, message.table)
        shown = ".".join(part for part in table if part)
        if message.table_version is None:
            metadata = self._latest.get(table)
        else:
            metadata = self._versions.get(table, {}).get(message.table_version)
            shown += f" version {message.table_version}"
        if metadata is None:
            raise KafkaMessageError(f"no metadata message seen for table {shown}", message.line)
        return metadata

    def _collect(self, message: DataMessage, events: list[ChangeEvent]) -> list[ChangeEvent]:
        line, counter, txid = message.line, message.event_counter, message.transaction_id
        assert counter is not None  # apply emits counterless messages at once
        if txid is None:
            raise KafkaMessageError("transactionEventCounter without a transactionId", line)
        if counter < 1:
            raise KafkaMessageError(f"transactionEventCounter {counter} is not 1 or more", line)
        tx = self._open.setdefault(txid, _Transaction(line))
        if counter in tx.parts:
            raise KafkaMessageError(
                f"transaction {txid} has transactionEventCounter {counter} twice", line
            )
        if message.last_event:
            if tx.last is not None:
                raise KafkaMessageError(
                    f"transaction {txid} has two last events ({tx.last} and {counter})", line
                )
            beyond = [seen for seen in tx.parts if seen > counter]
            if beyond:
                raise KafkaMessageError(
                    f"transaction {txid} ends at event {counter} but has event {max(beyond)}",
                    line,
                )
            tx.last = counter
        elif tx.last is not None and counter > tx.last:
            raise KafkaMessageError(
                f"transaction {txid} ended at event {tx.last}; event {counter} is beyond it", line
            )
        tx.parts[counter] = events
        if tx.last is None or len(tx.parts) < tx.last:
            return []
        del self._open[txid]
        return [event for counter in sorted(tx.parts) for event in tx.parts[counter]]


# One event without its order: key, type, column, old value, new value.
_Change = tuple[Key, EventType, str | None, str | None, str | None]


def _events(metadata: TableMetadata, message: DataMessage) -> list[ChangeEvent]:
    """The events of one data message, in message order."""
    counter = message.event_counter or 0
    return [
        ChangeEvent((message.change_sequence, counter, position), metadata.table, *change)
        for position, change in enumerate(_row_changes(metadata, message))
    ]


def _row_changes(metadata: TableMetadata, message: DataMessage) -> list[_Change]:
    line, names = message.line, metadata.names
    if not metadata.keys:
        raise KafkaMessageError(
            f"table {metadata.table} has no key column in its metadata (line "
            f"{metadata.line}: no primaryKeyPosition above 0)",
            line,
        )
    for label, row in (("data", message.data), ("beforeData", message.before_data)):
        unknown = sorted(set(row or ()) - set(names))
        if unknown:
            raise KafkaMessageError(
                f"{label} has column(s) {unknown} that table {metadata.table}'s metadata "
                f"(line {metadata.line}) does not list",
                line,
            )
    present = _marked(message.column_mask, "columnMask", names, line)
    changed = _marked(message.change_mask, "changeMask", names, line)
    if present is None:
        present = names  # seed 001: the mask normally covers every column
    if message.operation == DELETE:
        row = message.data if message.data is not None else message.before_data
        key = _key(metadata, row, "data and beforeData", line)
        return [(key, EventType.DELETE_ROW, None, None, None)]
    data = message.data
    if data is None:
        raise KafkaMessageError(f"{message.operation} message has no data", line)
    key = _key(metadata, data, "data", line)
    if message.operation in (REFRESH, INSERT):
        return _inserted(metadata, key, data, present, line)
    if changed is None:
        raise KafkaMessageError("UPDATE message has no changeMask", line)
    before = message.before_data
    old_key = None if before is None else _key(metadata, before, "beforeData", line)
    if old_key is not None and old_key != key:
        deleted: _Change = (old_key, EventType.DELETE_ROW, None, None, None)
        return [deleted, *_inserted(metadata, key, data, present, line)]
    moved = [column for column in changed if column in metadata.keys]
    if before is None and moved:
        raise KafkaMessageError(
            f"UPDATE changes key column(s) {moved} but has no beforeData to name the old row",
            line,
        )
    changes: list[_Change] = []
    for column in changed:
        # A changed column not present in the message has no new value to publish.
        if column in metadata.keys or column not in present:
            continue
        new = _text(metadata, data, column, line)
        if before is None or column not in before:
            changes.append((key, EventType.UPDATE_FIELD_REMOVE_ALL, column, None, new))
        else:
            old = _text(metadata, before, column, line)
            changes.append((key, EventType.UPDATE_FIELD, column, old, new))
    return changes


def _inserted(
    metadata: TableMetadata, key: Key, row: Row, present: Sequence[str], line: int
) -> list[_Change]:
    """A type 1 per present non-key column; a null adds nothing, as in the event log."""
    changes: list[_Change] = []
    for column in present:
        value = _text(metadata, row, column, line)
        if column not in metadata.keys and value is not None:
            changes.append((key, EventType.INSERT_FIELD, column, None, value))
    return changes


def _marked(
    mask: str | None, label: str, names: Sequence[str], line: int
) -> tuple[str, ...] | None:
    """The columns a mask marks, None when the message has no such mask."""
    if mask is None:
        return None
    try:
        return kafka_columns(mask, names)
    except MaskError as exc:
        raise KafkaMessageError(f"{label}: {exc}", line) from None


def _key(metadata: TableMetadata, row: Row | None, label: str, line: int) -> Key:
    """The row's key columns and values as text, in primaryKeyPosition order."""
    key = []
    for column in metadata.keys:
        value = None if row is None else _text(metadata, row, column, line)
        if value is None:
            raise KafkaMessageError(f"key column {column} is null or absent in {label}", line)
        key.append((column, value))
    return tuple(key)


def _text(metadata: TableMetadata, row: Row, name: str, line: int) -> str | None:
    """A column value as the event log holds it: numbers as written, booleans true/false,
    binary as Base64 text (which Qlik's JSON already is: kept as is, checked)."""
    value = row.get(name)
    if value is None:
        return None
    column = metadata.by_name[name]
    if column.type.upper() in BINARY_TYPES:
        if isinstance(value, str) and _is_base64(value):
            return value
        raise KafkaMessageError(
            f"column {name} of type {column.type} holds {_shown(value)}, not Base64 text", line
        )
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _Number):
        return value.text
    if isinstance(value, str):
        return value
    raise KafkaMessageError(f"column {name} holds {_shown(value)}, not a single value", line)


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except binascii.Error:
        return False
    return True


# --- reading --------------------------------------------------------------------------


def read_changes(
    stream: TextIO,
    assembler: ChangeAssembler | None = None,
    message_format: str = "json",
) -> Iterator[ChangeEvent]:
    """The events of a JSON lines file or text stream, a whole transaction at a time.

    Pass an ``assembler`` to keep metadata across inputs or to inspect its ``incomplete``
    transactions once the events are read. ``message_format`` "avro" is refused (a
    ConfigError, at once): Avro decoding is not implemented.
    """
    if message_format == "avro":
        raise ConfigError(
            "Qlik Kafka messages in Avro are not supported yet (no Avro decoder is "
            "installed); set the Kafka target's message format to JSON"
        )
    if message_format != "json":
        raise ConfigError(f"unknown Qlik Kafka message format {message_format!r}: use json")
    return _changes(stream, assembler or ChangeAssembler())


def _changes(stream: TextIO, assembler: ChangeAssembler) -> Iterator[ChangeEvent]:
    for message in read_messages(stream):
        yield from assembler.apply(message)
    assembler.close()
