"""``xdspub triggers --uninstall`` (docs/triggers.md, Uninstalling): it drops exactly the
triggers (and PostgreSQL functions) ``--install`` makes for the tables selected, so that
the database's catalogue of triggers and functions is as it was before, a trigger of the
user's own on the same table stays and still fires, and the tables' changes log nothing
more; running it again removes nothing and succeeds. On SQLite, PostgreSQL and MariaDB."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from publisher.cli import cli
from publisher.source.identifiers import sql_quote
from tests.conftest import SampleDb, make_sample_db
from tests.test_sql_names import LONG

DATABASES = ["sqlite", "postgresql", "mariadb"]

# Every trigger of the schema, and on PostgreSQL every function, with its definition.
CATALOGUE = {
    "sqlite": "SELECT 'trigger', tbl_name, name, sql FROM sqlite_master WHERE type = 'trigger'",
    "postgresql": (
        "SELECT 'trigger', c.relname, t.tgname, pg_get_triggerdef(t.oid) FROM pg_trigger t"
        " JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
        " WHERE n.nspname = :schema AND NOT t.tgisinternal"
        " UNION ALL SELECT 'function', '', p.proname, pg_get_functiondef(p.oid) FROM pg_proc p"
        " JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = :schema"
    ),
    "mysql": (
        "SELECT 'trigger', event_object_table, trigger_name, action_statement"
        " FROM information_schema.triggers WHERE trigger_schema = :schema"
    ),
}

# A trigger of the user's own on usr, writing a table of its own (no key: no class).
OWN_TRIGGER = {
    "sqlite": [
        "CREATE TRIGGER usr_audit AFTER INSERT ON usr BEGIN INSERT INTO audit (idu) VALUES (NEW.idu); END"
    ],
    "postgresql": [
        "CREATE FUNCTION {s}.usr_audit() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN INSERT INTO {s}.audit (idu) VALUES (NEW.idu); RETURN NULL; END $$",
        "CREATE TRIGGER usr_audit AFTER INSERT ON {s}.usr FOR EACH ROW EXECUTE FUNCTION {s}.usr_audit()",
    ],
    "mysql": [
        "CREATE TRIGGER {s}.usr_audit AFTER INSERT ON {s}.usr FOR EACH ROW "
        "INSERT INTO {s}.audit (idu) VALUES (NEW.idu)"
    ],
}


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def triggers(db: SampleDb, *args: str):
    """``xdspub triggers`` on ``db`` with ``args``; its exit code must be 0."""
    url = db.engine.url.render_as_string(hide_password=False)
    result = run("triggers", "--db", url, "--schema", db.schema, *args)
    assert result.exit_code == 0, result.output
    return result


def catalogue(db: SampleDb) -> list[tuple]:
    with db.engine.connect() as conn:
        rows = conn.execute(sa.text(CATALOGUE[db.dialect.name]), {"schema": db.schema})
        return sorted(tuple(r) for r in rows)


def logged(db: SampleDb) -> int:
    with db.engine.connect() as conn:
        return conn.execute(sa.text(f"SELECT count(*) FROM {db.table('indirect_process')}")).scalar()


@pytest.fixture(params=DATABASES)
def db(request, tmp_path: Path):
    made = make_sample_db(request.param, tmp_path)
    yield made
    made.drop()


def test_uninstall_leaves_the_catalogue_as_it_was_and_the_users_trigger(db):
    db.execute(f"CREATE TABLE {db.table('audit')} (idu INTEGER)")
    for statement in OWN_TRIGGER[db.dialect.name]:
        db.execute(statement.format(s=db.schema))
    before = catalogue(db)
    triggers(db, "--install", "--flavour", "query-back")
    ours = {(kind, name) for kind, _table, name, _ in catalogue(db)} - {(k, n) for k, _t, n, _ in before}
    tables, operations = ("usr", "grp", "usr_phone", "usr_mbr_of"), ("insert", "update", "delete")
    kinds = ("trigger", "function") if db.dialect.name == "postgresql" else ("trigger",)
    assert ours == {(kind, f"{t}_log_{op}") for kind in kinds for t in tables for op in operations}

    # --tables usr: the class and its child tables; grp keeps its triggers.
    partly = triggers(db, "--uninstall", "--tables", "usr")
    assert partly.stdout == ""
    removed = [line for line in partly.stderr.splitlines() if line.startswith("xdspub: removed ")]
    assert len(removed) == 9 * len(kinds) + 1  # and the summary
    quote = sql_quote(db.engine)
    assert f"xdspub: removed trigger {quote('usr_phone_log_update')} on " in partly.stderr
    left = {name for _kind, _table, name, _ in catalogue(db)}
    assert {f"grp_log_{op}" for op in ("insert", "update", "delete")} <= left
    assert not any(name.startswith("usr_log_") for name in left)

    triggers(db, "--uninstall", "--flavour", "field")  # the flavour changes nothing
    assert catalogue(db) == before
    again = triggers(db, "--uninstall")
    assert again.stderr.startswith("xdspub: nothing to remove on ")

    db.execute(f"INSERT INTO {db.table('grp')} (idg, gname) VALUES (7, 'staff')")
    db.execute(f"INSERT INTO {db.table('usr')} (idu, fname) VALUES (1, 'Ann')")
    db.execute(f"INSERT INTO {db.table('usr_phone')} (idu, phoneno) VALUES (1, '555')")
    db.execute(f"INSERT INTO {db.table('usr_mbr_of')} (idu, idg) VALUES (1, 7)")
    db.execute(f"UPDATE {db.table('usr')} SET fname = 'Bo' WHERE idu = 1")
    db.execute(f"DELETE FROM {db.table('usr')} WHERE idu = 1")
    assert logged(db) == 0
    with db.engine.connect() as conn:  # the user's trigger still fires
        assert conn.execute(sa.text(f"SELECT idu FROM {db.table('audit')}")).scalars().all() == [1]


def test_a_mixed_case_reserved_word_table_and_its_child_table(db):
    quote = sql_quote(db.engine)
    schema = f"{quote(db.schema)}." if db.dialect.has_schemas else ""
    group, member = f"{schema}{quote('Group')}", f"{schema}{quote('Group Member')}"
    key, select, where = quote("Id"), quote("Select"), quote("Where")
    db.execute(f"CREATE TABLE {group} ({key} INTEGER PRIMARY KEY, {select} VARCHAR(20))")
    db.execute(f"CREATE TABLE {member} ({key} INTEGER NOT NULL, {where} VARCHAR(20) NOT NULL, "
               f"FOREIGN KEY ({key}) REFERENCES {group} ({key}) ON DELETE CASCADE)")
    before = catalogue(db)
    triggers(db, "--install", "--tables", "Group")
    insert = f"INSERT INTO {group} ({key}, {select}) VALUES (1, 'x')"
    db.execute(insert)
    assert logged(db) == 1

    result = triggers(db, "--uninstall", "--tables", "Group")
    assert f"xdspub: removed trigger {quote('Group Member_log_delete')} on " in result.stderr
    assert catalogue(db) == before
    triggers(db, "--uninstall", "--table", "Group", "--table", "Group Member")  # nothing there: fine
    db.execute(insert.replace("1, 'x'", "2, 'y'"))
    db.execute(f"INSERT INTO {member} ({key}, {where}) VALUES (2, 'z')")
    assert logged(db) == 1


def test_a_long_table_name_and_an_earlier_xdspubs_cut_trigger(tmp_path: Path):
    db = make_sample_db("postgresql", tmp_path)
    try:
        quote = sql_quote(db.engine)
        table = f"{quote(db.schema)}.{quote(LONG)}"
        db.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, v TEXT)")
        before = catalogue(db)
        triggers(db, "--install", "--table", LONG)
        # What an earlier xdspub made: a trigger whose name PostgreSQL cut (to LONG itself).
        cut = f"{quote(db.schema)}.{quote(LONG)}"
        db.execute(
            f"CREATE FUNCTION {cut}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;"
            f"CREATE TRIGGER {quote(LONG)} AFTER DELETE ON {table} FOR EACH ROW EXECUTE FUNCTION {cut}()"
        )
        result = triggers(db, "--uninstall", "--table", LONG)
        assert f"xdspub: removed function {cut}()" in result.stderr
        assert "xdspub: removed 8 objects" in result.stderr  # 3 triggers, 3 functions, the cut pair
        assert catalogue(db) == before
    finally:
        db.drop()


def test_install_and_uninstall_together_is_a_usage_error(tmp_path: Path):
    url = f"sqlite:///{tmp_path / 'both.db'}"
    assert run("init-db", "--db", url, "--sample", "--triggers", "field").exit_code == 0
    result = run("triggers", "--db", url, "--install", "--uninstall")
    assert result.exit_code == 2
    assert "--install and --uninstall" in result.stderr and result.stdout == ""
    engine = sa.create_engine(url)
    with engine.connect() as conn:  # the sample's 12 triggers stay
        count = "SELECT count(*) FROM sqlite_master WHERE type = 'trigger'"
        assert conn.execute(sa.text(count)).scalar() == 12
    engine.dispose()


def test_uninstall_needs_no_event_log(tmp_path: Path):
    """The event log dropped first: every change of a table fails in its triggers, which
    uninstall removes all the same."""
    db = make_sample_db("sqlite", tmp_path, triggers="field")
    try:
        db.execute("DROP TABLE indirect_process")
        with pytest.raises(sa.exc.OperationalError, match="no such table"):
            db.execute("INSERT INTO usr (idu) VALUES (1)")
        result = triggers(db, "--uninstall")
        assert "xdspub: removed 12 objects" in result.stderr
        # A fresh connection: SQLite keeps the schema a connection has cached until a
        # statement of it prepares, which the failed insert never did.
        db.engine.dispose()
        db.execute("INSERT INTO usr (idu) VALUES (1)")
    finally:
        db.drop()
