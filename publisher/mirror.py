"""A reference consumer (docs/mirror.md): ``xdspub apply`` keeps a mirror of the published
objects by applying XDS documents as an identity engine takes them, and ``xdspub verify``
compares that mirror with the database's current content through the same catalogue and
value rules a cycle publishes by.

The Python API (the command line calls it):

- ``apply_documents(sources, mirror, wait=2.0) -> ApplyReport``: ``sources`` as the command
  takes them (str or Path: a folder, a file, ``-`` for standard input, a broker URL; none
  is ``-``); ``mirror`` the SQLite file, created if missing. Documents are applied in
  order, each in one transaction, those applied before skipped; the first that cannot be
  applied stops it, left unapplied, and is the report's ``failure`` (an ApplyFailure,
  whose str() names the document and command; None when all applied). ConfigError (exit
  2) for a source that does not exist or a file that is not a mirror; a broker's own
  errors as ``xdspub consume`` raises them.
- ``verify_mirror(settings, mirror) -> list[Difference]``: the differences between the
  database that ``settings`` names (its db_url, schema, log_table, tables, time_syntax,
  exclude_columns, hash_columns and hash_key count) and the mirror, in class then
  association order, each one line as str(); ``compare_mirror(settings, mirror) ->
  Verification`` gives them with the number of objects compared.

The mirror holds objects by (class-name, association), each attribute a set of (type,
value text), in the tables ``mirror_object`` and ``mirror_value``; ``applied_document``
records the digest and name of each document applied."""

from __future__ import annotations

import hashlib
import json
import re
import sqlite3
import sys
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from lxml import etree

from publisher.delivery.broker import masked, received
from publisher.errors import ConfigError
from publisher.model.catalogue import Table
from publisher.model.commands import association
from publisher.model.value_text import DN
from publisher.plans.triggerless_driver import EVERY_OBJECT, objects_now
from publisher.reduce.objects import ATTRIBUTE, ERROR, KEY, attributes
from publisher.render.validate import checked_bytes, documents
from publisher.settings import Settings
from publisher.source.database import Database, connect
from publisher.source.query_back import CurrentRows
from publisher.source.schema import published_catalogue

Value = tuple[str, str]  # (XDS type, text)
MIRROR_VERSION = 1  # PRAGMA user_version of a mirror file
_TABLES = """
CREATE TABLE IF NOT EXISTS mirror_object (
    class_name TEXT NOT NULL, association TEXT NOT NULL, PRIMARY KEY (class_name, association));
CREATE INDEX IF NOT EXISTS mirror_object_association ON mirror_object (association);
CREATE TABLE IF NOT EXISTS mirror_value (
    class_name TEXT NOT NULL, association TEXT NOT NULL, attr_name TEXT NOT NULL,
    type TEXT NOT NULL, value TEXT NOT NULL,
    PRIMARY KEY (class_name, association, attr_name, type, value)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS applied_document (
    digest TEXT PRIMARY KEY, name TEXT NOT NULL, commands INTEGER NOT NULL, applied_at TEXT NOT NULL);
"""
_COMMANDS = ("add", "modify", "delete")
# Where a document starts in a stream of several (`poll --out -`, `consume --out -`, the
# demo's output): its XML declaration, or its <nds> when it has none.
_START = re.compile(rb"<\?xml\b|<nds\b")
_COMMENTS = re.compile(rb"<!--.*?-->", re.DOTALL)


# --- the mirror file ---------------------------------------------------------------------


def open_mirror(path: Path, create: bool) -> sqlite3.Connection:
    """The mirror in ``path``: made when missing and ``create``; ConfigError when it is
    missing otherwise, or is not a mirror."""
    if not create and not path.is_file():
        raise ConfigError(f"--mirror {path}: no such mirror")
    try:
        connection = sqlite3.connect(path)
        version = connection.execute("PRAGMA user_version").fetchone()[0]
        tables = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
        if version != MIRROR_VERSION and (version or tables):
            connection.close()
            raise ConfigError(f"--mirror {path}: an SQLite file, but not an xdspub mirror")
        if not tables:
            with connection:
                connection.executescript(_TABLES)
                connection.execute(f"PRAGMA user_version = {MIRROR_VERSION}")
        # A commit a document, without waiting for the disk: a power loss may lose the last
        # documents applied, with their record, so that they are applied again.
        connection.execute("PRAGMA journal_mode = WAL")
        connection.execute("PRAGMA synchronous = NORMAL")
    except sqlite3.DatabaseError as exc:
        raise ConfigError(f"--mirror {path}: {exc}") from None
    return connection


