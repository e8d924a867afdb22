"""A row-at-a-time publisher in plain Python, the baseline of the benchmark.

It is what `xdspub export` is measured against, and the oracle of
tests/test_differential.py: simple on purpose, not tuned.

    python3 bench/row_publisher.py --db URL --out PATH [--schema indirect]
        [--log-table indirect_process] [--batch-size N] [--dry-run]

One cycle over every pending row (status 'N') in record_id order (no future events). Rows
are fetched one at a time and kept per object (table_name, canonical key) in plain dicts;
the rules of docs/reduction.md (publisher/reduce/rules.py, which the export runs in
its executors) classify each row and reduce each object; every query-back
event that can still have an effect reads its row with a SELECT of its own (and its class's
child tables, each read whole once per cycle); commands are
rendered by publisher.render.xds and written in its envelope, one file at a time; then each
row gets its status with an UPDATE of its own, all in one transaction. Documents and statuses
must equal those of `xdspub export` on the same database, byte for byte."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import sqlalchemy as sa

from publisher.delivery.documents import (
    document_name,
    sync_directory,
    write_durably,
    write_stream,
)
from publisher.errors import XdspubError
from publisher.model import events as ev
from publisher.model.catalogue import Catalogue, Table
from publisher.model.commands import association
from publisher.model.statuses import Status
from publisher.reduce.loopback import is_loopback, loopback_user
from publisher.reduce.query_back_state import (
    CurrentCell,
    child_cells,
    current_cells,
    current_match,
    match_text,
    read_back,
)
from publisher.reduce.references import referenced_classes
from publisher.reduce.rules import Cell, Classifier, Event, Rejected, object_commands
from publisher.render.xds import command_xml
from publisher.settings import Settings
from publisher.source.database import connect
from publisher.source.dialects import dialect_of
from publisher.source.event_log import open_event_log
from publisher.source.query_back import current_select
from publisher.source.schema import reflect_catalogue


class QueryBack:
    """The current state of objects for query-back: the object's row with a SELECT of its
    own, and its class's child tables each read whole once per cycle, their values
    grouped by object."""

    def __init__(self, conn: sa.Connection, catalogue: Catalogue, schema: str | None) -> None:
        self.conn, self.catalogue, self.schema = conn, catalogue, schema
        self.dialect = dialect_of(conn.dialect.name)
        self.children: dict[str, dict[str, list[CurrentCell]]] = {}

    def __call__(self, table: Table, pairs: list[tuple[str, str]]) -> tuple[list[Cell] | None, dict[str, str]]:
        """The current row's non-key cells (None: vanished) and the error of each bad cell."""
        names = [column for column, _ in pairs]
        wanted = match_text([value for _, value in pairs])
        query = current_select(self.dialect, table, self.schema, names, [[value for _, value in pairs]])
        for row in self.conn.execute(query).mappings():
            if current_match(table, names, row) == wanted:
                cells = current_cells(self.catalogue, table, names, row)
                for child in table.children():
                    cells += self._child_values(child).get(wanted, [])
                return read_back(cells)
        return read_back(None)

    def _child_values(self, child: Table) -> dict[str, list[CurrentCell]]:
        if child.name not in self.children:
            values: dict[str, list[CurrentCell]] = {}
            query = current_select(self.dialect, child, self.schema, child.key_columns, None)
            for row in self.conn.execute(query).mappings():
                match = current_match(child, child.key_columns, row)
                if match is not None:
                    values.setdefault(match, []).extend(child_cells(self.catalogue, child, row))
            self.children[child.name] = values
        return self.children[child.name]


def write_documents(out: str, batch_size: int, commands: list[tuple[int, bytes]]) -> int:
    """The commands as <nds> documents (--out): one .xml file (none without a command), or a
    directory of files of batch_size commands named by their first record_id, each written
    durably. Returns how many were written."""
    path = Path(out)
    if path.suffix == ".xml":
        documents = [(path, commands)] if commands else []
    else:
        path.mkdir(parents=True, exist_ok=True)
        batches = (commands[i : i + batch_size] for i in range(0, len(commands), batch_size))
        documents = [(path / document_name(batch[0][0]), batch) for batch in batches]
    for name, batch in documents:
        write_durably(name, lambda stream, b=batch: write_stream(stream, (xml for _, xml in b)))
    if documents:
        sync_directory(documents[0][0].parent)
    return len(documents)


