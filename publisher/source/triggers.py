"""``xdspub triggers`` (docs/triggers.md): publication triggers for the classes of any
schema, made from the reflected catalogue (docs/classes.md), so that the event log gets the
rows the publisher reads: table_name the class, table_key the object's key in the grammar
of docs/table-key.md, already canonical, and column_name the attribute.

Two flavours: ``field`` logs values (types 1, 2, 4; a key change 4 then 5), ``query-back``
asks the publisher to read them (types 5, 6, 4, and 8 for a child table's attributes).

One trigger per table and operation, each one INSERT ... SELECT of its event rows joined by
UNION ALL, every row under its own condition, so that the rows of one change are written in
order by one statement on every database. What differs between databases is data: a
TriggerSql of SQL fragments, and the trigger skeleton sql/<database>/trigger.sql.

``--uninstall`` drops them again (removal_script): the objects of the names they are given."""

from __future__ import annotations

import base64
import itertools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources

import sqlalchemy as sa

from grammar import TableKeyError, parse_table_key
from publisher.errors import ConfigError
from publisher.model import value_text
from publisher.model.catalogue import Catalogue, Column, ForeignKey, MultiValued, Table, UnknownTable
from publisher.model.policy import ColumnPolicy, with_policy
from publisher.settings import Settings
from publisher.source.database import Database, filled
from publisher.source.event_log import EventLog, open_event_log
from publisher.source.identifiers import checked, cut_name, derived_name, sql_quote
from publisher.source.schema import is_bit, reflect_catalogue

FLAVOURS = ("field", "query-back")
_OPERATIONS = ("INSERT", "UPDATE", "DELETE")  # each table's triggers, one per operation
# The event log columns a trigger writes, by their default names (docs/event-log.md).
_WRITTEN = ("table_key", "event_type", "perpetrator", "table_name", "column_name", "old_value", "new_value")


@dataclass(frozen=True)
class TriggerSql:
    """The SQL of the triggers that differs between databases. In a fragment, ``{0}`` and
    ``{1}`` stand for SQL expressions."""

    sql_dir: str  # the skeleton is sql/<sql_dir>/trigger.sql
    concat: tuple[str, str, str]  # what goes before, between and after concatenated parts
    text: str  # a value as text, as query-back reads it (CAST AS TEXT)
    bit_number: str  # a BIT column's value as a number, as query-back reads it (Dialect.bit_number)
    base64: str  # a binary value as Base64 on one line
    rtrim: str  # a CHAR key value without its pad spaces
    distinct: str  # {0} and {1} differ, a NULL differing from any value
    same: str  # the opposite
    special: str  # {0} holds a character the table_key grammar reserves
    blank_ends: str  # {0} starts or ends with a blank (space, tab, CR, LF)
    escape: str  # {0} with \ written \\ and " written \"
    perpetrator: str  # the database user making the change
    from_dual: str  # what a SELECT that has a WHERE and no table needs
    literal_escapes: tuple[tuple[str, str], ...]  # characters escaped in a string literal
    drop: str  # removes trigger {name} (schema-qualified: {qualified}) of {table}
    # The schema's triggers (:schema, None on SQLite: it has one) as (table, trigger,
    # definition) rows, the definition holding the statement as it was written.
    listed: str
    # The schema's functions by name that may be a trigger's, those `drop` removes with it
    # (:schema); None: a trigger has no function of its own.
    functions: str | None = None
    # The database cuts a name longer than its limit instead of refusing it: an earlier
    # xdspub's triggers of a long table name may exist under the cut name, to be dropped.
    cuts_long_names: bool = False

    def join(self, *parts: str) -> str:
        before, between, after = self.concat
        return before + between.join(parts) + after

    def literal(self, text: str) -> str:
        for character, escaped in self.literal_escapes:
            text = text.replace(character, escaped)
        return f"'{text}'"

    def quoted(self, text: str) -> str:
        """A key value's text as the grammar writes it: in double quotes, escaped, when it
        is empty, holds a special character or starts or ends with a blank; else as is."""
        needs = f"{text} = '' OR {self.special.format(text)} OR {self.blank_ends.format(text)}"
        quoted = self.join("'\"'", self.escape.format(text), "'\"'")
        return f"CASE WHEN {needs}\n            THEN {quoted} ELSE {text} END"


