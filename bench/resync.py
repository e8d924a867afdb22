"""`xdspub resync` of a large table on PostgreSQL against a bare INSERT ... SELECT of the same
rows (docs/initial-load.md):

    python3 bench/resync.py [--db postgresql+psycopg://root@127.0.0.1:5432/test] [--rows 1000000]

It makes the sample schema with bench/backlog.py (COPY) in a schema of its own, usr holding
--rows objects, then measures in the same run
1. the ceiling: one bare INSERT ... SELECT of a type 5 row per usr row into a copy of the
   event log (CREATE TABLE ... LIKE, indexes and defaults included), one transaction;
2. `xdspub resync --tables usr --quiet` into the event log, wall clock of the command
   (Python's start, reflection, every chunk of --chunk objects its own transaction);
and prints both, the rows a second and the ratio (target at most 2.0). The schema is dropped
at the end unless --keep."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import psycopg

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import backlog  # noqa: E402  (bench/ is no package)

from publisher.source.database import connect, libpq_conninfo  # noqa: E402

TARGET = 2.0


def bare_insert(conn: psycopg.Connection, schema: str) -> float:
    """Seconds to log the type 5 rows of every usr row in one statement, into a copy of the
    event log."""
    log, copy = f"{schema}.indirect_process", f"{schema}.resync_ceiling"
    conn.execute(f"CREATE TABLE {copy} (LIKE {log} INCLUDING ALL)")
    conn.commit()
    conn.execute("CHECKPOINT")
    start = time.perf_counter()
    conn.execute(
        f"INSERT INTO {copy} (table_key, event_type, perpetrator, table_name) "
        f"SELECT 'idu=' || idu, 5, 'xdspub-resync', 'usr' FROM {schema}.usr ORDER BY idu"
    )
    conn.commit()
    return time.perf_counter() - start


def resync(url: str, schema: str, chunk: int) -> float:
    args = ["resync", "--db", url, "--schema", schema, "--tables", "usr", "--chunk", str(chunk), "--quiet"]
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "publisher", *args], check=True, env=env)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="postgresql+psycopg://root@127.0.0.1:5432/test")
    parser.add_argument("--schema", default="bench_resync", help="schema made afresh")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--keep", action="store_true", help="keep the schema")
    args = parser.parse_args()

    started = time.perf_counter()
    backlog.load(args.db, args.schema, rows=0, objects=args.rows, seed=1)
    engine, _ = connect(args.db)
    with psycopg.connect(libpq_conninfo(engine), autocommit=True) as conn:
        conn.execute(f"VACUUM ANALYZE {args.schema}.usr")
    print(f"{args.rows:,} usr rows made in {time.perf_counter() - started:.1f} s")

    with psycopg.connect(libpq_conninfo(engine)) as conn:
        ceiling = bare_insert(conn, args.schema)
        conn.execute("CHECKPOINT")
        conn.commit()
        command = resync(args.db, args.schema, args.chunk)
        logged = conn.execute(
            f"SELECT count(*) FROM {args.schema}.indirect_process WHERE event_type = 5"
        ).fetchone()[0]
        if not args.keep:
            conn.execute(f"DROP SCHEMA {args.schema} CASCADE")
            conn.commit()
    assert logged == args.rows, f"resync logged {logged} rows of {args.rows}"

    ratio = command / ceiling
    print(f"bare INSERT ... SELECT:     {ceiling:7.2f} s  {args.rows / ceiling:12,.0f} rows/s")
    print(f"xdspub resync --chunk {args.chunk}: {command:7.2f} s  {args.rows / command:12,.0f} rows/s")
    verdict = "met" if ratio <= TARGET else "MISSED"
    print(f"ratio {ratio:.2f} (target at most {TARGET}: {verdict})")


if __name__ == "__main__":
    main()
