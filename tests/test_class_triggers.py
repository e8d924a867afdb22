"""The logical class end to end (docs/classes.md, docs/triggers.md): changes made through the
triggers `xdspub triggers` generates for the sample schema publish exactly the documents the
class rules give, valid against the shipped XDS schema, on the three databases."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

from publisher.render.validate import validate_paths
from tests.conftest import canonical, make_sample_db

A3 = "idu=3,table=usr,schema=indirect"


def _dn(association: str) -> str:
    return f'<value type="dn" association-ref="{association}">{association}</value>'


def _s(text: str) -> str:
    return f'<value type="string">{text}</value>'


def _modify(attr: str, *pieces: str) -> str:
    return (
        f'<modify class-name="usr"><association>{A3}</association>'
        f'<modify-attr attr-name="{attr}">{"".join(pieces)}</modify-attr></modify>'
    )


MARY, STAFF = "idu=2,table=usr,schema=indirect", "idg=7,table=grp,schema=indirect"
STEPS = [  # (statements, the documents' commands)
    (
        ["INSERT INTO {grp} (idg, gname) VALUES (7, 'staff')",
         "INSERT INTO {usr} (idu, fname) VALUES (2, 'Mary')"],
        [f'<add class-name="grp"><association>{STAFF}</association>'
         f'<add-attr attr-name="gname">{_s("staff")}</add-attr></add>',
         f'<add class-name="usr"><association>{MARY}</association>'
         f'<add-attr attr-name="fname">{_s("Mary")}</add-attr></add>'],
    ),
    (  # a user with no value: announced, an add with its association only
        ["INSERT INTO {usr} (idu) VALUES (4)"],
        ['<add class-name="usr"><association>idu=4,table=usr,schema=indirect</association></add>'],
    ),
    (  # a user with two phone numbers, a manager and a membership: one add
        ["INSERT INTO {usr} (idu, fname, manager) VALUES (3, 'Ann', 2)",
         "INSERT INTO {usr_phone} (idu, phoneno) VALUES (3, '555-0101')",
         "INSERT INTO {usr_phone} (idu, phoneno) VALUES (3, '555-0102')",
         "INSERT INTO {usr_mbr_of} (idu, idg) VALUES (3, 7)"],
        [f'<add class-name="usr"><association>{A3}</association>'
         f'<add-attr attr-name="fname">{_s("Ann")}</add-attr>'
         f'<add-attr attr-name="manager">{_dn(MARY)}</add-attr>'
         f'<add-attr attr-name="usr_phone.phoneno">{_s("555-0101")}{_s("555-0102")}</add-attr>'
         f'<add-attr attr-name="usr_mbr_of.idg">{_dn(STAFF)}</add-attr></add>'],
    ),
    (
        ["UPDATE {usr_phone} SET phoneno = '555-0199' WHERE phoneno = '555-0101'"],
        [_modify("usr_phone.phoneno", f"<remove-value>{_s('555-0101')}</remove-value>",
                 f"<add-value>{_s('555-0199')}</add-value>")],
    ),
    (
        ["DELETE FROM {usr_phone} WHERE phoneno = '555-0102'"],
        [_modify("usr_phone.phoneno", f"<remove-value>{_s('555-0102')}</remove-value>")],
    ),
    (
        ["UPDATE {usr} SET manager = NULL WHERE idu = 3"],
        [_modify("manager", f"<remove-value>{_dn(MARY)}</remove-value>")],
    ),
    (
        ["UPDATE {usr} SET manager = 2 WHERE idu = 3"],
        [_modify("manager", f"<add-value>{_dn(MARY)}</add-value>")],
    ),
    (
        ["DELETE FROM {usr_mbr_of} WHERE idu = 3"],
        [_modify("usr_mbr_of.idg", f"<remove-value>{_dn(STAFF)}</remove-value>")],
    ),
    (
        ["INSERT INTO {usr_mbr_of} (idu, idg) VALUES (3, 7)"],
        [_modify("usr_mbr_of.idg", f"<add-value>{_dn(STAFF)}</add-value>")],
    ),
    (  # the child rows go with it (ON DELETE CASCADE) and publish nothing more
        ["DELETE FROM {usr} WHERE idu = 3"],
        [f'<delete class-name="usr"><association>{A3}</association></delete>'],
    ),
]


@pytest.mark.parametrize("kind", ["sqlite", "postgresql", "mariadb"])
def test_changes_through_the_generated_triggers_publish_the_class_documents(
    kind: str, tmp_path: Path
) -> None:
    db = make_sample_db(kind, tmp_path, triggers="field")
    try:
        names = {t: db.table(t) for t in ("usr", "grp", "usr_phone", "usr_mbr_of")}
        for step, (statements, commands) in enumerate(STEPS, 1):
            with db.engine.begin() as conn:
                for statement in statements:
                    conn.exec_driver_sql(statement.format(**names))
            out = tmp_path / f"step{step}.xml"
            document, report = db.publish(out, allow_loopback=True)  # the test is the publisher's user

            expected = [
                canonical(etree.fromstring(c.replace("schema=indirect", f"schema={db.schema}")))
                for c in commands
            ]
            assert [canonical(c) for c in document.find("input")] == expected, step
            assert report.errors == [] and validate_paths([out]) == []
        assert set(db.statuses().values()) == {"S"}
    finally:
        db.drop()
