"""Qlik Kafka messages (docs/change-formats.md, Qlik Kafka messages) read into
ChangeEvents, from JSON lines or from Avro.

Two steps: the messages are parsed into a typed ``TableMetadata`` or ``DataMessage``
each; ``MessageTransactions`` keeps the latest metadata per table and table version, maps
each data message with the shared mapping (``mapping.row_change_events``) and holds the
events until their transaction is whole.
``read_changes`` chains them over a file or stream. Every error is a
``KafkaMessageError`` naming where its message starts.

JSON (``message_format="json"``, a text stream): one message a line, bare or wrapped as
``{"magic": "atMSG", "type": "MD" | "DT", "message": {...}}`` (``parse_message``,
``read_messages``); errors name the 1-based line.

Avro (``message_format="avro"``, a binary stream; ``read_avro_messages``): Replicate
publishes every Avro message in the Replicate envelope, itself an Avro record (magic
``atMSG``, type, headers, messageSchemaId, messageSchema, message bytes). A metadata
message embeds the schema of its own bytes (messageSchema); a data message names, in
messageSchemaId, the schemaId of the metadata message whose ``dataSchema`` its bytes are
written with. Kafka keeps each message's value apart, a file does not: the input is the
values one after another, each after its length as a 4-byte big-endian integer, which is
what ``kcat -C -f '%R%s'`` writes. That keeps the topic as it was published, metadata and
data in one order, each message decoded with the schema it names; an Avro container file
would hold one schema for all of them. Errors name the message's 1-based index and the
byte where its length starts; a decoding error also names the byte where the bad part
starts. Every datum is checked to be bounded (``avro_bounds``) before fastavro decodes it.
Where the documentation is unclear, both readings are
taken: a data envelope may embed its schema instead of naming one (its record must then
name its table); masks may be bytes or hex text. What cannot be read fails loudly: a
value in the schema registry's framing (byte 0 and a 4-byte registry id: the registry is
not read), a bare Avro record (no envelope names its schema), a data message whose
schemaId no earlier metadata message had.
"""

from __future__ import annotations

import base64
import io
import itertools
import json
import logging
import struct
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, time
from decimal import Decimal
from functools import cached_property, lru_cache
from typing import BinaryIO, Literal, NamedTuple, NoReturn, TextIO, TypeVar

import fastavro
from fastavro.schema import SchemaParseException
from fastavro.types import Schema

from publisher.errors import ConfigError, SourceInputError
from publisher.model.changes import ChangeEvent
from publisher.source.cdc import (
    MAX_BUFFERED_BYTES,
    MAX_RECORD_BYTES,
    SHOWN_CHARACTERS,
    shown,
    unpublishable,
)
from publisher.source.cdc.avro_bounds import AvroBoundsError, check_bounds
from publisher.source.cdc.mapping import (
    Image,
    KeyChangeWithoutBefore,
    KeyValueMissing,
    NoEventLogText,
    Operation,
    RowChange,
    event_log_text,
    row_change_events,
)
from publisher.source.cdc.qlik_mask import MaskError, kafka_columns

__all__ = [
    "KafkaMessageError", "Column", "TableMetadata", "DataMessage", "Message",
    "IncompleteTransaction", "MessageTransactions", "parse_message", "read_messages",
    "read_avro_messages", "read_changes",
]

logger = logging.getLogger(__name__)

MAGIC = "atMSG"
METADATA_TYPE, DATA_TYPE = "MD", "DT"
REFRESH, INSERT, UPDATE, DELETE = "REFRESH", "INSERT", "UPDATE", "DELETE"
OPERATIONS = (REFRESH, INSERT, UPDATE, DELETE)
# Qlik's binary data types; the event log holds binary as Base64 text, which is what
# their JSON values already are (Avro gives bytes).
BINARY_TYPES = frozenset({"BYTES", "BLOB", "BINARY", "VARBINARY"})
# Integers in messages (ordinals, versions, counters) are Avro longs or their JSON form.
_LONGS = range(-(2**63), 2**63)
# A schema text longer than this is parsed each time it is named, not kept.
_CACHED_SCHEMA_CHARACTERS = 1 << 20


class _Schema(NamedTuple):
    """A parsed Avro schema and its named types by full name, which avro_bounds needs."""

    schema: Schema
    named: dict[str, Schema]


