"""The Qlik Kafka message reader: seed 001's messages and worked masks as JSON lines (bare
and wrapped) and as Avro, bad input with the place it names, transaction reassembly, and a
round trip through encoders written here."""

from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import logging
import struct

import fastavro
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from publisher.errors import ConfigError, SourceInputError
from publisher.model.changes import ChangeEvent
from publisher.model.events import EventType
from publisher.source.cdc.qlik_kafka import (
    ENVELOPE_SCHEMA,
    DataMessage,
    IncompleteTransaction,
    KafkaMessageError,
    MessageTransactions,
    TableMetadata,
    parse_message,
    read_changes,
)
from publisher.source.cdc.qlik_mask import MaskError

I, U, U3, D = (
    EventType.INSERT_FIELD,
    EventType.UPDATE_FIELD,
    EventType.UPDATE_FIELD_REMOVE_ALL,
    EventType.DELETE_ROW,
)

# A 16-column table like seed 001's real update message: ordinal 8 (SALARY) and 16
# (UPDATED_AT) are the ones "008080" marks.
EMP_COLUMNS = [
    ("ID", "INT4", 1), ("FIRST_NAME", "STRING", 0), ("LAST_NAME", "STRING", 0),
    ("EMAIL", "STRING", 0), ("PHONE", "STRING", 0), ("HIRE_DATE", "DATE", 0),
    ("JOB_ID", "STRING", 0), ("SALARY", "NUMERIC", 0), ("COMMISSION", "NUMERIC", 0),
    ("MANAGER_ID", "INT4", 0), ("DEPT_ID", "INT4", 0), ("CITY", "STRING", 0),
    ("COUNTRY", "STRING", 0), ("ACTIVE", "BOOLEAN", 0), ("PHOTO", "BYTES", 0),
    ("UPDATED_AT", "DATETIME", 0),
]
EMP_ROW = {
    "ID": 7, "FIRST_NAME": "Anna", "LAST_NAME": "Berg", "EMAIL": "anna@example.com",
    "PHONE": None, "HIRE_DATE": "2020-01-15", "JOB_ID": "DEV", "SALARY": 5000.50,
    "COMMISSION": None, "MANAGER_ID": 3, "DEPT_ID": 10, "CITY": "Köln", "COUNTRY": "DE",
    "ACTIVE": True, "PHOTO": "AAEC/w==", "UPDATED_AT": "2024-03-01 10:00:00.000000",
}
SEQ = "20240301100000000000000000000000017"


def metadata(
    table: str, columns: list[tuple[str, str, int]], version: int = 1,
    schema: str | None = "hr",
) -> dict:
    """A metadata message as seed 001 lists its fields; ``columns`` are (name, type,
    primaryKeyPosition) in ordinal order."""
    return {
        "schemaId": f"{table}-v{version}",
        "lineage": {
            "server": "qlik01", "task": "hr_to_kafka", "schema": schema, "table": table,
            "tableVersion": version, "timestamp": "2024-03-01T09:00:00.000",
        },
        "tableStructure": {
            "tableColumns": {
                name: {
                    "ordinal": ordinal, "type": kind, "length": 0, "precision": 0,
                    "scale": 0, "primaryKeyPosition": key,
                }
                for ordinal, (name, kind, key) in enumerate(columns, start=1)
            }
        },
        "dataSchema": None,
    }


def message(
    table: str, operation: str, data: dict | None = None, before: dict | None = None, *,
    seq: str | None = SEQ, txid: str | None = None, counter: int | None = None,
    last: bool | None = None, change_mask: str | None = None,
    column_mask: str | None = None, schema: str | None = "hr",
) -> dict:
    """A data message as seed 001 lists its fields (schema and table on the message)."""
    headers = {
        "operation": operation, "changeSequence": seq, "timestamp": "2024-03-01T10:00:00",
        "streamPosition": "00000000.0001", "transactionId": txid, "changeMask": change_mask,
        "columnMask": column_mask, "transactionEventCounter": counter,
        "transactionLastEvent": last,
    }
    return {"schema": schema, "table": table, "headers": headers, "data": data,
            "beforeData": before}


def wrap(body: dict) -> dict:
    kind = "MD" if "tableStructure" in body else "DT"
    return {"magic": "atMSG", "type": kind, "headers": None, "messageSchemaId": None,
            "messageSchema": None, "message": body}


def jsonl(*messages: dict, wrapped: bool = False) -> str:
    return "".join(json.dumps(wrap(m) if wrapped else m) + "\n" for m in messages)


def read(text: str, transactions: MessageTransactions | None = None) -> list[ChangeEvent]:
    return list(read_changes(io.StringIO(text), transactions))


# --- an Avro encoder: messages as Replicate publishes them in Avro ---------------------

OPERATIONS = ("INSERT", "UPDATE", "DELETE", "REFRESH")
TEXT_HEADERS = ("changeSequence", "timestamp", "streamPosition", "transactionId")
# Qlik's Avro types for its data types, without logical types.
AVRO_TYPES = {
    "STRING": "string", "DATE": "string", "TIME": "string", "DATETIME": "string",
    "NUMERIC": "string",
    "INT4": "int", "INT8": "long", "BOOLEAN": "boolean", "BYTES": "bytes", "BLOB": "bytes",
    "REAL4": "float", "REAL8": "double",
}
HEADERS_SCHEMA = {
    "type": "record", "name": "Headers", "fields": [
        {"name": "operation",
         "type": {"type": "enum", "name": "operation", "symbols": list(OPERATIONS)}},
        *({"name": name, "type": "string"} for name in TEXT_HEADERS),
        {"name": "changeMask", "type": ["null", "bytes"]},
        {"name": "columnMask", "type": ["null", "bytes"]},
        {"name": "transactionEventCounter", "type": ["null", "long"]},
        {"name": "transactionLastEvent", "type": ["null", "boolean"]},
    ],
}
COLUMN_SCHEMA = {
    "type": "record", "name": "Column", "fields": [
        {"name": "ordinal", "type": "int"}, {"name": "type", "type": "string"},
        *({"name": name, "type": ["null", "int"]}
          for name in ("length", "precision", "scale", "primaryKeyPosition")),
    ],
}
METADATA_SCHEMA = {
    "type": "record", "name": "MetadataMessage", "fields": [
        {"name": "schemaId", "type": "string"},
        {"name": "lineage", "type": {"type": "record", "name": "Lineage", "fields": [
            *({"name": name, "type": ["null", "string"]}
              for name in ("server", "task", "schema", "table", "timestamp")),
            {"name": "tableVersion", "type": ["null", "int"]},
        ]}},
        {"name": "tableStructure", "type": {"type": "record", "name": "TableStructure", "fields": [
            {"name": "tableColumns", "type": {"type": "map", "values": COLUMN_SCHEMA}},
        ]}},
        {"name": "dataSchema", "type": ["null", "string"]},
    ],
}


