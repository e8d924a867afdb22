"""Rows of one cycle to statuses and commands, as DataFrame transformations (section 4).

Each step is a ``df.transform`` function. The flow:

    classify          order key, parsed key, schema look-up, log values, errors, loopback
    with_last_delete  which rows a later delete of their object makes moot
    with_query_back   the current row of query-back events; errors for unpublishable ones
    with_precedence   which live rows are superseded
    with_commands     survivors cut into runs of one command kind
    statuses          the letter (and reason) every row gets

Every window partitions by object, so the cycle's rows are shuffled once.
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from publisher.model import events as ev
from publisher.model import values
from publisher.model.events import Status
from publisher.reduce.xds_text import forbidden_position, xds_text

Transform = Callable[[DataFrame], DataFrame]

LOOPBACK, ERROR, LIVE = "loopback", "error", "live"
ORDER = ("ord_time", "record_id")
OBJECT = ("table_name", "canonical_key")


def _is(types: tuple[int, ...]) -> Column:
    return F.col("event_type").isin(list(types))


def with_event_type(df: DataFrame) -> DataFrame:
    """event_type as an integer, from the text the log holds (NULL when not an integer)."""
    text = F.trim(F.col("event_type_text"))
    return df.withColumn(
        "event_type", F.when(text.rlike("^[0-9]{1,9}$"), text.cast("int"))
    )


def with_order(future_events: bool) -> Transform:
    """ord_time: event_time with future-event processing, else 0; record_id breaks ties."""

    def step(df: DataFrame) -> DataFrame:
        ord_time = F.col("event_order") if future_events else F.lit(0.0)
        return df.withColumn("ord_time", ord_time.cast("double"))

    return step


def with_keys(parsed: DataFrame) -> Transform:
    """canonical_key, key_pairs and key_error of every row: plain keys as they are, the
    others from ``parsed`` (few, so broadcast)."""

    def step(df: DataFrame) -> DataFrame:
        other = parsed.select(
            "table_key",
            F.col("canonical_key").alias("parsed_key"),
            F.col("key_pairs").alias("parsed_pairs"),
            "key_error",
        )
        return (
            df.join(F.broadcast(other), "table_key", "left")
            .withColumn("canonical_key", F.coalesce("canonical_key", "parsed_key"))
            .withColumn("key_pairs", F.coalesce("key_pairs", "parsed_pairs"))
            .drop("parsed_key", "parsed_pairs", "plain")
        )

    return step


def with_schema(columns: DataFrame) -> Transform:
    """table_columns (NULL: table unknown), int_columns, and the column's xds_type and
    is_char."""

    def step(df: DataFrame) -> DataFrame:
        tables = columns.groupBy("table_name").agg(
            F.collect_list("column_name").alias("table_columns"),
            F.collect_list(F.when(F.col("xds_type") == values.INT, F.col("column_name"))).alias(
                "int_columns"
            ),
        )
        field = columns.select("table_name", "column_name", "xds_type", "is_char")
        return df.join(F.broadcast(tables), "table_name", "left").join(
            F.broadcast(field), ["table_name", "column_name"], "left"
        )

    return step


def _log_text(raw: Column) -> tuple[Column, Column]:
    """A value from the log as XDS text for the column's type, and whether it is valid."""
    return xds_text(raw, F.col("xds_type"), F.col("is_char"))


def _forbidden_check(name: str, applies: Column) -> tuple[Column, Column]:
    position = forbidden_position(F.col(name))
    return (
        applies & (position > 0),
        F.format_string(f"{name} has a character XML 1.0 cannot carry at position %d", position),
    )


_CLASSIFY_ONLY = (
    "table_key", "event_type_text", "event_order", "perpetrator", "old_value", "new_value",
    "key_error", "table_columns", "int_columns", "is_char",
)


