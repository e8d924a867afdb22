"""The delete guard (docs/delivery.md, Delete guard): a cycle that would delete more of a
class than --max-deletes, or delete a class read empty, publishes nothing, marks nothing
and keeps the previous state, until released; and a triggerless state that cannot be used
is not replaced without --startup (docs/triggerless.md, Startup)."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from publisher.cli import cli
from publisher.outcome.record import EMPTY_READ, Held, held_classes
from publisher.outcome.state import CURRENT
from publisher.settings import DeleteLimit
from tests.conftest import free_port, make_sample_db

USERS = 12


def xdspub(db, *args: str, state: Path | None = None):
    """``xdspub ARGS`` on ``db``'s schema (``state``: its --state-dir)."""
    command, *rest = args
    where = ["--db", db.engine.url.render_as_string(hide_password=False), "--schema", db.schema]
    folder = ["--state-dir", str(state)] if state else []
    # The changes are the test's, made as the user the publisher connects as: not loopback.
    user = ["--publisher-user", "publisher"] if command == "export" and "triggerless" not in rest else []
    return CliRunner().invoke(cli, [command, *where, *folder, *user, *rest])


@pytest.fixture(params=["sqlite", "postgresql"])
def people(request, tmp_path):
    """The sample schema with its triggers and USERS users, published once."""
    db = make_sample_db(request.param, tmp_path, triggers="field")
    for idu in range(1, USERS + 1):
        db.add_user(idu, f"user{idu}", None, None)
    yield db
    db.drop()


def deletes_in(path: Path) -> int:
    return path.read_text().count("<delete ") if path.exists() else 0


def test_limits_and_releases() -> None:
    assert [str(DeleteLimit.parse(t)) for t in ("500", "10%", "NONE")] == ["500", "10%", "none"]
    for bad in ("-1", "101%", "ten"):
        with pytest.raises(ValueError):
            DeleteLimit.parse(bad)
    limit = DeleteLimit.parse("10%")
    assert limit.exceeded(11, 100) and not limit.exceeded(10, 100) and limit.exceeded(1, None)
    held = held_classes({"a": 3, "b": 600, "c": 2}, None, {"c"}, DeleteLimit(500), {"b": 600})
    assert held == [Held("c", 2, None, EMPTY_READ)]
    assert held_classes({"b": 601}, None, (), DeleteLimit(500), {"b": 600})[0].deletes == 601
    assert held_classes({"b": 5}, None, (), DeleteLimit(), {}) == []


def test_an_event_log_mass_delete_is_held_until_released(people, tmp_path) -> None:
    state = tmp_path / "state"
    assert xdspub(people, "export", "--out", str(tmp_path / "adds.xml"), state=state).exit_code == 0
    people.execute(f"DELETE FROM {people.table('usr')}")
    pending = {r for r, letter in people.statuses().items() if letter == "N"}
    assert len(pending) == USERS

    held = xdspub(people, "export", "--out", str(tmp_path / "held.xml"), "--max-deletes", "10", state=state)
    assert held.exit_code == 6, held.output
    assert f"usr: {USERS} deletes, over --max-deletes 10" in held.stderr
    assert "Nothing was published or marked" in held.stderr
    assert not (tmp_path / "held.xml").exists()
    assert {r for r, letter in people.statuses().items() if letter == "N"} == pending
    shown = json.loads(xdspub(people, "status", "--format", "json", state=state).stdout)
    assert shown["hold"]["held"] == [{"class_name": "usr", "deletes": USERS, "objects": None,
                                      "why": "over --max-deletes 10"}]
    assert shown["last_cycle"]["outcome"] == "held" and shown["pending"] == {"usr": USERS}
    explained = xdspub(people, "explain", "--max-deletes", "10", "--format", "json", "--publisher-user", "p",
                       state=state)
    held_rows = [json.loads(line).get("held") for line in explained.stdout.splitlines()]
    assert held_rows == [f"usr: {USERS} deletes, over --max-deletes 10"] * USERS, explained.output
    # A percentage of what the class had: the rows are gone, counted back.
    held = xdspub(people, "export", "--out", str(tmp_path / "held.xml"), "--max-deletes", "50%", state=state)
    assert held.exit_code == 6 and f"usr: {USERS} deletes of the {USERS} it had" in held.stderr

    released = xdspub(people, "release", state=state)
    assert released.exit_code == 0 and f"released usr: {USERS} deletes" in released.stderr
    done = xdspub(people, "export", "--out", str(tmp_path / "deletes.xml"), "--max-deletes", "10", state=state)
    assert done.exit_code == 0, done.output
    assert deletes_in(tmp_path / "deletes.xml") == USERS
    assert set(people.statuses().values()) == {"S"}
    assert xdspub(people, "release", state=state).stderr.strip() == "xdspub: nothing is held"


