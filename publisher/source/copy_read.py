"""Reading a query in record_id ranges in the Python workers, with PostgreSQL's COPY: each
range streams as CSV into pyarrow's CSV parser, so the rows reach the passes as
Arrow batches without Spark's JDBC source (a JVM decoding every value, then a hop to
Python). Spark's JDBC source stays the way for databases without COPY."""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.csv as pacsv
import sqlalchemy as sa

from publisher.source.database import libpq_conninfo
from publisher.source.identifiers import sql_quote
from publisher.source.jdbc import jdbc_sql

BLOCK_BYTES = 1 << 20  # rows parsed together, at least: a batch is about this big


@dataclass(frozen=True)
class CopyRanges:
    """A query read in ranges of one integer column, each range by COPY on a connection of
    its own (pickled to the executors: everything in it is plain data)."""

    conninfo: str  # libpq connection string
    statements: tuple[str, ...]  # one COPY statement per range
    schema: pa.Schema  # the query's columns, in order, as Arrow reads them
    hex_columns: tuple[str, ...] = ()  # binary columns: COPY writes them as \x and hex digits

    def __len__(self) -> int:
        return len(self.statements)

    def read(self, index: int) -> Iterator[pa.RecordBatch]:
        """The rows of range ``index``, as Arrow batches of ``schema``; none for a range
        without rows."""
        return self.parse(self.blocks(index))

    def blocks(self, index: int) -> Iterator[bytes]:
        """The rows of range ``index`` as COPY sends them (CSV), whole rows about a
        megabyte at a time."""
        import psycopg
        from psycopg import pq

        with psycopg.connect(self.conninfo, autocommit=True) as conn:
            if self.hex_columns:  # the form _unhex reads, whatever the server's default
                conn.execute("SET bytea_output = hex")
            # libpq's calls themselves: psycopg's Copy waits for each row through a
            # generator, which costs more than taking the row (PostgreSQL sends each row in
            # a message of its own). The rows are gathered and parsed a megabyte at a
            # time, so a row longer than that is parsed whole.
            pgconn = conn.pgconn
            pgconn.send_query(self.statements[index].encode())
            started = pgconn.get_result()
            if started is None or started.status != pq.ExecStatus.COPY_OUT:
                _expect(_last_result(pgconn, started), pq.ExecStatus.COPY_OUT)
            rows, size = [], 0
            while True:
                length, row = pgconn.get_copy_data(0)
                if length < 0:  # the end, or a failure its result tells
                    break
                rows.append(bytes(row))
                size += length
                if size >= BLOCK_BYTES:
                    yield b"".join(rows)
                    rows, size = [], 0
            _expect(_last_result(pgconn, pgconn.get_result()), pq.ExecStatus.COMMAND_OK)
            if rows:
                yield b"".join(rows)

    def parse(self, blocks: Iterable[bytes]) -> Iterator[pa.RecordBatch]:
        """``blocks`` of whole rows (from ``blocks``) as Arrow batches of ``schema``."""
        text_schema = pa.schema(  # as COPY writes them: binary columns as text
            [pa.field(f.name, pa.string()) if f.name in self.hex_columns else f for f in self.schema]
        )
        for block in blocks:
            yield from self._parsed(block, text_schema)

    def _parsed(self, text: bytes, text_schema: pa.Schema) -> Iterator[pa.RecordBatch]:
        """Whole rows of COPY's CSV (columns of ``text_schema``) as batches of ``schema``."""
        table = pacsv.read_csv(
            io.BytesIO(text),
            read_options=pacsv.ReadOptions(
                column_names=self.schema.names, block_size=len(text) + 1, use_threads=False
            ),
            # COPY's CSV: NULL is an empty field, an empty string a quoted one.
            parse_options=pacsv.ParseOptions(newlines_in_values=True),
            convert_options=pacsv.ConvertOptions(
                column_types=text_schema,
                strings_can_be_null=True,
                quoted_strings_can_be_null=False,
                null_values=[""],
            ),
        )
        for batch in table.to_batches():
            if batch.schema != text_schema:
                batch = batch.cast(text_schema)
            yield self._binary(batch) if self.hex_columns else batch

    def _binary(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        columns = [
            _unhex(batch.column(name)) if name in self.hex_columns else batch.column(name)
            for name in self.schema.names
        ]
        return pa.RecordBatch.from_arrays(columns, schema=self.schema)


def _last_result(pgconn, result):
    """``result``, once the connection has no other (it is free for the next command)."""
    while pgconn.get_result() is not None:
        pass
    return result


def _expect(result, status) -> None:
    """Raises the database's error when ``result`` (psycopg.pq's) is not ``status``."""
    import psycopg
    from psycopg import errors, pq

    if result is not None and result.status == status:
        return
    message = "the connection was lost" if result is None else result.get_error_message().strip()
    state = result and result.error_field(pq.DiagnosticField.SQLSTATE)
    try:
        error = errors.lookup(state.decode()) if state else psycopg.OperationalError
    except KeyError:
        error = psycopg.DatabaseError
    raise error(message)


def _unhex(texts: pa.Array) -> pa.Array:
    return pa.array([None if t is None else bytes.fromhex(t[2:]) for t in texts.to_pylist()], pa.binary())


def even_ranges(low: int, high: int, parts: int) -> list[tuple[int, int]]:
    """``low`` to ``high`` (inclusive) in ``parts`` ranges of one size, the last shorter."""
    size = -(-(high - low + 1) // parts)
    return [(start, min(start + size - 1, high)) for start in range(low, high + 1, size)]


def copy_ranges(engine: sa.Engine, query: sa.Select, schema: pa.Schema, column: str,
                ranges: list[tuple[int, int]], hex_columns: tuple[str, ...] = ()) -> CopyRanges:
    """``query`` read in ``ranges`` (inclusive) of its integer ``column``; ``hex_columns``
    are binary."""
    sql = jdbc_sql(query, engine)
    quoted = sql_quote(engine)(column)  # the user's name: "AcctID", user, "100%"
    statements = tuple(
        f"COPY (SELECT * FROM ({sql}) AS ranged WHERE {quoted} BETWEEN {int(low)} AND {int(high)}) "
        "TO STDOUT WITH (FORMAT csv)"
        for low, high in ranges
    )
    return CopyRanges(libpq_conninfo(engine), statements, schema, hex_columns)
