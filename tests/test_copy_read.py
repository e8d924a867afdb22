"""PostgreSQL's pending rows read with COPY in ranges (source/copy_read.py: the Spark plan,
and the driver plan in one range) are the rows SQLAlchemy reads (other databases), value
for value: CSV's quoting, NULL against the empty string, line breaks, and text cut to the
Maximum Value Length; and so are a query-back table's current rows, binary columns too."""

from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pytest
import sqlalchemy as sa

from publisher.model.rows import PENDING
from publisher.source.copy_read import BLOCK_BYTES
from publisher.source.database import libpq_conninfo
from publisher.source.copy_read import CopyRanges
from publisher.source.event_log import (
    open_event_log,
    pending_bounds,
    pending_read,
    pending_rows,
    selected_pending_rows,
)
from publisher.source.jdbc import JdbcQuery
from publisher.source.query_back import current_read, current_table
from publisher.source.schema import reflect_catalogue
from tests.conftest import make_sample_db

TRICKY = [
    'a "quoted", comma',
    "line\nbreak and\r\ncarriage return",
    "",
    "back\\slash \\N and \\x41",
    "\u00e9t\u00e9 \u4e2d\u6587 \U0001f600",
    '"',
    ",",
    " leading and trailing ",
    "x" * 70_000,
]


@pytest.fixture
def pg_log(tmp_path):
    db = make_sample_db("postgresql", tmp_path)
    yield db
    db.drop()


def test_copy_ranges_read_what_the_driver_reads(pg_log):
    rows = [("idu=1", 2, "usr", "fname", value, value) for value in TRICKY]
    rows += [("idu=2", 2, "usr", "fname", None, ""), ("idu=3", 6, "usr")]
    pg_log.log(*rows, perpetrator='someone, "quoted"')
    settings = replace(pg_log.settings, max_value_length=65_536)
    log = open_event_log(pg_log.database, settings)
    bounds = pending_bounds(pg_log.database, log, settings)

    expected = selected_pending_rows(pg_log.database, log, settings)
    ranges = pending_read(pg_log.database, log, settings, bounds, 3)
    assert isinstance(ranges, CopyRanges) and len(ranges) == 3
    read = pa.Table.from_batches(
        [batch for index in range(len(ranges)) for batch in ranges.read(index)], PENDING.arrow
    )

    assert read.num_rows == expected.num_rows == len(rows)
    assert read.sort_by("record_id").to_pylist() == expected.sort_by("record_id").to_pylist()
    values = read.sort_by("record_id").column("new_value").to_pylist()
    assert values[: len(TRICKY) - 1] == TRICKY[:-1]
    assert values[len(TRICKY) - 1] == "x" * 65_537  # cut to the limit and one more
    assert values[len(TRICKY) :] == ["", None]
    in_driver = pending_rows(pg_log.database, log, settings, bounds)
    assert in_driver.sort_by("record_id").to_pylist() == read.sort_by("record_id").to_pylist()


def test_spark_reads_through_jdbc_where_the_database_has_no_copy(tmp_path):
    db = make_sample_db("sqlite", tmp_path)
    db.log(("idu=1", 6, "usr"))
    log = open_event_log(db.database, db.settings)
    bounds = pending_bounds(db.database, log, db.settings)
    read = pending_read(db.database, log, db.settings, bounds, 2)
    assert isinstance(read, JdbcQuery) and read.split == ("record_id", 1, 1, 1)
    # SQLite's text as bytes, decoded by our rule (source/text.py); numbers as they are.
    assert read.custom_schema().startswith("`record_id` BIGINT, `table_key` BINARY, ")
    assert "`event_order` DOUBLE" in read.custom_schema()
    db.drop()


def test_a_whole_current_table_read_in_ranges_is_what_the_driver_reads(pg_log):
    photos = [None, b"", bytes(range(256)), b"\\x00"]
    for idu, text in enumerate(TRICKY, start=1):
        pg_log.execute(
            f"INSERT INTO {pg_log.table('usr')} (idu, fname, lname, photo) "
            "VALUES (:idu, :fname, :lname, :photo)",
            idu=idu * 7, fname=text[:64], lname=text[:64], photo=photos[idu % len(photos)],
        )
    catalogue = reflect_catalogue(
        pg_log.database, pg_log.schema, "indirect_process", 1
    )
    usr = catalogue.tables["usr"]
    ranges = current_read(
        pg_log.database, catalogue, usr, usr.key_columns, None, lambda rows: 3
    )
    assert isinstance(ranges, CopyRanges) and len(ranges) == 3
    read = pa.Table.from_batches([b for index in range(3) for b in ranges.read(index)])
    expected = current_table(pg_log.engine, pg_log.schema, usr, usr.key_columns, None)
    assert read.schema == expected.schema
    assert read.sort_by("idu").to_pylist() == expected.sort_by("idu").to_pylist()
    assert read.num_rows == len(TRICKY)


def test_ranges_without_rows_and_rows_longer_than_a_block(pg_log):
    big = "é" * (BLOCK_BYTES // 2 + 10)  # two bytes a character: past one block
    pg_log.log(("idu=1", 2, "usr", "fname", None, big), *[("idu=2", 6, "usr")] * 8,
               ("idu=3", 2, "usr", "fname", "a", "b"))
    pg_log.execute(f"DELETE FROM {pg_log.table('indirect_process')} "
                   "WHERE record_id > (SELECT min(record_id) + 1 FROM "
                   f"{pg_log.table('indirect_process')}) AND table_key = 'idu=2'")
    log = open_event_log(pg_log.database, pg_log.settings)
    bounds = pending_bounds(pg_log.database, log, pg_log.settings)
    ranges = pending_read(pg_log.database, log, pg_log.settings, bounds, 5)
    batches = [list(ranges.read(index)) for index in range(len(ranges))]
    assert [] in batches  # a range of deleted rows gives no batch
    read = pa.Table.from_batches([b for part in batches for b in part], PENDING.arrow)
    assert read.num_rows == 3
    assert read.sort_by("record_id").column("new_value").to_pylist() == [big, None, "b"]


def test_ranges_of_a_key_named_in_mixed_case_or_a_reserved_word(pg_log):
    """The key column is the user's name: quoted in the COPY's range condition."""
    for table, key in (("Acct", "AcctID"), ("order", "user"), ("pct", "100%")):
        name = f'{pg_log.schema}."{table}"'
        pg_log.execute(f'CREATE TABLE {name} ("{key}" INTEGER PRIMARY KEY, "Label" VARCHAR(9))')
        pg_log.execute(f'INSERT INTO {name} SELECT g, \'n\' || g FROM generate_series(1, 9) g')
    catalogue = reflect_catalogue(pg_log.database, pg_log.schema, "indirect_process", 1)
    for table in ("Acct", "order", "pct"):
        part = catalogue.tables[table]
        ranges = current_read(pg_log.database, catalogue, part, part.key_columns, None, lambda rows: 2)
        read = pa.Table.from_batches([b for index in range(2) for b in ranges.read(index)])
        expected = current_table(pg_log.engine, pg_log.schema, part, part.key_columns, None)
        assert read.num_rows == 9 and read.to_pylist() == expected.sort_by(part.key_columns[0]).to_pylist()


def test_our_own_connections_take_every_libpq_parameter_of_the_url():
    url = "postgresql+psycopg://u:p@db.example:5433/x?sslmode=verify-full&host=/run/pg"
    conninfo = libpq_conninfo(sa.create_engine(url))
    assert conninfo == "host=/run/pg dbname=x user=u password=p port=5433 sslmode=verify-full"
