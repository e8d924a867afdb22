"""XDS documents as files (docs/delivery.md): their names, and how one is written so that a
reader never sees half of it and nothing is written outside the output folder.

A document is written under a temporary name in a work folder of its own folder
(delivery/work.py), created exclusively with a random part (so a planted file or symbolic
link is never opened, let alone followed), then made durable and renamed over its final
name (a symbolic link there is replaced, not followed). The work folder goes when the
writing ends, however it ends, with what was not renamed; a killed process's is swept by
the next run. Both sides of the cycle use these: the executors and the driver."""

from __future__ import annotations

import os
import secrets
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import BinaryIO

from publisher.delivery.work import CREATE_NEW, WorkFolder
from publisher.errors import SinkError
from publisher.render.xds import envelope

HEARTBEAT_NAME = "heartbeat.xml"
FLUSHES_IN_FLIGHT = 256  # documents written whose fsync has not ended: descriptors open
FLUSHING_THREADS = 32  # fsyncs running at once (each waits on the disk, not on Python)


def document_name(event_id: int) -> str:
    """A document's file name: its first command's event-id, zero-padded, so that a
    re-publication overwrites the same file."""
    return f"{event_id:020d}.xml"


def document_bytes(commands: Iterable[bytes]) -> bytes:
    """One whole <nds> document holding ``commands`` (rendered XML, in order)."""
    head, tail = envelope()
    return b"".join((head, *commands, tail))


def write_stream(stream: BinaryIO, commands: Iterable[bytes]) -> None:
    """One whole <nds> document holding ``commands``, streamed (for documents too big to
    hold twice in memory)."""
    head, tail = envelope()
    stream.write(head)
    stream.writelines(commands)
    stream.write(tail)


class Folder:
    """A directory opened once: files are created, renamed and removed relative to it, so a
    document costs no walk of its path (a burst of thousands of one-command documents is
    bound by these calls)."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        # The random part of the temporary names: drawn once, and again only when a name
        # is taken (a temporary name also holds its final name, unique in a cycle).
        self.token = secrets.token_hex(8)

    def __enter__(self) -> Folder:
        return self

    def __exit__(self, *_exc: object) -> None:
        os.close(self.fd)

    def create(self, final_name: str) -> tuple[int, str]:
        """A new file for what will be ``final_name``: its descriptor, open for writing, and
        its temporary name, created by this call and no other (never an existing file or
        link)."""
        while True:
            name = f".{final_name}.{self.token}.tmp"
            try:
                return os.open(name, CREATE_NEW, 0o666, dir_fd=self.fd), name
            except FileExistsError:
                self.token = secrets.token_hex(8)

    def write_all(self, documents: Iterable[tuple[str, bytes]], written: list[tuple[str, str]]) -> None:
        """Each (final name, data) of ``documents`` in a new temporary file, flushed to disk
        by its own fsync (a global sync would wait for every other process's writes too);
        (temporary name, final name) appended to ``written`` as each file is created, so
        that the caller can remove them after a failure. Each file's fsync starts as soon
        as it is written, up to FLUSHES_IN_FLIGHT at once, while the next ones are written:
        the filesystem commits the waiting ones together, in a fraction of the time of one
        after the other."""
        flushing: deque[tuple[int, Future]] = deque()  # (descriptor, its fsync) in order
        with ThreadPoolExecutor(FLUSHING_THREADS) as pool:
            try:
                for final_name, data in documents:
                    fd, name = self.create(final_name)
                    written.append((name, final_name))
                    try:
                        view = memoryview(data)
                        while view:
                            view = view[os.write(fd, view) :]
                    except BaseException:
                        os.close(fd)
                        raise
                    flushing.append((fd, pool.submit(os.fsync, fd)))
                    if len(flushing) >= FLUSHES_IN_FLIGHT:
                        _flushed(*flushing.popleft())
                while flushing:
                    _flushed(*flushing.popleft())
            finally:
                for fd, flush in flushing:  # after a failure: each fsync ends before its close
                    flush.exception()
                    os.close(fd)

    def replace(self, name: str, final_name: str, into: Folder | None = None) -> None:
        """Rename ``name`` to ``final_name`` here, or in the folder ``into``."""
        os.replace(name, final_name, src_dir_fd=self.fd, dst_dir_fd=(into or self).fd)

    def sync(self) -> None:
        """Make the renames in this directory durable."""
        os.fsync(self.fd)


def _flushed(fd: int, flush: Future) -> None:
    """Wait for ``fd``'s fsync (raising its failure), then close it."""
    try:
        flush.result()
    finally:
        os.close(fd)


def create_temporary(directory: Path, final_name: str) -> tuple[BinaryIO, Path]:
    """A new file in ``directory`` for what will be ``final_name``, opened for writing (see
    Folder.create)."""
    with Folder(directory) as folder:
        fd, name = folder.create(final_name)
    return os.fdopen(fd, "wb"), directory / name


def write_durably(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Run ``write(stream)`` into a temporary file in a work folder beside ``path``, fsync
    it and rename it to ``path``; SinkError when any of it fails. The temporary file goes
    with the work folder, however this ends."""
    try:
        with WorkFolder(path.parent) as staging:
            stream, temporary = create_temporary(staging, path.name)
            with stream:
                write(stream)
                stream.flush()
                os.fsync(stream.fileno())
            os.replace(temporary, path)
    except OSError as exc:
        raise SinkError(f"cannot write {path}: {exc.strerror or exc}") from exc


def sync_directory(directory: Path) -> None:
    """Make the renames in ``directory`` durable."""
    with Folder(directory) as folder:
        folder.sync()