def data_schema(columns: dict[str, str], *named: str) -> dict:
    """A data record's schema: ``columns`` maps each column to its Avro type; ``named``
    adds text fields such as schema and table, which Replicate's records lack."""
    row = {"type": "record", "name": "Data",
           "fields": [{"name": name, "type": ["null", kind]} for name, kind in columns.items()]}
    return {"type": "record", "name": "DataRecord", "fields": [
        *({"name": name, "type": ["null", "string"]} for name in named),
        {"name": "data", "type": ["null", row]},
        {"name": "beforeData", "type": ["null", "Data"]},
        {"name": "headers", "type": HEADERS_SCHEMA},
    ]}


def avro_bytes(schema: dict | str, datum: object) -> bytes:
    buffer = io.BytesIO()
    fastavro.schemaless_writer(buffer, fastavro.parse_schema(schema), datum)
    return buffer.getvalue()


def frame(value: bytes) -> bytes:
    """A Kafka value as the reader takes it: after its 4-byte big-endian length."""
    return struct.pack(">i", len(value)) + value


def envelope(kind: str, message: bytes, schema_id: str | None = None,
             schema: dict | str | None = None) -> bytes:
    """A framed Replicate envelope."""
    return frame(avro_bytes(ENVELOPE_SCHEMA, {
        "magic": b"atMSG", "type": kind, "headers": None, "messageSchemaId": schema_id,
        "messageSchema": None if schema is None else json.dumps(schema), "message": message,
    }))


def metadata_frame(body: dict) -> bytes:
    """A metadata message, self-describing as Replicate sends it."""
    return envelope("MD", avro_bytes(METADATA_SCHEMA, body), schema=METADATA_SCHEMA)


def avro_value(value, kind: str):
    """A JSON test value as Avro holds it: Base64 text as bytes, a number in a string
    column as the text JSON would show."""
    if kind == "bytes" and isinstance(value, str):
        return base64.b64decode(value)
    if kind == "string" and isinstance(value, (int, float)) and not isinstance(value, bool):
        return json.dumps(value)
    return value


def avro_record(body: dict, columns: dict[str, str]) -> dict:
    """A data message as its Avro record: text headers "" for none, masks as bytes."""
    headers = body["headers"]

    def row(values):
        return None if values is None else {
            name: avro_value(value, columns[name]) for name, value in values.items()
        }

    return {
        "data": row(body["data"]), "beforeData": row(body["beforeData"]),
        "headers": {
            **headers, **{name: headers[name] or "" for name in TEXT_HEADERS},
            **{name: headers[name] and bytes.fromhex(headers[name])
               for name in ("changeMask", "columnMask")},
        },
    }


def avro_frames(*messages: dict, types: dict | None = None) -> list[bytes]:
    """The messages as Replicate publishes them in Avro, each framed. Metadata messages
    get a dataSchema from their columns (``types`` overrides a column's Avro type); a
    data message is written with the dataSchema of the metadata it names (its
    tableVersion, else its table's latest) and names it by schemaId."""
    frames, known = [], {}
    for body in messages:
        if "tableStructure" in body:
            lineage = body["lineage"]
            spec = sorted(body["tableStructure"]["tableColumns"].items(),
                          key=lambda item: item[1]["ordinal"])
            columns = {name: (types or {}).get(name, AVRO_TYPES[column["type"]])
                       for name, column in spec}
            body = dict(body, dataSchema=json.dumps(data_schema(columns)))
            table = (lineage["schema"], lineage["table"])
            known[table] = known[(*table, lineage["tableVersion"])] = (body, columns)
            frames.append(metadata_frame(body))
        else:
            table = (body["schema"], body["table"])
            version = (body.get("lineage") or {}).get("tableVersion")
            meta, columns = known[table if version is None else (*table, version)]
            record = avro_bytes(json.loads(meta["dataSchema"]), avro_record(body, columns))
            frames.append(envelope("DT", record, schema_id=meta["schemaId"]))
    return frames


def read_avro(data: bytes, transactions: MessageTransactions | None = None) -> list[ChangeEvent]:
    return list(read_changes(io.BytesIO(data), transactions, "avro"))


FORMS = ("json", "wrapped", "avro")


def read_as(
    form: str, *messages: dict, transactions: MessageTransactions | None = None
) -> list[ChangeEvent]:
    """The events of ``messages`` sent in ``form``: JSON lines, bare or wrapped, or Avro."""
    if form == "avro":
        return read_avro(b"".join(avro_frames(*messages)), transactions)
    return read(jsonl(*messages, wrapped=form == "wrapped"), transactions)


def event(order, table, key, kind, column=None, old=None, new=None) -> ChangeEvent:
    return ChangeEvent(order, table, key, kind, column, old, new)


EMP_KEY = (("ID", "7"),)


def emp_insert(operation: str = "INSERT", **headers) -> dict:
    return message("EMPLOYEES", operation, EMP_ROW, column_mask="00FFFF", **headers)


# --- seed 001 -------------------------------------------------------------------------


def test_metadata_message_columns_by_ordinal_keys_by_position() -> None:
    body = metadata("T", [("A", "STRING", 2), ("B", "INT4", 0), ("C", "INT4", 1)], version=4)
    # JSON object order is not ordinal order: shuffle it.
    columns = body["tableStructure"]["tableColumns"]
    body["tableStructure"]["tableColumns"] = dict(reversed(list(columns.items())))
    parsed = parse_message(json.dumps(wrap(body)), 3)
    assert isinstance(parsed, TableMetadata)
    assert parsed.names == ("A", "B", "C")
    assert parsed.keys == ("C", "A")
    assert (parsed.where, parsed.schema, parsed.table, parsed.table_version) == (
        "line 3", "hr", "T", 4,
    )
    assert (parsed.schema_id, parsed.server, parsed.task) == ("T-v4", "qlik01", "hr_to_kafka")
    assert parsed.columns[1].type == "INT4" and parsed.columns[0].key_position == 2


def test_data_message_fields() -> None:
    body = emp_insert(txid="tx1", counter=2, last=True)
    parsed = parse_message(json.dumps(body), 5)
    assert isinstance(parsed, DataMessage)
    assert (parsed.schema, parsed.table, parsed.table_version) == ("hr", "EMPLOYEES", None)
    assert (parsed.operation, parsed.change_sequence, parsed.transaction_id) == (
        "INSERT", SEQ, "tx1",
    )
    assert (parsed.event_counter, parsed.last_event, parsed.column_mask) == (2, True, "00FFFF")
    assert parsed.stream_position == "00000000.0001"


