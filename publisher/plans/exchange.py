"""The shuffle by object on Spark, done by the Python workers through Arrow files in the
cycle's work folder (on a cluster, a path the executors share with the driver, as for the
spilled commands, delivery/ordered.py).

Each writing task (classifying the pending rows, or reading current rows for query-back)
puts its rows, as rows.OBJECT_ROWS, in one file per bucket of objects and reports the
files; each object-pass task reads its bucket's files and sorts them in object order
(pipeline.in_object_order). The JVM moves task numbers and reports, never a row: no
conversion to its rows and back, no checkpoint (the files are read once), no sort of its
own. A task run twice writes new files; only the reports collected name files to read."""

from __future__ import annotations

import zlib
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from functools import reduce
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from publisher.delivery.documents import create_temporary
from publisher.delivery.ordered import first_failure
from publisher.model.rows import BATCH_ROWS, EXCHANGED, OBJECT_ROWS, Passes
from publisher.plans.reads import Frame
from publisher.plans.tasks import numbers_taken, task_numbers, write_failure
from publisher.reduce.pipeline import in_object_order, object_rows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

ROWS_PER_RANGE = 250_000  # rows a reading task takes, at most (and a range for each core)
ROWS_PER_TASK = 100_000  # rows of one object-pass task, at most: a task holds its commands


# The files hold rows.OBJECT_ROWS and each row's object hash: a bucket is the hash modulo
# the bucket count, a piece of a bucket too big for one pass the quotient modulo the pieces.
_HASH = "object_hash"
_FILE_SCHEMA = OBJECT_ROWS.arrow.append(pa.field(_HASH, pa.uint32()))


def object_hashes(rows: pa.RecordBatch) -> np.ndarray:
    """Each row's object hash: the same in every process (Python's own hash of a str
    differs from one process to the next)."""
    tables = rows.column("table_name").to_pylist()
    keys = rows.column("canonical_key").to_pylist()
    seeds = {name: zlib.crc32(name.encode()) for name in set(tables)}
    hashes = (zlib.crc32(key.encode(), seeds[table]) for table, key in zip(tables, keys))
    return np.fromiter(hashes, np.uint32, len(keys))


class BucketFile:
    """One bucket's rows from one task: an Arrow file under a name of its own."""

    def __init__(self, directory: Path, number: int, schema: pa.Schema = _FILE_SCHEMA, kind: str = "rows") -> None:
        self.stream, self.path = create_temporary(directory, f"{kind}-{number:05d}.arrow")
        self.writer = ipc.new_file(self.stream, schema)

    def close(self) -> None:
        self.writer.close()  # writes the footer; the stream is the caller's to close
        self.stream.close()

    def abandon(self) -> None:
        """Let go of the file if close did not (after a failure), without raising."""
        if not self.stream.closed:
            try:
                self.stream.close()
            except OSError:
                pass  # the failure already reported says why


# Over a task's input: each batch to write into buckets and each of its rows' bucket; what
# the task learns as it reads (triggerless: each range read's digest) appended to the list.
Bucketed = Callable[[Iterator[pa.RecordBatch], list], Iterator[tuple[pa.RecordBatch, np.ndarray]]]


