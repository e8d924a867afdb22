"""``xdspub demo``: the documents' examples (Tables 5-16 to 5-20), live on SQLite, then
changes of the logical class usr (docs/classes.md): its child tables and references, and
the same class read through the view view_usr in the driver's form.

It creates the sample schema with per-field triggers (made by ``xdspub triggers``), makes
each change, and publishes after each one, printing the XDS the publisher sends."""

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
    # The logical class usr: the child tables usr_phone (usr_phone.phoneno) and usr_mbr_of
    # (usr_mbr_of.idg, a reference to grp), and the reference manager.
    (
        "Class grp: group 7 is inserted; the triggers log a type-1 event",
        ["INSERT INTO grp (idg, gname) VALUES (7, 'Staff')"],
    ),
    (
        (
            "Users 2 and 3 are inserted, 3 with two phone numbers, manager 2 and membership "
            "in group 7; the child tables' triggers log type-1 events of usr_phone.phoneno "
            "and usr_mbr_of.idg under usr"
        ),
        [
            "INSERT INTO usr (idu, fname, lname) VALUES (2, 'Mary', 'Major')",
            "INSERT INTO usr (idu, fname, lname, manager) VALUES (3, 'Joe', 'Bloggs', 2)",
            "INSERT INTO usr_phone (idu, phoneno) VALUES (3, '555-0100'), (3, '555-0101')",
            "INSERT INTO usr_mbr_of (idu, idg) VALUES (3, 7)",
        ],
    ),
    (
        (
            "The view view_usr declares class usr the driver's way (docs/classes.md): a type-6 "
            "event (query-back) of view_usr publishes user 3 as the view reads it, sv_fname as "
            "fname, mv_phoneno as phoneno, fk_sv__idu__manager and fk_mv__idg__mbr_of as the "
            "references fk_manager and fk_mbr_of"
        ),
        [f"INSERT INTO {LOG} (table_key, event_type, table_name) VALUES ('pk_empno=3', 6, 'view_usr')"],
    ),
    (
        "One of user 3's phone numbers is changed; a type-2 event, old and new value",
        ["UPDATE usr_phone SET phoneno = '555-0199' WHERE idu = 3 AND phoneno = '555-0101'"],
    ),
    (
        "Another is removed; a type-2 event whose new value is NULL",
        ["DELETE FROM usr_phone WHERE idu = 3 AND phoneno = '555-0100'"],
    ),
    (
        "User 3's manager is cleared; a type-2 event of the reference manager",
        ["UPDATE usr SET manager = NULL WHERE idu = 3"],
    ),
    (
        "User 3 leaves group 7; a type-2 event of usr_mbr_of.idg whose new value is NULL",
        ["DELETE FROM usr_mbr_of WHERE idu = 3 AND idg = 7"],
    ),
    (
        (
            "User 3 is deleted; its last phone number goes with it (ON DELETE CASCADE) and "
            "logs nothing more: one type-4 event"
        ),
        ["DELETE FROM usr WHERE idu = 3"],
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
    db = connect(settings.db_url, create=True)
    init_db(db, settings.schema, LOG, sample=True, flavour="field")
    log = open_event_log(db, settings)
    out = sys.stdout
    for title, statements in STEPS:
        with db.engine.begin() as conn:
            for statement in statements:
                conn.execute(sa.text(statement))
        out.write(f"\n<!-- {title} -->\n")
        out.flush()
        report = run_cycle(settings, db, log, StdoutSink())
        out.write(f"<!-- {report.summary()} -->\n")
    out.write(f"\n<!-- the demo database: {database} -->\n")
    db.engine.dispose()