SQLITE = TriggerSql(
    sql_dir="sqlite",
    concat=("", " || ", ""),
    text="CAST({0} AS TEXT)",
    bit_number="{0}",
    base64="base64({0})",  # registered on each xdspub connection (dialects.py)
    rtrim="rtrim({0})",
    distinct="{0} IS NOT {1}",
    same="{0} IS {1}",
    special="{0} GLOB '*[,;''+\"=\\<>]*'",
    blank_ends="length(trim({0}, char(32, 9, 10, 13))) <> length({0})",
    escape="replace(replace({0}, '\\', '\\\\'), '\"', '\\\"')",
    perpetrator="NULL",  # SQLite has no users
    from_dual="",
    literal_escapes=(("'", "''"),),
    drop="DROP TRIGGER IF EXISTS {name};",
    listed="SELECT tbl_name, name, sql FROM sqlite_master WHERE type = 'trigger'",
)

POSTGRESQL = TriggerSql(
    sql_dir="postgresql",
    concat=("", " || ", ""),
    text="CAST({0} AS TEXT)",
    bit_number="{0}",
    base64="translate(encode({0}, 'base64'), E'\\n', '')",
    rtrim="rtrim({0})",
    distinct="{0} IS DISTINCT FROM {1}",
    same="{0} IS NOT DISTINCT FROM {1}",
    special="{0} ~ '[,;''+\"=\\\\<>]'",
    blank_ends="{0} ~ '^[ \\t\\r\\n]|[ \\t\\r\\n]$'",
    escape="replace(replace({0}, '\\', '\\\\'), '\"', '\\\"')",
    perpetrator="session_user",
    from_dual="",
    literal_escapes=(("'", "''"),),
    drop="DROP TRIGGER IF EXISTS {name} ON {table};\nDROP FUNCTION IF EXISTS {qualified}();",
    listed=(
        "SELECT c.relname, t.tgname, p.prosrc FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid"
        " JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_proc p ON p.oid = t.tgfoid"
        " WHERE n.nspname = :schema AND NOT t.tgisinternal"
    ),
    functions=(  # as the skeleton makes them: no argument, returning trigger
        "SELECT p.proname FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
        " WHERE n.nspname = :schema AND p.pronargs = 0 AND p.prorettype = CAST('trigger' AS regtype)"
    ),
    cuts_long_names=True,
)

MARIADB = TriggerSql(
    sql_dir="mariadb",
    concat=("CONCAT(", ", ", ")"),
    text="CAST({0} AS CHAR CHARACTER SET utf8mb4)",
    bit_number="({0} + 0)",
    base64="REPLACE(TO_BASE64({0}), '\\n', '')",
    rtrim="RTRIM({0})",
    # BINARY: a change of case or of trailing spaces is a change, whatever the collation.
    distinct="NOT (BINARY {0} <=> BINARY {1})",
    same="BINARY {0} <=> BINARY {1}",
    special="{0} REGEXP '[,;''+\"=<>\\\\\\\\]'",
    blank_ends="{0} REGEXP '^[ \\t\\r\\n]|[ \\t\\r\\n]$'",
    escape="REPLACE(REPLACE({0}, '\\\\', '\\\\\\\\'), '\"', '\\\\\"')",
    perpetrator="SUBSTRING_INDEX(USER(), '@', 1)",
    from_dual=" FROM DUAL",
    literal_escapes=(("\\", "\\\\"), ("'", "''")),
    drop="DROP TRIGGER IF EXISTS {qualified};",
    # BINARY: information_schema compares names regardless of case.
    listed=(
        "SELECT event_object_table, trigger_name, action_statement FROM information_schema.triggers"
        " WHERE BINARY event_object_schema = :schema"
    ),
)

TRIGGER_SQL = {t.sql_dir: t for t in (SQLITE, POSTGRESQL, MARIADB)}


@dataclass(frozen=True)
class _Event:
    """One event row a trigger may log: the object's key from the OLD or the NEW row."""

    side: str  # OLD or NEW
    event_type: int
    column_name: str | None = None
    old_value: str | None = None  # SQL expressions
    new_value: str | None = None
    when: tuple[str, ...] = ()  # conditions, all of which must hold


@dataclass(frozen=True)
class _Trigger:
    table: str  # the table it is on
    operation: str  # INSERT, UPDATE or DELETE
    comment: str
    events: tuple[_Event, ...]
    owner: Table  # the class whose objects the events are about
    link: tuple[str, ...] | None = None  # a child table's columns holding the owner's key


@dataclass(frozen=True)
class TriggerScript:
    ddl: str
    # One line for each foreign key of the tables without an index that leads with its
    # columns: every delete (or key change) of a referenced row scans the table for it.
    unindexed: list[str]
    # One line for each child table where a parent may hold one value twice: no primary or
    # unique key over its link and value columns.
    duplicable: list[str]


