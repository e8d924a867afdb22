"""Names in the SQL xdspub writes (docs/triggers.md, Names): every name is quoted, so that a
name holding SQL runs none; a name holding a control character is refused, naming it; the
names xdspub derives (triggers, the event log's indexes, lock table and wake-up trigger) fit
the database's identifier length and never collide; init-db makes the schema and event log
export and poll look up, whatever their case or spelling. On SQLite, PostgreSQL and
MariaDB."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner

from publisher.cli import cli
from publisher.outcome.lock import PublisherLock, lock_name
from publisher.settings import Settings
from publisher.source.database import connect
from publisher.source.event_log import open_event_log
from publisher.source.identifiers import derived_name, sql_quote
from publisher.source.init_db import init_db
from tests.conftest import server_url
from tests.server_objects import drop_schema
from tests.test_publisher_lock import can_take

DATABASES = ["sqlite", "postgresql", "mariadb"]
LONG = "an_event_log_whose_name_is_as_long_as_postgresql_allows_it_0063"  # 63 characters


def run(*args: str):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


class Server:
    """A database to spoil: a new SQLite file, or a new schema (a database on MariaDB) on
    the test server; a table ``victim_<tag>`` in the session's default schema, which a
    name holding SQL would drop."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind, self.tag = kind, uuid.uuid4().hex[:8]
        url = f"sqlite:///{tmp_path / 'names.db'}" if kind == "sqlite" else server_url(kind)
        self.engine, self.dialect = self.database = connect(url, create=True)
        self.url = self.engine.url.render_as_string(hide_password=False)
        self.quote = sql_quote(self.engine)
        self.victim = f"victim_{self.tag}"
        self.schemas: list[str] = []
        self.execute(f"CREATE TABLE {self.victim} (id INTEGER PRIMARY KEY)")

    def schema(self, name: str) -> str:
        """``name`` made unique by the tag; dropped afterwards."""
        self.schemas.append(f"{name}_{self.tag}")
        return self.schemas[-1]

    def execute(self, sql: str) -> None:
        with self.engine.begin() as conn:
            conn.exec_driver_sql(sql, execution_options={"no_parameters": True})

    def qualified(self, schema: str, name: str) -> str:
        return f"{self.quote(schema)}.{self.quote(name)}" if self.dialect.has_schemas else self.quote(name)

    def victim_is_there(self) -> bool:
        return sa.inspect(self.engine).has_table(self.victim)

    def drop(self) -> None:
        if self.dialect.has_schemas:
            for schema in self.schemas:
                drop_schema(self.engine, schema)
        self.execute(f"DROP TABLE IF EXISTS {self.victim}")
        self.engine.dispose()


@pytest.fixture(params=DATABASES)
def server(request, tmp_path: Path):
    made = Server(request.param, tmp_path)
    yield made
    made.drop()


# Derived names -----------------------------------------------------------------------


def test_a_derived_name_fits_reads_and_never_collides():
    assert derived_name("usr", "_log_insert", 63) == "usr_log_insert"
    assert derived_name(LONG, "_log_insert", None) == LONG + "_log_insert"
    operations = ("_log_insert", "_log_update", "_log_delete")
    names = {derived_name(LONG + x, op, 63) for x in ("", "1") for op in operations}
    assert len(names) == 6
    for name in names:
        assert len(name.encode()) <= 63 and name.startswith(LONG[:40]) and name.endswith(name[-11:])
    cut = derived_name("ä" * 40, "_lock", 63)  # cut between characters, never inside one
    assert len(cut.encode()) <= 63 and cut.startswith("ä" * 24) and cut.endswith("_lock")


# xdspub triggers ---------------------------------------------------------------------

HOSTILE = "t\n{victim}; --"  # a line break would end the SQL comment that named the table