# --- apply ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Document:
    """One document read from a source: ``name`` is what xdspub named it (its file's or
    message's name), ``label`` where it was found, for messages."""

    name: str
    label: str
    body: bytes

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.body).hexdigest()


@dataclass(frozen=True)
class ApplyFailure:
    """A document or command that cannot be applied: ``command`` is its place among the
    document's commands (1-based; 0 for the document as a whole)."""

    document: str
    reason: str
    command: int = 0
    kind: str | None = None
    event_id: str | None = None
    association: str | None = None

    def __str__(self) -> str:
        if not self.command:
            return f"{self.document}: {self.reason}"
        what = f"{self.kind} event-id={self.event_id}"
        return f"{self.document}: command {self.command} ({what}, {self.association}): {self.reason}"


@dataclass
class ApplyReport:
    applied: int = 0  # documents applied
    commands: int = 0  # commands applied
    skipped: list[str] = field(default_factory=list)  # documents already applied
    without_commands: int = 0  # documents with no command (heartbeats, empty cycles)
    failure: ApplyFailure | None = None

    def summary(self) -> str:
        skipped = f", {len(self.skipped)} already applied" if self.skipped else ""
        empty = f", {self.without_commands} without a command" if self.without_commands else ""
        return f"{self.applied} documents applied ({self.commands} commands){skipped}{empty}"


class _Refused(Exception):
    """A command that cannot be applied (ApplyFailure.reason)."""


def apply_documents(sources: Sequence[str | Path], mirror: Path, wait: float = 2.0) -> ApplyReport:
    """Apply the documents of ``sources`` to the mirror in ``mirror`` (module docstring)."""
    sources = [str(source) for source in sources] or ["-"]
    missing = [s for s in sources if s != "-" and "://" not in s and not Path(s).exists()]
    if missing:
        raise ConfigError(f"{', '.join(missing)}: no such file or folder")
    report = ApplyReport()
    connection = open_mirror(Path(mirror), create=True)
    try:
        for document in _documents(sources, wait):
            report.failure = _apply_document(connection, document, report)
            if report.failure is not None:
                break
    finally:
        connection.close()
    return report


def _documents(sources: Iterable[str], wait: float) -> Iterator[Document]:
    """Each source's documents in order: a folder's by name (as xdspub names them, the
    order they were published in), a file's or standard input's as they follow one
    another, a broker's as ``xdspub consume`` reads them."""
    for source in sources:
        if source == "-":
            yield from _split(sys.stdin.buffer.read(), "-", "standard input")
        elif "://" in source:
            for number, message in enumerate(received(source, None, wait), 1):
                yield Document(message.name, f"{masked(source)} message {number} ({message.name})", message.body)
        else:
            for file in documents(Path(source)):
                try:
                    data = file.read_bytes()
                except OSError as exc:
                    raise ConfigError(f"{file}: cannot read: {exc.strerror or exc}") from None
                yield from _split(data, file.name, str(file))


def _split(data: bytes, name: str, label: str) -> list[Document]:
    """The documents of a stream that holds one or several, one after another; text
    before the first (comments, spaces) is no document."""
    starts: list[int] = []
    root = False  # whether the document begun at starts[-1] has its <nds> yet
    for found in _START.finditer(data):
        if found.group() == b"<nds" and not root and starts:
            root = True  # the <nds> of the declaration before it
            continue
        starts.append(found.start())
        root = found.group() == b"<nds"
    if not starts or _COMMENTS.sub(b"", data[: starts[0]]).strip():
        starts.insert(0, 0)
    pieces = [data[start:end] for start, end in zip(starts, [*starts[1:], len(data)])]
    pieces = [piece for piece in pieces if _COMMENTS.sub(b"", piece).strip()]
    if len(pieces) == 1:
        return [Document(name, label, pieces[0])]
    return [Document(name, f"{label}, document {n}", piece) for n, piece in enumerate(pieces, 1)]


