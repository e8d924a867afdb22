"""Where documents go (docs/delivery.md): one .xml file, standard output, a directory
with one file per document, or a message broker (delivery/broker.py).

The driver writes them from the commands in order (delivery/ordered.py), each file under a
temporary name, made durable and renamed to its final name, so a reader never sees half a
document and a re-publication overwrites the same name. ``work_parent`` is where a cycle
keeps its scratch files: beside the output, which a cluster's executors share."""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from publisher.delivery.documents import (
    HEARTBEAT_NAME,
    Folder,
    document_bytes,
    sync_directory,
    write_durably,
    write_stream,
)
from publisher.delivery.lineage import Documents, batched_documents, one_document
from publisher.delivery.ordered import OrderedCommands
from publisher.delivery.work import WorkFolder, sweep_once
from publisher.errors import SinkError
from publisher.render.xds import heartbeat_xml


class Sink(Protocol):
    work_parent: Path  # the folder a cycle's work folder is made in

    def publish(self, commands: OrderedCommands) -> int:
        """Write every command durably; return how many documents were written."""

    def documents(self, commands: OrderedCommands) -> Documents:
        """The documents ``publish`` makes of ``commands``: known before they are written,
        so that the lineage record is written at the same time (cycle.py)."""

    def heartbeat(self) -> None:
        """Write a document holding only the heartbeat status."""


def _heartbeat(stream: BinaryIO) -> None:
    write_stream(stream, [heartbeat_xml()])


def _xml(commands: OrderedCommands) -> Iterator[bytes]:
    return (xml for _, xml in commands)


class FileSink:
    """One <nds> document holding every command in order; a cycle with no command writes
    none, and the file stays as it was (docs/delivery.md, Output forms)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.work_parent = path.parent

    def publish(self, commands: OrderedCommands) -> int:
        if not commands.total:
            return 0
        write_durably(self.path, lambda stream: write_stream(stream, _xml(commands)))
        sync_directory(self.path.parent)
        return 1

    def documents(self, commands: OrderedCommands) -> Documents:
        return one_document(commands.ids_in_order(), self.path.name)

    def heartbeat(self) -> None:
        write_durably(self.path, _heartbeat)
        sync_directory(self.path.parent)


class StdoutSink:
    """The one document on standard output, streamed in order."""

    work_parent = Path(tempfile.gettempdir())

    def publish(self, commands: OrderedCommands) -> int:
        self._write(_xml(commands))
        return 1

    def documents(self, commands: OrderedCommands) -> Documents:
        return one_document(commands.ids_in_order(), "-")

    def heartbeat(self) -> None:
        self._write([heartbeat_xml()])

    @staticmethod
    def _write(commands: Iterable[bytes]) -> None:
        stream = sys.stdout.buffer
        try:
            write_stream(stream, commands)
            stream.flush()
        except OSError as exc:
            raise SinkError(f"cannot write to standard output: {exc.strerror or exc}") from exc


class DirectorySink:
    """One file per document of ``batch_size`` commands, named by its first record_id:
    each written under a temporary name in a work folder and flushed to disk, then all
    renamed into the folder and the folder flushed once."""

    def __init__(self, directory: Path, batch_size: int) -> None:
        self.directory = self.work_parent = directory
        self.batch_size = batch_size

    def publish(self, commands: OrderedCommands) -> int:
        written: list[tuple[str, str]] = []  # temporary name, final name
        try:
            # What is not renamed goes with the work folder, however this ends.
            with WorkFolder(self.directory) as staging, Folder(staging) as scratch, \
                    Folder(self.directory) as folder:
                batches = commands.batched(self.batch_size)
                scratch.write_all(((name, document_bytes(xml)) for name, xml in batches), written)
                if not written:
                    return 0
                # No fsync of a folder before the renames: the temporary names need not
                # survive a crash, and the one after them makes the final ones durable.
                for temporary, name in written:
                    scratch.replace(temporary, name, folder)
                folder.sync()
        except OSError as exc:
            raise SinkError(f"cannot write in {self.directory}: {exc.strerror or exc}") from exc
        return len(written)

    def documents(self, commands: OrderedCommands) -> Documents:
        return batched_documents(commands.ids_in_order(), self.batch_size)

    def heartbeat(self) -> None:
        """The latest heartbeat, always under one name."""
        write_durably(self.directory / HEARTBEAT_NAME, _heartbeat)
        sync_directory(self.directory)


def open_sink(out: str, batch_size: int) -> Sink:
    """The sink ``out`` names; the work folders that killed cycles left beside it are swept
    first (delivery/work.py), whether or not a cycle of this run needs one."""
    sink = _sink(out, batch_size)
    sweep_once(sink.work_parent)
    return sink


def _sink(out: str, batch_size: int) -> Sink:
    if out == "-":
        return StdoutSink()
    if "://" in out:  # a broker (docs/delivery.md, Brokers): its module loads only here
        from publisher.delivery.broker import broker_sink

        return broker_sink(out, batch_size)
    # Absolute: Spark's executors spill beside it, maybe from another working directory.
    path = Path(out).absolute()
    if path.suffix == ".xml":
        if not path.parent.is_dir():
            raise SinkError(f"cannot write {path}: folder {path.parent} does not exist")
        return FileSink(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SinkError(f"cannot create output folder {path}: {exc.strerror or exc}") from exc
    return DirectorySink(path, batch_size)
