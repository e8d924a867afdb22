"""The rules end to end through a Spark cycle on SQLite, one behaviour per test
(docs/event-types.md, docs/table-key.md, docs/reduction.md, docs/statuses.md)."""

from __future__ import annotations

import datetime as dt

import pytest

from publisher.errors import SinkError


def commands(document) -> list[tuple[str, str, list[str]]]:
    """(kind, association, [attr-name ...]) of each command, in order."""
    return [
        (c.tag, c.findtext("association"), [a.get("attr-name") for a in c if a.tag != "association"])
        for c in document.find("input")
    ]


def values_of(document) -> dict[str, list[str]]:
    return {
        a.get("attr-name"): [v.text for v in a.iter("value")]
        for a in document.iter("add-attr", "modify-attr")
    }


ASSOC = "idu=1,table=usr,schema=indirect"
# What a row query-back (type 6) publishes of a usr row: every attribute of the class, the
# reference manager and the child tables' attributes too (docs/classes.md).
EVERY_ATTRIBUTE = ["fname", "lname", "photo", "manager", "usr_mbr_of.idg", "usr_phone.phoneno"]


# Precedence (docs/reduction.md) -------------------------------------------------------


def test_field_query_back_supersedes_field_events_of_that_field(sample_db, publish):
    sample_db.add_user(1, "John", "Doe", None)
    sample_db.log(("idu=1", 2, "usr", "fname", "Jack", "Jim"), ("idu=1", 8, "usr", "fname"),
                  ("idu=1", 2, "usr", "lname", "Frost", "Doe"))
    document, _ = publish()
    assert commands(document) == [("modify", ASSOC, ["fname", "lname"])]
    assert values_of(document) == {"fname": ["John"], "lname": ["Frost", "Doe"]}
    assert sample_db.statuses() == {1: "S", 2: "S", 3: "S"}


def test_row_query_back_supersedes_field_query_back_and_field_events(sample_db, publish):
    sample_db.add_user(1, "John", "Doe", "u7s=")
    sample_db.log(("idu=1", 8, "usr", "fname"), ("idu=1", 6, "usr"),
                  ("idu=1", 1, "usr", "lname", None, "X"))
    document, _ = publish()
    assert commands(document) == [("modify", ASSOC, EVERY_ATTRIBUTE)]
    assert values_of(document)["lname"] == ["Doe"]


def test_several_row_query_backs_render_the_row_once(sample_db, publish):
    sample_db.add_user(1, "John", "Doe", None)
    sample_db.log(("idu=1", 5, "usr"), ("idu=1", 6, "usr"), ("idu=1", 6, "usr"))
    document, _ = publish()
    assert commands(document) == [("modify", ASSOC, EVERY_ATTRIBUTE)]
    assert [c.get("event-id") for c in document.find("input")] == ["1"]


def test_the_largest_bigint_key_is_queried_back(sample_db, publish):
    top = 2**63 - 1  # 19 digits: past what the vectorised path takes, so the rules check it
    sample_db.add_user(top, "John", "Doe", None)
    sample_db.log((f"idu={top}", 6, "usr"))
    document, report = publish()
    assert commands(document) == [("modify", f"idu={top},table=usr,schema=indirect", EVERY_ATTRIBUTE)]
    assert report.errors == []


def test_query_back_of_a_vanished_row_has_no_effect(sample_db, publish):
    sample_db.log(("idu=9", 6, "usr"), ("idu=9", 7, "usr", "fname"))
    document, report = publish()
    assert commands(document) == []
    assert sample_db.statuses() == {1: "S", 2: "S"}
    assert report.errors == []


def test_delete_after_update_publishes_both_in_order(sample_db, publish):
    sample_db.log(("idu=1", 2, "usr", "fname", "Jack", "John"), ("idu=1", 4, "usr"))
    document, _ = publish()
    assert commands(document) == [("modify", ASSOC, ["fname"]), ("delete", ASSOC, [])]


