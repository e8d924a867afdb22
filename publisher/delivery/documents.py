"""XDS documents as files (docs/delivery.md): their names, and how one is written so that a
reader never sees half of it and nothing is written outside the output folder.

A document is written under a temporary name of its own folder, created exclusively with a
random part (so a planted file or symbolic link is never opened, let alone followed), then
made durable and renamed over its final name (a symbolic link there is replaced, not
followed). Both sides of the cycle use these: the executors and the driver."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from publisher.errors import SinkError
from publisher.render.xds import envelope

HEARTBEAT_NAME = "heartbeat.xml"
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


def document_name(event_id: int) -> str:
    """A document's file name: its first command's event-id, zero-padded, so that a
    re-publication overwrites the same file."""
    return f"{event_id:020d}.xml"


def write_stream(stream: BinaryIO, commands: Iterable[bytes]) -> None:
    """One whole <nds> document holding ``commands`` (rendered XML, in order)."""
    head, tail = envelope()
    stream.write(head)
    stream.writelines(commands)
    stream.write(tail)


def create_temporary(directory: Path, final_name: str) -> tuple[BinaryIO, Path]:
    """A new file in ``directory`` for what will be ``final_name``: opened for writing,
    created by this call and no other (never an existing file or link)."""
    while True:
        path = directory / f".{final_name}.{secrets.token_hex(8)}.tmp"
        try:
            fd = os.open(path, _CREATE, 0o666)
        except FileExistsError:
            continue
        return os.fdopen(fd, "wb"), path


def write_durably(path: Path, write: Callable[[BinaryIO], None]) -> None:
    """Run ``write(stream)`` into a temporary file beside ``path``, fsync it and rename it
    to ``path``; SinkError when any of it fails (the temporary file is removed)."""
    temporary = None
    try:
        stream, temporary = create_temporary(path.parent, path.name)
        with stream:
            write(stream)
            stream.flush()
            os.fsync(stream.fileno())
        os.replace(temporary, path)
    except OSError as exc:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
        raise SinkError(f"cannot write {path}: {exc.strerror or exc}") from exc


def sync_directory(directory: Path) -> None:
    """Make the renames in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
