"""The command line (docs/parameters.md, docs/delivery.md): commands, --out forms, exit codes, config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from lxml import etree

from publisher.cli import cli
from tests.conftest import free_port, make_sample_db


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def test_help_imports_nothing_heavy():
    code = (
        "import sys; from publisher.cli import cli\n"
        "try:\n    cli(['--help'])\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('pyspark', 'sqlalchemy', 'lxml', 'pyarrow')]\n"
        "print('heavy:', heavy)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "heavy: []" in result.stdout
    assert "export" in result.stdout and "init-db" in result.stdout


@pytest.fixture
def logged_db(tmp_path: Path) -> str:
    """A database made by init-db --sample with per-field triggers, after real changes."""
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    assert run("init-db", "--db", url, "--sample").exit_code == 0
    assert run("init-db", "--db", url, "--sample").exit_code == 0  # idempotent
    import sqlalchemy as sa

    from publisher.source.database import connect

    engine, _ = connect(url)
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO usr (idu, fname, lname, photo) VALUES (1, 'Jack', 'Frost', X'AAAA')"))
        conn.execute(sa.text("INSERT INTO usr (idu, fname, lname, photo) VALUES (2, 'Ann', NULL, NULL)"))
        conn.execute(sa.text("UPDATE usr SET fname = 'John' WHERE idu = 1"))
        conn.execute(sa.text("DELETE FROM usr WHERE idu = 2"))
    engine.dispose()
    return url


def test_export_to_a_file_publishes_what_the_triggers_logged(logged_db, tmp_path):
    out = tmp_path / "out.xml"
    result = run("export", "--db", logged_db, "--out", str(out), "--master", "local[2]")
    assert result.exit_code == 0, result.output
    kinds = [(c.tag, c.findtext("association")) for c in etree.parse(str(out)).find("input")]
    assert kinds == [
        ("add", "idu=1,table=usr,schema=indirect"),
        ("add", "idu=2,table=usr,schema=indirect"),
        ("modify", "idu=1,table=usr,schema=indirect"),
        ("delete", "idu=2,table=usr,schema=indirect"),
    ]
    assert "6 rows read, 4 commands, 1 documents; statuses S=6" in result.stderr
    again = run("export", "--db", logged_db, "--out", str(out))
    assert "0 rows read" in again.stderr


def test_export_to_a_file_with_no_command_leaves_the_file_as_it_was(logged_db, tmp_path):
    """docs/delivery.md, Output forms: nothing pending writes no file; the last one stays."""
    out = tmp_path / "out.xml"
    assert run("export", "--db", logged_db, "--out", str(out)).exit_code == 0
    published = out.read_bytes()
    again = run("export", "--db", logged_db, "--out", str(out))
    assert again.exit_code == 0 and "0 rows read, 0 commands, 0 documents" in again.stderr
    assert out.read_bytes() == published
    # Triggerless alike: a first cycle that only records the state publishes nothing.
    fresh = tmp_path / "fresh.xml"
    recorded = run("export", "--db", logged_db, "--out", str(fresh), "--mode", "triggerless",
                   "--state-dir", str(tmp_path / "state"), "--startup", "future")
    assert recorded.exit_code == 0, recorded.output
    assert "0 commands, 0 documents" in recorded.stderr and not fresh.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cli.db", "cli.db.xdspub-lock", "out.xml", "state"]


def test_export_to_a_directory_names_documents_by_first_record_id(logged_db, tmp_path):
    out = tmp_path / "docs"
    result = run("export", "--db", logged_db, "--out", str(out), "--batch-size", "3")
    assert result.exit_code == 0, result.output
    files = sorted(p.name for p in out.iterdir())
    assert files == ["00000000000000000001.xml", "00000000000000000006.xml"]
    sizes = [len(etree.parse(str(out / f)).find("input")) for f in files]
    assert sizes == [3, 1]


def test_export_to_stdout(logged_db):
    result = run("export", "--db", logged_db, "--out", "-")
    assert result.exit_code == 0
    assert etree.fromstring(result.stdout_bytes).tag == "nds"


def test_error_rows_exit_1_and_are_listed_on_stderr(logged_db, tmp_path):
    import sqlalchemy as sa

    engine = sa.create_engine(logged_db)
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO indirect_process (table_key, event_type, table_name) VALUES ('idu=1', 42, 'usr')"))
    engine.dispose()
    result = run("export", "--db", logged_db, "--out", str(tmp_path / "o.xml"))
    assert result.exit_code == 1
    assert "record_id 7: E: unknown event_type 42" in result.stderr


@pytest.mark.parametrize(
    ("columns", "missing"),
    [
        ("perpetrator TEXT, table_name TEXT, column_name TEXT, old_value TEXT", "new_value"),
        # ten columns, but one default name was renamed away
        ("table_name TEXT, column_name TEXT, old_value TEXT, new_value TEXT, note TEXT", "perpetrator"),
    ],
)
def test_event_log_missing_a_column_exits_2(tmp_path, columns, missing):
    import sqlalchemy as sa

    url = f"sqlite:///{tmp_path / 'bad.db'}"
    engine = sa.create_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(
            "CREATE TABLE indirect_process (record_id INTEGER PRIMARY KEY, table_key TEXT, "
            f"status CHAR(1), event_type INT, event_time TIMESTAMP, {columns})"
        ))
    engine.dispose()
    result = run("export", "--db", url, "--out", str(tmp_path / "o.xml"))
    assert result.exit_code == 2
    assert f"lacks column(s) {missing}" in result.stderr


def test_loopback_rows_are_counted_and_a_hint_says_how_to_publish_them(logged_db, tmp_path):
    result = run("export", "--db", logged_db, "--out", str(tmp_path / "o.xml"), "--dry-run",
                 "--publisher-user", "nobody")
    assert result.exit_code == 0 and "hint" not in result.stderr
    import sqlalchemy as sa

    engine = sa.create_engine(logged_db)
    with engine.begin() as conn:
        conn.execute(sa.text("UPDATE indirect_process SET perpetrator = 'app' WHERE record_id < 5"))
    engine.dispose()
    result = run("export", "--db", logged_db, "--out", str(tmp_path / "o.xml"), "--publisher-user", "app")
    assert result.exit_code == 0
    assert "6 rows read, 2 commands, 1 documents; statuses S=6 (4 of them loopback)" in result.stderr
    assert ("xdspub: hint: 4 rows were logged for changes made by 'app', the publisher's own "
            "database user, and were consumed unpublished (loopback).") in result.stderr


def test_an_internal_error_is_one_line_and_exit_5(logged_db, tmp_path, monkeypatch):
    import publisher.cycle

    def broken(*_args, **_kwargs):
        raise RuntimeError("a bug\nwith two lines")

    monkeypatch.setattr(publisher.cycle, "export", broken)
    result = run("export", "--db", logged_db, "--out", str(tmp_path / "o.xml"))
    assert result.exit_code == 5
    assert result.stderr == (
        "xdspub: internal error: RuntimeError: a bug\\x0awith two lines "
        "(--debug shows where; please report it)\n"
    )
    with pytest.raises(RuntimeError, match="a bug"):  # raised: Python prints its traceback
        run("--debug", "export", "--db", logged_db, "--out", str(tmp_path / "o.xml"))


# A trigger that refuses to mark the event log's rows, with a message of two lines.
FROZEN = {
    "sqlite": ["CREATE TRIGGER frozen BEFORE UPDATE ON {log} BEGIN "
               "SELECT RAISE(ABORT, 'statuses are frozen\na second line'); END"],
    "postgresql": ["CREATE FUNCTION {schema}.frozen() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                   "RAISE EXCEPTION 'statuses are frozen' USING DETAIL = 'a second line'; END $$",
                   "CREATE TRIGGER frozen BEFORE UPDATE ON {log} FOR EACH ROW EXECUTE FUNCTION {schema}.frozen()"],
}


@pytest.mark.parametrize(("kind", "error"), [("sqlite", "IntegrityError"), ("postgresql", "RaiseException")])
def test_a_database_error_shows_the_first_line_of_its_message(kind, error, tmp_path):
    """docs/parameters.md, Exit codes: what a person reads has no escaped line breaks, nor
    the SQL; nothing is marked."""
    db = make_sample_db(kind, tmp_path)
    try:
        db.log(("idu=1", 4, "usr"))
        for sql in FROZEN[kind]:
            db.execute(sql.format(log=db.table("indirect_process"), schema=db.schema))
        result = run("export", "--db", db.settings.db_url, "--schema", db.schema,
                     "--out", str(tmp_path / "o.xml"))
        assert result.exit_code == 5
        assert result.stderr == f"xdspub: database error: {error}: statuses are frozen (--debug shows where)\n"
        assert db.statuses() == {1: "N"}
    finally:
        db.drop()


def test_an_unreachable_server_is_one_readable_line(tmp_path):
    """libpq's message has a hint on a second line: the first alone is shown."""
    url = f"postgresql+psycopg://root@127.0.0.1:{free_port()}/test"
    result = run("export", "--db", url, "--out", str(tmp_path / "o.xml"))
    assert result.exit_code == 3
    assert result.stderr.startswith(f"xdspub: error: cannot reach {url}: connection failed: ")
    assert result.stderr.endswith("Connection refused\n") and "\\x" not in result.stderr