INSERT_EVENTS = [
    ("FIRST_NAME", "Anna"), ("LAST_NAME", "Berg"), ("EMAIL", "anna@example.com"),
    ("HIRE_DATE", "2020-01-15"), ("JOB_ID", "DEV"), ("SALARY", "5000.5"),
    ("MANAGER_ID", "3"), ("DEPT_ID", "10"), ("CITY", "Köln"), ("COUNTRY", "DE"),
    ("ACTIVE", "true"), ("PHOTO", "AAEC/w=="), ("UPDATED_AT", "2024-03-01 10:00:00.000000"),
]  # PHONE and COMMISSION are null: nothing; ID is the key


@pytest.mark.parametrize("form", FORMS)
def test_seed_001_insert_update_delete_refresh(form: str) -> None:
    after = dict(EMP_ROW, SALARY=5200.00, UPDATED_AT="2024-03-02 08:30:00.000000")
    messages = (
        metadata("EMPLOYEES", EMP_COLUMNS),
        emp_insert("REFRESH", seq=None),
        emp_insert(seq=SEQ),
        message("EMPLOYEES", "UPDATE", after, EMP_ROW, seq=SEQ[:-1] + "8",
                change_mask="008080", column_mask="00FFFF"),
        message("EMPLOYEES", "DELETE", after, seq=SEQ[:-1] + "9", column_mask="00FFFF"),
    )
    refresh = [event(("", 0, n), "EMPLOYEES", EMP_KEY, I, c, None, v)
               for n, (c, v) in enumerate(INSERT_EVENTS)]
    insert = [event((SEQ, 0, n), "EMPLOYEES", EMP_KEY, I, c, None, v)
              for n, (c, v) in enumerate(INSERT_EVENTS)]
    update = [
        event((SEQ[:-1] + "8", 0, 0), "EMPLOYEES", EMP_KEY, U, "SALARY", "5000.5", "5200.0"),
        event((SEQ[:-1] + "8", 0, 1), "EMPLOYEES", EMP_KEY, U, "UPDATED_AT",
              "2024-03-01 10:00:00.000000", "2024-03-02 08:30:00.000000"),
    ]
    delete = [event((SEQ[:-1] + "9", 0, 0), "EMPLOYEES", EMP_KEY, D)]
    assert read_as(form, *messages) == refresh + insert + update + delete


@pytest.mark.parametrize("form", FORMS)
def test_seed_001_change_mask_0b_over_10_columns(form: str) -> None:
    columns = [(f"C{n}", "STRING", 1 if n == 2 else 0) for n in range(1, 11)]
    after = {f"C{n}": f"new{n}" for n in range(1, 11)}
    before = dict(after, C1="old1", C4="old4")
    messages = (
        metadata("T10", columns),
        message("T10", "UPDATE", after, before, change_mask="0B", column_mask="03FF"),
    )
    key = (("C2", "new2"),)
    assert read_as(form, *messages) == [
        event((SEQ, 0, 0), "T10", key, U, "C1", "old1", "new1"),
        event((SEQ, 0, 1), "T10", key, U, "C4", "old4", "new4"),
    ]  # ordinal 2 is the key: not an attribute event


@pytest.mark.parametrize("form", FORMS)
def test_update_without_before_data_is_type_3_and_null_is_a_value(form: str) -> None:
    after = dict(EMP_ROW, SALARY=None)
    messages = (
        metadata("EMPLOYEES", EMP_COLUMNS),
        message("EMPLOYEES", "UPDATE", after, change_mask="008080", column_mask="00FFFF"),
    )
    assert read_as(form, *messages) == [
        event((SEQ, 0, 0), "EMPLOYEES", EMP_KEY, U3, "SALARY", None, None),
        event((SEQ, 0, 1), "EMPLOYEES", EMP_KEY, U3, "UPDATED_AT", None,
              "2024-03-01 10:00:00.000000"),
    ]


@pytest.mark.parametrize("form", FORMS)
def test_not_present_differs_from_a_real_null(form: str) -> None:
    # columnMask 007FFF: UPDATED_AT (ordinal 16) not present; SALARY present and null.
    after = dict(EMP_ROW, SALARY=None, UPDATED_AT=None)
    messages = (
        metadata("EMPLOYEES", EMP_COLUMNS),
        message("EMPLOYEES", "UPDATE", after, EMP_ROW, change_mask="008080",
                column_mask="007FFF"),
        message("EMPLOYEES", "INSERT", dict(EMP_ROW, ID=8), column_mask="000003"),
    )
    assert read_as(form, *messages) == [
        event((SEQ, 0, 0), "EMPLOYEES", EMP_KEY, U, "SALARY", "5000.5", None),
        event((SEQ, 0, 0), "EMPLOYEES", (("ID", "8"),), I, "FIRST_NAME", None, "Anna"),
    ]


@pytest.mark.parametrize("form", FORMS)
def test_update_changing_the_key_deletes_and_adds(form: str) -> None:
    columns = [("K", "INT4", 1), ("V", "STRING", 0)]
    messages = (
        metadata("T", columns),
        message("T", "UPDATE", {"K": 2, "V": "x"}, {"K": 1, "V": "x"}, change_mask="01"),
    )
    assert read_as(form, *messages) == [
        event((SEQ, 0, 0), "T", (("K", "1"),), D),
        event((SEQ, 0, 1), "T", (("K", "2"),), I, "V", None, "x"),
    ]


@pytest.mark.parametrize("form", FORMS)
def test_delete_keyed_from_before_data_when_data_is_null(form: str) -> None:
    columns = [("K", "INT4", 1), ("V", "STRING", 0)]
    messages = (metadata("T", columns), message("T", "DELETE", None, {"K": 4, "V": "x"}))
    assert read_as(form, *messages) == [event((SEQ, 0, 0), "T", (("K", "4"),), D)]


@pytest.mark.parametrize("form", FORMS)
def test_composite_key_in_key_position_order(form: str) -> None:
    columns = [("A", "STRING", 2), ("B", "STRING", 1), ("V", "STRING", 0)]
    messages = (metadata("T", columns), message("T", "DELETE", {"A": "a", "B": "b", "V": None}))
    assert read_as(form, *messages) == [event((SEQ, 0, 0), "T", (("B", "b"), ("A", "a")), D)]


