"""Triggerless publication's state (docs/triggerless.md, State): per class, each object's
key and every attribute's values as the last cycle published them, as Parquet.

One folder per database and schema under the state directory. Each cycle's state is a
generation folder (``gen-<number>``) holding a manifest and one Parquet file a class;
``CURRENT`` names the generation in use. A new generation is written whole, made durable,
then ``CURRENT`` is replaced by a rename: a crash at any moment leaves the old state or
the new one, never a mix. An flock on ``.lock`` keeps one publisher per folder."""

from __future__ import annotations

import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from publisher.errors import ConfigError, PublisherBusy, SinkError

FORMAT = 1
CURRENT = "CURRENT"
MANIFEST = "manifest.json"
_LOCK = ".lock"
_GENERATION = re.compile(r"^gen-[0-9]{20}$")
_OURS = re.compile(r"^(CURRENT|\.lock|gen-[0-9]{20}|\.gen-.*\.tmp|\.CURRENT\..*\.tmp)$")


class StateError(ConfigError):
    """A state folder that cannot be used: unwritable, or holding what xdspub did not write."""


def default_state_dir() -> Path:
    """``$XDG_STATE_HOME/xdspub`` (``~/.local/state/xdspub`` without it)."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "xdspub"


def folder_name(database: str, schema: str) -> str:
    """The folder of one database and schema: readable, and unique by a hash of both."""
    digest = hashlib.sha256(f"{database}\0{schema}".encode()).hexdigest()[:12]
    readable = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{database}-{schema}").strip("._-")[:60]
    return f"{readable}-{digest}"


@dataclass(frozen=True)
class Identity:
    """What a state was written for: a state written for anything else is not used."""

    database: str  # the database's URL without its password (SQLite: the file's path)
    schema: str
    tables: tuple[str, ...]  # the table selection (--tables), in name order; none: every class
    time_syntax: int
    keys: dict[str, list[str]]  # each class's key columns
    # The column policy (model/policy.fingerprint): a state kept under another holds other
    # values (raw ones, or other hashes), which the comparison would publish.
    policy: str = ""

    def differences(self, other: dict) -> str | None:
        """Why a manifest's identity is not this one; None when it is."""
        for name in ("database", "schema", "time_syntax"):
            if other.get(name) != getattr(self, name):
                return f"it was written for {name} {other.get(name)!r}, not {getattr(self, name)!r}"
        if other.get("policy", "") != self.policy:
            return "it was written under another column policy (--exclude-columns, --hash-columns, the hash key)"
        if tuple(other.get("tables", ())) != self.tables:
            return f"it was written for --tables {','.join(other.get('tables', ())) or '(every class)'}"
        keys = other.get("keys", {})
        for table, key in self.keys.items():  # a class new since then has all its objects new
            if table in keys and keys[table] != key:
                return f"the key of {table} was {'+'.join(keys[table])}"
        return None


@dataclass(frozen=True)
class Previous:
    """The state read at the start of a cycle: its generation, and each class's folder of
    Parquet files (None: no usable state, and why)."""

    generation: int
    classes: dict[str, Path] | None
    why_not: str | None = None
    # Per class, the digest of each range read when its state was kept (docs/triggerless.md,
    # A cycle with no change): a range read again with the same digest is unchanged.
    reads: dict[str, dict[str, str]] = field(default_factory=dict)

    def table(self, name: str) -> pa.Table | None:
        """A class's previous objects (None: none were kept)."""
        files = self.files(name)
        return pq.read_table(self.classes[name]) if files else None

    def files(self, name: str) -> list[Path]:
        """A class's previous Parquet files (none: no objects were kept)."""
        if self.classes is None or name not in self.classes:
            return []
        return sorted(self.classes[name].glob("*.parquet"))


