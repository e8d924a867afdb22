"""A row-at-a-time publisher: the plain-Python baseline that `xdspub export` is measured
against, and the oracle of tests/test_differential.py. Not tuned, on purpose.

    python3 bench/row_publisher.py --db URL --out PATH [--schema indirect]
        [--log-table indirect_process] [--batch-size N] [--dry-run]

One cycle over every pending row (status 'N'), in record_id order, no future events. The
rows are fetched one at a time and kept per object (table_name, canonical key) in plain
dicts; the precedence rules of PUBLISHER.md section 4 are applied per object; every
query-back event that can still have an effect reads its row with its own SELECT; the
commands are rendered by publisher.render.xds and written through the project's sinks;
then every row gets its status with its own UPDATE, all in one transaction. The output
must equal `xdspub export`'s byte for byte, and the statuses too."""

from __future__ import annotations

import argparse
import datetime as dt
import re
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import sqlalchemy as sa

from grammar import TableKeyError, format_table_key, parse_table_key
from publisher.delivery.sinks import open_sink
from publisher.model import events as ev
from publisher.model import values
from publisher.model.catalogue import Catalogue, Column, Table
from publisher.render.xds import command_element, command_xml
from publisher.settings import Settings
from publisher.source.database import connect
from publisher.source.event_log import open_event_log
from publisher.source.schema import reflect_catalogue

TRUE_WORDS, FALSE_WORDS = ("1", "true", "t", "y", "yes", "on"), ("0", "false", "f", "n", "no", "off")
DIGITS, KEY_INT, TYPE_TEXT = re.compile(r"^-?[0-9]+$"), re.compile(r"^-?[0-9]{1,18}$"), re.compile(r"^[0-9]{1,9}$")


@dataclass
class Event:
    record_id: int
    type: int
    column: str | None
    xds_type: str | None  # the column's
    old: str | None  # log values as XDS text (per-field events 1-3 only)
    new: str | None
    warning: str | None  # a non-canonical table_key
    error: str | None = None  # set by query-back
    superseded: bool = False
    cells: list | None = None  # query-back: (name, xds_type, text) of the row read, or None


def log_text(raw: object, column: Column) -> str | None:
    """A value of the log as XDS text for its column; ValueError when not valid for it."""
    if raw is None:
        return None
    raw = str(raw)
    trimmed, kind = raw.strip(" "), column.xds_type
    if kind == values.INT and DIGITS.search(trimmed):
        return trimmed
    if kind == values.STATE and trimmed.lower() in TRUE_WORDS + FALSE_WORDS:
        return "true" if trimmed.lower() in TRUE_WORDS else "false"
    if kind == values.TIME:
        if DIGITS.search(trimmed):
            return trimmed
        moment = dt.datetime.fromisoformat(trimmed)  # raises ValueError
        return str(values.epoch_seconds(moment))
    if kind in (values.INT, values.STATE):
        raise ValueError(raw)
    return raw.rstrip(" ") if column.is_char else raw


def classify(row: sa.Row, catalogue: Catalogue) -> tuple[str | None, Event | None, list]:
    """(error reason, the event, the key pairs) of one log row; the event is None on error."""
    text = None if row.event_type is None else str(row.event_type).strip(" ")
    t = int(text) if text is not None and TYPE_TEXT.search(text) else None
    if row.event_type is None:
        return "event_type is NULL", None, []
    if t not in ev.KNOWN:
        return f"unknown event_type {row.event_type}", None, []
    if row.table_name is None or row.table_key is None:
        return f"{'table_name' if row.table_name is None else 'table_key'} is NULL", None, []
    for name in ("table_key", "table_name", "column_name"):
        position = getattr(row, name) and values.forbidden_position(getattr(row, name))
        if position:
            return f"{name} has a character XML 1.0 cannot carry at position {position}", None, []
    try:
        pairs = parse_table_key(row.table_key)
    except TableKeyError as exc:
        return f"malformed table_key: {exc}", None, []
    table = catalogue.tables.get(row.table_name)
    if table is None:
        return f"table {row.table_name} is not in the published schema {catalogue.schema}", None, []
    if any(table.column(c) is None for c, _ in pairs):
        return f"a table_key column is not a column of {row.table_name}", None, []
    for c, v in pairs:
        if table.column(c).xds_type == values.INT and not KEY_INT.search(v):
            return f"table_key value {v} of {c} is not an integer", None, []
    column = table.column(row.column_name) if row.column_name is not None else None
    if t in ev.PER_FIELD and column is None:
        return f"column {row.column_name} is not in table {row.table_name}", None, []
    old = new = None
    for name, applies in (("old_value", t == 2), ("new_value", t in ev.FIELD_NON_QUERY_BACK)):
        raw = getattr(row, name)
        if not applies or raw is None:
            continue
        position = values.forbidden_position(str(raw))
        if position:
            return f"{name} has a character XML 1.0 cannot carry at position {position}", None, []
        try:
            text = log_text(raw, column)
        except ValueError:
            return f"{name} {raw} is not a valid {column.xds_type} value", None, []
        old, new = (text, new) if name == "old_value" else (old, text)
    canonical = format_table_key(pairs)
    warning = None if canonical == row.table_key else (
        f"table_key {row.table_key} is not canonical; published as {canonical}")
    xds_type = column.xds_type if column is not None else None
    return None, Event(row.record_id, t, row.column_name, xds_type, old, new, warning), pairs


