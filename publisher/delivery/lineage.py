"""The lineage record (docs/delivery.md, Lineage): one JSON line per row a cycle consumed,
naming the document and the command that carried it, or the rule that consumed it; for a
triggerless cycle, one per object published or not (rows.OBJECT_LINEAGE).

The plans hand the cycle each live row's fate (rows.LINEAGE: the cmd_id of its command,
or a rule) and the rows consumed on classification; the sink reports each document it
wrote, its name and its commands' cmd_ids in order (Documents). The lines are made here
with Arrow's string kernels, a stretch of rows at a time, in record_id order, and made
durable after the documents and before the statuses."""

from __future__ import annotations

import json
import os
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from publisher.delivery.documents import document_name, sync_directory, write_durably
from publisher.errors import SinkError
from publisher.model.rows import LINEAGE, NOTES, OBJECT_LINEAGE, Note
from publisher.model.statuses import Status

LINES_AT_ONCE = 200_000  # lines made at once by a thread
MAKING_THREADS = os.cpu_count() or 1  # the Spark tasks are over: the cores are free
# What a JSON string must escape (json.dumps with ensure_ascii=False escapes these alone).
_NEEDS_ESCAPE = r'["\\\x00-\x1f]'


@dataclass(frozen=True)
class Documents:
    """The documents a sink makes of a cycle's commands, in order (Sink.documents): each
    one's name (as the sink names it) and how many commands it holds, and the commands'
    cmd_ids in output order."""

    names: list[str]
    counts: np.ndarray
    ids: np.ndarray


def one_document(ids: np.ndarray, name: str) -> Documents:
    """Every command in one document named ``name``."""
    return Documents([name], np.array([len(ids)], np.int64), ids)


def batched_documents(ids: np.ndarray, batch_size: int) -> Documents:
    """Documents of ``batch_size`` commands, each named by its first one's event-id
    (documents.document_name), as OrderedCommands.batched makes them."""
    firsts = ids[::batch_size]
    counts = np.full(len(firsts), batch_size, np.int64)
    if len(counts):
        counts[-1] = len(ids) - batch_size * (len(counts) - 1)
    return Documents([document_name(i) for i in firsts.tolist()], counts, ids)


class _Places:
    """Where each command of ``documents`` is: its document and its index there."""

    def __init__(self, documents: Documents) -> None:
        counts = documents.counts
        firsts = np.cumsum(counts) - counts  # each document's first command's position
        self.ids = np.asarray(documents.ids, np.int64)
        self.sorter = np.argsort(self.ids)
        self.document = np.repeat(np.arange(len(counts)), counts)
        self.index = np.arange(len(self.ids)) - np.repeat(firsts, counts) + 1
        self.named = _field("document", _json_strings(pa.array(documents.names, pa.string())))

    def of(self, cmd_ids: pa.Array) -> tuple[pa.Array, pa.Array]:
        """The ``,"document":NAME`` piece of the line of each of ``cmd_ids`` (NULL: in no
        document), and the command's 1-based index in its document."""
        ids = self.ids
        wanted = pc.fill_null(cmd_ids, -1).to_numpy()  # a cmd_id is a record_id: never -1
        if not len(ids):
            return pa.nulls(len(wanted), pa.string()), pa.nulls(len(wanted), pa.int64())
        at = self.sorter[np.minimum(np.searchsorted(ids, wanted, sorter=self.sorter), len(ids) - 1)]
        missing = ids[at] != wanted
        return self.named.take(pa.array(self.document[at], mask=missing)), pa.array(self.index[at], mask=missing)


def consumed_fates(consumed: dict[str, list[tuple[int, int]]] | None) -> pa.Table:
    """The rows consumed on classification (runs of record_ids by rule, reduce/census.py)
    as rows.LINEAGE."""
    tables = [LINEAGE.arrow.empty_table()]
    for rule, runs in (consumed or {}).items():
        lows, highs = np.array(runs, np.int64).reshape(-1, 2).T
        lengths = highs - lows + 1
        ids = np.arange(lengths.sum()) + np.repeat(lows - (np.cumsum(lengths) - lengths), lengths)
        tables.append(_without_command(pa.array(ids, pa.int64()), rule))
    return pa.concat_tables(tables)


