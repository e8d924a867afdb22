"""Random xdspub schemas and histories for the property tests (tests/test_properties.py).

An *example* is a JSON-ready dict: ``{"database": ..., "schema": {"classes": [...],
"children": [...]}, "history": [cycle, ...]}``. A cycle is a list of operations, each a
statement on one table with its values in JSON (the column's type decodes them):

    {"op": "insert", "table": T, "values": {column: value}}
    {"op": "update", "table": T, "where": {column: value}, "set": {column: value}}
    {"op": "delete", "table": T, "where": {column: value}}
    {"op": "rollback", "ops": [operation, ...]}   # run in a transaction rolled back

The schema is a valid xdspub schema (docs/classes.md): a class has a primary key; a child
table has no primary key, every column NOT NULL, and its first columns are its first
foreign key, to its parent's whole key (ON DELETE CASCADE, ON UPDATE CASCADE); a
single-valued reference is a nullable column with a foreign key to a class's one-column
key; a multi-valued reference is a child table's column with such a foreign key. A child
table has a unique key over all its columns, or none and two value columns, so that one
value may be held by two of a parent's rows.

The histories keep the foreign keys valid without relying on a cascade from another
class: before a row is deleted or its key changed, the references to it are set to NULL
and the link rows naming it deleted, by statements of their own (MariaDB fires no trigger
for a cascaded action, docs/triggers.md#cascades). Its own child rows go by the cascade."""

from __future__ import annotations

import base64
import copy
import datetime as dt
import unicodedata
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import sqlalchemy as sa
from hypothesis import strategies as st

from publisher.source.identifiers import quoted

# --- types ---------------------------------------------------------------------------------

TEXT_ALPHABET = "abcXYZ019 -_.,;=+'\"\\<>&жЖ漢é"


def _text(max_size: int) -> st.SearchStrategy[str]:
    return st.text(TEXT_ALPHABET, min_size=1, max_size=max_size)


def _numeric_text() -> st.SearchStrategy[str]:
    """Text that looks like a number, and is not the number's own text."""
    return st.one_of(
        st.sampled_from(["007", "1e3", "-0", "1.50", "+1", "0x10", " 12", "1_000", "00"]),
        st.integers(0, 999).map(lambda n: f"0{n}"),
    )


@dataclass(frozen=True)
class ColumnType:
    name: str
    ddl: dict[str, str]  # database -> column type
    values: Callable[[str], st.SearchStrategy[Any]]  # database -> strategy of Python values
    encode: Callable[[Any], Any]  # Python value -> JSON
    decode: Callable[[Any], Any]  # JSON -> Python value
    key_on: tuple[str, ...]  # the databases where the type makes a key or a unique child column


def _same(value: Any) -> Any:
    return value


def _bigint(database: str) -> st.SearchStrategy[int]:
    low, high = (0, 2**64 - 1) if database == "mariadb" else (-(2**63), 2**63 - 1)
    return st.one_of(st.sampled_from([low, high, 0, 1, 2**63 - 1]).filter(lambda n: low <= n <= high),
                     st.integers(low, high))


def _untyped(database: str) -> st.SearchStrategy[Any]:
    return st.one_of(st.integers(-1000, 2**63 - 1), _numeric_text(), _text(8))


MOODS = ("sad", "happy", "calm", "Sad")  # an enum's labels: case counts
ALL = ("postgresql", "mariadb", "sqlite")
SERVERS = ("postgresql", "mariadb")

