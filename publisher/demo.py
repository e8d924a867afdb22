"""``xdspub demo``: the documents' examples (Tables 5-16 to 5-20), live on SQLite.

It creates the sample schema with per-field triggers, makes each documented change, and
publishes after each one, printing the XDS the publisher sends."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import sqlalchemy as sa

from publisher.delivery.sinks import StdoutSink
from publisher.settings import Settings

LOG = "indirect_process"
STEPS: list[tuple[str, list[str]]] = [
    (
        "Table 5-16: a row is inserted into usr; the triggers log three type-1 events",
        ["INSERT INTO usr (idu, fname, lname, photo) VALUES (1, 'Jack', 'Frost', X'AAAA')"],
    ),
    (
        "Table 5-17: the row is updated; the triggers log three type-2 events",
        ["UPDATE usr SET fname = 'John', lname = 'Doe', photo = X'BBBB' WHERE idu = 1"],
    ),
    (
        "Table 5-18: type-3 events (update field, remove all values first), as a trigger "
        "without before images logs them",
        [
            f"INSERT INTO {LOG} (table_key, event_type, table_name, column_name, old_value, "
            "new_value) VALUES "
            "('idu=1', 3, 'usr', 'fname', 'Jack', 'John'), "
            "('idu=1', 3, 'usr', 'lname', 'Frost', 'Doe'), "
            "('idu=1', 3, 'usr', 'photo', 'qqo=', 'u7s=')"
        ],
    ),
    (
        "Table 5-19: the row is deleted; the triggers log a type-4 event",
        ["DELETE FROM usr WHERE idu = 1"],
    ),
    (
        "Table 5-20: the row is inserted again with a type-5 event (insert row, query-back); "
        "it supersedes the triggers' type-1 events and publishes the current values",
        [
            "INSERT INTO usr (idu, fname, lname, photo) VALUES (1, 'John', 'Doe', X'BBBB')",
            f"INSERT INTO {LOG} (table_key, event_type, table_name) VALUES ('idu=1', 5, 'usr')",
        ],
    ),
]


def run_demo(keep: str | None = None) -> None:
    from publisher.cycle import run_cycle
    from publisher.source.database import connect
    from publisher.source.event_log import open_event_log
    from publisher.source.init_db import init_db

    folder = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="xdspub-demo-"))
    folder.mkdir(parents=True, exist_ok=True)
    database = folder / "demo.db"
    database.unlink(missing_ok=True)
    settings = Settings(db_url=f"sqlite:///{database}", spark_master="local[2]")
    engine, dialect = connect(settings.db_url, create=True)
    init_db(engine, dialect, settings.schema, LOG, sample=True, flavour="field")
    log = open_event_log(engine, dialect, settings)
    out = sys.stdout
    for title, statements in STEPS:
        with engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))
        out.write(f"\n<!-- {title} -->\n")
        out.flush()
        report = run_cycle(settings, engine, dialect, log, StdoutSink())
        out.write(f"<!-- {report.summary()} -->\n")
    out.write(f"\n<!-- the demo database: {database} -->\n")
    engine.dispose()