def test_a_schema_name_xml_cannot_carry_is_refused(logged_db, tmp_path):
    result = run("export", "--db", logged_db, "--out", str(tmp_path / "o.xml"), "--schema", "ind\x1bx")
    assert result.exit_code == 2
    assert "--schema 'ind\\x1bx' holds a character XML 1.0 cannot carry at position 4" in result.stderr


def test_unreachable_database_exits_3(tmp_path):
    result = run("export", "--db", f"sqlite:///{tmp_path / 'none.db'}", "--out", "-")
    assert result.exit_code == 3


def test_options_come_from_flags_then_environment_then_config_file(logged_db, tmp_path):
    config = tmp_path / "xdspub.toml"
    config.write_text('dry-run = true\nbatch-size = 2\n')
    out = tmp_path / "docs"
    result = run("export", "--config", str(config), "--db", logged_db, "--out", str(out),
                 env={"XDSPUB_BATCH_SIZE": "4"})
    assert result.exit_code == 0, result.output
    assert len(list(out.iterdir())) == 1  # 4 commands, batch size 4 from the environment
    again = run("export", "--db", logged_db, "--out", "-", "--batch-size", "1")
    assert "6 rows read" in again.stderr  # the dry run left the statuses


def test_demo_prints_the_documented_documents(capfd):
    result = run("demo")
    assert result.exit_code == 0
    documents = result.stdout.split("<?xml")[1:]
    inputs = [etree.fromstring(("<?xml" + d.split("<!--")[0]).encode()).find("input") for d in documents]
    kinds = [i[0].tag for i in inputs]
    assert kinds[:5] == ["add", "modify", "modify", "delete", "modify"]  # Tables 5-16 to 5-20
    # then the logical class: each command's kind, association and attributes
    assert [
        [(c.tag, c.findtext("association").split(",")[0], [a.get("attr-name") for a in c][1:]) for c in i]
        for i in inputs[5:]
    ] == [
        [("add", "idg=7", ["gname"])],
        [
            ("add", "idu=2", ["fname", "lname"]),
            ("add", "idu=3", ["fname", "lname", "manager", "usr_phone.phoneno", "usr_mbr_of.idg"]),
        ],
        # the same user through view_usr, the class in the driver's form
        [("modify", "pk_empno=3", ["fname", "lname", "photo", "fk_manager", "fk_mbr_of", "phoneno"])],
        [("modify", "idu=3", ["usr_phone.phoneno"])],
        [("modify", "idu=3", ["usr_phone.phoneno"])],
        [("modify", "idu=3", ["manager"])],
        [("modify", "idu=3", ["usr_mbr_of.idg"])],
        [("delete", "idu=3", [])],
    ]


