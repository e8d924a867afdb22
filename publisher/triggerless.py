"""Triggerless publication (docs/triggerless.md): each cycle reads the selected classes
whole, compares every object with the state the previous cycle kept, publishes the
differences, and only once its documents are durable replaces the state.

A class of at most ``--small-cycle-rows`` rows is compared and rendered in the driver; a
bigger one on Spark (plans/triggerless_plan.py). Both run reduce/objects.py and
render/changes.py; their commands are numbered in reference order (docs/triggerless.md,
Commands), and merged as sorted runs (delivery/ordered.py)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import pyarrow as pa
import sqlalchemy as sa

from publisher.cycle import work_folder
from publisher.delivery.ordered import OrderedCommands, RunSource
from publisher.delivery.sinks import Sink, open_sink
from publisher.delivery.state import Identity, NewGeneration, Previous, StateFolder
from publisher.model.catalogue import Catalogue, Table
from publisher.model.policy import fingerprint
from publisher.model.statuses import reason_text
from publisher.plans import ComparedClass, Phases, rendered_in_driver, unread_class
from publisher.progress import CycleProgress, Silent
from publisher.reduce.objects import (
    FirstIds, change_counts, compare, current_objects, with_cycles_split, with_forward_references_split,
)
from publisher.report import CycleReport
from publisher.settings import Settings
from publisher.source.database import connect, run_named
from publisher.source.dialects import Dialect
from publisher.source.query_back import current_table, isolated
from publisher.source.schema import published_catalogue

STARTUPS = ("resync", "future", "all")  # the driver's Startup Option 1, 2, 3
# An event-id is the state's generation times this, plus the command's place in the cycle:
# a cycle run again after a crash, before its state was kept, writes the same names.
IDS_PER_GENERATION = 10**12


@dataclass(frozen=True)
class TriggerlessOptions:
    state_dir: Path
    startup: str = "resync"


@dataclass
class TriggerlessReport(CycleReport):
    """A triggerless cycle: objects read and what changed, instead of rows and statuses."""

    objects: int = 0
    changes: Counter = field(default_factory=Counter)
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # class, key, why
    state_unused: str | None = None  # why the previous state was not used
    state_kept: bool = False
    # Classes read byte for byte as the state's, not compared (docs/triggerless.md, A cycle
    # with no change).
    unchanged_classes: list[str] = field(default_factory=list)

    def summary(self) -> str:
        changes = ", ".join(f"{n} {kind}" for kind, n in sorted(self.changes.items())) or "no change"
        failed = f"; {len(self.failed)} objects not published (E)" if self.failed else ""
        kept = "state kept" if self.state_kept else "state unchanged"
        return (
            f"{self.objects} objects read, {changes}; {self.commands} commands, "
            f"{self.documents} documents{failed}; {kept}"
        )

    def note_lines(self) -> list[str]:
        return [f"class {name} object {reason_text(key)}: E: {reason_text(why)}" for name, key, why in self.failed]

    @property
    def errors(self) -> list[tuple[str, str]]:
        return [(f"{name} {key}", why) for name, key, why in self.failed]


def database_identity(engine: sa.Engine, dialect: Dialect) -> str:
    """The database a state belongs to: its URL without password (SQLite: its file)."""
    url = engine.url.set(password=None, query={})
    if dialect.database_is_file and url.database:
        url = url.set(database=str(Path(url.database).resolve()))
    return url.render_as_string(hide_password=True)


def objects_now(
    engine: sa.Engine, dialect: Dialect, catalogue: Catalogue, table: Table
) -> tuple[pa.Table | None, str | None]:
    """The class's objects as its tables hold them now (reduce/objects.py current_objects),
    read in the driver; or None and why the database refused to read one of its tables
    (docs/statuses.md, Read failures)."""
    schema = catalogue.schema if dialect.has_schemas else None
    read = []  # the class's rows, then each child table's (a view may be its own)
    for part in (table, *table.children()):
        found, failed = isolated(partial(current_table, engine, schema, part, part.key_columns), part, None)
        if failed:
            return None, failed[None]
        read.append((part.name, found[0]))
    return current_objects(catalogue, table, read[0][1], dict(read[1:])), None


class TriggerlessPublisher:
    """The state folder, locked, and what each cycle needs of the database."""

    def __init__(self, settings: Settings, options: TriggerlessOptions, engine: sa.Engine, dialect: Dialect) -> None:
        if options.startup not in STARTUPS:
            raise ValueError(f"unknown startup {options.startup!r}")
        self.settings, self.options, self.engine, self.dialect = settings, options, engine, dialect
        self.catalogue = published_catalogue(settings, engine, dialect)
        self.classes = self.catalogue.reference_order()
        identity = Identity(
            database_identity(engine, dialect),
            settings.schema,
            tuple(sorted(settings.tables)),
            settings.time_syntax,
            {t.name: list(t.key_columns) for t in self.classes},
            fingerprint(settings.column_policy),
        )
        self.state = StateFolder(options.state_dir, identity)

    def close(self) -> None:
        self.state.close()

    def __enter__(self) -> TriggerlessPublisher:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def local_time(self) -> str | None:
        """The database's local time now, with future events (docs/triggerless.md)."""
        if not self.settings.future_events:
            return None
        with self.engine.connect() as connection:
            return str(run_named(connection, self.dialect.local_time).scalar_one())

    def rows(self, table: Table) -> int:
        schema = self.catalogue.schema if self.dialect.has_schemas else None
        with self.engine.connect() as connection:
            source = sa.table(table.name, schema=schema)
            return connection.execute(sa.select(sa.func.count()).select_from(source)).scalar_one()

    def compare_in_driver(self, table: Table, previous: Previous, startup: str | None,
                          generation: NewGeneration) -> ComparedClass:
        objects, refused = objects_now(self.engine, self.dialect, self.catalogue, table)
        if refused is not None:
            return unread_class(table, previous, generation, refused)
        comparison = compare(table, previous.table(table.name), objects, startup)
        generation.write_table(table.name, comparison.state)
        self_references = self.catalogue.self_references(table)
        changes = with_cycles_split(table, comparison.changes, self.catalogue.schema, self_references)
        changes = with_forward_references_split(table, changes, self.catalogue.forward_references(table))

        def runs(first_ids: FirstIds, local_time: str | None) -> list[RunSource]:
            return rendered_in_driver(table, self.catalogue.schema, changes, first_ids, local_time, self_references)

        return ComparedClass(comparison.objects, comparison.failed, change_counts(changes), runs)

    def cycle(self, sink: Sink, progress: CycleProgress | None = None) -> TriggerlessReport:
        """One cycle: read, compare, publish, then keep the new state."""
        report = TriggerlessReport()
        phases = Phases(report, progress or Silent())
        try:
            return self._cycle(sink, report, phases)
        finally:
            phases.progress.close()

    def _cycle(self, sink: Sink, report: TriggerlessReport, phases: Phases) -> TriggerlessReport:
        with ExitStack() as scratch:
            work: list[Path] = []  # a Spark class's scratch folder, made on first use

            def work_path() -> Path:
                if not work:
                    work.append(scratch.enter_context(work_folder(sink)))
                return work[0]

            return self._compared_cycle(sink, report, phases, work_path)

    def _compared_cycle(self, sink: Sink, report: TriggerlessReport, phases: Phases,
                        work: Callable[[], Path]) -> TriggerlessReport:
        previous = self.state.read()
        startup = None
        if previous.classes is None:
            startup = self.options.startup
            report.state_unused = f"no usable state ({previous.why_not}): startup {startup}"
        rows = {table.name: self.rows(table) for table in self.classes}
        if any(count > self.settings.small_cycle_rows for count in rows.values()):
            # Spark loads only here: the CLI's --help and small classes stay light.
            from publisher.plans.triggerless_plan import start_spark

            start_spark(self.settings.spark_master, phases)
        generation = self.state.begin(previous.generation + 1)
        try:
            phases.begin("reading and comparing")
            local_time = self.local_time()
            compared = []
            for table in self.classes:
                result = self._compare(table, rows[table.name], previous, startup, generation, work)
                compared.append(result)
                report.objects += result.objects
                report.failed += [(table.name, key, why) for key, why in result.failed]
                report.changes.update(result.changes)
                if result.unchanged:
                    report.unchanged_classes.append(table.name)
            phases.begin("rendering", commands=sum(c.total for c in compared))
            # Adds and modifies in reference order, the completing modifies in that order,
            # then deletes in the reverse order (docs/triggerless.md, Commands).
            next_id = generation.generation * IDS_PER_GENERATION + 1
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
            runs = []
            for result, first_ids in zip(compared, zip(kept_first, deletes_first, completing_first)):
                runs += result.runs(first_ids, local_time)
            ordered = OrderedCommands(runs)
            phases.begin("writing documents", commands=ordered.total)
            report.commands = ordered.total
            report.documents = sink.publish(ordered) if ordered.total else 0
            # Rows read in another order (an update to the same values moves a row) give
            # other digests for the same objects: the state is kept again with them.
            changed = startup is not None or report.commands > 0 or generation.reads != previous.reads
            if self.settings.dry_run or not changed:
                generation.discard()
            else:
                phases.begin("keeping the state")
                generation.commit()
                report.state_kept = True
        except BaseException:
            generation.discard()
            raise
        phases.end()
        return report

    def _compare(self, table: Table, rows: int, previous: Previous, startup: str | None,
                 generation: NewGeneration, work: Callable[[], Path]) -> ComparedClass:
        if rows <= self.settings.small_cycle_rows:
            return self.compare_in_driver(table, previous, startup, generation)
        from publisher.plans.triggerless_plan import compare_on_spark

        return compare_on_spark(self, table, rows, previous, startup, generation, work())


def export_triggerless(
    settings: Settings, options: TriggerlessOptions, out: str, progress: CycleProgress | None = None
) -> TriggerlessReport:
    """``xdspub export --mode triggerless``: one cycle."""
    engine, dialect = connect(settings.db_url)
    try:
        sink = open_sink(out, settings.batch_size)
        with TriggerlessPublisher(settings, options, engine, dialect) as publisher:
            return publisher.cycle(sink, progress)
    finally:
        engine.dispose()

