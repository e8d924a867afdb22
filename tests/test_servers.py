"""PostgreSQL and MariaDB: real triggers on indirect.usr, and rows committed out of
record_id order."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from publisher.errors import ConfigError

from tests.conftest import make_sample_db
from tests.test_rules import commands

SERVERS = ["postgresql", "mariadb"]


@pytest.fixture(params=SERVERS)
def server_db(request, tmp_path):
    db = make_sample_db(request.param, tmp_path, triggers="none")
    yield db
    db.drop()


def _install_triggers(db, flavour: str) -> None:
    from publisher.source.init_db import init_db

    init_db(db.database, db.schema, "indirect_process", True, flavour)


def _changes(db) -> None:
    usr = db.table("usr")
    db.execute(f"INSERT INTO {usr} (idu, fname, lname, photo) VALUES (1, 'Jack', 'Frost', :p)", p=b"\xaa\xaa")
    db.execute(f"INSERT INTO {usr} (idu, fname, lname, photo) VALUES (2, 'Ann', NULL, NULL)")
    db.execute(f"UPDATE {usr} SET fname = 'John', lname = 'Doe', photo = :p WHERE idu = 1", p=b"\xbb\xbb")
    db.execute(f"DELETE FROM {usr} WHERE idu = 2")


def test_field_triggers_publish_inserts_updates_and_deletes(server_db, tmp_path):
    _install_triggers(server_db, "field")
    _changes(server_db)
    document, report = server_db.publish(tmp_path / "out.xml", allow_loopback=True)
    a1, a2 = (f"idu={i},table=usr,schema={server_db.schema}" for i in (1, 2))
    assert commands(document) == [
        ("add", a1, ["fname", "lname", "photo"]),
        ("add", a2, ["fname"]),
        ("modify", a1, ["fname", "lname", "photo"]),
        ("delete", a2, []),
    ]
    photo = document.find("input")[2].findall("modify-attr")[2]
    assert [v.text for v in photo.iter("value")] == ["qqo=", "u7s="]
    assert set(server_db.statuses().values()) == {"S"} and report.rows == 8


def test_query_back_triggers_publish_current_values(server_db, tmp_path):
    _install_triggers(server_db, "query-back")
    _changes(server_db)
    document, _ = server_db.publish(tmp_path / "out.xml", allow_loopback=True)
    a1, a2 = (f"idu={i},table=usr,schema={server_db.schema}" for i in (1, 2))
    # Type 6 replaces every attribute of the class: the NULL manager and the child tables'
    # attributes, which hold no value, are cleared (docs/classes.md).
    attributes = ["fname", "lname", "photo", "manager", "usr_mbr_of.idg", "usr_phone.phoneno"]
    assert commands(document) == [("modify", a1, attributes), ("delete", a2, [])]
    values = [[v.text for v in a.iter("value")] for a in document.iter("modify-attr")]
    assert values == [["John"], ["Doe"], ["u7s="], [], [], []]


def test_triggered_rows_by_the_publisher_user_are_loopback(server_db, tmp_path):
    _install_triggers(server_db, "field")
    _changes(server_db)
    # The URL's user made them, and no --publisher-user was given: the first contact is
    # refused, nothing marked (docs/statuses.md, Loopback).
    with pytest.raises(ConfigError, match="nothing was published or marked: 8 rows were logged"):
        server_db.publish(tmp_path / "out.xml")
    assert set(server_db.statuses().values()) == {"N"}
    user = server_db.engine.url.username
    document, report = server_db.publish(tmp_path / "out.xml", publisher_user=user)
    assert commands(document) == [] and report.by_status == {"S": 8}
    assert report.loopback == 8 and "(8 of them loopback)" in report.summary()
    assert f"made by {user!r}, the publisher's own database user" in report.loopback_hint()


def test_rows_committed_out_of_record_id_order_are_published(server_db, tmp_path):
    log = server_db.table("indirect_process")
    insert = sa.text(f"INSERT INTO {log} (table_key, event_type, table_name) VALUES (:k, 4, 'usr')")
    slow = server_db.engine.connect()
    slow.execute(insert, {"k": "idu=1"})  # takes the lower record_id, commits last
    with server_db.engine.begin() as fast:
        fast.execute(insert, {"k": "idu=2"})

    first, _ = server_db.publish(tmp_path / "first.xml")
    slow.commit()
    slow.close()
    second, _ = server_db.publish(tmp_path / "second.xml")

    assert [a.split(",")[0] for _k, a, _n in commands(first)] == ["idu=2"]
    assert [a.split(",")[0] for _k, a, _n in commands(second)] == ["idu=1"]
    statuses = server_db.statuses()
    assert sorted(statuses.values()) == ["S", "S"] and min(statuses) < max(statuses)