def test_a_table_name_holding_a_control_character_is_refused(server):
    schema = server.schema("Hostile")
    init_db(server.database, schema, "indirect_process", False, "none")
    table = HOSTILE.format(victim=f"DROP TABLE {server.victim}")
    server.execute(f"CREATE TABLE {server.qualified(schema, table)} (id INTEGER PRIMARY KEY, v TEXT)")
    for args in ([], ["--install"], ["--table", table, "--install"], ["--uninstall"]):
        result = run("triggers", "--db", server.url, "--schema", schema, *args)
        assert result.exit_code == 2, result.output
        assert repr(table) in result.stderr and result.stdout == ""
    assert server.victim_is_there()


def test_a_column_name_holding_a_control_character_is_refused(server):
    schema = server.schema("Hostile")
    init_db(server.database, schema, "indirect_process", False, "none")
    column = server.quote("a\rb")
    server.execute(f"CREATE TABLE {server.qualified(schema, 'acct')} (id INTEGER PRIMARY KEY, {column} TEXT)")
    result = run("triggers", "--db", server.url, "--schema", schema, "--install")
    assert result.exit_code == 2
    assert "table 'acct', column 'a\\rb'" in result.stderr


# Names SQL would misread if they were pasted: quotes of each database, a dollar quote,
# parameter marks, comment starts, a statement end.
ODD_TABLE = 'Odd "Table" `x` $fn$ %s :p -- /*'
ODD_COLUMNS = ['Val "1"', "val `2`", "$fn$", "%(x)s :y", "a -- b", "c /* d", "e; DROP f"]
# SQLAlchemy's MySQL reflection reads a column `val ``2``` as "val ``2``", not "val `2`".
NOT_REFLECTED = {"mariadb": ["val `2`"]}


@pytest.mark.parametrize("flavour", ["field", "query-back"])
def test_names_sql_would_misread_install_and_log(server, flavour):
    schema = server.schema("Odd")
    init_db(server.database, schema, "indirect_process", False, "none")
    odd_columns = [c for c in ODD_COLUMNS if c not in NOT_REFLECTED.get(server.kind, [])]
    columns = ", ".join(f"{server.quote(c)} VARCHAR(20)" for c in odd_columns)
    table = server.qualified(schema, ODD_TABLE)
    server.execute(f"CREATE TABLE {table} ({server.quote('Key')} INTEGER PRIMARY KEY, {columns})")
    result = run("triggers", "--db", server.url, "--schema", schema, "--flavour", flavour, "--install")
    assert result.exit_code == 0, result.output
    values = ", ".join(f"'{i}'" for i, _ in enumerate(odd_columns))
    server.execute(f"INSERT INTO {table} VALUES (1, {values})")
    server.execute(f"UPDATE {table} SET {server.quote(odd_columns[0])} = 'new'")
    server.execute(f"DELETE FROM {table}")
    with server.engine.connect() as conn:
        rows = conn.exec_driver_sql(
            f"SELECT table_key, event_type, table_name, column_name, new_value "
            f"FROM {server.qualified(schema, 'indirect_process')} ORDER BY record_id"
        ).all()
    if flavour == "field":
        expected = [("Key=1", 1, ODD_TABLE, c, str(i)) for i, c in enumerate(odd_columns)]
        expected += [("Key=1", 2, ODD_TABLE, odd_columns[0], "new")]
    else:
        expected = [("Key=1", 5, ODD_TABLE, None, None), ("Key=1", 6, ODD_TABLE, None, None)]
    assert [tuple(r) for r in rows] == [*expected, ("Key=1", 4, ODD_TABLE, None, None)]
    result = run("triggers", "--db", server.url, "--schema", schema, "--table", ODD_TABLE, "--uninstall")
    assert result.exit_code == 0, result.output
    assert result.stderr.count(f"trigger {server.quote(ODD_TABLE + '_log_insert')} on {table}") == 1
    server.execute(f"INSERT INTO {table} ({server.quote('Key')}) VALUES (2)")  # logs nothing now
    with server.engine.connect() as conn:
        log = server.qualified(schema, "indirect_process")
        assert conn.exec_driver_sql(f"SELECT count(*) FROM {log}").scalar() == len(rows)
    assert server.victim_is_there()


