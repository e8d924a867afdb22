"""Rows of one cycle to statuses and commands, as DataFrame transformations (section 4).

Each step is a ``df.transform`` function. The flow:

    classify        order key, parsed key, schema look-up, log values, errors, loopback
    with_segments   the stretches between deletes of each object
    with_query_back current-row state of query-back events (vanished, unreadable)
    with_precedence which live rows are superseded
    commands        survivors cut into runs of one command kind, with their attributes
    statuses        the letter (and reason) every row gets
"""

from __future__ import annotations

from collections.abc import Callable

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from publisher.model import events as ev
from publisher.model import values
from publisher.model.events import Status

Transform = Callable[[DataFrame], DataFrame]

LOOPBACK, ERROR, LIVE = "loopback", "error", "live"
ORDER = ("ord_time", "record_id")
OBJECT = ("table_name", "canonical_key")
COMMAND = ("table_name", "canonical_key", "run")

_TRUE_WORDS = ("1", "true", "t", "y", "yes", "on")
_FALSE_WORDS = ("0", "false", "f", "n", "no", "off")


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


def with_keys(keys: DataFrame) -> Transform:
    return lambda df: df.join(keys, "table_key", "left")


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
    xds_type, trimmed = F.col("xds_type"), F.trim(raw)
    word = F.lower(trimmed)
    state = F.when(word.isin(list(_TRUE_WORDS)), F.lit("true")).when(
        word.isin(list(_FALSE_WORDS)), F.lit("false")
    )
    digits = trimmed.rlike("^-?[0-9]+$")
    time = F.when(digits, trimmed).otherwise(
        F.unix_timestamp(F.try_to_timestamp(trimmed)).cast("string")
    )
    text = (
        F.when(raw.isNull(), F.lit(None))
        .when(xds_type == values.INT, F.when(digits, trimmed))
        .when(xds_type == values.STATE, state)
        .when(xds_type == values.TIME, time)
        .when(F.col("is_char"), F.rtrim(raw))
        .otherwise(raw)
    )
    return text, raw.isNull() | text.isNotNull()


def _forbidden_check(name: str, applies: Column) -> tuple[Column, Column]:
    position = F.regexp_instr(F.col(name), F.lit(values.XML_FORBIDDEN))
    return (
        applies & (position > 0),
        F.format_string(f"{name} has a character XML 1.0 cannot carry at position %d", position),
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
        )

    return step


def query_back_requests(classified: DataFrame) -> DataFrame:
    """(table_name, canonical_key, key_pairs) of every object a live event queries back."""
    return (
        classified.where((F.col("fate") == LIVE) & _is(ev.QUERY_BACK))
        .select("table_name", "canonical_key", "key_pairs")
        .dropDuplicates(list(OBJECT))
    )


def with_query_back(current: DataFrame) -> Transform:
    """found, and an error for query-back events whose current row cannot be published."""

    def step(df: DataFrame) -> DataFrame:
        state = (
            current.groupBy(*OBJECT)
            .agg(
                F.max("found").alias("found"),
                F.first("qb_error", ignorenulls=True).alias("qb_error"),
                F.first("value_error", ignorenulls=True).alias("row_value_error"),
            )
        )
        field_error = current.where("ordinal IS NOT NULL").select(
            *OBJECT, "column_name", F.col("value_error").alias("field_value_error")
        )
        joined = df.join(state, list(OBJECT), "left").join(
            field_error, [*OBJECT, "column_name"], "left"
        )
        live_qb = (F.col("fate") == LIVE) & _is(ev.QUERY_BACK) & ~F.col("deleted_later")
        qb_reason = F.coalesce(
            F.col("qb_error"),
            F.when(_is(ev.ROW_QUERY_BACK), F.col("row_value_error")).otherwise(
                F.col("field_value_error")
            ),
        )
        return (
            joined.withColumn("reason", F.when(live_qb & qb_reason.isNotNull(), qb_reason).otherwise(F.col("reason")))
            .withColumn("fate", F.when(live_qb & qb_reason.isNotNull(), ERROR).otherwise(F.col("fate")))
            .drop("qb_error", "row_value_error", "field_value_error")
        )

    return step


def with_segments(df: DataFrame) -> DataFrame:
    """segment: live deletes before the row in its object; deleted_later: one comes after.

    Query-back events before a delete find the row gone (rule 3): they have no effect."""
    deletes = ((F.col("fate") == LIVE) & (F.col("event_type") == ev.EventType.DELETE_ROW)).cast("int")
    ordered = Window.partitionBy(*OBJECT).orderBy(*ORDER)
    before = ordered.rowsBetween(Window.unboundedPreceding, -1)
    after = ordered.rowsBetween(1, Window.unboundedFollowing)
    return df.withColumn("segment", F.coalesce(F.sum(deletes).over(before), F.lit(0))).withColumn(
        "deleted_later", F.coalesce(F.max(deletes).over(after), F.lit(0)) > 0
    )


