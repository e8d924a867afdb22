"""The conformance suite: the documented examples (Tables 5-16 to 5-20 of the driver's guide)
and the rules of logical classes, references and Time Syntax (docs/classes.md), one data
file each: rows and table contents in, the XML out (one command, or <input> holding
several), compared whitespace aside and without event-id, on each of the three databases,
through each plan: on Spark, and in the driver (a cycle of few rows).

A case's JSON holds ``log`` (event log rows), and optionally ``usr`` (rows as
add_user takes them), ``ddl`` (statements, ``{table:NAME}`` standing for a table's name),
``tables`` (rows by table, as column: value) and ``settings`` (publisher parameters)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import canonical

CASES = sorted(Path(__file__).with_name("conformance").glob("*.json"))
PLANS = {"spark": 0, "driver": 10_000}  # small_cycle_rows: 0 sends every cycle to Spark


@pytest.mark.parametrize("plan", [pytest.param("spark", marks=pytest.mark.slow), "driver"])
@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_documented_example(case: Path, plan: str, any_db, tmp_path: Path, request) -> None:
    if plan == "spark":
        request.getfixturevalue("spark")  # the session's: local[2], started once
    data = json.loads(case.read_text())
    for statement in data.get("ddl", []):
        any_db.execute(re.sub(r"\{table:(\w+)\}", lambda m: any_db.table(m[1]), statement))
    for row in data.get("usr", []):
        any_db.add_user(*row)
    for table, rows in data.get("tables", {}).items():
        for row in rows:
            names = ", ".join(row)
            any_db.execute(
                f"INSERT INTO {any_db.table(table)} ({names}) VALUES ({', '.join(':' + n for n in row)})",
                **row,
            )
    any_db.log(*map(tuple, data["log"]))
    # On the servers each test has a schema of its own, which the association names.
    expected_text = case.with_suffix(".xml").read_text().replace("schema=indirect", f"schema={any_db.schema}")
    expected = etree.fromstring(expected_text.encode())

    settings = {"small_cycle_rows": PLANS[plan], **data.get("settings", {})}
    document, report = any_db.publish(tmp_path / "out.xml", **settings)

    commands = document.find("input")
    wanted = list(expected) if expected.tag == "input" else [expected]
    assert [canonical(c) for c in commands] == [canonical(c) for c in wanted]
    assert set(any_db.statuses().values()) == {"S"}
    assert report.errors == []
