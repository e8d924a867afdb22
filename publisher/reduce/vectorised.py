"""Classification of the common rows with pyarrow.compute, a batch at a time.

Most rows of a backlog need none of the rules' branches: a plain one-column key of a known
table, a known column, and a string, octet or integer value that is already its own XDS
text (a CHAR value without pad spaces is). For those the result of rules.Classifier is known without Python: this module picks
them out (conservatively: anything it is unsure of goes to the rules) and builds their
output columns at once. tests/test_vectorised.py checks that both give the same rows."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from publisher.model import events as ev
from publisher.model import values
from publisher.model.catalogue import Catalogue, Table

# One pair of printable ASCII without the grammar's specials: the key is its own canonical
# form (the same class as the grammar's plain fast path, narrowed to ASCII).
_PLAIN = r"[\x21\x23-\x26\x28-\x2A\x2D-\x3A\x3F-\x5B\x5D-\x7E]+"
_ONE_PAIR = f"^(?P<column>{_PLAIN})=(?P<value>{_PLAIN})$"
_KEY_INT = r"^-?[0-9]{1,18}$"  # surely 64-bit; a 19-digit key goes to the rules
_DIGITS = r"^-?[0-9]+$"
_FORBIDDEN = r"[\x00-\x08\x0B\x0C\x0E-\x1F\x{FFFE}\x{FFFF}]"  # values.XML_FORBIDDEN in RE2
_TYPES = pa.array([str(t) for t in ev.KNOWN])
_NULL = pa.scalar(None, pa.string())
_KEY_PAIR = pa.struct([("column", pa.string()), ("value", pa.string())])


def _clean(name: str) -> bool:
    return values.forbidden_position(name) is None


class _TableShape:
    """What the fast path needs of one table, as Arrow arrays."""

    def __init__(self, table: Table) -> None:
        columns = [c for c in table.columns if _clean(c.name)]
        self.names = pa.array([c.name for c in columns], pa.string())
        self.types = pa.array([c.xds_type for c in columns], pa.string())
        self.int_names = pa.array([c.name for c in columns if c.xds_type == values.INT], pa.string())
        as_is = [
            c.name for c in columns if c.xds_type in (values.STRING, values.OCTET) and not c.is_char
        ]
        self.as_is_names = pa.array(as_is, pa.string())
        self.char_names = pa.array([c.name for c in columns if c.is_char], pa.string())


def _all(*masks: pa.Array) -> pa.Array:
    result = masks[0]
    for mask in masks[1:]:
        result = pc.and_kleene(result, mask)
    return pc.fill_null(result, False)


def _value_is_text(
    value: pa.Array, needed: pa.Array, as_is: pa.Array, is_int: pa.Array, is_char: pa.Array
) -> pa.Array:
    """Where the value is not rendered, or is NULL, or is already its XDS text."""
    clean = pc.invert(pc.match_substring_regex(value, _FORBIDDEN))
    own = pc.or_(
        as_is,
        pc.or_(
            _all(is_int, pc.match_substring_regex(value, _DIGITS)),
            _all(is_char, pc.invert(pc.ends_with(value, " "))),  # no pad spaces to drop
        ),
    )
    text = _all(clean, own)
    return pc.fill_null(pc.or_kleene(pc.invert(needed), pc.or_kleene(pc.is_null(value), text)), False)


class FastPath:
    """Splits a batch of pending rows (event_log.PENDING_SCHEMA) into the classified common
    rows (pipeline's CLASSIFIED columns) and the rest, for rules.Classifier."""

    def __init__(
        self, catalogue: Catalogue, loopback_user: str | None, future_events: bool, schema: pa.Schema
    ) -> None:
        self.tables = {name: _TableShape(t) for name, t in catalogue.tables.items() if _clean(name)}
        self.loopback_user, self.future_events, self.schema = loopback_user, future_events, schema

    def split(self, batch: pa.RecordBatch) -> tuple[list[pa.RecordBatch], pa.RecordBatch]:
        """(classified common rows, a batch per table; the other rows, unchanged)."""
        done, rest = [], pa.array([True] * batch.num_rows, pa.bool_())
        table_names = batch.column("table_name")
        present = set(pc.unique(table_names).drop_null().to_pylist()) & set(self.tables)
        for name in present:
            common = self._common(batch, name, self.tables[name])
            if pc.any(common).as_py():
                done.append(self._classified(batch.filter(common), self.tables[name]))
                rest = pc.and_(rest, pc.invert(common))
        return done, batch.filter(rest)

    def _common(self, batch: pa.RecordBatch, name: str, shape: _TableShape) -> pa.Array:
        col = batch.column
        key = pc.extract_regex(col("table_key"), _ONE_PAIR)
        key_column, key_value = pc.struct_field(key, "column"), pc.struct_field(key, "value")
        int_key = pc.is_in(key_column, value_set=shape.int_names)
        known = pc.is_in(col("event_type_text"), value_set=_TYPES)
        event_type = pc.cast(pc.if_else(known, col("event_type_text"), _NULL), pa.int32())
        per_field = pc.is_in(event_type, value_set=pa.array(ev.PER_FIELD, pa.int32()))
        column = col("column_name")
        column_ok = pc.if_else(per_field, pc.is_in(column, value_set=shape.names), pc.is_null(column))
        as_is = pc.is_in(column, value_set=shape.as_is_names)
        is_int = pc.is_in(column, value_set=shape.int_names)
        is_char = pc.is_in(column, value_set=shape.char_names)
        old_needed = pc.equal(event_type, 2)
        new_needed = pc.is_in(event_type, value_set=pa.array(ev.FIELD_NON_QUERY_BACK, pa.int32()))
        masks = [
            pc.equal(col("table_name"), name),
            pc.is_valid(event_type),
            pc.is_valid(key),
            pc.is_in(key_column, value_set=shape.names),
            pc.or_(pc.invert(int_key), pc.match_substring_regex(key_value, _KEY_INT)),
            column_ok,
            _value_is_text(col("old_value"), old_needed, as_is, is_int, is_char),
            _value_is_text(col("new_value"), new_needed, as_is, is_int, is_char),
        ]
        if self.loopback_user is not None:
            masks.append(pc.invert(pc.fill_null(pc.equal(col("perpetrator"), self.loopback_user), False)))
        return _all(*masks)

    def _classified(self, rows: pa.RecordBatch, shape: _TableShape) -> pa.RecordBatch:
        col = rows.column
        n = rows.num_rows
        event_type = pc.cast(col("event_type_text"), pa.int32())
        none = pa.nulls(n, pa.string())
        order = pc.cast(col("event_order"), pa.float64()) if self.future_events else pa.array([0.0] * n, pa.float64())
        key = pc.extract_regex(col("table_key"), _ONE_PAIR)
        pairs = pa.StructArray.from_arrays(
            [pc.struct_field(key, "column"), pc.struct_field(key, "value")], fields=list(_KEY_PAIR)
        )
        query_back = pc.is_in(event_type, value_set=pa.array(ev.QUERY_BACK, pa.int32()))
        key_pairs = pa.ListArray.from_arrays(
            pa.array(range(n + 1), pa.int32()), pairs, mask=pc.invert(query_back)
        )
        columns = {
            "record_id": col("record_id"),
            "ord_time": order,
            "event_type": event_type,
            "column_name": col("column_name"),
            "xds_type": pc.take(shape.types, pc.index_in(col("column_name"), value_set=shape.names)),
            "old_text": pc.if_else(pc.equal(event_type, 2), col("old_value"), _NULL),
            "new_text": pc.if_else(
                pc.is_in(event_type, value_set=pa.array(ev.FIELD_NON_QUERY_BACK, pa.int32())),
                col("new_value"),
                _NULL,
            ),
            "warning": none,
            "table_name": col("table_name"),
            "canonical_key": col("table_key"),
            "status": none,
            "reason": none,
            "key_pairs": key_pairs,
        }
        return pa.RecordBatch.from_arrays(
            [pc.cast(columns[f.name], f.type) for f in self.schema], schema=self.schema
        )
