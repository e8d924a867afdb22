"""Queries for Spark's JDBC source, as plain data: the SQL, how to connect, the columns'
types and how to split the read (plans/reads.py runs them). Spark reads them where the
database has no COPY (source/copy_read.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import sqlalchemy as sa

from publisher.source.database import Database
from publisher.source.text import decoded_columns

ROWS_PER_PARTITION = 250_000  # below this a second connection costs more than it saves
FETCH_SIZE = 10_000
_SPARK_TYPES = {pa.int64(): "BIGINT", pa.float64(): "DOUBLE", pa.string(): "STRING", pa.binary(): "BINARY"}


def jdbc_sql(query: sa.Select, engine: sa.Engine) -> str:
    """``query`` as SQL text for a JDBC driver, its values inlined and escaped by the
    engine's own dialect. Where the Python driver's paramstyle is a %-format, that text is
    a format string (each ``%`` written ``%%``): formatted with no parameters, it is the SQL
    the server reads, as the driver itself would send it."""
    sql = str(query.compile(engine, compile_kwargs={"literal_binds": True}))
    return sql % () if engine.dialect.paramstyle in ("format", "pyformat") else sql


@dataclass(frozen=True)
class Retyped:
    """What becomes of the columns Spark reads with a type other than the passes take:
    ``decoded`` ones read as bytes (Dialect.text_as_bytes), ``integers`` read as BIGINT
    because Spark splits a read only on a number. Plain data: it goes to the executors."""

    decoded: tuple[str, ...] = ()
    integers: tuple[str, ...] = ()

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """``batch`` as Spark read it, with the passes' types: strings."""
        if self.integers:
            names = batch.schema.names
            batch = pa.RecordBatch.from_arrays(
                [c.cast(pa.string()) if n in self.integers else c for n, c in zip(names, batch.columns)],
                names=names,
            )
        return decoded_columns(batch, self.decoded) if self.decoded else batch


@dataclass(frozen=True)
class JdbcQuery:
    """A query Spark's JDBC source reads (plans/reads.py), its rows as ``schema`` once
    ``retyped``."""

    url: str
    driver: str
    user: str | None
    password: str | None
    sql: str
    schema: pa.Schema
    # (column, lowest, highest, rows): read in ranges of an integer column when big.
    split: tuple[str, int, int, int] | None = None
    retyped: Retyped = Retyped()

    def custom_schema(self) -> str:
        """Spark's customSchema: the type each column is read as."""

        def spark_type(field: pa.Field) -> str:
            if field.name in self.retyped.integers:
                return "BIGINT"
            return "BINARY" if field.name in self.retyped.decoded else _SPARK_TYPES[field.type]

        return ", ".join(f"`{f.name.replace('`', '``')}` {spark_type(f)}" for f in self.schema)

    def partitions(self, cores: int) -> int:
        """How many ranges to read: one per ROWS_PER_PARTITION rows, at most four a core."""
        if self.split is None:
            return 1
        return min(max(1, self.split[3] // ROWS_PER_PARTITION), 4 * cores)


def jdbc_query(db: Database, query: sa.Select, schema: pa.Schema,
               split: tuple[str, int, int, int] | None = None) -> JdbcQuery:
    """``query`` for Spark's JDBC source, its columns ``schema``; ``split``: (column,
    lowest, highest, rows) to read in ranges of an integer column."""
    url = db.engine.url
    strings = [f.name for f in schema if f.type == pa.string()]
    # A split column the passes take as text is selected as it is: Spark reads it BIGINT.
    integers = tuple(n for n in strings if split is not None and n == split[0])
    decoded = tuple(n for n in strings if n not in integers) if db.dialect.text_as_bytes else ()
    return JdbcQuery(
        db.dialect.jdbc(url), db.dialect.jdbc_driver, url.username, url.password,
        jdbc_sql(query, db.engine), schema, split, Retyped(decoded, integers),
    )
