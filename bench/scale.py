"""Throughput of `xdspub export` on a large PostgreSQL backlog, against the machine's ceilings
and bench/row_publisher.py, the row-at-a-time baseline.

    python3 bench/scale.py [--rows 1000000] [--objects 100000] [--skip-row-publisher]

It makes the backlog with bench/backlog.py in a schema of its own, then measures
1. the ceilings of this machine: reading the pending rows with COPY; rendering 3-attribute
   modify commands with publisher.render.xds alone (as many as there are rows, at most
   200,000, reported per second); the bulk status update by ranges of 10,000 record_ids,
   rolled back;
2. `xdspub export` to a directory: Spark start and cycle apart (from its timing line),
   wall clock, peak RSS of the process tree, and the cycle against the ceiling of its own
   commands (COPY + lxml for as many commands spread over the cores + UPDATE);
3. the row publisher the same way, after the statuses are set back to 'N';
then checks that both wrote the same files, byte for byte, and the same statuses;
4. `xdspub export` again on a backlog with --child-share of its rows (default a fifth) on
   the multi-valued attribute usr_phone.phoneno, against the flat backlog's cycle;
5. `xdspub export` again on a mix of mostly per-field events (--field-mix: the share of
   query-back events, default 2%), ten rows per object as before, against its ceiling;
and prints a table. The schema and the work folder are removed at the end unless --keep."""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import psycopg
import sqlalchemy as sa

from publisher.model.commands import Attr, AttrOp, Command, CommandKind, association
from publisher.render.xds import command_xml

BENCH = Path(__file__).resolve().parent
RENDER_MAX = 200_000
RANGE = 10_000
TIMING = re.compile(r"xdspub: Spark start ([0-9.]+) s, cycle ([0-9.]+) s")
SUMMARY = re.compile(r"xdspub: [0-9]+ rows read, ([0-9]+) commands")


@dataclass
class Ceiling:
    """This run's ceilings: COPY and status UPDATE seconds, lxml commands a second a core."""

    copy: float = 0.0
    render: float = 1.0
    update: float = 0.0

    def of(self, commands: int, cores: int) -> tuple[float, float]:
        """(lxml seconds for ``commands`` spread over ``cores``, the whole ceiling)."""
        render = commands / self.render / cores
        return render, self.copy + render + self.update
COLUMNS = (
    "record_id, table_key, status, event_type, event_time, perpetrator, "
    "table_name, column_name, old_value, new_value"
)


def bench_module(name: str) -> ModuleType:
    # bench/ is not a package: load its scripts by path, as tests/test_differential.py does.
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


backlog = bench_module("backlog")
tree_rss_kib = bench_module("peak_rss").tree_rss_kib


def copy_ceiling(conn: psycopg.Connection, log: str) -> tuple[float, int]:
    """Seconds and bytes to read every pending row with COPY."""
    started, size = time.perf_counter(), 0
    with conn.cursor() as cursor:
        query = f"COPY (SELECT {COLUMNS} FROM {log} WHERE status = 'N') TO STDOUT"
        with cursor.copy(query) as copy:
            for block in copy:
                size += len(block)
    return time.perf_counter() - started, size


def render_ceiling(count: int, schema: str) -> float:
    """Seconds to build and serialise `count` modify commands of three attributes."""
    started = time.perf_counter()
    for i in range(1, count + 1):
        attrs = (
            Attr(AttrOp.MODIFY, "fname", "string", f"o{i}", (f"v{i}",)),
            Attr(AttrOp.REPLACE, "lname", "string", None, (f"l{i}",)),
            Attr(AttrOp.MODIFY, "photo", "octet", "qqo=", ("AAECAwQF",)),
        )
        where = association(f"idu={i}", "usr", schema)
        command_xml(Command(CommandKind.MODIFY, "usr", i, where, attrs))
    return time.perf_counter() - started


def update_ceiling(conn: psycopg.Connection, log: str) -> tuple[float, int]:
    """Seconds and rows of the status update by ranges, in a transaction rolled back."""
    low, high = conn.execute(f"SELECT min(record_id), max(record_id) FROM {log}").fetchone()
    ranges = [(start, min(start + RANGE - 1, high)) for start in range(low, high + 1, RANGE)]
    update = f"UPDATE {log} SET status = 'S' WHERE record_id BETWEEN %s AND %s AND status = 'N'"
    started = time.perf_counter()
    with conn.transaction(force_rollback=True), conn.cursor() as cursor:
        cursor.executemany(update, ranges)
        seconds, rows = time.perf_counter() - started, cursor.rowcount
    return seconds, rows  # without the rollback, which a real cycle does not pay


