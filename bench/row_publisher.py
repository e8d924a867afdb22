"""A row-at-a-time publisher in plain Python, the baseline of the benchmark.

It is what `xdspub export` is measured against, and the oracle of
tests/test_differential.py: simple on purpose, not tuned.

    python3 bench/row_publisher.py --db URL --out PATH [--schema indirect]
        [--log-table indirect_process] [--batch-size N] [--dry-run]

One cycle over every pending row (status 'N') in record_id order (no future events). Rows
are fetched one at a time and kept per object (table_name, canonical key) in plain dicts;
the rules of PUBLISHER.md section 4 (publisher/reduce/rules.py, which the export runs in
its executors) classify each row and reduce each object; every query-back
event that can still have an effect reads its row with a SELECT of its own; commands are
rendered by publisher.render.xds and written in its envelope, one file at a time; then each
row gets its status with an UPDATE of its own, all in one transaction. Documents and statuses
must equal those of `xdspub export` on the same database, byte for byte."""

from __future__ import annotations

import argparse
import os
import sys
from collections import Counter
from pathlib import Path

import sqlalchemy as sa

from grammar import format_table_key
from publisher.errors import SinkError, XdspubError
from publisher.model import events as ev
from publisher.model import values
from publisher.model.catalogue import Column, Table
from publisher.reduce.rules import Cell, Classifier, Event, Rejected, attrs_of, reduce_object
from publisher.render.xds import command_xml, envelope
from publisher.settings import Settings
from publisher.source.database import connect
from publisher.source.event_log import open_event_log
from publisher.source.schema import reflect_catalogue

Cells = list[Cell]


def same_key(column: Column, db_value: object, text: str) -> bool:
    """Whether a key value read back is the one asked for, compared as text."""
    if column.xds_type == values.INT:
        return str(int(db_value)) == str(int(text))
    if column.xds_type == values.STRING:
        return values.xds_text(db_value, values.STRING, column.is_char) == text
    return str(db_value) == text


def query_back(
    conn: sa.Connection, schema: str | None, table: Table, pairs: list[tuple[str, str]]
) -> tuple[Cells | None, dict[str, str]]:
    """The current row's non-key cells (None: vanished) and the error of each bad cell."""
    keys = [(table.column(c), v) for c, v in pairs]
    source = sa.table(table.name, *(sa.column(c.name) for c in table.columns), schema=schema)
    where = [source.c[c.name] == (int(v) if c.xds_type == values.INT else v) for c, v in keys]
    for row in conn.execute(sa.select(source).where(*where)).mappings():
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
            text = None
            errors[column.name] = (
                f"current value '{value}' of {column.name} is not a valid {column.xds_type} value"
            )
        if position := text is not None and values.forbidden_position(text):
            errors[column.name] = (
                f"current value of {column.name} has a character XML 1.0 cannot carry "
                f"at position {position}"
            )
        cells.append((column.name, column.xds_type, text))
    return cells, errors


def write_documents(out: str, batch_size: int, commands: list[tuple[int, bytes]]) -> int:
    """The commands as <nds> documents (section 9, --out): one .xml file, or a directory
    of files of batch_size commands named by their first record_id. Files are written
    beside their name, fsynced and renamed. Returns how many were written."""
    head, tail = envelope()
    path = Path(out)
    if path.suffix == ".xml":
        documents = [(path, commands)]
    else:
        path.mkdir(parents=True, exist_ok=True)
        batches = (commands[i : i + batch_size] for i in range(0, len(commands), batch_size))
        documents = [(path / f"{batch[0][0]:020d}.xml", batch) for batch in batches]
    try:
        for name, batch in documents:
            temporary = name.with_name(f".{name.name}.{os.getpid()}.tmp")
            with open(temporary, "wb") as stream:
                stream.write(head + b"".join(xml for _, xml in batch) + tail)
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, name)
        if documents:
            folder = os.open(documents[0][0].parent, os.O_RDONLY)
            os.fsync(folder)
            os.close(folder)
    except OSError as exc:
        raise SinkError(f"cannot write {out}: {exc.strerror or exc}") from exc
    return len(documents)


def publish(settings: Settings, out: str) -> int:
    """One cycle; the exit code: 1 when some rows were marked E, else 0."""
    engine, dialect = connect(settings.db_url)
    log = open_event_log(engine, dialect, settings)
    catalogue = reflect_catalogue(engine, dialect, settings.schema, settings.log_table)
    schema = settings.schema if dialect.has_schemas else None
    user = engine.url.username  # loopback: rows this user made are consumed unpublished
    c = log.column
    pending = (
        sa.select(*(c(name).label(name) for name in ev.EVENT_LOG_COLUMNS))
        .where(c("status") == ev.Status.NEW)
        .order_by(c("record_id"))
    )
    classify = Classifier(catalogue)
    statuses: dict[int, tuple[str, str | None]] = {}  # record_id: (letter, reason)
    objects: dict[tuple[str, str], tuple[list, list[Event]]] = {}  # (table, key): (pairs, events)
    commands: list[tuple[int, bytes]] = []
    with engine.connect() as conn:
        result = conn.execution_options(stream_results=True).execute(pending)
        while (row := result.fetchone()) is not None:
            if user is not None and row.perpetrator == user:
                statuses[row.record_id] = (ev.Status.DONE, None)
                continue
            try:
                event, pairs = classify(row._mapping)
            except Rejected as exc:
                statuses[row.record_id] = (ev.Status.ERROR, str(exc))
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
                    continue  # nothing to say, e.g. a query-back of a vanished row
                xml = command_xml(kind, table_name, run[0].record_id, association, attrs)
                commands.append((run[0].record_id, xml))
    commands.sort(key=lambda command: command[0])  # each at its first event's position
    documents = write_documents(out, settings.batch_size, commands)
    if not settings.dry_run:  # the documents are durable: now the statuses
        update = (
            log.table.update()
            .where(c("record_id") == sa.bindparam("rid"), c("status") == ev.Status.NEW)
            .values({c("status"): sa.bindparam("letter")})
        )
        with engine.begin() as conn:
            for record_id, (letter, _) in sorted(statuses.items()):
                conn.execute(update, {"rid": record_id, "letter": letter})
    engine.dispose()
    for record_id, (letter, reason) in sorted(statuses.items()):
        if reason:
            print(f"row_publisher: record_id {record_id}: {letter}: {reason}", file=sys.stderr)
    letters = Counter(letter for letter, _ in statuses.values())
    counts = ", ".join(f"{k}={v}" for k, v in sorted(letters.items())) or "none"
    print(
        f"row_publisher: {len(statuses)} rows read, {len(commands)} commands, "
        f"{documents} documents; statuses {counts}",
        file=sys.stderr,
    )
    return 1 if letters[ev.Status.ERROR] else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="SQLAlchemy URL of the database")
    parser.add_argument("--out", required=True, help="FILE.xml or a directory")
    parser.add_argument("--schema", default="indirect")
    parser.add_argument("--log-table", default="indirect_process")
    parser.add_argument("--batch-size", type=int, default=1, choices=range(1, 129), metavar="N")
    parser.add_argument("--dry-run", action="store_true", help="leave the statuses")
    args = parser.parse_args()
    settings = Settings(
        args.db, args.schema, args.log_table, batch_size=args.batch_size, dry_run=args.dry_run
    )
    try:
        sys.exit(publish(settings, args.out))
    except XdspubError as exc:  # bad configuration, database unreachable, unwritable output
        print(f"row_publisher: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
