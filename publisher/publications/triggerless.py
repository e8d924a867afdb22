"""Triggerless publication (docs/triggerless.md): each cycle reads the selected classes
whole, compares every object with the state the previous cycle kept, publishes the
differences, and only once its documents are durable keeps the state's new generation.

A class of at most ``--small-cycle-rows`` rows is compared and rendered in the driver
(plans/triggerless_driver.py), a bigger one on Spark (plans/triggerless_plan.py). Their
commands are numbered in reference order (docs/triggerless.md, Commands) and merged as
sorted runs (delivery/ordered.py)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import pyarrow as pa

from publisher.delivery.lineage import unpublished_objects
from publisher.delivery.ordered import OrderedCommands
from publisher.errors import ConfigError
from publisher.model.catalogue import Table
from publisher.model.policy import fingerprint
from publisher.outcome.record import publication_name
from publisher.outcome.state import Identity, NewGeneration, Previous, StateFolder
from publisher.plans import ComparedClass, Phases
from publisher.plans.triggerless_driver import compare_in_driver
from publisher.publications import Planned, Publication, WorkFolder
from publisher.reduce.objects import Change
from publisher.settings import Settings, TriggerlessOptions
from publisher.source.database import Database, connect, run_named
from publisher.source.query_back import CurrentRows
from publisher.source.schema import published_catalogue

# An event-id is the state's generation times this, plus the command's place in the cycle:
# a cycle run again after a crash, before its state was kept, writes the same names.
IDS_PER_GENERATION = 10**12


class TriggerlessPublication(Publication):
    """The state folder, locked while open, and what each cycle needs of the database."""

    def __init__(self, settings: Settings, options: TriggerlessOptions, db: Database) -> None:
        self.settings, self.options, self.db = settings, options, db
        self.catalogue = published_catalogue(settings, db)
        self.current = CurrentRows(db, self.catalogue)
        self.classes = self.catalogue.reference_order()
        identity = Identity(
            db.identity,
            settings.schema,
            tuple(sorted(settings.tables)),
            settings.time_syntax,
            {t.name: list(t.key_columns) for t in self.classes},
            fingerprint(settings.column_policy),
        )
        self.state = StateFolder(options.state_dir, identity)
        self.record_name = publication_name(db.identity, settings, triggerless=True)
        self.generation: NewGeneration | None = None
        self.compared: dict[str, ComparedClass] = {}

    def __enter__(self) -> TriggerlessPublication:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.state.close()

    def start(self) -> int:
        self.rows = {table.name: self.current.count(table.name) for table in self.classes}
        return max(self.rows.values(), default=0)

    def _local_time(self) -> str | None:
        """The database's local time now, with future events (docs/triggerless.md)."""
        if not self.settings.future_events:
            return None
        with self.db.engine.connect() as connection:
            return str(run_named(connection, self.db.dialect.local_time).scalar_one())

    def plan(self, phases: Phases, work: WorkFolder) -> Planned:
        report = phases.report
        report.compared = True
        report.keyless = self.catalogue.keyless_classes()
        previous = self.previous = self.state.read()
        self.startup = None
        if previous.classes is None:
            self.startup = self.options.startup or self._first_startup(previous)
            report.state_unused = f"no usable state ({previous.why_not}): startup {self.startup}"
        self.generation = generation = self.state.begin(previous.generation + 1)
        phases.begin("reading and comparing")
        local_time = self._local_time()
        self.compared = {}
        for table in self.classes:
            result = self.compared[table.name] = self._compare(table, previous, work)
            generation.keep_class(table.name, result.state, result.reads, previous)
            report.objects += result.objects
            report.failed += [(table.name, key, why) for key, why in result.failed]
            report.changes.update(result.changes)
            if result.unchanged:
                report.unchanged_classes.append(table.name)
        compared = list(self.compared.values())
        phases.begin("rendering", commands=sum(c.total for c in compared))
        runs, fates = [], [unpublished_objects(report.failed)]
        lineage = self.settings.lineage is not None
        for result, first_ids in zip(compared, _first_ids(compared, generation.generation)):
            made, fated = result.runs(first_ids, local_time, lineage)
            runs += made
            fates.append(fated)
        return Planned(OrderedCommands(runs), pa.concat_tables([f for f in fates if f is not None]) if lineage else None)

    def _first_startup(self, previous: Previous) -> str:
        """Without --startup: resync on a first run; a usage error where a state exists
        that cannot be used (docs/triggerless.md, Startup), as every object would be
        published again."""
        elsewhere = self.state.elsewhere() if not previous.generation else None
        if not previous.generation and elsewhere is None:
            return "resync"
        where = f"is kept in {elsewhere.parent} (give --state-dir {elsewhere.parent})" if elsewhere else (
            f"in {self.state.path} cannot be used: {previous.why_not}")
        raise ConfigError(
            f"the triggerless state of this database {where}; without it every object would be "
            "published again. To start afresh, give --startup resync (publish every object's "
            "current state), future (only record it) or all (add every object) on this run")

    def _compare(self, table: Table, previous: Previous, work: WorkFolder) -> ComparedClass:
        rows = self.rows[table.name]
        if not self.settings.on_spark(rows):
            return compare_in_driver(self.current, table, previous.table(table.name), self.startup)
        from publisher.plans.triggerless_plan import compare_on_spark

        new_state = self.generation.class_folder(table.name)
        return compare_on_spark(self.settings, self.current, table, rows, previous, self.startup, new_state, work())

    def class_objects(self, deletes: Mapping[str, int]) -> dict[str, int]:
        return {name: self._objects_before(name) for name in deletes}

    def emptied(self) -> list[str]:
        return [name for name, result in self.compared.items()
                if not result.objects and self._objects_before(name)]

    def _objects_before(self, name: str) -> int:
        """A class's objects in the state the cycle compared with."""
        result = self.compared[name]
        return result.objects - result.changes[Change.ADDED] + result.deletes

    def acknowledge(self, phases: Phases) -> None:
        report, generation = phases.report, self.generation
        # Rows read in another order (an update to the same values moves a row) give
        # other digests for the same objects: the state is kept again with them.
        changed = self.startup is not None or report.commands > 0 or generation.reads != self.previous.reads
        if changed:
            phases.begin("keeping the state")
            generation.commit()
            self.state.note_kept()
            report.state_kept = True

    def close(self) -> None:
        if self.generation is not None:
            self.generation.discard()  # kept: already moved away; else dropped
            self.generation = None


def _first_ids(compared: list[ComparedClass], generation: int) -> list[tuple[int, int, int]]:
    """Each class's first event-ids: adds and modifies in reference order, the completing
    modifies in that order, then deletes in the reverse order (docs/triggerless.md,
    Commands)."""
    next_id = generation * IDS_PER_GENERATION + 1
    kept_first, completing_first = [], []
    for result in compared:
        kept_first.append(next_id)
        next_id += result.total - result.deletes - result.completing
    for result in compared:
        completing_first.append(next_id)
        next_id += result.completing
    deletes_first = [0] * len(compared)
    for index in reversed(range(len(compared))):
        deletes_first[index] = next_id
        next_id += compared[index].deletes
    return list(zip(kept_first, deletes_first, completing_first))


@contextmanager
def opened(settings: Settings, options: TriggerlessOptions) -> Iterator[TriggerlessPublication]:
    """``xdspub export --mode triggerless``: connected, the state folder locked."""
    with connect(settings.db_url) as db, TriggerlessPublication(settings, options, db) as publication:
        yield publication
