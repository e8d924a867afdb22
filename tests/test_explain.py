"""``xdspub explain`` (docs/explain.md): each fate a row can have, in text and JSON, on the
three databases; and nothing written."""

from __future__ import annotations

import json

from click.testing import CliRunner

from publisher.cli import cli
from publisher.model.statuses import Status


def _explain(db, *args: str) -> str:
    base = ["explain", "--db", db.settings.db_url, "--schema", db.schema,
            "--publisher-user", "loopy", "--tables", "usr", "--exclude-columns", "usr.photo"]
    result = CliRunner().invoke(cli, [*base, *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_explain_says_each_rows_fate(any_db):
    db = any_db
    db.add_user(2, "Bo", "Old", None)
    db.add_user(3, "Cy", "Now", None)
    db.add_user(4, "Di", "Gone", None)
    db.log(
        ("idu=1", 1, "usr", "fname", None, "Ann"),  # 1 published: add
        ("idu=2", 2, "usr", "fname", "a", "b"),  # 2 superseded by 3
        ("idu=2", 8, "usr", "fname"),  # 3 published
        ("idu=3", 8, "usr", "lname"),  # 4 superseded by 5
        ("idu=3", 6, "usr"),  # 5 published
        ("idu=4", 6, "usr"),  # 6 superseded by 7, before a delete
        ("idu=4", 4, "usr"),  # 7 published: delete
        ("idu=5", 6, "usr"),  # 8 vanished
        ("idg=7", 1, "grp", "gname", None, "g"),  # 9 not selected
        ("idu=06", 1, "usr", "lname", None, "W"),  # 10 W: not canonical
        ("idu=1", 9, "usr", "fname", None, "x"),  # 11 E
    )
    db.log(("idu=1", 1, "usr", "lname", None, "L"), perpetrator="loopy")  # 12 loopback
    db.execute(f"UPDATE {db.table('indirect_process')} SET status = 'S' WHERE record_id = 12")
    db.log(("idu=8", 2, "usr", "fname", None, None))  # 13 nothing to send
    db.log(("idu=8", 1, "usr", "photo", None, "qqo="))  # 14 excluded column

    lines = [json.loads(line) for line in _explain(db, "--format", "json", *map(str, range(1, 16))).splitlines()]
    by_id = {line["record_id"]: line for line in lines}
    assert sorted(by_id) == list(range(1, 16))
    fates = {r: (line["fate"], line.get("rule"), line.get("superseded_by")) for r, line in by_id.items()}
    assert fates == {
        1: ("published", None, None),
        2: ("superseded", "query-back beats field", 3),
        3: ("published", None, None),
        4: ("superseded", "row beats field", 5),
        5: ("published", None, None),
        6: ("superseded", "before a delete", 7),
        7: ("published", None, None),
        8: ("vanished", "query-back of a vanished row", None),
        9: ("not selected", "not selected", None),
        10: ("published", None, None),
        11: ("error", None, None),
        12: ("loopback", "loopback", None),
        13: ("nothing to send", "no attribute to send", None),
        14: ("consumed", "excluded column", None),
        15: ("not found", None, None),
    }
    # Commands in the cycle's order, each with its kind, association and XML.
    assert [by_id[r]["command"] for r in (1, 3, 5, 7, 10)] == [1, 2, 3, 4, 5]
    assert by_id[7]["kind"] == "delete" and by_id[7]["association"].startswith("idu=4,table=usr,")
    assert '<modify-attr attr-name="fname">' in by_id[3]["xml"] and ">Bo<" in by_id[3]["xml"]
    assert by_id[10]["status"] == Status.WARNED and "not canonical" in by_id[10]["reason"]
    assert by_id[11]["status"] == Status.ERROR and "unknown event_type 9" in by_id[11]["reason"]
    assert by_id[12]["as_if_pending"] and by_id[12]["logged"] == "S"
    assert not by_id[1]["as_if_pending"]

    text = _explain(db)  # the pending rows: all but 12
    assert "#12" not in text
    for phrase in (
        "#1 usr idu=1 1 insert field fname",
        "published in command 1 (add idu=1,table=usr",
        "superseded by #3 (query-back beats field)",
        "superseded by #5 (row beats field)",
        "superseded by #7 (before a delete)",
        "a query-back of a row that is gone",
        "its table is not selected",
        "with warning W: table_key idu=06 is not canonical",
        "E: unknown event_type 9",
        '<delete class-name="usr" event-id="7">',
        "#13 usr idu=8 2 update field fname",
        "its modify has no attribute",
        "consumed unpublished: excluded column",
    ):
        assert phrase in text, phrase
    assert "as if pending" in _explain(db, "12") and "loopback" in _explain(db, "12")
    # Nothing was written: the statuses are as logged.
    assert set(db.statuses().values()) == {Status.NEW, Status.DONE}
    assert db.statuses()[12] == Status.DONE and db.statuses()[1] == Status.NEW


def test_explain_triggerless_says_what_the_next_cycle_would_publish_and_keeps_no_state(sample_db, tmp_path):
    db, state, out = sample_db, tmp_path / "state", tmp_path / "out"
    db.add_user(2, "Bo", "Old", None)
    db.add_user(3, "Cy", "Now", None)
    mode = ["--tables", "usr", "--mode", "triggerless", "--state-dir", str(state), "--startup", "all"]
    CliRunner().invoke(cli, ["export", "--db", db.settings.db_url, *mode, "--out", str(out / "1")],
                       catch_exceptions=False)
    db.execute(f"UPDATE {db.table('usr')} SET lname = 'New' WHERE idu = 2")
    explained = CliRunner().invoke(cli, ["explain", "--db", db.settings.db_url, *mode,
                                         "--format", "json"], catch_exceptions=False)
    lines = [json.loads(line) for line in explained.output.splitlines()]
    assert [(line["table_name"], line["table_key"], line["rule"], line["kind"]) for line in lines] == [
        ("usr", "idu=2", "changed", "modify")
    ]
    assert "<value type=\"string\">New</value>" in lines[0]["xml"]
    # The state was kept as it was: the next cycle publishes that change.
    CliRunner().invoke(cli, ["export", "--db", db.settings.db_url, *mode, "--out", str(out / "2")],
                       catch_exceptions=False)
    assert [path.read_text().count("<modify ") for path in (out / "2").glob("*.xml")] == [1]
