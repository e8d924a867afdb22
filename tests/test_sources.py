"""`xdspub export --source FORMAT`: each change format's seed examples published end to end
through the command line, the shared pipeline and a real output file."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from lxml import etree

from publisher.cli import cli
from tests.test_gbase8s import SEED_004
from tests.test_openedge import ANNA, Cdc
from tests.test_qlik_ct import SEED_ROWS, USR_DB, ChangeDb, db_mask, landed, row
from tests.test_qlik_kafka import (
    EMP_COLUMNS,
    EMP_ROW,
    avro_frames,
    jsonl,
    message,
    metadata,
)


def export(tmp_path: Path, *args: str, stdin: bytes | None = None) -> tuple[int, str, Path]:
    out = tmp_path / "out.xml"
    out.unlink(missing_ok=True)
    result = CliRunner().invoke(
        cli, ["export", *args, "--out", str(out), "--master", "local[2]"], input=stdin
    )
    return result.exit_code, result.output, out


def commands(out: Path) -> list[tuple]:
    """(kind, class, association, ((attribute, op, values...), ...)) of each command;
    none when the export wrote no file (it had no command)."""
    found = []
    if not out.exists():
        return found
    for command in etree.parse(str(out)).find("input"):
        attrs = tuple(
            (a.get("attr-name"), a.tag, *(v.text for v in a.iter("value")))
            for a in command
            if a.tag != "association"
        )
        found.append((command.tag, command.get("class-name"), command.findtext("association"), attrs))
    return found


# --- gbase8s ---------------------------------------------------------------------------

SEED_004_XDS = [
    ("add", "t1", "c1=15,table=t1,schema=indirect", (("c2", "add-attr", "abcabcabc"),)),
]


@pytest.mark.parametrize("small_cycle_rows", ["10000", "0"], ids=["driver", "spark"])
def test_gbase8s_seed_004_publishes_one_add(tmp_path, spark, small_cycle_rows) -> None:
    stream = tmp_path / "seed004.cdc"
    stream.write_bytes(SEED_004)
    code, output, out = export(
        tmp_path, "--source", "gbase8s", "--input", str(stream), "--tables", "111=t1",
        "--keys", "t1=c1", "--small-cycle-rows", small_cycle_rows,
    )
    assert code == 0, output
    assert ("Spark start" in output) == (small_cycle_rows == "0"), output
    assert commands(out) == SEED_004_XDS


def test_gbase8s_from_a_pipe(tmp_path) -> None:
    code, output, out = export(
        tmp_path, "--source", "gbase8s", "--input", "-", "--tables", "111=t1", "--keys",
        "t1=c1", stdin=SEED_004,
    )
    assert code == 0, output
    assert commands(out) == SEED_004_XDS


@pytest.mark.not_xds("docs/00000000000000000001.xml")  # a document that is not one, on purpose
def test_a_folder_with_documents_is_refused(tmp_path) -> None:
    """Change formats name documents by the event's place in the stream, from 1 each run."""
    stream, folder = tmp_path / "seed004.cdc", tmp_path / "docs"
    stream.write_bytes(SEED_004)
    folder.mkdir()
    (folder / "00000000000000000001.xml").write_text("earlier")
    result = CliRunner().invoke(cli, [
        "export", "--source", "gbase8s", "--input", str(stream), "--tables", "111=t1",
        "--keys", "t1=c1", "--out", str(folder),
    ])
    assert result.exit_code == 2 and "holds documents already" in result.output
    assert (folder / "00000000000000000001.xml").read_text() == "earlier"


def test_truncated_stream_names_the_byte_and_publishes_nothing(tmp_path) -> None:
    stream = tmp_path / "cut.cdc"
    stream.write_bytes(SEED_004[:-3])
    code, output, out = export(
        tmp_path, "--source", "gbase8s", "--input", str(stream), "--tables", "111=t1",
        "--keys", "t1=c1",
    )
    assert code == 2
    assert "byte" in output
    assert not out.exists()


# --- qlik-kafka ------------------------------------------------------------------------

EMP_XDS_KINDS = ["add", "modify", "delete"]


def kafka_messages() -> list[dict]:
    changed = {**EMP_ROW, "CITY": "Bonn"}
    return [
        metadata("EMPLOYEES", EMP_COLUMNS),
        message("EMPLOYEES", "INSERT", EMP_ROW),
        message("EMPLOYEES", "UPDATE", changed, EMP_ROW, change_mask="0800"),
        message("EMPLOYEES", "DELETE", changed),
    ]


