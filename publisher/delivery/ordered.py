"""The cycle's rendered commands in output order, (cmd_time, cmd_id), put in order by the
driver without moving their XML through Spark.

Each object-pass task spills the commands it renders, as they come, to an Arrow file of its
own in the cycle's work folder (on a cluster, a path the driver shares with the executors,
as it shares the output folder); only its few rows that are not S travel back as rows. The
driver sorts the commands' keys alone (16 bytes a command) and reads their XML in that
order from the memory-mapped files, a chunk at a time: no shuffle, sampling job or
checkpoint of the XML, and no more of it in memory than a chunk."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

from publisher.delivery.documents import create_temporary
from publisher.errors import SinkError
from publisher.model.rows import COMMANDS, NOTES, SPILLED

CHUNK = 8_192  # commands whose XML is read at once, in order
Note = NOTES.row
Passes = Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]]


class OrderedCommands:
    """Rendered commands (rows.COMMANDS, in any order) in output order: ``total``, and
    iterating gives each (cmd_id, xml) in order."""

    def __init__(self, tables: Sequence[pa.Table]) -> None:
        table = pa.concat_tables(tables) if tables else COMMANDS.arrow.empty_table()
        self.ids = table.column("cmd_id").to_numpy()
        self.order = np.lexsort((self.ids, table.column("cmd_time").to_numpy()))
        self.xml = table.column("xml")

    @property
    def total(self) -> int:
        return len(self.order)

    def __iter__(self) -> Iterator[tuple[int, bytes]]:
        for start in range(0, self.total, CHUNK):
            positions = self.order[start : start + CHUNK]
            yield from zip(self.ids[positions].tolist(), self.xml.take(positions).to_pylist())


def split_reduced(batch: pa.RecordBatch) -> tuple[pa.RecordBatch, list[Note]]:
    """An object-pass batch (rows.REDUCED) as its commands (rows.COMMANDS) and its rows
    that are not S."""
    rendered = pc.is_valid(batch.column("xml"))
    commands = batch.filter(rendered).select(list(COMMANDS.names))
    notes = batch.filter(pc.invert(rendered)).select(list(NOTES.names))
    return commands, [Note(*row.values()) for row in notes.to_pylist()]


def _partition() -> int:
    from pyspark import TaskContext

    return TaskContext.get().partitionId()


def spill_writer(directory: str, passes: Passes) -> Passes:
    """mapInArrow body around the object pass (``passes``, giving rows.REDUCED): its commands
    into a file of this task's in ``directory``; reports (rows.SPILLED) the file and how many
    commands it holds, each row that is not S, or why the file could not be written."""

    def spill(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        path, count, notes = None, 0, []
        try:
            stream, path = create_temporary(Path(directory), f"commands-{_partition():05d}.arrow")
            with stream, ipc.new_file(stream, COMMANDS.arrow) as writer:
                for batch in passes(batches):
                    commands, noted = split_reduced(batch)
                    writer.write_batch(commands)
                    count += commands.num_rows
                    notes += noted
        except OSError as exc:
            if path is not None:
                path.unlink(missing_ok=True)
            message = f"cannot write {exc.filename}: {exc.strerror or exc}"
            yield SPILLED.batch([SPILLED.row(error=message)])
            return
        spilled = SPILLED.row(path=str(path), commands=count)
        yield SPILLED.batch([spilled, *(SPILLED.row(**n._asdict()) for n in notes)])

    return spill


def spilled_commands(reports: Iterable) -> tuple[OrderedCommands, list[Note]]:
    """The spill writers' reports (rows.SPILLED) as the commands in order and the rows that
    are not S; SinkError with the first failure. The files stay mapped until released: the
    caller removes its work folder once the documents are written."""
    reports = list(reports)
    failures = [r.error for r in reports if r.error]
    if failures:
        raise SinkError(failures[0])
    tables = [ipc.open_file(pa.memory_map(r.path)).read_all() for r in reports if r.path]
    notes = [Note(r.record_id, r.status, r.reason) for r in reports if r.record_id is not None]
    return OrderedCommands(tables), notes
