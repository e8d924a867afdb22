"""The documented examples (seed 002, Tables 5-16 to 5-20): rows and table contents in,
the documented XML out, compared whitespace aside and without event-id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from lxml import etree

from tests.conftest import canonical

CASES = sorted(Path(__file__).with_name("conformance").glob("*.json"))


@pytest.mark.parametrize("case", CASES, ids=[c.stem for c in CASES])
def test_documented_example(case: Path, sample_db, publish) -> None:
    data = json.loads(case.read_text())
    for row in data["usr"]:
        sample_db.add_user(*row)
    sample_db.log(*map(tuple, data["log"]))
    expected = etree.fromstring(case.with_suffix(".xml").read_bytes())

    document, report = publish()

    commands = document.find("input")
    assert [canonical(c) for c in commands] == [canonical(expected)]
    assert set(sample_db.statuses().values()) == {"S"}
    assert report.errors == []
