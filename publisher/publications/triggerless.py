"""Triggerless publication (docs/triggerless.md): each cycle reads the selected classes
whole, compares every object with the state the previous cycle kept, publishes the
differences, and only once its documents are durable keeps the state's new generation.

A class of at most ``--small-cycle-rows`` rows is compared and rendered in the driver
(plans/triggerless_driver.py), a bigger one on Spark (plans/triggerless_plan.py). Their
commands are numbered in reference order (docs/triggerless.md, Commands) and merged as
sorted runs (delivery/ordered.py)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import sqlalchemy as sa

from publisher.delivery.lineage import unpublished_objects
from publisher.delivery.ordered import OrderedCommands
from publisher.model.catalogue import Table
from publisher.model.policy import fingerprint
from publisher.outcome.state import Identity, NewGeneration, Previous, StateFolder
from publisher.plans import ComparedClass, Phases
from publisher.plans.triggerless_driver import compare_in_driver
from publisher.publications import Planned, Publication, WorkFolder
from publisher.settings import Settings, TriggerlessOptions
from publisher.source.database import Database, connect, run_named
from publisher.source.query_back import CurrentRows
from publisher.source.schema import published_catalogue

# An event-id is the state's generation times this, plus the command's place in the cycle:
# a cycle run again after a crash, before its state was kept, writes the same names.
IDS_PER_GENERATION = 10**12


def database_identity(db: Database) -> str:
    """The database a state belongs to: its URL without password (SQLite: its file)."""
    url = db.engine.url.set(password=None, query={})
    if db.dialect.database_is_file and url.database:
        url = url.set(database=str(Path(url.database).resolve()))
    return url.render_as_string(hide_password=True)


class TriggerlessPublication(Publication):
    """The state folder, locked while open, and what each cycle needs of the database."""

    def __init__(self, settings: Settings, options: TriggerlessOptions, db: Database) -> None:
        self.settings, self.options, self.db = settings, options, db
        self.catalogue = published_catalogue(settings, db)
        self.current = CurrentRows(db, self.catalogue)
        self.classes = self.catalogue.reference_order()
        identity = Identity(
            database_identity(db),
            settings.schema,
            tuple(sorted(settings.tables)),
            settings.time_syntax,
            {t.name: list(t.key_columns) for t in self.classes},
            fingerprint(settings.column_policy),
        )
        self.state = StateFolder(options.state_dir, identity)
        self.generation: NewGeneration | None = None

    def __enter__(self) -> TriggerlessPublication:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.state.close()

    def start(self) -> int:
        self.rows = {table.name: self._rows(table) for table in self.classes}
        return max(self.rows.values(), default=0)

    def _rows(self, table: Table) -> int:
        with self.db.engine.connect() as connection:
            source = sa.table(table.name, schema=self.current.schema)
            return connection.execute(sa.select(sa.func.count()).select_from(source)).scalar_one()

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
            self.startup = self.options.startup
            report.state_unused = f"no usable state ({previous.why_not}): startup {self.startup}"
        self.generation = generation = self.state.begin(previous.generation + 1)
        phases.begin("reading and comparing")
        local_time = self._local_time()
        compared = []
        for table in self.classes:
            result = self._compare(table, previous, work)
            generation.keep_class(table.name, result.state, result.reads, previous)
            compared.append(result)
            report.objects += result.objects
            report.failed += [(table.name, key, why) for key, why in result.failed]
            report.changes.update(result.changes)
            if result.unchanged:
                report.unchanged_classes.append(table.name)
        phases.begin("rendering", commands=sum(c.total for c in compared))
        runs, fates = [], [unpublished_objects(report.failed)]
        lineage = self.settings.lineage is not None
        for result, first_ids in zip(compared, _first_ids(compared, generation.generation)):
            made, fated = result.runs(first_ids, local_time, lineage)
            runs += made
            fates.append(fated)
        return Planned(OrderedCommands(runs), pa.concat_tables([f for f in fates if f is not None]) if lineage else None)

    def _compare(self, table: Table, previous: Previous, work: WorkFolder) -> ComparedClass:
        rows = self.rows[table.name]
        if not self.settings.on_spark(rows):
            return compare_in_driver(self.current, table, previous.table(table.name), self.startup)
        from publisher.plans.triggerless_plan import compare_on_spark

        new_state = self.generation.class_folder(table.name)
        return compare_on_spark(self.settings, self.current, table, rows, previous, self.startup, new_state, work())

    def acknowledge(self, phases: Phases) -> None:
        report, generation = phases.report, self.generation
        # Rows read in another order (an update to the same values moves a row) give
        # other digests for the same objects: the state is kept again with them.
        changed = self.startup is not None or report.commands > 0 or generation.reads != self.previous.reads
        if changed:
            phases.begin("keeping the state")
            generation.commit()
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
