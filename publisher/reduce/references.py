"""What the object pass must know of other objects to order references (docs/reduction.md,
References and order): where, in processing order, each object that a reference may
name is created in the cycle. Learnt by the census as the rows are classified, before
the shuffle by object, and handed to the object pass as plain data: a referencing object
and the object it names may be reduced in different tasks."""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from publisher.model import events as ev
from publisher.model.catalogue import Catalogue, NotAClass
from publisher.model.value_text import DN

Position = tuple[float, int]  # processing order: (ord_time, record_id)
# An object's association (the text a reference to it holds): where it is created, in order.
Creations = dict[str, list[Position]]
# A creating event or a delete of an object that a reference may name.
MARKS = pa.schema([("association", pa.string()), ("ord_time", pa.float64()),
                   ("record_id", pa.int64()), ("deletes", pa.bool_())])
_INSERT_FIELD, _DELETE = int(ev.EventType.INSERT_FIELD), int(ev.EventType.DELETE_ROW)
_MARKING = pa.array([_INSERT_FIELD, _DELETE, int(ev.EventType.INSERT_ROW_QUERY_BACK)], pa.int32())


@dataclass(frozen=True)
class Referenced:
    """The classes some reference names, each with its multi-valued attributes' names (a
    value added to one is no creation), and the schema their associations name."""

    classes: dict[str, frozenset[str]]
    schema: str


def referenced_classes(catalogue: Catalogue) -> Referenced | None:
    """The classes the catalogue's references name (None: no reference)."""
    named = set()
    for table in catalogue.tables.values():
        columns = [*table.columns, *(m.column for m in table.multi_valued)]
        for column in columns:
            if column.reference is None:
                continue
            try:
                named.add(catalogue.referenced(column).name)
            except NotAClass:
                continue  # its events are E (rules.Classifier)
    classes = {
        name: frozenset(m.name for m in catalogue.tables[name].multi_valued)
        for name in sorted(named) if name in catalogue.tables
    }
    return Referenced(classes, catalogue.schema) if classes else None


def marks_of(batch: pa.RecordBatch, referenced: Referenced) -> pa.Table | None:
    """The creating events and deletes among a rows.CLASSIFIED batch's live rows, of the
    classes ``referenced`` names (None: none), as rows of MARKS. A creation is a type 1 of a
    single-valued attribute (the row was inserted) or a type 5 (inserted, or given its key:
    docs/triggers.md)."""
    event_type = batch.column("event_type")
    live = batch.filter(pc.and_(pc.is_null(batch.column("status")), pc.is_in(event_type, _MARKING)))
    tables = live.column("table_name")
    found = []
    for name in pc.unique(tables).drop_null().to_pylist():
        multi = referenced.classes.get(name)
        if multi is None:
            continue
        rows = live.filter(pc.equal(tables, name))
        kind = rows.column("event_type")
        if multi:  # a value added to a multi-valued attribute creates nothing
            value = pc.fill_null(pc.is_in(rows.column("column_name"), pa.array(sorted(multi))), False)
            rows = rows.filter(pc.invert(pc.and_(pc.equal(kind, _INSERT_FIELD), value)))
            kind = rows.column("event_type")
        keys = pc.binary_join_element_wise(
            rows.column("canonical_key"), f"table={name},schema={referenced.schema}", ","
        )
        columns = [keys, rows.column("ord_time"), rows.column("record_id"), pc.equal(kind, _DELETE)]
        found.append(pa.Table.from_arrays(columns, schema=MARKS))
    return pa.concat_tables(found) if found else None


def ordered_creations(marks: list[pa.Table]) -> Creations:
    """The census's marks as each object's creations in processing order: its first one,
    and the first after each of its deletes (a later one finds the object made)."""
    if not marks:
        return {}
    table = pa.concat_tables(marks)
    table = table.take(pc.sort_indices(table, [(n, "ascending") for n in MARKS.names[:3]]))
    keys = table.column("association").to_numpy(zero_copy_only=False)
    deletes = table.column("deletes").to_numpy(zero_copy_only=False)
    # A creation counts when the object's mark before it, if any, is a delete.
    first = np.ones(len(keys), bool)
    first[1:] = (keys[1:] != keys[:-1]) | deletes[:-1]
    kept = table.filter(pa.array(first & ~deletes))
    found: Creations = {}
    for key, time, record_id in zip(*(kept.column(n).to_pylist() for n in MARKS.names[:3])):
        found.setdefault(key, []).append((time, record_id))
    return found


def created_between(creations: Creations, association: str, after: Position, before: Position) -> bool:
    """Whether the object of ``association`` is created after ``after`` and before ``before``."""
    positions = creations.get(association)
    if not positions:
        return False
    index = bisect_right(positions, after)
    return index < len(positions) and positions[index] < before


def referenced_values(event_type: int, column_name: str | None, xds_type: str | None,
                      new_text: str | None, cells: list | None) -> list[str]:
    """The associations an event's values name: a type 1-3's new value, or what a
    query-back reads back (a row query-back's every attribute, a field one's own)."""
    if event_type in ev.FIELD_NON_QUERY_BACK:
        return [new_text] if xds_type == DN and new_text is not None else []
    if cells is None:
        return []
    whole_row = event_type in ev.ROW_QUERY_BACK
    return [text for name, cell_type, text in cells
            if cell_type == DN and text is not None and (whole_row or name == column_name)]
