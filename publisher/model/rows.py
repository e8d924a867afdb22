"""The shapes of the rows that travel between the cycle's passes, each declared once as
(name, Spark SQL type) pairs. A shape gives the DDL string Spark takes, the Arrow schema
the Python passes build, and a row type: a named tuple whose fields default to None, so
that every module builds a row by its columns' names, never by position.

    PENDING     the event log rows a cycle reads (source/event_log.py, source/changes.py)
    CLASSIFIED  each pending row's event, or its status when it is not live (reduce/pipeline.py)
    STATE       a current row of a query-back table or of its class's child table, by the
                object it belongs to (reduce/current.py)
    OBJECT_ROWS an object's live events and its current row, gathered by object
    EXCHANGED   what a task that writes rows for the shuffle by object reports: a file of
                one bucket's rows, a range it read and its digest (a triggerless read,
                plans/triggerless_plan.py), or a failure (plans/exchange.py)
    REDUCED     a rendered command, a row whose status is not S, or (with --lineage) a
                live row's fate (render/object_pass.py)
    LINEAGE     a row's fate: the command it joined, or the rule that consumed it
    OBJECT_LINEAGE  a triggerless object's fate: its command and the change that made it,
                or why it was not published
    COMMANDS    a rendered command alone, as delivery/ordered.py spills and orders them
    SPILLED     what a spill writer reports: its file of commands or of fates, a row not
                S, or a failure
    COMPARED    what a triggerless comparing task reports (plans/triggerless_plan.py)
    NOTES       rows whose status is not S, and why
"""

from __future__ import annotations

from collections import namedtuple
from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

Columns = tuple[tuple[str, str], ...]
# A pass over Arrow batches (a mapInArrow body on Spark, or run in the driver).
Passes = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]
BATCH_ROWS = 10_000  # rows per Arrow batch through the passes: bounds a task's memory

KEY_PAIRS = "ARRAY<STRUCT<column: STRING, value: STRING>>"
# A current row's non-key columns in table order: the XDS text of each value, or why it
# cannot be published.
CELLS = "ARRAY<STRUCT<column_name: STRING, xds_type: STRING, value: STRING, value_error: STRING>>"
_ARROW = {
    "BIGINT": pa.int64(),
    "INT": pa.int32(),
    "DOUBLE": pa.float64(),
    "BOOLEAN": pa.bool_(),
    "STRING": pa.string(),
    "BINARY": pa.binary(),
    KEY_PAIRS: pa.list_(pa.struct([("column", pa.string()), ("value", pa.string())])),
    CELLS: pa.list_(
        pa.struct([(name, pa.string()) for name in ("column_name", "xds_type", "value", "value_error")])
    ),
}


class RowShape:
    """One row shape: ``ddl``, ``arrow``, ``names`` and ``row`` (the named tuple type)."""

    def __init__(self, name: str, columns: Columns) -> None:
        self.columns = columns
        self.names = tuple(column for column, _ in columns)
        self.ddl = ", ".join(f"{column} {kind}" for column, kind in columns)
        self.arrow = pa.schema([(column, _ARROW[kind]) for column, kind in columns])
        self.row = namedtuple(name, self.names, defaults=(None,) * len(columns))

    def batch(self, rows: Sequence[tuple]) -> pa.RecordBatch:
        """Rows (of ``row``, or tuples in column order) as one Arrow batch."""
        columns = zip(*rows) if rows else ([] for _ in self.names)
        return pa.RecordBatch.from_arrays(
            [pa.array(list(c), type=f.type) for c, f in zip(columns, self.arrow)],
            schema=self.arrow,
        )


