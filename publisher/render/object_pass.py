"""The object pass: in the executors, each object's live rows (pipeline.by_object) reduced
by the rules and its commands rendered, in one Python pass per partition.

What comes out is one row per command (cmd_time, cmd_id, xml) and one per row whose status
is not S (record_id, status, reason): a cycle's statuses are S but for these few."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pyarrow as pa

from publisher.model import events as ev
from publisher.model.columns import arrow_schema, ddl, record_batch
from publisher.reduce.rules import Cell, Event, attrs_of, reduce_object
from publisher.render.xds import command_xml

REDUCED_COLUMNS = (
    ("cmd_time", "DOUBLE"),
    ("cmd_id", "BIGINT"),
    ("xml", "BINARY"),
    ("record_id", "BIGINT"),
    ("status", "STRING"),
    ("reason", "STRING"),
)
_BATCH_ROWS = 10_000  # output rows per Arrow batch: bounds a task's memory
REDUCED_SCHEMA = ddl(REDUCED_COLUMNS)
_REDUCED = arrow_schema(REDUCED_COLUMNS)


def _read_back(state: dict | None) -> Callable[[], tuple[list[Cell] | None, dict[str, str]]]:
    """The object's current row as rules.reduce_object reads it."""
    if state is None or not state["found"]:
        return lambda: (None, {})
    cells = [(c["column_name"], c["xds_type"], c["value"]) for c in state["cells"]]
    errors = {c["column_name"]: c["value_error"] for c in state["cells"] if c["value_error"]}
    return lambda: (cells, errors)


# The columns of pipeline.by_object that make an Event, in its fields' order.
_EVENT_FIELDS = (
    "record_id", "event_type", "column_name", "xds_type", "old_text", "new_text", "warning",
    "canonical_key", "ord_time",
)


def object_pass(schema: str) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """mapInArrow body over pipeline.by_object: REDUCED_SCHEMA."""

    def reduce_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        out: list[tuple] = []  # rows in REDUCED_COLUMNS order

        def publish(obj: tuple[str, str], state: dict | None, events: list[Event]) -> None:
            statuses: dict[int, tuple[str, str | None]] = {}
            runs = reduce_object(events, _read_back(state), statuses)
            table_name, key = obj
            association = f"{key},table={table_name},schema={schema}"
            for kind, run in runs:
                attrs = attrs_of(run)
                if kind == ev.MODIFY and not attrs:
                    continue  # nothing to say, e.g. a query-back of a vanished row
                head = run[0]
                xml = command_xml(kind, table_name, head.record_id, association, attrs)
                out.append((head.ord_time, head.record_id, xml, None, None, None))
            for record_id, (letter, reason) in statuses.items():
                if letter != ev.Status.DONE:
                    out.append((None, None, None, record_id, letter, reason))

        current: tuple[str, str] | None = None
        state: dict | None = None
        events: list[Event] = []
        for batch in batches:
            # Column by column: a dict per row costs more than the rules themselves.
            column = batch.column
            objects = zip(column("table_name").to_pylist(), column("canonical_key").to_pylist())
            fields = zip(*(column(name).to_pylist() for name in _EVENT_FIELDS))
            for index, (obj, found, event) in enumerate(zip(objects, column("found").to_pylist(), fields)):
                if obj != current:
                    if events:
                        publish(current, state, events)
                    current, state, events = obj, None, []
                if found is not None:
                    state = {"found": found, "cells": column("cells")[index].as_py()}
                else:
                    events.append(Event(*event))
            if len(out) >= _BATCH_ROWS:
                yield record_batch(out, _REDUCED)
                out.clear()
        if events:
            publish(current, state, events)
        yield record_batch(out, _REDUCED)

    return reduce_partition