TYPES: dict[str, ColumnType] = {t.name: t for t in [
    # version 4: MariaDB's UUID refuses some of the others
    ColumnType("uuid", {"postgresql": "UUID", "mariadb": "UUID"}, lambda d: st.uuids(version=4),
               str, uuid.UUID, SERVERS),
    ColumnType("date", {"postgresql": "DATE", "mariadb": "DATE"},
               lambda d: st.dates(dt.date(1900, 1, 1), dt.date(2100, 12, 31)),
               dt.date.isoformat, dt.date.fromisoformat, SERVERS),
    ColumnType("timestamp", {"postgresql": "TIMESTAMP(6)", "mariadb": "DATETIME(6)"},
               lambda d: st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 12, 31)),
               dt.datetime.isoformat, dt.datetime.fromisoformat, SERVERS),
    ColumnType("timestamptz", {"postgresql": "TIMESTAMPTZ"},
               lambda d: st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2100, 12, 31),
                                      timezones=st.just(dt.timezone.utc)),
               dt.datetime.isoformat, dt.datetime.fromisoformat, ("postgresql",)),
    ColumnType("smallint", {"postgresql": "SMALLINT", "mariadb": "SMALLINT"},
               lambda d: st.integers(-(2**15), 2**15 - 1), _same, _same, SERVERS),
    ColumnType("numeric", {"postgresql": "NUMERIC(15,3)", "mariadb": "DECIMAL(15,3)"},
               lambda d: st.decimals(-(10**9), 10**9, places=3, allow_nan=False, allow_infinity=False),
               str, Decimal, SERVERS),
    ColumnType("bigint", {"postgresql": "BIGINT", "mariadb": "BIGINT UNSIGNED", "sqlite": "INTEGER"},
               _bigint, _same, _same, ALL),
    ColumnType("char", {"postgresql": "CHAR(8)", "mariadb": "CHAR(8)"}, lambda d: _text(8),
               _same, _same, SERVERS),
    ColumnType("varchar", {"postgresql": "VARCHAR(40)", "mariadb": "VARCHAR(40)", "sqlite": "VARCHAR(40)"},
               lambda d: _text(12), _same, _same, ALL),
    # TEXT makes no MariaDB key without a prefix length
    ColumnType("text", {"postgresql": "TEXT", "mariadb": "TEXT", "sqlite": "TEXT"}, lambda d: _text(30),
               _same, _same, ("postgresql", "sqlite")),
    ColumnType("boolean", {"postgresql": "BOOLEAN", "mariadb": "BOOLEAN"}, lambda d: st.booleans(),
               _same, _same, SERVERS),
    ColumnType("binary", {"postgresql": "BYTEA", "mariadb": "VARBINARY(16)", "sqlite": "BLOB"},
               lambda d: st.binary(min_size=1, max_size=8),
               lambda b: base64.b64encode(b).decode(), base64.b64decode, ALL),
    # made in the schema public by the test (tests/test_properties.py ExampleDb)
    ColumnType("citext", {"postgresql": "public.citext"}, lambda d: _text(12), _same, _same, ("postgresql",)),
    ColumnType("enum", {"postgresql": "public.xdspub_mood"}, lambda d: st.sampled_from(MOODS), _same, _same,
               ("postgresql",)),
    ColumnType("untyped", {"sqlite": ""}, _untyped, _same, _same, ("sqlite",)),
    ColumnType("numeric_text", {"sqlite": "TEXT"}, lambda d: _numeric_text(), _same, _same, ("sqlite",)),
]}


def types_on(database: str, key: bool = False) -> list[str]:
    return [t.name for t in TYPES.values() if database in t.ddl and (not key or database in t.key_on)]


def same_key(value: Any) -> Any:
    """A value's identity as any of the databases might compare it, or coarser: case,
    accents and trailing blanks aside (MariaDB's default collation), numbers by value."""
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, Decimal):
        return str(value.normalize())
    text = unicodedata.normalize("NFKD", str(value))
    return "".join(c for c in text if not unicodedata.combining(c)).rstrip(" ").casefold()


# --- schemas --------------------------------------------------------------------------------

RESERVED = ["order", "select", "Group", "user", "From", "key", "value", "where", "Desc", "check",
            "Primary", "limit", "column", "index"]
NOT_A_KEY_NAME = {"table", "schema"}  # an association's own names (docs/rendering.md#association)


