"""The shuffle by object through files (publisher/plans/exchange.py), without Spark: what
the writing tasks put in the buckets comes out of them whole, each object's rows together,
its current rows first and its events in processing order, also when a bucket is read in
pieces."""

from __future__ import annotations

import itertools
from pathlib import Path

import pyarrow as pa
import pytest

from publisher.model.rows import CLASSIFIED, STATE
from publisher.plans import exchange

BUCKETS = 3


def _events(first: int) -> list[tuple]:
    rows = []
    for n, key in zip(range(first, first + 12), itertools.cycle(["idu=1", "idu=2", "idu=3", "idu=é"])):
        rows.append(CLASSIFIED.row(record_id=n, event_type=1, column_name="fname", table_name="usr",
                                   canonical_key=key, ord_time=float(-n % 4)))
    rows.append(CLASSIFIED.row(record_id=first + 99, table_name="usr", status="E", reason="bad"))
    return rows


STATE_ROWS = [
    STATE.row("usr", "idu=1", found=True, cells=[]),
    STATE.row("usr", "idu=2", found=False, cells=[]),
    STATE.row("usr", "idu=9", found=True, cells=[]),  # asked for by no event
]


def _written(tmp_path: Path) -> dict[int, list[str]]:
    files: dict[int, list[str]] = {}
    tasks = [CLASSIFIED.batch(_events(1)), CLASSIFIED.batch(_events(20)), STATE.batch(STATE_ROWS)]
    for batch in tasks:  # one writing task each
        write = exchange.bucket_writer(str(tmp_path), BUCKETS, exchange.by_object(lambda _, batch=batch: iter([batch]), BUCKETS))
        for report in next(write(iter([]))).to_pylist():
            assert report["error"] is None
            files.setdefault(report["bucket"], []).append(report["path"])
    return files


@pytest.mark.parametrize("rows_per_task", [100_000, 2])
def test_buckets_give_back_every_row_by_object_in_order(tmp_path, monkeypatch, rows_per_task) -> None:
    monkeypatch.setattr(exchange, "ROWS_PER_TASK", rows_per_task)
    files = _written(tmp_path)
    read = exchange.bucket_rows(files, BUCKETS)
    out = []
    for bucket in range(BUCKETS):
        for batch in read(iter([pa.record_batch({"id": [bucket]})])):
            out += batch.to_pylist()
    assert len(out) == 24 + len(STATE_ROWS)  # the E rows are not live
    objects = [(r["table_name"], r["canonical_key"]) for r in out]
    # Each object's rows together, its current rows first, then its events in order.
    assert len({o for o, _ in itertools.groupby(objects)}) == len(list(itertools.groupby(objects)))
    for _, rows in itertools.groupby(out, key=lambda r: (r["table_name"], r["canonical_key"])):
        rows = list(rows)
        found = [r["found"] is not None for r in rows]
        assert found == sorted(found, reverse=True)
        events = [(r["ord_time"], r["record_id"]) for r in rows if r["found"] is None]
        assert events == sorted(events)