def test_config_file_keys_are_the_option_names(logged_db, tmp_path):
    config = tmp_path / "xdspub.toml"
    config.write_text(f'db = "{logged_db}"\nmaster = "local[2]"\ndry-run = true\n')
    result = run("export", "--config", str(config), "--out", str(tmp_path / "o.xml"))
    assert result.exit_code == 0, result.output
    config.write_text(f'db = "{logged_db}"\nspark.master = "local[2]"\n')
    result = run("export", "--config", str(config), "--out", str(tmp_path / "o.xml"))
    assert result.exit_code == 0, result.output
    config.write_text('db = "x"\nno-such-option = 1\n')
    result = run("export", "--config", str(config), "--out", "-")
    assert result.exit_code == 2 and "unknown key(s) no-such-option" in result.output


def test_one_config_file_serves_every_command(logged_db, tmp_path):
    """docs/parameters.md: a command passes over the keys of other commands' options."""
    config = tmp_path / "xdspub.toml"
    config.write_text(f'db = "{logged_db}"\ndry-run = true\ninterval = 5\nlog-format = "json"\n'
                      'chunk = 10\nflavour = "field"\nmirror = "m.db"\n')
    for command in (["export", "--out", str(tmp_path / "o.xml")], ["explain"], ["skip", "--through", "1"]):
        result = run(command[0], "--config", str(config), *command[1:])
        assert result.exit_code == 0, (command, result.output)
    config.write_text(f'db = "{logged_db}"\nwait = 3\n')  # consume's and apply's: no --config
    result = run("export", "--config", str(config), "--out", "-")
    assert result.exit_code == 2 and "unknown key(s) wait" in result.stderr


@pytest.mark.parametrize(("line", "message"), [
    ("batch-size = 500", "batch-size: 500 is not in the range 1<=x<=128."),
    ('dry-run = "sometimes"', "dry-run: 'sometimes' is not a valid boolean."),
    ("tables = 5", "tables: Value must be an iterable."),
    ('before = "soon"', None),  # skip's: export passes it over
])
def test_a_config_value_of_the_wrong_type_names_the_file_and_the_key(logged_db, tmp_path, line, message):
    config = tmp_path / "xdspub.toml"
    config.write_text(f'db = "{logged_db}"\n{line}\n')
    result = run("export", "--config", str(config), "--out", "-", "--dry-run")
    if message is None:
        assert result.exit_code == 0, result.output
        result = run("skip", "--config", str(config))
        message = "before: 'soon' is not an ISO 8601 date and time"
    assert result.exit_code == 2
    assert f"Invalid value for '--config': {config}: {message}" in result.stderr
    assert "env var" not in result.stderr


