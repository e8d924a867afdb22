"""One cycle, whatever it publishes (publisher/publications): the publication plans its
commands (on Spark, or in the driver when its reads are few: Settings.on_spark), the
documents are made durable (with the lineage record), then the publication keeps its
outcome; a cycle that fails keeps none, and run again publishes the same documents."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path

from publisher.delivery.lineage import LineageRecord
from publisher.delivery.sinks import Sink, open_sink
from publisher.delivery.ordered import OrderedCommands
from publisher.delivery.work import WorkFolder
from publisher.errors import DeletesHeld, SinkError
from publisher.model.statuses import reason_text
from publisher.outcome.record import PUBLISHED, PublicationRecord
from publisher.plans import Phases
from publisher.progress import CycleProgress, Silent
from publisher.publications import Planned, Publication, event_log, held_deletes
from publisher.publications.event_log import EventLogPublication
from publisher.report import CycleReport
from publisher.settings import Settings
from publisher.source.database import Database
from publisher.source.event_log import EventLog

# Opens a publication for ``export``: publications/event_log.opened and its kin.
Opening = Callable[[Settings], AbstractContextManager[Publication]]


def export(settings: Settings, out: str, progress: CycleProgress | None = None,
           opening: Opening = event_log.opened) -> CycleReport:
    """``xdspub export``: one cycle of the publication ``opening`` opens (the event log's
    pending rows by default) to ``out``."""
    sink = open_sink(out, settings.batch_size)
    with opening(settings) as publication:
        return run(settings, publication, sink, progress)


def run_cycle(settings: Settings, db: Database, log: EventLog, sink: Sink,
              progress: CycleProgress | None = None) -> CycleReport:
    """One cycle of the event log's pending rows to documents in ``sink``, then their
    statuses."""
    return run(settings, EventLogPublication(settings, db, log), sink, progress)


def run(settings: Settings, publication: Publication, sink: Sink,
        progress: CycleProgress | None = None) -> CycleReport:
    """One cycle of ``publication`` to ``sink``."""
    report = CycleReport()
    phases = Phases(report, progress or Silent())
    lineage = LineageRecord(settings.lineage) if settings.lineage else None
    name = publication.record_name
    record = PublicationRecord(settings.state_dir, name) if name else None
    outcome = "failed"
    try:
        with ExitStack() as scratch:
            if settings.on_spark(publication.start()):
                # Spark loads only here, so the CLI's --help and driver cycles stay light.
                from publisher.plans.session import start_spark

                start_spark(settings.spark_master, phases)
            folder: list[Path] = []  # made on first use: a driver cycle needs none

            def work() -> Path:
                if not folder:
                    folder.append(scratch.enter_context(_work_folder(sink)))
                return folder[0]

            planned = publication.plan(phases, work)
            _guard(settings, publication, planned.commands, record)
            phases.begin("writing documents", commands=planned.commands.total)
            report.commands = planned.commands.total
            if lineage is None:
                report.documents = sink.publish(planned.commands)
            else:
                report.documents = _publish_with_lineage(sink, planned, lineage)
        if not settings.dry_run:
            publication.acknowledge(phases)
        phases.end()
        outcome = PUBLISHED
        return report
    except DeletesHeld:
        outcome = "held"
        raise
    except BaseException as exc:
        outcome = f"failed: {reason_text((str(exc).strip().splitlines() or [type(exc).__name__])[0])}"
        raise
    finally:
        publication.close()
        phases.progress.close()
        if record is not None and not settings.dry_run:
            failed = [list(f) for f in report.failed[:100]]  # triggerless: objects not published
            record.cycle_ended(outcome, {"summary": report.summary(), **report.log_fields(), "failed": failed},
                               report.notes)


def _guard(settings: Settings, publication: Publication, commands: OrderedCommands,
           record: PublicationRecord | None) -> None:
    """DeletesHeld, the hold kept in ``record``, when the delete guard holds the cycle."""
    if settings.release_deletes:  # nothing to hold: the commands' XML is not read for it
        return
    held = held_deletes(settings, publication, commands.deletes_by_class(), record)
    if not held:
        return
    if record is not None and not settings.dry_run:
        record.hold(held)
    going_on = ("`xdspub release` with the same options, then run again, or run export once with "
                "--release-deletes" if record is not None else "run again with a higher --max-deletes")
    raise DeletesHeld(
        f"the delete guard held the cycle: {'; '.join(h.text() for h in held)}. Nothing was "
        f"published or marked. If these deletes are meant: {going_on} (docs/delivery.md, "
        "Delete guard)", held)


def _work_folder(sink: Sink) -> WorkFolder:
    """A Spark cycle's scratch folder beside the output (docs/delivery.md), removed when
    left; the ones that killed cycles left there are swept first."""
    try:
        return WorkFolder(sink.work_parent)
    except OSError as exc:
        raise SinkError(f"cannot write in {sink.work_parent}: {exc.strerror or exc}") from exc


def _publish_with_lineage(sink: Sink, planned: Planned, lineage: LineageRecord) -> int:
    """The documents and the lineage record written at once: the lines need only the
    documents' names, which the sink knows before writing them. Both are durable before
    the outcome is kept; when the documents fail, the cycle's lines are taken back
    (docs/delivery.md, Lineage)."""
    documents = sink.documents(planned.commands)
    with ThreadPoolExecutor(1) as pool:
        lines = pool.submit(lineage.write, planned.fates, planned.notes, documents)
        try:
            written = sink.publish(planned.commands)
        except BaseException:
            wait([lines])
            lineage.take_back()
            raise
        lines.result()
    return written
