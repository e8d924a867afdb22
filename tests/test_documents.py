"""Documents written relative to their folder (delivery/documents.py): a temporary name
already taken, by a file or a planted link, is never opened; another is drawn. Each file
is flushed to disk before its rename, and its folder after (docs/delivery.md,
Durability)."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest

from publisher.delivery.documents import FLUSHES_IN_FLIGHT, Folder, document_bytes, document_name
from publisher.delivery.ordered import OrderedCommands, in_memory
from publisher.delivery.sinks import DirectorySink, FileSink
from publisher.model.rows import COMMANDS


def test_a_taken_temporary_name_is_left_alone_and_another_drawn(tmp_path):
    outside = tmp_path / "outside"
    folder_path = tmp_path / "out"
    folder_path.mkdir()
    document = document_bytes([])
    with Folder(folder_path) as folder:
        taken = f".{'1'.zfill(20)}.xml.{folder.token}.tmp"
        os.symlink(outside, folder_path / taken)
        written: list[tuple[str, str]] = []
        folder.write_all([("00000000000000000001.xml", document)], written)
        [(name, _final)] = written
        assert name != taken and (folder_path / taken).is_symlink()
        folder.replace(name, "00000000000000000001.xml")
    assert (folder_path / "00000000000000000001.xml").read_bytes() == document
    assert not outside.exists()


def ordered(ids: list[int]) -> OrderedCommands:
    """One status command per record_id, in that order."""
    xml = [b'<status level="success" event-id="%d"/>' % i for i in ids]
    batch = pa.RecordBatch.from_pydict(
        {"cmd_time": [float(i) for i in ids], "cmd_id": ids, "xml": xml}, schema=COMMANDS.arrow
    )
    return in_memory([batch])


def flushes(publish: Callable[[], object]) -> list[str]:
    """The names of the flushes and renames ``publish`` makes, in order, as it runs (the
    real calls, observed by a profile hook, in every thread)."""
    watched = {id(f): f.__name__ for f in (os.fsync, os.fdatasync, os.sync, os.replace)}
    calls: list[str] = []

    def observe(_frame, event: str, function: object) -> None:
        if event == "c_call" and id(function) in watched:
            calls.append(watched[id(function)])

    sys.setprofile(observe)
    threading.setprofile(observe)  # the threads that flush a group of documents at once
    try:
        publish()
    finally:
        sys.setprofile(None)
        threading.setprofile(None)
    return calls


def test_each_document_is_flushed_before_the_renames_and_the_folder_after(tmp_path: Path) -> None:
    sink = DirectorySink(tmp_path, batch_size=2)
    calls = flushes(lambda: sink.publish(ordered([3, 5, 8, 9, 12])))
    # Three documents, each fsynced (together, after they are written); the renames; one
    # fsync of the folder. No global sync, whose cost follows other processes' writes.
    assert calls == ["fsync"] * 3 + ["replace"] * 3 + ["fsync"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [document_name(i) for i in (3, 8, 12)]


def test_the_single_file_is_flushed_before_its_rename_and_its_folder_after(tmp_path: Path) -> None:
    sink = FileSink(tmp_path / "out.xml")
    assert flushes(lambda: sink.publish(ordered([1, 2]))) == ["fsync", "replace", "fsync"]
    assert [p.name for p in tmp_path.iterdir()] == ["out.xml"]


@pytest.mark.parametrize("form", ["directory", "file"])
def test_a_heartbeat_is_flushed_before_its_rename_and_its_folder_after(tmp_path: Path, form: str) -> None:
    sink = DirectorySink(tmp_path, batch_size=1) if form == "directory" else FileSink(tmp_path / "out.xml")
    assert flushes(sink.heartbeat) == ["fsync", "replace", "fsync"]


def test_documents_past_the_flushes_in_flight_are_each_flushed_once(tmp_path: Path) -> None:
    ids = list(range(1, 2 * FLUSHES_IN_FLIGHT + 60))
    calls = flushes(lambda: DirectorySink(tmp_path, batch_size=1).publish(ordered(ids)))
    assert calls == ["fsync"] * len(ids) + ["replace"] * len(ids) + ["fsync"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [document_name(i) for i in ids]
