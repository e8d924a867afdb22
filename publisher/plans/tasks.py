"""Bodies of Spark tasks that know their task: the census each classifying task adds to an
accumulator by its partition, and the spill file each object-pass task writes under its
partition's name. What they wrap runs the same in the driver (plans/driver_plan.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa

from publisher.delivery.documents import create_temporary
from publisher.delivery.ordered import Passes, sorted_run, split_reduced
from publisher.model.rows import SPILLED
from publisher.reduce.census import Census


def _partition() -> int:
    from pyspark import TaskContext

    return TaskContext.get().partitionId()


def counted(classify: Passes, parts) -> Passes:
    """``classify`` (a mapInArrow body giving rows.CLASSIFIED) that also adds its task's
    census to the accumulator ``parts`` (of census_parts), as {partition: Census}."""

    def classify_counting(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        census = Census()
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


def spill_writer(directory: str, passes: Passes) -> Passes:
    """mapInArrow body around the object pass (``passes``, giving rows.REDUCED): its commands,
    sorted, into a file of this task's in ``directory`` (delivery/ordered.py); reports
    (rows.SPILLED) the file and how many commands it holds, each row that is not S, or why
    the file could not be written."""

    def spill(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        commands, notes = [], []
        for batch in passes(batches):
            rendered, noted = split_reduced(batch)
            commands.append(rendered)
            notes += noted
        path = None
        try:
            stream, path = create_temporary(Path(directory), f"commands-{_partition():05d}.arrow")
            with stream:
                count = sorted_run(commands, stream)
        except OSError as exc:
            if path is not None:
                path.unlink(missing_ok=True)
            message = f"cannot write {exc.filename}: {exc.strerror or exc}"
            yield SPILLED.batch([SPILLED.row(error=message)])
            return
        spilled = SPILLED.row(path=str(path), commands=count)
        yield SPILLED.batch([spilled, *(SPILLED.row(**n._asdict()) for n in notes)])

    return spill