def clean_up(conn: psycopg.Connection, schema: str, work: Path, keep: bool) -> None:
    """Drop the bench's schema and its work folder, unless asked to keep them; close."""
    if keep:
        print(f"kept: schema {schema}, output in {work}")
    else:
        conn.execute(f"DROP SCHEMA IF EXISTS {schema} CASCADE")
        conn.commit()
        shutil.rmtree(work, ignore_errors=True)
    conn.close()


def run(name: str, command: list[str], logs: Path) -> tuple[float, int, str]:
    """Wall seconds, peak KiB over the process tree, and standard error of a command that
    must exit 0 (the backlog has no bad rows); exits with its standard error's tail if not."""
    err_path = logs.with_suffix(".err")
    with open(logs.with_suffix(".out"), "wb") as out, open(err_path, "wb") as err:
        started = time.monotonic()
        process = subprocess.Popen(command, stdout=out, stderr=err, cwd=BENCH.parent)
        peak = 0
        while process.poll() is None:
            peak = max(peak, tree_rss_kib(process.pid))
            time.sleep(0.1)
        wall = time.monotonic() - started
    stderr = err_path.read_text(errors="replace")
    if process.returncode != 0:
        print(f"{name} exited {process.returncode}; its standard error ends:",
              *stderr.splitlines()[-20:], sep="\n")
        sys.exit(1)
    for line in stderr.splitlines():
        if "rows read" in line or "Spark start" in line:  # the publisher's summary and timing
            print(f"  {line}")
    return wall, peak, stderr


def timed_export(
    url: str, schema: str, log: str, out: str, batch_size: int, logs: Path
) -> tuple[float, float, float, int, int]:
    """`xdspub export` of the backlog to ``out`` (a folder or a broker URL), its output
    and standard error kept at ``logs``: cycle and Spark start (from its timing line), wall
    seconds, peak KiB, and commands (from its summary)."""
    wall, peak, stderr = run("xdspub export", [
        sys.executable, "-m", "publisher", "export", "--db", url, "--schema", schema,
        "--log-table", log, "--out", out, "--batch-size", str(batch_size),
        "--small-cycle-rows", "0",  # the Spark plan, whatever the backlog's size
        "--max-deletes", "none"], logs)  # a backlog's deletes are meant
    timing, summary = TIMING.search(stderr), SUMMARY.search(stderr)
    if timing is None or summary is None:
        sys.exit(f"no summary or timing line in the export's standard error:\n{stderr[-2000:]}")
    return float(timing[2]), float(timing[1]), wall, peak, int(summary[1])


def export(
    args: argparse.Namespace, schema: str, log: str, out: Path, ceiling: Ceiling
) -> tuple[float, float, float, int, float]:
    """`xdspub export` of the backlog to ``out``: cycle and Spark start (from its timing
    line), wall seconds, peak KiB, and its cycle against the ceiling of the same commands."""
    cycle, start, wall, peak, commands = timed_export(
        args.url, schema, log, str(out), args.batch_size, out)
    cores = os.cpu_count() or 1
    render, whole = ceiling.of(commands, cores)
    print(f"  ceiling: COPY {ceiling.copy:.2f} s + lxml for {commands} commands on {cores} "
          f"cores {render:.2f} s + UPDATE {ceiling.update:.2f} s = {whole:.2f} s; "
          f"cycle / ceiling: {cycle / whole:.2f}")
    return cycle, start, wall, peak, cycle / whole


def statuses(conn: psycopg.Connection, log: str) -> list[tuple[int, str]]:
    return conn.execute(f"SELECT record_id, status FROM {log} ORDER BY record_id").fetchall()


