"""Reflects the published schema into a Catalogue (docs/classes.md)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

import sqlalchemy as sa

from publisher.errors import ConfigError
from publisher.model import value_text
from publisher.model.catalogue import VIEW_KEY_PREFIX, Catalogue, Column, ForeignKey, MultiValued, Table
from publisher.model.policy import with_policy
from publisher.settings import Settings
from publisher.source.database import Database
from publisher.source.identifiers import lock_table_name, resync_table_name

_INTERNAL_PREFIX = "sqlite_"


# The kinds of time column by reflected type (MariaDB's DATETIME and TIMESTAMP, and
# PostgreSQL's TIMESTAMP and TIME WITH TIME ZONE, are DateTime and Time too).
_TIME_KINDS = (
    (sa.types.DateTime, value_text.TIMESTAMP_KIND),
    (sa.types.Date, value_text.DATE_KIND),
    (sa.types.Time, value_text.TIME_KIND),
)


# Types that are booleans under another name, by the reflected type's class name and the
# size it is declared with: MariaDB's BOOLEAN is TINYINT(1), and a BIT(1) holds one bit
# (JDBC takes both as booleans too; docs/rendering.md, Value types).
_BOOLEAN_LIKE = (("TINYINT", "display_width"), ("BIT", "length"))


def is_bit(sql_type: object) -> bool:
    """A BIT(n) column: a database may write it as bytes where its text is wanted
    (Dialect.bit_number)."""
    return type(sql_type).__name__ == "BIT"


def _is_boolean(sql_type: sa.types.TypeEngine) -> bool:
    if isinstance(sql_type, sa.types.Boolean):
        return True
    return any(
        type(sql_type).__name__ == name and getattr(sql_type, size, None) == 1 for name, size in _BOOLEAN_LIKE
    )


def xds_type_of(sql_type: sa.types.TypeEngine,
                time_syntax: int = value_text.TimeSyntax.INTEGER) -> tuple[str, bool, str | None]:
    """(XDS value type, is CHAR(n), time_form) of a reflected column type; a date, time or
    timestamp column's type and form follow ``time_syntax``."""
    if _is_boolean(sql_type):
        return value_text.STATE, False, None
    if isinstance(sql_type, sa.types.Integer):
        return value_text.INT, False, None
    for time_type, kind in _TIME_KINDS:
        if isinstance(sql_type, time_type):
            xds_type, time_form = value_text.time_column(kind, time_syntax)
            return xds_type, False, time_form
    if isinstance(sql_type, (sa.types._Binary, sa.types.LargeBinary)):
        return value_text.OCTET, False, None
    if isinstance(sql_type, sa.types.String) and not isinstance(sql_type, sa.types.Text):
        return value_text.STRING, type(sql_type).__name__.upper() in ("CHAR", "NCHAR", "BPCHAR"), None
    return value_text.STRING, False, None


class ViewColumn(NamedTuple):
    """What a view column's name declares in the driver's form (docs/classes.md, Views in
    the driver's form)."""

    attribute: str  # the attribute's name, as the schema mapping gives it
    multi_valued: bool
    referenced_key: str | None = None  # fk_: the key column of the class it references


_SINGLE, _MULTI, _REFERENCE = "sv_", "mv_", "fk_"


def view_column(name: str) -> ViewColumn:
    """The attribute a view column declares: ``sv_fname`` single-valued ``fname``,
    ``mv_phoneno`` multi-valued ``phoneno``, ``fk_[sv_|mv_]_<key column>__<name>`` a single-
    or multi-valued reference ``fk_<name>`` to the class keyed by that column; any other
    name (a pk_ key column, a name of no prefix or not of these forms) a single-valued
    attribute of its own name."""
    for prefix, multi in ((_SINGLE, False), (_MULTI, True)):
        if name.startswith(prefix) and len(name) > len(prefix):
            return ViewColumn(name[len(prefix):], multi)
    if name.startswith(_REFERENCE):
        rest, multi = name[len(_REFERENCE):], False
        if rest.startswith((_SINGLE, _MULTI)):
            rest, multi = rest[len(_SINGLE):], rest.startswith(_MULTI)
        key, separator, attribute = rest[1:].partition("__")
        if rest.startswith("_") and key and separator and attribute:
            return ViewColumn(_REFERENCE + attribute, multi, key)
    return ViewColumn(name, False)