def test_delete_is_never_lost_to_a_query_back_before_it(sample_db, publish):
    sample_db.log(("idu=1", 6, "usr"), ("idu=1", 4, "usr"))
    document, _ = publish()
    assert commands(document) == [("delete", ASSOC, [])]
    assert sample_db.statuses() == {1: "S", 2: "S"}


# Grouping -----------------------------------------------------------------------------


def test_interleaved_objects_group_into_runs_placed_at_their_first_event(sample_db, publish):
    sample_db.log(
        ("idu=1", 1, "usr", "fname", None, "Jack"),
        ("idu=2", 1, "usr", "fname", None, "Ann"),
        ("idu=1", 1, "usr", "lname", None, "Frost"),
        ("idu=1", 2, "usr", "fname", "Jack", "John"),
        ("idu=2", 4, "usr"),
        ("idu=1", 3, "usr", "lname", "Frost", "Doe"),
    )
    document, report = publish()
    assert commands(document) == [
        ("add", ASSOC, ["fname", "lname"]),
        ("add", "idu=2,table=usr,schema=indirect", ["fname"]),
        ("modify", ASSOC, ["fname", "lname"]),
        ("delete", "idu=2,table=usr,schema=indirect", []),
    ]
    assert [c.get("event-id") for c in document.find("input")] == ["1", "2", "4", "5"]
    assert report.commands == 4


def test_null_new_value_adds_nothing(sample_db, publish):
    sample_db.log(("idu=1", 1, "usr", "fname", None, "Jack"), ("idu=1", 1, "usr", "lname", None, None))
    document, _ = publish()
    assert commands(document) == [("add", ASSOC, ["fname"])]


# Loopback (docs/statuses.md) ----------------------------------------------------------


@pytest.mark.parametrize(("allow", "published"), [(False, ["idu=2"]), (True, ["idu=1", "idu=2"])])
def test_loopback(sample_db, publish, allow, published):
    sample_db.log(("idu=1", 4, "usr"), perpetrator="publisher")
    sample_db.log(("idu=2", 4, "usr"))  # NULL perpetrator: published
    document, _ = publish(publisher_user="publisher", allow_loopback=allow)
    assert [a.split(",")[0] for _k, a, _n in commands(document)] == published
    assert sample_db.statuses() == {1: "S", 2: "S"}


# Future events (docs/event-log.md) ----------------------------------------------------


def test_future_events_wait_and_the_rest_go_by_event_time(sample_db, publish):
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    stamp = lambda delta: (now + delta).strftime("%Y-%m-%d %H:%M:%S")  # noqa: E731
    sample_db.log(("idu=1", 4, "usr"), event_time=stamp(dt.timedelta(minutes=-1)))
    sample_db.log(("idu=2", 4, "usr"), event_time=stamp(dt.timedelta(minutes=-5)))
    sample_db.log(("idu=3", 4, "usr"), event_time=stamp(dt.timedelta(days=1)))
    document, _ = publish(future_events=True)
    assert [a.split(",")[0] for _k, a, _n in commands(document)] == ["idu=2", "idu=1"]
    assert sample_db.statuses() == {1: "S", 2: "S", 3: "N"}


# Error rows and warnings (docs/statuses.md) -------------------------------------------


