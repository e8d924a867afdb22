"""A big class compared on Spark (docs/triggerless.md, On Spark).

Reading tasks read the class's rows and its child tables' by key ranges (COPY on
PostgreSQL, Spark's JDBC source elsewhere, plans/reads.py) and the previous state's Parquet
files, turn them into objects (reduce/objects.py) and write them into buckets by key
through the work folder, as the event-log plan's shuffle does (plans/exchange.py). One
comparing task a bucket joins its objects with their previous state by key, writes its
part of the new state into the new generation's folder and its changes into the work
folder. The driver numbers the changes in reference order (reduce/objects.event_ids) from
their key columns, change and self-references alone; one rendering task a file of changes
renders them into a sorted run, which the driver merges with the others by event-id
(delivery/ordered.py)."""

from __future__ import annotations

import hashlib
import zlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from functools import cache, partial
from importlib.metadata import version
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from publisher.delivery.lineage import object_fates
from publisher.delivery.ordered import write_ordered
from publisher.errors import SinkError
from publisher.model.catalogue import Table
from publisher.model.rows import COMPARED, EXCHANGED, SPILLED
from publisher.outcome.state import Previous, hard_link
from publisher.plans import ComparedClass, Rendered
from publisher.plans.exchange import Bucketed, bucket_count, bucket_writer, collected, read_all, read_ranges
from publisher.plans.reads import Read, frame
from publisher.plans.tasks import numbers_taken, spill, task_numbers, write_failure, write_table
from publisher.plans.triggerless_driver import rendered_in_driver, unread_class
from publisher.reduce.objects import (
    ATTRIBUTE,
    CHILD_VALUES,
    KEY,
    ORDER,
    FirstIds,
    aligned_state,
    change_counts,
    child_values,
    compare,
    current_schema,
    cycle_breaks,
    event_ids,
    parent_objects,
    split_changes,
    state_schema,
    with_children,
    with_forward_references_split,
)
from publisher.render.changes import rendered_changes
from publisher.settings import Settings
from publisher.source.copy_read import CopyRanges
from publisher.source.query_back import CurrentRows, isolated

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

OBJECTS_PER_TASK = 200_000  # objects a comparing task holds, about
NEW, CHILD, OLD = "new", "child", "old"  # the kinds of bucket files, by name
Body = Callable[[pa.RecordBatch], pa.RecordBatch]
RangeDigest = tuple[str, str]  # a range read's name (range_names), the digest of its rows
# Over a task's input: the rows to write into buckets, each range read's digest appended
# to the list as it is read.
Rows = Callable[[Iterator[pa.RecordBatch], list[RangeDigest]], Iterator[pa.RecordBatch]]


def key_buckets(keys: pa.Array, buckets: int) -> np.ndarray:
    """Each object's bucket: a hash of its key that every process agrees on."""
    hashes = (zlib.crc32(key.encode()) for key in keys.to_pylist())
    return np.fromiter(hashes, np.uint32, len(keys)) % buckets


def _by_key(rows: Rows, buckets: int) -> Bucketed:
    """``rows`` (objects, or child values) bucketed by their object's key."""
    return lambda batches, digests: ((b, key_buckets(b.column(KEY), buckets)) for b in rows(batches, digests))


def range_names(ranges: CopyRanges) -> list[str]:
    """Each range read's name in the state: a digest of its statement (the table, columns
    and bounds) and of xdspub's version, whose objects of the same rows may differ."""
    salt = _version_salt()
    return [hashlib.blake2b(salt + statement.encode(), digest_size=16).hexdigest() for statement in ranges.statements]


@cache
def _version_salt() -> bytes:
    return f"{version('xdspub')}\0".encode()


def _digested(ranges: CopyRanges, indices: list[int], names: list[str], known: dict[str, str], body: Body) -> Rows:
    """Over numbers of ``indices``: each range of ``ranges`` read whole and its digest
    reported; its rows made into objects unless its digest is the one ``known`` for it
    (docs/triggerless.md, A cycle with no change)."""

    def read(numbers: Iterator[pa.RecordBatch], digests: list[RangeDigest]) -> Iterator[pa.RecordBatch]:
        for number in numbers_taken(numbers):
            index, blocks, digest = indices[number], [], hashlib.blake2b(digest_size=16)
            for block in ranges.blocks(index):
                blocks.append(block)
                digest.update(block)
            digests.append((names[index], digest.hexdigest()))
            if known.get(names[index]) != digests[-1][1]:
                yield from map(body, ranges.parse(blocks))

    return read