def _creations(catalogue: Catalogue, schema: str, objects: dict) -> dict[str, list[tuple[float, int]]]:
    """Where each object a reference may name is created (docs/reduction.md, References and
    order), by association: its first type 1 of a single-valued attribute or type 5, and
    the first after each of its deletes."""
    referenced = referenced_classes(catalogue)
    classes = referenced.classes if referenced else {}
    creations: dict[str, list[tuple[float, int]]] = {}
    for (table_name, key), (_, events) in objects.items():
        if table_name not in classes:
            continue
        made = False
        for e in events:
            if e.event_type == 4:
                made = False
            elif e.event_type == 5 or (e.event_type == 1 and e.column_name not in classes[table_name]):
                if not made:
                    creations.setdefault(association(key, table_name, schema), []).append((0.0, e.record_id))
                made = True
    return creations


def publish(settings: Settings, out: str) -> int:
    """One cycle; the exit code: 1 when some rows were marked E, else 0."""
    engine, dialect = database = connect(settings.db_url)
    log = open_event_log(database, settings)
    catalogue = reflect_catalogue(
        database, settings.schema, settings.log_table, settings.time_syntax
    )
    schema = dialect.schema_named(settings.schema)
    user = loopback_user(settings.publisher_user, engine.url.username, settings.allow_loopback)
    c = log.column
    pending = (
        sa.select(*(c(name).label(name) for name in ev.EVENT_LOG_COLUMNS))
        .where(c("status") == Status.NEW)
        .order_by(c("record_id"))
    )
    classify = Classifier(catalogue, settings.max_value_length)
    statuses: dict[int, tuple[str, str | None]] = {}  # record_id: (letter, reason)
    objects: dict[tuple[str, str], tuple[list, list[Event]]] = {}  # (table, key): (pairs, events)
    commands: list[tuple[int, bytes]] = []
    with engine.connect() as conn:
        result = conn.execution_options(stream_results=True).execute(pending)
        while (row := result.fetchone()) is not None:
            if is_loopback(row.perpetrator, user):
                statuses[row.record_id] = (Status.DONE, None)
                continue
            try:
                event, pairs = classify(row._mapping)
            except Rejected as exc:
                statuses[row.record_id] = (Status.ERROR, str(exc))
                continue
            key = (event.class_name, event.canonical_key)
            objects.setdefault(key, (pairs, []))[1].append(event)
        creations = _creations(catalogue, settings.schema, objects)
        query_back = QueryBack(conn, catalogue, schema)
        for (table_name, _key), (pairs, events) in objects.items():
            table = catalogue.tables[table_name]
            read = lambda: query_back(table, pairs)  # noqa: E731
            for command in object_commands(table, settings.schema, events, read, statuses, creations):
                commands.append((command.event_id, command_xml(command)))
    commands.sort(key=lambda command: command[0])  # each at its first event's position
    documents = write_documents(out, settings.batch_size, commands)
    if not settings.dry_run:  # the documents are durable: now the statuses
        update = (
            log.table.update()
            .where(c("record_id") == sa.bindparam("rid"), c("status") == Status.NEW)
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
    return 1 if letters[Status.ERROR] else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True, help="SQLAlchemy URL of the database")
    parser.add_argument("--out", required=True, help="FILE.xml or a directory")
    parser.add_argument("--schema", default="indirect")
    parser.add_argument("--log-table", default="indirect_process")
    parser.add_argument("--batch-size", type=int, default=1, choices=range(1, 129), metavar="N")
    parser.add_argument("--dry-run", action="store_true", help="leave the statuses")
    parser.add_argument("--time-syntax", type=int, default=1, choices=range(1, 4), metavar="N")
    args = parser.parse_args()
    settings = Settings(
        args.db, args.schema, args.log_table, batch_size=args.batch_size, dry_run=args.dry_run,
        time_syntax=args.time_syntax,
    )
    try:
        sys.exit(publish(settings, args.out))
    except XdspubError as exc:  # bad configuration, database unreachable, unwritable output
        print(f"row_publisher: error: {exc}", file=sys.stderr)
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()
