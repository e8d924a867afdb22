"""Query-back reads (docs/rendering.md, Query-back rendering): the current rows of a
published table.

Every column is selected as the database's own text (binary columns, references to a
binary key too, as bytes: Column.is_binary), so that one rule (model/value_text.py) turns
them into XDS text whatever reads them: the Python workers (COPY, or Spark's JDBC source),
the driver, or the row publisher of bench/ with SQLAlchemy. Key values are bound as
values, never spliced into the SQL; names come from the reflected catalogue only."""

from __future__ import annotations

import base64
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import pyarrow as pa
import sqlalchemy as sa

from publisher.model import value_text
from publisher.model.catalogue import Catalogue, Column, Table
from publisher.source.copy_read import CopyRanges, copy_ranges, even_ranges
from publisher.source.database import Database, first_line
from publisher.source.dialects import Dialect, dialect_of
from publisher.source.jdbc import JdbcQuery, jdbc_query
from publisher.source.schema import is_bit
from publisher.source.text import database_text

Rows = TypeVar("Rows")
CHECKED_ROWS = 10_000  # rows held at a time by CurrentRows.check


def current_select(dialect: Dialect, table: Table, schema: str | None, key_names: Sequence[str],
                   wanted: Sequence[Sequence[str]] | None, raw: str | None = None) -> sa.Select:
    """The rows of ``table`` whose ``key_names`` hold one of ``wanted`` (key texts), or
    every row when ``wanted`` is None. ``raw``: a column selected as it is, not as text
    (the integer column a partitioned read splits on). Each column is named as its
    attribute (a view's ``sv_fname`` as ``fname``, docs/classes.md)."""
    source = sa.table(table.name, *(sa.column(c.read_name) for c in table.columns), schema=schema)

    def text(column: Column) -> sa.ColumnElement:
        value = _named(dialect, column, source, schema)
        if dialect.zoned(column.sql_type):
            return dialect.utc_text(value)  # the same text in every session's zone
        return sa.cast(dialect.bit_number(value) if is_bit(column.sql_type) else value, sa.Text)

    selected = [
        source.c[c.read_name].label(c.name) if c.is_binary or c.name == raw
        else text(c).label(c.name)
        for c in table.columns
    ]
    query = sa.select(*selected)
    if wanted is None:
        return query
    columns = [table.column(name) for name in key_names]
    matches = [_KeyMatch(dialect, c, source.c[c.read_name]) for c in columns]
    keys = [key for key in wanted if all(m.names_a_value(v) for m, v in zip(matches, key))]
    if len(matches) == 1:
        return query.where(matches[0].column.in_([matches[0].value(key[0]) for key in keys]))
    return query.where(
        sa.tuple_(*(m.column for m in matches)).in_(
            [sa.tuple_(*(m.value(v) for m, v in zip(matches, key))) for key in keys]
        )
    )


def _named(dialect: Dialect, column: Column, source: sa.TableClause, schema: str | None) -> sa.ColumnElement:
    """The column's value; a value naming a row (a reference, a child row's link) as that
    row holds its key where the key's text collates ('abc' names the row of 'ABC',
    docs/rendering.md, Key text), and as it is where it names no row."""
    value = source.c[column.read_name]
    named = column.names_row
    if named is None or not dialect.collated(column.sql_type):
        return value
    row = sa.table(named.table, *(sa.column(k) for k, _ in named.pairs), schema=schema).alias("p")
    match = [row.c[k] == source.c[c] for k, c in named.pairs]
    found = sa.select(row.c[named.key_named_by(column.name)]).where(*match).scalar_subquery()
    return sa.func.coalesce(found, value)


class _KeyMatch:
    """How a key column is compared with a key text (docs/rendering.md, Key text): the
    column itself where the database can (so that its index serves), with the text as a
    value of the column's type."""

    def __init__(self, dialect: Dialect, column: Column, source: sa.ColumnElement) -> None:
        self.dialect, self.xds_type, self.sql_type = dialect, column.xds_type, column.sql_type
        self.binary = column.is_binary
        # A type SQLAlchemy does not know (SQLite's column without a declared type, a
        # type of an extension): its values may be of any kind, compared as their text.
        self.by_text = isinstance(self.sql_type, sa.types.NullType) and self.xds_type == value_text.STRING
        self.column = sa.cast(source, sa.Text) if self.by_text else source
        if self.binary:
            self.column = dialect.binary_key_column(source)

    def names_a_value(self, text: str) -> bool:
        """Whether ``text`` can name a value of the column: a binary key's is Base64, and
        an integer key past 2**63 - 1 names none of a signed column (nor could SQLite bind
        it)."""
        if self.xds_type == value_text.INT:
            return int(text) < 2**63 or bool(getattr(self.sql_type, "unsigned", False))
        if not self.binary:
            return True
        try:
            base64.b64decode(text, validate=True)
        except ValueError:
            return False
        return True

    def value(self, text: str) -> object:
        """The key text as the value the column is compared with."""
        if self.xds_type == value_text.INT:
            return int(text)
        if self.xds_type == value_text.STATE:
            return sa.literal(text == "true", sa.Boolean())
        if self.binary:
            return self.dialect.binary_key(text)
        if self.dialect.utc_key and self.dialect.zoned(self.sql_type):
            return self.dialect.utc_key(text)
        if self.by_text or not self.dialect.casts_key_texts or self.sql_type is None:
            return text
        return sa.cast(sa.literal(text, sa.Text()), self.sql_type)