def _apply_document(connection: sqlite3.Connection, document: Document, report: ApplyReport) -> ApplyFailure | None:
    digest = document.digest
    done = connection.execute("SELECT name FROM applied_document WHERE digest = ?", (digest,)).fetchone()
    if done is not None:
        report.skipped.append(document.label)
        return None
    tree, problems = checked_bytes(document.body, document.label)
    if problems:
        return ApplyFailure(document.label, "not a valid XDS document: " + "; ".join(
            str(problem).removeprefix(document.label + ":").strip() for problem in problems[:3]))
    commands = [c for part in tree.getroot().iterchildren("input") for c in part.iterchildren(*_COMMANDS)]
    if not commands:
        report.without_commands += 1
        return None
    with connection:
        for number, command in enumerate(commands, 1):
            try:
                _apply(connection, command)
            except _Refused as refused:
                connection.rollback()  # a document is applied whole, or not at all
                return ApplyFailure(document.label, str(refused), number, command.tag,
                                    command.get("event-id"), command.findtext("association"))
        connection.execute(
            "INSERT INTO applied_document VALUES (?, ?, ?, ?)",
            (digest, document.name, len(commands), datetime.now(timezone.utc).isoformat()),
        )
    report.applied += 1
    report.commands += len(commands)
    return None


def _apply(connection: sqlite3.Connection, command: etree._Element) -> None:
    """One command, with XDS semantics (docs/mirror.md, Apply)."""
    class_name = command.get("class-name")
    where = command.findtext("association")
    if not class_name or not where:
        raise _Refused("it names no class-name or no association")
    obj = (class_name, where)
    if command.tag == "delete":
        connection.execute("DELETE FROM mirror_value WHERE class_name = ? AND association = ?", obj)
        connection.execute("DELETE FROM mirror_object WHERE class_name = ? AND association = ?", obj)
        return
    if command.tag == "add":  # an add of an object the mirror holds replaces it
        connection.execute("DELETE FROM mirror_value WHERE class_name = ? AND association = ?", obj)
    # A modify of an object the mirror lacks is an add of it, as the engine takes it.
    connection.execute("INSERT OR IGNORE INTO mirror_object VALUES (?, ?)", obj)
    if command.tag == "add":
        for attr in command.iterchildren("add-attr"):
            _add_values(connection, obj, attr.get("attr-name"), attr.iterchildren("value"))
        return
    for attr in command.iterchildren("modify-attr"):
        name = attr.get("attr-name")
        for piece in attr.iterchildren("remove-value", "remove-all-values", "add-value"):
            if piece.tag == "remove-all-values":
                connection.execute(
                    "DELETE FROM mirror_value WHERE class_name = ? AND association = ? AND attr_name = ?",
                    (*obj, name),
                )
            elif piece.tag == "remove-value":
                connection.executemany(
                    "DELETE FROM mirror_value WHERE class_name = ? AND association = ? AND attr_name = ?"
                    " AND type = ? AND value = ?",
                    [(*obj, name, *_value(v)) for v in piece.iterchildren("value")],
                )
            else:
                _add_values(connection, obj, name, piece.iterchildren("value"))


def _value(element: etree._Element) -> Value:
    return element.get("type") or "string", element.text or ""


def _add_values(connection: sqlite3.Connection, obj: tuple[str, str], name: str,
                values: Iterable[etree._Element]) -> None:
    """Each value added to attribute ``name``: a reference's object must be in the mirror
    (the object itself counts: a self-reference)."""
    for element in values:
        kind, text = _value(element)
        if kind == DN:
            target = element.get("association-ref") or text
            found = connection.execute(
                "SELECT 1 FROM mirror_object WHERE association = ? LIMIT 1", (target,)
            ).fetchone()
            if found is None:
                raise _Refused(f"{name} references {target}, which the mirror does not hold")
        connection.execute("INSERT OR IGNORE INTO mirror_value VALUES (?, ?, ?, ?, ?)", (*obj, name, kind, text))