# The Replicate envelope, as Qlik's documentation gives it.
_ENVELOPE_NAMED: dict[str, Schema] = {}
ENVELOPE_SCHEMA = fastavro.parse_schema({
    "type": "record",
    "name": "MessageEnvelope",
    "fields": [
        {"name": "magic", "type": {"type": "fixed", "name": "Magic", "size": 5}},
        {"name": "type", "type": "string"},
        {"name": "headers", "type": ["null", {"type": "map", "values": "string"}]},
        {"name": "messageSchemaId", "type": ["null", "string"]},
        {"name": "messageSchema", "type": ["null", "string"]},
        {"name": "message", "type": "bytes"},
    ],
}, named_schemas=_ENVELOPE_NAMED)
_ENVELOPE = _Schema(ENVELOPE_SCHEMA, _ENVELOPE_NAMED)


class KafkaMessageError(SourceInputError):
    """A message this reader cannot read (docs/change-formats.md, Errors); ``where`` names
    where it starts in the input ("line 3" in JSON lines, "message 3 at byte 120" in
    Avro)."""


@dataclass(frozen=True)
class _Number:
    """A JSON number kept as the text it was written as, so values are published unchanged
    ("1.50" stays "1.50", -0 stays "-0", a 20-digit integer loses nothing)."""

    text: str


JsonValue = str | bool | _Number | None | list | dict
# What Avro decodes to besides JSON's values: int and long, float and double, bytes, and
# the logical decimal, date, time and timestamp types.
AvroValue = int | float | bytes | Decimal | date | time
Row = Mapping[str, JsonValue | AvroValue]


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
    """A metadata message: one table version's structure. ``where`` is where the message
    starts in its input, ``columns`` are in ordinal order, ``keys`` the key column names in
    primaryKeyPosition order."""

    where: str
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
    without one (Qlik's documented messages: the header applies to CDC operations only).
    ``size`` is the message's length in its input (bytes of Avro, characters of a JSON
    line), which an open transaction holds."""

    where: str
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
    size: int = 0


Message = TableMetadata | DataMessage


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def parse_message(text: str, line: int) -> Message:
    """The message one JSON line holds, bare or in its ``atMSG`` wrapper; ``line`` is its
    1-based line, which errors name."""
    where = f"line {line}"
    try:
        value = json.loads(
            text, parse_int=_Number, parse_float=_Number, parse_constant=_reject_constant
        )
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise KafkaMessageError(f"invalid JSON: {exc}", where) from None
    except RecursionError:
        raise KafkaMessageError("invalid JSON: nested too deep", where) from None
    if not isinstance(value, dict):
        raise KafkaMessageError("a message must be a JSON object", where)
    kind, message = _unwrap(value, where)
    is_metadata = "tableStructure" in message
    is_data = "headers" in message or "data" in message
    if is_metadata == is_data:
        raise KafkaMessageError(
            "message is neither metadata (tableStructure) nor data (headers, data)"
            if not is_metadata
            else "message has both metadata (tableStructure) and data (headers, data)",
            where,
        )
    if kind is not None and kind != (METADATA_TYPE if is_metadata else DATA_TYPE):
        raise KafkaMessageError(
            f"wrapper type {kind!r} but the message is {'metadata' if is_metadata else 'data'}",
            where,
        )
    return _metadata(message, where) if is_metadata else _data(message, where, len(text))


def _unwrap(value: dict, where: str) -> tuple[str | None, dict]:
    """The wrapper's type and the message inside; (None, value) for a bare message."""
    if "magic" not in value:
        return None, value
    if value["magic"] != MAGIC:
        raise KafkaMessageError(f"magic {_shown(value['magic'])}, expected {MAGIC!r}", where)
    kind = _envelope_type(value.get("type"), where)
    message = value.get("message")
    if not isinstance(message, dict):
        # An Avro-encoded message would land here as text.
        raise KafkaMessageError(
            "the wrapper's message is not a JSON object (Avro-encoded messages are read "
            "with the avro message format, from a binary stream)",
            where,
        )
    return kind, message


def _envelope_type(kind: object, where: str) -> str:
    """The envelope's message type, MD or DT, the same in JSON and Avro."""
    if kind not in (METADATA_TYPE, DATA_TYPE):
        raise KafkaMessageError(
            f"message type {shown(kind)} is neither metadata ({METADATA_TYPE!r}) nor data "
            f"({DATA_TYPE!r})",
            where,
        )
    return kind


# Typed field access: each names the field and the message when the value has the wrong
# type.


def _object(parent: Mapping, name: str, where: str) -> dict:
    value = parent.get(name)
    if not isinstance(value, dict):
        raise KafkaMessageError(f"{name} must be a JSON object, not {_shown(value)}", where)
    return value


