"""A triggerless class of few rows compared and rendered in the driver
(docs/triggerless.md): for few changes, a Spark job costs more than it saves. The same
bodies as on Spark (plans/triggerless_plan.py): reduce/objects.py, render/changes.py."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import partial

import pyarrow as pa
import pyarrow.compute as pc

from publisher.delivery.lineage import object_fates
from publisher.delivery.ordered import write_ordered
from publisher.model.catalogue import Table
from publisher.plans import ComparedClass, Rendered
from publisher.reduce.objects import (
    KEY,
    FirstIds,
    change_counts,
    compare,
    current_objects,
    event_ids,
    with_cycles_split,
    with_forward_references_split,
)
from publisher.render.changes import rendered_changes
from publisher.source.query_back import CurrentRows, isolated

EVERY_OBJECT = "(every object)"  # the key a class whose table was not read is reported under


def unread_class(reason: str) -> ComparedClass:
    """A class whose table (or a child table) the database refuses to read, as a triggerless
    cycle takes it (docs/statuses.md, Read failures): nothing published for it, its
    previous state kept as it was, the cycle goes on."""
    return ComparedClass(0, [(EVERY_OBJECT, reason)], Counter(), lambda *_: ([], None), None)


def objects_now(current: CurrentRows, table: Table) -> tuple[pa.Table | None, str | None]:
    """The class's objects as its tables hold them now (reduce/objects.py current_objects),
    read in the driver; or None and why the database refused to read one of its tables
    (docs/statuses.md, Read failures)."""
    read = []  # the class's rows, then each child table's (a view may be its own)
    for part in (table, *table.children()):
        found, failed = isolated(partial(current.rows, part, part.key_columns), part, None)
        if failed:
            return None, failed[None]
        read.append((part.name, found[0]))
    return current_objects(current.catalogue, table, read[0][1], dict(read[1:])), None


def compare_in_driver(current: CurrentRows, table: Table, previous: pa.Table | None,
                      startup: str | None) -> ComparedClass:
    """One class compared with its ``previous`` objects (None: none kept) in the driver."""
    objects, refused = objects_now(current, table)
    if refused is not None:
        return unread_class(refused)
    catalogue = current.catalogue
    comparison = compare(table, previous, objects, startup)
    self_references = catalogue.self_references(table)
    changes = with_cycles_split(table, comparison.changes, catalogue.schema, self_references)
    changes = with_forward_references_split(table, changes, catalogue.forward_references(table))

    def runs(first_ids: FirstIds, local_time: str | None, lineage: bool) -> Rendered:
        return rendered_in_driver(table, catalogue.schema, changes, first_ids, local_time, self_references, lineage)

    return ComparedClass(comparison.objects, comparison.failed, change_counts(changes), runs, comparison.state)


def rendered_in_driver(table: Table, schema: str, changes: pa.Table, first_ids: FirstIds,
                       local_time: str | None, self_references: Sequence[str],
                       lineage: bool) -> Rendered:
    """A triggerless class's changes rendered here, numbered from ``first_ids``
    (reduce/objects.event_ids), as one sorted run in memory; with ``lineage``, their
    fates."""
    ids = event_ids(table, changes, first_ids, schema, self_references)
    buffer = pa.BufferOutputStream()
    write_ordered(rendered_changes(table, schema, changes, ids, local_time), buffer)
    fates = object_fates(table.name, changes[KEY], pc.cast(changes["change"], pa.string()), ids) if lineage else None
    return [buffer.getvalue()], fates
