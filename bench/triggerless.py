"""Triggerless publication on PostgreSQL against this run's ceilings (docs/triggerless.md).

    python3 bench/triggerless.py [--rows 1000000] [--keep]
    python3 bench/triggerless.py --rows 4000000 --peak-only

It makes, in a schema of its own, a class ``usr`` of --rows objects (a reference column
``manager``) and a child table ``usr_phone`` of as many rows, records their state with a
first cycle (--startup future), changes 1% of the objects (updates, references, child
inserts and deletes, object inserts and deletes), then measures:
1. the ceiling: COPY of both tables, pyarrow reading the previous state and writing it
   again, and rendering as many commands as the cycle makes with publisher.render.xds;
2. the cycle of `xdspub export --mode triggerless` (Spark start apart, from its timing
   line) against that ceiling (target at most 2.0);
3. a cycle with no change against COPY plus the state read (target at most 1.2);
and the peak RSS of the process tree of each. --peak-only makes the objects and runs the
first cycle and a 1%-changed one, printing their peaks (target under 1.5 GiB at 4,000,000
objects)."""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
import tempfile
import time
import uuid
from pathlib import Path

import psycopg
import pyarrow.parquet as pq

BENCH = Path(__file__).resolve().parent
URL = "postgresql+psycopg://postgres@127.0.0.1:5432/test"
TIMING = re.compile(r"xdspub: Spark start ([0-9.]+) s, cycle ([0-9.]+) s")
COMMANDS = re.compile(r"; ([0-9]+) commands, ")


