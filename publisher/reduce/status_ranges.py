"""Every row's status as ranges of consecutive record_ids that share a letter, so the
write-back is a few range statements, not one per row (docs/statuses.md).

A cycle's rows are S but for a few (E and W, which the driver holds anyway to report them).
So the ranges are the runs of consecutive record_ids read, found in each read partition
with numpy (reduce/census.py), cut where those few lie: no shuffle."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from publisher.model.statuses import Status, StatusRange


def consecutive_runs(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The maximal runs of consecutive values among ``ids`` (any order, each once): their
    lowest and highest values, in order."""
    ids = np.sort(ids)
    if not len(ids):
        return ids, ids
    starts = np.flatnonzero(np.concatenate(([True], np.diff(ids) != 1)))
    ends = np.concatenate((starts[1:] - 1, [len(ids) - 1]))
    return ids[starts], ids[ends]


def merge_runs(runs: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Runs of consecutive record_ids (low, high; disjoint, any order) as the maximal ones
    they make, in order."""
    merged: list[tuple[int, int]] = []
    for low, high in sorted(runs):
        if merged and merged[-1][1] + 1 == low:
            merged[-1] = (merged[-1][0], high)
        else:
            merged.append((low, high))
    return merged


def status_ranges(runs: Iterable[tuple[int, int]],
                  exceptions: Iterable[tuple[int, str]]) -> list[StatusRange]:
    """The runs of rows read, S but where ``exceptions`` (record_id, letter; sorted by
    record_id, each inside a run) say otherwise; neighbours with one letter joined."""
    ranges: list[StatusRange] = []

    def add(letter: str, low: int, high: int) -> None:
        if ranges and ranges[-1][0] == letter and ranges[-1][2] + 1 == low:
            ranges[-1] = (letter, ranges[-1][1], high)
        else:
            ranges.append((letter, low, high))

    pending = iter(exceptions)
    exception = next(pending, None)
    for low, high in runs:
        while exception is not None and exception[0] <= high:
            record_id, letter = exception
            if record_id < low:  # a row that was not read: never mark around it
                raise ValueError(f"record_id {record_id} is not among the rows read")
            if low < record_id:
                add(Status.DONE, low, record_id - 1)
            add(letter, record_id, record_id)
            low = record_id + 1
            exception = next(pending, None)
        if low <= high:
            add(Status.DONE, low, high)
    if exception is not None:
        raise ValueError(f"record_id {exception[0]} is not among the rows read")
    return ranges