@st.composite
def names(draw: st.DrawFn, taken: set[str]) -> str:
    """A table or column name not yet in ``taken`` (case aside): reserved, mixed case or long."""
    name = draw(st.one_of(
        st.sampled_from(RESERVED),
        st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,11}", fullmatch=True),
        st.from_regex(r"[A-Za-z][a-z0-9_]{47,55}", fullmatch=True),
    ).filter(lambda n: n.casefold() not in taken and not n.casefold().startswith(("indirect", "sqlite"))
             and n.casefold() not in NOT_A_KEY_NAME))
    taken.add(name.casefold())
    return name


@st.composite
def schemas(draw: st.DrawFn, database: str) -> dict:
    """A schema of one to three classes and up to two child tables (module docstring)."""
    tables: set[str] = set()
    classes: list[dict] = []
    for _ in range(draw(st.integers(1, 3))):
        columns: set[str] = set()
        name = draw(names(tables))
        key = [{"name": draw(names(columns)), "type": draw(st.sampled_from(types_on(database, key=True)))}
               for _ in range(draw(st.integers(1, 2)))]
        values = [{"name": draw(names(columns)), "type": draw(st.sampled_from(types_on(database)))}
                  for _ in range(draw(st.integers(0, 2)))]
        cls = {"name": name, "key": key, "values": values, "references": []}
        classes.append(cls)
        # a reference to an earlier class or to itself, keyed by one column
        targets = [c for c in classes if len(c["key"]) == 1]
        if targets and draw(st.booleans()):
            target = draw(st.sampled_from(targets))
            cls["references"].append({"name": draw(names(columns)), "target": target["name"]})
    children = []
    for _ in range(draw(st.integers(0, 2))):
        parent = draw(st.sampled_from(classes))
        columns = {c["name"].casefold() for c in parent["key"]}
        unique = draw(st.booleans())
        value_types = types_on(database, key=unique)
        values = [{"name": draw(names(columns)), "type": draw(st.sampled_from(value_types))}
                  for _ in range(1 if unique else 2)]
        targets = [c for c in classes if len(c["key"]) == 1]
        link = None
        if targets and draw(st.booleans()):
            link = {"name": draw(names(columns)), "target": draw(st.sampled_from(targets))["name"]}
            if draw(st.booleans()):
                values = []  # a link table alone
        children.append({"name": draw(names(tables)), "parent": parent["name"], "values": values,
                         "link": link, "unique": unique})
    return {"classes": classes, "children": children}


