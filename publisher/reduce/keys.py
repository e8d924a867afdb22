"""table_key parsing for a cycle's rows.

Plain keys (printable ASCII, no quotes, blanks or special characters, no column twice) are
split by Spark expressions: for them the grammar's result is the text itself, so they need
no Python. Every other distinct key is parsed once by the grammar, in the executors."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from grammar import TableKeyError, format_table_key, parse_table_key

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

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
# Printable ASCII but , ; ' + " = \ < > (hex escapes: Java and Python read them alike).
_PLAIN_CHAR = r"[\x21\x23-\x26\x28-\x2A\x2D-\x3A\x3F-\x5B\x5D-\x7E]"
_PLAIN_PAIR = f"{_PLAIN_CHAR}+={_PLAIN_CHAR}+"
PLAIN_KEY = f"^{_PLAIN_PAIR}(\\+{_PLAIN_PAIR})*$"


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


def _plain_pairs() -> Column:
    from pyspark.sql import functions as F

    return F.transform(
        F.split(F.col("table_key"), "\\+"),
        lambda pair: F.struct(
            F.substring_index(pair, "=", 1).alias("column"),
            F.substring_index(pair, "=", -1).alias("value"),
        ),
    )


def with_plain_keys(df: DataFrame) -> DataFrame:
    """plain: whether the row's key is plain; for those, canonical_key and key_pairs."""
    from pyspark.sql import functions as F

    pairs = _plain_pairs()
    plain = F.coalesce(
        F.col("table_key").rlike(PLAIN_KEY)
        & (F.size(F.array_distinct(F.transform(pairs, lambda p: p["column"]))) == F.size(pairs)),
        F.lit(False),
    )
    return (
        df.withColumn("plain", plain)
        .withColumn("canonical_key", F.when(F.col("plain"), F.col("table_key")))
        .withColumn("key_pairs", F.when(F.col("plain"), pairs))
    )


def parsed_keys(events: DataFrame) -> DataFrame:
    """One row per distinct key that is not plain: its canonical form, pairs or error.
    ``events`` has gone through ``with_plain_keys``."""
    return (
        events.where(~events.plain & events.table_key.isNotNull())
        .select("table_key")
        .distinct()
        .mapInArrow(_parse_batches, KEY_SCHEMA)
    )
