"""The two ways a cycle's rows become commands: on Spark (plans/spark_plan.py), or, for a
cycle of few rows, in the driver (plans/driver_plan.py). Both run the same passes, the
bodies in publisher/reduce and publisher/render; they differ in how rows travel.

    source --rows--> classify --> query-back state --> object pass --> Reduced
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

from publisher.delivery.ordered import OrderedCommands, RunSource, write_ordered
from publisher.delivery.state import NewGeneration, Previous
from publisher.model.catalogue import Catalogue, Table
from publisher.model.rows import Note
from publisher.model.statuses import StatusRange
from publisher.progress import CycleProgress
from publisher.reduce.objects import Change, FirstIds, event_ids
from publisher.render.changes import rendered_changes
from publisher.report import CycleReport

if TYPE_CHECKING:
    from publisher.plans.reads import Read


class CycleSource(Protocol):
    """Where a cycle's rows come from, and where their outcome goes."""

    catalogue: Catalogue
    loopback_user: str | None  # rows this user made are consumed unpublished

    def count(self) -> int:
        """How many rows the cycle will read."""

    def pending_read(self, parts: int) -> Read:
        """The rows to publish (rows.PENDING) for the Python workers to read, in about
        ``parts`` ranges where they can be split (plans/reads.py)."""

    def pending_rows(self) -> pa.Table:
        """The rows to publish (rows.PENDING), read by the driver."""

    def current_read(
        self, table: Table, key_names: Sequence[str], wanted: list | None, parts: Callable[[int], int]
    ) -> Read:
        """The current rows of ``table`` for query-back (source/query_back.py), of the
        objects whose ``key_names`` hold ``wanted`` (None: all), for the Python workers to
        read; a whole table in ``parts(rows)`` ranges where it can be split."""

    def current_rows(self, table: Table, key_names: Sequence[str], wanted: list | None) -> pa.Table:
        """The same, read by the driver."""

    def current_check(self, table: Table, key_names: Sequence[str], wanted: list | None) -> None:
        """The same, read by the driver and let go: DBAPIError when the database refuses."""

    def mark_early(self, runs: list[tuple[int, int]], rejected: list[Note]) -> None:
        """The rows read are known (the rows rejected on reading among them): start writing
        their statuses, uncommitted, where the source can; ``acknowledge`` commits them."""

    def acknowledge(self, ranges: list[StatusRange]) -> None:
        """The documents are durable: record the rows' outcome."""

    def close(self) -> None:
        """The cycle is over: undo what was not acknowledged."""


@dataclass(frozen=True)
class Reduced:
    """What a plan hands the cycle: the commands, and what the statuses need."""

    commands: OrderedCommands
    runs: list[tuple[int, int]]  # the record_ids read, as runs of consecutive ones
    exceptions: list[Note]  # the rows that are not S (E and W), by record_id
    loopback: int  # rows consumed unpublished: the publisher's own changes (reduce/loopback.py)
    not_selected: int  # rows consumed unpublished: tables left out (reduce/selection.py)
    excluded: int = 0  # rows consumed unpublished: excluded columns (reduce/exclusion.py)
    # --lineage: each row's fate but the E rows' (rows.LINEAGE; delivery/lineage.py)
    fates: pa.Table | None = None


@dataclass(frozen=True)
class ComparedClass:
    """What a triggerless plan hands the cycle for one class (docs/triggerless.md): the
    objects read, those that cannot be published (canonical key, reason), the changes by
    kind, and ``runs(first_ids, local_time)``: its commands rendered, its adds and modifies
    numbered from ``first_ids[0]``, its deletes from ``first_ids[1]`` and its completing
    modifies from ``first_ids[2]`` (reduce/objects.event_ids), as sorted runs (delivery/ordered.py). ``unchanged``: its
    rows were read byte for byte as the state's, and not compared."""

    objects: int
    failed: list[tuple[str, str]]
    changes: Counter
    runs: Callable[[FirstIds, "str | None"], list[RunSource]]
    unchanged: bool = False

    @property
    def total(self) -> int:
        return sum(self.changes.values())

    @property
    def deletes(self) -> int:
        return self.changes[Change.DELETED]

    @property
    def completing(self) -> int:
        return self.changes[Change.COMPLETING]


EVERY_OBJECT = "(every object)"  # the key a class whose table was not read is reported under


def unread_class(table: Table, previous: Previous, generation: NewGeneration, reason: str) -> ComparedClass:
    """A class whose table (or a child table) the database refuses to read, as a triggerless
    cycle takes it (docs/statuses.md, Read failures): nothing published for it, its
    previous state kept as it was, the cycle goes on."""
    generation.link_class(table.name, previous.files(table.name))
    if table.name in previous.reads:
        generation.reads[table.name] = previous.reads[table.name]
    return ComparedClass(0, [(EVERY_OBJECT, reason)], Counter(), lambda _first_ids, _local_time: [])



def rendered_in_driver(
    table: Table, schema: str, changes: pa.Table, first_ids: FirstIds, local_time: str | None,
    self_references: Sequence[str],
) -> list[RunSource]:
    """A triggerless class's changes rendered here, numbered from ``first_ids``
    (reduce/objects.event_ids), as one sorted run in memory: for few changes, a Spark job
    costs more than it saves."""
    ids = event_ids(table, changes, first_ids, schema, self_references)
    buffer = pa.BufferOutputStream()
    write_ordered(rendered_changes(table, schema, changes, ids, local_time), buffer)
    return [buffer.getvalue()]


class Phases:
    """Shows each phase of a cycle on the progress display and records how long it took."""

    def __init__(self, report: CycleReport, progress: CycleProgress) -> None:
        self.report, self.progress = report, progress
        self.current: tuple[str, float] | None = None

    def begin(self, name: str, **counts: int) -> None:
        self.end()
        self.progress.phase(name, **counts)
        self.current = (name, time.monotonic())

    def end(self) -> None:
        if self.current is not None:
            name, started = self.current
            self.report.phases.append((name, time.monotonic() - started))
            self.current = None