def test_values_as_text() -> None:
    columns = [("K", "INT4", 1), ("N", "NUMERIC", 0), ("E", "REAL8", 0), ("Z", "INT8", 0),
               ("F", "BOOLEAN", 0), ("BIN", "BLOB", 0)]
    line = ('{"headers": {"operation": "INSERT", "changeSequence": "1"}, "schema": "hr", '
            '"table": "T", '
            '"data": {"K": -0, "N": 1.50, "E": 1E+3, "Z": 123456789012345678901234567890, '
            '"F": false, "BIN": "3q2+7w=="}}\n')
    assert [(e.column_name, e.new_value) for e in read(jsonl(metadata("T", columns)) + line)] == [
        ("N", "1.50"), ("E", "1E+3"), ("Z", "123456789012345678901234567890"), ("F", "false"),
        ("BIN", "3q2+7w=="),
    ]
    assert read(jsonl(metadata("T", columns)) + line)[0].key == (("K", "-0"),)


@pytest.mark.parametrize("value", ["not base64!", 12, ["a"]])
def test_binary_that_is_not_base64_text(value) -> None:
    columns = [("K", "INT4", 1), ("BIN", "BYTES", 0)]
    text = jsonl(metadata("T", columns), message("T", "INSERT", {"K": 1, "BIN": value}))
    with pytest.raises(KafkaMessageError, match="'BIN' of type 'BYTES' .* not Base64") as info:
        read(text)
    assert info.value.where == "line 2"


def test_table_named_by_lineage_or_headers() -> None:
    columns = [("K", "INT4", 1), ("V", "STRING", 0)]
    body = message("T", "INSERT", {"K": 1, "V": "a"})
    del body["schema"], body["table"]
    in_lineage = dict(body, lineage={"schema": "hr", "table": "T", "tableVersion": 1})
    in_headers = dict(body, headers=dict(body["headers"], schema="hr", table="T"))
    expected = [event((SEQ, 0, 0), "T", (("K", "1"),), I, "V", None, "a")]
    assert read(jsonl(metadata("T", columns), in_lineage)) == expected
    assert read(jsonl(metadata("T", columns), in_headers)) == expected
    disagree = dict(in_lineage, table="OTHER")
    with pytest.raises(KafkaMessageError, match=r"names table \['OTHER', 'T'\] \(line 2\)"):
        read(jsonl(metadata("T", columns), disagree))


V1 = [("K", "INT4", 1), ("A", "STRING", 0)]
V2 = [("K", "INT4", 1), ("B", "STRING", 0)]


@pytest.mark.parametrize("form", FORMS)
def test_table_versions_latest_and_named(form: str) -> None:
    named_v1 = dict(message("T", "INSERT", {"K": 1, "A": "a"}),
                    lineage={"table": "T", "tableVersion": 1})
    latest = message("T", "INSERT", {"K": 2, "B": "b"})
    events = read_as(form, metadata("T", V1, 1), metadata("T", V2, 2), named_v1, latest)
    assert [(e.key, e.column_name) for e in events] == [((("K", "1"),), "A"), ((("K", "2"),), "B")]


def test_another_schemas_table_of_the_same_name() -> None:
    # Its metadata is its own.
    with pytest.raises(KafkaMessageError, match="no metadata message seen for table 'sales.T'"):
        read(jsonl(metadata("T", V1), message("T", "INSERT", {"K": 1}, schema="sales")))


def test_unknown_format_and_avro_from_text_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="unknown Qlik Kafka message format 'xml'"):
        read_changes(io.StringIO(""), message_format="xml")
    with pytest.raises(ConfigError, match="binary stream, not text"):
        read_changes(io.StringIO(""), message_format="avro")


# --- bad input, each naming its line --------------------------------------------------

# A source without schemas: the raw lines below name no schema either.
T_METADATA = metadata("T", [("K", "INT4", 1), ("V", "STRING", 0)], schema=None)
GOOD_T = jsonl(T_METADATA)


@pytest.mark.parametrize(
    ("line", "pattern"),
    [
        ('{"headers": ', "invalid JSON"),
        ('{"x": NaN}', "invalid JSON"),
        ("[1, 2]", "a message must be a JSON object"),
        ('{"schemaId": "s"}', "neither metadata .* nor data"),
        ('{"magic": "atMSG", "type": "CT", "message": {}}', "message type 'CT' is neither"),
        ('{"magic": "atMSG", "type": "DT", "message": "T2JqAQ=="}', "Avro-encoded .* avro"),
        ('{"magic": "atMSG", "type": "MD", "message": {"headers": {}}}', "wrapper type 'MD'"),
        ('{"headers": {"operation": "INSERT", "changeSequence": "1"}, "table": "U", '
         '"data": {"K": 1}}', "no metadata message seen for table 'U'"),
        ('{"headers": {"operation": "INSERT", "changeSequence": "1"}, "table": "T", '
         '"lineage": {"tableVersion": 9}, "data": {"K": 1}}', "table 'T' version 9"),
        ('{"headers": {"operation": "INSERT", "changeSequence": "1", "columnMask": "07"}, '
         '"table": "T", "data": {"K": 1}}', "columnMask: mask '07' marks ordinal 3, beyond"),
        ('{"headers": {"operation": "UPDATE", "changeSequence": "1", "changeMask": "0x"}, '
         '"table": "T", "data": {"K": 1}}', "changeMask: mask '0x' is not hex"),
        ('{"headers": {"operation": "TRUNCATE", "changeSequence": "1"}, "table": "T"}',
         "operation 'TRUNCATE'"),
        ('{"headers": {"operation": "INSERT"}, "table": "T", "data": {"K": 1}}',
         "changeSequence is missing"),
        ('{"headers": {"operation": "INSERT", "changeSequence": "1"}, "table": "T", '
         '"data": {"K": null, "V": "a"}}', "key column 'K' is null"),
        ('{"headers": {"operation": "INSERT", "changeSequence": "1"}, "table": "T", '
         '"data": {"K": 1, "W": "a"}}', r"data has column\(s\) \['W'\]"),
        ('{"headers": {"operation": "INSERT", "changeSequence": "1"}, "table": "T", '
         '"data": {"K": 1, "V": {"a": 1}}}', "column 'V' holds a JSON object, not a single"),
        # Python's json raises RecursionError here, and int() refuses 4300 digits and more.
        ("[" * 5000, "invalid JSON: nested too deep"),
        ('{"headers": {"operation": "INSERT", "changeSequence": "1", '
         '"transactionEventCounter": 1' + "0" * 5000 + '}, "table": "T", "data": {"K": 1}}',
         r"transactionEventCounter must be an integer from -2\^63 to 2\^63-1, not '10000"),
        ('{"headers": {"operation": "INSERT", "changeSequence": "1", '
         '"transactionEventCounter": 9223372036854775808}, "table": "T", "data": {"K": 1}}',
         "transactionEventCounter must be an integer from -2"),
        ('{"magic": "atMSG", "type": "\\u001b[31m' + "x" * 300 + '", "message": {}}',
         r"message type '\\x1b\[31mxxx.*x\.\.\. \(305 characters\) is neither"),
    ],
)
def test_bad_message_names_its_line(line: str, pattern: str) -> None:
    text = GOOD_T + "\n" + line + "\n"  # a blank line 2 still counts
    with pytest.raises(KafkaMessageError, match=pattern) as info:
        read(text)
    assert info.value.where == "line 3"
    assert str(info.value).endswith("(line 3)")