class Schema:
    """An example's schema, read: each table's columns with their types."""

    def __init__(self, schema: dict) -> None:
        self.raw = schema
        self.classes = {c["name"]: c for c in schema["classes"]}
        self.children = {c["name"]: c for c in schema["children"]}

    def key_type(self, class_name: str) -> str:
        (column,) = self.classes[class_name]["key"]
        return column["type"]

    def columns(self, table: str) -> list[tuple[str, str]]:
        """(name, type) of each column of ``table`` in its order."""
        if table in self.classes:
            cls = self.classes[table]
            return ([(c["name"], c["type"]) for c in cls["key"] + cls["values"]]
                    + [(r["name"], self.key_type(r["target"])) for r in cls["references"]])
        child = self.children[table]
        columns = [(c["name"], c["type"]) for c in self.classes[child["parent"]]["key"]]
        columns += [(c["name"], c["type"]) for c in child["values"]]
        if child["link"]:
            columns.append((child["link"]["name"], self.key_type(child["link"]["target"])))
        return columns

    def types(self, table: str) -> dict[str, ColumnType]:
        return {name: TYPES[kind] for name, kind in self.columns(table)}

    def ddl(self, database: str, quote: Callable[[str], str], qualify: Callable[[str], str]) -> list[str]:
        """CREATE TABLE statements, classes first (in their order: a reference names an
        earlier class or its own), then the child tables."""
        statements = []
        constraint = iter(range(1, 1000))

        def column_list(names_: list[str]) -> str:
            return ", ".join(map(quote, names_))

        def foreign_key(columns: list[str], target: dict, actions: str) -> str:
            return (f"CONSTRAINT {quote(f'fk{next(constraint)}')} FOREIGN KEY ({column_list(columns)}) "
                    f"REFERENCES {qualify(target['name'])} ({column_list([c['name'] for c in target['key']])})"
                    f"{actions}")

        def column(name: str, kind: str, null: bool) -> str:
            return f"{quote(name)} {TYPES[kind].ddl[database]}{'' if null else ' NOT NULL'}".replace("  ", " ")

        for cls in self.raw["classes"]:
            parts = [column(c["name"], c["type"], False) for c in cls["key"]]
            parts += [column(c["name"], c["type"], True) for c in cls["values"]]
            parts += [column(r["name"], self.key_type(r["target"]), True) for r in cls["references"]]
            parts.append(f"PRIMARY KEY ({column_list([c['name'] for c in cls['key']])})")
            parts += [foreign_key([r["name"]], self.classes[r["target"]], "") for r in cls["references"]]
            statements.append(f"CREATE TABLE {qualify(cls['name'])} ({', '.join(parts)})")
        for child in self.raw["children"]:
            parent = self.classes[child["parent"]]
            names_ = [name for name, _ in self.columns(child["name"])]
            parts = [column(name, kind, False) for name, kind in self.columns(child["name"])]
            parts.append(foreign_key([c["name"] for c in parent["key"]], parent,
                                     " ON DELETE CASCADE ON UPDATE CASCADE"))
            if child["link"]:
                parts.append(foreign_key([child["link"]["name"]], self.classes[child["link"]["target"]],
                                         " ON DELETE CASCADE"))
            if child["unique"]:
                parts.append(f"CONSTRAINT {quote(f'uq{next(constraint)}')} UNIQUE ({column_list(names_)})")
            statements.append(f"CREATE TABLE {qualify(child['name'])} ({', '.join(parts)})")
        return statements


# --- histories ------------------------------------------------------------------------------


class Model:
    """The rows an example's tables hold, as Python values, to draw valid statements from."""

    def __init__(self, schema: Schema, database: str) -> None:
        self.schema = schema
        self.database = database
        self.rows: dict[str, list[dict[str, Any]]] = {t: [] for t in [*schema.classes, *schema.children]}

    def keys(self, class_name: str) -> list[dict[str, Any]]:
        names_ = [c["name"] for c in self.schema.classes[class_name]["key"]]
        return [{n: row[n] for n in names_} for row in self.rows[class_name]]

    def taken(self, table: str, columns: list[str]) -> set[tuple]:
        return {tuple(same_key(row[c]) for c in columns) for row in self.rows[table]}

    def encode(self, table: str, values: dict[str, Any]) -> dict[str, Any]:
        types = self.schema.types(table)
        return {n: None if v is None else types[n].encode(v) for n, v in values.items()}


def _value(draw: st.DrawFn, database: str, kind: str) -> Any:
    return draw(TYPES[kind].values(database))


def _new_key(draw: st.DrawFn, model: Model, class_name: str, fixed: dict[str, Any] | None = None) -> dict | None:
    """A key no row of the class has (``fixed`` columns kept), or None after a few tries."""
    key_columns = model.schema.classes[class_name]["key"]
    taken = model.taken(class_name, [c["name"] for c in key_columns])
    for _ in range(5):
        key = {c["name"]: (fixed or {}).get(c["name"], _value(draw, model.database, c["type"]))
               for c in key_columns}
        if tuple(same_key(key[c["name"]]) for c in key_columns) not in taken:
            return key
    return None


def _reference(draw: st.DrawFn, model: Model, target: str, own: dict | None = None) -> Any:
    """A key value of ``target`` that exists (``own``: the row being written, which may
    name itself), or None."""
    (column,) = model.schema.classes[target]["key"]
    choices = [k[column["name"]] for k in model.keys(target)] + ([own[column["name"]]] if own else [])
    return draw(st.sampled_from(choices)) if choices else None