OBJECT = (("table_name", "STRING"), ("canonical_key", "STRING"))
# What a live event carries to the object pass (rules.Event's first fields, in its order).
EVENT = RowShape(
    "EventRow",
    (
        ("record_id", "BIGINT"),
        ("event_type", "INT"),
        ("column_name", "STRING"),
        ("xds_type", "STRING"),
        ("old_text", "STRING"),
        ("new_text", "STRING"),
        ("warning", "STRING"),
        ("canonical_key", "STRING"),
        ("ord_time", "DOUBLE"),
    ),
)
PENDING = RowShape(
    "PendingRow",
    (
        ("record_id", "BIGINT"),
        ("table_key", "STRING"),
        ("event_type_text", "STRING"),  # text: 2.5 must not read as 2
        ("event_order", "DOUBLE"),
        ("perpetrator", "STRING"),
        ("table_name", "STRING"),
        ("column_name", "STRING"),
        ("old_value", "STRING"),
        ("new_value", "STRING"),
    ),
)
CLASSIFIED = RowShape(
    "ClassifiedRow",
    (
        *EVENT.columns,
        ("table_name", "STRING"),
        ("status", "STRING"),  # NULL: live; S: loopback or not selected; E: rejected
        ("reason", "STRING"),  # E: why; S: NOT_SELECTED (reduce/selection.py) or NULL
        ("key_pairs", KEY_PAIRS),  # query-back events only: what the current rows match
    ),
)
# found: true for the object's own row, false for a child table's row.
STATE = RowShape("StateRow", (*OBJECT, ("found", "BOOLEAN"), ("cells", CELLS)))
OBJECT_ROWS = RowShape(
    "ObjectRow",
    (*OBJECT, *(c for c in EVENT.columns if c[0] != "canonical_key"), *STATE.columns[2:]),
)
EXCHANGED = RowShape(
    "Exchanged",
    (
        ("bucket", "INT"),
        ("path", "STRING"),
        ("rows", "BIGINT"),
        ("error", "STRING"),
        ("range_read", "STRING"),
        ("digest", "STRING"),
    ),
)
REDUCED = RowShape(
    "ReducedRow",
    (
        ("cmd_time", "DOUBLE"),
        ("cmd_id", "BIGINT"),
        ("xml", "BINARY"),
        ("record_id", "BIGINT"),
        ("status", "STRING"),
        ("reason", "STRING"),
        ("rule", "STRING"),
        ("superseded_by", "BIGINT"),
    ),
)
# A row's fate in the lineage record (docs/delivery.md, Lineage): the cmd_id of the
# command that carried it, or the rule that consumed it (and the row that superseded it).
LINEAGE = RowShape(
    "LineageRow",
    (("record_id", "BIGINT"), ("cmd_id", "BIGINT"), ("rule", "STRING"), ("superseded_by", "BIGINT")),
)
OBJECT_LINEAGE = RowShape(
    "ObjectLineageRow",
    (("class_name", "STRING"), ("object_key", "STRING"), ("cmd_id", "BIGINT"), ("rule", "STRING"),
     ("reason", "STRING")),
)
COMMANDS = RowShape(
    "CommandRow", (("cmd_time", "DOUBLE"), ("cmd_id", "BIGINT"), ("xml", "BINARY"))
)
SPILLED = RowShape(
    "Spilled",
    (
        ("path", "STRING"),
        ("commands", "BIGINT"),
        ("record_id", "BIGINT"),
        ("status", "STRING"),
        ("reason", "STRING"),
        ("error", "STRING"),
        ("fates", "STRING"),  # the file of the task's rows.LINEAGE (--lineage)
    ),
)
# What a triggerless comparing task reports (plans/triggerless_plan.py): its file of
# changes and how many objects it compared, or an object that cannot be published, or why
# a file could not be written.
COMPARED = RowShape(
    "Compared",
    (
        ("path", "STRING"),
        ("changes", "BIGINT"),
        ("objects", "BIGINT"),
        ("object_key", "STRING"),
        ("reason", "STRING"),
        ("error", "STRING"),
    ),
)
NOTES = RowShape("Note", (("record_id", "BIGINT"), ("status", "STRING"), ("reason", "STRING")))
Note = NOTES.row  # by this name here, so a Note pickles (the census sends them back)