def query_back(conn: sa.Connection, schema: str | None, table: Table, pairs: list) -> tuple[list | None, dict]:
    """The current row's non-key cells (None: vanished) and the error of each bad cell."""
    keys = [(table.column(c), v) for c, v in pairs]
    sql_table = sa.table(table.name, *(sa.column(c.name) for c in table.columns), schema=schema)
    where = [sql_table.c[c.name] == (int(v) if c.xds_type == values.INT else v) for c, v in keys]
    for row in conn.execute(sa.select(sql_table).where(*where)).mappings():
        if all(same_key(c, row[c.name], v) for c, v in keys):
            break
    else:
        return None, {}
    cells, errors = [], {}
    for column in (c for c in table.columns if c.name not in dict(pairs)):
        value = row[column.name]
        try:
            text = values.xds_text(value, column.xds_type, column.is_char)
        except (ValueError, TypeError, OverflowError):
            text, errors[column.name] = None, (
                f"current value {value!r} of {column.name} is not a valid {column.xds_type} value")
        position = text is not None and values.forbidden_position(text)
        if position:
            errors[column.name] = (
                f"current value of {column.name} has a character XML 1.0 cannot carry at position {position}")
        cells.append((column.name, column.xds_type, text))
    return cells, errors


def same_key(column: Column, db_value: object, text: str) -> bool:
    """Whether a key value read back is the one asked for, compared as text."""
    if column.xds_type == values.INT:
        return str(int(db_value)) == str(int(text))
    if column.xds_type == values.STRING:
        return values.xds_text(db_value, values.STRING, column.is_char) == text
    return str(db_value) == text


def reduce_object(
    events: list[Event], read: Callable[[], tuple[list | None, dict]], statuses: dict
) -> list[tuple[str, list[Event]]]:
    """Precedence (section 4) over one object's live events; its runs of one command kind."""
    deletes = [i for i, e in enumerate(events) if e.type == ev.EventType.DELETE_ROW]
    last = deletes[-1] if deletes else -1  # query-back events before it have no effect
    effective = []
    for e in events[last + 1:]:
        if e.type in ev.QUERY_BACK:
            e.cells, errors = read()
            error = next(iter(errors.values()), None) if e.type in ev.ROW_QUERY_BACK else errors.get(e.column)
            if error:
                e.error = error
                continue
        effective.append(e)
    row_qb = any(e.type in ev.ROW_QUERY_BACK for e in effective)
    field_qb = {e.column for e in effective if e.type in ev.FIELD_QUERY_BACK}
    for e in effective:
        e.superseded = (e.type in ev.FIELD_NON_QUERY_BACK and (row_qb or e.column in field_qb)) or (
            e.type in ev.FIELD_QUERY_BACK and row_qb)
    runs: list[tuple[str, list[Event]]] = []
    for e in events:
        if e.error:
            statuses[e.record_id] = (ev.Status.ERROR, e.error)
            continue
        statuses[e.record_id] = (ev.Status.WARNED, e.warning) if e.warning and not e.superseded else (
            ev.Status.DONE, None)
        if e.superseded:
            continue
        kind = ev.COMMAND_KIND[e.type]
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(e)
        else:
            runs.append((kind, [e]))
    return runs


