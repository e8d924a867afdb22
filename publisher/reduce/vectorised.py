"""Classification of the common rows with pyarrow.compute, a batch at a time.

Most rows of a backlog need none of the rules' branches: a plain one-column key naming the
table's key column, a known column, and a value that is already its own XDS text. For
those the result of rules.Classifier is known without Python: this module picks them out
(conservatively: anything it is unsure of goes to the rules) and builds their output
columns at once. What "already its own text" means comes from the value rule itself
(value_text.AS_IS); tests/test_vectorised.py checks that both paths give the same rows."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from publisher.model import events as ev
from publisher.model import value_text
from publisher.model.catalogue import Catalogue, Table
from publisher.model.rows import CLASSIFIED
from publisher.model.statuses import Status
from publisher.reduce.exclusion import EXCLUDED, excluded_mask
from publisher.reduce.loopback import loopback_mask
from publisher.reduce.selection import NOT_SELECTED, left_out_mask

# One pair of printable ASCII without the grammar's specials: the key is its own canonical
# form (the same class as the grammar's plain fast path, narrowed to ASCII).
PLAIN = r"[\x21\x23-\x26\x28-\x2A\x2D-\x3A\x3F-\x5B\x5D-\x7E]+"
_ONE_PAIR = f"^(?P<column>{PLAIN})=(?P<value>{PLAIN})$"
_TYPES = pa.array([str(t) for t in ev.KNOWN])
_OLD_RENDERED = pa.array(ev.OLD_VALUE_RENDERED, pa.int32())
_NEW_RENDERED = pa.array(ev.NEW_VALUE_RENDERED, pa.int32())
_PER_FIELD = pa.array(ev.PER_FIELD, pa.int32())
_QUERY_BACK = pa.array(ev.QUERY_BACK, pa.int32())
_NULL = pa.scalar(None, pa.string())
_KEY_PAIR = pa.struct([("column", pa.string()), ("value", pa.string())])


def _clean(name: str) -> bool:
    return value_text.forbidden_position(name) is None


def as_is_pattern(xds_type: str, is_char: bool, time_form: str | None = None) -> str | None:
    """RE2 for the texts of a column that are already their own XDS text (None: any)."""
    if time_form is not None:  # a time column: its Time Syntax's own texts
        return value_text.TIME_AS_IS[time_form]
    return value_text.CHAR_AS_IS if is_char else value_text.AS_IS[xds_type]


class _TableShape:
    """What the fast path needs of the events of one class with a one-column key, as Arrow
    arrays: logged under its own name (its columns and its multi-valued attributes,
    child_table.column), or under one of its child tables' (``child_table``: a bare column
    of it for child_table.column, its link column for the class's key; docs/classes.md)."""

    def __init__(self, table: Table, child_table: str | None = None) -> None:
        if child_table is None:
            named = [(c.name, c.name, c) for c in table.columns]
            named += [(m.name, m.name, m.column) for m in table.multi_valued]
            # A view's attributes are also logged by the view column they are read from
            # (after the attributes' own names, which come first, as in the rules).
            named += [(c.source, c.name, c) for _, _, c in named if c.source is not None]
            logged_key = table.key_columns[0]
        else:
            multi = [m for m in table.multi_valued if m.child_table == child_table]
            named = [(m.column.name, m.name, m.column) for m in multi]
            logged_key = multi[0].link[0]
        # (as logged, the attribute's name, its column); a reference's value becomes an
        # association, a hashed column's its hash: the rules' work.
        named = [
            n for n in named
            if _clean(n[0]) and _clean(n[1]) and n[2].reference is None and n[2].hash_key is None
        ]
        self.class_name = table.name
        self.names = pa.array([logged for logged, _, _ in named], pa.string())
        self.attributes = pa.array([name for _, name, _ in named], pa.string())
        self.types = pa.array([c.xds_type for _, _, c in named], pa.string())
        key = table.column(table.key_columns[0])
        self.key, self.class_key = logged_key, key.name
        self.key_pattern = value_text.KEY_AS_IS.get(key.xds_type)
        by_pattern: dict[str | None, list[str]] = defaultdict(list)
        for logged, _, c in named:
            by_pattern[as_is_pattern(c.xds_type, c.is_char, c.time_form)].append(logged)
        # Columns by the pattern their values must match to be their own text.
        self.as_is = {p: pa.array(names, pa.string()) for p, names in by_pattern.items()}


