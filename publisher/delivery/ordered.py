"""The cycle's rendered commands in output order, spread over Spark partitions, and the
executor side of writing them: each partition writes its own stretch of documents.

Commands are range-partitioned by (cmd_time, cmd_id), so partition i holds the i-th stretch
of the output. Counting each partition's commands first gives every command its global
position, hence its document, without moving any XML through the driver."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from publisher.delivery.documents import create_temporary, document_name, write_stream
from publisher.model.rows import PIECES

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

ORDER = ("cmd_time", "cmd_id")
ROWS_PER_PARTITION = 100_000


@dataclass(frozen=True)
class OrderedCommands:
    rows: DataFrame  # (cmd_time, cmd_id, xml), range-partitioned and sorted, fixed (checkpointed)
    counts: tuple[int, ...]  # commands per partition, in output order

    @property
    def total(self) -> int:
        return sum(self.counts)

    def offsets(self) -> list[int]:
        """The global position of each partition's first command."""
        out, running = [], 0
        for count in self.counts:
            out.append(running)
            running += count
        return out


def order_commands(commands: DataFrame, count: int) -> OrderedCommands:
    """Spread ``count`` rendered commands (cmd_time, cmd_id, xml) over partitions in output
    order."""
    from pyspark.sql import functions as F

    partitions = max(1, -(-count // ROWS_PER_PARTITION))
    ordered = (
        commands.repartitionByRange(partitions, *ORDER)
        .sortWithinPartitions(*ORDER)
        .localCheckpoint(eager=True)
    )
    counted = dict(
        ordered.groupBy(F.spark_partition_id().alias("partition")).count().collect()
    )
    counts = tuple(counted.get(i, 0) for i in range(ordered.rdd.getNumPartitions()))
    return OrderedCommands(ordered, counts)


def _partition() -> int:
    from pyspark import TaskContext

    return TaskContext.get().partitionId()


def _failure(paths: list[str], exc: OSError) -> pa.RecordBatch:
    for path in paths:
        Path(path).unlink(missing_ok=True)
    message = f"cannot write {exc.filename}: {exc.strerror or exc}"
    return PIECES.batch([PIECES.row(error=message)])


def _commands(batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, bytes]]:
    """(cmd_id, xml) of each command, in order."""
    for batch in batches:
        yield from zip(batch.column("cmd_id").to_pylist(), batch.column("xml").to_pylist())


def document_writer(directory: str, batch_size: int, offsets: list[int], total: int):
    """mapInArrow body: write the documents that begin and end in this partition, under
    temporary names; report (rows.PIECES) each of them (path), the commands of the
    documents it shares with a neighbour (xml), or why it could not write (error)."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        first = offsets[_partition()]
        position = first
        document: list[tuple[int, bytes]] = []
        reports: list[tuple] = []

        def flush() -> None:
            number = (position - 1) // batch_size
            start, end = number * batch_size, min((number + 1) * batch_size, total)
            event_id = document[0][0]
            if start >= first and position == end:  # whole, and this partition's own
                stream, temporary = create_temporary(Path(directory), document_name(event_id))
                reports.append(
                    PIECES.row(document=number, position=start, event_id=event_id, path=str(temporary))
                )
                with stream:
                    write_stream(stream, (xml for _, xml in document))
            else:
                for offset, (cmd_id, xml) in enumerate(document):
                    at = position - len(document) + offset
                    reports.append(PIECES.row(document=number, position=at, event_id=cmd_id, xml=xml))
            document.clear()

        try:
            for cmd_id, xml in _commands(batches):
                if document and position % batch_size == 0:
                    flush()
                document.append((cmd_id, xml))
                position += 1
            if document:
                flush()
            if any(r.path for r in reports):
                os.sync()  # one flush of every file written, before any is renamed
        except OSError as exc:
            yield _failure([r.path for r in reports if r.path], exc)
            return
        yield PIECES.batch(reports)

    return write


def part_writer(directory: str, name: str):
    """mapInArrow body: this partition's commands, in order, into one part file."""

    def write(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        partition = _partition()
        path = None
        try:
            stream, path = create_temporary(Path(directory), f"{name}.part{partition:05d}")
            with stream:
                for _cmd_id, xml in _commands(batches):
                    stream.write(xml)
        except OSError as exc:
            yield _failure([str(path)] if path else [], exc)
            return
        yield PIECES.batch([PIECES.row(document=0, position=partition, path=str(path))])

    return write
