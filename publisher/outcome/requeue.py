"""``xdspub requeue`` (docs/statuses.md, Requeue): rows set back to N, so that the next
cycle reads them again; those named by record_id, a record_id range, status and the
reason the publisher gave them, every selector given holding.

The event log keeps no reason: the reasons are read from the publication's record, which
every cycle on this machine keeps (outcome/record.py), or from what the publisher wrote
them to, a lineage record or the service's JSON log (docs/delivery.md, Lineage), each
row's last.

One transaction under the publisher lock (outcome/by_hand.py): the rows counted, then set
back within what was counted, each only while its status is still the one it was counted
with, so that a row nobody named is never touched."""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import sqlalchemy as sa

from publisher.errors import ConfigError
from publisher.model.statuses import Status
from publisher.outcome.by_hand import Changed, change_under_lock
from publisher.outcome.record import PublicationRecord, publication_name
from publisher.outcome.status import write_ranges
from publisher.settings import Settings
from publisher.source.database import Database
from publisher.source.event_log import EventLog


@dataclass(frozen=True)
class Requeue:
    """What ``xdspub requeue`` names: rows must meet every selector given."""

    record_ids: tuple[int, ...] = ()
    first: int | None = None  # --from RECORD_ID, inclusive
    last: int | None = None  # --through RECORD_ID, inclusive
    statuses: tuple[str, ...] = ()
    reason: str | None = None  # a substring of the row's reason, case and all
    reason_log: Path | None = None  # where the reasons were written

    def __post_init__(self) -> None:
        if not (self.record_ids or self.first is not None or self.last is not None
                or self.statuses or self.reason is not None):
            raise ConfigError("requeue needs RECORD_ID, --from, --through, --status or --reason")
        if self.reason_log is not None and self.reason is None:
            raise ConfigError("--reason-log goes with --reason")
        if self.reason == "":
            raise ConfigError("--reason needs some text")
        if self.first is not None and self.last is not None and self.first > self.last:
            raise ConfigError(f"--from {self.first} is after --through {self.last}")


def requeue(settings: Settings, selection: Requeue) -> Changed:
    """Set the rows ``selection`` names back to N (rows already N are left alone and not
    counted); with Dry Run, only count them."""
    def back_to_new(conn: sa.Connection, db: Database, log: EventLog) -> Changed:
        named = _named(selection, settings, db)
        record_id, status = log.column("record_id"), log.column("status")
        chosen = [status != Status.NEW]
        if selection.statuses:
            chosen.append(status.in_(selection.statuses))
        if selection.first is not None:
            chosen.append(record_id >= selection.first)
        if selection.last is not None:
            chosen.append(record_id <= selection.last)
        if named is None:
            bounds = sa.select(sa.func.count(), sa.func.min(record_id), sa.func.max(record_id))
            rows, low, high = conn.execute(bounds.where(*chosen)).one()
            if not rows or settings.dry_run:
                return Changed(rows, low, high)
            update = log.table.update().where(*chosen, record_id.between(low, high))
            return Changed(conn.execute(update.values({status: Status.NEW})).rowcount, low, high)
        if not named:
            return Changed(0, None, None)
        found = sa.select(record_id, status).where(*chosen, record_id.between(min(named), max(named)))
        runs = _runs(conn.execute(found.order_by(record_id)), named)
        spans = [span for letter_runs in runs.values() for span in letter_runs]
        rows = sum(high - low + 1 for low, high in spans)
        low, high = min((s[0] for s in spans), default=None), max((s[1] for s in spans), default=None)
        if not rows or settings.dry_run:
            return Changed(rows, low, high)
        rows = sum(write_ranges(conn, log, [(Status.NEW, *span) for span in letter_runs], False, letter)
                   for letter, letter_runs in runs.items())
        return Changed(rows, low, high)

    return change_under_lock(settings, back_to_new)


def _runs(rows: Iterable[tuple[int, str]], named: dict[int, str | None]) -> dict[str, list[list[int]]]:
    """The ``named`` rows among ``rows`` (record_id, status; in record_id order) with the
    status each must have, as runs of consecutive record_ids ([low, high]) by status."""
    runs: dict[str, list[list[int]]] = defaultdict(list)
    for row_id, letter in rows:
        if row_id not in named or named[row_id] not in (None, letter):
            continue
        if runs[letter] and runs[letter][-1][1] + 1 == row_id:
            runs[letter][-1][1] = row_id
        else:
            runs[letter].append([row_id, row_id])
    return runs


def _named(selection: Requeue, settings: Settings, db: Database) -> dict[int, str | None] | None:
    """The rows named one by one, each with the status it must have (None: any); None when
    no row is named so."""
    if selection.reason is None:
        return dict.fromkeys(selection.record_ids) if selection.record_ids else None
    if selection.reason_log is not None:
        reasons = _last_reasons(selection.reason_log)
    else:  # as the cycles of this machine kept them (outcome/record.py)
        name = publication_name(db.identity, settings, triggerless=False)
        reasons = PublicationRecord(settings.state_dir, name).reasons()
    reasoned = {row_id: letter for row_id, (letter, reason) in reasons.items() if selection.reason in reason}
    if selection.record_ids:
        return {row_id: reasoned[row_id] for row_id in selection.record_ids if row_id in reasoned}
    return reasoned


def _last_reasons(path: Path) -> dict[int, tuple[str, str]]:
    """Each record_id's last status and reason in a lineage record (a file, or a folder's
    *.jsonl files in name order) or a JSON log: the lines with a record_id and a reason."""
    last: dict[int, tuple[str, str]] = {}
    for line in _json_lines(path):
        if b'"reason"' not in line:  # only a W or E row has a reason
            continue
        try:
            entry = json.loads(line)
        except ValueError:  # a line a crash cut short
            continue
        row_id, letter, reason = (entry.get(key) for key in ("record_id", "status", "reason"))
        if type(row_id) is int and isinstance(letter, str) and isinstance(reason, str):
            last[row_id] = (letter, reason)
    return last


def _json_lines(path: Path) -> Iterator[bytes]:
    files = sorted(path.glob("*.jsonl")) if path.is_dir() else [path]
    for file in files:
        try:
            with open(file, "rb") as stream:
                first = next((line for line in stream if line.strip()), b"")
                if first and not first.lstrip().startswith(b"{"):
                    raise ConfigError(f"--reason-log {file} is not JSON lines: give a lineage "
                                      "file or folder, or a poll --log-format json log")
                yield first
                yield from stream
        except OSError as exc:
            raise ConfigError(f"--reason-log: cannot read {file}: {exc.strerror}") from None