def test_tables_without_a_key_are_named_where_they_are_not_read(logged_db, tmp_path):
    """docs/classes.md, Keys: what reads classes whole (triggerless, resync, verify) passes
    a keyless table by, and names it once, --quiet or not."""
    import sqlalchemy as sa

    engine = sa.create_engine(logged_db)
    with engine.begin() as conn:
        conn.execute(sa.text("CREATE TABLE audit_note (note TEXT, noted_at TEXT)"))
    engine.dispose()
    warning = "xdspub: warning: tables without a key (no primary key, no pk_ column) not read: audit_note"
    out, mirror = tmp_path / "docs", str(tmp_path / "mirror.db")
    exported = run("export", "--db", logged_db, "--out", str(out), "--mode", "triggerless",
                   "--state-dir", str(tmp_path / "state"), "--startup", "all", "--quiet")
    assert exported.exit_code == 0 and exported.stderr.splitlines() == [warning]
    resynced = run("resync", "--db", logged_db, "--quiet")
    assert resynced.exit_code == 0 and resynced.stderr.splitlines() == [warning]
    assert run("apply", str(out), "--mirror", mirror).exit_code == 0
    verified = run("verify", "--db", logged_db, "--mirror", mirror)
    assert verified.exit_code == 0, verified.output
    assert verified.stderr.splitlines()[0] == warning and warning not in verified.stderr.splitlines()[1:]


def test_export_refuses_while_another_publisher_is_active(logged_db, tmp_path):
    from publisher.outcome.lock import PublisherLock, lock_name
    from publisher.settings import Settings
    from publisher.source.database import connect

    database = connect(logged_db)
    lock = PublisherLock(database, lock_name(Settings(db_url=logged_db)))
    assert lock.try_acquire()
    try:
        result = run("export", "--db", logged_db, "--out", str(tmp_path / "o.xml"))
    finally:
        lock.release()
        database.engine.dispose()
    assert result.exit_code == 2 and "another publisher is active" in result.stderr


@pytest.mark.slow  # a Spark cycle in a process of its own
def test_export_shows_progress_on_a_terminal(logged_db, tmp_path):
    """On a terminal, a progress display with Spark's task counts, then the summary, and
    nothing of Spark's own."""
    import os
    import pty

    env = {k: v for k, v in os.environ.items() if k != "CI"}
    leader, follower = pty.openpty()
    command = [sys.executable, "-m", "publisher", "export", "--db", logged_db,
               "--out", str(tmp_path / "o.xml"), "--master", "local[2]", "--small-cycle-rows", "0"]
    process = subprocess.Popen(command, stdin=follower, stdout=follower, stderr=follower, env=env)
    os.close(follower)
    screen = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the export is over
            break
        if not chunk:
            break
        screen += chunk
    os.close(leader)
    assert process.wait(60) == 0, screen.decode(errors="replace")
    text = screen.decode(errors="replace")
    assert "tasks" in text and "reading and classifying" in text
    assert "6 rows read, 4 commands, 1 documents" in text
    assert "Spark start" in text
    # Spark's start-up chatter is not shown: it would break the progress display.
    assert "WARNING" not in text and "log level" not in text and "spark:" not in text


def test_quiet_export_prints_no_summary_but_still_lists_errors(logged_db, tmp_path):
    import sqlalchemy as sa

    engine = sa.create_engine(logged_db)
    with engine.begin() as conn:
        conn.execute(sa.text("INSERT INTO indirect_process (table_key, event_type, table_name) VALUES ('idu=1', 42, 'usr')"))
    engine.dispose()
    result = run("export", "--db", logged_db, "--out", str(tmp_path / "o.xml"), "--quiet")
    assert result.exit_code == 1
    assert result.stderr.splitlines() == ["xdspub: record_id 7: E: unknown event_type 42"]


@pytest.mark.parametrize(("quiet", "ci", "terminal", "shown"), [
    (False, None, True, True),
    (True, None, True, False),
    (False, "true", True, False),
    (False, None, False, False),
])
def test_progress_only_on_a_terminal_outside_ci_and_not_quiet(monkeypatch, quiet, ci, terminal, shown):
    from publisher import progress

    monkeypatch.delenv("CI", raising=False)
    if ci:
        monkeypatch.setenv("CI", ci)
    monkeypatch.setattr(progress.sys.stderr, "isatty", lambda: terminal)
    display = progress.progress_for(quiet)
    display.close()
    assert isinstance(display, progress.TerminalProgress) is shown
