"""The published schema (docs/classes.md): which tables and columns exist, their keys and
XDS value types."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

import numpy as np

from publisher.errors import ConfigError
from publisher.model.chains import chain_order
from publisher.model.value_text import OCTET, STRING

VIEW_KEY_PREFIX = "pk_"  # views have no key constraints: pk_ columns are their keys (docs/classes.md)


@dataclass(frozen=True)
class ForeignKey:
    """The row a column's value names (a reference's target, a child row's parent): its
    table, and each of its key columns paired with the column naming it. Where the key's
    text collates, the value is published as the named row's own key (docs/rendering.md,
    Key text)."""

    table: str
    pairs: tuple[tuple[str, str], ...]  # (the named table's key column, the naming column)

    def key_named_by(self, column: str) -> str:
        """The named table's key column that ``column`` names."""
        return next(key for key, naming in self.pairs if naming == column)


@dataclass(frozen=True)
class Column:
    name: str
    ordinal: int
    xds_type: str
    is_char: bool  # CHAR(n): trailing pad spaces are dropped
    # A reference (docs/classes.md, References): the class its values name by key; its
    # xds_type is dn.
    reference: str | None = None
    # A reference whose column is binary: it holds the bytes of a binary key, so its
    # values are read and logged as a binary column's (is_binary).
    binary_reference: bool = False
    time_form: str | None = None  # a date, time or timestamp column: value_text.time_form
    # A view in the driver's form (docs/classes.md, Views in the driver's form): the view
    # column the attribute is read from, when it is named otherwise (sv_fname as fname).
    source: str | None = None
    # A view's fk_ column: ``reference`` is the key column it names, not a class; the
    # class whose key that column is is found when the reference is resolved.
    reference_by_key: bool = False
    # --hash-columns (model/policy.py): its values are published as their keyed hash.
    hash_key: bytes | None = field(default=None, repr=False)
    # The type the database reflected (an SQLAlchemy type; None: not from a database), so
    # that a key text bound in a query compares as a value of it (source/query_back.py).
    sql_type: object = field(default=None, repr=False, compare=False)
    # The row its value names (a reference's foreign key; a child table's link column as
    # Table.children gives it); None: it names none, or is a view's.
    names_row: ForeignKey | None = field(default=None, repr=False, compare=False)

    @property
    def read_name(self) -> str:
        """The database's name of the column this attribute is read from."""
        return self.source or self.name

    @property
    def is_binary(self) -> bool:
        """Whether the database holds the column's values as bytes: a binary column, or a
        reference to a binary key. The event log holds them in Base64 and query-back reads
        them as bytes, so that a reference's text is the Base64 key text of the object it
        names (docs/rendering.md, Key text)."""
        return self.xds_type == OCTET or self.binary_reference

    @property
    def published_type(self) -> str:
        """The XDS type its values are published as: a hash is a string."""
        return STRING if self.hash_key is not None else self.xds_type


@dataclass(frozen=True)
class MultiValued:
    """A multi-valued attribute (docs/classes.md, Child tables): the values of ``column``
    in the rows of ``child_table`` whose ``link`` columns hold the object's key."""

    child_table: str
    link: tuple[str, ...]  # the child's columns holding the parent's key, in its key order
    column: Column  # the child's column holding the values; a reference makes them dn
    # A view's own mv_ column (docs/classes.md, Views in the driver's form): the "child
    # table" is the view itself, and the attribute is named as the column alone.
    own: bool = False

    @property
    def name(self) -> str:
        return self.column.name if self.own else f"{self.child_table}.{self.column.name}"

    @property
    def xds_type(self) -> str:
        return self.column.published_type


