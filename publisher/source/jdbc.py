"""Queries for Spark's JDBC source, as plain data: the SQL, how to connect, the columns'
types and how to split the read (plans/reads.py runs them). Spark reads them where the
database has no COPY (source/copy_read.py)."""

from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import sqlalchemy as sa

from publisher.source.dialects import Dialect

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
class JdbcQuery:
    """A query Spark's JDBC source reads (plans/reads.py), its rows as ``schema``."""

    url: str
    driver: str
    user: str | None
    password: str | None
    sql: str
    schema: pa.Schema
    # (column, lowest, highest, rows): read in ranges of an integer column when big.
    split: tuple[str, int, int, int] | None = None
    # String columns Spark reads as bytes, decoded by our rule (Dialect.text_as_bytes).
    text_columns: tuple[str, ...] = ()

    def custom_schema(self) -> str:
        """Spark's customSchema: the type each column is read as."""
        return ", ".join(
            f"`{f.name.replace('`', '``')}` "
            + ("BINARY" if f.name in self.text_columns else _SPARK_TYPES[f.type])
            for f in self.schema
        )

    def partitions(self, cores: int) -> int:
        """How many ranges to read: one per ROWS_PER_PARTITION rows, at most four a core."""
        if self.split is None:
            return 1
        return min(max(1, self.split[3] // ROWS_PER_PARTITION), 4 * cores)



def jdbc_query(
    engine: sa.Engine,
    dialect: Dialect,
    query: sa.Select,
    schema: pa.Schema,
    split: tuple[str, int, int, int] | None = None,
) -> JdbcQuery:
    """``query`` for Spark's JDBC source, its columns ``schema``; ``split``: (column,
    lowest, highest, rows) to read in ranges of an integer column."""
    url = engine.url
    texts = tuple(f.name for f in schema if f.type == pa.string()) if dialect.text_as_bytes else ()
    return JdbcQuery(
        dialect.jdbc(url), dialect.jdbc_driver, url.username, url.password,
        jdbc_sql(query, engine), schema, split, texts,
    )
