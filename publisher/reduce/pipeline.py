"""A cycle's rows on Spark: the rules of publisher/reduce/rules.py run in the executors,
around one shuffle by object.

    classify_rows     each read partition as it comes: every row's event, or its status
                      when it is consumed unpublished (loopback, not selected, an
                      excluded column) or
                      rejected (E)
    (census.py        what the classifying tasks learn on the way: the record_id runs,
                      the E rows, the objects query-back asks for)
    object_rows       the live rows and the current rows of their tables (current.py)
                      in one shape; gathered by object (plans/exchange.py on Spark) and
    in_object_order   sorted in processing order, for the object pass

Python in the executors, not DataFrame expressions: a row's checks are a dozen regular
expressions and look-ups that Spark would interpret per row, and the rules stay one text
that the row-at-a-time publisher of bench/ runs too."""

from __future__ import annotations

from collections.abc import Iterator

import pyarrow as pa
import pyarrow.compute as pc

from publisher.model import events as ev
from publisher.model.catalogue import Catalogue
from publisher.model.rows import CLASSIFIED, EVENT, OBJECT_ROWS, Passes
from publisher.model.statuses import Status, failure_reason
from publisher.reduce.exclusion import EXCLUDED, is_excluded
from publisher.reduce.loopback import is_loopback
from publisher.reduce.rules import Classifier, Rejected
from publisher.reduce.selection import NOT_SELECTED
from publisher.reduce.vectorised import FastPath

# Object, then current rows before events (found is NULL for an event), then processing
# order: no other key is NULL.
_OBJECT_ORDER = [
    (name, "ascending", "at_end")
    for name in ("table_name", "canonical_key", "found", "ord_time", "record_id")
]


def classify_rows(catalogue: Catalogue, loopback_user: str | None, future_events: bool,
                  max_value_length: int | None, vectorised: bool = True) -> Passes:
    """mapInArrow body over the pending rows (rows.PENDING): rows.CLASSIFIED.
    The common rows are classified with pyarrow (vectorised.FastPath), the others by the
    rules; ``vectorised=False`` sends every row to the rules (the tests compare the two)."""
    classify = Classifier(catalogue, max_value_length)
    fast = (
        FastPath(catalogue, loopback_user, future_events, max_value_length) if vectorised else None
    )

    def classified(row: dict) -> tuple:
        ord_time = row["event_order"] if future_events else 0.0
        not_live = {"record_id": row["record_id"], "ord_time": ord_time, "table_name": row["table_name"]}
        if is_loopback(row["perpetrator"], loopback_user):
            return CLASSIFIED.row(**not_live, status=Status.DONE)
        if catalogue.is_left_out(row["table_name"]):
            return CLASSIFIED.row(**not_live, status=Status.DONE, reason=NOT_SELECTED)
        if is_excluded(catalogue, row):
            return CLASSIFIED.row(**not_live, status=Status.DONE, reason=EXCLUDED)
        row["event_type"] = row["event_type_text"]
        try:
            event, pairs = classify(row)
        except Rejected as exc:
            return CLASSIFIED.row(**not_live, status=Status.ERROR, reason=str(exc))
        except Exception as exc:  # whatever fails for one row fails that row alone
            return CLASSIFIED.row(**not_live, status=Status.ERROR, reason=failure_reason(exc))
        key_pairs = None
        if event.event_type in ev.QUERY_BACK:
            key_pairs = [{"column": c, "value": v} for c, v in pairs]
        event.ord_time = ord_time
        travelling = {name: getattr(event, name) for name in EVENT.names}
        return CLASSIFIED.row(**travelling, table_name=event.class_name, key_pairs=key_pairs)

    def classify_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if fast is not None:
                try:
                    done, rest = fast.split(batch)
                except Exception:  # the rules take every row then, and say why of each
                    done, rest = [], batch
                yield from done
                batch = rest
            yield CLASSIFIED.batch([classified(row) for row in batch.to_pylist()])

    return classify_batches


def object_rows(batch: pa.RecordBatch) -> pa.RecordBatch:
    """The live rows of a rows.CLASSIFIED batch, or a rows.STATE batch, as rows.OBJECT_ROWS:
    the columns one side lacks are NULL."""
    if "status" in batch.schema.names:
        batch = batch.filter(pc.is_null(batch.column("status")))
    names = set(batch.schema.names)
    columns = [
        batch.column(f.name) if f.name in names else pa.nulls(batch.num_rows, f.type)
        for f in OBJECT_ROWS.arrow
    ]
    return pa.RecordBatch.from_arrays(columns, schema=OBJECT_ROWS.arrow)


def in_object_order(rows: pa.Table) -> pa.Table:
    """rows.OBJECT_ROWS with each object's rows together: its current rows first (``found``
    not NULL), then its events in processing order, as the object pass takes them."""
    return rows.take(pc.sort_indices(rows, sort_keys=_OBJECT_ORDER))
