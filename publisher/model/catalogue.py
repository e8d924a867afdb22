"""The published schema (docs/classes.md): which tables and columns exist, their keys and
XDS value types."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property

VIEW_KEY_PREFIX = "pk_"  # views have no key constraints: pk_ columns are their keys (docs/classes.md)


@dataclass(frozen=True)
class Column:
    name: str
    ordinal: int
    xds_type: str
    is_char: bool  # CHAR(n): trailing pad spaces are dropped


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[Column, ...]
    key_columns: tuple[str, ...]
    key_is_primary: bool = False  # a PRIMARY KEY constraint: no two rows share the key

    def is_unique(self, key_names: Sequence[str]) -> bool:
        """Whether no two rows can hold the same values in ``key_names``."""
        return self.key_is_primary and set(key_names) == set(self.key_columns)

    def column(self, name: str) -> Column | None:
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, Column]:
        return {c.name: c for c in self.columns}


@dataclass(frozen=True)
class Catalogue:
    """Tables and views of the published schema, by name (the database's own case)."""

    schema: str
    tables: dict[str, Table]