def _optional_object(parent: Mapping, name: str, where: str) -> dict | None:
    return None if parent.get(name) is None else _object(parent, name, where)


def _string(parent: Mapping, name: str, where: str) -> str | None:
    value = parent.get(name)
    if value is not None and not isinstance(value, str):
        raise KafkaMessageError(f"{name} must be text, not {_shown(value)}", where)
    return value


def _integer(parent: Mapping, name: str, where: str) -> int | None:
    value = parent.get(name)
    if value is None:
        return None
    # Integral JSON numbers or Avro int and long only: "1" (text) or 1.0 would be guesses.
    # Not past a long: nothing counts that far, and int() refuses 4300 digits and more.
    if isinstance(value, _Number) and value.text.lstrip("-").isdigit() and len(value.text) < 21:
        value = int(value.text)
    if isinstance(value, int) and not isinstance(value, bool) and value in _LONGS:
        return value
    raise KafkaMessageError(
        f"{name} must be an integer from -2^63 to 2^63-1, not {_shown(value)}", where
    )


_T = TypeVar("_T")


def _required(read: Callable[[Mapping, str, str], _T | None], parent: Mapping, name: str,
              where: str) -> _T:
    value = read(parent, name, where)
    if value is None:
        raise KafkaMessageError(f"{name} is missing", where)
    return value


def _shown(value: JsonValue | AvroValue) -> str:
    """A value as an error message shows it (text and Avro values as cdc.shown does)."""
    if isinstance(value, _Number):  # JSON number text: digits, signs, a point, an e
        return value.text if len(value.text) <= SHOWN_CHARACTERS else shown(value.text)
    if isinstance(value, (dict, list)):
        return f"a JSON {'object' if isinstance(value, dict) else 'array'}"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    return shown(value)


def _metadata(message: dict, where: str) -> TableMetadata:
    lineage = _object(message, "lineage", where)
    table_columns = _object(_object(message, "tableStructure", where), "tableColumns", where)
    columns = []
    for name, spec in table_columns.items():
        if not isinstance(spec, dict):
            raise KafkaMessageError(f"column {shown(name)} must be a JSON object", where)
        ordinal = _required(_integer, spec, "ordinal", where)
        key_position = _integer(spec, "primaryKeyPosition", where) or 0
        columns.append(
            Column(
                name, ordinal, _required(_string, spec, "type", where),
                _integer(spec, "length", where), _integer(spec, "precision", where),
                _integer(spec, "scale", where), key_position,
            )
        )
    columns.sort(key=lambda column: column.ordinal)
    # Mask bit k-1 is ordinal k: the ordinals must be exactly 1..n for the masks to fit.
    ordinals = [column.ordinal for column in columns]
    if ordinals != list(range(1, len(columns) + 1)):
        raise KafkaMessageError(
            f"column ordinals {shown(ordinals)} are not 1..{len(columns)}", where
        )
    keyed = sorted(
        (column for column in columns if column.key_position), key=lambda c: c.key_position
    )
    positions = [column.key_position for column in keyed]
    if len(set(positions)) != len(positions) or any(position < 0 for position in positions):
        raise KafkaMessageError(
            f"primaryKeyPosition values {shown(positions)} repeat or are negative", where
        )
    return TableMetadata(
        where,
        _string(message, "schemaId", where),
        _string(lineage, "server", where),
        _string(lineage, "task", where),
        _string(lineage, "schema", where),
        _required(_string, lineage, "table", where),
        _integer(lineage, "tableVersion", where),
        _string(lineage, "timestamp", where),
        tuple(columns),
        tuple(column.name for column in keyed),
        _string(message, "dataSchema", where),
    )


def _naming(message: dict, headers: dict, where: str) -> tuple[str | None, str, int | None]:
    """Schema, table and table version of a data message. Seed 001 puts ``schema`` and
    ``table`` on the message itself; a ``lineage`` object (as on metadata) or the headers
    may carry them too. Every place that names one must agree."""
    places = (message, _optional_object(message, "lineage", where) or {}, headers)
    table = _agreed(places, "table", _string, where)
    if table is None:
        raise KafkaMessageError("data message names no table", where)
    return (
        _agreed(places, "schema", _string, where),
        table,
        _agreed(places, "tableVersion", _integer, where),
    )


