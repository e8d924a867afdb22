"""Make an event log backlog to time publishers on, in SQLite, PostgreSQL or MariaDB.

    python3 bench/backlog.py postgresql+psycopg://root@127.0.0.1:5432/test --schema bench
    python3 bench/backlog.py sqlite:////tmp/backlog.db --rows 100000 --objects 10000

The schema (SQLite: the file) is made afresh: the event log and the sample schema, usr with
one row per object (every tenth without a manager, the others managed by the user before)
and usr_phone with two phone numbers per object. Rows spread over the objects, all eight
event types, a fifth of them query-back (--query-back-share); the usr rows exist, so query-back finds them. With
--child-share, that share of the rows are events of the multi-valued attribute
usr_phone.phoneno (types 1, 2, 3 and 8; one in four in the child table's form).
PostgreSQL is loaded with COPY."""

from __future__ import annotations

import argparse
import base64
import io
import random
from collections.abc import Iterator
from pathlib import Path

import sqlalchemy as sa

from publisher.source.database import connect
from publisher.source.init_db import init_db

FIELDS = ("fname", "lname", "photo")
EVENT_COLUMNS = ("table_key", "event_type", "table_name", "column_name", "old_value", "new_value")


def phone(rng: random.Random) -> str:
    return f"555-{rng.randrange(10**4):04d}"


def child_event(rng: random.Random, key: str) -> tuple:
    """An event of usr_phone.phoneno, in the parent's form or the child table's."""
    kind = rng.choices((1, 2, 3, 8), weights=(3, 4, 1, 2))[0]
    old = phone(rng) if kind == 2 else None
    new = phone(rng) if kind != 8 else None
    if rng.random() < 0.25:
        return (key, kind, "usr_phone", "phoneno", old, new)
    return (key, kind, "usr", "usr_phone.phoneno", old, new)


def event(
    rng: random.Random, objects: int, child_share: float = 0.0, query_back_share: float = 0.2
) -> tuple:
    idu = rng.randrange(1, objects + 1)
    key = f"idu={idu}"
    if child_share and rng.random() < child_share:
        return child_event(rng, key)
    if rng.random() < query_back_share:
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


USR_COLUMNS = ("idu", "fname", "lname", "photo", "manager")


def users(rng: random.Random, objects: int) -> Iterator[tuple]:
    return (
        (i, f"first{i}", f"last{i}", rng.randbytes(4), None if i % 10 == 1 else i - 1)
        for i in range(1, objects + 1)
    )


def phones(rng: random.Random, objects: int) -> Iterator[tuple]:
    return ((i, phone(rng)) for i in range(1, objects + 1) for _ in range(2))


def _copy_text(rows: Iterator[tuple]) -> io.StringIO:
    def field(value: object) -> str:
        if value is None:
            return "\\N"
        if isinstance(value, bytes):
            return "\\\\x" + value.hex()
        return str(value)

    return io.StringIO("".join("\t".join(map(field, row)) + "\n" for row in rows))


def load(
    url: str,
    schema: str,
    rows: int,
    objects: int,
    seed: int,
    child_share: float = 0.0,
    query_back_share: float = 0.2,
) -> None:
    backend = sa.engine.make_url(url).get_backend_name()
    if backend == "sqlite":
        Path(sa.engine.make_url(url).database).unlink(missing_ok=True)
    engine, dialect = database = connect(url, create=True)
    if dialect.has_schemas:
        with engine.begin() as conn:
            drop = "DROP SCHEMA IF EXISTS {} CASCADE" if backend == "postgresql" else "DROP SCHEMA IF EXISTS {}"
            conn.exec_driver_sql(drop.format(schema))
            conn.exec_driver_sql(f"CREATE SCHEMA {schema}")
    init_db(database, schema, "indirect_process", sample=True, flavour="none")
    rng = random.Random(seed)
    prefix = f"{schema}." if dialect.has_schemas else ""
    tables = {  # table (columns): its rows
        f"{prefix}usr ({', '.join(USR_COLUMNS)})": users(rng, objects),
        f"{prefix}usr_phone (idu, phoneno)": phones(rng, objects),
    }
    log = f"{prefix}indirect_process ({', '.join(EVENT_COLUMNS)})"

    def events(count: int) -> Iterator[tuple]:
        return (event(rng, objects, child_share, query_back_share) for _ in range(count))

    with engine.connect() as conn:
        raw = conn.connection.driver_connection
        cursor = raw.cursor()
        if backend == "postgresql":
            for target, values in tables.items():
                with cursor.copy(f"COPY {target} FROM STDIN") as copy:
                    copy.write(_copy_text(values).getvalue())
            with cursor.copy(f"COPY {log} FROM STDIN") as copy:
                for start in range(0, rows, 100_000):
                    copy.write(_copy_text(events(min(100_000, rows - start))).getvalue())
            cursor.execute(f"ANALYZE {prefix}indirect_process")
        else:
            mark = "?" if backend == "sqlite" else "%s"

            def insert(target: str, width: int) -> str:
                return f"INSERT INTO {target} VALUES ({', '.join([mark] * width)})"

            for target, values in tables.items():
                values = list(values)
                cursor.executemany(insert(target, len(values[0])), values)
            for start in range(0, rows, 100_000):
                cursor.executemany(insert(log, len(EVENT_COLUMNS)), list(events(min(100_000, rows - start))))
        raw.commit()
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db", help="SQLAlchemy URL (SQLite: the file is made afresh)")
    parser.add_argument("--schema", default="indirect", help="schema made afresh (not SQLite)")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--objects", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--child-share", type=float, default=0.0,
                        help="share of the rows on usr_phone.phoneno (0 to 1)")
    parser.add_argument("--query-back-share", type=float, default=0.2,
                        help="share of the other rows that are query-back events (0 to 1)")
    args = parser.parse_args()
    load(args.db, args.schema, args.rows, args.objects, args.seed, args.child_share,
         args.query_back_share)
    print(f"{args.db}: {args.rows} pending rows over {args.objects} objects")


if __name__ == "__main__":
    main()
