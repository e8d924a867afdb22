"""Two publications of one database give the same commands (issue: one cycle skeleton):
`export --mode triggerless --startup resync` and an event-log cycle of one type 6
query-back an object, logged in the triggerless cycle's command order, publish the same
XML (after c14n) in the same order, on each database. Only the event-ids differ: a
triggerless command's is the state's generation and its place (docs/triggerless.md,
Commands), an event log command's its first row's record_id.

That Spark and the driver publish the same bytes is proven per publication elsewhere:
tests/test_differential.py (the event log), tests/test_triggerless.py (triggerless)."""

from __future__ import annotations

import json
import random

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from lxml import etree

from publisher.cli import cli
from tests.test_triggerless import _random_changes
from tests.test_unusual_schemas import DATABASES, LOG, UnusualDb


def _commands(folder) -> list[bytes]:
    """The commands of a folder's documents in order, each without its event-id."""
    commands = []
    for path in sorted(folder.glob("*.xml")):
        for command in etree.parse(str(path)).getroot().find("input"):
            command.attrib.pop("event-id")
            commands.append(etree.tostring(command, method="c14n"))
    return commands


@pytest.mark.parametrize("kind", DATABASES)
def test_triggerless_resync_and_type_6_query_backs_publish_the_same_commands(kind, tmp_path):
    db = UnusualDb(kind, tmp_path)
    try:
        ids: list[int] = []
        rng = random.Random(33)
        for _ in range(3):
            _random_changes(db, rng, ids)
        base = ["export", "--db", str(db.engine.url.render_as_string(hide_password=False)), "--schema", db.schema,
                "--log-table", LOG, "--batch-size", "4"]
        lineage = tmp_path / "objects.jsonl"
        compared = CliRunner().invoke(cli, [*base, "--mode", "triggerless", "--state-dir", str(tmp_path / "state"),
                                            "--startup", "resync", "--out", str(tmp_path / "triggerless"),
                                            "--lineage", str(lineage)], catch_exceptions=False)
        assert compared.exit_code == 0, compared.output
        objects = [json.loads(line) for line in lineage.read_text().splitlines()]
        assert objects and {line["rule"] for line in objects} == {"current"}
        log = sa.table(LOG, *(sa.column(c) for c in ("table_key", "event_type", "table_name")), schema=db.db_schema)
        with db.engine.begin() as conn:  # one type 6 an object, in the triggerless command order
            conn.execute(sa.insert(log), [{"table_key": line["object"], "event_type": 6,
                                           "table_name": line["class"]} for line in objects])
        logged = CliRunner().invoke(cli, [*base, "--out", str(tmp_path / "event-log")],
                                    catch_exceptions=False)
        assert logged.exit_code == 0, logged.output
        published = _commands(tmp_path / "triggerless")
        assert len(published) == len(objects)
        assert _commands(tmp_path / "event-log") == published
    finally:
        db.drop()
