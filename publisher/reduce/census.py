"""What a cycle must know of its classified rows before the shuffle by object, learnt as
they are classified: the runs of record_ids read, the E rows, the objects that live
query-back events ask for, by table, and where the objects a reference may name are
created and deleted (reduce/references.py). On Spark each classifying task adds its part to an
accumulator, by partition, so a task run twice counts once; no job of its own
(plans/tasks.py).

The wanted objects decide how query-back reads a table (reduce/current.py): by key when
at most KEYED_READ_LIMIT objects are asked, else whole."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from publisher.model.rows import NOTES, Note
from publisher.model.statuses import Status
from publisher.reduce.exclusion import EXCLUDED
from publisher.reduce.loopback import LOOPBACK
from publisher.reduce.references import Referenced, marks_of
from publisher.reduce.selection import NOT_SELECTED
from publisher.reduce.status_ranges import consecutive_runs, merge_runs

# Up to this many requested objects are read by their keys; more, and the table is read
# whole (in ranges of its integer key when it has one: source/query_back.py).
KEYED_READ_LIMIT = 1_000

Keys = set[tuple[str, ...]]  # key values in the table's key column order


@dataclass
class Census:
    """A census of classified rows; ``add`` one batch of rows.CLASSIFIED, ``merge`` another
    census."""

    runs: list[tuple[int, int]] = field(default_factory=list)  # record_ids, as runs
    rejected: list[Note] = field(default_factory=list)  # the E rows (by record_id: whole)
    # table name -> the asked objects' keys, or None when more than KEYED_READ_LIMIT
    wanted: dict[str, Keys | None] = field(default_factory=dict)
    loopback: int = 0  # rows consumed unpublished: the publisher's own changes
    not_selected: int = 0  # rows consumed unpublished: of tables the selection leaves out
    excluded: int = 0  # rows consumed unpublished: naming an excluded column
    # With --lineage (``consumed`` not None): the record_ids of those rows as runs, by the
    # rule the lineage record names (LOOPBACK, NOT_SELECTED, EXCLUDED).
    consumed: dict[str, list[tuple[int, int]]] | None = None
    # The classes references name (references.referenced_classes; None: none), and where
    # the cycle creates and deletes their objects (references.MARKS): what orders
    # references (docs/reduction.md, References and order).
    referenced: Referenced | None = None
    marks: list[pa.Table] = field(default_factory=list)

    @property
    def rows(self) -> int:
        return sum(high - low + 1 for low, high in self.runs)

    def add(self, batch: pa.RecordBatch) -> None:
        if not batch.num_rows:
            return
        lows, highs = consecutive_runs(batch.column("record_id").to_numpy())
        self.runs = merge_runs([*self.runs, *zip(lows.tolist(), highs.tolist())])
        status = batch.column("status")
        errors = batch.filter(pc.equal(status, Status.ERROR))
        self.rejected += map(Note, *(errors.column(n).to_pylist() for n in NOTES.names))
        # The only S here: loopback, not selected or excluded (which say so).
        done = pc.equal(status, Status.DONE)
        reason = batch.column("reason")
        left_out = pc.sum(pc.and_(done, pc.equal(reason, NOT_SELECTED))).as_py() or 0
        excluded = pc.sum(pc.and_(done, pc.equal(reason, EXCLUDED))).as_py() or 0
        self.not_selected += left_out
        self.excluded += excluded
        looped = (pc.sum(done).as_py() or 0) - left_out - excluded
        self.loopback += looped
        if self.consumed is not None and (left_out or looped or excluded):
            self._consume(batch.filter(done))
        if self.referenced is not None and (marks := marks_of(batch, self.referenced)) is not None:
            self.marks.append(marks)
        asks = batch.filter(pc.and_(pc.is_null(status), pc.is_valid(batch.column("key_pairs"))))
        tables = asks.column("table_name")
        for table_name in pc.unique(tables).to_pylist():
            if self.wanted.get(table_name, ()) is None:
                continue  # many already
            pairs = asks.filter(pc.equal(tables, table_name)).column("key_pairs")
            values = pc.struct_field(pc.list_flatten(pairs), "value")
            offsets = pc.subtract(pairs.offsets, pairs.offsets[0])
            keys = pa.ListArray.from_arrays(offsets, values).to_pylist()
            self._want(table_name, set(map(tuple, keys)))

    def _consume(self, done: pa.RecordBatch) -> None:
        ids, reason = done.column("record_id"), done.column("reason")
        masks = [(rule, pc.fill_null(pc.equal(reason, rule), False)) for rule in (NOT_SELECTED, EXCLUDED)]
        for rule, mask in [*masks, (LOOPBACK, pc.is_null(reason))]:
            lows, highs = consecutive_runs(ids.filter(mask).to_numpy())
            self._add_consumed(rule, zip(lows.tolist(), highs.tolist()))

    def _add_consumed(self, rule: str, runs: Iterable[tuple[int, int]]) -> None:
        self.consumed[rule] = merge_runs([*self.consumed.get(rule, []), *runs])

    def _want(self, table_name: str, keys: Keys | None) -> None:
        known = self.wanted.get(table_name, set())
        both = None if known is None or keys is None else known | keys
        self.wanted[table_name] = both if both is not None and len(both) <= KEYED_READ_LIMIT else None

    def merge(self, other: Census) -> Census:
        self.runs = merge_runs([*self.runs, *other.runs])
        self.rejected += other.rejected
        self.loopback += other.loopback
        self.not_selected += other.not_selected
        self.excluded += other.excluded
        if other.consumed is not None:
            self.consumed = self.consumed or {}
            for rule, runs in other.consumed.items():
                self._add_consumed(rule, runs)
        for table_name, keys in other.wanted.items():
            self._want(table_name, keys)
        self.marks += other.marks
        return self


def whole(parts: dict[int, Census]) -> Census:
    """The cycle's census from its tasks' parts, its E rows by record_id (the parts come in
    the order their tasks ended, and a part's in the order its rows were read)."""
    census = Census()
    for part in parts.values():
        census.merge(part)
    census.rejected.sort()
    return census
