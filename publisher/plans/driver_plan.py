"""A cycle of few rows reduced in the driver: the passes the executors run on Spark
(classify_rows, the query-back state, the object pass) run here on the rows as one Arrow
table, with no Spark job. Below a few thousand rows a Spark plan's fixed cost (a dozen
jobs, each tens of milliseconds) outweighs the work, and the polling service's latency is
that cost."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import pyarrow as pa

from publisher.delivery.ordered import in_memory, split_reduced
from publisher.model.catalogue import Catalogue, Table
from publisher.model.rows import CLASSIFIED, OBJECT_ROWS
from publisher.model.statuses import Status
from publisher.plans import CycleSource, Phases, Reduced
from publisher.reduce import pipeline as p
from publisher.reduce.current import current_pass
from publisher.reduce.query_back_state import match_text
from publisher.reduce.status_ranges import consecutive_runs
from publisher.render.object_pass import object_pass
from publisher.settings import Settings
from publisher.source.query_back import KEYED_READ_LIMIT

BATCH_ROWS = 10_000  # rows per Arrow batch through the passes, as Spark's tasks get them
Cells = list[dict]  # rows.CELLS of one object


def _batches(table: pa.Table) -> Iterator[pa.RecordBatch]:
    return iter(table.to_batches(BATCH_ROWS))


def _cells_by_match(
    catalogue: Catalogue, table: Table, key_names: tuple[str, ...], rows: pa.Table, child: bool
) -> dict[str, Cells]:
    """The current rows read, by the text they match: a row's cells (the first row of a
    key, as a view may hold several), or a child table's rows' cells together."""
    by_match: dict[str, Cells] = {}
    for batch in current_pass(catalogue, table, key_names, child)(_batches(rows)):
        for row in batch.to_pylist():
            if child:
                by_match.setdefault(row["match"], []).extend(row["cells"])
            else:
                by_match.setdefault(row["match"], row["cells"])
    return by_match


def _state(source: CycleSource, live: list[dict]) -> dict[tuple[str, str], Cells | None]:
    """The current row of each object the live query-back events name (None: vanished),
    read per table and key shape by key when few, else whole, as on Spark."""
    catalogue = source.catalogue
    wanted: dict[tuple[str, tuple[str, ...]], dict[str, tuple[str, ...]]] = defaultdict(dict)
    for row in live:
        if row["key_pairs"] is not None:
            names = tuple(pair["column"] for pair in row["key_pairs"])
            values = tuple(pair["value"] for pair in row["key_pairs"])
            wanted[(row["table_name"], names)][row["canonical_key"]] = values
    state: dict[tuple[str, str], Cells | None] = {}
    for (table_name, names), objects in wanted.items():
        table = catalogue.tables[table_name]
        keys = sorted(set(objects.values()))
        keys = keys if len(keys) <= KEYED_READ_LIMIT else None
        found = _cells_by_match(
            catalogue, table, names, source.current_rows(table, names, keys), child=False
        )
        children = [
            _cells_by_match(
                catalogue, child, tuple(child.key_columns),
                source.current_rows(child, child.key_columns, keys), child=True,
            )
            for child in table.children()
        ]
        for canonical_key, values in objects.items():
            match = match_text(values)
            cells = found.get(match)
            if cells is not None:
                cells = cells + [cell for values in children for cell in values.get(match, [])]
            state[(table_name, canonical_key)] = cells
    return state


def _object_rows(live: list[dict], state: dict[tuple[str, str], Cells | None]) -> pa.Table:
    """rows.OBJECT_ROWS as pipeline.by_object gives them: each object's current row first
    (when asked for), then its events in processing order."""
    by_object: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in live:
        by_object[(row["table_name"], row["canonical_key"])].append(row)
    out = []
    for obj, events in by_object.items():
        if obj in state:
            cells = state[obj]
            out.append(OBJECT_ROWS.row(*obj, found=cells is not None, cells=cells))
        events.sort(key=lambda e: (e["ord_time"], e["record_id"]))
        for e in events:
            out.append(OBJECT_ROWS.row(**{n: e[n] for n in OBJECT_ROWS.names if n in e}))
    return pa.Table.from_batches([OBJECT_ROWS.batch(out)])


def reduce_in_driver(settings: Settings, source: CycleSource, phases: Phases) -> Reduced:
    """The cycle's commands and statuses, computed in this process."""
    phases.begin("reading and classifying")
    catalogue = source.catalogue
    classify = p.classify_rows(
        catalogue, source.loopback_user, settings.future_events, settings.max_value_length
    )
    pending = source.pending_rows()
    classified = pa.Table.from_batches(list(classify(_batches(pending))), CLASSIFIED.arrow)
    rows = classified.to_pylist()
    phases.begin("reducing and rendering", rows=len(rows))
    live = [row for row in rows if row["status"] is None]
    rejected = [
        p.Note(row["record_id"], row["status"], row["reason"])
        for row in rows if row["status"] == Status.ERROR
    ]
    objects = _object_rows(live, _state(source, live))
    commands, noted = [], []
    for batch in object_pass(catalogue)(_batches(objects)):
        rendered, notes = split_reduced(batch)
        commands.append(rendered)
        noted += notes
    lows, highs = consecutive_runs(classified.column("record_id").to_numpy())
    runs = list(zip(lows.tolist(), highs.tolist()))
    return Reduced(in_memory(commands), runs, sorted([*rejected, *noted]))
