"""table_key parsing in the executors: each distinct key of a cycle is parsed once."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from grammar import TableKeyError, format_table_key, parse_table_key

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

KEY_SCHEMA = (
    "table_key STRING, canonical_key STRING, "
    "key_pairs ARRAY<STRUCT<column: STRING, value: STRING>>, key_error STRING"
)
_ARROW_SCHEMA = pa.schema(
    [
        ("table_key", pa.string()),
        ("canonical_key", pa.string()),
        ("key_pairs", pa.list_(pa.struct([("column", pa.string()), ("value", pa.string())]))),
        ("key_error", pa.string()),
    ]
)


def _parsed(text: str) -> dict:
    try:
        pairs = parse_table_key(text)
    except TableKeyError as exc:
        return {"table_key": text, "canonical_key": None, "key_pairs": None, "key_error": str(exc)}
    return {
        "table_key": text,
        "canonical_key": format_table_key(pairs),
        "key_pairs": [{"column": c, "value": v} for c, v in pairs],
        "key_error": None,
    }


def _parse_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    for batch in batches:
        rows = [_parsed(text) for text in batch.column(0).to_pylist()]
        yield pa.RecordBatch.from_pylist(rows, schema=_ARROW_SCHEMA)


def parsed_keys(events: DataFrame) -> DataFrame:
    """One row per distinct table_key of ``events``: its canonical form, pairs or error."""
    return (
        events.select("table_key")
        .where("table_key IS NOT NULL")
        .distinct()
        .mapInArrow(_parse_batches, KEY_SCHEMA)
    )
