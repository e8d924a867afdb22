"""The object pass: in the executors, each object's live rows (plans/exchange.py) reduced
by the rules and its commands rendered, in one Python pass per partition. An object's
current rows (rows.STATE, reduce/current.py) come first: they are what its query-back
events read.

What comes out (rows.REDUCED) is one row per command (cmd_time, cmd_id, xml) and one per
row whose status is not S (record_id, status, reason): a cycle's statuses are S but for
these few. With ``lineage``, also one per live row that is not E, its fate (record_id and
the cmd_id of its command, or the rule that consumed it: docs/delivery.md, Lineage)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import fields
from itertools import pairwise

import pyarrow as pa

from publisher.model.catalogue import Catalogue
from publisher.model.commands import Command
from publisher.model.rows import BATCH_ROWS, EVENT, REDUCED, Passes
from publisher.model.statuses import Status, failure_reason, reason_text
from publisher.reduce.current import Unread
from publisher.reduce.query_back_state import read_back
from publisher.reduce.references import Creations
from publisher.reduce.rules import NOTHING_TO_SEND, Event, Statuses, object_runs
from publisher.render.xds import command_xml

NOTHING_UNREAD = Unread()
# The columns that make an Event, in the order of its fields.
_EVENT_FIELDS = tuple(f.name for f in fields(Event) if f.name in EVENT.names)
# An object's runs (rules.object_runs), each command with its XML.
Rendered = list[tuple[Command | None, bytes | None, list[Event]]]


def _cells(found: list | None, children: list) -> list | None:
    """An object's current state: its row's cells, then its child tables' (None: it has no
    current row, whatever its child tables hold)."""
    return None if found is None else found + children


def _cell_spans(cells: pa.ListArray) -> list[int]:
    """Where each row's cells start in _cell_rows, and where the last one's end."""
    offsets = cells.offsets.to_numpy()
    return (offsets - offsets[0]).tolist()


def _cell_rows(cells: pa.ListArray) -> list[tuple]:
    """The rows' cells one after another, as the offsets index them (a sliced column's
    own part of its child array), as tuples: a field at a time, since a dict per cell
    costs more than the pass's use of it."""
    offsets = cells.offsets
    first, last = offsets[0].as_py(), offsets[-1].as_py()
    part = cells.values.slice(first, last - first)
    return list(zip(*(field.to_pylist() for field in part.flatten())))


ObjectEvents = tuple[tuple[str, str], "list | None", list[Event]]


def object_events(batches: Iterator[pa.RecordBatch]) -> Iterator[ObjectEvents]:
    """Each object of rows.OBJECT_ROWS batches in object order (pipeline.in_object_order):
    its (table_name, canonical_key), its current state's cells (None: no current row) and
    its live events in processing order."""
    current: tuple[str, str] | None = None
    found: list | None = None  # the object's current row's cells (None: none read)
    children: list = []  # its child tables' rows' cells
    events: list[Event] = []
    for batch in batches:
        # Column by column: a dict per row costs more than the rules themselves.
        column = batch.column
        objects = zip(column("table_name").to_pylist(), column("canonical_key").to_pylist())
        values = zip(*(column(name).to_pylist() for name in _EVENT_FIELDS))
        state = column("found").to_pylist()
        spans = pairwise(_cell_spans(column("cells")))
        cell_rows = _cell_rows(column("cells"))
        for obj, is_state, (start, end), event in zip(objects, state, spans, values):
            if obj != current:
                if events:
                    yield current, _cells(found, children), events
                current, found, children, events = obj, None, [], []
            if is_state is not None:  # a current row, before the object's events
                cells = cell_rows[start:end]
                if not is_state:
                    children += cells
                elif found is None:  # a view's key may hold several rows: the first
                    found = cells
            else:
                events.append(Event(*event))
    if events:
        yield current, _cells(found, children), events


