"""The cycle's rendered commands in output order, (cmd_time, cmd_id), put in order by the
driver without moving their XML through Spark.

Each object-pass task sorts the commands it renders and spills them, as one sorted run, to
an Arrow file of its own in the cycle's work folder (on a cluster, a path the driver shares
with the executors, as it shares the output folder); only its few rows that are not S
travel back as rows. The driver merges the runs: it reads their keys alone (16 bytes a
command) and sorts them, then reads each run's XML front to back, a stretch at a time.
No shuffle, sampling job or checkpoint of the XML, and the driver holds no more of it
than a stretch of each run."""

from __future__ import annotations

import html
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from publisher.delivery.documents import document_name
from publisher.errors import SinkError
from publisher.model.rows import COMMANDS, LINEAGE, NOTES, Note

CHUNK = 8_192  # commands put in order at once
RUN_BATCH_ROWS = 1_024  # commands per batch of a run file: the driver holds one a run
_ORDER = [("cmd_time", "ascending"), ("cmd_id", "ascending")]
_KEYS = ipc.IpcReadOptions(included_fields=[0, 1])  # cmd_time, cmd_id
_XML = ipc.IpcReadOptions(included_fields=[2])
_DELETE = r"^\s*<delete\s"  # a command's first bytes: its indentation, then its element
_DELETED_CLASS = r'^\s*<delete\b[^>]*?\sclass-name="(?P<name>[^"]*)"'
RunSource = str | pa.Buffer  # an Arrow file of rows.COMMANDS in order: its path, or itself


def sorted_run(commands: Iterable[pa.RecordBatch], sink: pa.NativeFile | object) -> int:
    """Write ``commands`` (rows.COMMANDS) to ``sink`` as an Arrow file, in output order;
    how many there were."""
    # One chunk: a take from a table of several concatenates them first, each time.
    table = pa.Table.from_batches(list(commands), COMMANDS.arrow).combine_chunks()
    order = pc.sort_indices(table, sort_keys=_ORDER)
    with ipc.new_file(sink, COMMANDS.arrow) as writer:
        for start in range(0, table.num_rows, RUN_BATCH_ROWS):  # one batch copied at a time
            writer.write_table(table.take(order[start : start + RUN_BATCH_ROWS]))
    return table.num_rows


def write_ordered(commands: Iterable[pa.RecordBatch], sink: pa.NativeFile | object) -> int:
    """Write ``commands`` (rows.COMMANDS), already in output order, to ``sink`` as a sorted
    run, a batch at a time as they come (sorted_run holds them all to sort them); how many
    there were."""
    count = 0
    with ipc.new_file(sink, COMMANDS.arrow) as writer:
        for batch in commands:
            for start in range(0, batch.num_rows, RUN_BATCH_ROWS):
                writer.write_batch(batch.slice(start, RUN_BATCH_ROWS))
            count += batch.num_rows
    return count


class _Run:
    """One sorted run's XML, read front to back a batch at a time."""

    def __init__(self, source: RunSource) -> None:
        self.reader = ipc.open_file(source, options=_XML)
        self.batch, self.start = None, 0  # the batch in hand, and its first row's index
        self.index = -1

    def take(self, low: int, high: int) -> list[bytes]:
        """The XML of rows ``low`` to ``high`` - 1, never before the last rows taken."""
        xml: list[bytes] = []
        while low < high:
            if self.batch is None or low >= self.start + self.batch.num_rows:
                if self.batch is not None:
                    self.start += self.batch.num_rows
                self.index += 1
                self.batch = self.reader.get_batch(self.index)
                continue
            end = min(high, self.start + self.batch.num_rows)
            xml += self.batch.column(0).slice(low - self.start, end - low).to_pylist()
            low = end
        return xml


