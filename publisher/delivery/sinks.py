"""Where documents go (PUBLISHER.md section 9, ``--out``): one .xml file, standard output,
or a directory with one file per document. Files are written beside their final name,
flushed, fsynced and renamed, so a reader never sees half a document and a re-publication
overwrites the same name."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from publisher.errors import SinkError
from publisher.render.xds import envelope, heartbeat_xml

Rendered = tuple[int, bytes]  # first record_id of the command, its XML


class Sink(Protocol):
    def write(self, commands: Iterable[Rendered]) -> int:
        """Write every command durably; return how many documents were written."""

    def heartbeat(self) -> None:
        """Write a document holding only the heartbeat status."""


def _write_document(stream: BinaryIO, commands: Iterable[Rendered]) -> None:
    head, tail = envelope()
    stream.write(head)
    for _, xml in commands:
        stream.write(xml)
    stream.write(tail)


def _durably(path: Path, commands: Iterable[Rendered]) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(temporary, "wb") as stream:
            _write_document(stream, commands)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise SinkError(f"cannot write {path}: {exc.strerror or exc}") from exc
    except BaseException:  # the commands failed to come: leave no half document behind
        temporary.unlink(missing_ok=True)
        raise


def _sync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class _SingleDocument:
    """A sink whose every write is one whole document."""

    def write(self, commands: Iterable[Rendered]) -> int:
        raise NotImplementedError

    def heartbeat(self) -> None:
        self.write([(0, heartbeat_xml())])


class FileSink(_SingleDocument):
    """One <nds> document holding every command in order."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, commands: Iterable[Rendered]) -> int:
        _durably(self.path, commands)
        _sync_directory(self.path.parent)
        return 1


class StdoutSink(_SingleDocument):
    def write(self, commands: Iterable[Rendered]) -> int:
        stream = sys.stdout.buffer
        _write_document(stream, commands)
        stream.flush()
        return 1


class DirectorySink:
    """One file per document of ``batch_size`` commands, named by its first record_id."""

    def __init__(self, directory: Path, batch_size: int) -> None:
        self.directory = directory
        self.batch_size = batch_size

    def write(self, commands: Iterable[Rendered]) -> int:
        documents = 0
        for batch in _batches(commands, self.batch_size):
            _durably(self.directory / f"{batch[0][0]:020d}.xml", batch)
            documents += 1
        if documents:
            _sync_directory(self.directory)
        return documents

    def heartbeat(self) -> None:
        """The latest heartbeat, always under one name."""
        _durably(self.directory / "heartbeat.xml", [(0, heartbeat_xml())])


def _batches(commands: Iterable[Rendered], size: int) -> Iterator[list[Rendered]]:
    iterator = iter(commands)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def open_sink(out: str, batch_size: int) -> Sink:
    if out == "-":
        return StdoutSink()
    path = Path(out)
    if path.suffix == ".xml":
        if not path.parent.is_dir():
            raise SinkError(f"cannot write {path}: folder {path.parent} does not exist")
        return FileSink(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SinkError(f"cannot create output folder {path}: {exc.strerror or exc}") from exc
    return DirectorySink(path, batch_size)
