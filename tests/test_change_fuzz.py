"""Damaged and hostile input for every change reader (docs/change-formats.md, Errors): good
input cut, with bytes changed, inserted or removed, values swapped for any JSON, Avro
schemas with any bytes, OpenEdge rows with any continuation. A reader either reads it or
raises SourceInputError, never another exception (UnicodeDecodeError, ValueError,
KeyError, struct.error, IndexError, OverflowError, RecursionError, MemoryError...).

Kept quick: a hundred or two examples each; the round-trip tests beside each reader's own
tests cover good input."""

from __future__ import annotations

import io
import json
from pathlib import Path

import fastavro
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from publisher.errors import ConfigError, SourceInputError
from publisher.source.cdc import gbase8s, qlik_ct, qlik_kafka
from publisher.source.cdc.openedge import ChangeRow, ChangeTable, RecordReassembler
from tests.test_gbase8s import SEED_004, T2, begin, commit, discard, t2_row, t2_values
from tests.test_qlik_ct import SEED_ROWS, landed
from tests.test_qlik_kafka import (
    EMP_COLUMNS,
    EMP_ROW,
    avro_frames,
    emp_insert,
    envelope,
    jsonl,
    message,
    metadata,
)

FUZZ = settings(max_examples=200, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture])


@st.composite
def damaged(draw, good: bytes) -> bytes:
    """``good`` cut short, or with a byte changed, bytes inserted or a range removed."""
    at = draw(st.integers(0, len(good)))
    kind = draw(st.sampled_from(["cut", "change", "insert", "remove"]))
    if kind == "cut":
        return good[:at]
    if kind == "change":
        return good[:at] + bytes([draw(st.integers(0, 255))]) + good[at + 1:]
    if kind == "insert":
        return good[:at] + draw(st.binary(min_size=1, max_size=8)) + good[at:]
    return good[:at] + good[at + draw(st.integers(1, 16)):]


def read_or_refuse(read, *refusals: type[Exception]) -> None:
    try:
        read()
    except (SourceInputError, *refusals):
        pass


# --- gbase8s ---------------------------------------------------------------------------

GBASE8S = SEED_004 + T2 + begin(10, 3) + b"".join(
    t2_row(kind, 11 + n, 3, t2_values(n, "ab\u00e9")) for n, kind in enumerate((40, 42, 43, 41))
) + discard(20, 3) + commit(21, 3)
GBASE8S_TABLES, GBASE8S_KEYS = {0x6F: "t1", 7: "t2"}, {"t1": ["c1"], "t2": ["k"]}


@FUZZ
@given(st.data())
def test_gbase8s(data) -> None:
    stream = io.BytesIO(data.draw(damaged(GBASE8S)))
    read_or_refuse(lambda: list(gbase8s.read_changes(stream, GBASE8S_TABLES, GBASE8S_KEYS)))


# --- qlik-kafka ------------------------------------------------------------------------

KAFKA_MESSAGES = (
    metadata("EMPLOYEES", EMP_COLUMNS),
    emp_insert(txid="t", counter=1, last=False),
    message("EMPLOYEES", "UPDATE", {**EMP_ROW, "CITY": "Bonn"}, EMP_ROW, change_mask="0800",
            txid="t", counter=2, last=True),
)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=20) | st.sampled_from(["\ud800", "\x00", "x" * 300, "1" * 5000]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                max_size=3),
    max_leaves=8,
)


@FUZZ
@given(st.data())
def test_qlik_kafka_json_bytes(data) -> None:
    stream = io.BytesIO(data.draw(damaged(jsonl(*KAFKA_MESSAGES).encode())))
    read_or_refuse(lambda: list(qlik_kafka.read_changes(stream)))


