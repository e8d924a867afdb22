"""Query-back (PUBLISHER.md section 2): the current rows of the objects whose events ask
for them, read in bulk, one query per table (and key shape) per cycle."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

import sqlalchemy as sa

from publisher.model import values
from publisher.model.catalogue import Catalogue, Column
from publisher.source.dialects import Dialect

# One row per requested object (ordinal NULL: found or not, or why it cannot be read) and
# one per non-key column of each object found.
CURRENT_SCHEMA = (
    "table_name STRING, canonical_key STRING, found BOOLEAN, qb_error STRING, "
    "ordinal INT, column_name STRING, xds_type STRING, value STRING, value_error STRING"
)

Request = tuple[str, str, list[tuple[str, str]]]  # table_name, canonical key, key pairs


def _key_text(column: Column, text: str) -> str:
    """The key value as the database will give it back, so both sides compare as text.
    Integer key values were checked to be integers when the rows were classified."""
    return str(int(text)) if column.xds_type == values.INT else text


def _db_key_text(column: Column, value: object) -> str:
    if column.xds_type == values.INT:
        return str(int(value))
    if column.xds_type == values.STRING:
        return values.xds_text(value, column.xds_type, column.is_char)
    return str(value)  # dates, times, binaries: as the database writes them in text


def _bind(column: Column, text: str) -> object:
    return int(text) if column.xds_type == values.INT else text


def _cell(column: Column, value: object) -> tuple:
    """(ordinal, name, xds_type, text, error) of one current value."""
    try:
        text = values.xds_text(value, column.xds_type, column.is_char)
    except (ValueError, TypeError, OverflowError):
        error = f"current value {value!r} of {column.name} is not a valid {column.xds_type} value"
        return (column.ordinal, column.name, column.xds_type, None, error)
    position = values.forbidden_position(text) if text is not None else None
    error = (
        f"current value of {column.name} has a character XML 1.0 cannot carry at position {position}"
        if position
        else None
    )
    return (column.ordinal, column.name, column.xds_type, text, error)


def current_rows(
    engine: sa.Engine, dialect: Dialect, catalogue: Catalogue, requests: Iterable[Request]
) -> Iterator[tuple]:
    """Rows of CURRENT_SCHEMA for every request."""
    shapes: dict[tuple[str, tuple[str, ...]], dict[tuple[str, ...], list[str]]] = defaultdict(
        lambda: defaultdict(list)
    )
    for table_name, key, pairs in requests:
        table = catalogue.tables[table_name]
        columns = [table.column(name) for name, _ in pairs]
        wanted = tuple(_key_text(c, v) for c, (_, v) in zip(columns, pairs))
        shapes[(table_name, tuple(name for name, _ in pairs))][wanted].append(key)

    schema = catalogue.schema if dialect.has_schemas else None
    with engine.connect() as conn:
        for (table_name, key_names), wanted in shapes.items():
            yield from _read_table(conn, dialect, catalogue, schema, table_name, key_names, wanted)


def _read_table(
    conn: sa.Connection,
    dialect: Dialect,
    catalogue: Catalogue,
    schema: str | None,
    table_name: str,
    key_names: tuple[str, ...],
    wanted: dict[tuple[str, ...], list[str]],
) -> Iterator[tuple]:
    table = catalogue.tables[table_name]
    key_columns = [table.column(name) for name in key_names]
    sa_table = sa.table(table_name, *(sa.column(c.name) for c in table.columns), schema=schema)
    key_expr = (
        sa_table.c[key_names[0]]
        if len(key_names) == 1
        else sa.tuple_(*(sa_table.c[n] for n in key_names))
    )
    others = [c for c in table.columns if c.name not in key_names]
    found: set[tuple[str, ...]] = set()
    chunk = max(1, dialect.max_bind_params // len(key_names))
    wanted_keys = list(wanted)
    for start in range(0, len(wanted_keys), chunk):
        binds = [
            tuple(_bind(c, v) for c, v in zip(key_columns, k))
            for k in wanted_keys[start : start + chunk]
        ]
        in_values = [b[0] for b in binds] if len(key_names) == 1 else binds
        for row in conn.execute(sa.select(sa_table).where(key_expr.in_(in_values))).mappings():
            got = tuple(_db_key_text(c, row[c.name]) for c in key_columns)
            if got not in wanted or got in found:
                continue
            found.add(got)
            cells = [_cell(c, row[c.name]) for c in others]
            for key in wanted[got]:
                yield (table_name, key, True, None, None, None, None, None, None)
                for cell in cells:
                    yield (table_name, key, None, None, *cell)
    for missing in wanted.keys() - found:
        for key in wanted[missing]:
            yield (table_name, key, False, None, None, None, None, None, None)
