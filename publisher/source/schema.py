"""Reflects the published schema into a Catalogue (docs/classes.md)."""

from __future__ import annotations

import sqlalchemy as sa

from publisher.model import value_text
from publisher.model.catalogue import VIEW_KEY_PREFIX, Catalogue, Column, Table
from publisher.source.dialects import Dialect

_INTERNAL_PREFIX = "sqlite_"


def xds_type_of(sql_type: sa.types.TypeEngine) -> tuple[str, bool]:
    """(XDS value type, is CHAR(n)) of a reflected column type."""
    if isinstance(sql_type, sa.types.Boolean):
        return value_text.STATE, False
    if isinstance(sql_type, sa.types.Integer):
        return value_text.INT, False
    if isinstance(sql_type, (sa.types.DateTime, sa.types.Date, sa.types.Time)):
        return value_text.TIME, False
    if isinstance(sql_type, (sa.types._Binary, sa.types.LargeBinary)):
        return value_text.OCTET, False
    if isinstance(sql_type, sa.types.String) and not isinstance(sql_type, sa.types.Text):
        return value_text.STRING, type(sql_type).__name__.upper() in ("CHAR", "NCHAR", "BPCHAR")
    return value_text.STRING, False


def reflect_catalogue(
    engine: sa.Engine, dialect: Dialect, schema: str, log_table: str
) -> Catalogue:
    """Every table and view of the schema but the event log (SQLite: of the main database)."""
    db_schema = schema if dialect.has_schemas else None
    inspector = sa.inspect(engine)
    log_name = log_table.rsplit(".", 1)[-1]
    tables: dict[str, Table] = {}
    for names, is_view in (
        (inspector.get_table_names(schema=db_schema), False),
        (inspector.get_view_names(schema=db_schema), True),
    ):
        for name in names:
            if name == log_name or name.startswith(_INTERNAL_PREFIX):
                continue
            columns = tuple(
                Column(c["name"], ordinal, *xds_type_of(c["type"]))
                for ordinal, c in enumerate(inspector.get_columns(name, schema=db_schema), 1)
            )
            keys: list[str] = []
            if not is_view:
                keys = inspector.get_pk_constraint(name, schema=db_schema)["constrained_columns"]
            primary = bool(keys)
            if not keys:
                keys = [c.name for c in columns if c.name.startswith(VIEW_KEY_PREFIX)]
            tables[name] = Table(name, columns, tuple(keys), key_is_primary=primary)
    return Catalogue(schema, tables)
