"""What a cycle publishes. A publication says how its rows become the commands of a cycle
(choosing and feeding a plan, publisher/plans) and how its outcome is kept once the
documents are durable; one cycle (publisher/cycle.py) runs any of them:

- the event log (event_log.py): the rows' statuses written back;
- a change format (change_formats.py): the stream's position saved;
- triggerless (triggerless.py): the state's new generation kept.

A fourth is one module against ``Publication``."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import pyarrow as pa

from publisher.delivery.ordered import OrderedCommands
from publisher.model.rows import Note
from publisher.model.statuses import StatusRange
from publisher.outcome.lock import PublisherLock
from publisher.outcome.record import Held, PublicationRecord, held_classes
from publisher.plans import CycleSource, Phases
from publisher.reduce.status_ranges import status_ranges
from publisher.settings import Settings

# A cycle's scratch folder beside the output (docs/delivery.md), made on first call.
WorkFolder = Callable[[], Path]


@dataclass(frozen=True)
class Planned:
    """What a publication's plan hands the cycle: the commands, and for --lineage the
    rows' fates and notes (delivery/lineage.py; None: the publication keeps none)."""

    commands: OrderedCommands
    fates: pa.Table | None = None
    notes: list[Note] = field(default_factory=list)


class Publication(Protocol):
    """One publication, open for as many cycles as its service runs. A class that names
    it as its base takes the bodies here where it has nothing of its own to say."""

    # Held across cycles where one publisher at a time may publish (the event log);
    # None: the publication is locked while open (the triggerless state) or needs none.
    lock: PublisherLock | None = None
    # Which publication this is, for its delete guard's hold record (outcome/holds.py);
    # None: it keeps none (a change format's export: run again with another limit).
    record_name: str | None = None

    def start(self) -> int:
        """A new cycle: what it will read, measured; the most rows one of its plans reads
        (Settings.on_spark: past --small-cycle-rows, the cycle starts Spark)."""

    def waiting(self) -> tuple[int, float] | None:
        """For the service, before a cycle: how many rows wait and how old the oldest is,
        in seconds (no row: no cycle runs); None where only a cycle can tell."""

    def wake_channel(self) -> tuple[str, str] | str | None:
        """Where the source notifies the service that rows came (docs/delivery.md, The
        polling service): libpq's connection string and the channel; a text: why it has
        none, to log; None: the source notifies none."""

    def plan(self, phases: Phases, work: WorkFolder) -> Planned:
        """The cycle's commands; its report (``phases.report``) filled as they are made."""

    def class_objects(self, deletes: Mapping[str, int]) -> dict[str, int] | None:
        """How many objects each class of ``deletes`` (this cycle's deletes by class) had
        before the cycle, for a delete limit in percent; None where it is not known."""

    def emptied(self) -> Collection[str]:
        """The classes this cycle read empty whose state held objects (the delete guard
        always holds their deletes)."""
        return ()

    def acknowledge(self, phases: Phases) -> None:
        """The documents are durable: keep the cycle's outcome."""

    def close(self) -> None:
        """The cycle is over: undo what was not acknowledged."""


def planned_rows(settings: Settings, source: CycleSource, phases: Phases,
                 work: WorkFolder) -> tuple[Planned, list[StatusRange]]:
    """A cycle of rows (the event log's, or a change format's staged as such): reduced in
    the driver or on Spark (Settings.on_spark), the report told each row's outcome, and
    the status ranges to acknowledge."""
    if settings.on_spark(source.count()):
        from publisher.plans.spark_plan import reduce_on_spark

        reduced = reduce_on_spark(settings, source, work(), phases)
    else:
        from publisher.plans.driver_plan import reduce_in_driver

        reduced = reduce_in_driver(settings, source, phases)
    report = phases.report
    ranges = status_ranges(reduced.runs, ((r.record_id, r.status) for r in reduced.exceptions))
    for letter, low, high in ranges:  # a range is consecutive record_ids: its size is exact
        report.by_status[letter] += high - low + 1
    report.rows = sum(report.by_status.values())
    report.notes = [(r.record_id, r.status, r.reason) for r in reduced.exceptions]
    report.loopback, report.loopback_user = reduced.loopback, source.loopback_user
    report.not_selected, report.excluded = reduced.not_selected, reduced.excluded
    return Planned(reduced.commands, reduced.fates, reduced.exceptions), ranges


def held_deletes(settings: Settings, publication: Publication, deletes: Mapping[str, int],
                 record: PublicationRecord | None) -> list[Held]:
    """The classes the delete guard holds (docs/delivery.md, Delete guard) of a cycle of
    ``publication`` that deletes ``deletes`` objects of each class: past --max-deletes or
    read empty, beyond what ``xdspub release`` allowed in ``record``."""
    if settings.release_deletes or not deletes:
        return []
    objects = publication.class_objects(deletes) if settings.max_deletes.percent is not None else None
    released = record.released() if record is not None else {}
    return held_classes(deletes, objects, publication.emptied(), settings.max_deletes, released)
