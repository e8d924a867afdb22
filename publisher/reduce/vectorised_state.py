"""The query-back state of a batch of current rows, column by column with pyarrow.compute.

The rules are query_back_state.py's, value by value: this module applies them to whole
columns where the result is known without Python (a value that is already its own XDS
text, a plain one-column key, a reference to an integer or plain key) and hands every
other value to those rules (current_cell, current_key). tests/test_vectorised_state.py
checks that both give the same rows."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from publisher.model import value_text
from publisher.model.catalogue import Catalogue, Column, NotAClass, Table
from publisher.model.commands import association
from publisher.model.rows import STATE
from publisher.reduce.query_back_state import current_cell, current_key, name_error
from publisher.reduce.vectorised import PLAIN, all_of, as_is_pattern

_CELL = STATE.arrow.field("cells").type.value_type  # struct of the four cell fields


def _key_pattern(column: Column) -> str | None:
    """RE2 for the key values that are their own canonical text and need no quotes in a
    table_key; None when no value of the column is taken as it is."""
    if column.is_char or column.xds_type not in (value_text.INT, value_text.STRING):
        return None
    return value_text.INT_KEY_AS_IS if column.xds_type == value_text.INT else f"^{PLAIN}$"


def _matches(values: pa.Array, pattern: str) -> pa.Array:
    """Where ``pattern`` matches (RE2), as a mask with no NULLs."""
    return pc.fill_null(pc.match_substring_regex(values, pattern), False)


class CellColumn:
    """How one non-key column becomes cells: which values are their own text, and how a
    reference's value becomes its target's association."""

    def __init__(self, catalogue: Catalogue, column: Column, label: str) -> None:
        self.column, self.label = column, label
        self.name_error = name_error(label)  # every value's error, whatever it is
        # Binary values, references and hashed values are never their own text; other
        # values are when they match as_is (None: any) and hold no forbidden character.
        self.own_text = (
            not column.is_binary and column.reference is None and column.hash_key is None
        )
        self.as_is = (
            as_is_pattern(column.xds_type, column.is_char, column.time_form) if self.own_text else None
        )
        # The target's key values that name it as they are: (RE2, "key=", ",table=...").
        self.reference: tuple[str, str, str] | None = None
        if column.reference is not None:
            try:
                target = catalogue.referenced(column)
            except NotAClass:
                return  # every value's error, by the rules
            key = target.column(target.key_columns[0])
            pattern = _key_pattern(key)
            if pattern is not None:
                # What follows the key in an association, as commands.association writes it.
                rest = association("", target.name, catalogue.schema)
                self.reference = (pattern, f"{key.name}=", rest)


class StateColumns:
    """rows.STATE of a batch of current rows of ``table`` (``owner`` itself, or one of its
    child tables as Table.children gives them), as current.current_pass gives them."""

    def __init__(self, catalogue: Catalogue, owner: Table, table: Table) -> None:
        self.catalogue, self.owner, self.table = catalogue, owner, table
        self.child = table is not owner
        self.cells = [
            CellColumn(catalogue, c, table.value_prefix + c.name)
            for c in table.columns
            if c.name not in table.key_columns
        ]
        key = table.column(table.key_columns[0])
        self.key_pattern = _key_pattern(key) if len(table.key_columns) == 1 else None
        self.key_prefix = f"{owner.key_columns[0]}="

    def state(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        n = batch.num_rows
        keys = self.keys(batch)
        kept = pc.is_valid(keys)
        columns = len(self.cells)
        flat = pa.array([], _CELL)
        if columns:
            texts, errors = self.all_cell_texts(batch)
            # Cell j of row i sits at j * n + i of the columns one after another.
            order = (np.arange(columns)[None, :] * n + np.arange(n)[:, None]).ravel()
            flat = pa.StructArray.from_arrays(
                [
                    pa.array(np.repeat([c.label for c in self.cells], n), pa.string()),
                    pa.array(np.repeat([c.column.published_type for c in self.cells], n), pa.string()),
                    pa.concat_arrays(list(texts)),
                    pa.concat_arrays(list(errors)),
                ],
                fields=list(_CELL),
            ).take(pa.array(order, pa.int64()))
        cells = pa.ListArray.from_arrays(pa.array(np.arange(n + 1) * columns, pa.int32()), flat)
        state = pa.RecordBatch.from_arrays(
            [
                pa.array([self.owner.name] * n, pa.string()),
                keys,
                pa.array([not self.child] * n, pa.bool_()),
                cells,
            ],
            schema=STATE.arrow,
        )
        return state.filter(kept)

    def all_cell_texts(self, batch: pa.RecordBatch) -> tuple[list[pa.Array], list[pa.Array]]:
        """Every cell column's texts and errors (cell_texts), in the order of ``cells``."""
        pairs = [self.cell_texts(batch, cell) for cell in self.cells]
        return [text for text, _ in pairs], [error for _, error in pairs]

    def keys(self, batch: pa.RecordBatch) -> pa.Array:
        """Each row's object's canonical key; NULL for a row of no object."""
        value = batch.column(self.table.key_columns[0])
        if self.key_pattern is None:  # binary keys too: Base64, by the rules
            fast = pa.array(np.zeros(batch.num_rows, bool))
            keys = pa.nulls(batch.num_rows, pa.string())
        else:
            fast = _matches(value, self.key_pattern)
            keys = pc.if_else(fast, pc.binary_join_element_wise(self.key_prefix, value, ""), None)
        slow = np.flatnonzero(~fast.to_numpy(zero_copy_only=False))
        if len(slow):
            rows = batch.take(pa.array(slow)).to_pylist()
            named = self.owner.key_columns
            texts = [current_key(self.table, self.table.key_columns, row, named) for row in rows]
            keys = pc.replace_with_mask(keys, pc.invert(fast), pa.array(texts, pa.string()))
        return keys

    def cell_texts(self, batch: pa.RecordBatch, cell: CellColumn) -> tuple[pa.Array, pa.Array]:
        """One column's cells: their texts and their errors."""
        value = batch.column(cell.column.name)
        n = batch.num_rows
        text = pa.nulls(n, pa.string())
        if cell.name_error is not None:
            return text, pa.array([cell.name_error] * n, pa.string())
        fast = pc.is_null(value)
        if cell.own_text and pa.types.is_string(value.type):
            own = [pc.invert(_matches(value, value_text.XML_FORBIDDEN_RE2))]
            if cell.as_is is not None:
                own.append(_matches(value, cell.as_is))
            mine = all_of(*own)
            text = pc.if_else(mine, value, text)
            fast = pc.or_(fast, mine)
        elif cell.reference is not None and pa.types.is_string(value.type):
            pattern, key, rest = cell.reference
            named = _matches(value, pattern)
            text = pc.if_else(named, pc.binary_join_element_wise(key, value, rest, ""), text)
            fast = pc.or_(fast, named)
        errors = pa.nulls(n, pa.string())
        slow = np.flatnonzero(~fast.to_numpy(zero_copy_only=False))
        if len(slow):
            values = value.take(pa.array(slow)).to_pylist()
            done = [current_cell(self.catalogue, cell.column, v) for v in values]
            mask = pc.invert(fast)
            text = pc.replace_with_mask(text, mask, pa.array([d.value for d in done], pa.string()))
            errors = pc.replace_with_mask(errors, mask, pa.array([d.value_error for d in done], pa.string()))
        return text, errors
