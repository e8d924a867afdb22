"""Query-back state (docs/rendering.md, Query-back rendering): a table's current row as the
rules read it. Its key as objects are matched by it, and its non-key cells as XDS text, or
why a cell cannot be published.

The Spark cycle applies these to every row its query-back read returns (reduce/current.py);
the row publisher of bench/ to the row its own SELECT returns. Both read the same columns
the same way (source/query_back.py: every column as the database's text, binary as bytes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import NamedTuple

from grammar import format_table_key
from publisher.model.catalogue import Catalogue, Column, NotAClass, Table
from publisher.model.commands import reference_text
from publisher.model.policy import column_text
from publisher.model.statuses import failure_reason, reason_text, shown_value
from publisher.model.value_text import InvalidValue, forbidden_position, key_text
from publisher.reduce.rules import Cell

SEPARATOR = "\u0001"  # between key values: XML 1.0 forbids it, so no key value holds it
Value = str | bytes | None


class CurrentCell(NamedTuple):
    """One non-key cell of a current row (rows.CELLS)."""

    column_name: str
    xds_type: str
    value: str | None
    value_error: str | None


def match_text(key_values: Sequence[str]) -> str:
    """Key values (as key_text gives them) joined as the current rows are matched."""
    return SEPARATOR.join(key_values)


def _key_texts(table: Table, key_names: Sequence[str], row: Mapping[str, Value]) -> list[str] | None:
    """A current row's key values as key_text gives them; None when one is NULL or not one
    of its type, so that the row belongs to no object."""
    texts = []
    for name in key_names:
        column, value = table.column(name), row[name]
        if value is None:
            return None
        try:
            texts.append(key_text(value, column.xds_type, column.is_char))
        except InvalidValue:
            return None
    return texts


def current_match(table: Table, key_names: Sequence[str], row: Mapping[str, Value]) -> str | None:
    """The text a current row is matched by (None: it matches no request)."""
    texts = _key_texts(table, key_names, row)
    return None if texts is None else match_text(texts)


def current_key(table: Table, key_names: Sequence[str], row: Mapping[str, Value],
                names: Sequence[str]) -> str | None:
    """The canonical key of the object a current row belongs to, its ``key_names`` values
    named ``names`` (its class's key columns: a child table's link columns stand for them);
    None as for current_match. It is the canonical key of that object's events, so the row
    travels with them (docs/table-key.md)."""
    texts = _key_texts(table, key_names, row)
    return None if texts is None else format_table_key(list(zip(names, texts)))


def name_error(label: str) -> str | None:
    """Why no value of the attribute ``label`` can be published: XML cannot carry its name
    (docs/rendering.md, Query-back rendering); None when it can."""
    position = forbidden_position(label)
    if position is None:
        return None
    return reason_text(f"column name {label} has a character XML 1.0 cannot carry at position {position}")


def current_cells(catalogue: Catalogue, table: Table, key_names: Sequence[str],
                  row: Mapping[str, Value], prefix: str = "") -> list[CurrentCell]:
    """The row's non-key cells in table order, each with its XDS text or its error; each
    cell's name is ``prefix`` and its column's."""
    cells = []
    for column in table.columns:
        if column.name in key_names:
            continue
        label = prefix + column.name
        cell = current_cell(catalogue, column, row[column.name])._replace(column_name=label)
        error = name_error(label)
        cells.append(cell._replace(value=None, value_error=error) if error else cell)
    return cells


def current_cell(catalogue: Catalogue, column: Column, value: Value) -> CurrentCell:
    """One cell: its XDS text, or why it cannot be published."""
    text, error = None, None
    try:
        text = _current_text(catalogue, column, value)
    except InvalidValue as exc:
        error = f"current value '{shown_value(exc.value)}' of {column.name} {exc.reason}"
    except NotAClass as exc:
        error = str(exc)
    except Exception as exc:  # whatever fails for one value fails the events reading it
        error = f"current value of {column.name}: {failure_reason(exc)}"
    if text is not None and (position := forbidden_position(text)):
        text, error = None, (
            f"current value of {column.name} has a character XML 1.0 cannot carry "
            f"at position {position}"
        )
    return CurrentCell(column.name, column.published_type, text, error and reason_text(error))


def _current_text(catalogue: Catalogue, column: Column, value: Value) -> str | None:
    if column.reference is None or value is None:
        return column_text(value, column)
    return reference_text(value, catalogue.referenced(column), catalogue.schema)


def child_cells(catalogue: Catalogue, child: Table, row: Mapping[str, Value]) -> list[CurrentCell]:
    """A child table's row (``child`` as Table.children gives it) as the cells of its
    class's multi-valued attributes, one per value column, named child_table.column (a
    view's own: the attribute alone)."""
    return current_cells(catalogue, child, child.key_columns, row, child.value_prefix)


def read_back(cells: Sequence[Sequence] | None) -> tuple[list[Cell] | None, dict[str, str]]:
    """A current row's cells (CurrentCell, or rows of rows.CELLS; None: vanished) as
    rules.ReadBack gives them: the cells, and each bad cell's error by column."""
    if cells is None:
        return None, {}
    return (
        [(name, xds_type, value) for name, xds_type, value, _ in cells],
        {name: error for name, _, _, error in cells if error},
    )