@pytest.mark.parametrize(
    ("row", "reason"),
    [
        (("idu=1", 9, "usr"), "unknown event_type 9"),
        (("idu=1", None, "usr"), "event_type is NULL"),
        (("idu=", 4, "usr"), "malformed table_key: empty value at character 5"),
        (('idu="1', 4, "usr"), "malformed table_key: unterminated"),
        (("idu=1+idu=2", 4, "usr"), "duplicate column 'idu'"),
        (("idu=1", 4, "nosuch"), "table nosuch is not in the published schema indirect"),
        (("idu=1", 4, None), "table_name is NULL"),
        ((None, 4, "usr"), "table_key is NULL"),
        (("uid=1", 4, "usr"), "table_key names uid; the key of usr is idu"),
        (("fname=Jack", 6, "usr"), "table_key names fname; the key of usr is idu"),
        (("idu=1+fname=Jack", 4, "usr"), "table_key names idu+fname; the key of usr is idu"),
        (("idu=1", 1, "usr", "nosuch", None, "x"), "column nosuch is not in table usr"),
        (("idu=1", 1, "usr", None, None, "x"), "column_name is NULL for per-field event_type 1"),
        (("idu=1", 1, "usr", "fname", None, "a\x01b"), "new_value has a character XML 1.0 cannot carry at position 2"),
        (("idu=1", 2, "usr", "idu", "1", "one"), "new_value one is not a valid int value"),
        (("idu=x", 6, "usr"), "table_key value x of idu is not an integer"),
        (("idu=abc", 4, "usr"), "table_key value abc of idu is not an integer"),
        (("idu=99999999999999999999", 6, "usr"), "table_key value 99999999999999999999 of idu is not"),
        (("idu=18446744073709551616", 4, "usr"), "value 18446744073709551616 of idu is not a 64-bit integer"),
        (("idu=1", 2.5, "usr"), "unknown event_type 2.5"),
        (("idu=1", 1, "usr", "idu", None, "5\n"), "new_value 5\\x0a is not a valid int value"),
        (("idu=\x0b1", 4, "usr"), "table_key has a character XML 1.0 cannot carry at position 5"),
        (("idu=1", 1, "usr", "fn\x01", None, "x"), "column_name has a character XML 1.0 cannot"),
    ],
)
def test_bad_rows_are_marked_E_with_a_reason_and_the_rest_goes_on(sample_db, publish, row, reason):
    sample_db.log(("idu=7", 4, "usr"))
    sample_db.log(row)
    sample_db.log(("idu=8", 4, "usr"))
    document, report = publish()
    assert [a.split(",")[0] for _k, a, _n in commands(document)] == ["idu=7", "idu=8"]
    assert sample_db.statuses() == {1: "S", 2: "E", 3: "S"}
    [(record_id, why)] = report.errors
    assert record_id == 2 and reason in why


def test_unpublishable_current_value_makes_the_query_back_row_an_error(sample_db, publish):
    sample_db.add_user(1, "Jo\x02hn", "Doe", None)
    sample_db.log(("idu=1", 6, "usr"), ("idu=1", 1, "usr", "lname", None, "Doe"))
    document, report = publish()
    assert sample_db.statuses() == {1: "E", 2: "S"}
    assert "current value of fname" in report.errors[0][1]
    assert commands(document) == [("add", ASSOC, ["lname"])]  # the 6 no longer supersedes


def test_padded_key_is_canonicalised_grouped_and_marked_W(sample_db, publish):
    sample_db.log(("idu=1", 1, "usr", "fname", None, "Jack"), ("idu= 1", 1, "usr", "lname", None, "Frost"))
    document, report = publish()
    assert commands(document) == [("add", ASSOC, ["fname", "lname"])]
    assert sample_db.statuses() == {1: "S", 2: "W"}
    assert report.notes == [(2, "W", "table_key idu= 1 is not canonical; published as idu=1")]


def test_values_that_are_not_rendered_are_not_checked(sample_db, publish):
    sample_db.log(("idu=1", 3, "usr", "fname", "\x01", "ok"), ("idu=2", 1, "usr", "fname", "\x02", "ok"))
    document, report = publish()
    assert report.errors == [] and len(commands(document)) == 2


def test_type_3_with_null_new_value_removes_all_values(sample_db, publish):
    sample_db.log(("idu=1", 3, "usr", "fname", "Jack", None))
    document, _ = publish()
    assert commands(document) == [("modify", ASSOC, ["fname"])]
    [attr] = document.iter("modify-attr")
    assert [child.tag for child in attr] == ["remove-all-values"]


def test_query_back_before_a_delete_has_no_effect_on_what_follows_it(sample_db, publish):
    sample_db.add_user(2, "X", None, None)  # deleted, then created again, in one cycle
    assert2 = "idu=2,table=usr,schema=indirect"
    sample_db.log(("idu=2", 6, "usr"), ("idu=2", 4, "usr"), ("idu=2", 1, "usr", "fname", None, "X"))
    document, _ = publish()
    assert commands(document) == [("delete", assert2, []), ("add", assert2, ["fname"])]
    assert sample_db.statuses() == {1: "S", 2: "S", 3: "S"}


