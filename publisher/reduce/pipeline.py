"""A cycle's rows on Spark: the rules of publisher/reduce/rules.py run in the executors,
around one shuffle by object.

    classify_rows     each read partition as it comes: every row's event, or its status
                      when it is consumed unpublished (loopback) or rejected (E)
    (census.py        what the classifying tasks learn on the way: the record_id runs,
                      the E rows, the objects query-back asks for)
    by_object         the live rows and the current rows of their tables (current.py),
                      shuffled once by object and sorted in processing order, for the
                      object pass

Python in the executors, not DataFrame expressions: a row's checks are a dozen regular
expressions and look-ups that Spark would interpret per row, and the rules stay one text
that the row-at-a-time publisher of bench/ runs too."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import pyarrow as pa

from publisher.model import events as ev
from publisher.model.catalogue import Catalogue
from publisher.model.rows import CLASSIFIED, EVENT, OBJECT, OBJECT_ROWS, STATE
from publisher.model.statuses import Status
from publisher.reduce.loopback import is_loopback
from publisher.reduce.rules import Classifier, Rejected
from publisher.reduce.vectorised import FastPath

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

OBJECT_NAMES = tuple(name for name, _ in OBJECT)
ROWS_PER_TASK = 100_000  # rows of one object-pass task, at most: a task holds its commands


def classify_rows(
    catalogue: Catalogue,
    loopback_user: str | None,
    future_events: bool,
    max_value_length: int | None,
    vectorised: bool = True,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
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
        row["event_type"] = row["event_type_text"]
        try:
            event, pairs = classify(row)
        except Rejected as exc:
            return CLASSIFIED.row(**not_live, status=Status.ERROR, reason=str(exc))
        key_pairs = None
        if event.event_type in ev.QUERY_BACK:
            key_pairs = [{"column": c, "value": v} for c, v in pairs]
        event.ord_time = ord_time
        travelling = {name: getattr(event, name) for name in EVENT.names}
        return CLASSIFIED.row(**travelling, table_name=event.class_name, key_pairs=key_pairs)

    def classify_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if fast is not None:
                done, batch = fast.split(batch)
                yield from done
            yield CLASSIFIED.batch([classified(row) for row in batch.to_pylist()])

    return classify_batches


def by_object(classified: DataFrame, state: DataFrame, rows: int) -> DataFrame:
    """rows.OBJECT_ROWS: the live rows with, first in each object, its current rows
    (rows.STATE; ``found`` not NULL marks them): one shuffle by object, each object's rows
    together and in processing order. ``rows`` (how many were classified) sizes the
    partitions."""
    from pyspark.sql import functions as F

    # A fixed count, a multiple of the cores: left to itself Spark merges small shuffle
    # partitions, and 3 tasks on 2 cores leave one core idle for a third of the pass.
    cores = classified.sparkSession.sparkContext.defaultParallelism
    partitions = cores * max(2, -(-rows // (ROWS_PER_TASK * cores)))
    state_names = {name for name, _ in STATE.columns} - set(OBJECT_NAMES)
    live = classified.where(classified.status.isNull())
    current = state
    for name, kind in OBJECT_ROWS.columns:  # each side's columns the other lacks, as NULLs
        if name in state_names:
            live = live.withColumn(name, F.lit(None).cast(kind))
        elif name not in OBJECT_NAMES:
            current = current.withColumn(name, F.lit(None).cast(kind))
    return (
        live.select(*OBJECT_ROWS.names)
        .unionByName(current.select(*OBJECT_ROWS.names))
        .repartition(partitions, *OBJECT_NAMES)
        .sortWithinPartitions(
            *OBJECT_NAMES, F.col("found").asc_nulls_last(), "ord_time", "record_id"
        )
    )