def test_mask_error_is_wrapped_with_the_line() -> None:
    with pytest.raises(KafkaMessageError) as info:
        read(GOOD_T + jsonl(message("T", "INSERT", {"K": 1}, column_mask="0100", schema=None)))
    assert info.value.where == "line 2"
    assert "ordinal 9, beyond the table's 2 columns" in str(info.value)
    assert not isinstance(info.value, MaskError)


def test_duplicate_event_counter() -> None:
    text = GOOD_T + jsonl(
        message("T", "INSERT", {"K": 1}, txid="t", counter=1, last=False, schema=None),
        message("T", "INSERT", {"K": 2}, txid="t", counter=1, last=False, schema=None),
    )
    with pytest.raises(KafkaMessageError, match="transactionEventCounter 1 twice") as info:
        read(text)
    assert info.value.where == "line 3"


@pytest.mark.parametrize(
    ("counters", "pattern"),
    [
        ([(2, True), (1, True)], "two last events"),
        ([(3, False), (2, True)], "ends at event 2 but has event 3"),
        ([(2, True), (3, False)], "event 3 is beyond it"),
        ([(0, True)], "Counter 0 is not 1 or more"),
    ],
)
def test_inconsistent_transaction_counters(counters, pattern) -> None:
    text = GOOD_T + jsonl(*(
        message("T", "INSERT", {"K": n}, txid="t", counter=n, last=last, schema=None)
        for n, last in counters
    ))
    with pytest.raises(KafkaMessageError, match=pattern) as info:
        read(text)
    assert info.value.where == f"line {1 + len(counters)}"


def test_metadata_with_gaps_in_its_ordinals() -> None:
    body = metadata("T", [("K", "INT4", 1), ("V", "STRING", 0)])
    body["tableStructure"]["tableColumns"]["V"]["ordinal"] = 3
    with pytest.raises(KafkaMessageError, match=r"ordinals \[1, 3\] are not 1..2 \(line 1\)"):
        read(jsonl(body))


def test_table_without_key_columns() -> None:
    text = jsonl(metadata("T", [("V", "STRING", 0)]), message("T", "INSERT", {"V": "a"}))
    with pytest.raises(KafkaMessageError, match=r"'T' has no key column .*\(line 1: .*\(line 2\)"):
        read(text)


# --- Avro: values, framing and bad input ---------------------------------------------

def test_avro_values_as_text() -> None:
    # Replicate's logical types where it has them, and its plain Avro types.
    columns = [("K", "INT4", 1), ("N", "NUMERIC", 0), ("R4", "REAL4", 0), ("R8", "REAL8", 0),
               ("D", "DATE", 0), ("TM", "TIME", 0), ("TS", "DATETIME", 0), ("L", "INT8", 0),
               ("BIN", "BLOB", 0), ("F", "BOOLEAN", 0)]
    types = {
        "N": {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2},
        "D": {"type": "int", "logicalType": "date"},
        "TM": {"type": "int", "logicalType": "time-millis"},
        "TS": {"type": "long", "logicalType": "timestamp-micros"},
    }
    row = {"K": 1, "N": decimal.Decimal("-1.50"), "R4": 1.1, "R8": 0.1,
           "D": datetime.date(2020, 1, 15), "TM": datetime.time(10, 0, 0, 123000),
           "TS": datetime.datetime(2024, 3, 1, 10, 0, 0, 7, tzinfo=datetime.UTC), "L": 2**63 - 1,
           "BIN": b"\x00\x01\xff", "F": False}
    data = b"".join(avro_frames(metadata("T", columns), message("T", "INSERT", row),
                                types=types))
    assert [(e.column_name, e.new_value) for e in read_avro(data)] == [
        ("N", "-1.50"), ("R4", "1.1"), ("R8", "0.1"), ("D", "2020-01-15"),
        ("TM", "10:00:00.123000"), ("TS", "2024-03-01 10:00:00.000007"),
        ("L", "9223372036854775807"), ("BIN", "AAH/"), ("F", "false"),
    ]


def real4_text(value: float) -> str:
    data = b"".join(avro_frames(metadata("T", [("K", "INT4", 1), ("R", "REAL4", 0)]),
                                message("T", "INSERT", {"K": 1, "R": value})))
    return read_avro(data)[0].new_value


@pytest.mark.parametrize(
    ("value", "text"),
    [(1.1, "1.1"), (-0.0, "-0.0"), (16777217.0, "16777216.0"), (1e-45, "1e-45"),
     (3.4028234663852886e38, "3.4028235e+38")],
)
def test_real4_is_the_shortest_text_of_its_32_bit_value(value: float, text: str) -> None:
    assert real4_text(value) == text


def test_real4_given_as_a_double_keeps_all_its_digits() -> None:
    columns = [("K", "INT4", 1), ("R", "REAL4", 0)]
    rows = [{"K": n, "R": value} for n, value in enumerate([0.123456789012, 1e300])]
    data = b"".join(avro_frames(metadata("T", columns),
                                *(message("T", "INSERT", row) for row in rows),
                                types={"R": "double"}))
    assert [e.new_value for e in read_avro(data)] == ["0.123456789012", "1e+300"]


@settings(max_examples=100, deadline=None)
@given(st.floats(width=32, allow_nan=False, allow_infinity=False))
def test_real4_text_reads_back_as_the_same_32_bit_value(value: float) -> None:
    assert struct.unpack("f", struct.pack("f", float(real4_text(value))))[0] == value


def test_data_envelope_may_embed_its_schema_and_name_its_table() -> None:
    record_schema = data_schema({"K": "int", "V": "string"}, "schema", "table")
    body = message("T", "INSERT", {"K": 1, "V": "a"}, schema=None)
    record = avro_bytes(record_schema, dict(avro_record(body, {"K": "int", "V": "string"}),
                                            table="T"))
    data = metadata_frame(T_METADATA) + envelope("DT", record, schema=record_schema)
    assert read_avro(data) == [event((SEQ, 0, 0), "T", (("K", "1"),), I, "V", None, "a")]


