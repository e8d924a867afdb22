"""Column policy (docs/parameters.md, Column policy): columns excluded from everything
xdspub reads, publishes and logs, and columns published as a keyed hash of their value.

The policy is applied to the catalogue once, as the published schema is reflected: an
excluded column leaves its table (so no read names it, no trigger logs it, no document
carries it), and a hashed column carries the key (Column.hash_key), so that every path
that renders one of its values (``column_text``) renders its hash."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence
from dataclasses import dataclass, replace

from publisher.errors import ConfigError
from publisher.model.catalogue import Catalogue, Column, Table
from publisher.model.value_text import InvalidValue, xds_text

# What an error about a hashed column's value says instead of the value.
HIDDEN_VALUE = "(value of a hashed column)"


@dataclass(frozen=True)
class ColumnPolicy:
    """``TABLE.COLUMN`` names (a class's table or a child table's) as --exclude-columns
    and --hash-columns give them, and the hash key (text, used as UTF-8)."""

    excluded: Sequence[str] = ()
    hashed: Sequence[str] = ()
    hash_key: str | None = None

    def __repr__(self) -> str:  # never the key
        return f"ColumnPolicy(excluded={list(self.excluded)}, hashed={list(self.hashed)})"


def fingerprint(policy: ColumnPolicy) -> str:
    """What a triggerless state must have been kept under (outcome/state.Identity): the
    names, and a keyed digest of a fixed text in place of the key, which it does not
    reveal; empty without a policy."""
    if not policy.excluded and not policy.hashed:
        return ""
    key = hashed_text("xdspub column policy", (policy.hash_key or "").encode("utf-8")) if policy.hashed else ""
    names = "\0".join(["-", *sorted(policy.excluded), "#", *sorted(policy.hashed), key])
    return hashlib.sha256(names.encode("utf-8")).hexdigest()


def hashed_text(text: str, key: bytes) -> str:
    """A value's XDS text as published under --hash-columns: HMAC-SHA256 of its UTF-8
    under ``key``, in lower-case hex (64 characters)."""
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()


def column_text(value: str | bytes | None, column: Column) -> str | None:
    """The XDS text of a value of ``column`` (value_text.xds_text), or its hash when the
    column is hashed; InvalidValue as xds_text, never quoting a hashed column's value."""
    if column.hash_key is None:
        return xds_text(value, column.xds_type, column.is_char, column.time_form)
    try:
        text = xds_text(value, column.xds_type, column.is_char, column.time_form)
    except InvalidValue as exc:
        raise InvalidValue(HIDDEN_VALUE, exc.reason) from None
    return None if text is None else hashed_text(text, column.hash_key)


def with_policy(catalogue: Catalogue, policy: ColumnPolicy) -> Catalogue:
    """``catalogue`` with the excluded columns gone and the hashed ones carrying the key;
    ConfigError for a name that is no table's column, a key column (a class's key or a
    child table's link: excluding or hashing it would leave objects without a name), a
    reference hashed (its value names an object: exclude it instead), a column named by
    both lists, or hashed columns without a key."""
    if not policy.excluded and not policy.hashed:
        return catalogue
    excluded = [_located(catalogue, name, "--exclude-columns") for name in policy.excluded]
    hashed = [_located(catalogue, name, "--hash-columns") for name in policy.hashed]
    both = set(excluded) & set(hashed)
    if both:
        table, column = sorted(both)[0]
        raise ConfigError(f"column {table}.{column} is both excluded and hashed: give it to one option")
    key = (policy.hash_key or "").encode("utf-8")
    if hashed and not key:
        raise ConfigError(
            "--hash-columns needs a key: set XDSPUB_HASH_KEY, or hash_key in the --config file "
            "(never a flag, so that it shows in no process list)"
        )
    for table, column in hashed:
        if _column(catalogue, table, column).reference is not None:
            raise ConfigError(
                f"--hash-columns {table}.{column}: a reference names an object by its key, "
                "which a hash cannot; exclude it instead"
            )
    gone, keyed = set(excluded), set(hashed)

    def kept(table: str, column: Column) -> Column | None:
        if (table, column.name) in gone:
            return None
        return replace(column, hash_key=key) if (table, column.name) in keyed else column

    tables = {}
    for name, table in catalogue.tables.items():
        columns = [c for c in (kept(name, c) for c in table.columns) if c is not None]
        multi = [
            replace(m, column=column)
            for m in table.multi_valued
            if (column := kept(m.child_table, m.column)) is not None
        ]
        tables[name] = replace(table, columns=tuple(columns), multi_valued=tuple(multi))
    logged = set(excluded)  # as events name them: a child's bare column, or child.column
    # A view's attribute may be named by its view column too (sv_lname for lname).
    logged |= {(t, source) for t, c in excluded if (source := _column(catalogue, t, c).source)}
    logged |= {(catalogue.child_tables[t], f"{t}.{c}") for t, c in excluded if t in catalogue.child_tables}
    return replace(catalogue, tables=tables, excluded=frozenset(logged))


def _tables(catalogue: Catalogue) -> dict[str, Table]:
    """Every table a policy may name: the classes and the child tables (as
    Table.children gives them, keyed by their link columns)."""
    found = dict(catalogue.tables)
    for table in catalogue.tables.values():
        for child in table.children():
            if child.name != table.name:
                found[child.name] = child
                continue
            # A view's own mv_ columns (docs/classes.md, Views in the driver's form).
            values = tuple(c for c in child.columns if c.name not in child.key_columns)
            found[table.name] = replace(found[table.name], columns=(*found[table.name].columns, *values))
    return found


def _column(catalogue: Catalogue, table: str, column: str) -> Column:
    return _tables(catalogue)[table].column(column)


def _located(catalogue: Catalogue, name: str, option: str) -> tuple[str, str]:
    """(table, column) that ``name`` (TABLE.COLUMN) names; ConfigError naming it when it
    names none, or names a key column. A table or column name may hold a dot: the first
    split that names a table's column is taken."""
    tables = _tables(catalogue)
    parts = name.split(".")
    named_table = None
    for cut in range(1, len(parts)):
        table_name, column_name = ".".join(parts[:cut]), ".".join(parts[cut:])
        table = tables.get(table_name)
        if table is None:
            continue
        named_table = table
        if table.column(column_name) is None:
            continue
        if column_name in table.key_columns:
            what = "link column of the child table" if table_name in catalogue.child_tables else "key column of"
            raise ConfigError(
                f"{option} {name}: {column_name} is a {what} {table_name}; objects are named "
                "by their key, which can be neither excluded nor hashed"
            )
        return table_name, column_name
    if named_table is None:
        known = ", ".join(sorted(tables)) or "none"
        raise ConfigError(
            f"{option} {name}: no table of that name in schema {catalogue.schema} "
            f"(TABLE.COLUMN, a class's table or a child table; there are: {known})"
        )
    columns = ", ".join(c.name for c in named_table.columns)
    raise ConfigError(f"{option} {name}: no such column in table {named_table.name} (its columns: {columns})")