def trigger_script(db: Database, schema: str, log_table: str, tables: Sequence[str] | None,
                   flavour: str, selection: Sequence[str] = (),
                   excluded: Sequence[str] = ()) -> TriggerScript:
    """The DDL of the publication triggers of the classes ``selection`` with their child
    tables and of ``tables`` alone (neither: every table that is a class or a child
    table), in ``flavour``, logging none of the ``excluded`` columns (TABLE.COLUMN,
    docs/parameters.md, Column policy). UnsafeName for a name holding a control
    character, UnknownTable for a name that takes no triggers, ConfigError for a bad
    exclusion."""
    if flavour not in FLAVOURS:
        raise ConfigError(f"unknown trigger flavour {flavour!r} (field or query-back)")
    checked("--schema", schema)
    catalogue = with_policy(reflect_catalogue(db, schema, log_table), ColumnPolicy(excluded))
    log = open_event_log(db, Settings(None, schema=schema, log_table=log_table))
    db_schema = db.dialect.schema_named(schema)
    inspector = sa.inspect(db.engine)
    views = set(inspector.get_view_names(schema=db_schema))
    writer = _Writer(db, catalogue, db_schema, log, flavour)
    names = _chosen(catalogue, views, tables, selection)
    header = (
        f"-- Publication triggers ({flavour} flavour) written by `xdspub triggers` "
        f"(docs/triggers.md).\n-- Event log: {writer.log_table}.\n"
    )
    duplicable = _duplicable(inspector, db_schema, catalogue, names, writer.quote)
    scripts = [header + "".join(f"-- Warning: {line}\n" for line in duplicable)]
    for name in names:
        scripts += [writer.ddl(trigger) for trigger in writer.triggers(name)]
    unindexed = _unindexed(inspector, db_schema, names, writer.quote)
    return TriggerScript("\n".join(scripts), unindexed, duplicable)


@dataclass(frozen=True)
class Removal:
    ddl: str  # drops each object of ``removed``
    removed: list[str]  # one line for each trigger and function found, quoted as in the DDL


def removal_script(db: Database, schema: str, log_table: str, tables: Sequence[str] | None,
                   selection: Sequence[str] = ()) -> Removal:
    """The DDL that drops the publication triggers (and on PostgreSQL their functions)
    `trigger_script` makes for the same tables, of those that exist: each recognised by
    the name xdspub gives it on its table (the cut name of an earlier xdspub's too), so
    that another trigger of the table stays. UnsafeName, UnknownTable as trigger_script."""
    checked("--schema", schema)
    db_schema = db.dialect.schema_named(schema)
    views = set(sa.inspect(db.engine).get_view_names(schema=db_schema))
    chosen = _chosen(reflect_catalogue(db, schema, log_table), views, tables, selection)
    names = _Names(db, db_schema)
    where = {"schema": db_schema}
    with db.engine.connect() as conn:
        triggers = {(table, name) for table, name, _ in conn.execute(sa.text(names.sql.listed), where)}
        functions = set()
        if names.sql.functions is not None:
            functions = set(conn.execute(sa.text(names.sql.functions), where).scalars())
    drops, removed = [], []
    made = (
        (table, name) for table, operation in itertools.product(chosen, _OPERATIONS)
        for name in names.trigger_names(checked("table", table), operation)
    )
    for table, name in dict.fromkeys(made):  # the cut names of a table's three may be one
        found = [f"trigger {names.quote(name)} on {names.qualified(table)}"] if (table, name) in triggers else []
        if name in functions:
            found.append(f"function {names.qualified(name)}()")
        if found:
            drops.append(names.drop(name, table))
            removed += found
    return Removal("\n".join(drops), removed)


def table_columns(inspector: sa.Inspector, db_schema: str | None, table: str) -> list[list[str]]:
    """``table``'s columns as a trigger is written for them: [name, type] each."""
    return [[c["name"], str(c["type"])] for c in inspector.get_columns(table, schema=db_schema)]


def _columns_marker(columns: list[list[str]]) -> str:
    """The columns a trigger was written for, in its statement (a comment, base64: no name
    can end it), for ``xdspub status`` to compare with the table's columns now."""
    return f"/* xdspub-columns: {base64.b64encode(json.dumps(columns).encode()).decode()} */"


_MARKER = re.compile(r"/\* xdspub-columns: ([A-Za-z0-9+/=]*) \*/")


