"""A cycle of few rows reduced in the driver: the passes the executors run on Spark
(classify_rows, the query-back state, the object pass) run here on the rows as one Arrow
table, with no Spark job. Below a few thousand rows a Spark plan's fixed cost (a dozen
jobs, each tens of milliseconds) outweighs the work, and the polling service's latency is
that cost."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from publisher.delivery.ordered import in_memory, split_reduced
from publisher.model.rows import CLASSIFIED, OBJECT_ROWS
from publisher.plans import CycleSource, Phases, Reduced
from publisher.reduce import pipeline as p
from publisher.reduce.census import Census
from publisher.reduce.current import current_pass, state_reads
from publisher.render.object_pass import object_pass
from publisher.settings import Settings

BATCH_ROWS = 10_000  # rows per Arrow batch through the passes, as Spark's tasks get them


def _batches(table: pa.Table) -> Iterator[pa.RecordBatch]:
    return iter(table.to_batches(BATCH_ROWS))


def _state(source: CycleSource, census: Census) -> list[dict]:
    """The current rows (rows.STATE) of the objects the live query-back events name, and
    of their child tables: read by key when few, else whole, as on Spark."""
    state = []
    for table, part, keyed in state_reads(source.catalogue, census.wanted):
        rows = source.current_rows(part, part.key_columns, keyed)
        for batch in current_pass(source.catalogue, table, part)(_batches(rows)):
            state += batch.to_pylist()
    return state


def _object_rows(live: list[dict], state: list[dict]) -> pa.Table:
    """rows.OBJECT_ROWS as pipeline.by_object gives them: each object's current rows first,
    then its events in processing order."""
    by_object: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in live:
        by_object[(row["table_name"], row["canonical_key"])].append(row)
    current: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for row in state:
        current[(row["table_name"], row["canonical_key"])].append(row)
    out = []
    for obj, events in by_object.items():
        out += [OBJECT_ROWS.row(*obj, found=r["found"], cells=r["cells"]) for r in current[obj]]
        events.sort(key=lambda e: (e["ord_time"], e["record_id"]))
        out += [OBJECT_ROWS.row(**{n: e[n] for n in OBJECT_ROWS.names if n in e}) for e in events]
    return pa.Table.from_batches([OBJECT_ROWS.batch(out)])


def reduce_in_driver(settings: Settings, source: CycleSource, phases: Phases) -> Reduced:
    """The cycle's commands and statuses, computed in this process."""
    phases.begin("reading and classifying")
    catalogue = source.catalogue
    classify = p.classify_rows(
        catalogue, source.loopback_user, settings.future_events, settings.max_value_length
    )
    census = Census()
    classified = []
    for batch in classify(_batches(source.pending_rows())):
        census.add(batch)
        classified.append(batch)
    phases.begin("reducing and rendering", rows=census.rows)
    live = pa.Table.from_batches(classified, CLASSIFIED.arrow).filter(pc.field("status").is_null())
    objects = _object_rows(live.to_pylist(), _state(source, census))
    commands, noted = [], []
    for batch in object_pass(catalogue)(_batches(objects)):
        rendered, notes = split_reduced(batch)
        commands.append(rendered)
        noted += notes
    return Reduced(in_memory(commands), census.runs, sorted([*census.rejected, *noted]))
