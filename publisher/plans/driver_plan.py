"""A cycle of few rows reduced in the driver: the passes the executors run on Spark
(classify_rows, the query-back state, the object pass) run here on the rows as one Arrow
table, with no Spark job. Below a few thousand rows a Spark plan's fixed cost (a dozen
jobs, each tens of milliseconds) outweighs the work, and the polling service's latency is
that cost."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial

import pyarrow as pa

from publisher.delivery.lineage import consumed_fates
from publisher.delivery.ordered import in_memory, split_reduced
from publisher.model.rows import BATCH_ROWS, LINEAGE, OBJECT_ROWS
from publisher.plans import CycleSource, Phases, Reduced
from publisher.reduce import pipeline as p
from publisher.reduce.census import Census
from publisher.reduce.current import Unread, current_pass, state_reads
from publisher.reduce.references import Creations, ordered_creations, referenced_classes
from publisher.render.object_pass import object_pass
from publisher.settings import Settings
from publisher.source.query_back import isolated


def batches(table: pa.Table) -> Iterator[pa.RecordBatch]:
    return iter(table.to_batches(BATCH_ROWS))


def _state(source: CycleSource, census: Census, unread: Unread) -> Iterator[pa.RecordBatch]:
    """The current rows (rows.STATE) of the objects the live query-back events name, and
    of their child tables: read by key when few, else whole, as on Spark. What the
    database refuses to read goes into ``unread``."""
    for table, part, keyed in state_reads(source.catalogue, census.wanted):
        found, failed = isolated(partial(source.current.rows, part, part.key_columns), part, keyed)
        unread.add(table, failed)
        state = current_pass(source.catalogue, table, part)
        for rows in found:
            yield from state(batches(rows))


@dataclass(frozen=True)
class DriverObjects:
    """A cycle's rows classified (rows.CLASSIFIED), what the census learnt of them, and
    the live ones with their objects' current rows in object order (rows.OBJECT_ROWS):
    what the object pass takes."""

    classified: list[pa.RecordBatch]
    census: Census
    objects: pa.Table
    unread: Unread  # the objects whose current rows could not be read
    creations: Creations  # what orders references (reduce/references.py)


def objects_in_driver(settings: Settings, source: CycleSource, phases: Phases) -> DriverObjects:
    """The passes before the object pass, in this process."""
    phases.begin("reading and classifying")
    catalogue = source.catalogue
    classify = p.classify_rows(
        catalogue, source.loopback_user, settings.future_events, settings.max_value_length
    )
    lineage = settings.lineage is not None
    census = Census(consumed={} if lineage else None, referenced=referenced_classes(catalogue))
    classified = []
    for batch in classify(batches(source.pending_rows())):
        census.add(batch)
        classified.append(batch)
    phases.begin("reducing and rendering", rows=census.rows)
    unread = Unread()
    rows = map(p.object_rows, [*classified, *_state(source, census, unread)])
    objects = p.in_object_order(pa.Table.from_batches(rows, OBJECT_ROWS.arrow))
    return DriverObjects(classified, census, objects, unread, ordered_creations(census.marks))


def reduce_in_driver(settings: Settings, source: CycleSource, phases: Phases) -> Reduced:
    """The cycle's commands and statuses, computed in this process."""
    found = objects_in_driver(settings, source, phases)
    census, lineage = found.census, settings.lineage is not None
    commands, noted, fated = [], [], []
    for batch in object_pass(source.catalogue, lineage, found.unread, found.creations)(batches(found.objects)):
        rendered, notes, live = split_reduced(batch)
        commands.append(rendered)
        noted += notes
        fated.append(live)
    fates = None
    if lineage:
        fates = pa.concat_tables([consumed_fates(census.consumed), pa.Table.from_batches(fated, LINEAGE.arrow)])
    return Reduced(in_memory(commands), census.runs, sorted([*census.rejected, *noted]),
                   census.loopback, census.not_selected, census.excluded, fates)
