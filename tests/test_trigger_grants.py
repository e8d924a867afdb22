"""The grants an installation of the publication triggers needs (docs/triggers.md, Grants):
an application user with rights on the published tables only changes rows, and the
triggers log its changes under its name, though it can neither write nor read the event
log, nor (PostgreSQL) lend the trigger functions to a table of its own. PostgreSQL: the
functions are SECURITY DEFINER; MariaDB: triggers run with their definer's rights."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from tests.conftest import make_sample_db
from tests.server_objects import DbUser


@pytest.mark.parametrize("flavour", ["field", "query-back"])
@pytest.mark.parametrize("kind", ["postgresql", "mariadb"])
def test_an_application_user_without_rights_on_the_event_log_is_logged(kind, flavour, tmp_path: Path):
    db = make_sample_db(kind, tmp_path, triggers=flavour)
    app = DbUser(db, "app")
    try:
        usr, phone, log = db.table("usr"), db.table("usr_phone"), db.table("indirect_process")
        for table in (usr, phone):
            app.grant("SELECT, INSERT, UPDATE, DELETE", table)
        app.execute(f"INSERT INTO {usr} (idu, fname) VALUES (1, 'Ann')")
        app.execute(f"INSERT INTO {phone} (idu, phoneno) VALUES (1, '555')")
        app.execute(f"UPDATE {usr} SET fname = 'Bo' WHERE idu = 1")
        app.execute(f"DELETE FROM {usr} WHERE idu = 1")
        with db.engine.connect() as conn:
            rows = conn.exec_driver_sql(
                f"SELECT table_key, event_type, perpetrator, column_name FROM {log} ORDER BY record_id"
            ).all()
        if flavour == "field":
            expected = [(1, "fname"), (1, "usr_phone.phoneno"), (2, "fname"), (4, None)]
        else:
            expected = [(5, None), (8, "usr_phone.phoneno"), (6, None), (4, None)]
        assert [tuple(r) for r in rows] == [("idu=1", t, app.name, c) for t, c in expected]

        for forged in (
            f"INSERT INTO {log} (table_key, event_type, table_name) VALUES ('idu=9', 4, 'usr')",
            f"SELECT * FROM {log}",
        ):
            with pytest.raises(sa.exc.DBAPIError, match="(?i)denied"):
                app.execute(forged)
        if kind == "postgresql":  # a function of its own, run with the owner's rights: none
            with pytest.raises(sa.exc.DBAPIError, match="permission denied for function"):
                app.execute(
                    f"CREATE TEMP TABLE mine (idu INTEGER); CREATE TRIGGER forge AFTER INSERT ON mine "
                    f"FOR EACH ROW EXECUTE FUNCTION {db.schema}.usr_log_insert()"
                )
    finally:
        app.drop()
        db.drop()
