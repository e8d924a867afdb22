"""Query-back state: the current rows of the tables the cycle's query-back events name, as
rows that travel with those objects' events through the shuffle by object
(plans/exchange.py), so no join is needed.

The rows read (source/query_back.py) go through one Python pass that applies the
query-back state rules (reduce/query_back_state.py): each row's object (its canonical key)
and its cells. A class with child tables has each of them read once too, each row giving
its object some multi-valued cells (docs/classes.md). The result is rows.STATE: ``found``
true for an object's current row, false for one of its child tables' rows. An object
asked for that has no current row has no STATE row: the object pass sees it vanished."""

from __future__ import annotations

from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

import pyarrow as pa

from grammar import format_table_key
from publisher.model import events as ev
from publisher.model.catalogue import Catalogue, Table
from publisher.model.rows import STATE, Passes
from publisher.reduce.query_back_state import child_cells, current_cells, current_key
from publisher.reduce.vectorised_state import StateColumns


def current_pass(catalogue: Catalogue, owner: Table, table: Table,
                 vectorised: bool = True) -> Passes:
    """mapInArrow body over the rows read of ``table``, the class ``owner`` itself or one of
    its child tables (as Table.children gives them): rows.STATE, rows of no object
    dropped. A child table's rows give their class's multi-valued cells. Column by column
    with pyarrow (vectorised_state.py); ``vectorised=False`` applies the rules row by row
    (the tests compare the two)."""
    child = table is not owner

    def by_rules(batch: pa.RecordBatch) -> pa.RecordBatch:
        out = []
        for row in batch.to_pylist():
            key = current_key(table, table.key_columns, row, owner.key_columns)
            if key is not None:
                cells = (
                    child_cells(catalogue, table, row) if child
                    else current_cells(catalogue, table, table.key_columns, row)
                )
                out.append(STATE.row(owner.name, key, found=not child, cells=cells))
        return STATE.batch(out)

    if not vectorised:
        return lambda batches: map(by_rules, batches)
    columns = StateColumns(catalogue, owner, table)

    def state(batch: pa.RecordBatch) -> pa.RecordBatch:
        try:
            return columns.state(batch)
        except Exception:  # the rules take the batch then, a value at a time (each one's error kept)
            return by_rules(batch)

    return lambda batches: map(state, batches)


Wanted = Mapping[str, "Collection[tuple[str, ...]] | None"]  # census.Census.wanted


def state_reads(catalogue: Catalogue, wanted: Wanted) -> Iterator[tuple[Table, Table, list | None]]:
    """The reads query-back's state needs: (class, the class itself or one of its child
    tables, the keys to read it by, or None to read it whole)."""
    for table_name, keys in wanted.items():
        table = catalogue.tables[table_name]
        keyed = None if keys is None else sorted(keys)
        for part in (table, *table.children()):
            yield table, part, keyed


@dataclass
class Unread:
    """The current rows the database refused to read (source/query_back.py, isolated): by
    object, and by class where a whole table's read failed. An object among them whose
    events include a query-back is E, all its rows, with the database's reason
    (docs/statuses.md, Read failures); the rest of the cycle publishes."""

    keys: dict[str, set[tuple[str, ...]]] = field(default_factory=dict)  # class -> keys
    objects: dict[tuple[str, str], str] = field(default_factory=dict)  # (class, canonical key)
    classes: dict[str, str] = field(default_factory=dict)  # class -> reason: every object

    def __bool__(self) -> bool:
        return bool(self.objects or self.classes)

    def add(self, owner: Table, failed: Mapping[tuple[str, ...] | None, str]) -> None:
        """What ``isolated`` could not read of ``owner`` or one of its child tables."""
        for key, reason in failed.items():
            if key is None:
                self.classes.setdefault(owner.name, reason)
                continue
            self.keys.setdefault(owner.name, set()).add(key)
            canonical = format_table_key(list(zip(owner.key_columns, key)))
            self.objects.setdefault((owner.name, canonical), reason)

    def reason(self, obj: tuple[str, str], events: Sequence) -> str | None:
        """Why the object ``obj`` (class, canonical key) with ``events`` (rules.Event)
        cannot be published: None when it can."""
        if not any(e.event_type in ev.QUERY_BACK for e in events):
            return None
        return self.objects.get(obj) or self.classes.get(obj[0])

    def readable(self, wanted: Wanted) -> dict[str, Collection[tuple[str, ...]] | None]:
        """``wanted`` less what could not be read: a second reading of it succeeds."""
        readable: dict[str, Collection[tuple[str, ...]] | None] = {}
        for name, keys in wanted.items():
            left = None if keys is None else set(keys) - self.keys.get(name, set())
            if name not in self.classes and left != set():
                readable[name] = left
        return readable