class OrderedCommands:
    """Sorted runs of rendered commands merged into output order: ``total``, and iterating
    gives each (cmd_id, xml) in order."""

    def __init__(self, runs: Sequence[RunSource]) -> None:
        self.runs = list(runs)
        times, ids, owners = [], [], []
        for number, run in enumerate(self.runs):
            reader = ipc.open_file(run, options=_KEYS)
            for index in range(reader.num_record_batches):
                # A batch is read whole, XML too: copy its keys out and let the rest go.
                batch = reader.get_batch(index)
                times.append(batch.column(0).to_numpy().copy())
                ids.append(batch.column(1).to_numpy().copy())
                owners.append(np.full(batch.num_rows, number, np.int32))
        self.ids = np.concatenate(ids) if ids else np.empty(0, np.int64)
        self.run_of = np.concatenate(owners) if owners else np.empty(0, np.int32)
        del ids, owners
        time_order = np.concatenate(times) if times else np.empty(0)
        del times
        # Without future events every cmd_time is 0: the ids alone (each once) give the order.
        self.order = (
            np.lexsort((self.ids, time_order)) if time_order.any() else np.argsort(self.ids)
        )
        self.total = len(self.order)

    def deletes_by_class(self) -> Counter[str]:
        """How many delete commands of each class there are (the delete guard's count):
        read from the XML's first bytes, which every command's renderer writes alike."""
        deletes: Counter[str] = Counter()
        for run in self.runs:
            reader = ipc.open_file(run, options=_XML)
            for index in range(reader.num_record_batches):
                xml = reader.get_batch(index).column(0)
                deleted = pc.filter(xml, pc.match_substring_regex(xml, pattern=_DELETE)).cast(pa.string())
                names = pc.extract_regex(deleted, _DELETED_CLASS).field("name")
                for counted in pc.value_counts(names).to_pylist():
                    deletes[html.unescape(counted["values"])] += counted["counts"]
        return deletes

    def ids_in_order(self) -> np.ndarray:
        """The commands' cmd_ids, in output order."""
        return self.ids[self.order]

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        for ids, xml in self.chunks():
            yield from zip(ids, xml)

    def batched(self, batch_size: int) -> Iterator[tuple[str, list[bytes]]]:
        """(name, its commands' XML) of each document of ``batch_size`` commands, in order:
        named by its first command's event-id (lineage.batched_documents: the same)."""
        ids: list[int] = []
        xml: list[bytes] = []
        for more_ids, more_xml in self.chunks():
            ids += more_ids
            xml += more_xml
            whole = len(ids) - len(ids) % batch_size
            for start in range(0, whole, batch_size):
                yield document_name(ids[start]), xml[start : start + batch_size]
            del ids[:whole], xml[:whole]
        if ids:
            yield document_name(ids[0]), xml

    def chunks(self) -> Iterator[tuple[list[int], list[bytes]]]:
        """The commands in order, a stretch at a time: their cmd_ids, and their XML."""
        runs = [_Run(run) for run in self.runs]
        taken = np.zeros(len(runs), np.int64)  # rows of each run already taken
        for start in range(0, self.total, CHUNK):
            positions = self.order[start : start + CHUNK]
            owners = self.run_of[positions]
            counts = np.bincount(owners, minlength=len(runs))
            # Each run's rows in this stretch of the output are its next ``count`` rows.
            pieces = [
                iter(run.take(int(low), int(low + count)))
                for run, low, count in zip(runs, taken, counts)
            ]
            taken += counts
            yield self.ids[positions].tolist(), [next(pieces[owner]) for owner in owners.tolist()]


def split_reduced(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, list[Note], pa.RecordBatch]:
    """An object-pass batch (rows.REDUCED) as its commands (rows.COMMANDS), its rows that
    are not S, and its rows' fates (rows.LINEAGE; none without --lineage)."""
    rendered = pc.is_valid(batch.column("xml"))
    noted = pc.is_valid(batch.column("status"))
    commands = batch.filter(rendered).select(list(COMMANDS.names))
    notes = batch.filter(noted).select(list(NOTES.names))
    fates = batch.filter(pc.invert(pc.or_(rendered, noted))).select(list(LINEAGE.names))
    return commands, [Note(*row.values()) for row in notes.to_pylist()], fates


def in_memory(commands: Iterable[pa.RecordBatch]) -> OrderedCommands:
    """Commands (rows.COMMANDS) rendered in this process, in output order."""
    sink = pa.BufferOutputStream()
    sorted_run(commands, sink)
    return OrderedCommands([sink.getvalue()])


def first_failure(reports: Sequence) -> None:
    """SinkError with the first of the writers' reports' errors, if any."""
    failures = [r.error for r in reports if r.error]
    if failures:
        raise SinkError(failures[0])


def spilled_commands(reports: Iterable) -> tuple[OrderedCommands, list[Note]]:
    """The spill writers' reports (rows.SPILLED) as the commands in order and the rows that
    are not S; SinkError with the first failure. The caller removes its work folder once the
    documents are written."""
    reports = list(reports)
    first_failure(reports)
    runs = [r.path for r in reports if r.path and r.commands]
    notes = [Note(r.record_id, r.status, r.reason) for r in reports if r.record_id is not None]
    return OrderedCommands(runs), notes


def spilled_fates(reports: Iterable) -> pa.Table:
    """The rows' fates (rows.LINEAGE) the spill writers' reports (rows.SPILLED) name,
    read into memory (the work folder goes before the lineage record is written)."""
    files = [r.fates for r in reports if r.fates]
    return pa.concat_tables([ipc.open_file(f).read_all() for f in files] or [LINEAGE.arrow.empty_table()])