def paths(value: object, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside a JSON document."""
    found = [prefix]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += paths(inner, (*prefix, key))
    return found


@FUZZ
@given(st.data())
def test_qlik_kafka_json_values(data) -> None:
    """A value anywhere in a message replaced by any JSON value."""
    messages = json.loads(json.dumps(KAFKA_MESSAGES))
    index = data.draw(st.integers(0, len(messages) - 1))
    path = data.draw(st.sampled_from(paths(messages[index])[1:]))
    parent = messages[index]
    for key in path[:-1]:
        parent = parent[key]
    parent[path[-1]] = data.draw(JSON_VALUES)
    read_or_refuse(lambda: list(qlik_kafka.read_changes(io.StringIO(jsonl(*messages)))))


@FUZZ
@given(st.data())
def test_qlik_kafka_avro_bytes(data) -> None:
    stream = io.BytesIO(data.draw(damaged(b"".join(avro_frames(*KAFKA_MESSAGES)))))
    read_or_refuse(lambda: list(qlik_kafka.read_changes(stream, message_format="avro")))


PRIMITIVES = st.sampled_from(["null", "boolean", "int", "long", "float", "double", "bytes",
                              "string"])
LOGICAL = st.sampled_from([
    {"type": "int", "logicalType": "date"},
    {"type": "long", "logicalType": "timestamp-millis"},
    {"type": "long", "logicalType": "time-micros"},
    {"type": "string", "logicalType": "uuid"},
    {"type": "bytes", "logicalType": "decimal", "precision": 6, "scale": 2},
    {"type": "fixed", "name": "D", "size": 3, "logicalType": "decimal", "precision": 5},
])


def schemas() -> st.SearchStrategy:
    """Avro schemas of every kind; names numbered as they are drawn, so none repeats."""
    counter = iter(range(1_000_000))

    def named(kind: str, **more) -> dict:
        return {"type": kind, "name": f"N{next(counter)}", **more}

    return st.recursive(
        PRIMITIVES | LOGICAL,
        lambda inner: st.one_of(
            st.builds(lambda items: {"type": "array", "items": items}, inner),
            st.builds(lambda values: {"type": "map", "values": values}, inner),
            st.lists(inner, min_size=1, max_size=3).filter(
                lambda branches: len({json.dumps(b, sort_keys=True) for b in branches})
                == len(branches) and not any(isinstance(b, list) for b in branches)
            ),
            st.builds(lambda fields: named("record", fields=[
                {"name": f"f{n}", "type": kind} for n, kind in enumerate(fields)
            ]), st.lists(inner, max_size=3)),
            st.builds(lambda size: named("fixed", size=size), st.integers(0, 4)),
            st.builds(lambda n: named("enum", symbols=[f"S{k}" for k in range(n)]),
                      st.integers(1, 3)),
        ),
        max_leaves=6,
    )


@FUZZ
@given(schemas(), st.binary(max_size=40))
def test_qlik_kafka_avro_any_schema_any_bytes(schema, raw) -> None:
    """A self-describing data message of any schema and any bytes (fastavro trusts every
    count and length: the bounds are checked before it reads)."""
    try:
        fastavro.parse_schema(json.loads(json.dumps(schema)))
    except Exception:  # noqa: BLE001 - a strategy's schema fastavro refuses: not this test's
        return
    data = envelope("DT", raw, schema=schema)
    read_or_refuse(lambda: list(qlik_kafka.read_changes(io.BytesIO(data), message_format="avro")))


# --- qlik-ct ---------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["csv", "parquet", "dfm"])
@FUZZ
@given(data=st.data())
def test_qlik_ct_files(tmp_path_factory, fmt: str, data) -> None:
    """A damaged data file or .dfm. A .dfm that no longer lists the columns a change table
    needs is a ConfigError naming the .dfm."""
    folder = tmp_path_factory.mktemp("landing")
    path = landed(folder, SEED_ROWS, fmt="parquet" if fmt == "parquet" else "csv")
    target = path.with_suffix(".dfm") if fmt == "dfm" else path
    target.write_bytes(data.draw(damaged(target.read_bytes())))
    read_or_refuse(lambda: qlik_ct.read_files(folder), ConfigError)


# --- openedge --------------------------------------------------------------------------

OE_FIELDS = ("K", "Name", "Phone##1", "Phone##2", "Rating")
SMALL = st.integers(-2, 6) | st.sampled_from([2**31, -(2**63)])
OE_VALUES = st.none() | st.integers(-3, 3) | st.text(max_size=4) | st.binary(max_size=4) \
    | st.floats() | st.lists(st.integers(), max_size=2)


@st.composite
def change_rows(draw) -> list[ChangeRow]:
    rows = []
    for sequence in sorted(draw(st.lists(st.integers(1, 4), max_size=6))):
        values = draw(st.none() | st.fixed_dictionaries({f: OE_VALUES for f in OE_FIELDS}))
        rows.append(ChangeRow(
            sequence, draw(st.none() | st.integers(0, 13)), draw(st.integers(1, 2)),
            draw(st.integers(1, 2)), draw(SMALL), draw(SMALL), draw(SMALL), values,
        ))
    return rows


@settings(FUZZ, max_examples=100)
@given(change_rows())
def test_openedge_rows(rows: list[ChangeRow]) -> None:
    reassembler = RecordReassembler(ChangeTable("T", ("K",)), OE_FIELDS)
    read_or_refuse(lambda: list(reassembler.changes(rows)))


def test_the_damage_reaches_the_readers(tmp_path: Path) -> None:
    """The good inputs above are read as they are (so damage is what the tests add)."""
    assert list(gbase8s.read_changes(io.BytesIO(GBASE8S), GBASE8S_TABLES, GBASE8S_KEYS))
    assert list(qlik_kafka.read_changes(io.StringIO(jsonl(*KAFKA_MESSAGES))))
    avro = io.BytesIO(b"".join(avro_frames(*KAFKA_MESSAGES)))
    assert list(qlik_kafka.read_changes(avro, message_format="avro"))
    assert qlik_ct.read_files(landed(tmp_path, SEED_ROWS))