def _class_values(draw: st.DrawFn, model: Model, name: str, key: dict, nullable: bool) -> dict:
    cls = model.schema.classes[name]
    values = {}
    for c in cls["values"]:
        values[c["name"]] = None if nullable and draw(st.booleans()) else _value(draw, model.database, c["type"])
    for r in cls["references"]:
        own = key if r["target"] == name else None
        values[r["name"]] = None if draw(st.booleans()) else _reference(draw, model, r["target"], own)
    return values


def _clear_references(model: Model, class_name: str, key: dict, ops: list[dict]) -> None:
    """Statements that set the references to the object ``key`` of ``class_name`` to NULL
    and delete the link rows naming it; the model follows. (References name one-column
    keys only.)"""
    schema = model.schema
    if len(key) != 1:
        return
    (value,) = key.values()
    named = same_key(value)
    for cls in schema.classes.values():
        for r in cls["references"]:
            rows = [row for row in model.rows[cls["name"]]
                    if r["target"] == class_name and row[r["name"]] is not None and same_key(row[r["name"]]) == named]
            if rows:
                ops.append({"op": "update", "table": cls["name"],
                            "where": model.encode(cls["name"], {r["name"]: value}), "set": {r["name"]: None}})
                for row in rows:
                    row[r["name"]] = None
    for child in schema.children.values():
        link = child["link"]
        if link and link["target"] == class_name:
            kept = [row for row in model.rows[child["name"]] if same_key(row[link["name"]]) != named]
            if len(kept) < len(model.rows[child["name"]]):
                ops.append({"op": "delete", "table": child["name"],
                            "where": model.encode(child["name"], {link["name"]: value})})
                model.rows[child["name"]] = kept


def _child_row(draw: st.DrawFn, model: Model, child: dict, parent_key: dict) -> dict | None:
    row = dict(parent_key)
    for c in child["values"]:
        row[c["name"]] = _value(draw, model.database, c["type"])
    if child["link"]:
        value = _reference(draw, model, child["link"]["target"])
        if value is None:
            return None
        row[child["link"]["name"]] = value
    columns = list(row)
    if child["unique"] and tuple(same_key(row[c]) for c in columns) in model.taken(child["name"], columns):
        return None
    return row


