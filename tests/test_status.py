"""``xdspub status`` (docs/status.md): pending rows, E rows with their reasons, the last
cycle, the lock's holder and the triggerless state, without SQL."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from publisher.cli import cli
from publisher.outcome.lock import PublisherLock, lock_name
from tests.conftest import make_sample_db


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def any_kind(request) -> str:
    return request.param


def xdspub(db, *args: str, state) -> object:
    command, *rest = args
    url = db.engine.url.render_as_string(hide_password=False)
    return CliRunner().invoke(cli, [command, "--db", url, "--schema", db.schema, "--state-dir", str(state), *rest])


def test_status_of_an_event_log(any_db, tmp_path) -> None:
    state = tmp_path / "state"
    any_db.log(("idu=1", 4, "usr"), ("idg=1", 9, "grp"), ("idu=2", 4, "usr"))
    first = json.loads(xdspub(any_db, "status", "--format", "json", state=state).stdout)
    assert first["pending"] == {"grp": 1, "usr": 2} and first["last_cycle"] is None and first["lock"] is None
    assert xdspub(any_db, "export", "--out", str(tmp_path / "o.xml"), "--publisher-user", "p",
                  state=state).exit_code == 1
    any_db.log(("idu=3", 4, "usr"))
    lock = PublisherLock(any_db.database, lock_name(any_db.settings))
    assert lock.try_acquire()
    try:
        shown = json.loads(xdspub(any_db, "status", "--format", "json", state=state).stdout)
        text = xdspub(any_db, "status", state=state).stdout
    finally:
        lock.release()
    assert shown["pending"] == {"usr": 1}
    assert shown["errors"]["tables"] == [{"status": "E", "table": "grp", "rows": 1}]
    assert shown["errors"]["newest"][0]["reason"] == "unknown event_type 9"
    assert shown["last_cycle"]["outcome"] == "published" and shown["last_cycle"]["status_E"] == 1
    assert shown["lock"]
    if any_db.dialect.name == "postgresql":  # who, as the database tells
        assert f"user {any_db.engine.url.username} from" in shown["lock"]
    assert "record_id 2: E: grp idg=1: unknown event_type 9" in text and "lock: held by" in text


def test_status_of_a_triggerless_state(sample_db, tmp_path) -> None:
    state = tmp_path / "state"
    assert "triggerless state: none yet" in xdspub(sample_db, "status", "--mode", "triggerless", state=state).stdout
    sample_db.add_user(1, "a", None, None)
    sample_db.add_user(2, "b", None, None)
    assert xdspub(sample_db, "export", "--mode", "triggerless", "--out", str(tmp_path / "o.xml"),
                  state=state).exit_code == 0
    shown = json.loads(xdspub(sample_db, "status", "--mode", "triggerless", "--format", "json", state=state).stdout)
    assert shown["state"]["generation"] == 1 and shown["state"]["classes"]["usr"] == 2
    assert shown["last_cycle"]["outcome"] == "published" and shown["last_cycle"]["objects"] == 4


def test_status_says_whether_the_triggers_match_the_columns(any_kind, tmp_path) -> None:
    db = make_sample_db(any_kind, tmp_path, triggers="field")
    try:
        state = tmp_path / "state"
        shown = json.loads(xdspub(db, "status", "--format", "json", state=state).stdout)["triggers"]
        usr = next(t for t in shown if t["table"] == "usr")
        assert usr["triggers"] == ["INSERT", "UPDATE", "DELETE"] and not (usr["added"] or usr["gone"])
        db.execute(f"ALTER TABLE {db.table('usr')} ADD COLUMN nick VARCHAR(20)")
        if any_kind != "sqlite":  # SQLite refuses to drop a column a trigger names
            db.execute(f"DROP VIEW {db.table('view_usr')}")
            db.execute(f"ALTER TABLE {db.table('usr')} DROP COLUMN lname")
        text = xdspub(db, "status", state=state).stdout
        usr = next(line for line in text.splitlines() if line.startswith("triggers: usr:"))
        if any_kind == "sqlite":
            assert "columns added since they were written: nick" in usr
        else:
            assert "STALE" in usr and "(lname)" in usr, usr
        assert "triggers: grp: INSERT, UPDATE, DELETE; match the columns" in text
    finally:
        db.drop()