def trigger_status(db: Database, schema: str, log_table: str) -> list[dict]:
    """For each table that takes triggers (a class's, a child table): which of the
    triggers xdspub gives it exist, and whether they were written for the columns the
    table has now (docs/triggers.md, Status): ``added`` and ``gone`` columns (a gone
    one makes the table's changes fail), ``changed`` types; ``unknown``: written by an
    xdspub that did not note them."""
    db_schema = db.dialect.schema_named(schema)
    inspector = sa.inspect(db.engine)
    views = set(inspector.get_view_names(schema=db_schema))
    names = _Names(db, db_schema)
    with db.engine.connect() as conn:
        found = {(t, n): d for t, n, d in conn.execute(sa.text(names.sql.listed), {"schema": db_schema})}
    status = []
    for table in _chosen(reflect_catalogue(db, schema, log_table), views, None, ()):
        now = dict(map(tuple, table_columns(inspector, db_schema, table)))
        entry: dict = {"table": table, "triggers": [], "added": set(), "gone": set(), "changed": set(),
                       "unknown": False}
        for operation in _OPERATIONS:
            definition = next((found[(table, n)] for n in names.trigger_names(table, operation)
                               if (table, n) in found), None)
            if definition is None:
                continue
            entry["triggers"].append(operation)
            marker = _MARKER.search(definition or "")
            if marker is None:
                entry["unknown"] = True
                continue
            then = dict(map(tuple, json.loads(base64.b64decode(marker.group(1)))))
            entry["added"] |= now.keys() - then.keys()
            entry["gone"] |= then.keys() - now.keys()
            entry["changed"] |= {c for c in now.keys() & then.keys() if now[c] != then[c]}
        status.append({**entry, **{k: sorted(entry[k]) for k in ("added", "gone", "changed")}})
    return status


def _chosen(catalogue: Catalogue, views: set[str], tables: Sequence[str] | None,
            selection: Sequence[str]) -> list[str]:
    """The tables to give triggers: the classes of ``selection`` (--tables) with their child
    tables, and ``tables`` (--table), each a keyed class table or a child table; without
    either, every one of them."""
    if tables is None and not selection:
        keyed = [n for n, t in catalogue.tables.items() if n not in views and t.key_columns]
        return keyed + list(catalogue.child_tables)
    for option, names in (("--tables", selection), ("--table", tables or ())):
        for name in names:
            if name in views:
                raise UnknownTable(f"{option} {name}: a view takes no triggers; give its tables")
            catalogue.check_class(name, option)
    picked = catalogue.selected(selection)  # a child table alone is --table's
    return list(dict.fromkeys([*picked.tables, *picked.child_tables, *(tables or ())]))


def _unindexed(inspector: sa.Inspector, db_schema: str | None, tables: Sequence[str],
               quote: Callable[[str], str]) -> list[str]:
    """The foreign keys of ``tables`` that no index (primary key and unique constraints
    included) leads with."""
    found = []
    for table in tables:
        leads = [inspector.get_pk_constraint(table, schema=db_schema)["constrained_columns"]]
        leads += [i["column_names"] for i in inspector.get_indexes(table, schema=db_schema)]
        leads += [u["column_names"] for u in inspector.get_unique_constraints(table, schema=db_schema)]
        for fk in inspector.get_foreign_keys(table, schema=db_schema):
            columns = fk["constrained_columns"]
            if any(set(lead[: len(columns)]) == set(columns) for lead in leads):
                continue
            shown = ", ".join(map(quote, columns))
            found.append(
                f"table {quote(table)}: no index leads with its reference column(s) {shown} (to "
                f"{quote(fk['referred_table'])}), so each delete or key change there reads the whole "
                f"of {quote(table)}; CREATE INDEX ... ON {quote(table)} ({shown})"
            )
    return found


def _duplicable(inspector: sa.Inspector, db_schema: str | None, catalogue: Catalogue,
                tables: Sequence[str], quote: Callable[[str], str]) -> list[str]:
    """The child tables among ``tables`` where two rows may give one parent the same value:
    for one of its attributes, no primary key or unique key (constraint or index) lies
    within the link columns and the attribute's column."""
    found = []
    for table in tables:
        parent = catalogue.child_tables.get(table)
        if parent is None:
            continue
        keys = [inspector.get_pk_constraint(table, schema=db_schema)["constrained_columns"]]
        keys += [u["column_names"] for u in inspector.get_unique_constraints(table, schema=db_schema)]
        keys += [i["column_names"] for i in inspector.get_indexes(table, schema=db_schema) if i["unique"]]
        for m in catalogue.tables[parent].multi_valued:
            columns = {*m.link, m.column.name}
            if m.child_table != table or any(k and set(k) <= columns for k in keys):
                continue
            found.append(
                f"child table {quote(table)}: no primary or unique key over its columns "
                f"({', '.join(map(quote, [*m.link, m.column.name]))}), so one {quote(parent)} may "
                f"hold a value of {m.name} in two rows; the triggers log its removal only when "
                "no row holds it any more (docs/triggers.md)"
            )
    return found