# init-db -----------------------------------------------------------------------------

LOG_NAMES = ["x (a); DROP TABLE {victim}; --", "user", "order", "Mixed Log", LONG]


@pytest.mark.parametrize("log_table", LOG_NAMES)
def test_init_db_makes_the_event_log_export_looks_up(server, log_table):
    schema = server.schema("Mixed")
    log_table = log_table.format(victim=server.victim)
    result = run("init-db", "--db", server.url, "--schema", schema, "--log-table", log_table, "--sample")
    assert result.exit_code == 0, result.output
    assert server.victim_is_there()
    settings = Settings(db_url=server.url, schema=schema, log_table=log_table)
    log = open_event_log(server.database, settings)  # as export and poll find it
    assert log.table.name == log_table
    assert can_take(PublisherLock(server.database, lock_name(settings)))
    # The sample's triggers write the event log of that name.
    server.execute(f"INSERT INTO {server.qualified(schema, 'usr')} (idu, fname) VALUES (1, 'Ann')")
    with server.engine.connect() as conn:
        logged = conn.execute(sa.select(log.table.c.table_key, log.table.c.column_name)).all()
    assert logged == [("idu=1", "fname")]
    again = run("init-db", "--db", server.url, "--schema", schema, "--log-table", log_table, "--sample")
    assert again.exit_code == 0, again.output  # keeps what exists


@pytest.mark.parametrize(
    ("option", "value"), [("--schema", "a\nb"), ("--log-table", "log\x00x"), ("--log-table", "l\x1b[2J")]
)
def test_init_db_refuses_a_name_holding_a_control_character(server, option, value):
    schema = server.schema("Refused")
    args = {"--schema": schema, "--log-table": "indirect_process", option: value}
    result = run("init-db", "--db", server.url, *(x for pair in args.items() for x in pair))
    assert result.exit_code == 2
    assert f"{option} {value!r}" in result.stderr


# Names the database would cut --------------------------------------------------------


def test_a_long_table_name_keeps_three_triggers_and_drops_the_one_postgresql_cut(tmp_path):
    db = Server("postgresql", tmp_path)
    try:
        schema = db.schema("Long")
        init_db(db.database, schema, "indirect_process", False, "none")
        table = db.qualified(schema, LONG)
        db.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, v TEXT)")
        # What an earlier xdspub made: three triggers whose names PostgreSQL cut to one.
        cut = db.quote(LONG + "_log_delete")
        db.execute(
            f"CREATE FUNCTION {db.quote(schema)}.{cut}() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN RETURN NULL; END $$; CREATE TRIGGER {cut} AFTER DELETE ON {table} "
            f"FOR EACH ROW EXECUTE FUNCTION {db.quote(schema)}.{cut}()"
        )
        result = run("triggers", "--db", db.url, "--schema", schema, "--install")
        assert result.exit_code == 0, result.output
        with db.engine.connect() as conn:
            names = conn.execute(
                sa.text("SELECT tgname FROM pg_trigger WHERE tgrelid = CAST(:t AS regclass) "
                        "AND NOT tgisinternal"),
                {"t": table},
            ).scalars().all()
        made = [derived_name(LONG, f"_log_{op}", 63) for op in ("insert", "update", "delete")]
        assert sorted(names) == sorted(made)
    finally:
        db.drop()


def test_the_wake_up_trigger_of_a_long_event_log_is_found(tmp_path):
    db = Server("postgresql", tmp_path)
    try:
        schema = db.schema("Wake")
        result = run("init-db", "--db", db.url, "--schema", schema, "--log-table", LONG, "--wake")
        assert result.exit_code == 0, result.output
        with db.engine.connect() as conn:
            query = sa.text(db.dialect.wake_channel_query)
            channel = conn.execute(query, {"schema": schema, "table": LONG}).scalar()
        assert channel is not None and channel.startswith("xdspub_")
    finally:
        db.drop()
