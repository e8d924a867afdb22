"""How long a cold Spark start takes, and where: the session (JVM and SparkContext), then
the warm-up job that forks the Python workers (publisher/plans/session.py), then a second warm-up
on the warm session for comparison. Each start runs in a process of its own, with the
class archive that set-up writes (``python3 -m publisher.plans.session``) and without it.

    python3 bench/spark_start.py [--runs 2] [--java-options "-XX:TieredStopAtLevel=1"]

--java-options replaces publisher.plans.session.JAVA_OPTIONS for this run, to try JVM flags."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time

import publisher.plans.session as spark_module


def one_start(master: str, java_options: str | None, archive: bool) -> dict:
    """A cold start in this process: its session, warm-up and a warm warm-up, in seconds."""
    if java_options is not None:
        spark_module.JAVA_OPTIONS = java_options
    if not archive:
        spark_module.class_archive = lambda: spark_module.Path("/nonexistent")
    warm_up = spark_module._warm_up
    marks: list[float] = []

    def timed_warm_up(spark) -> None:
        marks.append(time.monotonic())
        warm_up(spark)

    spark_module._warm_up = timed_warm_up
    started = time.monotonic()
    spark = spark_module.spark_session(master)
    ended = time.monotonic()
    warm_up(spark)
    return {
        "start": ended - started,
        "session": marks[0] - started,
        "warm_up": ended - marks[0],
        "again": time.monotonic() - ended,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--java-options", help="instead of publisher.plans.session.JAVA_OPTIONS")
    parser.add_argument("--runs", type=int, default=2, help="starts of each kind, alternating")
    parser.add_argument("--one", choices=("archive", "none"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        result = one_start(args.master, args.java_options, args.one == "archive")
        print(json.dumps(result))
        return
    if not spark_module.class_archive().is_file():
        sys.exit(f"no class archive at {spark_module.class_archive()}: run python3 -m publisher.plans.session")
    options = [] if args.java_options is None else ["--java-options", args.java_options]
    print(f"java options: {args.java_options or spark_module.JAVA_OPTIONS}, the driver's also {spark_module.DRIVER_JAVA_OPTIONS}")
    for run in range(args.runs):
        for kind in ("archive", "none"):
            out = subprocess.run(
                [sys.executable, __file__, "--master", args.master, "--one", kind, *options],
                check=True, capture_output=True, text=True,
            ).stdout
            r = json.loads(out.strip().splitlines()[-1])
            label = "with class archive" if kind == "archive" else "without archive   "
            print(f"Spark start {label} {r['start']:.2f} s: session {r['session']:.2f} s, "
                  f"warm-up job {r['warm_up']:.2f} s (again, warm: {r['again']:.2f} s)")


if __name__ == "__main__":
    main()