def bucket_writer(directory: str, buckets: int, bucketed: Bucketed, schema: pa.Schema = _FILE_SCHEMA,
                  kind: str = "rows") -> Passes:
    """mapInArrow body: the rows ``bucketed`` gives written to a file per bucket in
    ``directory``; reports (rows.EXCHANGED) each file and its rows and what the reading
    learnt (range digests), or why a file could not be written."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        files: dict[int, BucketFile] = {}
        counts = np.zeros(buckets, np.int64)
        learnt: list = []
        try:
            for rows, bucket in bucketed(batches, learnt):
                if not rows.num_rows:
                    continue
                rows = rows.take(np.argsort(bucket, kind="stable"))
                sizes = np.bincount(bucket, minlength=buckets)
                start = 0
                for number in np.flatnonzero(sizes).tolist():
                    if number not in files:
                        files[number] = BucketFile(Path(directory), number, schema, kind)
                    files[number].writer.write_batch(rows.slice(start, sizes[number]))
                    start += sizes[number]
                counts += sizes
            for file in files.values():
                file.close()  # whole on disk before the report names it
        except OSError as exc:
            yield EXCHANGED.batch([EXCHANGED.row(error=write_failure(exc))])
            return
        finally:
            for file in files.values():
                file.abandon()
        yield EXCHANGED.batch(
            [EXCHANGED.row(n, str(file.path), int(counts[n])) for n, file in files.items()]
            + [EXCHANGED.row(range_read=name, digest=digest) for name, digest in learnt]
        )

    return write


def by_object(body: Passes, buckets: int) -> Bucketed:
    """``body``'s rows (rows.CLASSIFIED, whose live rows are kept, or rows.STATE) as
    rows.OBJECT_ROWS with their object hash, bucketed by it."""

    def rows(batches: Iterator[pa.RecordBatch], _learnt: list) -> Iterator[tuple[pa.RecordBatch, np.ndarray]]:
        for batch in body(batches):
            rows = object_rows(batch)
            hashes = object_hashes(rows)
            yield pa.RecordBatch.from_arrays([*rows.columns, pa.array(hashes)], schema=_FILE_SCHEMA), hashes % buckets

    return rows


def bucket_rows(files: dict[int, list[str]], buckets: int) -> Passes:
    """mapInArrow body over bucket numbers: each bucket's rows (rows.OBJECT_ROWS) from its
    files, in object order, at most about ROWS_PER_TASK of them sorted at a time: a bucket
    holds more when query-back reads a table far bigger than the backlog, and then goes
    piece by piece, each piece whole objects."""

    def read(numbers: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for number in numbers_taken(numbers):
            # Mapped, not read: a piece's rows are copied when they are sorted.
            rows = read_all(files.get(number, []), _FILE_SCHEMA)
            if not rows.num_rows:
                continue
            pieces = -(-rows.num_rows // ROWS_PER_TASK)
            piece = (rows.column(_HASH).to_numpy() // buckets) % pieces
            for index in range(pieces):
                part = rows if pieces == 1 else rows.filter(pa.array(piece == index))
                part = in_object_order(part.drop_columns([_HASH]))
                yield from part.to_batches(BATCH_ROWS)

    return read


def bucket_count(spark: SparkSession, rows: int, per_task: int) -> int:
    """Buckets for ``rows`` rows, about ``per_task`` or fewer a task: a multiple of the
    cores, for 3 tasks on 2 cores leave one core idle a third of the pass."""
    cores = spark.sparkContext.defaultParallelism
    return cores * max(2, -(-rows // (per_task * cores)))


def read_ranges(spark: SparkSession) -> Callable[[int], int]:
    """How many ranges a read of so many rows is split into (plans/reads.py)."""
    cores = spark.sparkContext.defaultParallelism
    return lambda rows: max(cores, -(-rows // ROWS_PER_RANGE))


def collected(jobs: Sequence[DataFrame]) -> list:
    """The reports of ``jobs`` (rows.EXCHANGED, rows.SPILLED ...), run as one job; raises
    the first failure they report (SinkError)."""
    if not jobs:
        return []
    reports = reduce(lambda one, other: one.unionByName(other), jobs).collect()
    first_failure(reports)
    return reports


def read_all(paths: Sequence[str], schema: pa.Schema) -> pa.Table:
    """Arrow files written in the work folder, as one table, memory-mapped (copied only
    where a pass copies them); none: an empty table of ``schema``."""
    parts = [ipc.open_file(pa.memory_map(path)).read_all() for path in paths]
    return pa.concat_tables(parts) if parts else schema.empty_table()


class Exchange:
    """One cycle's shuffle by object: ``write`` the rows of some frames, then ``objects``
    gives every bucket's rows in object order."""

    def __init__(self, spark: SparkSession, directory: Path, rows: int) -> None:
        self.buckets = bucket_count(spark, rows, ROWS_PER_TASK)
        self.spark, self.directory = spark, str(directory)
        self.files: dict[int, list[str]] = defaultdict(list)

    def write(self, frames: Sequence[Frame]) -> None:
        """Run each frame's body over its rows, their rows written to the buckets: one job.
        SinkError when a file cannot be written."""
        jobs = [rows.mapInArrow(bucket_writer(self.directory, self.buckets, by_object(body, self.buckets)), EXCHANGED.ddl)
                for rows, body in frames]
        for report in collected(jobs):
            self.files[report.bucket].append(report.path)

    def objects(self) -> Frame:
        """The bucket numbers, and the body that gives each bucket's rows (rows.OBJECT_ROWS)
        in object order."""
        return task_numbers(self.spark, self.buckets, alone=True), bucket_rows(dict(self.files), self.buckets)
