"""Make an SQLite event log backlog to time ``xdspub export`` on.

    python3 bench/sqlite_backlog.py /tmp/backlog.db --rows 100000 --objects 10000
    /usr/bin/time -v xdspub export --db sqlite:////tmp/backlog.db --out /tmp/backlog.xml

Rows spread over the objects of the sample table usr, all eight event types, a fifth of
them query-back; the usr rows exist, so query-back finds them."""

from __future__ import annotations

import argparse
import base64
import random
import sqlite3
from pathlib import Path

from publisher.source.database import connect
from publisher.source.init_db import init_db

FIELDS = ("fname", "lname", "photo")


def event(rng: random.Random, objects: int) -> tuple:
    idu = rng.randrange(1, objects + 1)
    key = f"idu={idu}"
    if rng.random() < 0.2:  # query-back
        kind = rng.choice((5, 6, 7, 8))
        column = rng.choice(FIELDS) if kind in (7, 8) else None
        return (key, kind, "usr", column, None, None)
    kind = rng.choices((1, 2, 3, 4), weights=(3, 4, 2, 1))[0]
    if kind == 4:
        return (key, 4, "usr", None, None, None)
    column = rng.choice(FIELDS)
    new = base64.b64encode(rng.randbytes(6)).decode() if column == "photo" else f"v{rng.randrange(10**6)}"
    old = None if kind == 1 else ("qqo=" if column == "photo" else f"o{rng.randrange(10**6)}")
    return (key, kind, "usr", column, old, new)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", type=Path)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--objects", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    args.db.unlink(missing_ok=True)
    engine, dialect = connect(f"sqlite:///{args.db}", create=True)
    init_db(engine, dialect, "indirect", "indirect_process", sample=True, flavour="none")
    engine.dispose()
    rng = random.Random(args.seed)
    with sqlite3.connect(args.db) as conn:
        conn.executemany(
            "INSERT INTO usr VALUES (?, ?, ?, ?)",
            ((i, f"first{i}", f"last{i}", rng.randbytes(4)) for i in range(1, args.objects + 1)),
        )
        conn.executemany(
            "INSERT INTO indirect_process (table_key, event_type, table_name, column_name, "
            "old_value, new_value) VALUES (?, ?, ?, ?, ?, ?)",
            (event(rng, args.objects) for _ in range(args.rows)),
        )
    print(f"{args.db}: {args.rows} pending rows over {args.objects} objects")


if __name__ == "__main__":
    main()