def test_query_back_of_time_and_date_keyed_tables(sample_db, publish):
    sample_db.execute("CREATE TABLE shift (id INTEGER PRIMARY KEY, starts TIME)")
    sample_db.execute("CREATE TABLE h (emp INTEGER, day DATE, note TEXT, PRIMARY KEY (emp, day))")
    sample_db.execute("INSERT INTO shift VALUES (1, '10:30:00'), (2, 'half past ten')")
    sample_db.execute("INSERT INTO h VALUES (1, '2024-01-01', 'on call')")
    sample_db.log(("id=1", 6, "shift"), ("id=2", 6, "shift"), ("emp=1+day=2024-01-01", 6, "h"))
    document, report = publish()
    assert values_of(document) == {"starts": ["37800"], "note": ["on call"]}
    assert [rid for rid, _ in report.errors] == [2]
    assert "current value 'half past ten' of starts is not a valid time value" in report.errors[0][1]


# Value types (docs/rendering.md) ------------------------------------------------------


def test_char_values_lose_their_pad_spaces(sample_db, publish):
    sample_db.add_user(1, "John  ", "Doe     ", None)
    sample_db.log(("idu=1", 1, "usr", "lname", None, "Frost   "), ("idu=2", 4, "usr"), ("idu=1", 6, "usr"))
    document, _ = publish()
    assert values_of(document) == {"fname": ["John  "], "lname": ["Doe"]} | dict.fromkeys(EVERY_ATTRIBUTE[2:], [])


def test_view_is_keyed_by_its_pk_columns(sample_db, publish):
    sample_db.add_user(1, "John", "Doe", None)
    sample_db.log(("pk_empno=1", 6, "view_usr"))
    document, _ = publish()
    assert commands(document) == [
        ("modify", "pk_empno=1,table=view_usr,schema=indirect",
         ["fname", "lname", "photo", "fk_manager", "fk_mbr_of", "phoneno"])
    ]


# Status write-back and delivery (docs/statuses.md) ------------------------------------


def test_delete_processed_deletes_S_and_W_and_keeps_E(sample_db, publish):
    sample_db.log(("idu=1", 4, "usr"), ("idu= 2", 4, "usr"), ("idu=3", 9, "usr"))
    publish(delete_processed=True)
    assert sample_db.statuses() == {3: "E"}


def test_dry_run_writes_output_and_leaves_statuses(sample_db, publish):
    sample_db.log(("idu=1", 4, "usr"))
    document, _ = publish(dry_run=True)
    assert len(commands(document)) == 1
    assert sample_db.statuses() == {1: "N"}


def test_unwritable_sink_marks_nothing(sample_db, tmp_path):
    sample_db.log(("idu=1", 4, "usr"))
    with pytest.raises(SinkError):
        sample_db.publish(tmp_path / "missing-folder" / "out.xml")
    assert sample_db.statuses() == {1: "N"}


def test_only_status_N_is_read_and_gaps_do_not_end_the_cycle(sample_db, publish):
    sample_db.log(("idu=1", 4, "usr"), ("idu=2", 4, "usr"), ("idu=3", 4, "usr"), ("idu=4", 4, "usr"))
    sample_db.execute("UPDATE indirect_process SET status = 'n' WHERE record_id = 2")
    sample_db.execute("DELETE FROM indirect_process WHERE record_id = 3")
    document, _ = publish()
    assert [a.split(",")[0] for _k, a, _n in commands(document)] == ["idu=1", "idu=4"]
    assert sample_db.statuses() == {1: "S", 2: "n", 4: "S"}


def test_query_limit_reads_the_first_rows_only(sample_db, publish):
    sample_db.log(("idu=1", 4, "usr"), ("idu=2", 4, "usr"), ("idu=3", 4, "usr"))
    publish(query_limit=2)
    assert sample_db.statuses() == {1: "S", 2: "S", 3: "N"}