def classify(settings_schema: str, publisher_user: str | None, allow_loopback: bool) -> Transform:
    """fate (loopback, error or live), reason, warning, and old_text/new_text of the log."""

    def step(df: DataFrame) -> DataFrame:
        old_text, old_ok = _log_text(F.col("old_value"))
        new_text, new_ok = _log_text(F.col("new_value"))
        t = F.col("event_type")
        field_values = _is(ev.FIELD_NON_QUERY_BACK)
        bad_int_key = F.get(
            F.filter(
                "key_pairs",
                lambda p: F.array_contains("int_columns", p["column"])
                & ~p["value"].rlike("^-?[0-9]{1,18}$"),
            ),
            0,
        )
        checks: list[tuple[Column, Column]] = [
            (F.col("event_type_text").isNull(), F.lit("event_type is NULL")),
            (~_is(ev.KNOWN) | t.isNull(), F.format_string("unknown event_type %s", "event_type_text")),
            (F.col("table_name").isNull(), F.lit("table_name is NULL")),
            (F.col("table_key").isNull(), F.lit("table_key is NULL")),
        ]
        for name in ("table_key", "table_name", "column_name"):
            checks.append(_forbidden_check(name, F.lit(True)))
        checks += [
            (F.col("key_error").isNotNull(), F.concat(F.lit("malformed table_key: "), "key_error")),
            (
                F.col("table_columns").isNull(),
                F.format_string(
                    "table %s is not in the published schema %s", "table_name", F.lit(settings_schema)
                ),
            ),
            (
                ~F.forall("key_pairs", lambda p: F.array_contains("table_columns", p["column"])),
                F.format_string("a table_key column is not a column of %s", "table_name"),
            ),
            (
                bad_int_key.isNotNull(),
                F.format_string(
                    "table_key value %s of %s is not an integer",
                    bad_int_key["value"],
                    bad_int_key["column"],
                ),
            ),
            (
                _is(ev.PER_FIELD) & F.col("column_name").isNull(),
                F.format_string("column_name is NULL for per-field event_type %d", t),
            ),
            (
                _is(ev.PER_FIELD) & F.col("xds_type").isNull(),
                F.format_string("column %s is not in table %s", "column_name", "table_name"),
            ),
        ]
        # Only values that are rendered are checked: a type 2's old value, 1-3's new.
        for name, ok, rendered in (
            ("old_value", old_ok, t == ev.EventType.UPDATE_FIELD),
            ("new_value", new_ok, field_values),
        ):
            checks.append(_forbidden_check(name, rendered))
            checks.append(
                (
                    rendered & ~ok,
                    F.format_string(f"{name} %s is not a valid %s value", F.col(name), "xds_type"),
                )
            )
        reason = F.lit(None).cast("string")
        for condition, message in reversed(checks):
            reason = F.when(F.coalesce(condition, F.lit(False)), message).otherwise(reason)

        loopback = (
            F.lit(False)
            if allow_loopback or publisher_user is None
            else F.coalesce(F.col("perpetrator") == F.lit(publisher_user), F.lit(False))
        )
        warning = F.when(
            F.col("canonical_key").isNotNull() & (F.col("canonical_key") != F.col("table_key")),
            F.format_string(
                "table_key %s is not canonical; published as %s", "table_key", "canonical_key"
            ),
        )
        return (
            df.withColumn("reason", reason)
            .withColumn(
                "fate",
                F.when(loopback, LOOPBACK).when(F.col("reason").isNotNull(), ERROR).otherwise(LIVE),
            )
            .withColumn("warning", warning)
            .withColumn("old_text", F.when(t == ev.EventType.UPDATE_FIELD, old_text))
            .withColumn("new_text", F.when(field_values, new_text))
            # What later steps do not read: every row carries it through their shuffles.
            .drop(*_CLASSIFY_ONLY)
        )

    return step


def query_back_requests(classified: DataFrame) -> DataFrame:
    """(table_name, canonical_key, key_pairs) of every object a live event queries back."""
    return (
        classified.where((F.col("fate") == LIVE) & _is(ev.QUERY_BACK))
        .select("table_name", "canonical_key", "key_pairs")
        .dropDuplicates(list(OBJECT))
    )


def _position() -> Column:
    return F.struct(*ORDER)


def _last(condition: Column, window: Window) -> Column:
    """The position of the last live row of ``window`` that meets ``condition``."""
    return F.max(F.when((F.col("fate") == LIVE) & condition, _position())).over(window)


def _after_last_delete(position: Column) -> Column:
    last_delete = F.col("last_delete")
    return position.isNotNull() & (last_delete.isNull() | (position > last_delete))


def with_last_delete(df: DataFrame) -> DataFrame:
    """deleted_later: a live delete of the object comes after the row. Query-back events
    before a delete find the row gone (rule 3): they have no effect and supersede nothing."""
    return df.withColumn(
        "last_delete", _last(F.col("event_type") == ev.EventType.DELETE_ROW, Window.partitionBy(*OBJECT))
    ).withColumn("deleted_later", F.coalesce(_position() < F.col("last_delete"), F.lit(False)))


def with_query_back(state: DataFrame) -> Transform:
    """cells (the current row, for query-back events) and an error for query-back events
    whose current row cannot be published. ``state`` is one row per requested object:
    table_name, canonical_key, found, cells (non-key columns in table order)."""

    def step(df: DataFrame) -> DataFrame:
        joined = df.join(state, list(OBJECT), "left")
        cells = F.col("cells")
        row_error = F.get(F.filter(cells, lambda c: c["value_error"].isNotNull()), 0)["value_error"]
        field_error = F.get(
            F.filter(cells, lambda c: c["column_name"] == F.col("column_name")), 0
        )["value_error"]
        qb_reason = F.when(_is(ev.ROW_QUERY_BACK), row_error).otherwise(field_error)
        failed = (F.col("fate") == LIVE) & _is(ev.QUERY_BACK) & ~F.col("deleted_later") & qb_reason.isNotNull()
        return (
            joined.withColumn("reason", F.when(failed, qb_reason).otherwise(F.col("reason")))
            .withColumn("fate", F.when(failed, ERROR).otherwise(F.col("fate")))
            .withColumn("cells", F.when(_is(ev.QUERY_BACK) & ~F.col("deleted_later"), cells))
            .drop("found")
        )

    return step


