"""`xdspub explain` over a backlog against a `--dry-run` export of the same rows, on
PostgreSQL (docs/explain.md):

    python3 bench/explain.py [--db postgresql+psycopg://root@127.0.0.1:5432/test] [--rows 100000]

It makes a backlog of --rows pending rows with bench/backlog.py in a schema of its own,
then, in the same run and in turn (--repeat times, the best of each kept), times the wall
clock of three commands, Python's start included:
1. the ceiling: `xdspub export --dry-run --out DIR --quiet` (documents written, statuses
   left);
2. `xdspub explain --pending --format json` to a file;
3. `xdspub explain --pending` (text) to a file;
and prints each and its ratio to the ceiling (target at most 1.5). The schema is dropped at
the end unless --keep."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import backlog  # noqa: E402  (bench/ is no package)

from publisher.source.database import connect  # noqa: E402

TARGET = 1.5


def timed(args: list[str], stdout: Path | None = None) -> float:
    env = {**os.environ, "PYTHONPATH": str(BENCH.parent)}
    start = time.perf_counter()
    with open(stdout or os.devnull, "wb") as out:
        subprocess.run([sys.executable, "-m", "publisher", *args], check=True, env=env, stdout=out)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="postgresql+psycopg://root@127.0.0.1:5432/test")
    parser.add_argument("--schema", default="bench_explain")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    backlog.load(args.db, args.schema, args.rows, args.objects, seed=1)
    base = ["--db", args.db, "--schema", args.schema]
    best = {"export --dry-run": float("inf"), "explain (json)": float("inf"), "explain (text)": float("inf")}
    lines = {}
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch)
        for round_ in range(args.repeat):
            documents = out / f"documents{round_}"
            documents.mkdir()
            runs = {
                "export --dry-run": (["export", *base, "--dry-run", "--quiet", "--max-deletes", "none", "--out", str(documents)], None),
                "explain (json)": (["explain", *base, "--pending", "--format", "json"], out / "explain.jsonl"),
                "explain (text)": (["explain", *base, "--pending"], out / "explain.txt"),
            }
            for name, (command, stdout) in runs.items():
                best[name] = min(best[name], timed(command, stdout))
        lines["json"] = sum(1 for _ in open(out / "explain.jsonl", encoding="utf-8"))
    ceiling = best["export --dry-run"]
    print(f"{args.rows} pending rows over {args.objects} objects; {lines['json']} rows explained")
    for name, seconds in best.items():
        ratio = seconds / ceiling
        verdict = "" if name.startswith("export") else f"  (target at most {TARGET}: {'met' if ratio <= TARGET else 'NOT met'})"
        print(f"{name:18} {seconds:7.2f} s  ratio {ratio:.2f}{verdict}")
    if not args.keep:
        engine, _ = connect(args.db)
        with engine.begin() as conn:
            conn.exec_driver_sql(f"DROP SCHEMA {args.schema} CASCADE")
        engine.dispose()


if __name__ == "__main__":
    main()
