"""The documented examples (Tables 5-16 to 5-20 of the driver's guide): rows and table contents in,
the documented XML out, compared whitespace aside and without event-id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import canonical

CASES = sorted(Path(__file__).with_name("conformance").glob("*.json"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_documented_example(case: Path, any_db, tmp_path: Path) -> None:
    data = json.loads(case.read_text())
    for row in data["usr"]:
        any_db.add_user(*row)
    any_db.log(*map(tuple, data["log"]))
    # On the servers each test has a schema of its own, which the association names.
    expected_text = case.with_suffix(".xml").read_text().replace("schema=indirect", f"schema={any_db.schema}")
    expected = etree.fromstring(expected_text.encode())

    document, report = any_db.publish(tmp_path / "out.xml")

    commands = document.find("input")
    assert [canonical(c) for c in commands] == [canonical(expected)]
    assert set(any_db.statuses().values()) == {"S"}
    assert report.errors == []