@dataclass
class _Reflected:
    """One table or view as the database describes it."""

    columns: list[dict[str, Any]]
    primary_key: list[str]
    foreign_keys: list[dict[str, Any]]
    is_view: bool

    def ordinal(self, name: str) -> int:
        return next(i for i, c in enumerate(self.columns) if c["name"] == name)

    def foreign_key_of(self, name: str) -> dict[str, Any] | None:
        """The foreign key whose only column is ``name``."""
        return next((fk for fk in self.foreign_keys if fk["constrained_columns"] == [name]), None)


def published_catalogue(settings: Settings, db: Database) -> Catalogue:
    """The classes a cycle publishes: the schema's, or the table selection's
    (docs/parameters.md, Table selection), under the column policy (Column policy);
    UnknownTable for a name it cannot select, ConfigError for a bad policy."""
    catalogue = reflect_catalogue(db, settings.schema, settings.log_table, settings.time_syntax)
    catalogue = with_policy(catalogue, settings.column_policy)
    return catalogue.selected(settings.tables) if settings.tables else catalogue


def reflect_catalogue(db: Database, schema: str, log_table: str,
                      time_syntax: int = value_text.TimeSyntax.INTEGER) -> Catalogue:
    """Every class of the schema (docs/classes.md): its tables and views but the event log
    and the tables xdspub keeps beside it (SQLite: of the main database), each with its
    references and child tables; its time columns published under ``time_syntax``
    (docs/parameters.md, Time Syntax)."""
    db_schema = db.dialect.schema_named(schema)
    inspector = sa.inspect(db.engine)
    log_name = log_table.rsplit(".", 1)[-1]
    own = {log_name, lock_table_name(db.dialect, log_name), resync_table_name(db.dialect, log_name)}
    reflected: dict[str, _Reflected] = {}
    for names, is_view in (
        (inspector.get_table_names(schema=db_schema), False),
        (inspector.get_view_names(schema=db_schema), True),
    ):
        for name in names:
            if name in own or name.startswith(_INTERNAL_PREFIX):
                continue
            reflected[name] = _Reflected(
                inspector.get_columns(name, schema=db_schema),
                [] if is_view else inspector.get_pk_constraint(name, schema=db_schema)["constrained_columns"],
                [] if is_view else inspector.get_foreign_keys(name, schema=db_schema),
                is_view,
            )
    shapes = _Shapes(reflected, db_schema, time_syntax)
    children: dict[str, list[MultiValued]] = defaultdict(list)
    child_tables: dict[str, str] = {}
    for name, table in sorted(reflected.items()):  # child tables in name order
        if (owner := shapes.owner(table)) is not None:
            parent, link, linking = owner
            child_tables[name] = parent
            children[parent] += [
                MultiValued(name, link, shapes.column(table, ordinal, c, any_null=True))
                for ordinal, c in enumerate(table.columns, 1)
                if c["name"] not in linking
            ]
    tables = {}
    for name, table in reflected.items():
        if name in child_tables:
            continue
        columns = tuple(
            shapes.column(table, ordinal, c) for ordinal, c in enumerate(table.columns, 1)
        )
        keys = tuple(table.primary_key or [c.name for c in columns if c.name.startswith(VIEW_KEY_PREFIX)])
        own: tuple[MultiValued, ...] = ()
        if table.is_view:
            columns, own = _driver_form(name, columns, keys)
        tables[name] = Table(name, columns, keys, bool(table.primary_key), (*children[name], *own))
    return Catalogue(schema, tables, child_tables)


