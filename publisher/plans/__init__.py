"""How a publication's rows become commands, handed plain data. The event log's and the
change formats' rows: on Spark (plans/spark_plan.py), or, for a cycle of few rows, in the
driver (plans/driver_plan.py), the same passes, the bodies in publisher/reduce and
publisher/render; they differ in how rows travel.

    source --rows--> classify --> query-back state --> object pass --> Reduced

Triggerless classes: compared on Spark (plans/triggerless_plan.py) or in the driver
(plans/triggerless_driver.py), each a ComparedClass. Both kinds share one Spark kit
(plans/exchange.py, plans/tasks.py) and session (plans/session.py)."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import pyarrow as pa

from publisher.delivery.ordered import OrderedCommands, RunSource
from publisher.model.catalogue import Catalogue
from publisher.model.rows import Note
from publisher.progress import CycleProgress
from publisher.reduce.objects import Change, FirstIds
from publisher.report import CycleReport
from publisher.source.query_back import CurrentRows

if TYPE_CHECKING:
    from publisher.plans.reads import Read


class CycleSource(Protocol):
    """Where an event-log plan's rows come from (the event log, or a change format's
    events staged as its rows)."""

    catalogue: Catalogue
    loopback_user: str | None  # rows this user made are consumed unpublished
    current: CurrentRows | None  # query-back reads (source/query_back.py); None: none asked

    def count(self) -> int:
        """How many rows the cycle will read."""

    def pending_read(self, parts: int) -> Read:
        """The rows to publish (rows.PENDING) for the Python workers to read, in about
        ``parts`` ranges where they can be split (plans/reads.py)."""

    def pending_rows(self) -> pa.Table:
        """The rows to publish (rows.PENDING), read by the driver."""

    def mark_early(self, runs: list[tuple[int, int]], rejected: list[Note]) -> None:
        """The rows read are known (the rows rejected on reading among them): start writing
        their statuses, uncommitted, where the source can; ``acknowledge`` commits them."""


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


# A triggerless class's commands as sorted runs, and their fates (rows.OBJECT_LINEAGE;
# None without --lineage).
Rendered = tuple[list[RunSource], "pa.Table | None"]


@dataclass(frozen=True)
class ComparedClass:
    """What a triggerless plan hands the cycle for one class (docs/triggerless.md): the
    objects read, those that cannot be published (canonical key, reason), the changes by
    kind, and ``runs(first_ids, local_time, lineage)``: its commands rendered, its adds and modifies
    numbered from ``first_ids[0]``, its deletes from ``first_ids[1]`` and its completing
    modifies from ``first_ids[2]`` (reduce/objects.event_ids), as sorted runs
    (delivery/ordered.py), and with ``lineage`` their fates (rows.OBJECT_LINEAGE). ``state``: the class's new state, a table or the files written
    where the state store said, in bucket order; None: the previous state is kept as it
    was (the class unchanged, or not read). ``reads``: each range read's digest, kept
    with the state (docs/triggerless.md, A cycle with no change). ``unchanged``: its rows
    were read byte for byte as the state's, and not compared."""

    objects: int
    failed: list[tuple[str, str]]
    changes: Counter
    runs: Callable[[FirstIds, "str | None", bool], Rendered]
    state: pa.Table | list[str] | None
    reads: dict[str, str] | None = None
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
