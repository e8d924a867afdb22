"""What `--lineage` costs a large export's cycle (docs/delivery.md, Lineage), in one run:

    python3 bench/lineage.py [--db postgresql+psycopg://root@127.0.0.1:5432/test] [--rows 1000000]

It makes bench/backlog.py's backlog (COPY) in a schema of its own (--loaded: the schema
holds it already), then runs `xdspub export` of every row to a directory, in one process
(Spark warm after a first cycle that is not counted), as dry runs so that every cycle
publishes the same rows: --rounds times without lineage, then with --lineage to a folder,
alternately. It prints each cycle (Spark start aside), the fastest and the median of each
kind and their ratios; the target (at most 1.10) is judged on the medians, which the
disk's moods sway less. The schema is dropped at the end unless --keep."""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
import backlog  # noqa: E402  (bench/ is no package)
import sqlalchemy as sa  # noqa: E402

from publisher.cycle import export  # noqa: E402
from publisher.settings import DeleteLimit, Settings  # noqa: E402

TARGET = 1.10


def cycle(settings: Settings, work: Path, lineage: bool) -> float:
    """One export's cycle seconds (its phases; the Spark session is warm), its timing line
    printed."""
    out, record = work / "out", work / "lineage"
    shutil.rmtree(out, ignore_errors=True)
    shutil.rmtree(record, ignore_errors=True)
    settings = replace(settings, lineage=f"{record}/" if lineage else None)
    report = export(settings, str(out))
    if lineage:
        lines = sum(sum(1 for _ in f.open("rb")) for f in record.iterdir())
        assert lines == report.rows, f"{lines} lineage lines for {report.rows} rows"
    print(f"  {'with' if lineage else 'without'} --lineage: {report.timing()}", flush=True)
    return report.seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", default="postgresql+psycopg://root@127.0.0.1:5432/test")
    parser.add_argument("--schema", default="bench_lineage", help="schema made afresh")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--loaded", action="store_true", help="the schema holds the backlog already")
    parser.add_argument("--keep", action="store_true", help="keep the schema")
    args = parser.parse_args()

    if not args.loaded:
        backlog.load(args.db, args.schema, args.rows, args.objects, seed=1)
    settings = Settings(args.db, schema=args.schema, log_table=f"{args.schema}.indirect_process",
                        batch_size=args.batch_size, dry_run=True, small_cycle_rows=0, max_deletes=DeleteLimit())
    seconds: dict[bool, list[float]] = {False: [], True: []}
    try:
        with tempfile.TemporaryDirectory(prefix="xdspub-lineage-") as work:
            print("warm-up cycle (not counted):")
            cycle(settings, Path(work), False)
            for _ in range(args.rounds):
                for lineage in (False, True):
                    seconds[lineage].append(cycle(settings, Path(work), lineage))
    finally:
        if not args.keep:
            engine = sa.create_engine(args.db)
            with engine.begin() as conn:
                conn.exec_driver_sql(f"DROP SCHEMA IF EXISTS {args.schema} CASCADE")
            engine.dispose()
    print(f"{args.rows:,} rows, --batch-size {args.batch_size}, {args.rounds} cycles each:")
    for name, pick in (("fastest", min), ("median", statistics.median)):
        plain, kept = pick(seconds[False]), pick(seconds[True])
        print(f"  {name}: cycle without lineage {plain:.2f} s, with --lineage {kept:.2f} s, "
              f"ratio {kept / plain:.3f}")
    ratio = statistics.median(seconds[True]) / statistics.median(seconds[False])
    print(f"ratio of the medians {ratio:.3f} (target at most {TARGET}: {'met' if ratio <= TARGET else 'MISSED'})")


if __name__ == "__main__":
    main()