@st.composite
def operation(draw: st.DrawFn, model: Model) -> list[dict]:
    """The statements of one change of the model (it follows them): a row inserted,
    updated, re-keyed or deleted, of a class or a child table."""
    schema = model.schema
    ops: list[dict] = []
    kind = draw(st.sampled_from(["insert", "insert", "update", "rekey", "delete", "child", "child", "child"]))
    name = draw(st.sampled_from(sorted(schema.classes)))
    rows = model.rows[name]
    key_names = [c["name"] for c in schema.classes[name]["key"]]
    if kind == "insert" or not rows and kind != "child":
        key = _new_key(draw, model, name)
        if key is not None:
            row = {**key, **_class_values(draw, model, name, key, nullable=True)}
            ops.append({"op": "insert", "table": name, "values": model.encode(name, row)})
            rows.append(row)
    elif kind == "update":
        row = draw(st.sampled_from(rows))
        changes = _class_values(draw, model, name, {n: row[n] for n in key_names}, nullable=True)
        changes = {n: v for n, v in changes.items() if draw(st.booleans())}
        if changes:
            ops.append({"op": "update", "table": name, "where": model.encode(name, {n: row[n] for n in key_names}),
                        "set": model.encode(name, changes)})
            row.update(changes)
    elif kind == "rekey":
        row = draw(st.sampled_from(rows))
        old = {n: row[n] for n in key_names}
        kept = draw(st.sampled_from(key_names))  # a composite key keeps one column
        new = _new_key(draw, model, name, {kept: old[kept]} if len(key_names) > 1 else None)
        if new is not None:
            _clear_references(model, name, old, ops)
            ops.append({"op": "update", "table": name, "where": model.encode(name, old),
                        "set": model.encode(name, {n: new[n] for n in key_names if new[n] != old[n]})})
            for child in schema.children.values():  # ON UPDATE CASCADE
                if child["parent"] == name:
                    for child_row in model.rows[child["name"]]:
                        if all(same_key(child_row[n]) == same_key(old[n]) for n in key_names):
                            child_row.update(new)
            row.update(new)
    elif kind == "delete":
        row = draw(st.sampled_from(rows))
        key = {n: row[n] for n in key_names}
        _clear_references(model, name, key, ops)
        ops.append({"op": "delete", "table": name, "where": model.encode(name, key)})
        rows.remove(row)
        for child in schema.children.values():  # ON DELETE CASCADE
            if child["parent"] == name:
                model.rows[child["name"]] = [r for r in model.rows[child["name"]]
                                             if not all(same_key(r[n]) == same_key(key[n]) for n in key_names)]
    elif schema.children:
        child = schema.children[draw(st.sampled_from(sorted(schema.children)))]
        parent = child["parent"]
        child_rows = model.rows[child["name"]]
        action = draw(st.sampled_from(["insert", "insert", "duplicate", "update", "delete"]))
        if action in ("insert", "duplicate") or not child_rows:
            if not model.rows[parent]:
                return ops
            if action == "duplicate" and child_rows and not child["unique"] and child["values"]:
                # another row of the same parent holding one of a row's values
                source = draw(st.sampled_from(child_rows))
                row = dict(source)
                other = child["values"][-1]["name"]
                row[other] = _value(draw, model.database, child["values"][-1]["type"])
            else:
                row = _child_row(draw, model, child, draw(st.sampled_from(model.keys(parent))))
            if row is not None:
                ops.append({"op": "insert", "table": child["name"], "values": model.encode(child["name"], row)})
                child_rows.append(row)
        elif action == "update" and child["values"]:
            row = draw(st.sampled_from(child_rows))
            column = draw(st.sampled_from(child["values"]))
            changed = {**row, column["name"]: _value(draw, model.database, column["type"])}
            columns = list(row)
            others = [r for r in child_rows if r is not row]
            if not child["unique"] or tuple(same_key(changed[c]) for c in columns) not in {
                    tuple(same_key(r[c]) for c in columns) for r in others}:
                ops.append({"op": "update", "table": child["name"], "where": model.encode(child["name"], row),
                            "set": model.encode(child["name"], {column["name"]: changed[column["name"]]})})
                _matching_rows(model, child["name"], row, lambda r: r.update({column["name"]: changed[column["name"]]}))
        else:
            row = draw(st.sampled_from(child_rows))
            ops.append({"op": "delete", "table": child["name"], "where": model.encode(child["name"], row)})
            model.rows[child["name"]] = [r for r in child_rows if not _same_row(r, row)]
    return ops


def _same_row(a: dict, b: dict) -> bool:
    return all(a[c] == b[c] for c in b)


def _matching_rows(model: Model, table: str, where: dict, change: Callable[[dict], None]) -> None:
    for row in model.rows[table]:
        if _same_row(row, where):
            change(row)


@st.composite
def histories(draw: st.DrawFn, schema: dict, database: str, cycles: tuple[int, int] = (1, 3)) -> list[list[dict]]:
    """Cycles of one to six changes each, some in a transaction rolled back."""
    model = Model(Schema(schema), database)
    history = []
    for _ in range(draw(st.integers(*cycles))):
        cycle: list[dict] = []
        for _ in range(draw(st.integers(1, 6))):
            if draw(st.integers(0, 5)) == 0:
                scratch = copy.deepcopy(model)  # the rolled back changes leave the model as it was
                ops = [op for _ in range(draw(st.integers(1, 3))) for op in draw(operation(scratch))]
                if ops:
                    cycle.append({"op": "rollback", "ops": ops})
            else:
                cycle += draw(operation(model))
        history.append(cycle)
    return history


@st.composite
def examples(draw: st.DrawFn, database: str, cycles: tuple[int, int] = (1, 3)) -> dict:
    schema = draw(schemas(database))
    return {"database": database, "schema": schema, "history": draw(histories(schema, database, cycles))}


# --- running a history ----------------------------------------------------------------------