def _agreed(places: Sequence[Mapping], name: str, read: Callable[[Mapping, str, str], _T | None],
            where: str) -> _T | None:
    """The one value the places give for ``name``, None if none gives one."""
    values = {read(place, name, where) for place in places} - {None}
    if len(values) > 1:
        raise KafkaMessageError(
            f"the message names {name} {shown(sorted(values, key=str))}", where
        )
    return values.pop() if values else None


def _data(message: dict, where: str, size: int) -> DataMessage:
    headers = _object(message, "headers", where)
    schema, table, version = _naming(message, headers, where)
    operation = _required(_string, headers, "operation", where)
    if operation not in OPERATIONS:
        raise KafkaMessageError(
            f"operation {_shown(operation)} is none of {', '.join(OPERATIONS)}", where
        )
    # Seed 001: changeSequence applies to CDC operations only, not to a full load.
    sequence = (
        _string(headers, "changeSequence", where)
        if operation == REFRESH
        else _required(_string, headers, "changeSequence", where)
    )
    last = headers.get("transactionLastEvent")
    if last is not None and not isinstance(last, bool):
        raise KafkaMessageError(
            f"transactionLastEvent must be true or false, not {_shown(last)}", where
        )
    return DataMessage(
        where, schema, table, version, operation, sequence or "",
        _string(headers, "timestamp", where),
        _string(headers, "streamPosition", where),
        _string(headers, "transactionId", where),
        _integer(headers, "transactionEventCounter", where),
        bool(last),
        _mask(headers, "changeMask", where),
        _mask(headers, "columnMask", where),
        _optional_object(message, "data", where),
        _optional_object(message, "beforeData", where),
        size,
    )


def _mask(headers: Mapping, name: str, where: str) -> str | None:
    """A changeMask or columnMask as hex text: JSON writes it so, Avro's data schema may
    give it as the bytes that text spells (both are read the same way)."""
    value = headers.get(name)
    if isinstance(value, bytes):
        return value.hex().upper()
    return _string(headers, name, where)


def read_messages(stream: TextIO | BinaryIO) -> Iterator[Message]:
    """The messages of a JSON lines file or stream, one a line; blank lines are skipped
    (but counted). A binary stream is read as UTF-8 (a BOM at its start skipped), a line
    at a time and never longer than MAX_RECORD_BYTES."""
    for line, text in enumerate(_text_lines(stream), start=1):
        if text.strip():
            yield parse_message(text, line)