def _undigested(read: Read, body: Body, spark) -> tuple[DataFrame, Rows]:
    """A read that is not in COPY ranges: its frame, and its rows without digests."""
    df, passes = frame(spark, read, lambda batches: map(body, batches))
    return df, lambda batches, _digests: passes(batches)


def _old_rows(table: Table, files: list[str]) -> Rows:
    """Over file numbers: each previous state file's objects, in this cycle's columns."""

    def read(numbers: Iterator[pa.RecordBatch], _digests: list[RangeDigest]) -> Iterator[pa.RecordBatch]:
        for number in numbers_taken(numbers):
            yield from aligned_state(table, pq.read_table(files[number])).to_batches()

    return read


def _bucket_files(folder: str | Path, buckets: int) -> list[Path]:
    """The new state's files of ``buckets`` buckets in ``folder``, in bucket order."""
    return [Path(folder) / f"bucket-{number:05d}.parquet" for number in range(buckets)]


def _comparer(table: Table, files: dict[tuple[str, int], list[str]], has_previous: bool,
              own_parts: list[str] | None, startup: str | None, state_folder: str, work: str):
    """mapInArrow body over bucket numbers: each bucket's objects compared with their
    previous state (``own_parts``: the previous state's file of each bucket, when it was
    written in these buckets; else its bucket files); its new state written, its changes
    spilled; reports (rows.COMPARED)."""

    def run(numbers: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for number in numbers_taken(numbers):
            current = with_children(
                table,
                read_all(files.get((NEW, number), []), current_schema(table)),
                read_all(files.get((CHILD, number), []), CHILD_VALUES),
            )
            old = None
            if own_parts is not None:
                old = aligned_state(table, pq.read_table(own_parts[number]))
            elif has_previous:
                old = read_all(files.get((OLD, number), []), state_schema(table))
            comparison = compare(table, old, current, startup)
            part = _bucket_files(state_folder, number + 1)[number]
            unchanged = own_parts is not None and not comparison.changes.num_rows and not comparison.failed
            try:
                part.unlink(missing_ok=True)  # a task run again
                if not (unchanged and hard_link(own_parts[number], part)):
                    pq.write_table(comparison.state, part)
            except OSError as exc:
                yield COMPARED.batch([COMPARED.row(error=write_failure(exc))])
                return
            spilled = SPILLED.row()
            if comparison.changes.num_rows:
                name = f"changes-{number:05d}.arrow"
                spilled = spill(Path(work), name, lambda stream: write_table(stream, comparison.changes))
                if spilled.error is not None:
                    yield COMPARED.batch([COMPARED.row(error=spilled.error)])
                    return
            rows = [COMPARED.row(path=spilled.path, changes=comparison.changes.num_rows, objects=comparison.objects)]
            rows += [COMPARED.row(object_key=key, reason=why) for key, why in comparison.failed]
            yield COMPARED.batch(rows)

    return run


def compare_on_spark(settings: Settings, current: CurrentRows, table: Table, rows: int, previous: Previous,
                     startup: str | None, new_state: Path, work: Path) -> ComparedClass:
    """One class of ``rows`` rows compared on the process's Spark session (started by the
    cycle: plans/session.start_spark); its new state's files written in ``new_state``."""
    from publisher.plans.session import spark_session

    spark = spark_session(settings.spark_master)
    parts = read_ranges(spark)

    buckets = bucket_count(spark, rows, OBJECTS_PER_TASK)
    catalogue = current.catalogue
    parts_read = [(table, parent_objects(catalogue, table), NEW, current_schema(table))]
    parts_read += [(child, child_values(catalogue, table, child), CHILD, CHILD_VALUES) for child in table.children()]
    reads = [(current.read(part, part.key_columns, None, parts), body, kind, schema)
             for part, body, kind, schema in parts_read]
    # Ranges whose rows are byte for byte those the state was kept from need no objects
    # made: only where every read of the class is in COPY ranges with a digest.
    digested = all(isinstance(read, CopyRanges) for read, *_ in reads)
    known = previous.reads.get(table.name, {}) if digested and startup is None else {}

    def read_jobs(wanted: set[str] | None, known: dict[str, str]) -> list[DataFrame]:
        """A job a read: of every range (``wanted`` None), or of the ranges named."""
        jobs = []
        for read, body, kind, schema in reads:
            if isinstance(read, CopyRanges):
                names = range_names(read)
                indices = [i for i, name in enumerate(names) if wanted is None or name in wanted]
                if not indices:
                    continue
                df = task_numbers(spark, len(indices))
                rows_of = _digested(read, indices, names, known, body)
            elif wanted is None:
                df, rows_of = _undigested(read, body, spark)
            else:
                continue
            jobs.append(df.mapInArrow(bucket_writer(str(work), buckets, _by_key(rows_of, buckets), schema, kind), EXCHANGED.ddl))
        return jobs

    reports = read_jobs(None, known)
    old_files = [str(path) for path in previous.files(table.name)]
    # The previous cycle's parts are in this cycle's buckets when it had as many: each
    # comparing task reads its own part, and the state is not read twice.
    own_parts = old_files if len(old_files) == buckets else None
    if old_files and own_parts is None:
        writer = bucket_writer(str(work), buckets, _by_key(_old_rows(table, old_files), buckets), state_schema(table), OLD)
        reports.append(task_numbers(spark, len(old_files)).mapInArrow(writer, EXCHANGED.ddl))
    try:
        written = collected(reports)
    except SinkError:
        raise
    except Exception:  # a read the database refuses fails the class alone: which, if any
        for part, *_ in parts_read:
            _, failed = isolated(partial(current.check, part, part.key_columns), part, None)
            if failed:
                return unread_class(failed[None])
        raise
    digests = {r.range_read: r.digest for r in written if r.range_read is not None}
    if known and digests == known:  # every range as the state's: the class did not change
        objects = sum(pq.ParquetFile(path).metadata.num_rows for path in old_files)
        return ComparedClass(objects, [], Counter(), lambda *_: ([], None), None, unchanged=True)
    unchanged = {name for name, digest in digests.items() if known.get(name) == digest}
    if unchanged:  # other ranges changed: the unchanged ones are made into objects after all
        written += collected(read_jobs(unchanged, {}))
    files: dict[tuple[str, int], list[str]] = defaultdict(list)
    for report in written:
        if report.path is not None:
            files[(Path(report.path).name.split("-", 1)[0].lstrip("."), report.bucket)].append(report.path)
    comparer = _comparer(table, dict(files), previous.classes is not None, own_parts, startup,
                         str(new_state), str(work))
    compared = collected([task_numbers(spark, buckets).mapInArrow(comparer, COMPARED.ddl)])
    self_references = catalogue.self_references(table)
    files_of_changes = _cycles_split(table, catalogue.schema, [r.path for r in compared if r.path],
                                     self_references, work)
    files_of_changes = _forward_split(table, files_of_changes, catalogue.forward_references(table), work)
    counts: Counter = Counter()
    for path in files_of_changes:  # the change column alone, mapped
        counts.update(change_counts(read_all([path], pa.schema([]))))

    def runs(first_ids: FirstIds, local_time: str | None, lineage: bool) -> Rendered:
        schema = catalogue.schema
        if not settings.on_spark(sum(counts.values())):
            changes = read_all(files_of_changes, pa.schema([]))
            return rendered_in_driver(table, schema, changes, first_ids, local_time,
                                      self_references, lineage) if changes.num_rows else ([], None)
        return _rendered_runs(spark, table, schema, files_of_changes, first_ids, local_time,
                              self_references, work, lineage)

    failed = [(r.object_key, r.reason) for r in compared if r.object_key is not None]
    # A failed object kept its old state: its range must be read again.
    reads = digests if digested and not failed else None
    return ComparedClass(sum(r.objects or 0 for r in compared), failed, counts, runs,
                         [str(path) for path in _bucket_files(new_state, buckets)], reads)


def _ordering_columns(table: Table, self_references: list[str]) -> list[str]:
    """The columns of the changes that their order needs (reduce/objects.event_ids)."""
    named = [KEY, *(ATTRIBUTE + name for name in self_references)] if self_references else []
    return [*(ORDER + name for name in table.key_columns), "change", *named]


def _cycles_split(table: Table, schema: str, files: list[str], self_references: list[str],
                  work: Path) -> list[str]:
    """The files of the class's changes with the commands that break a cycle of references
    split (reduce/objects.cycle_breaks, split_changes): a file holding one written again,
    and the modifies in a file of their own, last."""
    if not self_references or not files:
        return files
    parts = [read_all([path], pa.schema([])).select(_ordering_columns(table, self_references)) for path in files]
    rows, kept = cycle_breaks(table, pa.concat_tables(parts), schema, self_references)
    if not len(rows):
        return files
    ends = np.cumsum([part.num_rows for part in parts])
    file_of = np.searchsorted(ends, rows, side="right")
    files, modifies = list(files), []
    for number in np.unique(file_of).tolist():
        mine = file_of == number
        local = rows[mine] - (ends[number - 1] if number else 0)
        changes = read_all([files[number]], pa.schema([]))
        replaced, modified = split_changes(
            table, changes.take(local), {name: [v for v, m in zip(values, mine) if m] for name, values in kept.items()}
        )
        others = np.ones(changes.num_rows, bool)
        others[local] = False
        files[number] = str(work / f"split-{number:05d}.arrow")
        with pa.OSFile(files[number], "wb") as stream:
            write_table(stream, pa.concat_tables([changes.filter(pa.array(others)), replaced]))
        modifies.append(modified)
    files.append(str(work / "split-modifies.arrow"))
    with pa.OSFile(files[-1], "wb") as stream:
        write_table(stream, pa.concat_tables(modifies))
    return files


def _forward_split(table: Table, files: list[str], forward: list[str], work: Path) -> list[str]:
    """The files of the class's changes with its references to a class placed after it
    given by completing modifies (reduce/objects.with_forward_references_split): a file
    holding such a reference written again."""
    if not forward:
        return files
    written = []
    for number, path in enumerate(files):
        changes = read_all([path], pa.schema([]))
        split = with_forward_references_split(table, changes, forward)
        if split is not changes:
            path = str(work / f"forward-{number:05d}.arrow")
            with pa.OSFile(path, "wb") as stream:
                write_table(stream, split)
        written.append(path)
    return written


def _rendered_runs(spark, table: Table, schema: str, files: list[str], first_ids: FirstIds,
                   local_time: str | None, self_references: list[str], work: Path, lineage: bool) -> Rendered:
    """The class's changes (``files``, one a bucket) rendered in Spark tasks, one a file,
    each a sorted run in ``work``: the driver numbers the changes (reduce/objects.event_ids)
    from their key columns, change and self-references alone, and leaves each task its
    file's event-ids; with ``lineage``, their fates."""
    if not files:
        return [], None
    columns = list(dict.fromkeys([*_ordering_columns(table, self_references), *([KEY] if lineage else [])]))
    keys = [read_all([path], pa.schema([])).select(columns) for path in files]
    every = pa.concat_tables(keys)
    ids = event_ids(table, every, first_ids, schema, self_references)
    fates = object_fates(table.name, every[KEY], pc.cast(every["change"], pa.string()), ids) if lineage else None
    id_files, start = [], 0
    for number, part in enumerate(keys):
        id_files.append(str(work / f"ids-{number:05d}.npy"))
        np.save(id_files[-1], ids[start : start + part.num_rows])
        start += part.num_rows
    render = _renderer(table, schema, files, id_files, local_time, str(work))
    reports = collected([task_numbers(spark, len(files)).mapInArrow(render, SPILLED.ddl)])
    return [r.path for r in reports if r.path and r.commands], fates


def _renderer(table: Table, schema: str, files: list[str], id_files: list[str], local_time: str | None,
              work: str):
    """mapInArrow body over file numbers: each file's changes rendered with their
    event-ids into a sorted run; reports (rows.SPILLED) the run, or why it could not be
    written."""

    def render(numbers: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for number in numbers_taken(numbers):
            changes = read_all([files[number]], pa.schema([]))
            rendered = rendered_changes(table, schema, changes, np.load(id_files[number]), local_time)
            name = f"commands-{number:05d}.arrow"
            spilled = spill(Path(work), name, lambda stream: write_ordered(rendered, stream))
            yield SPILLED.batch([spilled])
            if spilled.error is not None:
                return

    return render
