"""Changes from the other formats, staged for the shared pipeline: the readers' ChangeEvents
written as event log rows (event_log.PENDING_SCHEMA) into Parquet files that Spark reads,
and the catalogue those events imply.

A change stream is read once, in order, by the driver (a transaction is whole only at its
commit); staging it in files, a chunk at a time, keeps the driver from holding it and lets
the executors take it from there like any event log. ``record_id`` is the event's place
in the stream, from 1, so processing order is the reader's order."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from publisher.model import values
from publisher.model.catalogue import Catalogue, Column, Table
from publisher.model.changes import ChangeEvent
from publisher.model.columns import arrow_schema
from publisher.source.event_log import PENDING_COLUMNS

CHUNK_ROWS = 50_000
_ROWS = arrow_schema(PENDING_COLUMNS)


@dataclass(frozen=True)
class StagedChanges:
    directory: Path  # Parquet files of event log rows
    catalogue: Catalogue  # every table and column the events name
    rows: int


class _Tables:
    """The tables the events name: key columns first, then columns as they appear. Values
    are published as strings: the formats give text, and no published schema says more."""

    def __init__(self, schema: str) -> None:
        self.schema = schema
        self.keys: dict[str, list[str]] = {}
        self.columns: dict[str, list[str]] = {}

    def see(self, event: ChangeEvent) -> None:
        keys = self.keys.setdefault(event.table_name, [])
        columns = self.columns.setdefault(event.table_name, [])
        for name, _ in event.key:
            if name not in keys:
                keys.append(name)
        if event.column_name is not None and event.column_name not in columns:
            columns.append(event.column_name)

    def catalogue(self) -> Catalogue:
        tables = {}
        for name, keys in self.keys.items():
            names = keys + [c for c in self.columns[name] if c not in keys]
            columns = tuple(Column(c, i, values.STRING, False) for i, c in enumerate(names, 1))
            tables[name] = Table(name, columns, tuple(keys))
        return Catalogue(self.schema, tables)


def stage_changes(events: Iterable[ChangeEvent], directory: Path, schema: str) -> StagedChanges:
    """Write ``events`` as event log rows into ``directory``, CHUNK_ROWS a file."""
    tables = _Tables(schema)
    chunk: list[tuple] = []
    rows = files = 0

    def flush() -> None:
        nonlocal files
        columns = [pa.array(list(c), type=f.type) for c, f in zip(zip(*chunk), _ROWS)]
        pq.write_table(pa.Table.from_arrays(columns, schema=_ROWS), directory / f"part-{files:05d}.parquet")
        files += 1
        chunk.clear()

    for event in events:
        rows += 1
        tables.see(event)
        chunk.append(
            (rows, event.table_key, str(int(event.event_type)), 0.0, None, event.table_name,
             event.column_name, event.old_value, event.new_value)
        )
        if len(chunk) == CHUNK_ROWS:
            flush()
    if chunk:
        flush()
    if not files:  # an empty stream: one empty file, so that Spark knows the columns
        pq.write_table(_ROWS.empty_table(), directory / "part-00000.parquet")
    return StagedChanges(directory, tables.catalogue(), rows)