def differences(left: Path, right: Path) -> list[str]:
    """Names of the files missing on one side or with other bytes."""
    names = sorted({p.name for p in left.iterdir()} | {p.name for p in right.iterdir()})
    return [
        n for n in names
        if not ((left / n).exists() and (right / n).exists())
        or (left / n).read_bytes() != (right / n).read_bytes()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql+psycopg://root@127.0.0.1:5432/test")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--schema", default="bench_scale")
    parser.add_argument("--skip-row-publisher", action="store_true")
    parser.add_argument("--child-share", type=float, default=0.2,
                        help="then the export again on a backlog with this share of its rows "
                             "on the child table usr_phone (0: not)")
    parser.add_argument("--field-mix", type=float, default=0.02,
                        help="then the export again on a backlog with this share of query-back "
                             "events, the rest per-field (negative: not)")
    parser.add_argument("--keep", action="store_true", help="keep the schema and the output")
    args = parser.parse_args()

    schema, log, rows = args.schema, f"{args.schema}.indirect_process", args.rows
    # psycopg takes the libpq form of the URL, without SQLAlchemy's +driver.
    conninfo = sa.engine.make_url(args.url).set(drivername="postgresql").render_as_string(False)
    work = Path(tempfile.mkdtemp(prefix="xdspub-scale-"))
    conn = psycopg.connect(conninfo, autocommit=True)  # no transaction held between steps
    try:
        started = time.perf_counter()
        backlog.load(args.url, schema, rows, args.objects, args.seed)
        seconds = time.perf_counter() - started
        print(f"backlog: {rows} rows over {args.objects} objects in {seconds:.1f} s")

        print("ceilings of this machine:")
        seconds, size = copy_ceiling(conn, log)
        ceiling = Ceiling(copy=seconds)
        # every row of the fresh backlog is pending: rows/s counts them all
        print(f"  COPY read: {seconds:.2f} s, {size / 1e6:.1f} MB, {rows / seconds:,.0f} rows/s")
        count = min(rows, RENDER_MAX)
        seconds = render_ceiling(count, schema)
        ceiling.render = count / seconds
        print(f"  lxml render: {count} commands in {seconds:.2f} s, "
              f"{count / seconds:,.0f} commands/s")
        seconds, updated = update_ceiling(conn, log)
        ceiling.update = seconds
        print(f"  status update by ranges of {RANGE}: {updated} rows in {seconds:.2f} s, "
              f"{updated / seconds:,.0f} rows/s")

        print("xdspub export:")
        export_out = work / "export"
        results = {"export": export(args, schema, log, export_out, ceiling)}
        export_statuses = statuses(conn, log)
        conn.execute(f"UPDATE {log} SET status = 'N'")  # the backlog as before: all pending

        if not args.skip_row_publisher:
            print("row publisher:")
            row_out = work / "row"
            wall, peak, _ = run("row publisher", [
                sys.executable, str(BENCH / "row_publisher.py"), "--db", args.url,
                "--schema", schema, "--log-table", log, "--batch-size", str(args.batch_size),
                "--out", str(row_out)], work / "row")
            results["row publisher"] = (wall, None, wall, peak, None)  # no Spark: cycle = wall
            differing = differences(export_out, row_out)
            same_statuses = export_statuses == statuses(conn, log)
            if differing or not same_statuses:
                print(f"same output: no; {len(differing)} files differ "
                      f"(first: {', '.join(differing[:5]) or '-'}); "
                      f"statuses {'equal' if same_statuses else 'differ'}")
                sys.exit(1)
            print("same output: yes")

        if args.child_share:
            backlog.load(args.url, schema, rows, args.objects, args.seed, args.child_share)
            print(f"xdspub export, {args.child_share:.0%} of the rows on usr_phone.phoneno:")
            results["export, children"] = export(args, schema, log, work / "children", ceiling)

        if args.field_mix >= 0:
            backlog.load(args.url, schema, rows, args.objects, args.seed, 0.0, args.field_mix)
            print(f"xdspub export, {args.field_mix:.0%} query-back, the rest per-field events:")
            seconds, _ = copy_ceiling(conn, log)
            field_ceiling = Ceiling(copy=seconds, render=ceiling.render)
            field_ceiling.update, _ = update_ceiling(conn, log)
            results["export, per-field"] = export(args, schema, log, work / "fields", field_ceiling)

        heads = ("rows", "cycle s", "Spark s", "wall s", "events/s", "peak MiB", "/ceiling")
        print("\n" + f"{'':<18}" + "".join(f"{h:>10}" for h in heads))
        for name, (cycle, start, wall, peak, ratio) in results.items():
            spark = "-" if start is None else f"{start:.2f}"
            against = "-" if ratio is None else f"{ratio:.2f}"
            print(f"{name:<18}{rows:>10}{cycle:>10.2f}{spark:>10}{wall:>10.2f}"
                  f"{rows / cycle:>10,.0f}{peak / 1024:>10.0f}{against:>10}")
        if "row publisher" in results:
            (c1, _, _, p1, _), (c2, _, _, p2, _) = results["export"], results["row publisher"]
            print(f"export / row publisher: events/s x{c2 / c1:.2f}, peak memory x{p1 / p2:.2f}")
        if "export, children" in results:
            ratio = results["export, children"][0] / results["export"][0]
            print(f"export cycle with child rows / flat: {ratio:.2f}")
    finally:
        clean_up(conn, schema, work, args.keep)


if __name__ == "__main__":
    main()