def current_read(db: Database, catalogue: Catalogue, table: Table, key_names: Sequence[str],
                 wanted: list[tuple[str, ...]] | None,
                 parts: Callable[[int], int]) -> CopyRanges | JdbcQuery:
    """``current_select`` for the Python workers to read (its columns ``current_table``'s):
    a whole table with an integer key in ``parts(rows)`` ranges of it, by COPY where the
    database has it (source/copy_read.py); anything else through Spark's JDBC source."""
    schema = db.dialect.schema_named(catalogue.schema)
    split = _split(db.engine, schema, table, key_names) if wanted is None else None
    column = split and split[0]
    query = current_select(db.dialect, table, schema, key_names, wanted, column)
    if split is None or not db.dialect.copy_reads:
        return jdbc_query(db, query, _arrow_schema(table), split)
    _, low, high, rows = split
    octets = tuple(c.name for c in table.columns if c.is_binary)
    ranges = even_ranges(low, high, parts(rows))
    return copy_ranges(db.engine, query, _arrow_schema(table), column, ranges, octets)


def _split(engine: sa.Engine, schema: str | None, table: Table,
           key_names: Sequence[str]) -> tuple[str, int, int, int] | None:
    """(key column, lowest, highest, rows) of a table whose first key column is an integer,
    to read it in ranges; None for any other table, an empty one, or one holding a key
    past a signed 64-bit integer."""
    if table.column(key_names[0]).xds_type != value_text.INT:
        return None
    source = sa.table(table.name, sa.column(key_names[0]), schema=schema)
    key = source.c[key_names[0]]
    with engine.connect() as conn:
        low, high, rows = conn.execute(
            sa.select(sa.func.min(key), sa.func.max(key), sa.func.count()).select_from(source)
        ).one()
    # Spark splits a read on a signed 64-bit number: an unsigned BIGINT past it is read whole.
    return (key_names[0], low, high, rows) if rows and high < 2**63 else None


def _arrow_schema(table: Table) -> pa.Schema:
    return pa.schema(
        [(c.name, pa.binary() if c.is_binary else pa.string()) for c in table.columns]
    )


def current_table(engine: sa.Engine, schema: str | None, table: Table, key_names: Sequence[str],
                  wanted: list | None) -> pa.Table:
    """``current_select`` read by the driver, for a cycle of few rows: the same columns as
    ``current_read``'s, every one a string, binary ones bytes. ``schema``: the schema the
    table is in, where the database has schemas."""
    arrow = _arrow_schema(table)
    with engine.connect() as conn:
        query = current_select(dialect_of(engine.dialect.name), table, schema, key_names, wanted)
        rows = conn.execute(query).all()
    columns = zip(*rows) if rows else ([] for _ in arrow)
    return pa.table(
        [pa.array([_value(v, f.type) for v in column], f.type) for column, f in zip(columns, arrow)],
        schema=arrow,
    )


@dataclass(frozen=True)
class CurrentRows:
    """The published tables' current rows as a plan reads them (query-back, and a
    triggerless class read whole): the database and its catalogue, bound once."""

    db: Database
    catalogue: Catalogue

    @property
    def schema(self) -> str | None:
        return self.db.dialect.schema_named(self.catalogue.schema)

    def read(self, table: Table, key_names: Sequence[str], wanted: list | None,
             parts: Callable[[int], int]) -> CopyRanges | JdbcQuery:
        """For the Python workers to read (``current_read``)."""
        return current_read(self.db, self.catalogue, table, key_names, wanted, parts)

    def rows(self, table: Table, key_names: Sequence[str], wanted: list | None) -> pa.Table:
        """Read by the driver (``current_table``)."""
        return current_table(self.db.engine, self.schema, table, key_names, wanted)

    def count(self, name: str) -> int:
        """How many rows the table (or view) ``name`` holds now."""
        with self.db.engine.connect() as connection:
            source = sa.table(name, schema=self.schema)
            return connection.execute(sa.select(sa.func.count()).select_from(source)).scalar_one()

    def check(self, table: Table, key_names: Sequence[str], wanted: list | None) -> None:
        """Read by the driver and let go as it comes, a whole table too: whether the
        database reads it at all (DBAPIError when it refuses)."""
        with self.db.engine.connect() as conn:
            select = current_select(self.db.dialect, table, self.schema, key_names, wanted)
            result = conn.execution_options(stream_results=True, yield_per=CHECKED_ROWS).execute(select)
            for _ in result.partitions():
                pass


def _value(value: object, kind: pa.DataType) -> object:
    if kind == pa.binary() and isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    return value if kind == pa.binary() else database_text(value)


def isolated(read: Callable[[list | None], Rows], table: Table,
             keyed: list | None) -> tuple[list[Rows], dict[tuple[str, ...] | None, str]]:
    """``read(keyed)``; when the database refuses it, ``read([key])`` for each key alone,
    so that a batch's failure is its objects' (docs/statuses.md, Read failures): what was
    read, and why each key still refused was (the key None: the whole ``table``, whose
    read cannot be split by object)."""
    try:
        return [read(keyed)], {}
    except sa.exc.DBAPIError as exc:
        reason = _refused(table, exc)
        if keyed is None:
            return [], {None: reason}
    found, failed = [], {}
    for key in keyed:
        try:
            found.append(read([key]))
        except sa.exc.DBAPIError as exc:
            failed[tuple(key)] = _refused(table, exc)
    return found, failed


def _refused(table: Table, exc: sa.exc.DBAPIError) -> str:
    """Why the database refused to read ``table`` (a value it cannot convert, a view that
    raises for a row, no permission): the first line of its message. A lost connection
    is no refusal: it fails the cycle, to be run again."""
    if exc.connection_invalidated:
        raise exc
    return f"the current rows of {table.name} could not be read: {first_line(exc)}"