class _Names:
    """The names of the triggers (and functions) xdspub gives the tables of one schema
    (docs/triggers.md, Names), quoted, and the SQL that drops them."""

    def __init__(self, db: Database, db_schema: str | None) -> None:
        self.sql = TRIGGER_SQL[db.dialect.sql_dir]
        self.quote = sql_quote(db.engine)
        self.name_limit = db.dialect.identifier_bytes
        self.db_schema = db_schema

    def qualified(self, name: str, schema: str | None = None) -> str:
        schema = schema if schema is not None else self.db_schema
        return f"{self.quote(schema)}.{self.quote(name)}" if schema else self.quote(name)

    def trigger_names(self, table: str, operation: str) -> list[str]:
        """The name of ``table``'s trigger of ``operation`` (INSERT, UPDATE, DELETE), then
        the one an earlier xdspub's took where the database cut its name."""
        suffix = f"_log_{operation.lower()}"
        name = derived_name(table, suffix, self.name_limit)
        if name == table + suffix or not self.sql.cuts_long_names:
            return [name]
        return [name, cut_name(table + suffix, self.name_limit)]

    def fields(self, name: str, table: str) -> dict[str, str]:
        return {"name": self.quote(name), "qualified": self.qualified(name), "table": self.qualified(table)}

    def drop(self, name: str, table: str) -> str:
        return self.sql.drop.format(**self.fields(name, table))


