"""Changes from the other formats, staged for the shared pipeline: the readers' ChangeEvents
written as event log rows (rows.PENDING) into Parquet files that Spark reads,
and the catalogue those events imply.

A change stream is read once, in order, by the driver (a transaction is whole only at its
commit); staging it in files, a chunk at a time, keeps the driver from holding it and lets
the executors take it from there like any event log. ``record_id`` is the event's place
in the stream, from 1, so processing order is the reader's order.

Parquet holds UTF-8, which has no lone surrogates, and a JSON escape such as ``"\\ud800"``
decodes to one: such text is staged with U+FFFF in the surrogate's place, a character XML
cannot carry either, so its event becomes E with the reason and position any other such
character gives (docs/change-formats.md, Errors), and the rest is published."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from publisher.model import value_text
from publisher.model.catalogue import Catalogue, Column, Table
from publisher.model.changes import ChangeEvent
from publisher.model.rows import PENDING

CHUNK_ROWS = 50_000
_SURROGATE = re.compile("[\ud800-\udfff]")
_TEXT_COLUMNS = ("table_key", "table_name", "column_name", "old_value", "new_value")


def _stageable(text: str) -> str:
    """``text`` as UTF-8 can hold it: a lone surrogate becomes U+FFFF."""
    return _SURROGATE.sub("\uffff", text)


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
        """The tables, named as staged (``_stageable``)."""
        tables = {}
        for name, keys in self.keys.items():
            names = keys + [c for c in self.columns[name] if c not in keys]
            columns = tuple(
                Column(_stageable(c), i, value_text.STRING, False) for i, c in enumerate(names, 1)
            )
            tables[_stageable(name)] = Table(
                _stageable(name), columns, tuple(map(_stageable, keys))
            )
        return Catalogue(self.schema, tables)


def stage_changes(events: Iterable[ChangeEvent], directory: Path, schema: str) -> StagedChanges:
    """Write ``events`` as event log rows into ``directory``, CHUNK_ROWS a file."""
    tables = _Tables(schema)
    chunk: list[tuple] = []
    rows = files = 0

    def flush() -> None:
        nonlocal files
        try:
            batch = PENDING.batch(chunk)
        except UnicodeEncodeError:  # a lone surrogate: rare, so looked for only then
            chunk[:] = [
                row._replace(**{
                    name: _stageable(text)
                    for name in _TEXT_COLUMNS if (text := getattr(row, name)) is not None
                })
                for row in chunk
            ]
            batch = PENDING.batch(chunk)
        table = pa.Table.from_batches([batch])
        pq.write_table(table, directory / f"part-{files:05d}.parquet")
        files += 1
        chunk.clear()

    for event in events:
        rows += 1
        tables.see(event)
        chunk.append(
            PENDING.row(
                record_id=rows,
                table_key=event.table_key,
                event_type_text=str(int(event.event_type)),
                event_order=0.0,
                table_name=event.table_name,
                column_name=event.column_name,
                old_value=event.old_value,
                new_value=event.new_value,
            )
        )
        if len(chunk) == CHUNK_ROWS:
            flush()
    if chunk:
        flush()
    if not files:  # an empty stream: one empty file, so that Spark knows the columns
        pq.write_table(PENDING.arrow.empty_table(), directory / "part-00000.parquet")
    return StagedChanges(directory, tables.catalogue(), rows)
