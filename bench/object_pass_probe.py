"""Feasibility probe for a faster cycle: what one shuffle by object and one Python pass per
partition cost, against the DataFrame reduction `xdspub export` uses today.

    python3 bench/backlog.py postgresql+psycopg://root@127.0.0.1:5432/test --schema probe
    python3 bench/object_pass_probe.py postgresql+psycopg://root@127.0.0.1:5432/test --schema probe

It reads the pending rows through the same JDBC source, joins the current usr rows to the
query-back events (broadcast), shuffles by object, sorts by (object, record_id), and in
mapInArrow applies a simplified precedence (row query-back supersedes field events,
deletes cut the object's stretch), cuts runs of one command kind and renders every command
with publisher.render.xds; then it range-sorts the rendered commands in output order.
It is not the publisher (no error checks, no field query-back precedence): it prints the
seconds of each stage so that the design can be judged before it is built."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator

import pyarrow as pa
import sqlalchemy as sa

from publisher.model import events as ev
from publisher.render.xds import FIELD_OPS, command_element, command_xml
from publisher.settings import Settings
from publisher.source.database import connect
from publisher.source.event_log import open_event_log, read_pending
from publisher.source.jdbc import read_query
from publisher.spark import spark_session

RENDERED = pa.schema([("cmd_id", pa.int64()), ("xml", pa.binary())])
FIELDS = ("fname", "lname", "photo")


def _commands(rows: list[dict], schema: str) -> Iterator[tuple[int, bytes]]:
    """One object's rows in order: its commands, rendered."""
    start = max((i for i, r in enumerate(rows) if r["event_type"] == 4), default=-1)
    if start >= 0:
        rows = rows[start:]
    row_qb = any(r["event_type"] in ev.ROW_QUERY_BACK for r in rows)
    runs: list[tuple[str, list[dict]]] = []
    for row in rows:
        if row_qb and row["event_type"] in ev.FIELD_NON_QUERY_BACK:
            continue
        kind = ev.COMMAND_KIND[row["event_type"]]
        if runs and runs[-1][0] == kind:
            runs[-1][1].append(row)
        else:
            runs.append((kind, [row]))
    association = f"{rows[0]['table_key']},table=usr,schema={schema}"
    for kind, run in runs:
        attrs, seen = [], set()
        for row in run:
            t = row["event_type"]
            if t in ev.FIELD_NON_QUERY_BACK:
                attrs.append({"op": FIELD_OPS[t], "name": row["column_name"], "type": "string",
                              "old": row["old_value"], "new": row["new_value"]})
            elif t in ev.QUERY_BACK and row["fname"] is not None:
                for name in FIELDS if t in ev.ROW_QUERY_BACK else (row["column_name"],):
                    if name not in seen:
                        seen.add(name)
                        attrs.append({"op": "replace", "name": name, "type": "string",
                                      "old": None, "new": row[name]})
        yield run[0]["record_id"], command_xml(
            command_element(kind, "usr", run[0]["record_id"], association, attrs)
        )


def object_pass(schema: str):
    def reduce_partition(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        ids, xmls, group, key = [], [], [], None
        for batch in batches:
            for row in batch.to_pylist():
                if row["table_key"] != key and group:
                    for cmd_id, xml in _commands(group, schema):
                        ids.append(cmd_id)
                        xmls.append(xml)
                    group = []
                key = row["table_key"]
                group.append(row)
        if group:
            for cmd_id, xml in _commands(group, schema):
                ids.append(cmd_id)
                xmls.append(xml)
        yield pa.RecordBatch.from_arrays([pa.array(ids, pa.int64()), pa.array(xmls, pa.binary())],
                                         schema=RENDERED)

    return reduce_partition


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--schema", default="probe")
    args = parser.parse_args()
    settings = Settings(args.db, schema=args.schema, log_table=f"{args.schema}.indirect_process")
    engine, dialect = connect(args.db)
    log = open_event_log(engine, dialect, settings)
    started = time.monotonic()
    spark = spark_session("local[*]")
    spark.range(1).count()
    print(f"Spark start and a first job: {time.monotonic() - started:.1f} s")

    from pyspark.sql import functions as F

    def timed(name: str, df) -> None:
        began = time.monotonic()
        df.write.format("noop").mode("overwrite").save()
        print(f"{name}: {time.monotonic() - began:.1f} s")

    events = read_pending(spark, engine, log, dialect, settings)
    timed("JDBC read of the pending rows", events)
    usr = sa.table("usr", sa.column("idu"), sa.column("fname"), sa.column("lname"),
                   sa.column("photo"), schema=args.schema)
    current = read_query(
        spark, engine, dialect, sa.select(usr.c.idu, usr.c.fname, usr.c.lname, usr.c.photo),
        "idu STRING, fname STRING, lname STRING, photo STRING",
    ).withColumn("table_key", F.concat(F.lit("idu="), "idu")).drop("idu")
    joined = events.join(F.broadcast(current), "table_key", "left").select(
        "record_id", "table_key", F.col("event_type_text").cast("int").alias("event_type"),
        "column_name", "old_value", "new_value", "fname", "lname", "photo",
    )
    sorted_rows = joined.repartition("table_key").sortWithinPartitions("table_key", "record_id")
    timed("query-back join, shuffle by object, sort", sorted_rows)
    rendered = sorted_rows.mapInArrow(object_pass(args.schema), "cmd_id BIGINT, xml BINARY")
    timed("... + Python pass: precedence, runs, lxml rendering", rendered)
    ordered = rendered.repartitionByRange(8, "cmd_id").sortWithinPartitions("cmd_id")
    timed("... + range sort of the rendered commands", ordered)
    engine.dispose()


if __name__ == "__main__":
    main()
