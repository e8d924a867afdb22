"""The change formats ``xdspub export --source`` reads (docs/change-formats.md), as data:
what each needs (a file or pipe, or a database) and how its reader is opened.

Each opener gives the events to publish and what to do once their documents are durable
(docs/change-formats.md, Positions and delivery): save the positions read up to where a
database is read (qlik-ct, openedge); nothing where a file or pipe is read whole."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, BinaryIO

from publisher.errors import ConfigError

if TYPE_CHECKING:  # the CLI reads FORMATS for --help: nothing heavy at import
    import sqlalchemy as sa

    from publisher.model.changes import ChangeEvent


OPENEDGE_POSITIONS = "xdspub_openedge_position"


@dataclass(frozen=True)
class ChangeOptions:
    input: str | None = None  # a file, or - for standard input
    db_url: str | None = None
    schema: str | None = None  # where the change tables are (database formats)
    keys: Mapping[str, Sequence[str]] = field(default_factory=dict)  # table -> key columns
    # gbase8s: table id -> name; openedge: _Source-Table-Number -> name (shared tracking)
    tables: Mapping[int, str] = field(default_factory=dict)
    limit: int | None = None  # qlik-ct from a database: change_seq values a run reads


@dataclass
class ChangeInput:
    events: Iterator[ChangeEvent]
    delivered: Callable[[], None] = lambda: None  # after the documents are durable


@contextmanager
def _binary(path: str) -> Iterator[BinaryIO]:
    if path == "-":
        yield sys.stdin.buffer
        return
    try:
        stream = open(path, "rb")
    except OSError as exc:
        raise ConfigError(f"cannot read {path}: {exc.strerror or exc}") from None
    with stream:
        yield stream


def _gbase8s(options: ChangeOptions) -> ChangeInput:
    from publisher.source.cdc import gbase8s

    def events() -> Iterator[ChangeEvent]:
        with _binary(options.input) as stream:
            yield from gbase8s.read_changes(stream, options.tables, options.keys)

    return ChangeInput(events())


def _qlik_kafka(options: ChangeOptions) -> ChangeInput:
    from publisher.source.cdc import qlik_kafka

    def events() -> Iterator[ChangeEvent]:
        with _binary(options.input) as stream:
            # JSON lines begin with a brace (after blanks, or a BOM); Avro envelopes with a
            # length.
            head = stream.peek(64).removeprefix(b"\xef\xbb\xbf").lstrip()
            if head[:1] == b"{" or not head:
                yield from qlik_kafka.read_changes(stream)
            else:
                yield from qlik_kafka.read_changes(stream, message_format="avro")

    return ChangeInput(events())


def _database(options: ChangeOptions) -> tuple[sa.Engine, str | None]:
    """The engine, and the schema of the change tables (None where there are no schemas)."""
    from publisher.source.database import connect

    engine, dialect = connect(options.db_url)
    return engine, dialect.schema_named(options.schema)


def _qlik_ct(options: ChangeOptions) -> ChangeInput:
    from publisher.source.cdc import qlik_ct

    if options.input == "-":
        raise ConfigError("--source qlik-ct reads change-table files or a folder, not standard input")
    if options.input is not None:
        return ChangeInput(iter(qlik_ct.read_files(options.input, options.keys or None)))
    if not options.keys:
        raise ConfigError("--source qlik-ct --db needs --keys TABLE=COL[+COL] for each change table")
    engine, schema = _database(options)
    store = qlik_ct.PositionStore(engine, task=schema or "default", schema=schema)
    batch = qlik_ct.read_database(
        engine, options.keys, store.load(), limit=options.limit, schema=schema
    )

    def delivered() -> None:
        if batch.position is not None:
            store.save(batch.position)

    return ChangeInput(iter(batch.events), delivered)


def _openedge(options: ChangeOptions) -> ChangeInput:
    from publisher.source.cdc import openedge
    from publisher.source.cdc.positions import PositionStore

    engine, schema = _database(options)
    numbers = {name: number for number, name in options.tables.items()}
    tables = [
        openedge.ChangeTable(name, tuple(keys), table_number=numbers.get(name))
        for name, keys in options.keys.items()
    ]
    # The last _Change-Sequence delivered, per table; the reader advances the mapping as
    # it hands changes over, and it is saved once their documents are durable.
    stores = {
        t.name: PositionStore(
            engine, f"{schema or 'default'}.{t.name}", table=OPENEDGE_POSITIONS, schema=schema
        )
        for t in tables
    }
    positions = {n: int(p) for n, store in stores.items() if (p := store.load()) is not None}

    def delivered() -> None:
        for name, position in positions.items():
            stores[name].save(str(position))

    events = openedge.read_changes(engine, tables, schema=schema, positions=positions)
    return ChangeInput(events, delivered)


@dataclass(frozen=True)
class ChangeFormat:
    name: str
    reads: tuple[str, ...]  # what it can read from: "input", "db"
    open: Callable[[ChangeOptions], ChangeInput]
    needs_keys: bool  # the format itself does not name its tables' keys
    needs_tables: bool = False


FORMATS = {
    f.name: f
    for f in (
        ChangeFormat("qlik-ct", ("input", "db"), _qlik_ct, needs_keys=False),
        ChangeFormat("qlik-kafka", ("input",), _qlik_kafka, needs_keys=False),
        ChangeFormat("openedge", ("db",), _openedge, needs_keys=True),
        ChangeFormat("gbase8s", ("input",), _gbase8s, needs_keys=True, needs_tables=True),
    )
}


def open_changes(name: str, options: ChangeOptions) -> ChangeInput:
    """The reader of format ``name`` over ``options``; ConfigError when they do not fit."""
    fmt = FORMATS[name]
    given = [what for what, value in (("input", options.input), ("db", options.db_url)) if value]
    if len(given) != 1 or given[0] not in fmt.reads:
        wanted = " or ".join(f"--{what}" for what in fmt.reads)
        raise ConfigError(f"--source {name} reads {wanted} (exactly one)")
    if fmt.needs_keys and not options.keys:
        raise ConfigError(f"--source {name} needs --keys TABLE=COL[+COL] for each table")
    if fmt.needs_tables and not options.tables:
        raise ConfigError(f"--source {name} needs --tables ID=NAME for each captured table")
    return fmt.open(options)