def _module(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


scale = _module("scale")


def make_objects(conn: psycopg.Connection, schema: str, rows: int) -> None:
    conn.execute(f"CREATE SCHEMA {schema}")
    conn.execute(
        f"CREATE TABLE {schema}.usr (idu INTEGER PRIMARY KEY, fname VARCHAR(40), lname VARCHAR(40), "
        f"dept INTEGER, manager INTEGER REFERENCES {schema}.usr (idu))"
    )
    conn.execute(
        f"CREATE TABLE {schema}.usr_phone (idu INTEGER NOT NULL REFERENCES {schema}.usr (idu) "
        "ON DELETE CASCADE, phoneno VARCHAR(20) NOT NULL)"
    )
    conn.execute(
        f"INSERT INTO {schema}.usr SELECT i, 'first' || i, 'last' || (i % 1000), i % 50, "
        f"CASE WHEN i > 1 THEN i / 2 END FROM generate_series(1, {rows}) AS i"
    )
    conn.execute(
        f"INSERT INTO {schema}.usr_phone SELECT i, '+49-' || i FROM generate_series(1, {rows}) AS i"
    )
    conn.execute(f"CREATE INDEX ON {schema}.usr_phone (idu)")
    conn.execute(f"CREATE INDEX ON {schema}.usr (manager)")  # each delete looks for references
    conn.commit()
    conn.execute(f"ANALYZE {schema}.usr")
    conn.execute(f"ANALYZE {schema}.usr_phone")
    conn.commit()


def change_one_percent(conn: psycopg.Connection, schema: str, rows: int) -> int:
    """Changes 1% of the objects; how many objects changed."""
    share = rows // 100
    step = rows // share
    part = share // 10
    targets = [1 + i * step for i in range(share)]
    groups = [targets[i * part:(i + 1) * part] for i in range(10)]
    s = schema
    with conn.cursor() as cursor:
        for ids in groups[0:4]:
            cursor.execute(f"UPDATE {s}.usr SET fname = fname || '*' WHERE idu = ANY(%s)", (ids,))
        cursor.execute(f"UPDATE {s}.usr SET manager = 1 WHERE idu = ANY(%s)", (groups[4],))
        cursor.execute(f"UPDATE {s}.usr SET lname = NULL WHERE idu = ANY(%s)", (groups[5],))
        cursor.execute(f"INSERT INTO {s}.usr_phone SELECT i, '+1-' || i FROM unnest(%s::int[]) AS i", (groups[6],))
        cursor.execute(f"DELETE FROM {s}.usr_phone WHERE idu = ANY(%s)", (groups[7],))
        cursor.execute(f"UPDATE {s}.usr SET manager = NULL WHERE manager = ANY(%s)", (groups[8],))
        cursor.execute(f"DELETE FROM {s}.usr WHERE idu = ANY(%s)", (groups[8],))
        cursor.execute(
            f"INSERT INTO {s}.usr (idu, fname) SELECT {rows} + i, 'new' || i "
            f"FROM generate_series(1, {len(groups[9])}) AS i"
        )
    conn.commit()
    return share


def copy_seconds(conn: psycopg.Connection, schema: str) -> float:
    started = time.perf_counter()
    with conn.cursor() as cursor:
        for table in ("usr", "usr_phone"):
            with cursor.copy(f"COPY (SELECT * FROM {schema}.{table}) TO STDOUT") as copy:
                for _ in copy:
                    pass
    return time.perf_counter() - started


def state_seconds(state: Path, scratch: Path) -> tuple[float, float]:
    """Seconds to read every class's state with pyarrow, and to write it again."""
    folder = next(state.glob("*/CURRENT")).parent  # the database's and schema's
    current = folder / (folder / "CURRENT").read_text().strip()
    started = time.perf_counter()
    tables = [pq.read_table(folder) for folder in sorted(current.iterdir()) if folder.is_dir()]
    read = time.perf_counter() - started
    started = time.perf_counter()
    for number, table in enumerate(tables):
        pq.write_table(table, scratch / f"{number}.parquet")
    return read, time.perf_counter() - started


def export(name: str, schema: str, state: Path, out: Path, logs: Path, startup: str = "resync") -> tuple[float, int, int]:
    """Cycle seconds (Spark start apart), peak KiB and commands of one triggerless export."""
    command = [sys.executable, "-m", "publisher", "export", "--db", URL, "--schema", schema,
               "--mode", "triggerless", "--state-dir", str(state), "--startup", startup,
               "--batch-size", "128", "--max-deletes", "none", "--out", str(out)]
    _wall, peak, stderr = scale.run(name, command, logs / name)
    timing, commands = TIMING.search(stderr), COMMANDS.search(stderr)
    return float(timing.group(2)) if timing else float("nan"), peak, int(commands.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--peak-only", action="store_true")
    parser.add_argument("--first-startup", choices=["future", "resync", "all"], default="future",
                        help="the first cycle's --startup (resync and all publish every object)")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    schema = f"bench_tl_{uuid.uuid4().hex[:8]}"
    work = Path(tempfile.mkdtemp(prefix="xdspub-bench-tl-"))
    state, logs = work / "state", work / "logs"
    logs.mkdir()
    conn = psycopg.connect("host=127.0.0.1 user=postgres dbname=test")
    try:
        started = time.monotonic()
        make_objects(conn, schema, args.rows)
        print(f"{args.rows:,} objects and {args.rows:,} child rows made in {time.monotonic() - started:.1f} s")
        first, peak, commands = export("first", schema, state, work / "out-first", logs, args.first_startup)
        print(f"first cycle (--startup {args.first_startup}, {commands:,} commands): {first:.2f} s, "
              f"peak RSS {peak / 1024:,.0f} MiB")
        changed = change_one_percent(conn, schema, args.rows)
        if args.peak_only:
            cycle, peak, commands = export("changed", schema, state, work / "out-changed", logs)
            print(f"cycle, 1% changed ({commands:,} commands): {cycle:.2f} s, peak RSS {peak / 1024:,.0f} MiB")
            return
        copy = copy_seconds(conn, schema)
        state_read, state_write = state_seconds(state, work)
        cycle, peak, commands = export("changed", schema, state, work / "out-changed", logs)
        render = scale.render_ceiling(commands, schema)
        ceiling = copy + state_read + state_write + render
        quiet, quiet_peak, _ = export("unchanged", schema, state, work / "out-unchanged", logs)
        print(f"objects changed: {changed:,}; commands: {commands:,}")
        print(f"ceiling: COPY {copy:.2f} s + state read {state_read:.2f} s + state write "
              f"{state_write:.2f} s + render {render:.2f} s = {ceiling:.2f} s")
        print(f"cycle, 1% changed: {cycle:.2f} s, ratio {cycle / ceiling:.2f} (target 2.0), "
              f"peak RSS {peak / 1024:,.0f} MiB")
        print(f"cycle, no change: {quiet:.2f} s, ratio {quiet / (copy + state_read):.2f} to COPY + state read "
              f"(target 1.2), peak RSS {quiet_peak / 1024:,.0f} MiB")
    finally:
        scale.clean_up(conn, schema, work, args.keep)


if __name__ == "__main__":
    main()
