"""Excluded columns (docs/parameters.md, Column policy): a per-field event naming one is
consumed (S) without publishing and counted. After loopback and the table selection,
before every other check: such a row is never E, and its values are never looked at."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from publisher.model import events as ev
from publisher.model.catalogue import Catalogue
from publisher.reduce.rules import event_type_number

# The reason a classified S row carries when it names an excluded column: how the census
# counts it (reduce/census.py).
EXCLUDED = "excluded column"
_PER_FIELD_TEXT = pa.array([str(t) for t in ev.PER_FIELD], pa.string())
_SEPARATOR = "\u0001"  # between table and column name: no name of the catalogue holds it


def is_excluded(catalogue: Catalogue, row: Mapping[str, Any]) -> bool:
    """Whether a pending row (rows.PENDING) is a per-field event of an excluded column."""
    if not catalogue.excluded or row["column_name"] is None:
        return False
    if event_type_number(row["event_type_text"]) not in ev.PER_FIELD:
        return False
    return (row["table_name"], row["column_name"]) in catalogue.excluded


def excluded_mask(batch: pa.RecordBatch, catalogue: Catalogue) -> pa.Array:
    """``is_excluded`` over a batch of pending rows, for the vectorised classification
    (an event type written otherwise than plainly is left to ``is_excluded``)."""
    names = pa.array([f"{t}{_SEPARATOR}{c}" for t, c in catalogue.excluded], pa.string())
    logged = pc.binary_join_element_wise(batch.column("table_name"), batch.column("column_name"), _SEPARATOR)
    per_field = pc.is_in(batch.column("event_type_text"), value_set=_PER_FIELD_TEXT)
    return pc.fill_null(pc.and_(per_field, pc.is_in(logged, value_set=names)), False)