# --- verify --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """One difference between the database and the mirror: an attribute's values on each
    side, or (``attribute`` None) an object that one side lacks (its side None), or an
    object of the database that cannot be published (``reason``)."""

    class_name: str
    association: str
    attribute: str | None = None
    database: tuple[Value, ...] | None = ()
    mirror: tuple[Value, ...] | None = ()
    reason: str | None = None

    def __str__(self) -> str:
        if self.reason is not None:
            return f"{self.association}: the database's object cannot be published: {self.reason}"
        if self.attribute is None:
            side = "mirror" if self.mirror is None else "database"
            return f"{self.association}: missing in the {side}"
        return (f"{self.association} {self.attribute}: database {_shown(self.database)} "
                f"mirror {_shown(self.mirror)}")


def _shown(values: Iterable[Value]) -> str:
    """Values as a list: each text quoted as JSON, its type before it unless string."""
    shown = ((f"{kind}:" if kind != "string" else "") + json.dumps(text, ensure_ascii=False)
             for kind, text in values)
    return "[" + ", ".join(shown) + "]"


@dataclass
class Verification:
    differences: list[Difference]
    objects: int  # compared: the database's and the mirror's, each once
    classes: int
    others: int = 0  # the mirror's objects of classes not compared
    keyless: list[str] = field(default_factory=list)  # classes without a key, not compared

    def summary(self) -> str:
        others = f" ({self.others} objects of other classes in the mirror not compared)" if self.others else ""
        return (f"{self.objects} objects of {self.classes} classes compared, "
                f"{len(self.differences)} differences{others}")


def verify_mirror(settings: Settings, mirror: Path) -> list[Difference]:
    """The differences between the database ``settings`` names and the mirror."""
    return compare_mirror(settings, mirror).differences


def compare_mirror(settings: Settings, mirror: Path) -> Verification:
    """The differences, and how many objects were compared (docs/mirror.md, Verify)."""
    with closing(open_mirror(Path(mirror), create=False)) as connection, connect(settings.db_url) as db:
        return _compared(settings, db, connection)


def _compared(settings: Settings, db: Database, connection: sqlite3.Connection) -> Verification:
    catalogue = published_catalogue(settings, db)
    classes = catalogue.keyed_classes()
    differences: list[Difference] = []
    compared = 0
    for table in classes:
        held = _mirror_objects(connection, table.name)
        database: dict[str, dict[str, set[Value]]] = {}
        failed: dict[str, str] = {}
        objects, refused = objects_now(CurrentRows(db, catalogue), table)
        if refused is not None:  # the class cannot be compared: one difference says why
            compared += 1
            differences.append(Difference(table.name, EVERY_OBJECT, reason=refused))
            continue
        for row in objects.to_pylist():
            where = association(row[KEY], table.name, catalogue.schema)
            database[where] = _database_values(table, row)
            if row[ERROR] is not None:
                failed[where] = row[ERROR]
        for where in sorted(database.keys() | held.keys()):
            compared += 1
            differences += _object_differences(table.name, where, database.get(where), held.get(where),
                                               failed.get(where))
    names = [table.name for table in classes]
    others = connection.execute(
        f"SELECT count(*) FROM mirror_object WHERE class_name NOT IN ({', '.join('?' * len(names))})", names
    ).fetchone()[0]
    return Verification(differences, compared, len(classes), others, catalogue.keyless_classes())


def _database_values(table: Table, row: dict) -> dict[str, set[Value]]:
    """An object's attributes that have values (a row of reduce/objects.py current_schema)."""
    values = {}
    for a in attributes(table):
        value = row[ATTRIBUTE + a.name]
        texts = (value or ()) if a.multi_valued else (() if value is None else (value,))
        if texts:
            values[a.name] = {(a.xds_type, text) for text in texts}
    return values


def _mirror_objects(connection: sqlite3.Connection, class_name: str) -> dict[str, dict[str, set[Value]]]:
    """The mirror's objects of one class: association -> attribute -> values."""
    held: dict[str, dict[str, set[Value]]] = {
        where: {} for (where,) in connection.execute(
            "SELECT association FROM mirror_object WHERE class_name = ?", (class_name,))
    }
    rows = connection.execute(
        "SELECT association, attr_name, type, value FROM mirror_value WHERE class_name = ?", (class_name,)
    )
    for where, name, kind, text in rows:
        held.setdefault(where, {}).setdefault(name, set()).add((kind, text))
    return held


def _object_differences(class_name: str, where: str, database: dict[str, set[Value]] | None,
                        mirror: dict[str, set[Value]] | None, reason: str | None) -> list[Difference]:
    if reason is not None:
        return [Difference(class_name, where, reason=reason)]
    if mirror is None:
        return [Difference(class_name, where, mirror=None)]
    if database is None:
        return [Difference(class_name, where, database=None)]
    return [
        Difference(class_name, where, name, tuple(sorted(database.get(name, ()))),
                   tuple(sorted(mirror.get(name, ()))))
        for name in sorted(database.keys() | mirror.keys())
        if database.get(name, set()) != mirror.get(name, set())
    ]
