"""What Spark tasks take and write in the event-log and triggerless plans alike: numbers,
files reported (or why not); and bodies of tasks that know their task: the census each
classifying task adds to an accumulator by its partition, and the spill file each
object-pass task writes under its partition's name. What they wrap runs the same in the
driver (plans/driver_plan.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import pyarrow as pa
import pyarrow.ipc as ipc

from publisher.delivery.documents import create_temporary
from publisher.delivery.ordered import sorted_run, split_reduced
from publisher.model.rows import LINEAGE, SPILLED, Passes
from publisher.reduce.census import Census
from publisher.reduce.references import Referenced

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


def task_numbers(spark: SparkSession, count: int, alone: bool = False) -> DataFrame:
    """0 to ``count`` - 1, each in a task of its own when ``alone`` (a task holds what its
    number gives, as an object pass its commands); else in a task a core, each taking its
    numbers in turn: a Python task costs much to start, more than a range's read."""
    tasks = count if alone else max(1, min(count, spark.sparkContext.defaultParallelism))
    return spark.range(count, numPartitions=tasks)


def numbers_taken(batches: Iterator[pa.RecordBatch]) -> Iterator[int]:
    """The numbers of task_numbers that a task takes, in turn."""
    for batch in batches:
        yield from batch.column(0).to_pylist()


def _partition() -> int:
    from pyspark import TaskContext

    return TaskContext.get().partitionId()


def counted(classify: Passes, parts, lineage: bool = False, referenced: Referenced | None = None) -> Passes:
    """``classify`` (a mapInArrow body giving rows.CLASSIFIED) that also adds its task's
    census to the accumulator ``parts`` (of census_parts), as {partition: Census}; with
    ``lineage``, the census keeps the record_ids of the rows consumed unpublished; with
    ``referenced``, where the objects of those classes are created."""

    def classify_counting(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        census = Census(consumed={} if lineage else None, referenced=referenced)
        for batch in classify(batches):
            census.add(batch)
            yield batch
        parts.add({_partition(): census})

    return classify_counting


def census_parts(spark_context):
    """An accumulator of the classifying tasks' censuses, by partition."""
    from pyspark.accumulators import AccumulatorParam

    class ByPartition(AccumulatorParam):
        def zero(self, value: dict) -> dict:
            return {}

        def addInPlace(self, value: dict, more: dict) -> dict:
            value.update(more)  # a task run again replaces its part
            return value

    return spark_context.accumulator({}, ByPartition())


def write_failure(exc: OSError) -> str:
    """Why a task could not write its file, as its report says it."""
    return f"cannot write {exc.filename}: {exc.strerror or exc}"


def spill(directory: Path, name: str, write: Callable[[BinaryIO], int]) -> tuple:
    """A file of this task's in ``directory``, for what will be ``name``, filled by
    ``write`` (which gives how many commands it wrote): rows.SPILLED of the file, or of
    why it could not be written, leaving nothing behind."""
    path = None
    try:
        stream, path = create_temporary(directory, name)
        with stream:
            count = write(stream)
    except OSError as exc:
        if path is not None:
            path.unlink(missing_ok=True)
        return SPILLED.row(error=write_failure(exc))
    return SPILLED.row(path=str(path), commands=count)


def write_table(stream: BinaryIO, table: pa.Table) -> int:
    """``table`` as an Arrow file into ``stream``; how many rows."""
    with ipc.new_file(stream, table.schema) as writer:
        writer.write_table(table)
    return table.num_rows


def spill_writer(directory: str, passes: Passes) -> Passes:
    """mapInArrow body around the object pass (``passes``, giving rows.REDUCED): its commands,
    sorted, into a file of this task's in ``directory`` (delivery/ordered.py), and the
    rows' fates (--lineage) into another; reports (rows.SPILLED) the files and how many
    commands there are, each row that is not S, or why a file could not be written."""

    def spill_commands(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        commands, notes, fates = [], [], []
        for batch in passes(batches):
            rendered, noted, fated = split_reduced(batch)
            commands.append(rendered)
            notes += noted
            if fated.num_rows:
                fates.append(fated)
        partition = _partition()
        spilled = spill(Path(directory), f"commands-{partition:05d}.arrow",
                        lambda stream: sorted_run(commands, stream))
        if spilled.error is None and fates:
            kept = spill(Path(directory), f"fates-{partition:05d}.arrow",
                         lambda stream: write_table(stream, pa.Table.from_batches(fates, LINEAGE.arrow)))
            spilled = kept if kept.error is not None else spilled._replace(fates=kept.path)
        if spilled.error is not None:
            yield SPILLED.batch([spilled])
            return
        yield SPILLED.batch([spilled, *(SPILLED.row(**n._asdict()) for n in notes)])

    return spill_commands
