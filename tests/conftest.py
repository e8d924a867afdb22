"""Shared fixtures: one Spark session for the whole run, and SQLite event logs to publish."""

from __future__ import annotations

import base64
import io
import itertools
import os
import socket
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from lxml import etree

from publisher.cycle import CycleReport, run_cycle
from publisher.delivery.documents import document_bytes, write_stream
from publisher.delivery.sinks import FileSink, StdoutSink
from publisher.render.validate import documents, validate_bytes, validate_file
from publisher.settings import Settings
from publisher.source.database import connect
from publisher.source.event_log import open_event_log
from publisher.source.init_db import init_db

LOG_COLUMNS = ("table_key", "event_type", "table_name", "column_name", "old_value", "new_value")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A test that needs the Spark session is slow: the quick loop (`-m "not slow"`) is the
    rules and readers in plain Python. Tests that start Spark in a process of their own
    carry the marker themselves."""
    for item in items:
        if "spark" in item.fixturenames:
            item.add_marker(pytest.mark.slow)


@pytest.fixture(autouse=True, scope="session")
def _state_home(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The default state folder (holds, triggerless states) of the run's own, never the
    home's."""
    os.environ["XDG_STATE_HOME"] = str(tmp_path_factory.mktemp("state-home"))


@pytest.fixture(scope="session")
def spark():
    from publisher.plans.session import spark_session

    return spark_session("local[2]")


SERVERS = {
    "postgresql": os.environ.get("XDSPUB_TEST_POSTGRESQL", "postgresql+psycopg://root@127.0.0.1:5432/test"),
    "mariadb": os.environ.get("XDSPUB_TEST_MARIADB", "mysql+pymysql://root@127.0.0.1:3306/test"),
}


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def unavailable(message: str) -> None:
    """Something a test needs is missing: a failure in CI, a skip elsewhere."""
    if os.environ.get("CI"):
        pytest.fail(message)
    pytest.skip(message)


def server_url(name: str) -> str:
    """The test server's URL; unreachable is a failure in CI and a skip elsewhere."""
    url = SERVERS[name]
    try:
        engine = sa.create_engine(url)
        with engine.connect():
            pass
        engine.dispose()
    except sa.exc.DBAPIError as exc:
        unavailable(f"{name} test server unreachable at {url}: {exc.orig}")
    return url


class SampleDb:
    """A database with the sample schema (no triggers unless asked) and its event log.

    SQLite: a new file. PostgreSQL and MariaDB: a new schema, dropped afterwards."""

    def __init__(self, url: str, schema: str = "indirect", triggers: str = "none") -> None:
        self.settings = Settings(db_url=url, schema=schema, spark_master="local[2]")
        self.engine, self.dialect = self.database = connect(url, create=True)
        self.schema = schema
        init_db(self.database, schema, "indirect_process", True, triggers)

    def table(self, name: str) -> str:
        return f"{self.schema}.{name}" if self.dialect.has_schemas else name

    def drop(self) -> None:
        if self.dialect.has_schemas:
            drop = "DROP SCHEMA {} CASCADE" if self.dialect.name == "postgresql" else "DROP DATABASE {}"
            with self.engine.begin() as conn:
                conn.execute(sa.text(drop.format(self.schema)))
        self.engine.dispose()

    def execute(self, sql: str, **params: object) -> None:
        with self.engine.begin() as conn:
            conn.execute(sa.text(sql), params)

    def log(self, *rows: tuple, **columns: object) -> None:
        """Append event log rows given as (table_key, event_type, table_name, column_name,
        old_value, new_value) tuples, shorter tuples padded with NULL."""
        for row in rows:
            values = dict(zip(LOG_COLUMNS, row + (None,) * (len(LOG_COLUMNS) - len(row))))
            values.update(columns)
            names = ", ".join(values)
            binds = ", ".join(f":{n}" for n in values)
            self.execute(f"INSERT INTO {self.table('indirect_process')} ({names}) VALUES ({binds})", **values)

    def add_user(self, idu: int, fname: str | None, lname: str | None, photo_b64: str | None) -> None:
        photo = base64.b64decode(photo_b64) if photo_b64 is not None else None
        self.execute(
            f"INSERT INTO {self.table('usr')} (idu, fname, lname, photo) VALUES (:i, :f, :l, :p)",
            i=idu, f=fname, l=lname, p=photo,
        )

    def statuses(self) -> dict[int, str]:
        with self.engine.connect() as conn:
            rows = conn.execute(sa.text(f"SELECT record_id, status FROM {self.table('indirect_process')}"))
            return {r[0]: r[1] for r in rows}

    def publish(self, out: Path, **overrides: object) -> tuple[etree._Element, CycleReport]:
        settings = replace(self.settings, **overrides)
        log = open_event_log(self.database, settings)
        report = run_cycle(settings, self.database, log, FileSink(out))
        return written_document(out, report), report


def written_document(out: Path, report: CycleReport) -> etree._Element:
    """The document a cycle wrote to the file ``out``; one with no command writes none
    (docs/delivery.md, Output forms), and an empty document stands for it."""
    if not report.documents:
        return etree.fromstring(document_bytes([]))
    return etree.parse(str(out)).getroot()


