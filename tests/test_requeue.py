"""``xdspub requeue`` (docs/statuses.md, Requeue): rows back to N by record_id, range,
status and the reason the lineage or the service's JSON log gives them, under the
publisher lock; the next cycle publishes them."""

from __future__ import annotations

import logging

from click.testing import CliRunner

from publisher.cli import cli
from publisher.outcome.lock import PublisherLock, lock_name
from publisher.service.logs import _Formatter

ROWS = [
    ("idu=1", 1, "usr", "fname", None, "too long value"),  # E under --max-value-length 8
    ("idu=2", 1, "usr", "fname", None, "b"),  # S
    ("idu=3", 9, "usr"),  # E: unknown event_type
    ("idu= 4", 1, "usr", "fname", None, "d"),  # W: not canonical
    ("idu=5", 1, "usr", "fname", None, "longer still"),  # E under --max-value-length 8
    ("idu=6", 1, "usr", "fname", None, "f"),  # S
]
TOO_LONG = "new_value is longer than 8 characters"


def requeue(db, *args: str):
    url = db.engine.url.render_as_string(hide_password=False)
    return CliRunner().invoke(cli, ["requeue", "--db", url, "--schema", db.schema, *args])


def assert_requeued(db, args: tuple[str, ...], summary: str, statuses: dict[int, str]) -> None:
    result = requeue(db, *args)
    assert result.exit_code == 0 and f"xdspub: {summary}\n" in result.stderr, result.output
    assert db.statuses() == statuses


def test_requeue_by_id_range_status_and_reason(any_db, tmp_path) -> None:
    any_db.log(*ROWS)
    lineage = tmp_path / "lineage.jsonl"
    any_db.publish(tmp_path / "first.xml", max_value_length=8, lineage=str(lineage))
    published = {1: "E", 2: "S", 3: "E", 4: "W", 5: "E", 6: "S"}
    assert any_db.statuses() == published
    by_reason = ("--reason", "longer than 8", "--reason-log", str(lineage))
    # Dry run: counted, nothing changed.
    assert_requeued(any_db, ("--status", "E", "--dry-run"), "would requeue 3 rows (record_id 1..5)",
                    published)
    assert_requeued(any_db, (*by_reason, "--dry-run"), "would requeue 2 rows (record_id 1..5)", published)
    # The reasons as the publication's record kept them, without a lineage.
    assert_requeued(any_db, ("--reason", "longer than 8", "--dry-run"), "would requeue 2 rows (record_id 1..5)",
                    published)
    # By reason: the E rows the lineage says were too long, and those alone; then the next
    # export publishes them.
    assert_requeued(any_db, by_reason, "requeued 2 rows (record_id 1..5)", {**published, 1: "N", 5: "N"})
    root, report = any_db.publish(tmp_path / "second.xml", lineage=str(lineage))
    assert report.rows == 2 and report.by_status == {"S": 2}
    assert [c.findtext("association") for c in root.find("input")] == [
        f"idu={i},table=usr,schema={any_db.schema}" for i in (1, 5)
    ]
    now = {**published, 1: "S", 5: "S"}
    assert any_db.statuses() == now
    # The reason they had is no longer theirs: S now, not E.
    assert_requeued(any_db, by_reason, "requeued 0 rows", now)
    # By record_id: whatever their status (3 is E, 4 is W); a row already N is not counted.
    any_db.log(("idu=7", 4, "usr"))
    assert_requeued(any_db, ("3", "4", "7"), "requeued 2 rows (record_id 3..4)", {**now, 3: "N", 4: "N", 7: "N"})
    any_db.publish(tmp_path / "third.xml")
    assert any_db.statuses() == {**now, 7: "S"}
    # A range and a status together: the S rows from 2 to 5, and no other.
    assert_requeued(any_db, ("--from", "2", "--through", "5", "--status", "S"),
                    "requeued 2 rows (record_id 2..5)", {**now, 7: "S", 2: "N", 5: "N"})
    # A range alone (open above), and record_ids with a status that one of them lacks.
    assert_requeued(any_db, ("--from", "6"), "requeued 2 rows (record_id 6..7)",
                    {**now, 2: "N", 5: "N", 6: "N", 7: "N"})
    assert_requeued(any_db, ("1", "3", "4", "--status", "E", "--status", "W"),
                    "requeued 2 rows (record_id 3..4)", {1: "S", 2: "N", 3: "N", 4: "N", 5: "N", 6: "N", 7: "N"})


