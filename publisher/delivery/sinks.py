"""Where documents go (docs/delivery.md): one .xml file, standard output, or a directory
with one file per document.

Files are written in the executors, each partition its own stretch of the output, under
temporary names; the driver makes them durable and renames them to their final names, so
a reader never sees half a document and a re-publication overwrites the same name."""

from __future__ import annotations

import os
import sys
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from publisher.delivery.documents import (
    HEARTBEAT_NAME,
    document_name,
    sync_directory,
    write_durably,
    write_stream,
)
from publisher.delivery.ordered import OrderedCommands, document_writer, part_writer
from publisher.errors import SinkError
from publisher.model.rows import PIECES
from publisher.render.xds import heartbeat_xml


class Sink(Protocol):
    def publish(self, commands: OrderedCommands) -> int:
        """Write every command durably; return how many documents were written."""

    def heartbeat(self) -> None:
        """Write a document holding only the heartbeat status."""


def _heartbeat(stream: BinaryIO) -> None:
    write_stream(stream, [heartbeat_xml()])


def _run_writer(commands: OrderedCommands, writer) -> list:
    """The executors' reports, or SinkError with the first failure."""
    reports = commands.rows.mapInArrow(writer, PIECES.ddl).collect()
    failures = [r.error for r in reports if r.error]
    if failures:
        for report in reports:
            if report.path:
                Path(report.path).unlink(missing_ok=True)
        raise SinkError(failures[0])
    return reports


class FileSink:
    """One <nds> document holding every command in order: each partition writes its part,
    the driver joins them."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def publish(self, commands: OrderedCommands) -> int:
        parts = sorted(
            _run_writer(commands, part_writer(str(self.path.parent), self.path.name)),
            key=lambda r: r.position,
        )

        def chunks() -> Iterator[bytes]:
            for part in parts:
                with open(part.path, "rb") as source:
                    yield from iter(lambda: source.read(1 << 20), b"")

        try:
            write_durably(self.path, lambda stream: write_stream(stream, chunks()))
        finally:
            for part in parts:
                Path(part.path).unlink(missing_ok=True)
        sync_directory(self.path.parent)
        return 1

    def heartbeat(self) -> None:
        write_durably(self.path, _heartbeat)


class StdoutSink:
    """The one document on standard output, streamed from the executors in order."""

    def publish(self, commands: OrderedCommands) -> int:
        rows = commands.rows.select("xml").toLocalIterator()
        self._write(bytes(row.xml) for row in rows)
        return 1

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
    """One file per document of ``batch_size`` commands, named by its first record_id. The
    executors write the documents that lie within one partition; the driver writes those
    that straddle two."""

    def __init__(self, directory: Path, batch_size: int) -> None:
        self.directory = directory
        self.batch_size = batch_size

    def publish(self, commands: OrderedCommands) -> int:
        writer = document_writer(
            str(self.directory), self.batch_size, commands.offsets(), commands.total
        )
        reports = _run_writer(commands, writer)
        shared: dict[int, list] = defaultdict(list)
        for report in reports:
            if report.xml is not None:
                shared[report.document].append(report)
        try:
            for pieces in shared.values():
                pieces.sort(key=lambda r: r.position)
                name = self.directory / document_name(pieces[0].event_id)
                write_durably(name, lambda s, p=pieces: write_stream(s, (bytes(r.xml) for r in p)))
            for report in reports:
                if report.path:
                    os.replace(report.path, self.directory / document_name(report.event_id))
        except OSError as exc:
            raise SinkError(f"cannot write in {self.directory}: {exc.strerror or exc}") from exc
        finally:
            for report in reports:
                if report.path:
                    Path(report.path).unlink(missing_ok=True)
        if commands.total:
            sync_directory(self.directory)
        return -(-commands.total // self.batch_size)

    def heartbeat(self) -> None:
        """The latest heartbeat, always under one name."""
        write_durably(self.directory / HEARTBEAT_NAME, _heartbeat)


def open_sink(out: str, batch_size: int) -> Sink:
    if out == "-":
        return StdoutSink()
    # Absolute: the executors that write the files may run in another working directory.
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
