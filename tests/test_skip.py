"""``xdspub skip`` (docs/statuses.md, Cut-over from a running publisher): pending rows
consumed unpublished, by record_id or event_time, of the selected tables only when asked,
marked S or deleted, under the publisher lock."""

from __future__ import annotations

from click.testing import CliRunner

from publisher.cli import cli
from publisher.outcome.lock import PublisherLock, lock_name

ROWS = [
    ("idu=1", 1, "usr", "fname", None, "a"),
    ("idg=1", 1, "grp", "gname", None, "g"),
    ("idu=1", 1, "usr_phone", "phoneno", None, "1"),
    ("idu=2", 1, "usr", "fname", None, "b"),
    ("idu=3", 1, "usr", "fname", None, "c"),
]


def skip(db, *args: str):
    url = db.engine.url.render_as_string(hide_password=False)
    return CliRunner().invoke(cli, ["skip", "--db", url, "--schema", db.schema, *args])


def test_skip_consumes_pending_rows_unpublished(any_db, tmp_path) -> None:
    any_db.log(*ROWS)
    any_db.execute(f"UPDATE {any_db.table('indirect_process')} SET status = 'E' WHERE record_id = 2")
    result = skip(any_db, "--through", "4", "--dry-run")
    assert result.exit_code == 0 and "xdspub: would skip 3 rows (record_id 1..4)" in result.stderr
    assert set(any_db.statuses().values()) == {"N", "E"}
    # Only the selected classes' rows (with their child tables'); the E row stays E.
    result = skip(any_db, "--through", "4", "--tables", "usr")
    assert result.exit_code == 0 and "xdspub: skipped 3 rows (record_id 1..4)" in result.stderr
    assert any_db.statuses() == {1: "S", 2: "E", 3: "S", 4: "S", 5: "N"}
    # By event_time, deleting: what is left pending publishes as ever.
    any_db.log(ROWS[0])
    times = {5: "2020-01-01 10:00:00", 6: "2020-01-01 12:00:00"}
    for record_id, at in times.items():
        any_db.execute(f"UPDATE {any_db.table('indirect_process')} SET event_time = :t WHERE record_id = :r",
                       t=at, r=record_id)
    result = skip(any_db, "--before", "2020-01-01T12:30:00+01:00", "--delete-processed")
    assert result.exit_code == 0 and "xdspub: skipped 1 rows (record_id 5..5)" in result.stderr
    assert any_db.statuses() == {1: "S", 2: "E", 3: "S", 4: "S", 6: "N"}
    root, report = any_db.publish(tmp_path / "out.xml")
    assert report.rows == 1 and [c.findtext("association") for c in root.find("input")] == [
        f"idu=1,table=usr,schema={any_db.schema}"
    ]
    result = skip(any_db, "--through", "100")
    assert result.exit_code == 0 and "xdspub: skipped 0 rows" in result.stderr


def test_skip_refuses_bad_input_and_an_active_publisher(sample_db) -> None:
    sample_db.log(*ROWS)
    for args, message in [
        ((), "skip needs --through RECORD_ID or --before TIME"),
        (("--before", "yesterday"), "'yesterday' is not an ISO 8601 date and time"),
        (("--through", "9", "--tables", "usr_phone"), "a child table, published with its class usr"),
    ]:
        result = skip(sample_db, *args)
        assert result.exit_code == 2 and message in result.stderr, result.output
    lock = PublisherLock(sample_db.database, lock_name(sample_db.settings))
    assert lock.try_acquire()
    try:
        result = skip(sample_db, "--through", "9")
        assert result.exit_code == 2 and "another publisher is active" in result.stderr
    finally:
        lock.release()
    assert set(sample_db.statuses().values()) == {"N"}
