"""``xdspub status`` (docs/status.md): what a publication is doing, without SQL: the
pending rows per table, the E and W rows with their reasons, the last cycle, the lock's
holder, the delete guard's hold, the triggers, and the triggerless state in use."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from publisher.model.statuses import Status, reason_text
from publisher.outcome.lock import PublisherLock, lock_name
from publisher.outcome.record import PublicationRecord, publication_name
from publisher.outcome.state import kept_state
from publisher.settings import Settings, TriggerlessOptions
from publisher.source.database import Database, connect
from publisher.source.event_log import EventLog, open_event_log
from publisher.source.triggers import trigger_status

SHOWN_ROWS = 20  # E and W rows listed one by one; the rest are counted


def publication_status(settings: Settings, triggerless: TriggerlessOptions | None) -> dict[str, Any]:
    """The publication's status as plain data (``--format json`` prints it as it is)."""
    with connect(settings.db_url) as db:
        name = publication_name(db.identity, settings, triggerless is not None)
        record = PublicationRecord(settings.state_dir, name)
        kept = record.read()
        status: dict[str, Any] = {"publication": name, "last_cycle": kept.get("last_cycle"),
                                  "hold": kept.get("hold")}
        if triggerless is None:
            log = open_event_log(db, settings)
            status["pending"] = _pending(db, log)
            status["errors"] = _errors(db, log, record.reasons())
            status["lock"] = PublisherLock(db, lock_name(settings)).holder()
            status["triggers"] = trigger_status(db, settings.schema, settings.log_table)
        else:
            status["state"] = kept_state(triggerless.state_dir, db.identity, settings.schema)
        return status


def _pending(db: Database, log: EventLog) -> dict[str, int]:
    """The N rows of each table_name."""
    c = log.column
    query = (sa.select(c("table_name"), sa.func.count()).where(c("status") == Status.NEW)
             .group_by(c("table_name")).order_by(c("table_name")))
    with db.engine.connect() as conn:
        return {str(table): count for table, count in conn.execute(query)}


def _errors(db: Database, log: EventLog, reasons: dict[int, tuple[str, str]]) -> dict[str, Any]:
    """The E, W and F rows: how many of each table, and the newest SHOWN_ROWS with the reason
    the cycle that marked them gave (none where no record of this machine kept it)."""
    c = log.column
    marked = c("status").in_([Status.ERROR, Status.WARNED, Status.FATAL])
    counts = (sa.select(c("status"), c("table_name"), sa.func.count()).where(marked)
              .group_by(c("status"), c("table_name")).order_by(c("status"), c("table_name")))
    newest = (sa.select(c("record_id"), c("status"), c("table_name"), c("table_key")).where(marked)
              .order_by(c("record_id").desc()).limit(SHOWN_ROWS))
    with db.engine.connect() as conn:
        tables = [{"status": s, "table": str(t), "rows": n} for s, t, n in conn.execute(counts)]
        rows = [{"record_id": r, "status": s, "table": t, "table_key": k,
                 "reason": reasons.get(r, (s, None))[1]} for r, s, t, k in conn.execute(newest)]
    return {"tables": tables, "newest": rows}


def _triggers_text(table: dict[str, Any]) -> str:
    if not table["triggers"]:
        return "none"
    found = ", ".join(table["triggers"])
    if table["gone"]:
        return (f"{found}; STALE: written for columns the table no longer has "
                f"({reason_text(', '.join(table['gone']))}): its changes fail; `xdspub triggers --install` again")
    drift = [f"{what} {reason_text(', '.join(table[key]))}" for key, what in
             (("added", "columns added since they were written:"), ("changed", "types changed:")) if table[key]]
    if drift:  # field triggers log the columns they were written for, as they were
        return f"{found}; {'; '.join(drift)}; `xdspub triggers --install` again"
    return f"{found}; written by an xdspub that noted no columns" if table["unknown"] else f"{found}; match the columns"


def status_text(status: dict[str, Any]) -> str:
    """The status as lines for a terminal, every text from the database made safe."""
    lines = [f"publication: {status['publication']}"]
    last = status["last_cycle"]
    lines.append(f"last cycle: {last['ended']}, {last['outcome']}: {last['summary']}" if last else
                 "last cycle: none recorded here")
    hold = status["hold"]
    if hold and hold.get("held"):
        held = "; ".join(f"{h['class_name']} {h['deletes']} deletes ({h['why']})" for h in hold["held"])
        released = hold.get("released") or {}
        lines.append(f"HELD since {hold['since']}: {held}"
                     + (f"; released: {released}" if released else "; `xdspub release` to go on"))
    else:
        lines.append("held: nothing")
    if "pending" in status:
        pending = ", ".join(f"{reason_text(t)} {n}" for t, n in status["pending"].items())
        lines.append(f"pending rows: {pending or 'none'}")
        errors = status["errors"]
        counted = ", ".join(f"{e['status']} {reason_text(e['table'])} {e['rows']}" for e in errors["tables"])
        lines.append(f"E, W and F rows: {counted or 'none'}")
        for row in errors["newest"]:
            why = reason_text(row["reason"]) if row["reason"] else "reason not recorded here"
            lines.append(f"  record_id {row['record_id']}: {row['status']}: {reason_text(str(row['table']))} "
                         f"{reason_text(str(row['table_key']))}: {why}")
        lines.append(f"lock: {'held by ' + status['lock'] if status['lock'] else 'free'}")
        lines += [f"triggers: {reason_text(t['table'])}: {_triggers_text(t)}" for t in status["triggers"]]
    if "state" in status:
        state = status["state"]
        if state is None:
            lines.append("triggerless state: none yet")
        elif "unreadable" in state:
            lines.append(f"triggerless state: {state['folder']} cannot be read: {state['unreadable']}")
        else:
            classes = ", ".join(f"{reason_text(n)} {count}" for n, count in state["classes"].items())
            lines.append(f"triggerless state: {state['folder']}, generation {state['generation']}, kept "
                         f"{state['kept']} (time syntax {state['time_syntax']}); objects: {classes or 'none'}")
    return "\n".join(lines)
