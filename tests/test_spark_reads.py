"""The reads a Spark cycle runs (plans/reads.py) give the rows the driver reads, value for
value: a whole query-back table through Spark's JDBC source, split in key ranges (Spark
splits only on a number, the passes take the key as text), on SQLite (text read as bytes
and decoded by our rule) and MariaDB."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest

from publisher.plans.reads import frame
from publisher.source.jdbc import JdbcQuery
from publisher.source.query_back import current_read, current_table
from publisher.source.schema import reflect_catalogue
from tests.conftest import make_sample_db


@pytest.mark.parametrize("kind", ["sqlite", "mariadb"])
def test_a_whole_table_split_in_key_ranges_reads_what_the_driver_reads(kind, tmp_path: Path, spark) -> None:
    db = make_sample_db(kind, tmp_path)
    try:
        for idu in range(1, 41):
            db.add_user(idu, f"user {idu}", None if idu % 3 else "Doe", "AAEC" if idu % 2 else None)
        catalogue = reflect_catalogue(db.database, db.schema, "indirect_process", 1)
        usr = catalogue.tables["usr"]
        read = current_read(db.database, catalogue, usr, usr.key_columns, None, lambda rows: 2)
        assert isinstance(read, JdbcQuery) and read.split[0] == "idu"
        read = replace(read, split=(*read.split[:3], 1_000_000))  # as if big: several ranges
        rows, body = frame(spark, read, lambda batches: batches)
        assert rows.rdd.getNumPartitions() > 1
        ddl = ", ".join(f"`{f.name}` {'BINARY' if f.type == pa.binary() else 'STRING'}" for f in read.schema)
        got = rows.mapInArrow(body, ddl).toArrow()
        expected = current_table(db.engine, db.dialect.schema_named(db.schema), usr, usr.key_columns, None)
        key = lambda row: int(row["idu"])  # noqa: E731
        assert sorted(got.to_pylist(), key=key) == sorted(expected.to_pylist(), key=key)
        assert got.num_rows == 40
    finally:
        db.drop()
