"""Row shapes declared once, as (name, Spark SQL type) pairs: the DDL string Spark takes
and the Arrow schema the Python passes build are both made from them."""

from __future__ import annotations

import pyarrow as pa

Columns = tuple[tuple[str, str], ...]

KEY_PAIRS = "ARRAY<STRUCT<column: STRING, value: STRING>>"
_ARROW = {
    "BIGINT": pa.int64(),
    "INT": pa.int32(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "STRING": pa.string(),
    "BINARY": pa.binary(),
    KEY_PAIRS: pa.list_(pa.struct([("column", pa.string()), ("value", pa.string())])),
}


def ddl(columns: Columns) -> str:
    """The columns as Spark's DDL schema string."""
    return ", ".join(f"{name} {kind}" for name, kind in columns)


def arrow_schema(columns: Columns) -> pa.Schema:
    """The columns as an Arrow schema (types of _ARROW only)."""
    return pa.schema([(name, _ARROW[kind]) for name, kind in columns])


def record_batch(rows: list[tuple], schema: pa.Schema) -> pa.RecordBatch:
    """Rows (tuples in the schema's column order) as one Arrow batch."""
    columns = zip(*rows) if rows else ([] for _ in schema)
    return pa.RecordBatch.from_arrays(
        [pa.array(list(c), type=f.type) for c, f in zip(columns, schema)], schema=schema
    )