def attrs_of(run: list[Event]) -> list[dict]:
    """The add-attr/modify-attr pieces of one run, in event order, query-back fields once."""
    attrs, seen = [], set()
    for e in run:
        if e.type == 1 and e.new is not None:
            attrs.append({"op": "add", "name": e.column, "type": e.xds_type, "old": None, "new": e.new})
        elif e.type == 2 and (e.old is not None or e.new is not None):
            attrs.append({"op": "modify", "name": e.column, "type": e.xds_type, "old": e.old, "new": e.new})
        elif e.type == 3:
            attrs.append({"op": "replace", "name": e.column, "type": e.xds_type, "old": None, "new": e.new})
        for name, xds_type, text in e.cells or ():
            if name not in seen and (e.type in ev.ROW_QUERY_BACK or name == e.column):
                seen.add(name)
                attrs.append({"op": "replace", "name": name, "type": xds_type, "old": None, "new": text})
    return attrs


def publish(settings: Settings, out: str) -> int:
    """One cycle; returns the exit code (1 when some rows were marked E)."""
    engine, dialect = connect(settings.db_url)
    log = open_event_log(engine, dialect, settings)
    catalogue = reflect_catalogue(engine, dialect, settings.schema, settings.log_table)
    schema = settings.schema if dialect.has_schemas else None
    user = engine.url.username
    statuses: dict[int, tuple[str, str | None]] = {}
    objects: dict[tuple[str, str], tuple[list, list[Event]]] = {}
    c = log.column
    pending = sa.select(*(c(n).label(n) for n in ev.EVENT_LOG_COLUMNS)).where(
        c("status") == ev.Status.NEW).order_by(c("record_id"))
    commands = []
    with engine.connect() as conn:
        result = conn.execution_options(stream_results=True).execute(pending)
        while (row := result.fetchone()) is not None:
            if user is not None and row.perpetrator == user:
                statuses[row.record_id] = (ev.Status.DONE, None)  # loopback
                continue
            reason, event, pairs = classify(row, catalogue)
            if reason is not None:
                statuses[row.record_id] = (ev.Status.ERROR, reason)
                continue
            key = (row.table_name, format_table_key(pairs))
            objects.setdefault(key, (pairs, []))[1].append(event)
        for (table_name, key), (pairs, events) in objects.items():
            table = catalogue.tables[table_name]
            runs = reduce_object(events, lambda: query_back(conn, schema, table, pairs), statuses)
            association = f"{key},table={table_name},schema={settings.schema}"
            for kind, run in runs:
                attrs = attrs_of(run)
                if kind == ev.MODIFY and not attrs:
                    continue
                element = command_element(kind, table_name, run[0].record_id, association, attrs)
                commands.append((run[0].record_id, command_xml(element)))
    commands.sort(key=lambda command: command[0])
    documents = open_sink(out, settings.batch_size).write(commands)
    if not settings.dry_run:
        update = (
            log.table.update()
            .where(c("record_id") == sa.bindparam("rid"), c("status") == ev.Status.NEW)
            .values({c("status"): sa.bindparam("letter")})
        )
        with engine.begin() as conn:  # one transaction, one statement per row
            for record_id, (letter, _) in sorted(statuses.items()):
                conn.execute(update, {"rid": record_id, "letter": letter})
    engine.dispose()
    for record_id, (letter, reason) in sorted(statuses.items()):
        if reason:
            print(f"row_publisher: record_id {record_id}: {letter}: {reason}", file=sys.stderr)
    letters = Counter(letter for letter, _ in statuses.values())
    counts = ", ".join(f"{k}={v}" for k, v in sorted(letters.items())) or "none"
    print(f"row_publisher: {len(statuses)} rows read, {len(commands)} commands, "
          f"{documents} documents; statuses {counts}", file=sys.stderr)
    return 1 if letters[ev.Status.ERROR] else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="SQLAlchemy URL")
    parser.add_argument("--out", required=True, help="FILE.xml, a directory, or -")
    parser.add_argument("--schema", default="indirect")
    parser.add_argument("--log-table", default="indirect_process")
    parser.add_argument("--batch-size", type=int, default=1, choices=range(1, 129), metavar="1..128")
    parser.add_argument("--dry-run", action="store_true", help="write the output, leave the statuses")
    args = parser.parse_args()
    settings = Settings(args.db, args.schema, args.log_table, batch_size=args.batch_size, dry_run=args.dry_run)
    sys.exit(publish(settings, args.out))


if __name__ == "__main__":
    main()
