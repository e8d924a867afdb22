"""A cycle's rows on Spark: the rules of publisher/reduce/rules.py run in the executors,
around one shuffle by object.

    classify_rows     each read partition as it comes: every row's event, or its status
                      when it is consumed unpublished (loopback) or rejected (E)
    census            how many rows, their record_id bounds, the E rows and the
                      query-back shapes, in one pass
    query_back_requests   the objects that live query-back events name
    by_object         the live rows and their objects' current rows, shuffled once by
                      object and sorted in processing order, for the object pass

Python in the executors, not DataFrame expressions: a row's checks are a dozen regular
expressions and look-ups that Spark would interpret per row, and the rules stay one text
that the row-at-a-time publisher of bench/ runs too."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import pyarrow as pa

from publisher.model import events as ev
from publisher.model.catalogue import Catalogue
from publisher.model.columns import KEY_PAIRS, arrow_schema, ddl, record_batch
from publisher.model.events import Status
from publisher.reduce.current import CELLS_TYPE, RequestShape
from publisher.reduce.rules import Classifier, Rejected
from publisher.reduce.vectorised import FastPath

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame

OBJECT = ("table_name", "canonical_key")
ROWS_PER_TASK = 250_000  # rows of one object-pass task, at most
# What a live event carries to the object pass, and what its object's current row does.
EVENT_COLUMNS = (
    ("record_id", "BIGINT"),
    ("ord_time", "DOUBLE"),
    ("event_type", "INT"),
    ("column_name", "STRING"),
    ("xds_type", "STRING"),
    ("old_text", "STRING"),
    ("new_text", "STRING"),
    ("warning", "STRING"),
)
STATE_COLUMNS = (("found", "BOOLEAN"), ("cells", CELLS_TYPE))
CLASSIFIED_COLUMNS = (
    *EVENT_COLUMNS,
    ("table_name", "STRING"),
    ("canonical_key", "STRING"),
    ("status", "STRING"),  # NULL: live; S: loopback; E: rejected
    ("reason", "STRING"),
    ("key_pairs", KEY_PAIRS),  # query-back events only: what current_state looks up
)
CLASSIFIED_SCHEMA = ddl(CLASSIFIED_COLUMNS)
_CLASSIFIED = arrow_schema(CLASSIFIED_COLUMNS)


def classify_rows(
    catalogue: Catalogue,
    publisher_user: str | None,
    allow_loopback: bool,
    future_events: bool,
    vectorised: bool = True,
) -> Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]:
    """mapInArrow body over the pending rows (event_log.PENDING_SCHEMA): CLASSIFIED_SCHEMA.
    The common rows are classified with pyarrow (vectorised.FastPath), the others by the
    rules; ``vectorised=False`` sends every row to the rules (the tests compare the two)."""
    loopback_user = None if allow_loopback else publisher_user
    classify = Classifier(catalogue)
    fast = FastPath(catalogue, loopback_user, future_events, _CLASSIFIED) if vectorised else None
    unset = (None,) * 6  # event_type .. warning of a row that is not live

    def classified(row: dict) -> tuple:  # in CLASSIFIED_COLUMNS order
        ord_time = row["event_order"] if future_events else 0.0
        head = (row["record_id"], ord_time)
        if loopback_user is not None and row["perpetrator"] == loopback_user:
            return head + unset + (row["table_name"], None, Status.DONE, None, None)
        row["event_type"] = row["event_type_text"]
        try:
            event, pairs = classify(row)
        except Rejected as exc:
            return head + unset + (row["table_name"], None, Status.ERROR, str(exc), None)
        key_pairs = None
        if event.type in ev.QUERY_BACK:
            key_pairs = [{"column": c, "value": v} for c, v in pairs]
        return head + (
            event.type, event.column, event.xds_type, event.old, event.new, event.warning,
            row["table_name"], event.key, None, None, key_pairs,
        )

    def classify_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            if fast is not None:
                done, batch = fast.split(batch)
                yield from done
            yield record_batch([classified(row) for row in batch.to_pylist()], _CLASSIFIED)

    return classify_batches


NOTE_COLUMNS = ("record_id", "status", "reason")


class Note(NamedTuple):
    """A row whose status is not S, and why."""

    record_id: int
    status: str
    reason: str | None


@dataclass(frozen=True)
class Census:
    """What a cycle learns of its classified rows before reducing them."""

    rows: int
    low: int | None  # record_ids, None when there are no rows
    high: int | None
    shapes: tuple[RequestShape, ...]  # of the live query-back events
    rejected: tuple[Note, ...]  # the E rows: few

    @property
    def contiguous(self) -> bool:
        """As many rows as record_ids from the first to the last: one run of ids."""
        return bool(self.rows) and self.rows == self.high - self.low + 1


def _asks(classified: DataFrame) -> Column:
    """Where a row is a live query-back event."""
    return classified.status.isNull() & classified.key_pairs.isNotNull()


def census(classified: DataFrame) -> Census:
    """One pass over the classified rows: their count and record_id bounds, the rejected
    rows, and which tables the query-back events ask by which key columns, for about how
    many objects."""
    from pyspark.sql import functions as F

    asks = _asks(classified)
    groups = (
        classified.groupBy(
            F.when(asks, classified.table_name).alias("table_name"),
            F.when(asks, F.transform("key_pairs", lambda p: p["column"])).alias("key_names"),
        )
        .agg(
            F.count("*").alias("rows"),
            F.min("record_id").alias("low"),
            F.max("record_id").alias("high"),
            F.approx_count_distinct(F.when(asks, classified.canonical_key)).alias("objects"),
            F.collect_list(
                F.when(classified.status == Status.ERROR, F.struct(*NOTE_COLUMNS))
            ).alias("rejected"),
        )
        .collect()
    )
    return Census(
        rows=sum(g.rows for g in groups),
        low=min((g.low for g in groups), default=None),
        high=max((g.high for g in groups), default=None),
        shapes=tuple(
            RequestShape(g.table_name, tuple(g.key_names), g.objects)
            for g in groups
            if g.table_name is not None
        ),
        rejected=tuple(Note(*r) for g in groups for r in g.rejected),
    )


def query_back_requests(classified: DataFrame) -> DataFrame:
    """(table_name, canonical_key, key_pairs) of the live query-back events: every object
    they query back, once or more (current_state keeps one of each)."""
    return classified.where(_asks(classified)).select(*OBJECT, "key_pairs")


def by_object(classified: DataFrame, state: DataFrame, rows: int) -> DataFrame:
    """The live rows with, first in each object, its current row (current.STATE_SCHEMA;
    ``found`` not NULL marks it): one shuffle by object, each object's rows together and
    in processing order. ``rows`` (how many were classified) sizes the partitions."""
    from pyspark.sql import functions as F

    # A fixed count, a multiple of the cores: left to itself Spark merges small shuffle
    # partitions, and 3 tasks on 2 cores leave one core idle for a third of the pass.
    cores = classified.sparkSession.sparkContext.defaultParallelism
    partitions = cores * max(2, -(-rows // (ROWS_PER_TASK * cores)))

    def nulls(columns: tuple[tuple[str, str], ...]) -> list:
        return [F.lit(None).cast(kind).alias(name) for name, kind in columns]

    events = [name for name, _ in EVENT_COLUMNS]
    live = classified.where(classified.status.isNull()).select(
        *OBJECT, *events, *nulls(STATE_COLUMNS)
    )
    current = state.select(*OBJECT, *nulls(EVENT_COLUMNS), "found", "cells")
    return (
        live.unionByName(current)
        .repartition(partitions, *OBJECT)
        .sortWithinPartitions(*OBJECT, F.col("found").asc_nulls_last(), "ord_time", "record_id")
    )