class _Fates:
    """The fates of a partition's events that are not E (--lineage), column by column: a
    row tuple each would cost more than the rest of the pass does for the event."""

    def __init__(self) -> None:
        self.ids: list[int] = []
        self.cmd_ids: list[int | None] = []
        self.rules: list[str | None] = []
        self.superseding: list[int | None] = []

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, runs: Rendered, events: list[Event]) -> None:
        """An object's events: each one's command, or why it was consumed."""
        for command, _, run in runs:  # a run at a time: most events are in runs
            cmd_id, rule = (None, NOTHING_TO_SEND) if command is None else (command.event_id, None)
            self.ids += [e.record_id for e in run]
            self.cmd_ids += [cmd_id] * len(run)
            self.rules += [rule] * len(run)
            self.superseding += [None] * len(run)
        for e in events:
            if e.superseded:
                self.ids.append(e.record_id)
                self.cmd_ids.append(None)
                self.rules.append(e.rule)
                self.superseding.append(e.superseded_by)

    def batch(self) -> pa.RecordBatch:
        """The fates as rows.REDUCED (the other columns NULL), and none kept."""
        given = {"record_id": self.ids, "cmd_id": self.cmd_ids, "rule": self.rules,
                 "superseded_by": self.superseding}
        n = len(self.ids)
        columns = [pa.array(given[f.name], f.type) if f.name in given else pa.nulls(n, f.type)
                   for f in REDUCED.arrow]
        for kept in given.values():
            kept.clear()
        return pa.RecordBatch.from_arrays(columns, schema=REDUCED.arrow)


def object_outcome(catalogue: Catalogue, obj: tuple[str, str], cells: list | None,
                   events: list[Event], unread: Unread = NOTHING_UNREAD,
                   creations: Creations | None = None) -> tuple[Rendered | None, Statuses]:
    """One object's runs (rules.object_runs, cut by the cycle's ``creations``), each
    command with its XML, and every event's status; whatever fails for the object fails
    its rows alone (runs None, every row E), its current rows that could not be read
    (``unread``) too."""
    statuses: Statuses = {}
    refused = unread.reason(obj, events)
    if refused is not None:
        return None, {e.record_id: (Status.ERROR, refused) for e in events}
    try:
        state = read_back(cells)
        table = catalogue.tables[obj[0]]
        runs = object_runs(table, catalogue.schema, events, lambda: state, statuses, creations)
        return [(c, None if c is None else command_xml(c), run) for c, run in runs], statuses
    except Exception as exc:
        reason = failure_reason(exc)
        return None, {e.record_id: (Status.ERROR, reason) for e in events}


def object_pass(catalogue: Catalogue, lineage: bool = False, unread: Unread = NOTHING_UNREAD,
                creations: Creations | None = None) -> Passes:
    """mapInArrow body over rows.OBJECT_ROWS: rows.REDUCED, with each live row's fate when
    ``lineage``; the objects ``unread`` names E; ``creations``: the census's, for the
    order of references (reduce/references.py)."""

    def reduce_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        # The pass makes no reference cycles, and each of the collector's runs would scan
        # every row it holds, again and again, for nothing.
        collecting = gc.isenabled()
        gc.disable()
        try:
            yield from _reduced(batches)
        finally:
            if collecting:
                gc.enable()

    def _reduced(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        out: list[tuple] = []
        fates = _Fates()
        for obj, cells, events in object_events(batches):
            runs, statuses = object_outcome(catalogue, obj, cells, events, unread, creations)
            if runs is not None:
                out.extend(REDUCED.row(cmd_time=command.ord_time, cmd_id=command.event_id, xml=xml)
                           for command, xml, _ in runs if command)
                if lineage:
                    fates.add(runs, events)
            for record_id, (letter, reason) in statuses.items():
                if letter != Status.DONE:
                    out.append(REDUCED.row(record_id=record_id, status=letter, reason=reason_text(reason)))
            if len(out) >= BATCH_ROWS:
                yield REDUCED.batch(out)
                out.clear()
            if len(fates) >= BATCH_ROWS:
                yield fates.batch()
        yield REDUCED.batch(out)
        if fates:
            yield fates.batch()

    return reduce_partition