def all_of(*masks: pa.Array) -> pa.Array:
    """Where every mask holds (NULL: does not)."""
    result = masks[0]
    for mask in masks[1:]:
        result = pc.and_kleene(result, mask)
    return pc.fill_null(result, False)


class FastPath:
    """Splits a batch of pending rows (rows.PENDING) into the classified common rows
    (rows.CLASSIFIED) and the rest, for rules.Classifier."""

    def __init__(self, catalogue: Catalogue, loopback_user: str | None, future_events: bool,
                 max_value_length: int | None) -> None:
        self.tables = {
            name: _TableShape(t)
            for name, t in catalogue.tables.items()
            if _clean(name) and len(t.key_columns) == 1
        }
        for child, parent in catalogue.child_tables.items():
            if child not in catalogue.tables and _clean(child) and parent in self.tables:
                self.tables[child] = _TableShape(catalogue.tables[parent], child)
        self.loopback_user, self.future_events = loopback_user, future_events
        self.max_value_length = max_value_length
        self.catalogue = catalogue
        self.leaves_out = bool(catalogue.left_out or catalogue.left_out_children)

    def split(self, batch: pa.RecordBatch) -> tuple[list[pa.RecordBatch], pa.RecordBatch]:
        """(classified common rows, a batch per table; the other rows, unchanged)."""
        done, rest = [], np.ones(batch.num_rows, bool)
        table_names = batch.column("table_name")
        consumed = []  # loopback comes first: those rows are the rules'
        if self.leaves_out:
            consumed.append((left_out_mask(table_names, self.catalogue), NOT_SELECTED))
        if self.catalogue.excluded:
            consumed.append((excluded_mask(batch, self.catalogue), EXCLUDED))
        if consumed:
            mine = pc.invert(loopback_mask(batch.column("perpetrator"), self.loopback_user))
        for mask, reason in consumed:
            taken = all_of(pa.array(rest), mask, mine)
            if pc.any(taken).as_py():
                done.append(self._consumed(batch.filter(taken), reason))
                rest[taken.to_numpy(zero_copy_only=False)] = False
        present = set(pc.unique(table_names).drop_null().to_pylist()) & set(self.tables)
        for name in present:
            # Each table's checks on its own rows only: a batch of several tables would
            # otherwise pay every table's regular expressions on every row.
            where = pc.indices_nonzero(pc.equal(table_names, name)).to_numpy()
            rows = batch if len(where) == batch.num_rows else batch.take(where)
            common = self._common(rows, self.tables[name])
            if pc.any(common).as_py():
                done.append(self._classified(rows.filter(common), self.tables[name]))
                rest[where[common.to_numpy(zero_copy_only=False)]] = False
        return done, batch.filter(pa.array(rest))

    def _value_is_text(self, value: pa.Array, needed: pa.Array, column: pa.Array,
                       shape: _TableShape) -> pa.Array:
        """Where the value is not rendered, or is NULL, or is already its XDS text."""
        own = pa.array([False] * len(value), pa.bool_())
        for pattern, names in shape.as_is.items():
            matches = pc.is_in(column, value_set=names)
            if pattern is not None:
                matches = all_of(matches, pc.match_substring_regex(value, pattern))
            own = pc.or_(own, pc.fill_null(matches, False))
        masks = [own, pc.invert(pc.match_substring_regex(value, value_text.XML_FORBIDDEN_RE2))]
        if self.max_value_length is not None:
            masks.append(pc.less_equal(pc.utf8_length(value), self.max_value_length))
        text = all_of(*masks)
        return pc.fill_null(pc.or_kleene(pc.invert(needed), pc.or_kleene(pc.is_null(value), text)), False)

    def _common(self, batch: pa.RecordBatch, shape: _TableShape) -> pa.Array:
        """Where a row of ``shape``'s table is common (batch: that table's rows alone)."""
        col = batch.column
        key = pc.extract_regex(col("table_key"), _ONE_PAIR)
        key_column, key_value = pc.struct_field(key, "column"), pc.struct_field(key, "value")
        known = pc.is_in(col("event_type_text"), value_set=_TYPES)
        event_type = pc.cast(pc.if_else(known, col("event_type_text"), _NULL), pa.int32())
        per_field = pc.is_in(event_type, value_set=_PER_FIELD)
        column = col("column_name")
        column_ok = pc.if_else(per_field, pc.is_in(column, value_set=shape.names), pc.is_null(column))
        old_needed = pc.is_in(event_type, value_set=_OLD_RENDERED)
        new_needed = pc.is_in(event_type, value_set=_NEW_RENDERED)
        masks = [
            pc.is_valid(event_type),
            pc.is_valid(key),
            pc.equal(key_column, shape.key),
            column_ok,
            self._value_is_text(col("old_value"), old_needed, column, shape),
            self._value_is_text(col("new_value"), new_needed, column, shape),
            pc.invert(loopback_mask(col("perpetrator"), self.loopback_user)),
        ]
        if shape.key_pattern is not None:
            masks.append(pc.match_substring_regex(key_value, shape.key_pattern))
        longest = min(ev.TABLE_KEY_LIMIT, self.max_value_length or ev.TABLE_KEY_LIMIT)
        masks.append(pc.less_equal(pc.utf8_length(col("table_key")), longest))
        return all_of(*masks)

    def _order(self, rows: pa.RecordBatch) -> pa.Array:
        if self.future_events:
            return pc.cast(rows.column("event_order"), pa.float64())
        return pa.array([0.0] * rows.num_rows, pa.float64())

    def _consumed(self, rows: pa.RecordBatch, reason: str) -> pa.RecordBatch:
        """Rows consumed unpublished for ``reason``: of tables the selection leaves out
        (selection.py), or naming an excluded column (exclusion.py)."""
        n = rows.num_rows
        columns = {
            "record_id": rows.column("record_id"),
            "ord_time": self._order(rows),
            "table_name": rows.column("table_name"),
            "status": pa.array([Status.DONE] * n, pa.string()),
            "reason": pa.array([reason] * n, pa.string()),
        }
        return _batch(columns, n)

    def _classified(self, rows: pa.RecordBatch, shape: _TableShape) -> pa.RecordBatch:
        col = rows.column
        n = rows.num_rows
        event_type = pc.cast(col("event_type_text"), pa.int32())
        none = pa.nulls(n, pa.string())
        order = self._order(rows)
        key_value = pc.struct_field(pc.extract_regex(col("table_key"), _ONE_PAIR), "value")
        # The key under the class's key column (a child table's link column may differ).
        key_column = pa.array([shape.class_key] * n, pa.string())
        canonical = pc.binary_join_element_wise(key_column, key_value, "=")
        pairs = pa.StructArray.from_arrays([key_column, key_value], fields=list(_KEY_PAIR))
        warning = none
        if shape.key != shape.class_key:  # as the rules say of any key not in canonical form
            texts = (col("table_key"), " is not canonical; published as ", canonical)
            warning = pc.binary_join_element_wise("table_key ", *texts, "")
        column = pc.index_in(col("column_name"), value_set=shape.names)
        query_back = pc.is_in(event_type, value_set=_QUERY_BACK)
        key_pairs = pa.ListArray.from_arrays(
            pa.array(range(n + 1), pa.int32()), pairs, mask=pc.invert(query_back)
        )
        columns = {
            "record_id": col("record_id"),
            "ord_time": order,
            "event_type": event_type,
            "column_name": pc.take(shape.attributes, column),
            "xds_type": pc.take(shape.types, column),
            "old_text": pc.if_else(pc.is_in(event_type, value_set=_OLD_RENDERED), col("old_value"), _NULL),
            "new_text": pc.if_else(pc.is_in(event_type, value_set=_NEW_RENDERED), col("new_value"), _NULL),
            "warning": warning,
            "table_name": pa.array([shape.class_name] * n, pa.string()),
            "canonical_key": canonical,
            "status": none,
            "reason": none,
            "key_pairs": key_pairs,
        }
        return _batch(columns, n)


def _batch(columns: dict[str, pa.Array], rows: int) -> pa.RecordBatch:
    """rows.CLASSIFIED of ``columns``; the columns not given are NULL."""
    schema = CLASSIFIED.arrow
    arrays = [
        pc.cast(columns[f.name], f.type) if f.name in columns else pa.nulls(rows, f.type)
        for f in schema
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)