class _Writer(_Names):
    """The triggers of one schema, flavour and database."""

    def __init__(self, db: Database, catalogue: Catalogue, db_schema: str | None, log: EventLog,
                 flavour: str) -> None:
        super().__init__(db, db_schema)
        self.inspector = sa.inspect(db.engine)
        self.text = value_text_sql(db)
        self.skeleton = (resources.files("sql") / db.dialect.sql_dir / "trigger.sql").read_text("utf-8")
        self.catalogue, self.flavour = catalogue, flavour
        self.collated = db.dialect.collated
        self.equals = _collated_equality(db, self.quote)
        log_schema = db.dialect.schema_named(log.table.schema)
        checked("event log", log.table.name)
        for role in _WRITTEN:
            checked(f"event log {log.table.name!r}, column", log.by_role[role])
        self.log_table = self.qualified(log.table.name, log_schema)
        self.log_columns = ", ".join(self.quote(log.by_role[c]) for c in _WRITTEN)

    # -- the events of each operation

    def triggers(self, name: str) -> list[_Trigger]:
        parent = self.catalogue.child_tables.get(name)
        if parent is None:
            table = self.catalogue.tables[name]
            _check_names(name, [c.name for c in table.columns])
            return self._parent(table)
        table = self.catalogue.tables[parent]
        attributes = [m for m in table.multi_valued if m.child_table == name]
        _check_names(parent, table.key_columns)
        for m in attributes:
            _check_names(name, [*m.link, m.column.name])
        return self._child(name, table, attributes)

    def _parent(self, table: Table) -> list[_Trigger]:
        values = [c for c in table.columns if c.name not in table.key_columns]
        pairs = [(k, k) for k in table.key_columns]
        moved = (self._moved(pairs),)
        rekey = (_Event("OLD", 4, when=moved), _Event("NEW", 5, when=moved))
        if self.flavour == "field":
            inserted = tuple(
                _Event("NEW", 1, c.name, None, self._value(c, "NEW"), (self._not_null(c),))
                for c in values
            )
            # A row with no value to log is still announced (docs/triggers.md, field).
            announced = values[0].name if values else table.key_columns[0]
            inserted += (_Event("NEW", 1, announced, when=tuple(self._null(c) for c in values)),)
            updated = rekey + tuple(
                _Event("NEW", 2, c.name, self._value(c, "OLD"), self._value(c, "NEW"),
                       (self._kept(pairs), self._changed(c)))
                for c in values
            )
            said = (
                "type 1 for each non-NULL column; none: one type 1 with no value",
                "type 2 for each changed column; a new key: 4, then 5",
            )
        else:
            inserted = (_Event("NEW", 5),)
            updated = rekey + self._queried_back(table, values, pairs)
            said = ("type 5", "type 6; a new key: 4, then 5")
        shown = self.quote(table.name)
        return [
            _Trigger(table.name, "INSERT", f"{shown}, inserted rows: {said[0]}", inserted, table),
            _Trigger(table.name, "UPDATE", f"{shown}, updated rows: {said[1]}", updated, table),
            _Trigger(table.name, "DELETE", f"{shown}, deleted rows: type 4", (_Event("OLD", 4),), table),
        ]

    def _queried_back(self, table: Table, values: list[Column],
                      pairs: Sequence[tuple[str, str]]) -> tuple[_Event, ...]:
        """The type 6 of an update that keeps the key; with excluded columns, only when a
        column still published changed (none: no type 6), so that a change of an
        excluded column alone logs nothing."""
        kept = self._kept(pairs)
        if not any(t == table.name for t, _ in self.catalogue.excluded):
            return (_Event("NEW", 6, when=(kept,)),)
        if not values:
            return ()
        changed = " OR ".join(self._changed(c) for c in values)
        return (_Event("NEW", 6, when=(kept, f"({changed})")),)

    def _child(self, name: str, parent: Table, attributes: list[MultiValued]) -> list[_Trigger]:
        """A child table's rows are values of its parent's attributes ``child.column``."""
        link = attributes[0].link if attributes else ()
        pairs = list(zip(parent.key_columns, link))
        old_parent, new_parent = (self._parent_exists(parent, pairs, side) for side in ("OLD", "NEW"))
        moved, kept = self._moved(pairs), self._kept(pairs)

        def each(side: str, event_type: int, *when: str, old: bool = False, new: bool = False,
                 changed: bool = False, held: bool | None = None) -> tuple[_Event, ...]:
            """One event per attribute: with its old and new values as asked, logged when
            ``when`` holds (with ``changed``, its value changed; with ``held``, whether
            another row of the table still holds the old value for the old parent)."""
            return tuple(
                _Event(
                    side, event_type, m.name,
                    self._value(m.column, "OLD") if old else None,
                    self._value(m.column, "NEW") if new else None,
                    (
                        *when,
                        *((self._changed(m.column),) if changed else ()),
                        *(() if held is None else (self._held(name, parent, link, m.column, held),)),
                    ),
                )
                for m in attributes
            )

        if self.flavour == "field":
            # A value another row still holds for the parent stays the parent's: its removal
            # is logged with the last row that held it (docs/triggers.md, field).
            inserted = each("NEW", 1, new_parent, new=True)
            deleted = each("OLD", 2, old_parent, old=True, held=False)
            updated = (
                each("OLD", 2, kept, old_parent, old=True, new=True, changed=True, held=False)
                + each("NEW", 1, kept, new_parent, new=True, changed=True, held=True)
                + each("OLD", 2, moved, old_parent, old=True, held=False)
                + each("NEW", 1, moved, new_parent, new=True)
            )
            said = ("type 1", "type 2 old -> new; to another parent: type 2 old -> NULL, then type 1; "
                    "an old value another row still holds: type 1 new alone, no type 2",
                    "type 2 old -> NULL, unless another row still holds the value")
        else:
            inserted = each("NEW", 8, new_parent)
            deleted = each("OLD", 8, old_parent)
            updated = (
                each("OLD", 8, kept, old_parent, changed=True)
                + each("OLD", 8, moved, old_parent)
                + each("NEW", 8, moved, new_parent)
            )
            said = ("type 8", "type 8 for each parent", "type 8")
        child, owner = self.quote(name), self.quote(parent.name)
        whose = f"{child}, values of {owner}'s attributes, logged while their {owner} row exists"
        return [
            _Trigger(name, "INSERT", f"{whose}; inserted rows: {said[0]}", inserted, parent, link),
            _Trigger(name, "UPDATE", f"{whose}; updated rows: {said[1]}", updated, parent, link),
            _Trigger(name, "DELETE", f"{whose}; deleted rows: {said[2]}", deleted, parent, link),
        ]

    def _moved(self, pairs: Sequence[tuple[str, str]]) -> str:
        """The row's key (a child's link) changed."""
        moved = [self.sql.distinct.format(self._col("OLD", c), self._col("NEW", c)) for _, c in pairs]
        return moved[0] if len(moved) == 1 else f"({' OR '.join(moved)})"

    def _kept(self, pairs: Sequence[tuple[str, str]]) -> str:
        return " AND ".join(self.sql.same.format(self._col("OLD", c), self._col("NEW", c)) for _, c in pairs)

    def _not_null(self, column: Column) -> str:
        return f"{self._col('NEW', column.name)} IS NOT NULL"

    def _null(self, column: Column) -> str:
        return f"{self._col('NEW', column.name)} IS NULL"

    def _changed(self, column: Column) -> str:
        """The column's logged value changed."""
        return self.sql.distinct.format(self._value(column, "OLD"), self._value(column, "NEW"))

    def _held(self, child: str, parent: Table, link: Sequence[str], column: Column, held: bool) -> str:
        """Another row of ``child`` with the OLD row's link holds its old value of
        ``column`` (``held`` False: none does). In an AFTER trigger the table no longer
        holds the OLD row as it was."""
        match = [self._match(list(zip(link, link)), "o", "OLD", self._key_types(parent))]
        match.append(self.sql.same.format(self._value(column, "o"), self._value(column, "OLD")))
        found = f"EXISTS (SELECT 1 FROM {self.qualified(child)} AS o WHERE {' AND '.join(match)})"
        return found if held else f"NOT {found}"

    def _parent_exists(self, parent: Table, pairs: Sequence[tuple[str, str]], side: str) -> str:
        match = self._match(pairs, "p", side, self._key_types(parent))
        return f"EXISTS (SELECT 1 FROM {self.qualified(parent.name)} AS p WHERE {match})"

    def _match(self, pairs: Sequence[tuple[str, str]], alias: str, side: str,
               types: Sequence[object]) -> str:
        """``alias``'s columns equal the ``side`` row's, each pair (alias's, side's) compared
        as its type (``types``) compares: a collated key by the type's own equality
        (_collated_equality)."""
        return " AND ".join(
            f"{alias}.{self.quote(a)} {self._equals(t)} {self._col(side, b)}" for (a, b), t in zip(pairs, types)
        )

    @staticmethod
    def _key_types(table: Table) -> list[object]:
        return [table.column(k).sql_type for k in table.key_columns]

    def _equals(self, sql_type: object) -> str:
        return self.equals if self.collated(sql_type) else "="

    # -- SQL expressions

    def _col(self, side: str, name: str) -> str:
        return f"{side}.{self.quote(name)}"

    def _value(self, column: Column, side: str) -> str:
        """A column's value as the event log holds it: binary in Base64 (a reference to a
        binary key too: its key text), the rest as text (a reference: the referenced key's
        value, as the row it names holds it where the key's text collates, _named). Never
        the database's text of bytes: MariaDB refuses to cast bytes that are not UTF-8,
        which would fail the application's own statement."""
        value = self._col(side, column.name)
        if column.is_binary:
            return self.sql.base64.format(value)
        named = column.names_row
        if named is None or not self.collated(column.sql_type):
            return self.text(column, value)
        key = f"p.{self.quote(named.key_named_by(column.name))}"
        return self.text(column, self._named(named, [column.sql_type], side, key, value))

    def _named(self, named: ForeignKey, types: Sequence[object], side: str, selected: str,
               otherwise: str) -> str:
        """``selected`` of the row that the ``side`` row names (as ``p``; ``types``: its key
        columns'), or ``otherwise`` when it names none: where a key's text collates, 'abc'
        names the row of 'ABC', and the reference is published as the key that row holds
        (docs/rendering.md, Key text)."""
        match = self._match(named.pairs, "p", side, types)
        found = f"(SELECT {selected} FROM {self.qualified(named.table)} AS p WHERE {match})"
        return f"COALESCE({found}, {otherwise})"

    # -- DDL

    def ddl(self, trigger: _Trigger) -> str:
        name, *earlier = self.trigger_names(trigger.table, trigger.operation)
        # What an earlier xdspub made under the name the database cut.
        script = "".join(self.drop(cut, trigger.table) + "\n" for cut in earlier)
        if not trigger.events:
            none = f"-- {trigger.comment}; no column to log, so no trigger\n"
            return script + none + self.drop(name, trigger.table) + "\n"
        statement = self._statement(trigger)
        return script + filled(
            self.skeleton,
            {
                **self.fields(name, trigger.table),
                "event": trigger.operation,
                "comment": trigger.comment,
                "statement": statement,
                "body_quote": _dollar_quote(statement),
            },
        )

    def _key(self, trigger: _Trigger, side: str) -> str:
        """The table_key of the trigger's object; a child row's parent as the parent row
        holds its key, where that key's text collates (_named)."""
        owner = trigger.owner
        own = table_key_sql(self.sql, self.quote, self.text, owner, side, trigger.link)
        if not trigger.link or not any(self.collated(owner.column(k).sql_type) for k in owner.key_columns):
            return own
        parent = table_key_sql(self.sql, self.quote, self.text, owner, "p")
        named = ForeignKey(owner.name, tuple(zip(owner.key_columns, trigger.link)))
        return self._named(named, self._key_types(owner), side, parent, own)

    def _statement(self, trigger: _Trigger) -> str:
        keys = {side: self._key(trigger, side) for side in ("OLD", "NEW")}
        rows = []
        for event in trigger.events:
            values = ", ".join(
                [
                    keys[event.side],
                    str(event.event_type),
                    self.sql.perpetrator,
                    self.sql.literal(trigger.owner.name),
                    self.sql.literal(event.column_name) if event.column_name else "NULL",
                    event.old_value or "NULL",
                    event.new_value or "NULL",
                ]
            )
            where = ""
            if event.when:
                where = f"{self.sql.from_dual}\n        WHERE " + "\n        AND ".join(event.when)
            rows.append(f"    SELECT {values}{where}")
        marker = _columns_marker(table_columns(self.inspector, self.db_schema, trigger.table))
        return (
            f"    INSERT {marker} INTO {self.log_table}\n        ({self.log_columns})\n"
            + "\n    UNION ALL\n".join(rows)
        )


