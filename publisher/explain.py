"""``xdspub explain`` (docs/explain.md): what a cycle would make of chosen event log rows,
row by row, without writing documents or statuses; or, triggerless, of each object.

The rows go through the driver plan's passes (plans/driver_plan.py) as a cycle's would;
only the object pass differs: it keeps, for each live row, the command that carries it or
the rule that consumed it (reduce/rules.py object_runs). A triggerless cycle is planned
as it would run, its lineage (rows.OBJECT_LINEAGE) naming each object's command, and its
state left as it was."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from tempfile import TemporaryDirectory
from textwrap import dedent

import pyarrow as pa
from lxml import etree

from publisher.model import events as ev
from publisher.model.commands import Command, CommandKind
from publisher.model.statuses import Status, reason_text
from publisher.outcome.record import PublicationRecord
from publisher.plans import Phases
from publisher.plans.driver_plan import DriverObjects, batches, objects_in_driver
from publisher.progress import Silent
from publisher.publications import Planned, Publication, held_deletes, triggerless
from publisher.publications.event_log import EventLogPublication
from publisher.reduce.loopback import LOOPBACK
from publisher.reduce.rules import NOTHING_TO_SEND, VANISHED, Event
from publisher.reduce.selection import NOT_SELECTED
from publisher.render.object_pass import object_events, object_outcome
from publisher.report import CycleReport
from publisher.settings import Settings, TriggerlessOptions
from publisher.source.database import Database, connect
from publisher.source.event_log import EventLog, chosen_rows, open_event_log


class Fate:
    """What becomes of a row (Explained.fate)."""

    PUBLISHED = "published"  # in a command (W: with a warning)
    SUPERSEDED = "superseded"  # consumed for another row's sake (Explained.rule)
    VANISHED = "vanished"  # a query-back of a row that is gone
    NOTHING_TO_SEND = "nothing to send"  # its modify has no attribute and is not sent
    LOOPBACK = "loopback"  # the publisher's own change
    NOT_SELECTED = "not selected"  # its table is left out of the selection
    CONSUMED = "consumed"  # consumed unpublished on reading, for Explained.reason
    ERROR = "error"  # E, for Explained.reason
    NOT_FOUND = "not found"  # no row of that record_id


@dataclass
class Explained:
    """One row's explanation. ``logged`` is its status in the event log now; a processed
    row is explained as if pending (``as_if_pending``)."""

    record_id: int | None  # None: a triggerless object
    logged: str | None
    table_name: str | None = None
    table_key: str | None = None  # canonical where the row could be read
    event_type: str | None = None
    column_name: str | None = None
    fate: str = Fate.NOT_FOUND
    status: str | None = None  # the status the cycle would write
    reason: str | None = None
    rule: str | None = None
    superseded_by: int | None = None
    command: int | None = None  # 1-based, in the cycle's command order
    kind: str | None = None
    association: str | None = None
    xml: str | None = None
    held: str | None = None  # why the delete guard would hold its delete command

    @property
    def as_if_pending(self) -> bool:
        return self.logged not in (None, Status.NEW)

    def as_json(self) -> dict:
        line = {name: value for name, value in vars(self).items() if value is not None}
        line["as_if_pending"] = self.as_if_pending
        return line


def explain(settings: Settings, record_ids: Sequence[int], pending: bool) -> list[Explained]:
    """The rows of ``record_ids`` (whatever their status) and, with ``pending``, the pending
    ones, each with its fate in a cycle over them alone, query-back read now; in record_id
    order."""
    settings = replace(settings, dry_run=True)
    with connect(settings.db_url) as db:
        log = open_event_log(db, settings)
        rows, logged = chosen_rows(db, log, settings, record_ids, pending)
        source = _ChosenRows(settings, db, log, rows)
        found = objects_in_driver(settings, source, Phases(CycleReport(), Silent()))
        explained = {r: Explained(r, status) for r, status in logged.items()}
        _describe(rows, explained)
        for batch in found.classified:
            _unpublished(batch, explained)
        _reduced(source, found, explained)
        _mark_held(settings, source, list(explained.values()))
    missing = (Explained(r, None) for r in set(record_ids) - set(explained))
    return sorted([*explained.values(), *missing], key=lambda e: e.record_id)


def explain_objects(settings: Settings, options: TriggerlessOptions) -> list[Explained]:
    """Each object the next triggerless cycle would publish, in command order, then those
    it could not (docs/explain.md, Triggerless): compared with the state, which is kept as
    it was."""
    settings = replace(settings, dry_run=True, lineage="-")  # the plan then keeps each fate
    phases = Phases(CycleReport(), Silent())
    with triggerless.opened(settings, options) as publication, TemporaryDirectory() as work:
        try:
            if settings.on_spark(publication.start()):
                from publisher.plans.session import start_spark

                start_spark(settings.spark_master, phases)
            planned = publication.plan(phases, lambda: Path(work))
        finally:
            publication.close()
        explained = _objects(planned)
        _mark_held(settings, publication, explained)
    return explained


def _objects(planned: Planned) -> list[Explained]:
    lines = planned.fates.to_pylist()
    fates = {f["cmd_id"]: f for f in lines if f["cmd_id"] is not None}
    explained = []
    for number, (cmd_id, xml) in enumerate(planned.commands, 1):
        fate, command = fates[cmd_id], etree.fromstring(xml)
        explained.append(Explained(None, None, fate["class_name"], fate["object_key"], fate=Fate.PUBLISHED,
                                   status=Status.DONE, rule=fate["rule"], command=number, kind=command.tag,
                                   association=command.findtext("association"), xml=dedent(xml.decode()).strip()))
    return explained + [Explained(None, None, f["class_name"], f["object_key"], fate=Fate.ERROR,
                                  status=Status.ERROR, reason=reason_text(f["reason"]))
                        for f in lines if f["reason"] is not None]


def _mark_held(settings: Settings, publication: Publication, rows: list[Explained]) -> None:
    """The rows whose delete command the delete guard would hold, with why."""
    commands = {row.command: row.table_name for row in rows if row.kind == CommandKind.DELETE}
    deletes = Counter(commands.values())
    record = PublicationRecord(settings.state_dir, publication.record_name) if publication.record_name else None
    held = {h.class_name: h.text() for h in held_deletes(settings, publication, deletes, record)}
    for row in rows:
        if row.kind == CommandKind.DELETE and row.table_name in held:
            row.held = held[row.table_name]


class _ChosenRows(EventLogPublication):
    """The event log with the chosen rows as its pending ones."""

    def __init__(self, settings: Settings, db: Database, log: EventLog, rows: pa.Table) -> None:
        super().__init__(settings, db, log)
        self.rows = rows

    def count(self) -> int:
        return self.rows.num_rows

    def pending_rows(self) -> pa.Table:
        return self.rows


def _describe(rows: pa.Table, explained: dict[int, Explained]) -> None:
    """Each row as logged: its table, key, event type and column."""
    names = ("record_id", "table_name", "table_key", "event_type_text", "column_name")
    for record_id, table_name, table_key, event_type, column_name in zip(
        *(rows[name].to_pylist() for name in names)
    ):
        row = explained[record_id]
        row.table_name, row.table_key, row.column_name = table_name, table_key, column_name
        row.event_type = _event_type(event_type)


def _event_type(text: str | None) -> str | None:
    try:
        return f"{int(text)} {ev.EventType(int(text)).name.lower().replace('_', ' ')}"
    except (TypeError, ValueError):
        return text


def _unpublished(batch: pa.RecordBatch, explained: dict[int, Explained]) -> None:
    """The rows classification settles: loopback, not selected, E."""
    for record_id, status, reason in zip(
        *(batch.column(name).to_pylist() for name in ("record_id", "status", "reason"))
    ):
        if status is None:
            continue
        row = explained[record_id]
        row.status = status
        if status == Status.ERROR:
            row.fate, row.reason = Fate.ERROR, reason
        else:  # the rule as the lineage record names it (delivery/lineage.py)
            row.rule = reason or LOOPBACK
            row.fate = {LOOPBACK: Fate.LOOPBACK, NOT_SELECTED: Fate.NOT_SELECTED}.get(row.rule, Fate.CONSUMED)


def _reduced(source: _ChosenRows, found: DriverObjects, explained: dict[int, Explained]) -> None:
    """The live rows, object by object, as the object pass reduces them (its runs cut by
    the census's creations: docs/reduction.md, References and order); the commands
    numbered in the cycle's order (docs/reduction.md, Command order and event-id)."""
    commands: list[tuple[Command, bytes, list[Event]]] = []
    for obj, cells, events in object_events(batches(found.objects)):
        for e in events:
            row = explained[e.record_id]
            row.table_name, row.table_key = obj
        runs, statuses = object_outcome(source.catalogue, obj, cells, events, found.unread, found.creations)
        for command, xml, run in runs or ():
            if command is not None:
                commands.append((command, xml, run))
                continue
            for e in run:
                explained[e.record_id].fate, explained[e.record_id].rule = Fate.NOTHING_TO_SEND, NOTHING_TO_SEND
        for e in events:
            _settled(explained[e.record_id], e, *statuses[e.record_id])
    commands.sort(key=lambda c: (c[0].ord_time, c[0].event_id))
    for number, (command, xml, run) in enumerate(commands, 1):
        for e in run:
            row = explained[e.record_id]
            row.fate, row.command, row.kind = Fate.PUBLISHED, number, str(command.kind)
            row.association, row.xml = command.association, dedent(xml.decode()).strip()


def _settled(row: Explained, event: Event, status: str, reason: str | None) -> None:
    row.status = status
    row.reason = None if reason is None else reason_text(reason)
    if status == Status.ERROR:
        row.fate = Fate.ERROR
    elif event.rule is not None:
        row.fate = Fate.VANISHED if event.rule == VANISHED else Fate.SUPERSEDED
        row.rule, row.superseded_by = event.rule, event.superseded_by


Line = list[tuple[str, str]]  # (text, rich style; "" for none)


def text_lines(rows: Sequence[Explained]) -> Iterator[Line]:
    """The explanation for a terminal: lines of styled pieces, two a row, each command
    shown under the first row it carries."""
    shown: set[int] = set()
    processed = sum(row.as_if_pending for row in rows)
    if processed:
        yield [(f"{processed} of these rows were processed already: explained as if pending, "
                "with query-back reading the rows as they are now", "yellow")]
    for row in rows:
        if row.record_id is None:  # a triggerless object
            yield [(reason_text(f"{row.table_name} {row.table_key}"), "bold")]
            yield [("    ", ""), *_fate_text(row)]
            if row.xml is not None:
                yield from ([(f"      {line}", "dim")] for line in row.xml.splitlines())
            continue
        head = (f"#{row.record_id}", "bold")
        if row.fate == Fate.NOT_FOUND:
            yield [head, (" no such row in the event log", "red")]
            continue
        # As logged: a control character would drive the terminal, so escaped as reasons are.
        what = reason_text(" ".join(p for p in (row.table_name, row.table_key, row.event_type, row.column_name) if p))
        logged = [(f" (logged {row.logged}, as if pending)", "dim")] if row.as_if_pending else []
        yield [head, (f" {what}", ""), *logged]
        yield [("    ", ""), *_fate_text(row)]
        if row.command is not None and row.command not in shown:
            shown.add(row.command)
            yield from ([(f"      {line}", "dim")] for line in row.xml.splitlines())


def _fate_text(row: Explained) -> Line:
    if row.fate == Fate.PUBLISHED:
        warned = [(f" with warning W: {row.reason}", "yellow")] if row.status == Status.WARNED else []
        if row.held:
            warned.append((f"; waits: the delete guard holds it ({reason_text(row.held)}: docs/delivery.md)", "red"))
        attribute = f", attribute {row.column_name}" if row.column_name else ""
        attribute += f", {row.rule}" if row.record_id is None else ""  # the object's change
        return [(f"published in command {row.command}", "green"),
                (f" ({row.kind} {row.association}{attribute})", ""), *warned]
    if row.fate == Fate.SUPERSEDED:
        return [(f"superseded by #{row.superseded_by} ({row.rule})", "")]
    if row.fate == Fate.ERROR:
        return [(f"E: {row.reason}", "red")]
    if row.fate == Fate.CONSUMED:
        return [(f"consumed unpublished: {row.rule}", "")]
    return [({
        Fate.VANISHED: "consumed: a query-back of a row that is gone (vanished)",
        Fate.NOTHING_TO_SEND: "consumed: its modify has no attribute, and is not sent",
        Fate.LOOPBACK: "consumed unpublished: loopback (the publisher's own change)",
        Fate.NOT_SELECTED: "consumed unpublished: its table is not selected",
    }[row.fate], "")]