def object_fates(class_name: str, keys: pa.Array, changes: pa.Array, ids: np.ndarray) -> pa.Table:
    """A triggerless class's commands (their objects' keys, changes and event-ids) as
    rows.OBJECT_LINEAGE."""
    n = len(ids)
    return pa.table([pa.repeat(pa.scalar(class_name), n), keys, pa.array(ids, pa.int64()), changes,
                     pa.nulls(n, pa.string())], schema=OBJECT_LINEAGE.arrow)


def unpublished_objects(failed: list[tuple[str, str, str]]) -> pa.Table:
    """Objects a triggerless cycle could not publish (class, key, why) as rows.OBJECT_LINEAGE."""
    return OBJECT_LINEAGE.arrow.empty_table() if not failed else pa.Table.from_batches(
        [OBJECT_LINEAGE.batch([OBJECT_LINEAGE.row(name, key, reason=why) for name, key, why in failed])]
    )


def _json_strings(values: pa.Array) -> pa.Array:
    """Each string as a JSON string literal, as json.dumps(ensure_ascii=False) gives it."""
    escape = pc.match_substring_regex(values, _NEEDS_ESCAPE)
    if not pc.any(escape).as_py():  # the common case, with no Python per value
        return pc.binary_join_element_wise('"', values, '"', "")
    unique = pc.unique(values).drop_null()
    quoted = pa.array([json.dumps(v, ensure_ascii=False) for v in unique.to_pylist()], pa.string())
    return quoted.take(pc.index_in(values, unique))


def _field(name: str, values: pa.Array) -> pa.Array:
    """``,"name":value`` for each value (NULL where the value is)."""
    return pc.binary_join_element_wise(f',"{name}":', values, "")


def _lines(rows: pa.Table, notes: pa.RecordBatch, places: _Places) -> pa.Array:
    """The JSON lines of ``rows`` (rows.LINEAGE), each line's status and reason from
    ``notes`` (rows.NOTES: E and W; the others are S)."""
    column = lambda name: rows.column(name).combine_chunks()  # noqa: E731
    text = lambda values: pc.cast(values, pa.string())  # noqa: E731
    ids = column("record_id")
    noted = pc.index_in(ids, notes.column("record_id"))
    document, index = places.of(column("cmd_id"))
    pieces = [
        '{"record_id":', text(ids),
        ',"status":"', pc.fill_null(notes.column("status").take(noted), Status.DONE), '"',
        document,
        _field("command", text(index)),
        _field("rule", _json_strings(column("rule"))),
        _field("superseded_by", text(column("superseded_by"))),
        _field("reason", _json_strings(notes.column("reason").take(noted))),
        "}\n",
    ]
    return pc.binary_join_element_wise(*pieces, "", null_handling="replace", null_replacement="")


def _object_lines(rows: pa.Table, _notes: pa.RecordBatch, places: _Places) -> pa.Array:
    """The JSON lines of ``rows`` (rows.OBJECT_LINEAGE): E where a reason says why."""
    column = lambda name: rows.column(name).combine_chunks()  # noqa: E731
    reasons = column("reason")
    document, index = places.of(column("cmd_id"))
    pieces = [
        '{"class":', _json_strings(column("class_name")),
        ',"object":', _json_strings(column("object_key")),
        ',"status":"', pc.if_else(pc.is_null(reasons), Status.DONE, Status.ERROR), '"',
        document,
        _field("command", pc.cast(index, pa.string())),
        _field("rule", _json_strings(column("rule"))),
        _field("reason", _json_strings(reasons)),
        "}\n",
    ]
    return pc.binary_join_element_wise(*pieces, "", null_handling="replace", null_replacement="")


def _made(rows: pa.Table, notes: pa.RecordBatch, places: _Places, lines=_lines) -> Iterator[pa.Array]:
    """The lines of ``rows``, a stretch at a time, in order: the stretches made by threads at
    once (Arrow's kernels let go of the GIL), MAKING_THREADS ahead of the writing at most."""
    with ThreadPoolExecutor(MAKING_THREADS) as pool:
        making: deque[Future] = deque()
        for start in range(0, rows.num_rows, LINES_AT_ONCE):
            making.append(pool.submit(lines, rows.slice(start, LINES_AT_ONCE), notes, places))
            if len(making) > MAKING_THREADS:
                yield making.popleft().result()
        while making:
            yield making.popleft().result()


def _bytes(lines: pa.Array) -> memoryview:
    """The lines one after another, as they lie in the array's data."""
    _, offsets, data = lines.buffers()
    bounds = np.frombuffer(offsets, np.int32)[[lines.offset, lines.offset + len(lines)]]
    return memoryview(data)[bounds[0] : bounds[1]]


