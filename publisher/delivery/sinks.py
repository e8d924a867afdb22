"""Where documents go (PUBLISHER.md section 9, ``--out``): one .xml file, standard output,
or a directory with one file per document.

Files are written in the executors, each partition its own stretch of the output, under
temporary names; the driver makes them durable and renames them to their final names, so
a reader never sees half a document and a re-publication overwrites the same name."""

from __future__ import annotations

import os
import shutil
import sys
from collections import defaultdict
from collections.abc import Iterable
from pathlib import Path
from typing import BinaryIO, Protocol

from publisher.delivery.ordered import (
    PIECE_SCHEMA,
    OrderedCommands,
    document_writer,
    part_writer,
)
from publisher.errors import SinkError
from publisher.render.xds import envelope, heartbeat_xml

Rendered = tuple[int, bytes]  # first record_id of the command, its XML


class Sink(Protocol):
    def publish(self, commands: OrderedCommands) -> int:
        """Write every command durably; return how many documents were written."""

    def heartbeat(self) -> None:
        """Write a document holding only the heartbeat status."""


def _write_stream(stream: BinaryIO, commands: Iterable[Rendered]) -> None:
    head, tail = envelope()
    stream.write(head)
    for _, xml in commands:
        stream.write(xml)
    stream.write(tail)


def write_document(path: Path, commands: Iterable[Rendered]) -> None:
    """One whole <nds> document at ``path`` (not yet durable)."""
    with open(path, "wb") as stream:
        _write_stream(stream, commands)


def _durably(path: Path, write) -> None:
    """Run ``write(stream)`` into a file beside ``path``, fsync it, rename it to ``path``."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise SinkError(f"cannot write {path}: {exc.strerror or exc}") from exc


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _run_writer(commands: OrderedCommands, writer) -> list:
    """The executors' reports, or SinkError with the first failure."""
    reports = commands.rows.mapInArrow(writer, PIECE_SCHEMA).collect()
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
        head, tail = envelope()

        def join(stream: BinaryIO) -> None:
            stream.write(head)
            for part in parts:
                with open(part.path, "rb") as source:
                    shutil.copyfileobj(source, stream, 1 << 20)
            stream.write(tail)

        try:
            _durably(self.path, join)
        finally:
            for part in parts:
                Path(part.path).unlink(missing_ok=True)
        _sync_directory(self.path.parent)
        return 1

    def heartbeat(self) -> None:
        _durably(self.path, lambda stream: _write_stream(stream, [(0, heartbeat_xml())]))


class StdoutSink:
    """The one document on standard output, streamed from the executors in order."""

    def publish(self, commands: OrderedCommands) -> int:
        rows = commands.rows.select("cmd_id", "xml").toLocalIterator()
        self._write((row.cmd_id, bytes(row.xml)) for row in rows)
        return 1

    def heartbeat(self) -> None:
        self._write([(0, heartbeat_xml())])

    @staticmethod
    def _write(commands: Iterable[Rendered]) -> None:
        stream = sys.stdout.buffer
        _write_stream(stream, commands)
        stream.flush()


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
                name = self.directory / f"{pieces[0].event_id:020d}.xml"
                _durably(name, lambda s, p=pieces: _write_stream(s, ((r.event_id, bytes(r.xml)) for r in p)))
            for report in reports:
                if report.path:
                    final = Path(report.path).with_name(f"{report.event_id:020d}.xml")
                    os.replace(report.path, final)
        except OSError as exc:
            raise SinkError(f"cannot write in {self.directory}: {exc.strerror or exc}") from exc
        finally:
            for report in reports:
                if report.path:
                    Path(report.path).unlink(missing_ok=True)
        if commands.total:
            _sync_directory(self.directory)
        return -(-commands.total // self.batch_size)

    def heartbeat(self) -> None:
        """The latest heartbeat, always under one name."""
        _durably(self.directory / "heartbeat.xml", lambda s: _write_stream(s, [(0, heartbeat_xml())]))


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
