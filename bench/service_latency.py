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
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Polled:
    """A schema of its own with the sample per-field triggers, and `xdspub poll` on it."""

    engine: sa.Engine
    schema: str

    @property
    def usr(self) -> str:
        return f"{self.schema}.usr"

    @property
    def log(self) -> str:
        return f"{self.schema}.indirect_process"

    def drained(self) -> bool:
        with self.engine.connect() as conn:
            return not conn.execute(sa.text(f"SELECT count(*) FROM {self.log} WHERE status = 'N'")).scalar()

    def warm_up(self) -> None:
        """One change through a whole cycle, so the Python workers are warm too."""
        with self.engine.begin() as conn:
            conn.execute(sa.text(f"INSERT INTO {self.usr} (idu, fname) VALUES (0, 'warm')"))
        wait(self.drained, 180, "the warm-up change to be published")

    def burst(self, first: int, count: int) -> float:
        """Seconds from the commit of ``count`` changes at once (idu from ``first``) until
        the service has published them all."""
        with self.engine.begin() as conn:
            conn.execute(
                sa.text(f"INSERT INTO {self.usr} (idu, fname) VALUES (:n, :f)"),
                [{"n": n, "f": f"b{n}"} for n in range(first, first + count)],
            )
        started = time.monotonic()
        wait(self.drained, 1800, "the burst to be published")
        return time.monotonic() - started


@contextmanager
def polling(url: str, out: str, log_path: Path, wake: bool = True) -> Iterator[Polled]:
    """`xdspub poll` at Polling Interval 1, one document per command, to ``out`` (a folder
    or a broker URL), its standard error at ``log_path``, on a schema made for it (with the
    event log's wake-up trigger unless not ``wake``); the service stopped and the schema
    dropped at the end."""
    schema = f"xb_{uuid.uuid4().hex[:8]}"
    engine, dialect = database = connect(url)
    init_db(database, schema, "indirect_process", sample=True, flavour="field", wake=wake)
    with open(log_path, "wb") as stderr:
        service = subprocess.Popen(
            [sys.executable, "-m", "publisher", "poll", "--db", url, "--schema", schema,
             "--out", out, "--interval", "1", "--publisher-user", "xdspub"],
            stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True,
        )
    try:
        wait(lambda: "lock acquired" in log_path.read_text() or service.poll() is not None,
             180, "the service to start")
        if service.poll() is not None:
            raise SystemExit(f"the service exited {service.returncode}; its standard error ends:\n"
                             + "\n".join(log_path.read_text().splitlines()[-20:]))
        yield Polled(engine, schema)
    finally:
        os.killpg(service.pid, signal.SIGTERM)
        service.wait(timeout=120)
        with engine.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()


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

    out = Path(tempfile.mkdtemp(prefix="xdspub-latency-", dir=args.out_parent))
    with polling(args.url, str(out), out.with_suffix(".log"), wake=not args.no_wake) as polled:
        polled.warm_up()
        engine, usr, log = polled.engine, polled.usr, polled.log

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

        seconds = polled.burst(args.changes + 1, args.burst)
        print(f"burst of {args.burst} trigger-made changes published in {seconds:.1f} s: "
              f"{args.burst / seconds:.0f} changes/s sustained")


if __name__ == "__main__":
    main()
