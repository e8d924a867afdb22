"""Latency and sustained rate of ``xdspub poll`` on PostgreSQL, with the service warm.

    python3 bench/service_latency.py [--url postgresql+psycopg://root@127.0.0.1/test] [--out-parent DIR] [--no-wake]

It creates a schema of its own with the sample per-field triggers and the event log's
wake-up trigger (init-db --wake; not with --no-wake, so the service only polls), starts
the service (Polling Interval 1, one document per command, directory output), waits until
Spark is warm, then
1. makes --changes changes (each an INSERT into usr that its trigger logs as one event),
   --rate per second, and measures for each the time from its commit to its document on
   disk (the file's modification time): median and 99th percentile;
2. commits a burst of --burst changes at once and measures how long the service takes to
   publish them all: the sustained rate it keeps up with.
The schema is dropped at the end."""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import sqlalchemy as sa

from publisher.source.database import connect
from publisher.source.init_db import init_db


def wait(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(0.05)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", default="postgresql+psycopg://root@127.0.0.1:5432/test")
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--burst", type=int, default=20000)
    parser.add_argument("--out-parent", help="where the output folder is made (default: the "
                        "temporary folder); creating files is faster on some folders than others")
    parser.add_argument("--no-wake", action="store_true", help="no wake-up trigger: the service only polls")
    args = parser.parse_args()

    schema = f"xb_{uuid.uuid4().hex[:8]}"
    engine, dialect = connect(args.url)
    init_db(engine, dialect, schema, "indirect_process", sample=True, flavour="field", wake=not args.no_wake)
    out = Path(tempfile.mkdtemp(prefix="xdspub-latency-", dir=args.out_parent))
    log_path = out.with_suffix(".log")
    service = subprocess.Popen(
        [sys.executable, "-m", "publisher", "poll", "--db", args.url, "--schema", schema,
         "--out", str(out), "--interval", "1", "--publisher-user", "xdspub"],
        stdout=subprocess.DEVNULL, stderr=open(log_path, "wb"), start_new_session=True,
    )
    usr, log = f"{schema}.usr", f"{schema}.indirect_process"
    try:
        wait(lambda: "lock acquired" in log_path.read_text(), 180, "the service to start")
        # One change through a whole cycle first, so the Python workers are warm too.
        with engine.begin() as conn:
            conn.execute(sa.text(f"INSERT INTO {usr} (idu, fname) VALUES (0, 'warm')"))
        wait(lambda: any(out.glob("*.xml")), 180, "the warm-up document")

        committed: dict[int, float] = {}
        started = time.monotonic()
        for n in range(1, args.changes + 1):
            with engine.begin() as conn:
                conn.execute(sa.text(f"INSERT INTO {usr} (idu, fname) VALUES (:n, :f)"), {"n": n, "f": f"u{n}"})
                record_id = conn.execute(
                    sa.text(f"SELECT max(record_id) FROM {log} WHERE table_key = :k"), {"k": f"idu={n}"}
                ).scalar()
            committed[record_id] = time.time()
            time.sleep(max(0.0, started + n / args.rate - time.monotonic()))
        files = {rid: out / f"{rid:020d}.xml" for rid in committed}
        wait(lambda: all(f.exists() for f in files.values()), 600, "every document")
        latencies = sorted(os.stat(files[rid]).st_mtime - t for rid, t in committed.items())
        p99 = latencies[min(len(latencies) - 1, int(round(0.99 * len(latencies))) - 1)]
        waking = "polling only" if args.no_wake else "waking on notifications"
        print(f"latency over {len(latencies)} changes at {args.rate:g}/s, Polling Interval 1, {waking}: "
              f"median {statistics.median(latencies):.2f} s, p99 {p99:.2f} s, max {latencies[-1]:.2f} s")

        base = args.changes + 1
        with engine.begin() as conn:
            conn.execute(
                sa.text(f"INSERT INTO {usr} (idu, fname) VALUES (:n, :f)"),
                [{"n": n, "f": f"b{n}"} for n in range(base, base + args.burst)],
            )
        burst_start = time.monotonic()

        def drained() -> bool:
            with engine.connect() as conn:
                return not conn.execute(sa.text(f"SELECT count(*) FROM {log} WHERE status = 'N'")).scalar()

        wait(drained, 1800, "the burst to be published")
        seconds = time.monotonic() - burst_start
        print(f"burst of {args.burst} trigger-made changes published in {seconds:.1f} s: "
              f"{args.burst / seconds:.0f} changes/s sustained")
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(timeout=120)
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()


if __name__ == "__main__":
    main()
