"""Change formats whose names and values hold text XML cannot carry, through `xdspub
export` (docs/change-formats.md, Errors): a control character, or a lone surrogate (which
a JSON escape decodes to and Parquet cannot even stage), in a value, a key or a column
name makes its event an E row, listed with its place in the stream, and the rest is
published; a name a schema declares (a .dfm, a TABSCHEMA record, an Avro schema) refuses
the input, naming where."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from lxml import etree

from publisher.cli import cli
from tests.test_gbase8s import begin, commit, int32, row, tabschema
from tests.test_openedge import Cdc, any_cdc  # noqa: F401 (a fixture)
from tests.test_qlik_ct import ChangeDb, change_db, db_mask, landed  # noqa: F401 (a fixture)
from tests.test_qlik_kafka import (
    T_AVRO,
    data_schema,
    jsonl,
    message,
    metadata,
    metadata_frame,
)

CARRIED = "position 2"  # where the character is, in every name and value below


def export(tmp_path: Path, *args: str) -> tuple[int, str, Path]:
    out = tmp_path / "out.xml"
    out.unlink(missing_ok=True)
    result = CliRunner().invoke(
        cli, ["export", *args, "--out", str(out), "--master", "local[2]"]
    )
    return result.exit_code, result.output, out


def published(out: Path) -> list[tuple]:
    """(association, ((attribute, value), ...)) of each command."""
    return [
        (command.findtext("association"),
         tuple((a.get("attr-name"), a.findtext("value")) for a in command.iter("add-attr")))
        for command in etree.parse(str(out)).find("input")
    ]


def rejected(output: str) -> dict[int, str]:
    """record_id -> reason of the E rows the export listed."""
    return {int(n): why for n, why in re.findall(r"record_id (\d+): E: (.*)", output)}


# --- qlik-kafka: everything comes from the messages ------------------------------------

KAFKA_COLUMNS = [("K", "STRING", 1), ("V", "STRING", 0), ("W\x01", "STRING", 0)]
KAFKA_ROWS = [
    {"K": "1", "V": "ok", "W\x01": "x"},  # 2 events: V, then W\x01 (E)
    {"K": "2", "V": "a\ud800", "W\x01": None},  # a lone surrogate in a value (E)
    {"K": "3\udc00", "V": "b", "W\x01": None},  # and in a key (E)
]


@pytest.mark.parametrize(
    "small_cycle_rows", ["10000", pytest.param("0", marks=pytest.mark.slow)], ids=["driver", "spark"]
)
def test_qlik_kafka_values_keys_and_columns(tmp_path, request, small_cycle_rows) -> None:
    if small_cycle_rows == "0":
        request.getfixturevalue("spark")
    path = tmp_path / "messages.jsonl"
    path.write_text(jsonl(  # json.dumps writes the surrogates as \ud800 escapes
        metadata("T", KAFKA_COLUMNS), *(message("T", "INSERT", r) for r in KAFKA_ROWS)
    ))
    code, output, out = export(
        tmp_path, "--source", "qlik-kafka", "--input", str(path),
        "--small-cycle-rows", small_cycle_rows,
    )
    assert code == 1, output
    assert rejected(output) == {
        2: f"column_name has a character XML 1.0 cannot carry at {CARRIED}",
        3: f"new_value has a character XML 1.0 cannot carry at {CARRIED}",
        4: "table_key has a character XML 1.0 cannot carry at position 4",  # K=3\udc00
    }
    assert published(out) == [("K=1,table=T,schema=indirect", (("V", "ok"),))]


# --- qlik-ct and openedge from a database: names as the database has them ---------------


def database_args(engine: sa.Engine, schema: str | None) -> tuple[str, ...]:
    url = engine.url.render_as_string(hide_password=False)
    return ("--db", url, *(("--schema", schema) if schema else ()))


def test_qlik_ct_database_column_name(tmp_path, change_db: ChangeDb) -> None:
    columns = ("id", "fname", "l\x02name", "photo")
    usr = change_db.create("usr", list(zip(columns, (sa.Integer(), sa.String(50),
                                                      sa.String(50), sa.LargeBinary()))))
    values = {"id": 1, "fname": "Jack", "l\x02name": "Frost", "photo": None}
    change_db.insert(usr, (1000, "I", db_mask("id", "fname", "l\x02name", columns=columns),
                           values))
    code, output, out = export(
        tmp_path, "--source", "qlik-ct", "--keys", "usr=id",
        *database_args(change_db.engine, change_db.schema),
    )
    assert code == 1, output
    assert rejected(output) == {
        2: f"column_name has a character XML 1.0 cannot carry at {CARRIED}"
    }
    association = f"id=1,table=usr,schema={change_db.schema or 'indirect'}"
    assert published(out) == [(association, (("fname", "Jack"),))]


def test_openedge_database_field_name(tmp_path, any_cdc: Cdc) -> None:
    any_cdc.tracking()
    fields = [sa.Column("K", sa.Integer), sa.Column("N\x08ame", sa.String(20)),
              sa.Column("Rating", sa.Integer)]
    table = any_cdc.change_table("CDC_T", ("K",), fields)
    any_cdc.metadata.create_all(any_cdc.engine)
    any_cdc.change(table, 1, 1, {"K": 7, "N\x08ame": "Anna", "Rating": 3})
    code, output, out = export(
        tmp_path, "--source", "openedge", "--keys", "T=K", "--tables", "1=T",
        *database_args(any_cdc.engine, any_cdc.schema),
    )
    assert code == 1, output
    assert rejected(output) == {
        1: f"column_name has a character XML 1.0 cannot carry at {CARRIED}"
    }
    association = f"K=7,table=T,schema={any_cdc.schema or 'indirect'}"
    assert published(out) == [(association, (("Rating", "3"),))]


# --- names a schema declares: the input is refused, naming where -------------------------


def test_names_a_schema_declares_refuse_the_input(tmp_path) -> None:
    tabschema_record = tabschema(7, "k integer, v\x01 integer", 8, 2, 0)
    stream = tmp_path / "capture.cdc"
    stream.write_bytes(
        tabschema_record + begin(1, 5) + row(40, 2, 5, 7, int32(1) + int32(2), []) + commit(3, 5)
    )
    avro = tmp_path / "messages.avro"
    schema = data_schema({"K": "int", "V": "string", "W\x1b": "string"})
    avro.write_bytes(metadata_frame(dict(T_AVRO, dataSchema=json.dumps(schema))))
    folder = tmp_path / "landing"
    folder.mkdir()
    path = landed(folder, [])
    dfm = json.loads(path.with_suffix(".dfm").read_text())
    dfm["dataInfo"]["columns"][-1]["name"] = "ph\x00to"
    path.with_suffix(".dfm").write_text(json.dumps(dfm))
    cases = [
        (("--source", "gbase8s", "--input", str(stream), "--tables", "7=t", "--keys", "t=k"),
         r"TABSCHEMA column name 'v\\x01' has a character XML 1.0 cannot carry at position 2 "
         r"\(record at byte 0\)"),
        (("--source", "qlik-kafka", "--input", str(avro)),
         r"dataSchema: field 'W\\x1b' has a character XML 1.0 cannot carry at position 2 "
         r"\(of 'Data'\) \(message 1 at byte 0\)"),
        (("--source", "qlik-ct", "--input", str(folder)),
         r"column name 'ph\\x00to' has a character XML 1.0 cannot carry at position 3 \(.*"
         r"\.dfm\)"),
    ]
    for args, pattern in cases:
        code, output, out = export(tmp_path, *args)
        assert code == 2, output
        assert re.search(pattern, output), output
        assert not out.exists()