def with_precedence(df: DataFrame) -> DataFrame:
    """superseded: query-back beats non-query-back, row beats field, within the stretch
    between two deletes; a delete is never superseded."""
    effective = (F.col("fate") == LIVE) & ~F.col("deleted_later")
    by_object = Window.partitionBy(*OBJECT, "segment")
    by_field = Window.partitionBy(*OBJECT, "segment", "column_name")
    row_qb = F.max((effective & _is(ev.ROW_QUERY_BACK)).cast("int")).over(by_object) > 0
    field_qb = F.max((effective & _is(ev.FIELD_QUERY_BACK)).cast("int")).over(by_field) > 0
    superseded = (F.col("fate") == LIVE) & (
        (_is(ev.FIELD_NON_QUERY_BACK) & (row_qb | field_qb)) | (_is(ev.FIELD_QUERY_BACK) & row_qb)
    )
    return df.withColumn("superseded", superseded)


def _kind() -> Column:
    kind = F.lit(None).cast("string")
    for event_type, name in ev.COMMAND_KIND.items():
        kind = F.when(F.col("event_type") == event_type, F.lit(name)).otherwise(kind)
    return kind


def _attr(sort_ordinal: Column, op: str, name: Column, old: Column, new: Column) -> Column:
    return F.struct(
        F.col("ord_time").alias("s_time"),
        F.col("record_id").alias("s_record"),
        sort_ordinal.alias("s_ordinal"),
        F.lit(op).alias("op"),
        name.alias("name"),
        F.col("xds_type").alias("type"),
        old.alias("old"),
        new.alias("new"),
    )


def commands(schema: str, current: DataFrame) -> Transform:
    """One row per XDS command: ord_time, event_id, kind, class_name, association, attrs.

    Per object the surviving events, in processing order, are cut into maximal runs of one
    command kind; each run is one command placed at its first event."""

    def step(df: DataFrame) -> DataFrame:
        survivors = df.where((F.col("fate") == LIVE) & ~F.col("superseded"))
        order = Window.partitionBy(*OBJECT).orderBy(*ORDER)
        runs = (
            survivors.withColumn("kind", _kind())
            .withColumn(
                "run",
                F.sum(
                    F.coalesce(F.lag("kind").over(order) != F.col("kind"), F.lit(True)).cast("int")
                ).over(order),
            )
        )
        heads = runs.groupBy(*COMMAND).agg(
            F.min(F.struct(*ORDER)).alias("first"), F.first("kind").alias("kind")
        )

        t, name = F.col("event_type"), F.col("column_name")
        null = F.lit(None).cast("string")
        zero = F.lit(0)
        log_attrs = runs.where(_is(ev.FIELD_NON_QUERY_BACK)).select(
            *COMMAND,
            F.when(t == 1, _attr(zero, "add", name, null, F.col("new_text")))
            .when(t == 2, _attr(zero, "modify", name, F.col("old_text"), F.col("new_text")))
            .otherwise(_attr(zero, "replace", name, null, F.col("new_text")))
            .alias("attr"),
        ).where("attr.new IS NOT NULL OR attr.op = 'replace' OR (attr.op = 'modify' AND attr.old IS NOT NULL)")

        cells = current.where("ordinal IS NOT NULL").select(
            *OBJECT,
            F.col("column_name").alias("cell_column"),
            "ordinal",
            F.col("xds_type").alias("cell_type"),
            "value",
        )
        qb = (
            runs.where(_is(ev.QUERY_BACK) & ~F.col("deleted_later"))
            .drop("xds_type")
            .join(cells, list(OBJECT))
        )
        qb = qb.where(_is(ev.ROW_QUERY_BACK) | (F.col("cell_column") == F.col("column_name")))
        once = Window.partitionBy(*COMMAND, "cell_column").orderBy(*ORDER)
        qb_attrs = (
            qb.withColumn("nth", F.row_number().over(once))
            .where("nth = 1")
            .withColumnRenamed("cell_type", "xds_type")
            .select(
                *COMMAND,
                _attr(F.col("ordinal"), "replace", F.col("cell_column"), null, F.col("value")).alias(
                    "attr"
                ),
            )
        )
        attrs = (
            log_attrs.unionByName(qb_attrs)
            .groupBy(*COMMAND)
            .agg(F.array_sort(F.collect_list("attr")).alias("sorted"))
            .select(
                *COMMAND,
                F.transform(
                    "sorted", lambda a: F.struct(a["op"], a["name"], a["type"], a["old"], a["new"])
                ).alias("attrs"),
            )
        )
        return (
            heads.join(attrs, list(COMMAND), "left")
            .where((F.col("kind") != ev.MODIFY) | (F.size("attrs") > 0))
            .select(
                F.col("first.ord_time").alias("ord_time"),
                F.col("first.record_id").alias("event_id"),
                "kind",
                F.col("table_name").alias("class_name"),
                F.concat_ws(
                    "", "canonical_key", F.lit(",table="), "table_name", F.lit(f",schema={schema}")
                ).alias("association"),
                "attrs",
            )
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


def status_ranges(statuses_df: DataFrame) -> DataFrame:
    """(status, low, high): maximal runs of consecutive record_ids that share a status."""
    rank = F.row_number().over(Window.partitionBy("status").orderBy("record_id"))
    return (
        statuses_df.withColumn("run", F.col("record_id") - rank)
        .groupBy("status", "run")
        .agg(F.min("record_id").alias("low"), F.max("record_id").alias("high"))
        .select("status", "low", "high")
        .orderBy("low")
    )


def decide(classified: DataFrame, current: DataFrame) -> DataFrame:
    """Query-back state and precedence over classified rows: every row's fate is known."""
    return (
        classified.transform(with_segments)
        .transform(with_query_back(current))
        .transform(with_precedence)
    )
