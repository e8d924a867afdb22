"""Work folders beside the output (docs/delivery.md, Durability): a Spark cycle's scratch
files, and each document while it is written; and the sweep of the folders that killed
processes left.

Each folder holds an owner file naming the host that made it, and its cycle holds an
``flock`` on that file for the folder's life. A folder is stale when its owner file names
this host and its lock can be taken: its cycle's process is gone. A folder of another host
(a cluster's shared output, where a lock may be local to each host) or of a live cycle
(another publisher, on another event log, sharing the output's parent) is left alone."""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import stat
import tempfile
from pathlib import Path

# A new file, never an existing one nor through a symbolic link.
CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
WORK_PREFIX = ".xdspub-work-"
OWNER_NAME = ".owner"  # the host's name, then the process id (for people), one a line
_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# Non-blocking: a FIFO planted as the owner file is not waited on.
_OWNER = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
_LOCK = fcntl.LOCK_EX | fcntl.LOCK_NB


class WorkFolder:
    """A new work folder in ``parent``, locked by this process until it is removed (as a
    context manager, on exit, with what it holds); the stale ones in ``parent`` are swept
    first."""

    def __init__(self, parent: Path) -> None:
        sweep_once(parent)
        self.path = Path(tempfile.mkdtemp(prefix=WORK_PREFIX, dir=parent))
        self.owner = -1
        try:
            self.owner = os.open(self.path / OWNER_NAME, CREATE_NEW, 0o600)
            self._lock()
        except BaseException:  # a folder naming no host would never be swept
            self.__exit__()
            raise

    def _lock(self) -> None:
        try:
            fcntl.flock(self.owner, _LOCK)
        except OSError:
            return  # a filesystem without locks: the folder names no host, and is never swept
        # Named only once locked: a sweep never takes a folder whose lock was not yet held.
        os.write(self.owner, f"{socket.gethostname()}\n{os.getpid()}\n".encode())

    def __enter__(self) -> Path:
        return self.path

    def __exit__(self, *_exc: object) -> None:
        try:
            shutil.rmtree(self.path)
        except FileNotFoundError:
            pass
        except BaseException:  # a signal in mid-removal (cli.py): the removal ends first
            shutil.rmtree(self.path, ignore_errors=True)
            raise
        finally:
            if self.owner >= 0:
                os.close(self.owner)  # unlocked once the folder is gone


_swept: set[Path] = set()


def sweep_once(parent: Path) -> list[str]:
    """``sweep_work_folders`` the first time this process asks for ``parent``: a folder
    goes stale only when its process dies, so later sweeps would find only what this
    one did, at the cost of listing every document of the output folder again."""
    if parent in _swept:
        return []
    _swept.add(parent)
    return sweep_work_folders(parent)


def sweep_work_folders(parent: Path) -> list[str]:
    """Remove the stale work folders in ``parent`` (see the module's notes); the names of
    those removed. Never fails: a folder it cannot judge or remove is left."""
    try:
        parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        return [
            name
            for name in os.listdir(parent_fd)
            if name.startswith(WORK_PREFIX) and _remove_if_stale(parent_fd, name)
        ]
    finally:
        os.close(parent_fd)


def _remove_if_stale(parent_fd: int, name: str) -> bool:
    try:
        folder = os.open(name, _FOLDER, dir_fd=parent_fd)  # not through a symbolic link
    except OSError:
        return False
    owner = None
    try:
        found = os.fstat(folder)
        if found.st_uid != os.geteuid():
            return False
        owner = os.open(OWNER_NAME, _OWNER, dir_fd=folder)
        if not stat.S_ISREG(os.fstat(owner).st_mode):
            return False
        host = os.read(owner, 1024).split(b"\n", 1)[0]
        if host != socket.gethostname().encode():
            return False  # another host's, or its owner had not locked it yet
        fcntl.flock(owner, _LOCK)  # held until removed: a second sweep passes it by
        # Still the folder judged, not one put under its name since.
        if not os.path.samestat(found, os.stat(name, dir_fd=parent_fd, follow_symlinks=False)):
            return False
        # The fd-based rmtree: it follows no symbolic link, at the top or inside.
        shutil.rmtree(name, dir_fd=parent_fd)
        return True
    except OSError:  # gone, unreadable, or locked by its live cycle
        return False
    finally:
        if owner is not None:
            os.close(owner)
        os.close(folder)