T_COLUMNS = {"K": "int", "V": "string"}
T_SCHEMA = data_schema(T_COLUMNS)
T_AVRO = dict(T_METADATA, dataSchema=json.dumps(T_SCHEMA))
T_BODY = message("T", "INSERT", {"K": 1, "V": "a"}, schema=None)
T_RECORD = avro_bytes(T_SCHEMA, avro_record(T_BODY, T_COLUMNS))
T_ENVELOPE = envelope("DT", T_RECORD, schema_id=T_AVRO["schemaId"])
AT = f"message 2 at byte {len(metadata_frame(T_AVRO))}"  # after the metadata message


@pytest.mark.parametrize(
    ("second", "pattern"),
    [
        (b"\x00\x00", "truncated: the input ends 2 byte\\(s\\) into a 4-byte length"),
        (T_ENVELOPE[:-1], r"truncated: the message is \d+ bytes long, the input ends after"),
        (b"\xff\xff\xff\xff", "null message value"),
        (frame(b"\x00\x00\x00\x00\x07" + T_RECORD), r"schema registry's framing \(schema id 7\)"),
        (frame(T_RECORD), "not a Replicate envelope"),
        (frame(T_ENVELOPE[4:-2]), "the Replicate envelope ends inside its record: truncated"),
        (envelope("XX", T_RECORD), "message type 'XX' is neither"),
        (envelope("MD", b""), "metadata message names schema None but does not embed it"),
        (envelope("DT", T_RECORD, schema_id="T-v9"),
         "names schema 'T-v9', which no metadata message before it had"),
        (envelope("DT", T_RECORD), "names schema None, which no metadata message"),
        (envelope("DT", T_RECORD[:-1], schema_id="T-v1"),
         "the data message ends inside its record: truncated, or not written with its schema"),
        (envelope("DT", T_RECORD + b"\x00", schema_id="T-v1"),
         r"does not match its schema: 1 byte\(s\) left after the record"),
        (envelope("DT", b"\x04" + T_RECORD[1:], schema_id="T-v1"),
         "the data message does not match its schema"),
        (envelope("DT", avro_bytes("string", "x"), schema="string"),
         "the data message's schema is not a record"),
        (envelope("DT", avro_bytes(T_SCHEMA, avro_record(
            message("T", "INSERT", {"K": 1}, column_mask="0100"), T_COLUMNS)), schema_id="T-v1"),
         "columnMask: mask '0100' marks ordinal 9"),
        (metadata_frame(dict(T_AVRO, dataSchema='{"type": "nope"}')),
         "dataSchema is not an Avro schema"),
    ],
)
def test_bad_avro_names_its_message_and_byte(second: bytes, pattern: str) -> None:
    with pytest.raises(KafkaMessageError, match=pattern) as info:
        read_avro(metadata_frame(T_AVRO) + second)
    assert info.value.where == AT
    assert str(info.value).endswith(f"({AT})")


def test_data_message_whose_metadata_has_no_data_schema() -> None:
    first = metadata_frame(dict(T_AVRO, dataSchema=None))
    with pytest.raises(KafkaMessageError, match=r"its metadata message \(message 1 at byte 0\) "
                       "has no dataSchema") as info:
        read_avro(first + T_ENVELOPE)
    assert info.value.where == f"message 2 at byte {len(first)}"


def test_self_describing_data_message_must_name_its_table() -> None:
    with pytest.raises(KafkaMessageError, match="data message names no table"):
        read_avro(metadata_frame(T_AVRO) + envelope("DT", T_RECORD, schema=T_SCHEMA))


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_damaged_avro_is_read_or_refused_with_its_place(data) -> None:
    good = b"".join(avro_frames(
        metadata("EMPLOYEES", EMP_COLUMNS), emp_insert(txid="t", counter=1, last=True),
    ))
    at = data.draw(st.integers(0, len(good) - 1))
    damaged = data.draw(st.sampled_from([
        good[:at], good[:at] + bytes([data.draw(st.integers(0, 255))]) + good[at + 1:],
    ]))
    try:
        read_avro(damaged)
    except SourceInputError as exc:
        assert isinstance(exc, KafkaMessageError) and exc.where.startswith("message ")


# --- Avro: bounded before it is decoded -----------------------------------------------


def zigzag(value: int) -> bytes:
    """An Avro long: zigzag, then 7 bits a byte, lowest first."""
    value = (value << 1) ^ (value >> 63) if value < 0 else value << 1
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    return bytes(out + bytes([value]))


def self_described(schema, message: bytes) -> tuple[bytes, int]:
    """A data envelope embedding ``schema``, after T's metadata; and the byte where its
    message bytes start in the input (the envelope's last bytes)."""
    first = metadata_frame(T_AVRO)
    second = envelope("DT", message, schema=schema)
    return first + second, len(first) + len(second) - len(message)


RECORD_OF_NULLS = {"type": "record", "name": "Nothing", "fields": [
    {"name": "a", "type": "null"}, {"name": "b", "type": "null"}]}
LINKED = {"type": "record", "name": "Link", "fields": [
    {"name": "next", "type": ["null", "Link"]}]}


@pytest.mark.parametrize(
    ("schema", "message", "at", "pattern"),
    [
        # 2^40 items of null take no byte each: fastavro allocated until the process died.
        ({"type": "array", "items": "null"}, zigzag(2**40) + b"\x00", 0,
         r"array block of 1099511627776 items: more than the 1048576 array and map items"),
        ({"type": "array", "items": RECORD_OF_NULLS}, zigzag(-(2**40)) + zigzag(0) + b"\x00",
         0, "array block of 1099511627776 items: more than the 1048576"),
        ({"type": "array", "items": "null"},
         zigzag(2**19) + zigzag(2**19) + zigzag(1) + b"\x00", 6,
         r"array block of 1 items: more than the 1048576"),
        ({"type": "array", "items": "long"}, zigzag(2**40) + b"\x02" * 10, 0,
         r"array block of 1099511627776 items of at least 1 byte\(s\) each, but 10 bytes"),
        ({"type": "map", "values": "double"}, zigzag(3) + b"\x02k" + bytes(8), 0,
         r"map block of 3 items of at least 9 byte\(s\) each, but 10 bytes are left"),
        ({"type": "array", "items": "string"}, zigzag(1) + zigzag(1000) + b"abc", 1,
         r"ends inside its record: truncated.* a string value of 1000 bytes, but 3 are left"),
        ("bytes", zigzag(-5), 0, "a bytes value of negative length -5"),
        ("long", b"\xff" * 11, 0, "a variable-length integer of more than 10 bytes"),
        ("long", b"\xff\xff", 0, "truncated.*the bytes end inside a variable-length integer"),
        (["null", "long"], zigzag(2), 0, "union index 2, but the union has 2 branches"),
        ({"type": "enum", "name": "E", "symbols": ["A"]}, zigzag(1), 0,
         "enum index 1, but the enum has 1 symbols"),
        (LINKED, zigzag(1) * 100 + zigzag(0), 32, "values nested more than 64 deep"),
        ({"type": "bytes", "logicalType": "decimal", "precision": 38, "scale": 2},
         zigzag(417) + bytes(417), 0, "a decimal of 417 bytes, more than the 416"),
        ({"type": "bytes", "logicalType": "decimal", "precision": 1001, "scale": 0},
         zigzag(1) + b"\x01", 0, "a decimal of precision 1001, more than 1000 digits"),
    ],
    ids=["2^40-nulls", "2^40-records-of-nulls", "2^20-nulls-in-all", "count-past-the-end",
         "map-count-past-the-end", "string-past-the-end", "negative-length", "long-varint",
         "cut-varint", "union-index", "enum-index", "nested-too-deep", "decimal-bytes",
         "decimal-precision"],
)
def test_avro_counts_and_lengths_are_bounded_before_decoding(schema, message, at, pattern):
    data, start = self_described(schema, message)
    with pytest.raises(KafkaMessageError, match=pattern) as info:
        read_avro(data)
    assert info.value.where == AT
    assert f"at byte {start + at}" in str(info.value)


