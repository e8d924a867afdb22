"""Table selection (docs/parameters.md, Table selection): only the selected classes, with
their child tables, are published; the rows of the others are consumed (S) and counted as
not selected, on each database and in both plans; a name that cannot be selected is exit 2
with nothing marked."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from publisher.cli import cli
from publisher.model.catalogue import UnknownTable
from tests.conftest import make_sample_db

ROWS = [
    ("idu=1", 1, "usr", "fname", None, "Ann"),
    ("idu=1", 1, "usr_mbr_of", "idg", None, "7"),  # a child row naming a left-out class
    ("idg=7", 1, "grp", "gname", None, "staff"),  # left out
    ("idg=x", 9, "grp"),  # left out: S whatever is wrong with it
    ("idu=1", 1, "nosuch", "fname", None, "x"),  # in no way part of the schema: E
]


def _associations(root) -> list[tuple[str, str, list[str]]]:
    return [
        (c.tag, c.findtext("association"), [v.text for v in c.iter("value")]) for c in root.find("input")
    ]


def _check(db, root, report) -> None:
    schema = db.schema
    assert _associations(root) == [
        ("add", f"idu=1,table=usr,schema={schema}", ["Ann", f"idg=7,table=grp,schema={schema}"]),
    ]
    assert db.statuses() == {1: "S", 2: "S", 3: "S", 4: "S", 5: "E"}
    assert report.not_selected == 2 and report.loopback == 0
    assert "statuses E=1, S=4 (2 of them not selected)" in report.summary()


def test_rows_of_left_out_classes_are_consumed_unpublished(any_db, tmp_path) -> None:
    any_db.log(*ROWS)
    _check(any_db, *any_db.publish(tmp_path / "out.xml", tables=("usr",)))


def test_the_spark_plan_counts_them_too(spark, tmp_path) -> None:
    db = make_sample_db("sqlite", tmp_path)
    db.log(*ROWS)
    _check(db, *db.publish(tmp_path / "out.xml", tables=("usr",), small_cycle_rows=0))
    db.drop()


@pytest.mark.parametrize(
    "name, message",
    [
        ("nosuch", "--tables nosuch: no class or child table of that name"),
        ("usr_phone", "--tables usr_phone: a child table, published with its class usr: select usr"),
        ("Usr", "--tables Usr: no class or child table"),  # names are the database's own
    ],
)
def test_a_name_that_cannot_be_selected_marks_nothing(sample_db, tmp_path, name, message) -> None:
    sample_db.log(*ROWS)
    with pytest.raises(UnknownTable, match=message):
        sample_db.publish(tmp_path / "out.xml", tables=("usr", name))
    assert set(sample_db.statuses().values()) == {"N"}
    result = CliRunner().invoke(
        cli, ["export", "--db", str(sample_db.engine.url), "--out", str(tmp_path / "o.xml"),
              "--tables", f"usr,{name}"],
    )
    assert result.exit_code == 2 and message in result.stderr
    assert set(sample_db.statuses().values()) == {"N"}


def test_a_keyless_table_cannot_be_selected(sample_db, tmp_path) -> None:
    sample_db.execute("CREATE TABLE audit (at TEXT, what TEXT)")
    with pytest.raises(UnknownTable, match="--tables audit: the table has no key"):
        sample_db.publish(tmp_path / "out.xml", tables=("audit",))


def test_names_come_comma_separated_repeated_from_the_environment_and_the_file(sample_db, tmp_path) -> None:
    url = str(sample_db.engine.url)
    sample_db.log(*ROWS[:3])
    config = tmp_path / "x.toml"
    config.write_text('tables = "usr , grp"\n')
    runs = [
        (["--tables", " usr, grp", "--tables", "usr"], {}),
        ([], {"XDSPUB_TABLES": "usr,grp"}),
        (["--config", str(config)], {}),
    ]
    for args, env in runs:
        out = tmp_path / "o.xml"
        result = CliRunner().invoke(
            cli, ["export", "--db", url, "--out", str(out), "--dry-run", *args], env=env
        )
        assert result.exit_code == 0, result.output
        assert "3 rows read, 2 commands" in result.stderr and "not selected" not in result.stderr
    result = CliRunner().invoke(cli, ["export", "--db", url, "--out", str(out), "--tables", "grp"])
    assert "3 rows read, 1 commands, 1 documents; statuses S=3 (2 of them not selected)" in result.stderr


def test_poll_refuses_a_bad_selection_when_it_starts(sample_db, tmp_path) -> None:
    result = CliRunner().invoke(
        cli, ["poll", "--db", str(sample_db.engine.url), "--out", str(tmp_path), "--tables", "nosuch"]
    )
    assert result.exit_code == 2 and "--tables nosuch: no class" in result.stderr


def test_triggers_of_selected_classes_take_their_child_tables(sample_db) -> None:
    url = str(sample_db.engine.url)
    result = CliRunner().invoke(cli, ["triggers", "--db", url, "--tables", "usr"])
    assert result.exit_code == 0, result.output
    on = {line.split(" ON ")[1].split()[0] for line in result.stdout.splitlines() if " ON " in line}
    assert {name.strip('"') for name in on} == {"usr", "usr_mbr_of", "usr_phone"}
    result = CliRunner().invoke(cli, ["triggers", "--db", url, "--tables", "grp", "--table", "usr_phone"])
    on = {line.split(" ON ")[1].split()[0] for line in result.stdout.splitlines() if " ON " in line}
    assert {name.strip('"') for name in on} == {"grp", "usr_phone"}
    result = CliRunner().invoke(cli, ["triggers", "--db", url, "--tables", "usr_phone"])
    assert result.exit_code == 2 and "a child table, published with its class usr" in result.stderr
    result = CliRunner().invoke(cli, ["triggers", "--db", url, "--tables", "view_usr"])
    assert result.exit_code == 2 and "--tables view_usr: a view takes no triggers" in result.stderr