@dataclass(frozen=True)
class Table:
    """A class: a table or view with its key, and the multi-valued attributes of its child
    tables."""

    name: str
    columns: tuple[Column, ...]
    key_columns: tuple[str, ...]
    key_is_primary: bool = False  # a PRIMARY KEY constraint: no two rows share the key
    multi_valued: tuple[MultiValued, ...] = ()
    # A child table as Table.children gives it: what its values' attribute names begin
    # with ("usr_phone."; nothing for a view's own multi-valued columns).
    value_prefix: str = ""

    def column(self, name: str) -> Column | None:
        return self._by_name.get(name)

    def attribute(self, name: str) -> Column | MultiValued | None:
        """The column, or the multi-valued attribute (``child_table.column``), so named."""
        return self._by_name.get(name) or self._multi_by_name.get(name)

    def attribute_name(self, logged: str) -> str:
        """The attribute a logged column_name names: a view's attributes may also be
        named by the view column they are read from (``sv_fname`` for ``fname``); an
        attribute's own name comes first."""
        if self.attribute(logged) is not None:
            return logged
        return self._by_source.get(logged, logged)

    def is_multi_valued(self, name: str | None) -> bool:
        return name in self._multi_by_name

    def children(self) -> tuple[Table, ...]:
        """Each child table as query-back reads it: keyed by its link columns (typed as
        this class's key), holding its value columns."""
        values: dict[tuple[str, tuple[str, ...], bool], list[Column]] = {}
        for m in self.multi_valued:
            values.setdefault((m.child_table, m.link, m.own), []).append(m.column)
        return tuple(
            Table(
                name,
                (
                    *(
                        replace(self.column(k), name=n, names_row=ForeignKey(self.name, tuple(zip(self.key_columns, link))))
                        for k, n in zip(self.key_columns, link)
                    ),
                    *columns,
                ),
                link,
                value_prefix="" if own else f"{name}.",
            )
            for (name, link, own), columns in values.items()
        )

    @cached_property
    def _by_name(self) -> dict[str, Column]:
        return {c.name: c for c in self.columns}

    @cached_property
    def _by_source(self) -> dict[str, str]:
        read = [*self.columns, *(m.column for m in self.multi_valued if m.own)]
        return {c.source: c.name for c in read if c.source is not None}

    @cached_property
    def _multi_by_name(self) -> dict[str, MultiValued]:
        return {m.name: m for m in self.multi_valued}

    @cached_property
    def multi_valued_types(self) -> dict[str, str]:
        """Each multi-valued attribute's xds_type, by name, in the class's order."""
        return {m.name: m.xds_type for m in self.multi_valued}


