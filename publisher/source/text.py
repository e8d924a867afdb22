"""Text as the databases hand it over (docs/event-log.md, Text that is not UTF-8).

SQLite stores whatever bytes a client gave as TEXT without checking that they are UTF-8.
Each byte that is not is read as U+FFFF, a character XML 1.0 cannot carry: the row that
holds it is E, as for any such character, and nothing is replaced silently. Both ways of
reading agree: Python's sqlite3 decodes with ``decoded_text``, and Spark's JDBC source
reads SQLite's text as bytes that ``decoded_columns`` decodes the same way."""

from __future__ import annotations

import codecs
from collections.abc import Sequence

import pyarrow as pa

NOT_UTF8 = "\uffff"
_HANDLER = "xdspub-not-utf8"
codecs.register_error(_HANDLER, lambda exc: (NOT_UTF8 * (exc.end - exc.start), exc.end))


def decoded_text(data: bytes) -> str:
    """UTF-8 bytes as text, each byte that is not UTF-8 as U+FFFF."""
    return bytes(data).decode("utf-8", _HANDLER)


def database_text(value: object) -> str | None:
    """A value as text, as a string column reads it: bytes decoded (decoded_text), numbers
    written out."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return decoded_text(value)
    return str(value)


def decoded_columns(batch: pa.RecordBatch, names: Sequence[str]) -> pa.RecordBatch:
    """``batch`` with its binary columns ``names`` as strings, by decoded_text."""
    columns = []
    for name, column in zip(batch.schema.names, batch.columns):
        if name in names:
            try:
                column = column.cast(pa.string())  # checks the UTF-8: the common case
            except pa.ArrowInvalid:
                column = pa.array([None if v is None else decoded_text(v) for v in column.to_pylist()], pa.string())
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)