def _write_all(fd: int, data: memoryview) -> None:
    while data:
        data = data[os.write(fd, data) :]


class LineageRecord:
    """``--lineage FILE|DIR``: a folder (one that exists, or a path ending in a separator)
    gets one file per cycle; anything else is a file each cycle appends to."""

    def __init__(self, target: str) -> None:
        self.path = Path(target).absolute()
        self.is_folder = target.endswith(("/", os.sep)) or self.path.is_dir()
        if self.is_folder:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise SinkError(f"cannot create lineage folder {self.path}: {exc.strerror or exc}") from exc
        elif not self.path.parent.is_dir():
            raise SinkError(f"cannot write lineage {self.path}: folder {self.path.parent} does not exist")
        self._written: Path | int | None = None  # the last write's file, or the size before it

    def write(self, fates: pa.Table, notes: Iterable[Note], documents: Documents) -> int:
        """One line per row of ``fates`` (rows.LINEAGE) and per E row of ``notes``, in
        record_id order; or, for a triggerless cycle, per object of ``fates``
        (rows.OBJECT_LINEAGE), in command order, those not published last. Made durable;
        how many lines."""
        notes = pa.RecordBatch.from_pylist([n._asdict() for n in notes], schema=NOTES.arrow)
        if fates.schema.equals(OBJECT_LINEAGE.arrow):
            rows, first, lines = fates.sort_by("cmd_id"), "cmd_id", _object_lines
        else:
            rejected = notes.filter(pc.equal(notes.column("status"), Status.ERROR)).column("record_id")
            rows = pa.concat_tables([fates, _without_command(rejected)]).sort_by("record_id")
            first, lines = "record_id", _lines
        if not rows.num_rows:
            return 0
        chunks = _made(rows, notes, _Places(documents), lines)
        try:
            if self.is_folder:
                self._write_file(self.path / _cycle_file_name(rows.column(first)[0].as_py() or 0), chunks)
            else:
                self._append(chunks)
        except OSError as exc:
            raise SinkError(f"cannot write lineage {self.path}: {exc.strerror or exc}") from exc
        return rows.num_rows

    def take_back(self) -> None:
        """Undo the last ``write`` as far as it went (its documents were not all written):
        its file removed, or the file cut back to its size before. Best effort: lines left
        by a failure here are superseded by the next cycle's (docs/delivery.md, Lineage)."""
        written, self._written = self._written, None
        try:
            if isinstance(written, Path):
                written.unlink(missing_ok=True)
                sync_directory(written.parent)
            elif written is not None:
                fd = os.open(self.path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
                try:
                    os.ftruncate(fd, written)
                    os.fsync(fd)
                finally:
                    os.close(fd)
        except OSError:
            pass

    def _write_file(self, path: Path, chunks: Iterable[pa.Array]) -> None:
        self._written = path
        write_durably(path, lambda stream: stream.writelines(_bytes(lines) for lines in chunks))
        sync_directory(path.parent)

    def _append(self, chunks: Iterable[pa.Array]) -> None:
        """The lines at the end of the file, then fsync; a line a crash cut short is left,
        and these start on a line of their own."""
        existed = self.path.exists()
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.path, flags, 0o666)
        try:
            size = os.fstat(fd).st_size
            self._written = size
            if size and os.pread(fd, 1, size - 1) != b"\n":
                _write_all(fd, memoryview(b"\n"))
            for lines in chunks:
                _write_all(fd, _bytes(lines))
            os.fsync(fd)
        finally:
            os.close(fd)
        if not existed:
            sync_directory(self.path.parent)


def _without_command(ids: pa.Array, rule: str | None = None) -> pa.Table:
    """Rows of rows.LINEAGE that no command carried: consumed by ``rule``, or E (None)."""
    n = len(ids)
    rules = pa.repeat(pa.scalar(rule, pa.string()), n)
    return pa.table([ids, pa.nulls(n, pa.int64()), rules, pa.nulls(n, pa.int64())], schema=LINEAGE.arrow)


def _cycle_file_name(first_record_id: int) -> str:
    """A cycle's lineage file in a folder: the time and its first record_id (triggerless:
    its first event-id), so that the names sort in cycle order."""
    now = time.time_ns()
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime(now // 10**9))
    return f"lineage-{stamp}.{now % 10**9 // 1000:06d}Z-{first_record_id:020d}.jsonl"