def test_avro_within_the_bounds_is_decoded() -> None:
    """2^20 nulls in all, a 416-byte decimal, 30 links (60 deep): read, and then refused
    only as not a record or as a record without headers."""
    cases = [
        ({"type": "array", "items": "null"}, zigzag(2**19) * 2 + b"\x00"),
        ({"type": "bytes", "logicalType": "decimal", "precision": 1000, "scale": 0},
         zigzag(416) + b"\x01" * 416),
        (LINKED, zigzag(1) * 30 + zigzag(0)),
    ]
    for schema, message in cases:
        data, _ = self_described(schema, message)
        with pytest.raises(KafkaMessageError, match="schema is not a record|headers must be"):
            read_avro(data)


def test_avro_schema_field_name_xml_cannot_carry() -> None:
    """A field name of a schema is a column name: one XML cannot carry refuses the schema,
    naming the message."""
    schema = data_schema({"K": "int", "V\x01": "string"})
    bad = dict(T_METADATA, dataSchema=json.dumps(schema))
    with pytest.raises(KafkaMessageError, match=r"dataSchema: field 'V\\x01' has a character "
                       r"XML 1.0 cannot carry at position 2 \(of 'Data'\)") as info:
        read_avro(metadata_frame(bad))
    assert info.value.where == "message 1 at byte 0"
    embedded = {"type": "record", "name": "R", "fields": [{"name": "\ud800", "type": "null"}]}
    with pytest.raises(KafkaMessageError, match=r"messageSchema: field '\\ud800'") as info:
        read_avro(metadata_frame(T_AVRO) + envelope("DT", b"", schema=embedded))
    assert info.value.where == AT
    embedded["fields"][0]["name"] = 5  # fastavro takes it
    with pytest.raises(KafkaMessageError, match="messageSchema: field 5 of 'R' is not text"):
        read_avro(metadata_frame(T_AVRO) + envelope("DT", b"", schema=embedded))


# --- transactions ---------------------------------------------------------------------


def tx_insert(key: int, txid: str, counter: int, last: bool) -> dict:
    return message("T", "INSERT", {"K": key, "V": f"v{key}"}, seq=f"{key:035d}", txid=txid,
                   counter=counter, last=last, schema=None)


@pytest.mark.parametrize("form", FORMS)
def test_interleaved_transactions_in_counter_order(form: str) -> None:
    messages = (
        T_METADATA,
        tx_insert(12, "b", 2, True),
        tx_insert(3, "a", 3, True),
        tx_insert(11, "b", 1, False),  # b is whole here
        tx_insert(1, "a", 1, False),
        # A full-load row has no transaction: out at once.
        message("T", "REFRESH", {"K": 99, "V": "r"}, seq=None, schema=None),
        tx_insert(2, "a", 2, False),  # a is whole here
    )
    assert [(e.key[0][1], e.order[1]) for e in read_as(form, *messages)] == [
        ("11", 1), ("12", 2), ("99", 0), ("1", 1), ("2", 2), ("3", 3),
    ]


@pytest.mark.parametrize("form", FORMS)
def test_message_without_counter_comes_out_at_once(form: str) -> None:
    messages = (
        T_METADATA,
        tx_insert(1, "a", 1, False),
        message("T", "INSERT", {"K": 5, "V": "x"}, txid="z", schema=None),
        tx_insert(2, "a", 2, True),
    )
    assert [e.key[0][1] for e in read_as(form, *messages)] == ["5", "1", "2"]


@pytest.mark.parametrize("form", FORMS)
def test_stream_ending_mid_transaction_emits_nothing_of_it(form: str, caplog) -> None:
    messages = (
        T_METADATA,
        tx_insert(1, "a", 1, False),
        tx_insert(5, "b", 1, True),
        tx_insert(3, "a", 3, True),  # counter 2 never comes
    )
    transactions = MessageTransactions()
    with caplog.at_level(logging.WARNING):
        events = read_as(form, *messages, transactions=transactions)
    assert [e.key[0][1] for e in events] == ["5"]
    first = (f"message 2 at byte {len(avro_frames(T_METADATA)[0])}" if form == "avro"
             else "line 2")
    assert transactions.incomplete == (IncompleteTransaction("a", (1, 3), 3, first),)
    assert f"inside transaction 'a' (from {first}; counters [1, 3] of 3)" in caplog.text


def message_size(form: str, body: dict) -> int:
    """The length of a data message as the reader counts it: a JSON line's characters, an
    Avro value's bytes."""
    if form == "avro":
        return len(avro_frames(T_METADATA, body)[1]) - 4
    return len(jsonl(body, wrapped=form == "wrapped"))