def _text_lines(stream: TextIO | BinaryIO) -> Iterator[str]:
    if isinstance(stream.read(0), str):
        yield from stream
        return
    offset = 0
    for line in itertools.count(1):
        raw = stream.readline(MAX_RECORD_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_RECORD_BYTES:
            raise KafkaMessageError(
                f"a line longer than {MAX_RECORD_BYTES} bytes", f"line {line} at byte {offset}"
            )
        try:
            yield raw.decode("utf-8-sig" if line == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            raise KafkaMessageError(
                f"not UTF-8 text (byte {raw[exc.start]:#04x})",
                f"line {line} at byte {offset + exc.start}",
            ) from None
        offset += len(raw)


# --- Avro -----------------------------------------------------------------------------


def read_avro_messages(stream: BinaryIO,
                       schemas: dict[str, TableMetadata] | None = None) -> Iterator[Message]:
    """The messages of an Avro input: Kafka message values, each after its length as a
    4-byte big-endian integer, each a Replicate envelope (see the module's docstring).

    ``schemas`` gathers the metadata messages by schemaId as they are read, to decode the
    data messages that name one: pass the same dict to read a later input of the same
    topics (``MessageTransactions.schemas`` is one).
    """
    schemas = {} if schemas is None else schemas
    offset = 0
    for index in itertools.count(1):
        prefix = stream.read(4)
        if not prefix:
            return
        where = f"message {index} at byte {offset}"
        if len(prefix) < 4:
            raise KafkaMessageError(
                f"truncated: the input ends {len(prefix)} byte(s) into a 4-byte length", where
            )
        (length,) = struct.unpack(">i", prefix)
        if length < 0:
            raise KafkaMessageError(
                "a null message value (a Kafka tombstone), which Qlik does not write", where
            )
        if length > MAX_RECORD_BYTES:
            raise KafkaMessageError(
                f"a message length of {length} bytes, more than the {MAX_RECORD_BYTES} a "
                "message may have",
                where,
            )
        value = stream.read(length)
        if len(value) < length:
            raise KafkaMessageError(
                f"truncated: the message is {length} bytes long, the input ends after "
                f"{len(value)}",
                where,
            )
        yield _avro_message(value, where, offset + 4, schemas)
        offset += 4 + length


def _avro_message(value: bytes, where: str, start: int,
                  schemas: dict[str, TableMetadata]) -> Message:
    """The message one Kafka value holds in its Replicate envelope; ``start`` is the byte
    where the value starts in the input."""
    if not value.startswith(MAGIC.encode()):
        if value[:1] == b"\x00" and len(value) >= 5:
            registry_id = int.from_bytes(value[1:5], "big")
            raise KafkaMessageError(
                f"a message in the schema registry's framing (schema id {registry_id}), "
                "which this reader cannot look up: publish the metadata messages to a "
                "metadata topic instead of the schema registry, so that messages come in "
                "the Replicate envelope",
                where,
            )
        raise KafkaMessageError(
            f"not a Replicate envelope (it starts {value[:5]!r}, not {MAGIC!r})", where
        )
    envelope = _decoded(value, _ENVELOPE, "the Replicate envelope", where, start)
    # The message's bytes are the envelope's last field: its last bytes.
    message_start = start + len(value) - len(envelope["message"])
    if _envelope_type(envelope["type"], where) == METADATA_TYPE:
        return _avro_metadata(envelope, where, message_start, schemas)
    return _avro_data(envelope, where, message_start, len(value), schemas)


def _avro_metadata(envelope: dict, where: str, start: int,
                   schemas: dict[str, TableMetadata]) -> TableMetadata:
    """A metadata message, which embeds its own schema; recorded in ``schemas``. ``start``
    is the byte where its message bytes start in the input."""
    own_schema = envelope["messageSchema"]
    if own_schema is None:
        raise KafkaMessageError(
            f"metadata message names schema {shown(envelope['messageSchemaId'])} but does "
            "not embed it (messageSchema)",
            where,
        )
    record = _decoded(
        envelope["message"], _avro_schema(own_schema, "messageSchema", where),
        "the metadata message", where, start,
    )
    metadata = _metadata(_record(record, "metadata", where), where)
    if metadata.data_schema is not None:  # a bad dataSchema is this message's error
        _avro_schema(metadata.data_schema, "dataSchema", where)
    if metadata.schema_id is not None:
        schemas[metadata.schema_id] = metadata
    return metadata


def _avro_data(envelope: dict, where: str, start: int, size: int,
               schemas: Mapping[str, TableMetadata]) -> DataMessage:
    """A data message, decoded with the dataSchema of the metadata message it names (or
    with the schema it embeds), then read as a JSON data message is. ``start`` is the byte
    where its message bytes start in the input, ``size`` the length of its Kafka value."""
    own_schema, schema_id = envelope["messageSchema"], envelope["messageSchemaId"]
    metadata = None if schema_id is None else schemas.get(schema_id)
    if own_schema is not None:  # self-describing: its record must name its table
        schema = _avro_schema(own_schema, "messageSchema", where)
    elif metadata is None:
        raise KafkaMessageError(
            f"data message names schema {shown(schema_id)}, which no metadata message before "
            "it had (schemaId): its table version is unknown",
            where,
        )
    elif metadata.data_schema is None:
        raise KafkaMessageError(
            f"data message names schema {shown(schema_id)}, but its metadata message "
            f"({metadata.where}) has no dataSchema",
            where,
        )
    else:
        schema = _avro_schema(metadata.data_schema, "dataSchema", metadata.where)
    datum = _decoded(envelope["message"], schema, "the data message", where, start)
    record = _record(datum, "data", where)
    if metadata is not None:  # the record names no table: its metadata message does
        lineage = {
            "schema": metadata.schema, "table": metadata.table,
            "tableVersion": metadata.table_version,
        }
        record = {"lineage": lineage, **record}
    return _data(record, where, size)


def _decoded(data: bytes, schema: _Schema, label: str, where: str, start: int) -> object:
    """The one Avro datum ``data`` holds, all of it; ``start`` is the byte where ``data``
    starts in the input, which errors name. Bounded (avro_bounds) before fastavro reads
    it."""
    try:
        check_bounds(data, schema.schema, schema.named)
    except AvroBoundsError as exc:
        at = f"at byte {start + exc.offset}: {exc}"
        if exc.truncated:
            raise KafkaMessageError(
                f"{label} ends inside its record: truncated, or not written with its schema "
                f"({at})",
                where,
            ) from None
        raise KafkaMessageError(f"{label} does not match its schema {at}", where) from None
    buffer = io.BytesIO(data)
    try:
        datum = fastavro.schemaless_reader(buffer, schema.schema)
    # Text not UTF-8, a date out of range... (the walk has checked the lengths already).
    except (EOFError, ValueError, LookupError, OverflowError) as exc:
        raise KafkaMessageError(
            f"{label} does not match its schema ({type(exc).__name__}: {shown(str(exc))})",
            where,
        ) from None
    left = len(data) - buffer.tell()
    if left:
        raise KafkaMessageError(
            f"{label} does not match its schema: {left} byte(s) left after the record", where
        )
    return datum


def _record(datum: object, kind: str, where: str) -> dict:
    if not isinstance(datum, dict):
        raise KafkaMessageError(f"the {kind} message's schema is not a record", where)
    return datum


def _avro_schema(text: str, label: str, where: str) -> _Schema:
    """The parsed Avro schema ``text`` (cached unless long: every data message of a table
    version, and every metadata message, names the same one). A field name XML cannot
    carry would be a column name that cannot be published: the schema is refused."""
    parse = _parsed_schema if len(text) <= _CACHED_SCHEMA_CHARACTERS else _parse_schema
    try:
        parsed = parse(text)
    except (SchemaParseException, ValueError, TypeError, LookupError) as exc:
        raise KafkaMessageError(
            f"{label} is not an Avro schema ({type(exc).__name__}: {shown(str(exc))})", where
        ) from None
    except RecursionError:
        raise KafkaMessageError(f"{label} is not an Avro schema: nested too deep", where) from None
    for definition in parsed.named.values():
        for field_ in definition.get("fields", ()):
            name, record = field_["name"], shown(definition["name"])
            if not isinstance(name, str):  # fastavro takes any
                raise KafkaMessageError(
                    f"{label}: field {shown(name)} of {record} is not text", where
                )
            if problem := unpublishable(name):
                raise KafkaMessageError(f"{label}: field {problem} (of {record})", where)
    return parsed


def _parse_schema(text: str) -> _Schema:
    named: dict[str, Schema] = {}
    return _Schema(fastavro.parse_schema(json.loads(text), named_schemas=named), named)


_parsed_schema = lru_cache(maxsize=256)(_parse_schema)


# --- messages to events ---------------------------------------------------------------


@dataclass(frozen=True)
class IncompleteTransaction:
    """A transaction the input ended inside: never emitted. ``counters`` are the
    transactionEventCounter values that arrived, ``last`` the last event's counter if it
    came, ``first_where`` where its first message to arrive starts in the input."""

    transaction_id: str
    counters: tuple[int, ...]
    last: int | None
    first_where: str


@dataclass
class _Transaction:
    """The events of a transaction's messages so far, by transactionEventCounter."""

    first_where: str
    parts: dict[int, list[ChangeEvent]] = field(default_factory=dict)
    last: int | None = None
    size: int = 0  # the length of its messages so far


class MessageTransactions:
    """Turns messages into events, a whole transaction at a time.

    Metadata messages replace the metadata of their table and table version; a data
    message uses the version it names, else the latest metadata of its table. Each data
    message is mapped when it arrives (so errors name it); its events wait under
    its transactionId until counters 1..n have all arrived and n is marked
    transactionLastEvent, then come out in counter order. Transactions may interleave and
    arrive out of counter order. REFRESH messages (full load) and messages without a
    transactionEventCounter belong to no transaction and come out at once. A transaction
    still open at ``close`` emits nothing and is listed in ``incomplete``.

    Each data message is one row change for the shared mapping (docs/change-formats.md,
    Shared mapping): REFRESH and INSERT an insert of data, UPDATE an update of beforeData
    (when given) to data, DELETE a delete keyed from data (Qlik's documented messages: beforeData is for
    UPDATE), or from beforeData when data is null. The columns covered are those the
    columnMask marks present (all columns without one): a changed column that is not
    present has no new value to publish. An UPDATE's changed columns are those its
    changeMask marks. ``order`` is (changeSequence, transactionEventCounter or 0,
    position within the message).

    ``schemas`` holds the metadata messages by schemaId for ``read_avro_messages``, which
    fills it: kept here, it lasts across inputs as the rest of the metadata does.

    The open transactions hold at most ``max_buffered_bytes`` of messages (their
    ``size``): a message that would take them past it is an error naming it and its
    transaction (docs/change-formats.md, Errors)."""

    def __init__(self, max_buffered_bytes: int = MAX_BUFFERED_BYTES) -> None:
        self._versions: dict[tuple[str | None, str], dict[int | None, TableMetadata]] = {}
        self._latest: dict[tuple[str | None, str], TableMetadata] = {}
        self._open: dict[str, _Transaction] = {}
        self._max_buffered, self._buffered = max_buffered_bytes, 0
        self.schemas: dict[str, TableMetadata] = {}
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
            IncompleteTransaction(txid, tuple(sorted(tx.parts)), tx.last, tx.first_where)
            for txid, tx in self._open.items()
        )
        self._open.clear()
        self._buffered = 0
        for tx in self.incomplete:
            logger.warning(
                "Qlik Kafka input ended inside transaction %s (from %s; counters %s of "
                "%s): not emitted",
                shown(tx.transaction_id), tx.first_where, shown(list(tx.counters)),
                tx.last if tx.last is not None else "an unknown last",
            )
        return self.incomplete

    def _metadata(self, message: DataMessage) -> TableMetadata:
        table = (message.schema, message.table)
        named = shown(".".join(part for part in table if part))
        if message.table_version is None:
            metadata = self._latest.get(table)
        else:
            metadata = self._versions.get(table, {}).get(message.table_version)
            named += f" version {message.table_version}"
        if metadata is None:
            raise KafkaMessageError(f"no metadata message seen for table {named}", message.where)
        return metadata

    def _collect(self, message: DataMessage, events: list[ChangeEvent]) -> list[ChangeEvent]:
        where, counter, txid = message.where, message.event_counter, message.transaction_id
        assert counter is not None  # apply emits counterless messages at once
        if txid is None:
            raise KafkaMessageError("transactionEventCounter without a transactionId", where)
        if counter < 1:
            raise KafkaMessageError(f"transactionEventCounter {counter} is not 1 or more", where)
        tx = self._open.setdefault(txid, _Transaction(where))
        named = shown(txid)
        if counter in tx.parts:
            raise KafkaMessageError(
                f"transaction {named} has transactionEventCounter {counter} twice", where
            )
        if message.last_event:
            if tx.last is not None:
                raise KafkaMessageError(
                    f"transaction {named} has two last events ({tx.last} and {counter})", where
                )
            beyond = [seen for seen in tx.parts if seen > counter]
            if beyond:
                raise KafkaMessageError(
                    f"transaction {named} ends at event {counter} but has event {max(beyond)}",
                    where,
                )
            tx.last = counter
        elif tx.last is not None and counter > tx.last:
            raise KafkaMessageError(
                f"transaction {named} ended at event {tx.last}; event {counter} is beyond it",
                where,
            )
        if self._buffered + message.size > self._max_buffered:
            raise KafkaMessageError(
                f"open transactions would hold {self._buffered + message.size} bytes of "
                f"messages with this one, more than the {self._max_buffered} a reader holds "
                f"until transactions end (transaction {named}, from {tx.first_where})",
                where,
            )
        tx.parts[counter] = events
        tx.size += message.size
        self._buffered += message.size
        if tx.last is None or len(tx.parts) < tx.last:
            return []
        del self._open[txid]
        self._buffered -= tx.size
        return [event for counter in sorted(tx.parts) for event in tx.parts[counter]]


def _events(metadata: TableMetadata, message: DataMessage) -> list[ChangeEvent]:
    """The events of one data message, in message order."""
    change = _row_change(metadata, message)
    order = (message.change_sequence, message.event_counter or 0)
    try:
        return row_change_events(change, order)
    except KeyValueMissing as exc:
        image = {"after": "data", "before": "beforeData"}[exc.image]
        images = "data and beforeData" if message.operation == DELETE else image
        raise KafkaMessageError(
            f"key column {shown(exc.column)} is null or absent in {images}", message.where
        ) from None
    except KeyChangeWithoutBefore as exc:
        raise KafkaMessageError(
            f"UPDATE changes key column(s) {shown(list(exc.columns))} but has no beforeData to "
            "name the old row",
            message.where,
        ) from None


def _row_change(metadata: TableMetadata, message: DataMessage) -> RowChange:
    """The row change a data message states, its values as text."""
    where, names, keys = message.where, metadata.names, metadata.keys
    if not keys:
        raise KafkaMessageError(
            f"table {shown(metadata.table)} has no key column in its metadata "
            f"({metadata.where}: no primaryKeyPosition above 0)",
            where,
        )
    for label, row in (("data", message.data), ("beforeData", message.before_data)):
        unknown = sorted(set(row or ()) - set(names))
        if unknown:
            raise KafkaMessageError(
                f"{label} has column(s) {shown(unknown)} that table {shown(metadata.table)}'s "
                f"metadata ({metadata.where}) does not list",
                where,
            )
    present = _marked(message.column_mask, "columnMask", names, where)
    changed = _marked(message.change_mask, "changeMask", names, where)
    if present is None:
        present = names  # Qlik documents that the mask normally covers every column
    if message.operation == DELETE:
        row = message.data if message.data is not None else message.before_data
        before = _image(metadata, row or {}, keys, where)
        return RowChange(metadata.table, keys, Operation.DELETE, before=before)
    data = message.data
    if data is None:
        raise KafkaMessageError(f"{message.operation} message has no data", where)
    # Only the columns the mapping reads are converted, so only theirs can be refused.
    after = _image(metadata, data, (*keys, *present), where)
    if message.operation in (REFRESH, INSERT):
        return RowChange(metadata.table, keys, Operation.INSERT, after=after, columns=present)
    if changed is None:
        raise KafkaMessageError("UPDATE message has no changeMask", where)
    before = _image(metadata, message.before_data, (*keys, *changed), where)
    return RowChange(
        metadata.table, keys, Operation.UPDATE, before, after, columns=present, changed=changed
    )


def _marked(mask: str | None, label: str, names: Sequence[str],
            where: str) -> tuple[str, ...] | None:
    """The columns a mask marks, None when the message has no such mask."""
    if mask is None:
        return None
    try:
        return kafka_columns(mask, names)
    except MaskError as exc:
        raise KafkaMessageError(f"{label}: {exc}", where) from None


def _image(metadata: TableMetadata, row: Row | None, columns: Sequence[str],
           where: str) -> Image | None:
    """The image of a row's ``columns``: those it holds, as text (None without a row)."""
    if row is None:
        return None
    return {  # a key column is often among ``columns`` too: converted once
        column: _column_text(metadata, row, column, where)
        for column in dict.fromkeys(columns)
        if column in row
    }


def _column_text(metadata: TableMetadata, row: Row, name: str, where: str) -> str | None:
    """A column value as the event log holds it (mapping.event_log_text, a REAL4 as a
    32-bit value), JSON numbers as written. Binary is Base64 text, which Qlik's JSON
    already is: kept as is, checked; Avro gives bytes."""
    value = row.get(name)
    column = metadata.by_name[name]
    kind = column.type.upper()
    if kind in BINARY_TYPES and not (value is None or isinstance(value, bytes)):
        if isinstance(value, str) and _is_base64(value):
            return value
        raise KafkaMessageError(
            f"column {shown(name)} of type {shown(column.type)} holds {_shown(value)}, not "
            "Base64 text",
            where,
        )
    if isinstance(value, _Number):
        return value.text
    try:
        # Avro date-times with all six digits of their microseconds, as Qlik's JSON has them.
        return event_log_text(value, single_precision=kind == "REAL4", timespec="microseconds")
    except NoEventLogText:
        raise KafkaMessageError(
            f"column {shown(name)} holds {_shown(value)}, not a single finite value", where
        ) from None


def _is_base64(text: str) -> bool:
    try:
        base64.b64decode(text, validate=True)
    except ValueError:  # binascii.Error, or a character outside ASCII
        return False
    return True


# --- reading --------------------------------------------------------------------------


def read_changes(stream: TextIO | BinaryIO, transactions: MessageTransactions | None = None,
                 message_format: Literal["json", "avro"] = "json") -> Iterator[ChangeEvent]:
    """The events of a Qlik Kafka input, a whole transaction at a time: JSON lines from a
    text or binary stream (``message_format`` "json"; see ``read_messages``), or
    length-prefixed Avro messages from a binary stream ("avro"; see
    ``read_avro_messages``).

    Pass ``transactions`` to keep metadata across inputs or to inspect its ``incomplete``
    transactions once the events are read. An unknown format, or Avro from a text stream,
    is a ConfigError at once.
    """
    transactions = transactions or MessageTransactions()
    if message_format == "json":
        return _changes(read_messages(stream), transactions)
    if message_format != "avro":
        raise ConfigError(
            f"unknown Qlik Kafka message format {message_format!r}: use json or avro"
        )
    if isinstance(stream.read(0), str):
        raise ConfigError("Qlik Kafka messages in Avro are read from a binary stream, not text")
    return _changes(read_avro_messages(stream, transactions.schemas), transactions)


def _changes(messages: Iterator[Message],
             transactions: MessageTransactions) -> Iterator[ChangeEvent]:
    for message in messages:
        yield from transactions.apply(message)
    transactions.close()
