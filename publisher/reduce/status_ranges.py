"""Every row's status as ranges of consecutive record_ids that share a letter, so the
write-back is a few range statements, not one per row (PUBLISHER.md section 6).

Rows are spread by blocks of record_ids and sorted within partitions; each partition finds
its runs with numpy, and the driver joins runs that continue across blocks."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from publisher.model.events import StatusRange


BLOCK = 1 << 16
_RUN_SCHEMA = pa.schema([("status", pa.string()), ("low", pa.int64()), ("high", pa.int64())])


def _runs(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    table = pa.Table.from_batches(list(batches))
    if not table.num_rows:
        return
    ids = table.column("record_id").to_numpy()
    letters = table.column("status").to_numpy(zero_copy_only=False)
    starts = np.flatnonzero(
        np.concatenate(([True], (np.diff(ids) != 1) | (letters[1:] != letters[:-1])))
    )
    ends = np.concatenate((starts[1:] - 1, [len(ids) - 1]))
    yield pa.RecordBatch.from_pydict(
        {"status": letters[starts].tolist(), "low": ids[starts], "high": ids[ends]},
        schema=_RUN_SCHEMA,
    )


def status_ranges(statuses: DataFrame) -> list[StatusRange]:
    """Maximal runs of consecutive record_ids with one status, by record_id."""
    runs = (
        statuses.select("record_id", "status")
        .repartition(F.floor(F.col("record_id") / BLOCK))
        .sortWithinPartitions("record_id")
        .mapInArrow(_runs, "status STRING, low BIGINT, high BIGINT")
        .collect()
    )
    merged: list[StatusRange] = []
    for run in sorted(runs, key=lambda r: r.low):
        if merged and merged[-1][0] == run.status and merged[-1][2] + 1 == run.low:
            merged[-1] = (run.status, merged[-1][1], run.high)
        else:
            merged.append((run.status, run.low, run.high))
    return merged
