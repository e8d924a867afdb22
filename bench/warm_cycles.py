"""A cold cycle against warm ones: the same export run several times in one process, on a
backlog made by bench/backlog.py, as a dry run (nothing marked, so every cycle sees the
same rows):

    python3 bench/backlog.py postgresql+psycopg://root@127.0.0.1:5432/test --schema prof
    python3 bench/warm_cycles.py postgresql+psycopg://root@127.0.0.1:5432/test --schema prof

The first cycle pays for a fresh JVM's first jobs; the polling service pays it once."""

from __future__ import annotations

import argparse
import tempfile

from publisher.cycle import export
from publisher.settings import DeleteLimit, Settings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--schema", default="prof")
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=128)
    args = parser.parse_args()
    settings = Settings(
        args.db,
        schema=args.schema,
        log_table=f"{args.schema}.indirect_process",
        batch_size=args.batch_size,
        max_deletes=DeleteLimit(),  # a backlog's deletes are meant
        dry_run=True,
    )
    for cycle in range(1, args.cycles + 1):
        with tempfile.TemporaryDirectory(prefix="xdspub-warm-") as out:
            report = export(settings, out)
        print(f"cycle {cycle}: {report.timing()}", flush=True)


if __name__ == "__main__":
    main()