@pytest.mark.parametrize("form", FORMS)
def test_open_transactions_hold_a_bounded_size(form: str) -> None:
    """With room for two messages, the third one held refuses the input, naming its
    transaction and place; a transaction that ends frees its room."""
    room = 2 * message_size(form, tx_insert(1, "a", 1, False)) + 10
    opened = [tx_insert(n, txid, 1, False) for n, txid in ((1, "a"), (2, "b"), (3, "c"))]
    with pytest.raises(KafkaMessageError, match=(
        rf"open transactions would hold \d+ bytes of messages with this one, more than the "
        rf"{room} a reader holds until transactions end \(transaction 'c', from "
    )) as info:
        read_as(form, T_METADATA, *opened, transactions=MessageTransactions(room))
    assert info.value.where == (
        f"message 4 at byte {sum(len(f) for f in avro_frames(T_METADATA, *opened)[:3])}"
        if form == "avro" else "line 4"
    )
    closed = [tx_insert(n, f"t{n}", 1, True) for n in range(1, 10)]
    events = read_as(form, T_METADATA, *closed, transactions=MessageTransactions(room))
    assert [e.key[0][1] for e in events] == [str(n) for n in range(1, 10)]


def test_transactions_keep_metadata_across_inputs() -> None:
    transactions = MessageTransactions()
    assert read(GOOD_T, transactions) == []
    assert len(read(jsonl(tx_insert(1, "a", 1, True)), transactions)) == 1
    assert transactions.incomplete == ()
    # In Avro, the data schemas too: the second input names the first one's schemaId.
    transactions = MessageTransactions()
    metadata_part, data_part = avro_frames(T_METADATA, tx_insert(1, "a", 1, True))
    assert read_avro(metadata_part, transactions) == []
    assert len(read_avro(data_part, transactions)) == 1


# --- round trip -----------------------------------------------------------------------

TYPES = ("STRING", "INT8", "BOOLEAN", "BYTES")
VALUE = {
    "STRING": st.text(max_size=8),
    "INT8": st.integers(-(2**70), 2**70),
    "BOOLEAN": st.booleans(),
    "BYTES": st.binary(max_size=6).map(lambda raw: base64.b64encode(raw).decode()),
}
# Avro's long is 64 bits (and so is Qlik's INT8): JSON alone can carry wider integers.
AVRO_VALUE = dict(VALUE, INT8=st.integers(-(2**63), 2**63 - 1))


def as_text(value) -> str | None:
    """What the reader must make of a value the encoder wrote."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


@st.composite
def tables(draw, name: str) -> tuple[str, list[tuple[str, str, int]]]:
    width = draw(st.integers(1, 12))
    kinds = draw(st.lists(st.sampled_from(TYPES), min_size=width + 1, max_size=width + 1))
    key_count = draw(st.integers(1, min(2, width + 1)))
    keyed = draw(st.permutations(range(width + 1)))[:key_count]
    columns = [
        (f"{name}_{n}", kind, keyed.index(n) + 1 if n in keyed else 0)
        for n, kind in enumerate(kinds)
    ]
    return name, columns


@st.composite
def rows(draw, columns, values: dict, key: dict | None = None) -> dict:
    row = {}
    for name, kind, position in columns:
        value = draw(values[kind] if position else st.none() | values[kind])
        row[name] = key[name] if key and position else value
    return row


def mask(ordinals) -> str:
    """A mask as Qlik writes it: big-endian hex of whole bytes, bit k-1 for ordinal k."""
    value = sum(1 << (ordinal - 1) for ordinal in ordinals)
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big").hex().upper()


@st.composite
def operations(draw, table, values: dict) -> tuple[dict, list[tuple]]:
    """One data message (without its transaction headers) and the changes it must give,
    each (key, type, column, old, new)."""
    name, columns = table
    operation = draw(st.sampled_from(["INSERT", "UPDATE", "DELETE", "REFRESH"]))
    row = draw(rows(columns, values))
    keys = sorted((c for c in columns if c[2]), key=lambda c: c[2])
    key = tuple((c[0], as_text(row[c[0]])) for c in keys)
    body = message(name, operation, row, column_mask=mask(range(1, len(columns) + 1)))
    plain = [(n, c[0]) for n, c in enumerate(columns, start=1) if not c[2]]
    if operation in ("INSERT", "REFRESH"):
        return body, [(key, I, c, None, as_text(row[c])) for _, c in plain if row[c] is not None]
    if operation == "DELETE":
        return body, [(key, D, None, None, None)]
    before = draw(rows(columns, values, key=row))
    changed = draw(st.lists(st.sampled_from(plain), unique=True)) if plain else []
    body.update(beforeData=before)
    body["headers"]["changeMask"] = mask(n for n, _ in changed)
    return body, [
        (key, U, c, as_text(before[c]), as_text(row[c])) for _, c in sorted(changed)
    ]


@st.composite
def streams(draw, values: dict) -> tuple[list[dict], list[ChangeEvent]]:
    """Metadata, then the messages of several transactions (and REFRESH rows) in a random
    interleaving, and the events the reader must give; ``values`` draws a column's values
    by type."""
    table_list = [draw(tables(name)) for name in ("P", "Q")]
    units = []  # each: a transaction's messages, or one REFRESH message
    for txid in range(draw(st.integers(0, 5))):
        ops = draw(st.lists(operations(draw(st.sampled_from(table_list)), values),
                            min_size=1, max_size=4))
        units += [[op] for op in ops if op[0]["headers"]["operation"] == "REFRESH"]
        cdc = [op for op in ops if op[0]["headers"]["operation"] != "REFRESH"]
        for counter, (body, _) in enumerate(cdc, start=1):
            body["headers"].update(
                transactionId=f"tx{txid}", transactionEventCounter=counter,
                transactionLastEvent=counter == len(cdc),
            )
        units += [cdc] if cdc else []
    seq = 0
    for unit in units:
        for body, _ in unit:
            if body["headers"]["operation"] == "REFRESH":
                body["headers"]["changeSequence"] = None
            else:
                seq += 1
                body["headers"]["changeSequence"] = f"{seq:035d}"
    slots = [(n, m) for n, unit in enumerate(units) for m in range(len(unit))]
    arrival = draw(st.permutations(slots))
    done_at = {n: max(at for at, slot in enumerate(arrival) if slot[0] == n)
               for n in range(len(units))}
    expected = []
    for n in sorted(done_at, key=done_at.get):
        for body, changes in units[n]:
            headers = body["headers"]
            order = (headers["changeSequence"] or "", headers["transactionEventCounter"] or 0)
            table = body["table"]
            expected += [ChangeEvent((*order, p), table, *c) for p, c in enumerate(changes)]
    messages = [metadata(name, columns) for name, columns in table_list]
    messages += [units[n][m][0] for n, m in arrival]
    return messages, expected


@settings(max_examples=200, deadline=None)
@given(st.data(), st.sampled_from(FORMS))
def test_round_trip_through_an_encoder(data, form: str) -> None:
    messages, expected = data.draw(streams(AVRO_VALUE if form == "avro" else VALUE))
    transactions = MessageTransactions()
    assert read_as(form, *messages, transactions=transactions) == expected
    assert transactions.incomplete == ()