def _collated_equality(db: Database, quote: Callable[[str], str]) -> str:
    """The operator a trigger compares collated keys with (Dialect.collated_equality_schema)."""
    if db.dialect.collated_equality_schema is None:
        return "="
    with db.engine.connect() as conn:
        schema = conn.execute(sa.text(db.dialect.collated_equality_schema)).scalar()
    return "=" if schema is None else f"OPERATOR({quote(schema)}.=)"


def value_text_sql(db: Database) -> Callable[[Column, str], str]:
    """A column's value, an SQL expression, as text as query-back reads it
    (source/query_back.py current_select): a BIT as its number, a zoned time in UTC
    (Dialect.utc_text), the rest CAST AS TEXT."""
    sql = TRIGGER_SQL[db.dialect.sql_dir]

    def text(column: Column, value: str) -> str:
        if db.dialect.zoned(column.sql_type):
            utc = db.dialect.utc_text(sa.literal_column(value))
            return str(utc.compile(db.engine, compile_kwargs={"literal_binds": True}))
        return sql.text.format(sql.bit_number.format(value) if is_bit(column.sql_type) else value)

    return text


def table_key_sql(sql: TriggerSql, quote: Callable[[str], str],
                  text_of: Callable[[Column, str], str], table: Table, row: str,
                  link: Sequence[str] | None = None) -> str:
    """The table_key of ``table``'s object as an SQL expression over ``row`` (a trigger's
    OLD or NEW, or a query's alias), canonical (docs/table-key.md, Canonical form):
    ``col=value`` pairs in its key order joined by ``+``, read from the ``link`` columns of
    a child row; ``text_of`` (value_text_sql) writes a value as text."""
    parts = []
    for i, (key, source) in enumerate(zip(table.key_columns, link or table.key_columns)):
        _check_key_name(table.name, key)
        column = table.column(key)
        parts.append(sql.literal(("+" if i else "") + key + "="))
        expression = f"{row}.{quote(source)}"
        if column.xds_type == value_text.INT:
            parts.append(expression)  # a concatenation writes an integer plain
            continue
        if column.xds_type == value_text.STATE:  # as key_text writes it, whatever the database's
            parts.append(f"CASE WHEN {expression} THEN 'true' ELSE 'false' END")
            continue
        text = sql.base64.format(expression) if column.is_binary else text_of(column, expression)
        parts.append(sql.quoted(sql.rtrim.format(text) if column.is_char else text))
    return sql.join(*parts)


def _check_key_name(table: str, column: str) -> None:
    """A key column's name must be one the table_key grammar can write."""
    try:
        if parse_table_key(f"{column}=0") == [(column, "0")]:
            return
    except TableKeyError:
        pass
    raise ConfigError(
        f"table {table}: key column {column!r} cannot be written in a table_key "
        "(its name holds a blank or one of , ; ' + \" = \\ < >)"
    )


def _check_names(table: str, columns: Sequence[str]) -> None:
    """UnsafeName for a table or column name that holds a control character."""
    checked("table", table)
    for column in columns:
        checked(f"table {table!r}, column", column)


def _dollar_quote(body: str) -> str:
    """A PostgreSQL dollar quote that ``body`` does not hold, which may hold any name."""
    tag = "$fn$"
    while tag in body:
        tag = f"${tag.strip('$')}_$"
    return tag