def statement(engine: sa.Engine, schema: Schema, database: str, op: dict,
              qualify: Callable[[str], str]) -> tuple[str, dict[str, Any]]:
    """``op`` (not a rollback) as SQL with quoted names and bound values."""
    types = schema.types(op["table"])
    binds: dict[str, Any] = {}

    def bind(column: str, value: Any) -> str:
        name = f"p{len(binds)}"
        python = None if value is None else types[column].decode(value)
        if database == "mariadb" and isinstance(python, uuid.UUID):
            python = str(python)
        binds[name] = python
        return f":{name}"

    def q(column: str) -> str:
        return quoted(engine, "column", column)

    table = qualify(op["table"])
    if op["op"] == "insert":
        columns = list(op["values"])
        values = ", ".join(bind(c, op["values"][c]) for c in columns)
        sql = f"INSERT INTO {table} ({', '.join(map(q, columns))}) VALUES ({values})"
    else:
        where = " AND ".join(f"{q(c)} = {bind(c, v)}" for c, v in op["where"].items())
        if op["op"] == "update":
            sets = ", ".join(f"{q(c)} = {bind(c, v)}" for c, v in op["set"].items())
            sql = f"UPDATE {table} SET {sets} WHERE {where}"
        else:
            sql = f"DELETE FROM {table} WHERE {where}"
    return sql, binds


# --- the kept set -----------------------------------------------------------------------------

POOLS: dict[str, list[Any]] = {
    "uuid": [uuid.UUID(int=0), uuid.UUID("123e4567-e89b-12d3-a456-426614174000"),
             uuid.UUID("ffffffff-ffff-ffff-ffff-ffffffffffff"), uuid.UUID("0188e7a4-0000-7000-8000-00000000abcd")],
    "date": [dt.date(1970, 1, 1), dt.date(2024, 2, 29), dt.date(1901, 12, 13), dt.date(2099, 12, 31)],
    "timestamp": [dt.datetime(2024, 2, 29, 12, 34, 56, 123456), dt.datetime(1970, 1, 1),
                  dt.datetime(1969, 12, 31, 23, 59, 59, 500000), dt.datetime(2038, 1, 19, 3, 14, 8)],
    "timestamptz": [dt.datetime(2024, 2, 29, 12, 34, 56, 123456, dt.timezone(dt.timedelta(hours=2))),
                    dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc),
                    dt.datetime(1969, 12, 31, 23, 59, 59, 500000, dt.timezone(dt.timedelta(hours=-5))),
                    dt.datetime(2038, 1, 19, 3, 14, 8, tzinfo=dt.timezone.utc)],
    "smallint": [-(2**15), 2**15 - 1, 0, 7],
    "numeric": [Decimal("0.000"), Decimal("-12.500"), Decimal("123456789.125"), Decimal("100")],
    "bigint": [2**63 - 1, -(2**63), 0, 42],
    "char": ["ab", "AB c", "x,y=z", "é+漢"],
    "varchar": ["abc", "Trailing ", "a,b=c;d", "\"q\"<>&\\"],
    "text": ["a longer text, with = and ;", "x", "漢字 ж", "a=b,c"],
    "boolean": [False, True],
    "binary": [b"\x00\x01", b"\xff\x80", b"abc", b"\x00"],
    "citext": ["abc", "Trailing ", "a,b=c;d", "é+漢"],
    "enum": ["sad", "happy", "calm", "Sad"],
    "untyped": [7, "007", "1e3", "text"],
    "numeric_text": ["007", "1.50", "-0", "00"],
}


def _pool(kind: str, database: str) -> list[Any]:
    if kind == "bigint" and database == "mariadb":
        return [2**64 - 1, 2**63, 0, 42]
    return POOLS[kind]