def make_sample_db(kind: str, tmp_path: Path, triggers: str = "none") -> SampleDb:
    if kind == "sqlite":
        return SampleDb(f"sqlite:///{tmp_path / 'sample.db'}", triggers=triggers)
    return SampleDb(server_url(kind), f"xt_{uuid.uuid4().hex[:10]}", triggers)


@pytest.fixture
def sample_db(tmp_path: Path) -> SampleDb:
    db = make_sample_db("sqlite", tmp_path)
    yield db
    db.drop()


@pytest.fixture(params=["sqlite", "postgresql", "mariadb"])
def any_db(request, tmp_path: Path) -> SampleDb:
    """The sample database on each of the three databases in turn."""
    db = make_sample_db(request.param, tmp_path)
    yield db
    db.drop()


@pytest.fixture
def publish(sample_db: SampleDb, tmp_path: Path) -> Callable[..., tuple[etree._Element, CycleReport]]:
    def run(**overrides: object):
        return sample_db.publish(tmp_path / "out.xml", **overrides)

    return run


def canonical(element: etree._Element) -> str:
    """XML compared whitespace aside and without event-id (docs/reduction.md, Command order and event-id)."""
    element = etree.fromstring(etree.tostring(element))
    for node in element.iter():
        node.attrib.pop("event-id", None)
        if node.text is not None:
            node.text = node.text.strip() or None
        node.tail = None
    return etree.tostring(element, method="c14n").decode()


# --- every document a test publishes is valid XDS (docs/validation.md) -------------------

_STDOUT_DOCUMENTS: list[tuple[str, bytes]] = []  # (name, document) since the last check


def published_stdout(args: Sequence[str], code: int, stdout: bytes) -> None:
    """The standard output of an ``xdspub`` process, for the check after the test: kept
    when it is an export's document (``--out -``) and the export finished (exit 0 or 1)."""
    out = [b for a, b in itertools.pairwise(args) if a == "--out"] + [
        a.split("=", 1)[1] for a in args if a.startswith("--out=")
    ]
    if args and args[0] == "export" and out[-1:] == ["-"] and code in (0, 1):
        _STDOUT_DOCUMENTS.append((f"standard output of xdspub {' '.join(args)}", stdout))


class PublishedFiles:
    """The .xml files under the run's base temporary folder (every tmp_path, every
    tmp_path_factory folder) that are new or changed since the last look. Links are
    skipped: a link is not a document, and its target is looked at where it lives."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.seen: dict[Path, tuple[int, int]] = {}

    def fresh(self) -> list[Path]:
        found = []
        for path in documents(self.base):
            try:
                stat = path.lstat()
            except OSError:
                continue  # removed meanwhile
            mark = (stat.st_mtime_ns, stat.st_size)
            if path.is_symlink() or self.seen.get(path) == mark:
                continue
            self.seen[path] = mark
            found.append(path)
        return found


def xds_problems(files: Iterable[Path], base: Path, exempt: Sequence[str] = ()) -> list[str]:
    """The problems of ``files`` (but those matching a pattern of ``exempt``, relative to
    ``base``) and of the standard output documents kept since the last check."""
    problems = [
        str(problem)
        for path in files
        if not any(path.relative_to(base).match(pattern) for pattern in exempt)
        for problem in validate_file(path)
    ]
    problems += [str(p) for name, data in _STDOUT_DOCUMENTS for p in validate_bytes(data, name)]
    _STDOUT_DOCUMENTS.clear()
    return problems


def _fail_on(problems: list[str]) -> None:
    if problems:
        shown = "\n".join(problems[:40]) + ("\n..." if len(problems) > 40 else "")
        pytest.fail(f"published XDS is not valid (docs/validation.md):\n{shown}", pytrace=False)


@pytest.fixture(scope="session")
def _published_files(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PublishedFiles]:
    published = PublishedFiles(tmp_path_factory.getbasetemp())
    yield published
    _fail_on(xds_problems(published.fresh(), published.base))  # what module fixtures left


@pytest.fixture(autouse=True)
def _published_xds_is_valid(
    request: pytest.FixtureRequest, _published_files: PublishedFiles, monkeypatch
) -> Iterator[None]:
    """After each test, every .xml file written under the temporary folders since the last
    test, and every document written to standard output (in this process through
    StdoutSink, in an ``xdspub`` process as published_stdout keeps it), must be valid
    against the shipped schema. A test that writes .xml files that are not XDS on purpose
    names them: ``@pytest.mark.not_xds("folder/name.xml", "outside/*.xml")``, patterns
    matched against the end of the file's path."""
    original = StdoutSink._write

    def teed(commands: Iterable[bytes]) -> None:
        written: list[bytes] = []

        def kept() -> Iterator[bytes]:
            for command in commands:
                written.append(command)
                yield command

        original(kept())  # the document as the sink wrote it, once it wrote it whole
        document = io.BytesIO()
        write_stream(document, written)
        _STDOUT_DOCUMENTS.append((f"standard output of {request.node.nodeid}", document.getvalue()))

    monkeypatch.setattr(StdoutSink, "_write", staticmethod(teed))
    yield
    exempt = [p for mark in request.node.iter_markers("not_xds") for p in mark.args]
    _fail_on(xds_problems(_published_files.fresh(), _published_files.base, exempt))