@dataclass(frozen=True)
class Catalogue:
    """The classes of the published schema (tables and views), by name (the database's own
    case)."""

    schema: str
    tables: dict[str, Table]
    # Child tables (not classes): each one's parent class. An event may name a child
    # table and a bare column (docs/classes.md, Child tables).
    child_tables: dict[str, str] = field(default_factory=dict)
    # With a table selection (--tables, docs/parameters.md): the classes left out, which
    # references still name, and the child tables left out with them. Events naming
    # either are consumed unpublished.
    left_out: dict[str, Table] = field(default_factory=dict)
    left_out_children: frozenset[str] = frozenset()
    # --exclude-columns (model/policy.py): (table_name, column_name) as events name the
    # excluded columns; those events are consumed unpublished.
    excluded: frozenset[tuple[str, str]] = frozenset()

    def referenced(self, column: Column) -> Table:
        """The class a reference column names; NotAClass when it names none."""
        if column.reference_by_key:
            return self._keyed_by(column)
        target = self.tables.get(column.reference) or self.left_out.get(column.reference)
        if target is None or not target.key_is_primary:  # a keyless table is no class
            raise NotAClass(
                f"column {column.name} references {column.reference}, which is not a class "
                f"of the published schema {self.schema}"
            )
        return target

    def _keyed_by(self, column: Column) -> Table:
        """The one class whose whole key is the column a view's fk_ column names
        (docs/classes.md, Views in the driver's form); NotAClass for none or several."""
        found = self._classes_by_key.get(column.reference, [])
        if len(found) == 1:
            return found[0]
        which = (
            "no class of the published schema has as its key" if not found
            else "classes " + ", ".join(t.name for t in found) + " all have as their key"
        )
        raise NotAClass(
            f"column {column.name} (view column {column.source}) references key column "
            f"{column.reference}, which {which} (schema {self.schema})"
        )

    @cached_property
    def _classes_by_key(self) -> dict[str, list[Table]]:
        """The classes of a one-column key (the left-out ones too), by that column."""
        by_key: dict[str, list[Table]] = defaultdict(list)
        for name in sorted({**self.left_out, **self.tables}):
            table = self.tables.get(name) or self.left_out[name]
            if len(table.key_columns) == 1:
                by_key[table.key_columns[0]].append(table)
        return by_key

    def keyless_classes(self) -> list[str]:
        """The classes without a key, by name: no object of theirs can be named, so what
        reads classes whole (triggerless, resync, verify) passes them by, and says so once
        a run (docs/classes.md, Keys)."""
        return sorted(name for name, table in self.tables.items() if not table.key_columns)

    def keyed_classes(self) -> list[Table]:
        """The classes whose objects can be named, in name order (a keyless table named in
        --tables is refused by ``selected``)."""
        return [self.tables[name] for name in sorted(self.tables) if self.tables[name].key_columns]

    def reference_order(self) -> list[Table]:
        """The keyed classes, each after the classes its references name (docs/reduction.md,
        Triggerless and resync): by depth in the chains of references between classes,
        then by name; a cycle of classes breaks at the first of them by name."""
        classes = self.keyed_classes()  # in name order: their rank
        number = {t.name: n for n, t in enumerate(classes)}
        pairs = [(number[t.name], number[name]) for t in classes for name in sorted(self._named_classes(t))
                 if name in number]  # a class left out is no class to wait for
        source, target = (np.array([pair[i] for pair in pairs], np.int64) for i in (0, 1))
        return [classes[n] for n in chain_order(source, target, np.arange(len(classes))).tolist()]

    def forward_references(self, table: Table) -> list[str]:
        """The class's attributes whose references name a class placed after it in the
        reference order: where classes name each other in a cycle, the references that
        break it (docs/reduction.md, Triggerless and resync)."""
        place = {t.name: n for n, t in enumerate(self.reference_order())}
        if table.name not in place:
            return []
        return [name for name, column in self._references(table)
                if place.get(self._names(column), -1) > place[table.name]]

    def self_references(self, table: Table) -> list[str]:
        """The class's attributes (a column's name, or a multi-valued attribute's) whose
        references name the class itself."""
        return [name for name, column in self._references(table) if self._names(column) == table.name]

    def _references(self, table: Table) -> list[tuple[str, Column]]:
        """Each attribute of the class holding references, with its column."""
        found = [(c.name, c) for c in table.columns if c.reference is not None]
        return found + [(m.name, m.column) for m in table.multi_valued if m.column.reference is not None]

    def _names(self, column: Column) -> str | None:
        """The class a reference column names; None when it names no class."""
        try:
            return self.referenced(column).name
        except NotAClass:
            return None

    def _named_classes(self, table: Table) -> set[str]:
        return {name for _, column in self._references(table) if (name := self._names(column))}

    def is_left_out(self, table_name: str) -> bool:
        """Whether ``table_name`` is a class or child table the selection leaves out."""
        return table_name in self.left_out or table_name in self.left_out_children

    def check_class(self, name: str, option: str) -> None:
        """UnknownTable, naming ``option``, unless ``name`` is a class with a key or a
        child table of one."""
        if name in self.tables and not self.tables[name].key_columns:
            raise UnknownTable(
                f"{option} {name}: the table has no key (no primary key, no pk_ column), "
                "so its objects cannot be published"
            )
        if name not in self.tables and name not in self.child_tables:
            known = ", ".join(sorted([*self.tables, *self.child_tables])) or "none"
            raise UnknownTable(
                f"{option} {name}: no class or child table of that name in schema "
                f"{self.schema} (there are: {known})"
            )

    def selected(self, names: Sequence[str]) -> Catalogue:
        """Only the classes ``names`` (with their child tables); UnknownTable for a name
        that is no keyed class of the schema (a child table, a keyless table, a typo)."""
        for name in names:
            self.check_class(name, "--tables")
            if name in self.child_tables:
                raise UnknownTable(
                    f"--tables {name}: a child table, published with its class "
                    f"{self.child_tables[name]}: select {self.child_tables[name]}"
                )
        chosen = set(names)
        return Catalogue(
            self.schema,
            {n: t for n, t in self.tables.items() if n in chosen},
            {c: p for c, p in self.child_tables.items() if p in chosen},
            {**self.left_out, **{n: t for n, t in self.tables.items() if n not in chosen}},
            self.left_out_children | {c for c, p in self.child_tables.items() if p not in chosen},
            self.excluded,
        )


class NotAClass(ValueError):
    """A reference to a table that is not a class of the published schema."""


class UnknownTable(ConfigError):
    """A table named (--tables, --table) that cannot be selected."""


def keyless_warning(names: Sequence[str]) -> str | None:
    """What a run says of the keyless classes it passed by (Catalogue.keyless_classes)."""
    if not names:
        return None
    return f"tables without a key (no primary key, no pk_ column) not read: {', '.join(names)}"