def typed_example(database: str, kind: str) -> dict:
    """The kept example for the type ``kind`` on ``database``: the type as the key of a
    class (or, where it makes no key, varchar) that a reference, a self-reference, a link
    table and a composite key name, and as a value of a class and of a child table holding
    one value twice; a history that inserts, updates, re-keys and deletes them (a cascade),
    and rolls a transaction back, in three cycles."""
    key = kind if database in TYPES[kind].key_on else "varchar"
    schema = {
        "classes": [
            {"name": "Kind", "key": [{"name": "Key", "type": key}], "values": [{"name": "value", "type": kind}],
             "references": [{"name": "Self", "target": "Kind"}]},
            {"name": "order", "key": [{"name": "id", "type": "bigint"}], "values": [],
             "references": [{"name": "Kind_ref", "target": "Kind"}]},
            {"name": "Pair", "key": [{"name": "a", "type": key}, {"name": "b", "type": "bigint"}],
             "values": [{"name": "c", "type": kind}], "references": []},
        ],
        "children": [
            {"name": "Kind_values", "parent": "Kind", "unique": False, "link": None,
             "values": [{"name": "v", "type": kind}, {"name": "note", "type": "varchar"}]},
            {"name": "order_links", "parent": "order", "unique": True, "values": [],
             "link": {"name": "kind", "target": "Kind"}},
        ],
    }
    model = Model(Schema(schema), database)
    keys, values = _pool(key, database), _pool(kind, database)
    a, b = keys[0], keys[1]
    c = keys[2] if len(keys) > 2 else None
    v = [values[i % len(values)] for i in range(4)]

    def ins(table: str, **row: Any) -> dict:
        return {"op": "insert", "table": table, "values": model.encode(table, row)}

    def upd(table: str, where: dict, **changes: Any) -> dict:
        return {"op": "update", "table": table, "where": model.encode(table, where),
                "set": model.encode(table, changes)}

    def dele(table: str, **where: Any) -> dict:
        return {"op": "delete", "table": table, "where": model.encode(table, where)}

    first = [
        ins("Kind", Key=a, value=v[1], Self=None),
        ins("Kind", Key=b, value=None, Self=a),
        ins("order", id=1, Kind_ref=a),
        ins("order", id=2, Kind_ref=None),  # no value
        ins("Kind_values", Key=a, v=v[0], note="p"),
        ins("Kind_values", Key=a, v=v[0], note="q"),  # v[0] twice for one parent
        ins("Kind_values", Key=a, v=v[1], note="p"),
        ins("order_links", id=1, kind=a),
        ins("order_links", id=1, kind=b),
        ins("Pair", a=a, b=1, c=v[2]),
    ]
    second = [
        upd("Kind", {"Key": a}, value=v[2], Self=a),  # a self-reference
        dele("Kind_values", Key=a, v=v[0], note="p"),  # the parent still holds v[0]
        {"op": "rollback", "ops": [ins("order", id=3, Kind_ref=b), dele("order", id=1)]},
        upd("Pair", {"a": a, "b": 1}, b=2),  # a composite key changed
    ]
    last = b
    if c is not None:
        second += [
            dele("order_links", kind=b),
            upd("Kind", {"Key": b}, Key=c),  # a key change, then references to the new key
            upd("order", {"id": 2}, Kind_ref=c),
            ins("order_links", id=2, kind=c),
        ]
        last = c
    third = [
        upd("Kind", {"Self": a}, Self=None),
        upd("order", {"Kind_ref": a}, Kind_ref=None),
        dele("order_links", kind=a),
        dele("Kind", Key=a),  # its Kind_values rows by the cascade
        upd("Pair", {"a": a, "b": 2}, c=None),
        ins("Kind_values", Key=last, v=v[3], note="r"),
        ins("Kind_values", Key=last, v=v[3], note="s"),
        upd("Kind_values", {"Key": last, "v": v[3], "note": "r"}, v=v[1]),
    ]
    if (database == "mariadb" and key in ("char", "varchar")) or key == "citext":
        # the collation makes 'X' and 'x' one key: the reference names the same object
        third.append(upd("order", {"id": 2}, Kind_ref=last.upper()))
    return {"database": database, "schema": schema, "history": [first, second, third]}