def _driver_form(view: str, columns: tuple[Column, ...],
                 keys: tuple[str, ...]) -> tuple[tuple[Column, ...], tuple[MultiValued, ...]]:
    """A view's columns as the attributes their names declare (view_column): its single-
    valued ones, and its multi-valued ones read from the view itself by its key;
    ConfigError when two columns declare one attribute."""
    single, multi, declared = [], [], {}
    for column in columns:
        form = view_column(column.name)
        if form.attribute in declared:
            raise ConfigError(
                f"view {view}: columns {declared[form.attribute]} and {column.name} both declare "
                f"the attribute {form.attribute}; rename one"
            )
        declared[form.attribute] = column.name
        if form.attribute != column.name:
            column = replace(column, name=form.attribute, source=column.name)
        if form.referenced_key is not None:
            column = replace(
                column, xds_type=value_text.DN, is_char=False, time_form=None,
                reference=form.referenced_key, reference_by_key=True, binary_reference=column.is_binary,
            )
        if form.multi_valued:
            multi.append(MultiValued(view, keys, column, own=True))
        else:
            single.append(column)
    return tuple(single), tuple(multi)


class _Shapes:
    """What the constraints make of the reflected tables (docs/classes.md, What a class is)."""

    def __init__(self, reflected: dict[str, _Reflected], db_schema: str | None,
                 time_syntax: int) -> None:
        self.reflected, self.db_schema, self.time_syntax = reflected, db_schema, time_syntax

    def _target(self, fk: dict[str, Any]) -> tuple[str, _Reflected | None]:
        """The referenced table's name (qualified when outside the schema) and, when it is
        a table of the schema, its reflection."""
        target, other = fk["referred_table"], fk.get("referred_schema")
        if other not in (None, self.db_schema):
            return f"{other}.{target}", None
        return target, self.reflected.get(target)

    def _is_class_key(self, fk: dict[str, Any], table: _Reflected | None) -> bool:
        return (
            table is not None
            and bool(table.primary_key)
            and sorted(fk["referred_columns"]) == sorted(table.primary_key)
        )

    def owner(self, table: _Reflected) -> tuple[str, tuple[str, ...], set[str]] | None:
        """A child table's parent class, its link columns in the parent's key order, and
        those columns; None when ``table`` is no child table: it has a primary key, a NULL
        column, or no first foreign key to a parent table's primary key."""
        if table.is_view or table.primary_key or not table.foreign_keys:
            return None
        if any(c["nullable"] for c in table.columns):
            return None
        # The first foreign key is the one whose first column comes first (xdspub's choice).
        first = min(table.foreign_keys, key=lambda fk: table.ordinal(fk["constrained_columns"][0]))
        name, parent = self._target(first)
        if not self._is_class_key(first, parent):
            return None
        by_parent = dict(zip(first["referred_columns"], first["constrained_columns"]))
        link = tuple(by_parent[key] for key in parent.primary_key)
        return name, link, set(link)

    def column(self, table: _Reflected, ordinal: int, reflected: dict[str, Any],
               any_null: bool = False) -> Column:
        """A column: a reference when a foreign key of its own names a primary key (a
        parent's column must be nullable; ``any_null`` for a child's), or names a table
        that is not a class (its events are then E)."""
        sql_type = reflected["type"]
        xds_type, is_char, time_form = xds_type_of(sql_type, self.time_syntax)
        own = Column(reflected["name"], ordinal, xds_type, is_char, time_form=time_form, sql_type=sql_type)
        fk = table.foreign_key_of(reflected["name"])
        if fk is None or not (any_null or reflected["nullable"]):
            return own
        name, target = self._target(fk)
        if target is not None and target.primary_key and not self._is_class_key(fk, target):
            return own  # a unique key, no class's
        pairs = tuple(zip(fk["referred_columns"], fk["constrained_columns"]))
        names_row = ForeignKey(name, pairs) if target is not None else None  # another schema's: E
        return Column(
            reflected["name"], ordinal, value_text.DN, False, reference=name, sql_type=sql_type,
            names_row=names_row, binary_reference=own.is_binary,
        )