def with_precedence(df: DataFrame) -> DataFrame:
    """superseded: query-back beats non-query-back, row beats field, among the rows after
    the object's last delete (only those can be superseded or supersede); a delete is never
    superseded."""
    by_object = Window.partitionBy(*OBJECT)
    by_field = Window.partitionBy(*OBJECT, "column_name")
    row_qb = _after_last_delete(F.col("last_row_qb"))
    field_qb = _after_last_delete(F.col("last_field_qb"))
    superseded = (
        (F.col("fate") == LIVE)
        & ~F.col("deleted_later")
        & ((_is(ev.FIELD_NON_QUERY_BACK) & (row_qb | field_qb)) | (_is(ev.FIELD_QUERY_BACK) & row_qb))
    )
    return (
        df.withColumn("last_row_qb", _last(_is(ev.ROW_QUERY_BACK), by_object))
        .withColumn("last_field_qb", _last(_is(ev.FIELD_QUERY_BACK), by_field))
        .withColumn("superseded", superseded)
        .drop("last_row_qb", "last_field_qb", "last_delete", "deleted_later")
    )


def _kind() -> Column:
    kind = F.lit(None).cast("string")
    for event_type, name in ev.COMMAND_KIND.items():
        kind = F.when(F.col("event_type") == event_type, F.lit(name)).otherwise(kind)
    return kind


def with_commands(df: DataFrame) -> DataFrame:
    """kind, cmd_time and cmd_id of every surviving row. Per object the survivors, in
    processing order, are cut into maximal runs of one command kind; each run is one
    command, placed at its first row (cmd_time, cmd_id: that row's ord_time, record_id).
    yields: the row renders an attribute; emitted: its command is sent."""
    survivor = (F.col("fate") == LIVE) & ~F.col("superseded")
    ordered = Window.partitionBy(*OBJECT).orderBy(*ORDER)
    kind = F.when(survivor, _kind())
    previous = F.last(kind, ignorenulls=True).over(ordered.rowsBetween(Window.unboundedPreceding, -1))
    head = F.when(survivor & (previous.isNull() | (previous != kind)), _position())
    command = F.last(head, ignorenulls=True).over(
        ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    t, cells = F.col("event_type"), F.col("cells")
    yields = survivor & (
        ((t == ev.EventType.INSERT_FIELD) & F.col("new_text").isNotNull())
        | ((t == ev.EventType.UPDATE_FIELD) & (F.col("old_text").isNotNull() | F.col("new_text").isNotNull()))
        | (t == ev.EventType.UPDATE_FIELD_REMOVE_ALL)
        | (_is(ev.ROW_QUERY_BACK) & (F.size(cells) > 0))
        | (_is(ev.FIELD_QUERY_BACK) & F.exists(cells, lambda c: c["column_name"] == F.col("column_name")))
    )
    by_command = Window.partitionBy(*OBJECT, "cmd_id")
    return (
        df.withColumn("kind", kind)
        .withColumn("command", F.when(survivor, command))
        .withColumn("cmd_time", F.col("command.ord_time"))
        .withColumn("cmd_id", F.col("command.record_id"))
        .withColumn("yields", F.coalesce(yields, F.lit(False)))
        # A modify none of whose rows yields an attribute is not sent (an empty command).
        .withColumn(
            "emitted",
            F.col("cmd_id").isNotNull()
            & ((F.col("kind") != ev.MODIFY) | F.max(F.col("yields")).over(by_command)),
        )
        .drop("command")
    )


def decide(classified: DataFrame, state: DataFrame) -> DataFrame:
    """Every row's fate and, for survivors, its command."""
    return (
        classified.drop("key_pairs")  # read by query_back_requests only
        .transform(with_last_delete)
        .transform(with_query_back(state))
        .transform(with_precedence)
        .transform(with_commands)
    )


def command_rows(schema: str) -> Transform:
    """The surviving rows as the renderer takes them: grouped by command, in command order
    within a partition once sorted by (cmd_time, cmd_id, ord_time, record_id)."""

    def step(decided: DataFrame) -> DataFrame:
        return decided.where(F.col("emitted")).select(
            "cmd_time",
            "cmd_id",
            (F.col("record_id") == F.col("cmd_id")).alias("head"),
            "kind",
            F.col("table_name").alias("class_name"),
            F.concat_ws(
                "", "canonical_key", F.lit(",table="), "table_name", F.lit(f",schema={schema}")
            ).alias("association"),
            "ord_time",
            "record_id",
            "event_type",
            "column_name",
            "xds_type",
            "old_text",
            "new_text",
            "yields",
            "cells",
        )

    return step


def statuses(df: DataFrame) -> DataFrame:
    """record_id, status letter and reason (errors and warnings) of every row read."""
    fate = F.col("fate")
    status = (
        F.when(fate == ERROR, Status.ERROR)
        .when(fate == LOOPBACK, Status.DONE)
        .when(F.col("superseded"), Status.DONE)
        .when(F.col("warning").isNotNull(), Status.WARNED)
        .otherwise(Status.DONE)
    )
    reason = F.when(fate == ERROR, F.col("reason")).when(
        (fate == LIVE) & ~F.col("superseded"), F.col("warning")
    )
    return df.select("record_id", status.alias("status"), reason.alias("reason"))
