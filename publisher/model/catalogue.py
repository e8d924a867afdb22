"""The published schema: which tables and columns exist, their keys and XDS value types."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

VIEW_KEY_PREFIX = "pk_"  # views have no key constraints: pk_ columns are their keys (section 3)


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