class NewGeneration:
    """A state being written: each class's Parquet files in a folder of their own, then
    ``commit`` makes them the state in use, or ``discard`` drops them."""

    def __init__(self, folder: StateFolder, generation: int) -> None:
        self.folder, self.generation = folder, generation
        self.name = f"gen-{generation:020d}"
        try:
            self.path = Path(tempfile.mkdtemp(prefix=f".{self.name}.", suffix=".tmp", dir=folder.path))
        except OSError as exc:
            raise SinkError(f"cannot write the state in {folder.path}: {exc.strerror or exc}") from exc
        self.classes: dict[str, str] = {}
        self.reads: dict[str, dict[str, str]] = {}

    def class_folder(self, table: str) -> Path:
        """The folder of ``table``'s Parquet files (user names are never file names)."""
        if table not in self.classes:
            self.classes[table] = str(len(self.classes))
            (self.path / self.classes[table]).mkdir()
        return self.path / self.classes[table]

    def keep_class(self, table: str, state: pa.Table | list[str] | None, reads: dict[str, str] | None,
                   previous: Previous) -> None:
        """``table``'s new state as a plan hands it (plans.ComparedClass): a table, written
        here; the files a plan wrote in ``class_folder(table)`` in bucket order, named as
        this state's parts; or None: the ``previous`` state's files and reads kept as they
        were (hard links where the filesystem has them, else copies)."""
        folder = self.class_folder(table)
        if state is None:
            for path in previous.files(table):
                if not hard_link(path, folder / path.name):
                    shutil.copyfile(path, folder / path.name)
            reads = previous.reads.get(table)
        elif isinstance(state, pa.Table):
            pq.write_table(state, folder / _part_name(0))
        else:
            for number, path in enumerate(state):
                os.replace(path, folder / _part_name(number))
        if reads is not None:
            self.reads[table] = reads

    def discard(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def commit(self) -> None:
        """Durable first, then named in CURRENT by a rename; SinkError when it cannot be."""
        identity, folder = self.folder.identity, self.folder.path
        manifest = {"format": FORMAT, **asdict(identity), "classes": self.classes, "reads": self.reads}
        try:
            (self.path / MANIFEST).write_text(json.dumps(manifest, indent=1))
            for path in sorted(self.path.rglob("*"), reverse=True):  # files before their folders
                _fsync(path)
            _fsync(self.path)
            final = folder / self.name
            if final.exists():
                shutil.rmtree(final)
            os.replace(self.path, final)
            pointer = folder / f".{CURRENT}.{os.getpid()}.tmp"
            pointer.write_text(self.name + "\n")
            _fsync(pointer)
            os.replace(pointer, folder / CURRENT)
            _fsync(folder)
        except OSError as exc:
            raise SinkError(f"cannot write the state in {folder}: {exc.strerror or exc}") from exc
        self.folder.sweep()


def kept_state(base: Path, database: str, schema: str) -> dict[str, Any] | None:
    """The state in use of ``database`` and ``schema`` under ``base``, read without the
    lock a running publisher holds (``xdspub status``): its folder, generation, when it
    was kept, what it was written for, and each class's objects; None: no state."""
    folder = base / folder_name(database, schema)
    try:
        current = (folder / CURRENT).read_text().strip()
        manifest_path = folder / current / MANIFEST
        manifest = json.loads(manifest_path.read_text())
        kept = datetime.fromtimestamp(manifest_path.stat().st_mtime, timezone.utc)
        classes = {name: sum(pq.read_metadata(p).num_rows for p in (folder / current / str(number)).glob("*.parquet"))
                   for name, number in manifest.get("classes", {}).items()}
    except (OSError, ValueError, AttributeError) as exc:
        return {"folder": str(folder), "unreadable": str(exc)} if folder.exists() else None
    return {"folder": str(folder), "generation": int(current.removeprefix("gen-")),
            "kept": kept.isoformat(timespec="seconds"), "time_syntax": manifest.get("time_syntax"),
            "tables": manifest.get("tables"), "classes": classes}


class StateFolder:
    """One database and schema's state folder, locked while open."""

    def __init__(self, base: Path, identity: Identity) -> None:
        self.identity = identity
        self.path = base / folder_name(identity.database, identity.schema)
        # Where a state kept under another --state-dir is noted, for a run that forgot it.
        self.pointer = default_state_dir() / "elsewhere" / f"{self.path.name}.json"
        try:
            self.path.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._fd = os.open(self.path / _LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise StateError(f"cannot use the state folder {self.path}: {exc.strerror or exc}") from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(self._fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise PublisherBusy(f"another triggerless publisher uses the state folder {self.path}") from None
            raise
        foreign = sorted(p.name for p in self.path.iterdir() if not _OURS.match(p.name))
        if foreign:
            self.close()
            raise StateError(
                f"the state folder {self.path} holds files xdspub did not write ({', '.join(foreign[:3])}): "
                "give --state-dir a folder of its own"
            )
        self.sweep()

    def __enter__(self) -> StateFolder:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _current(self) -> str | None:
        try:
            name = (self.path / CURRENT).read_text().strip()
        except FileNotFoundError:
            return None
        return name if _GENERATION.match(name) else None

    def sweep(self) -> None:
        """Remove what a killed cycle left: temporary folders and old generations."""
        current = self._current()
        for entry in self.path.iterdir():
            stale = entry.name.endswith(".tmp") or (_GENERATION.match(entry.name) and entry.name != current)
            if stale:
                shutil.rmtree(entry, ignore_errors=True) if entry.is_dir() else entry.unlink(missing_ok=True)

    def read(self) -> Previous:
        """The state in use, if it was written for this identity."""
        current = self._current()
        if current is None:
            return Previous(0, None, "there is no state yet")
        folder = self.path / current
        generation = int(current.removeprefix("gen-"))
        try:
            manifest = json.loads((folder / MANIFEST).read_text())
        except (OSError, ValueError) as exc:
            return Previous(generation, None, f"its manifest cannot be read ({exc})")
        if manifest.get("format") != FORMAT:
            return Previous(generation, None, f"it is of format {manifest.get('format')!r}")
        why = self.identity.differences(manifest)
        if why is not None:
            return Previous(generation, None, why)
        classes = manifest.get("classes")
        if not isinstance(classes, dict) or not all(re.fullmatch(r"[0-9]+", str(v)) for v in classes.values()):
            return Previous(generation, None, "its manifest names no classes")
        reads = manifest.get("reads", {})
        if not isinstance(reads, dict):
            reads = {}
        return Previous(generation, {name: folder / number for name, number in classes.items()},
                        reads={name: dict(digests) for name, digests in reads.items()
                               if name in classes and isinstance(digests, dict)})

    def elsewhere(self) -> Path | None:
        """Another folder the state of this database and schema was kept in (another
        --state-dir), as the last kept one noted; None: none known."""
        folder = self._noted()
        return folder if folder not in (None, self.path) and (folder / CURRENT).exists() else None

    def note_kept(self) -> None:
        """Noted in the default state folder, when kept elsewhere (``elsewhere``): only a
        hint, so a default folder that cannot be written is let be."""
        if self.path.parent == default_state_dir() or self._noted() == self.path:
            return
        try:
            self.pointer.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self.pointer.write_text(json.dumps({"state_dir": str(self.path)}), "utf-8")
        except OSError:
            pass

    def _noted(self) -> Path | None:
        try:
            return Path(json.loads(self.pointer.read_text("utf-8"))["state_dir"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def begin(self, generation: int) -> NewGeneration:
        return NewGeneration(self, generation)


def _part_name(number: int) -> str:
    """A class's state file: parts in bucket order, as their names sort (Previous.files)."""
    return f"part-{number:05d}.parquet"


def hard_link(existing: str | Path, new: Path) -> bool:
    """``new`` made a hard link to ``existing`` (a file kept again, not written again);
    False where the filesystem has none."""
    try:
        os.link(existing, new)
    except OSError:
        return False
    return True


def _fsync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