def test_a_triggerless_class_read_empty_is_held(people, tmp_path) -> None:
    state = tmp_path / "state"
    triggerless = ("--mode", "triggerless")
    first = xdspub(people, "export", *triggerless, "--out", str(tmp_path / "first.xml"), state=state)
    assert first.exit_code == 0, first.output
    kept = {p: p.read_text() for p in state.rglob(CURRENT)}
    people.execute(f"DELETE FROM {people.table('usr')}")

    held = xdspub(people, "export", *triggerless, "--out", str(tmp_path / "held.xml"), "--max-deletes", "none",
                  state=state)
    assert held.exit_code == 6 and f"usr: read empty, {USERS} deletes" in held.stderr, held.output
    assert not (tmp_path / "held.xml").exists()
    assert {p: p.read_text() for p in state.rglob(CURRENT)} == kept
    shown = xdspub(people, "status", *triggerless, state=state).stdout
    assert "HELD since " in shown and f"usr {USERS} deletes (read empty)" in shown, shown

    once = xdspub(people, "export", *triggerless, "--out", str(tmp_path / "deletes.xml"), "--release-deletes",
                  state=state)
    assert once.exit_code == 0, once.output
    assert deletes_in(tmp_path / "deletes.xml") >= USERS
    assert {p: p.read_text() for p in state.rglob(CURRENT)} != kept


@pytest.fixture(params=["sqlite", "postgresql"])
def sample(request, tmp_path):
    db = make_sample_db(request.param, tmp_path)
    yield db
    db.drop()


def test_a_triggerless_state_that_cannot_be_used_needs_startup(sample, tmp_path) -> None:
    sample_db = sample
    sample_db.add_user(1, "a", None, None)
    state, out = tmp_path / "state", str(tmp_path / "out.xml")
    assert xdspub(sample_db, "export", "--mode", "triggerless", "--out", out, state=state).exit_code == 0
    refused = xdspub(sample_db, "export", "--mode", "triggerless", "--out", out, "--time-syntax", "2",
                     state=state)
    assert refused.exit_code == 2 and "written for time_syntax 1, not 2" in refused.stderr
    assert "give --startup" in refused.stderr
    # A forgotten --state-dir: the default folder knows where the state is.
    forgotten = xdspub(sample_db, "export", "--mode", "triggerless", "--out", out)
    assert forgotten.exit_code == 2 and f"give --state-dir {state}" in forgotten.stderr
    again = xdspub(sample_db, "export", "--mode", "triggerless", "--out", out, "--time-syntax", "2",
                   "--startup", "resync", state=state)
    assert again.exit_code == 0, again.output


@pytest.mark.slow  # the service as a process of its own
def test_poll_holds_logs_once_and_goes_on_when_released(tmp_path) -> None:
    from tests.test_service import Poll, deletes

    db = make_sample_db("sqlite", tmp_path)
    state, port, out = tmp_path / "state", free_port(), tmp_path / "out"
    deletes(db, 1, USERS)
    poll = Poll(db, out, tmp_path / "poll.log", "--max-deletes", "10", "--state-dir", str(state),
                "--metrics-port", str(port))
    try:
        poll.wait_log("cycle held")
        metrics = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics").read().decode()
        assert f"xdspub_held_deletes {USERS}.0" in metrics
        assert set(db.statuses().values()) == {"N"}
        assert xdspub(db, "release", state=state).exit_code == 0
        poll.wait_log("hold ended")
        poll.wait_for(lambda: set(db.statuses().values()) == {"S"}, "the released deletes published")
    finally:
        assert poll.terminate() == 0
    assert poll.log().count("cycle held") == 1
    db.drop()


def test_a_change_format_export_past_the_limit_is_held(tmp_path) -> None:
    from tests.test_qlik_kafka import jsonl, message, metadata

    columns = [("K", "STRING", 1), ("V", "STRING", 0)]
    path = tmp_path / "messages.jsonl"
    path.write_text(jsonl(metadata("T", columns), *(message("T", "DELETE", {"K": str(k), "V": "v"})
                                                    for k in range(3))))
    out = tmp_path / "out.xml"

    def export(limit: str):
        return CliRunner().invoke(cli, ["export", "--source", "qlik-kafka", "--input", str(path),
                                        "--out", str(out), "--max-deletes", limit])

    held = export("2")
    assert held.exit_code == 6 and "T: 3 deletes, over --max-deletes 2" in held.stderr, held.output
    assert "run again with a higher --max-deletes" in held.stderr and not out.exists()
    assert export("3").exit_code == 0 and deletes_in(out) == 3
