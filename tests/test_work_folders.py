"""Spark cycles' work folders (delivery/work.py, docs/delivery.md): a folder whose process
was killed is swept; a live cycle's, another host's, another user's, a symbolic link and
anything not named like one are left, and nothing is followed out of the folder."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from publisher.delivery.work import OWNER_NAME, WORK_PREFIX, WorkFolder, sweep_work_folders

HOLDER = """
import sys, time
from pathlib import Path
from publisher.delivery.work import WorkFolder
work = WorkFolder(Path(sys.argv[1]))
(work.path / "commands-00001.arrow").write_bytes(b"spilled")
print(work.path, flush=True)
time.sleep(600)
"""


@pytest.fixture
def holders() -> Iterator[list[subprocess.Popen]]:
    """Processes each holding a work folder until killed."""
    started: list[subprocess.Popen] = []
    yield started
    for process in started:
        process.kill()
        process.wait()


def hold(parent: Path, holders: list[subprocess.Popen]) -> tuple[subprocess.Popen, Path]:
    """A process that made a work folder in ``parent`` and holds it; that folder."""
    process = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(parent)], stdout=subprocess.PIPE, text=True
    )
    holders.append(process)
    return process, Path(process.stdout.readline().strip())


def killed(parent: Path, holders: list[subprocess.Popen]) -> Path:
    """A work folder whose process was killed with SIGKILL, mid-cycle."""
    process, folder = hold(parent, holders)
    process.send_signal(signal.SIGKILL)
    process.wait()
    return folder


def stale_lookalike(parent: Path, name: str, host: str | None = None) -> Path:
    """A folder named ``name`` whose owner file names ``host`` (this one by default), and
    whose lock no one holds."""
    folder = parent / name
    folder.mkdir()
    (folder / OWNER_NAME).write_text(f"{host or socket.gethostname()}\n1\n")
    return folder


def test_a_killed_cycles_folder_is_swept_and_a_live_ones_kept(tmp_path: Path, holders) -> None:
    # The live one first: a new work folder sweeps its parent, which would take the other.
    _live_process, live = hold(tmp_path, holders)  # another publisher, same output parent
    stale = killed(tmp_path, holders)
    assert stale.name.startswith(WORK_PREFIX) and stale.is_dir() and live.is_dir()
    assert sweep_work_folders(tmp_path) == [stale.name]
    assert not stale.exists()
    assert (live / "commands-00001.arrow").read_bytes() == b"spilled"
    assert sweep_work_folders(tmp_path) == []  # and again: the live one stays


def test_a_folder_in_use_in_this_process_is_kept_and_removed_after(tmp_path: Path) -> None:
    with WorkFolder(tmp_path) as folder:
        assert sweep_work_folders(tmp_path) == []
        assert folder.is_dir()
    assert list(tmp_path.iterdir()) == []


def test_only_this_hosts_folders_of_the_exact_prefix_owned_by_us_are_swept(
    tmp_path: Path, holders
) -> None:
    stale = killed(tmp_path, holders)
    kept = [
        stale_lookalike(tmp_path, f"{WORK_PREFIX}other-host", host="another-host"),
        stale_lookalike(tmp_path, ".xdspub-workers"),
        stale_lookalike(tmp_path, "xdspub-work-1"),
        stale_lookalike(tmp_path, f"{WORK_PREFIX}old-without-owner"),
    ]
    (kept[-1] / OWNER_NAME).unlink()  # an earlier version's, or one not yet locked
    unnamed = stale_lookalike(tmp_path, f"{WORK_PREFIX}unnamed")
    (unnamed / OWNER_NAME).write_text("")  # made on a filesystem without locks
    kept.append(unnamed)
    fifo = stale_lookalike(tmp_path, f"{WORK_PREFIX}fifo")
    (fifo / OWNER_NAME).unlink()
    os.mkfifo(fifo / OWNER_NAME)  # never waited on
    kept.append(fifo)
    if os.geteuid() == 0:
        other = stale_lookalike(tmp_path, f"{WORK_PREFIX}other-user")
        os.chown(other, 65534, 65534)
        kept.append(other)
    assert sweep_work_folders(tmp_path) == [stale.name]
    assert all(folder.is_dir() for folder in kept)


def test_no_symbolic_link_is_followed(tmp_path: Path, holders) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious.txt").write_bytes(b"<nds/>")
    stale_target = stale_lookalike(outside, f"{WORK_PREFIX}target")
    parent = tmp_path / "out"
    parent.mkdir()
    (parent / f"{WORK_PREFIX}link").symlink_to(stale_target)  # a link named like one
    stale = killed(parent, holders)
    (stale / "inside-link").symlink_to(outside)  # and a link inside a stale one
    assert sweep_work_folders(parent) == [stale.name]
    assert (parent / f"{WORK_PREFIX}link").is_symlink() and stale_target.is_dir()
    assert (outside / "precious.txt").read_bytes() == b"<nds/>"


def test_a_parent_that_cannot_be_read_sweeps_nothing(tmp_path: Path) -> None:
    assert sweep_work_folders(tmp_path / "missing") == []