def test_qlik_kafka_json_lines_and_avro_publish_the_same(tmp_path) -> None:
    published = {}
    for form in ("json", "wrapped", "avro"):
        path = tmp_path / f"messages.{form}"
        if form == "avro":
            path.write_bytes(b"".join(avro_frames(*kafka_messages())))
        else:
            path.write_text(jsonl(*kafka_messages(), wrapped=form == "wrapped"))
        code, output, out = export(tmp_path, "--source", "qlik-kafka", "--input", str(path))
        assert code == 0, (form, output)
        published[form] = commands(out)
    assert published["json"] == published["wrapped"] == published["avro"]
    assert [c[0] for c in published["json"]] == EMP_XDS_KINDS
    modify = published["json"][1]
    assert modify[2] == "ID=7,table=EMPLOYEES,schema=indirect"
    assert modify[3] == (("CITY", "modify-attr", "Köln", "Bonn"),)


# --- qlik-ct ---------------------------------------------------------------------------


def test_qlik_ct_files_seed_000(tmp_path) -> None:
    folder = landed(tmp_path, SEED_ROWS).parent
    code, output, out = export(tmp_path, "--source", "qlik-ct", "--input", str(folder))
    assert code == 0, output
    association = "id=1,table=usr,schema=indirect"
    assert commands(out) == [
        ("add", "usr", association,
         (("fname", "add-attr", "Jack"), ("lname", "add-attr", "Frost"))),
        ("modify", "usr", association,
         (("fname", "modify-attr", "Jack", "John"), ("lname", "modify-attr", "Doe"))),
        ("delete", "usr", association, ()),
    ]


def test_qlik_ct_database_position_is_saved_only_after_delivery(tmp_path) -> None:
    url = f"sqlite:///{tmp_path / 'ct.db'}"
    db = ChangeDb(sa.create_engine(url), None)
    usr = db.create("usr", USR_DB)
    db.insert(usr, (1000, "I", db_mask("id", "fname"), row(1, "Jack")))
    args = ("--source", "qlik-ct", "--db", url, "--keys", "usr=id")

    def published(*extra: str) -> list[str]:
        code, output, out = export(tmp_path, *args, *extra)
        assert code == 0, output
        return [association for _, _, association, _ in commands(out)]

    assert published() == ["id=1,table=usr,schema=indirect"]
    assert published() == []  # the position was saved
    db.insert(usr, (1001, "I", db_mask("id", "fname"), row(2, "Ann")))
    assert published("--dry-run") == ["id=2,table=usr,schema=indirect"]
    assert published() == ["id=2,table=usr,schema=indirect"]  # a dry run saves nothing
    assert published() == []
    db.engine.dispose()


# --- openedge --------------------------------------------------------------------------


def test_openedge_database_and_its_saved_positions(tmp_path) -> None:
    cdc = Cdc(f"sqlite:///{tmp_path / 'cdc.db'}")
    customer = cdc.customer()
    cdc.change(customer, 1, 1, ANNA)
    cdc.change(customer, 2, 2, ANNA)
    args = ("--source", "openedge", "--db", str(cdc.engine.url), "--keys", "Customer=CustNum",
            "--tables", "1=Customer")

    def published(*extra: str) -> list[tuple]:
        code, output, out = export(tmp_path, *args, *extra)
        assert code == 0, output
        return commands(out)

    association = "CustNum=7,table=Customer,schema=indirect"
    assert published("--dry-run") == published() == [
        ("add", "Customer", association,
         (("Name", "add-attr", "Anna"), ("Phone##1", "add-attr", "555-1"),
          ("Photo", "add-attr", "AP8="), ("Rating", "add-attr", "3"))),
        ("delete", "Customer", association, ()),
    ]
    assert published() == []  # the positions were saved after delivery
    cdc.change(customer, 3, 1, {**ANNA, "CustNum": 8, "Phone##1": None, "Photo": None})
    assert published() == [
        ("add", "Customer", "CustNum=8,table=Customer,schema=indirect",
         (("Name", "add-attr", "Anna"), ("Rating", "add-attr", "3"))),
    ]
    cdc.drop()


# --- options ---------------------------------------------------------------------------


def test_each_format_says_what_it_needs(tmp_path) -> None:
    for args, pattern in (
        (("--source", "gbase8s", "--input", "x", "--keys", "t1=c1"), "--tables ID=NAME"),
        (("--source", "openedge", "--db", "sqlite://"), "--keys TABLE=COL"),
        (("--source", "qlik-kafka", "--db", "sqlite://"), "reads --input"),
        (("--source", "qlik-ct",), "reads --input or --db"),
        (("--source", "gbase8s", "--input", "x", "--tables", "t=t1"), "is not NAME=VALUE"),
        (("--source", "qlik-ct", "--db", "sqlite://"), "needs --keys"),
        (("--source", "qlik-ct", "--input", "-"), "not standard input"),
        (("--input", "x", "--db", "sqlite://"), "--input go with --source FORMAT"),
        ((), "Missing option '--db'"),
    ):
        code, output, out = export(tmp_path, *args)
        assert code == 2 and pattern in output, (args, output)
        assert not out.exists()