def json_log_line(event: str, **fields: object) -> str:
    """A line as poll --log-format json writes it."""
    record = logging.LogRecord("xdspub", logging.ERROR, __file__, 1, event, None, None)
    record.fields = fields
    return _Formatter(as_json=True).format(record) + "\n"


def test_requeue_by_a_reason_in_the_service_json_log(sample_db, tmp_path) -> None:
    sample_db.log(*ROWS)
    sample_db.publish(tmp_path / "out.xml", max_value_length=8)
    lines = [json_log_line("cycle", rows=6)] + [
        json_log_line("row", record_id=record_id, status=status, reason=reason)
        for record_id, status, reason in [
            (1, "E", TOO_LONG), (3, "E", "unknown event_type 9"), (5, "E", "something else"),
            (5, "E", TOO_LONG), (4, "W", "table_key idu= 4 is not canonical; published as idu=4"),
        ]
    ]
    log = tmp_path / "poll.log"
    log.write_text("".join(lines) + '{"time": "cut short by a crash", "record_id": 6, "rea')
    by_reason = ("--reason", TOO_LONG, "--reason-log", str(log))
    # Each row's last reason; the record_ids named narrow the selection.
    assert_requeued(sample_db, ("5", "6", *by_reason), "requeued 1 rows (record_id 5..5)",
                    {1: "E", 2: "S", 3: "E", 4: "W", 5: "N", 6: "S"})
    assert_requeued(sample_db, ("--reason", "canonical", "--reason-log", str(log), "--status", "E"),
                    "requeued 0 rows", {1: "E", 2: "S", 3: "E", 4: "W", 5: "N", 6: "S"})
    assert_requeued(sample_db, ("--reason", "canonical", "--reason-log", str(log)),
                    "requeued 1 rows (record_id 4..4)", {1: "E", 2: "S", 3: "E", 4: "N", 5: "N", 6: "S"})


def test_requeue_refuses_bad_input_and_an_active_publisher(any_db, tmp_path) -> None:
    any_db.log(*ROWS)
    any_db.execute(f"UPDATE {any_db.table('indirect_process')} SET status = 'E'")
    text_log = tmp_path / "poll.log"
    text_log.write_text("2026-01-01T00:00:00.000Z error row record_id=1 status=E reason=x\n")
    for args, message in [
        ((), "requeue needs RECORD_ID, --from, --through, --status or --reason"),
        (("--dry-run",), "requeue needs RECORD_ID, --from, --through, --status or --reason"),
        (("1", "--reason-log", str(text_log)), "--reason-log goes with --reason"),
        (("--reason", "x", "--reason-log", str(text_log)), "is not JSON lines"),
        (("--reason", "", "--reason-log", str(text_log)), "--reason needs some text"),
        (("--from", "5", "--through", "4"), "--from 5 is after --through 4"),
        (("--status", "N"), "'N' is not one of"),
        (("--status", "e"), "'e' is not one of"),
    ]:
        result = requeue(any_db, *args)
        assert result.exit_code == 2 and message in result.stderr, (args, result.output)
    lock = PublisherLock(any_db.database, lock_name(any_db.settings))
    assert lock.try_acquire()
    try:
        result = requeue(any_db, "--status", "E")
        assert result.exit_code == 2 and "another publisher is active" in result.stderr, result.output
    finally:
        lock.release()
    assert set(any_db.statuses().values()) == {"E"}
