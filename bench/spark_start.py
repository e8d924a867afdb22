"""How long a cold Spark start takes, and where: the session (JVM and SparkContext), then
the warm-up job that forks the Python workers (publisher/spark.py), then a second warm-up
on the warm session for comparison.

    python3 bench/spark_start.py [--java-options "-XX:TieredStopAtLevel=1"]

--java-options replaces publisher.spark.JAVA_OPTIONS for this run, to try JVM flags."""

from __future__ import annotations

import argparse
import time

import publisher.spark as spark_module


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--master", default="local[*]")
    parser.add_argument("--java-options", help="instead of publisher.spark.JAVA_OPTIONS")
    args = parser.parse_args()
    if args.java_options is not None:
        spark_module.JAVA_OPTIONS = args.java_options
    warm_up = spark_module._warm_up
    marks: list[float] = []

    def timed_warm_up(spark) -> None:
        marks.append(time.monotonic())
        warm_up(spark)

    spark_module._warm_up = timed_warm_up
    started = time.monotonic()
    spark = spark_module.spark_session(args.master)
    ended = time.monotonic()
    warm_up(spark)
    again = time.monotonic() - ended
    print(f"Spark start {ended - started:.2f} s: session {marks[0] - started:.2f} s, "
          f"warm-up job {ended - marks[0]:.2f} s (again, warm: {again:.2f} s); "
          f"java options: {spark_module.JAVA_OPTIONS}")


if __name__ == "__main__":
    main()
