"""Documents written relative to their folder (delivery/documents.py): a temporary name
already taken, by a file or a planted link, is never opened; another is drawn."""

from __future__ import annotations

import os

from publisher.delivery.documents import Folder, document_bytes


def test_a_taken_temporary_name_is_left_alone_and_another_drawn(tmp_path):
    outside = tmp_path / "outside"
    folder_path = tmp_path / "out"
    folder_path.mkdir()
    document = document_bytes([])
    with Folder(folder_path) as folder:
        taken = f".{'1'.zfill(20)}.xml.{folder.token}.tmp"
        os.symlink(outside, folder_path / taken)
        name = folder.write("00000000000000000001.xml", document)
        assert name != taken and (folder_path / taken).is_symlink()
        folder.replace(name, "00000000000000000001.xml")
    assert (folder_path / "00000000000000000001.xml").read_bytes() == document
    assert not outside.exists()
