"""The hostile-input suite's machinery (issue 12, part 6): the publisher run as a process and
watched while it runs (the peak memory of its whole process tree, every command line in
it, its listening sockets), databases whose event log is attacked (a published schema of
their own, a victim schema beside it, a publisher user with privileges on the published
schema only), the statements a private server logged for that user, tmpfs mounts, and the
documents written.

Every test here runs ``xdspub`` as a process (``python3 -m publisher``), so it checks the
command line's contract, not the internals that are being refactored."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import sqlalchemy as sa
from lxml import etree

from bench.peak_rss import Proc, process_tree
from tests.conftest import (
    LOG_COLUMNS,
    SampleDb,
    make_sample_db,
    published_stdout,
    unavailable,
)
from tests.private_servers import PrivateMariaDB, PrivatePostgres, start_private_server

KINDS = ("sqlite", "postgresql", "mariadb")
SERVER_KINDS = KINDS[1:]  # the databases with users and statement logs
MASTER = "local[2]"
EXPORT_TIMEOUT = 900  # seconds: other sessions run Spark on this 2-core machine too


# --- processes ------------------------------------------------------------------------


_SS_USER = re.compile(r'\("([^"]*)",pid=(\d+),')


def listening_sockets() -> list[tuple[str, int, set[int]]]:
    """(local address, port, owning pids) of every listening TCP socket (``ss -ltnp``)."""
    result = subprocess.run(["ss", "-ltnpH"], capture_output=True, text=True, check=True)
    sockets = []
    for line in result.stdout.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        address, _, port = parts[3].rpartition(":")
        pids = {int(pid) for _, pid in _SS_USER.findall(line)}
        sockets.append((address.strip("[]"), int(port) if port.isdigit() else -1, pids))
    return sockets


def is_loopback(address: str) -> bool:
    address = address.split("%", 1)[0]
    return (
        address.startswith("127.")
        or address in ("::1", "localhost")
        or address.startswith("::ffff:127.")
    )


def roles_of(root: int, procs: list[Proc]) -> dict[str, int]:
    """RSS KiB of a publisher's tree by role: its own process (the driver), the JVM, the
    Python workers (everything else)."""
    roles = {"driver": 0, "jvm": 0, "workers": 0}
    for proc in procs:
        role = (
            "driver"
            if proc.pid == root
            else "jvm"
            if "java" in proc.cmdline.split(" ")[0]
            else "workers"
        )
        roles[role] += proc.rss_kib
    return roles


@dataclass
class Run:
    """What one ``xdspub`` process did."""

    args: list[str]
    code: int
    stdout: bytes
    stderr: str
    seconds: float
    peak_kib: int  # the largest sum of RSS over its process tree, sampled every 0.1 s
    cmdlines: set[str]  # every command line seen in its process tree
    listeners: set[tuple[str, int, str]]  # (address, port, command) listening in its tree
    tree_commands: set[str]  # first word of each command seen
    peak_sample: list[tuple[int, str]]  # (RSS KiB, command) at the peak
    role_peaks: dict[str, int]  # driver, jvm, workers: each's peak KiB

    @property
    def notes(self) -> dict[int, tuple[str, str]]:
        """record_id -> (letter, reason) of the E and W rows listed on standard error."""
        return {
            int(m[1]): (m[2], m[3])
            for m in re.finditer(r"^xdspub: record_id (\d+): ([SWE]): (.*)$", self.stderr, re.M)
        }

    def peak_breakdown(self) -> str:
        def name(command: str) -> str:
            words = command.split(" ")
            return " ".join([words[0].rsplit("/", 1)[-1], *words[1:3]])

        return ", ".join(
            f"{kib / 1024:.0f} MiB {name(command)}" for kib, command in self.peak_sample
        )

    def describe(self) -> str:
        return (
            f"xdspub {' '.join(self.args)}\nexit {self.code} after {self.seconds:.1f} s, "
            f"peak {self.peak_kib / 1024:.0f} MiB ({self.peak_breakdown()})\n"
            f"stderr (last 4000 characters):\n"
            f"{self.stderr[-4000:]}"
        )


def xdspub_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "publisher", *args]


def clean_environment(env: dict[str, str] | None) -> dict[str, str]:
    """This process's environment without XDSPUB_* variables, plus ``env``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("XDSPUB_")}
    base.update(env or {})
    return base


class Xdspub:
    """One ``xdspub`` process in a session of its own, watched by a thread while it runs."""

    def __init__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        feed: Iterable[bytes] | None = None,
        stdout: Path | None = None,
        stderr: Path | None = None,
        sockets: bool = False,
        on_sample: Callable[[list[Proc]], None] | None = None,
    ) -> None:
        self.args = list(args)
        self._own_out = self._own_err = None
        if stdout is None:
            self._own_out = _temporary_file("stdout")
            stdout = self._own_out
        if stderr is None:
            self._own_err = _temporary_file("stderr")
            stderr = self._own_err
        self._stdout_name, self._stderr_name = stdout, stderr
        out_stream = open(stdout, "wb")
        err_stream = open(stderr, "ab")
        stdin_arg = subprocess.DEVNULL if feed is None else subprocess.PIPE
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            xdspub_command(*args),
            stdin=stdin_arg,
            stdout=out_stream,
            stderr=err_stream,
            env=clean_environment(env),
            start_new_session=True,
        )
        out_stream.close()
        err_stream.close()
        self.peak_kib = 0
        self.peak_sample: list[tuple[int, str]] = []
        self.role_peaks: dict[str, int] = {}
        self.cmdlines: set[str] = set()
        self.commands: set[str] = set()
        self.listeners: set[tuple[str, int, str]] = set()
        self._sockets, self._on_sample = sockets, on_sample
        self._done = threading.Event()
        self._watcher = threading.Thread(target=self._watch, daemon=True)
        self._watcher.start()
        self._feeder = None
        if feed is not None:
            self._feeder = threading.Thread(target=self._feed, args=(feed,), daemon=True)
            self._feeder.start()

    def _feed(self, chunks: Iterable[bytes]) -> None:
        stream = self.process.stdin
        try:
            for chunk in chunks:
                stream.write(chunk)
        except (BrokenPipeError, OSError, ValueError):
            pass  # the reader stopped early: what a bounded reader does
        finally:
            with contextlib.suppress(OSError, ValueError):
                stream.close()

    def _watch(self) -> None:
        last_sockets = 0.0
        while True:
            finished = self.process.poll() is not None
            procs = process_tree(self.process.pid)
            if procs:
                for role, kib in roles_of(self.process.pid, procs).items():
                    self.role_peaks[role] = max(self.role_peaks.get(role, 0), kib)
                total = sum(p.rss_kib for p in procs)
                if total > self.peak_kib:
                    self.peak_kib = total
                    self.peak_sample = sorted(
                        ((p.rss_kib, p.cmdline[:90]) for p in procs), reverse=True
                    )
                for proc in procs:
                    if proc.cmdline:
                        self.cmdlines.add(proc.cmdline)
                        self.commands.add(Path(proc.cmdline.split()[0]).name)
                if self._on_sample is not None:
                    self._on_sample(procs)
                now = time.monotonic()
                if self._sockets and now - last_sockets >= 1.0:
                    last_sockets = now
                    pids = {p.pid: p.cmdline for p in procs}
                    for address, port, owners in listening_sockets():
                        for owner in owners & set(pids):
                            self.listeners.add((address, port, pids[owner][:120]))
            if finished or self._done.is_set():
                return
            time.sleep(0.1)

    def stderr_text(self) -> str:
        return Path(self._stderr_name).read_text(errors="replace")

    def wait_for(self, condition: Callable[[], bool], what: str, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return
            if self.process.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"no {what} within {timeout} s; stderr:\n{self.stderr_text()[-3000:]}")

    def wait_log(self, text: str, timeout: float = 300) -> None:
        self.wait_for(lambda: text in self.stderr_text(), repr(text), timeout)

    def terminate(self, timeout: float = 180) -> Run:
        """SIGTERM to the publisher's own process (not its group), then wait."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        return self.wait(timeout)

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)

    def wait(self, timeout: float = EXPORT_TIMEOUT) -> Run:
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"xdspub {' '.join(self.args)} still running after {timeout} s; stderr:\n"
                f"{self.stderr_text()[-3000:]}"
            ) from None
        finally:
            self._done.set()
        self._watcher.join(timeout=30)
        if self._feeder is not None:
            self._feeder.join(timeout=60)
        # The JVM or a worker may outlive the driver for a moment: none may stay behind.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        stdout = Path(self._stdout_name)
        run = Run(
            self.args,
            code,
            stdout.read_bytes() if stdout.is_file() else b"",
            self.stderr_text(),
            time.monotonic() - self.started,
            self.peak_kib,
            set(self.cmdlines),
            set(self.listeners),
            set(self.commands),
            list(self.peak_sample),
            dict(self.role_peaks),
        )
        published_stdout(run.args, run.code, run.stdout)  # checked after the test
        for own in (self._own_out, self._own_err):
            if own is not None:
                own.unlink(missing_ok=True)
        return run


def _temporary_file(what: str) -> Path:
    import tempfile

    handle, name = tempfile.mkstemp(prefix=f"xdspub-hostile-{what}-")
    os.close(handle)
    return Path(name)


def run_xdspub(*args: str, timeout: float = EXPORT_TIMEOUT, **options) -> Run:
    return Xdspub(*args, **options).wait(timeout)


# --- documents ------------------------------------------------------------------------


@dataclass(frozen=True)
class Cmd:
    kind: str  # add, modify, delete
    association: str
    values: dict[str, list[str]]  # attribute -> the values it adds


def parse_document(path: Path) -> etree._Element:
    """The document at ``path``; a failed assertion when it is not well-formed XML."""
    try:
        return etree.parse(str(path), etree.XMLParser(huge_tree=True)).getroot()
    except etree.XMLSyntaxError as exc:
        raise AssertionError(f"{path} is not well-formed XML: {exc}") from None


def commands_of(root: etree._Element) -> list[Cmd]:
    found = []
    for command in root.iterfind("input/*"):
        values: dict[str, list[str]] = {}
        for attr in command.iterfind("add-attr"):
            values[attr.get("attr-name")] = [v.text or "" for v in attr.iterfind("value")]
        for attr in command.iterfind("modify-attr"):
            values[attr.get("attr-name")] = [v.text or "" for v in attr.iterfind("add-value/value")]
        found.append(Cmd(command.tag, command.findtext("association") or "", values))
    return found


def documents_in(folder: Path) -> list[Path]:
    return sorted(p for p in folder.glob("*.xml") if not p.name.startswith("."))


def association(key: str, table: str, schema: str) -> str:
    return f"{key},table={table},schema={schema}"


def canonical_key(column: str, value: str) -> str:
    """The canonical table_key of one pair, by the project's own grammar."""
    from grammar import format_table_key

    return format_table_key([(column, value)])


# --- databases ------------------------------------------------------------------------

# What a private server logs: PostgreSQL every statement with its user in front, MariaDB
# the general log (every statement of every connection) in a file; MariaDB also takes
# values of 100 MB (a packet up to 1 GiB, a redo log large enough for such a row).
PG_LOGGING = ("log_statement=all", "log_line_prefix=@@%u@@", "log_parameter_max_length=200")
MARIADB_OPTIONS = (
    "--general-log=1",
    "--general-log-file={home}/general.log",
    "--max-allowed-packet=1G",
    "--innodb-log-file-size=1G",
)


class Servers:
    """One private server per kind for the session, started when first asked for."""

    def __init__(self) -> None:
        self.started: dict[str, PrivatePostgres | PrivateMariaDB] = {}

    def get(self, kind: str) -> PrivatePostgres | PrivateMariaDB:
        if kind not in self.started:
            extra = PG_LOGGING if kind == "postgresql" else MARIADB_OPTIONS
            try:
                self.started[kind] = start_private_server(kind, extra)
            except (OSError, subprocess.CalledProcessError, AssertionError) as exc:
                pytest.fail(f"cannot start a private {kind} server: {exc}")
        return self.started[kind]

    def stop(self) -> None:
        for server in self.started.values():
            with contextlib.suppress(Exception):
                server.stop()


@pytest.fixture(scope="session")
def servers() -> Iterator[Servers]:
    started = Servers()
    yield started
    started.stop()


@dataclass(frozen=True)
class Statement:
    user: str
    kind: str  # PostgreSQL: LOG, ERROR, DETAIL, STATEMENT, ...; MariaDB: Query, Execute, ...
    text: str

    @property
    def sql(self) -> str:
        """The statement itself, without PostgreSQL's ``statement:``/``execute x:`` lead."""
        match = re.match(
            r"(?:statement|execute [^:]*|parse [^:]*|bind [^:]*):\s*(.*)", self.text, re.S
        )
        return match[1] if match else self.text


_PG_ENTRY = re.compile(r"^@@([^@]*)@@([A-Z]+):\s+(.*)$")
_MARIADB_ENTRY = re.compile(r"^(?:\d{6}\s+\d{1,2}:\d{2}:\d{2})?\s+(\d+) ([A-Z][A-Za-z ]*?)\t(.*)$")


def pg_statements(text: str) -> list[Statement]:
    entries: list[list[str]] = []
    for line in text.splitlines():
        match = _PG_ENTRY.match(line)
        if match:
            entries.append([match[1], match[2], match[3]])
        elif entries:
            entries[-1][2] += "\n" + line
    return [Statement(*entry) for entry in entries]


def mariadb_statements(text: str, users: dict[str, str] | None = None) -> list[Statement]:
    """The general log's entries; each connection's user from its Connect entry (in
    ``text``, or given in ``users`` when it came before)."""
    users = dict(users or {})
    entries: list[list[str]] = []
    for line in text.splitlines():
        match = _MARIADB_ENTRY.match(line)
        if match:
            connection, kind, rest = match[1], match[2], match[3]
            if kind == "Connect":
                users[connection] = rest.split("@", 1)[0]
            entries.append([connection, kind, rest])
        elif entries:
            entries[-1][2] += "\n" + line
    return [Statement(users.get(c, "?"), kind, rest) for c, kind, rest in entries]


def mariadb_users(text: str) -> dict[str, str]:
    users = {}
    for line in text.splitlines():
        match = _MARIADB_ENTRY.match(line)
        if match and match[2] == "Connect":
            users[match[1]] = match[3].split("@", 1)[0]
    return users


# A COPY is a write unless it copies a plain SELECT out (how the pending rows are read).
WRITES = re.compile(
    r"^\W*(INSERT|UPDATE|DELETE|DROP|CREATE|ALTER|TRUNCATE|GRANT|REVOKE|MERGE|REPLACE|RENAME"
    r"|COPY(?!\s*\(\s*SELECT\b.*\)\s*TO\s+STDOUT\b)|CALL|DO|LOAD|HANDLER|LOCK|SET\s+ROLE"
    r"|SET\s+SESSION\s+AUTHORIZATION)\b",
    re.I | re.S,
)


class HostileDb:
    """The sample schema (usr, view_usr, the event log) in a schema of its own; on a server,
    a victim schema beside it with a table ``secret`` and a publisher user whose only
    privileges are on the published schema. SQLite: a new file (no schemas, no users)."""

    def __init__(self, kind: str, tmp_path: Path, servers: Servers | None) -> None:
        self.kind = kind
        tag = uuid.uuid4().hex[:10]
        self.server = servers.get(kind) if kind != "sqlite" else None
        if self.server is None:
            self.db = make_sample_db("sqlite", tmp_path)
        else:
            self.db = SampleDb(self.server.url, f"xt_{tag}")
        self.schema = self.db.schema
        self.engine = self.db.engine
        self.user = f"pub_{tag}"
        self.victim = f"victim_{tag}"
        self.url = self.db.settings.db_url
        if self.server is not None:
            self._make_victim()
            self._make_user()

    # set-up, as the server's superuser

    def _make_victim(self) -> None:
        create = "CREATE SCHEMA" if self.kind == "postgresql" else "CREATE DATABASE"
        self.execute(f"{create} {self.victim}")
        self.execute(
            f"CREATE TABLE {self.victim}.secret (id INTEGER PRIMARY KEY, data VARCHAR(100))"
        )
        self.execute(
            f"INSERT INTO {self.victim}.secret VALUES (1, 'crown jewels'), (2, 'launch codes')"
        )

    def _make_user(self) -> None:
        if self.kind == "postgresql":
            self.execute(f"CREATE ROLE {self.user} LOGIN")
            self.url = self.server.url.replace("root@", f"{self.user}@")
        else:
            for host in ("%", "localhost", "127.0.0.1"):
                self.execute(f"CREATE USER '{self.user}'@'{host}'")
            base = self.server.url.rsplit("/", 1)[0]
            self.url = f"{base.replace('root@', f'{self.user}@')}/{self.schema}"

    def grant(self) -> None:
        """The publisher user's privileges: everything on the published schema, nothing
        elsewhere (given again before each run, for the tables made since)."""
        if self.kind == "postgresql":
            self.execute(f"GRANT USAGE ON SCHEMA {self.schema} TO {self.user}")
            self.execute(f"GRANT ALL ON ALL TABLES IN SCHEMA {self.schema} TO {self.user}")
            self.execute(f"GRANT ALL ON ALL SEQUENCES IN SCHEMA {self.schema} TO {self.user}")
        elif self.kind == "mariadb":
            for host in ("%", "localhost", "127.0.0.1"):
                self.execute(f"GRANT ALL ON {self.schema}.* TO '{self.user}'@'{host}'")

    def drop(self) -> None:
        if self.server is not None:
            with contextlib.suppress(Exception):
                if self.kind == "postgresql":
                    self.execute(f"DROP SCHEMA {self.victim} CASCADE")
                    self.execute(f"DROP OWNED BY {self.user}")
                    self.execute(f"DROP ROLE {self.user}")
                else:
                    self.execute(f"DROP DATABASE {self.victim}")
                    for host in ("%", "localhost", "127.0.0.1"):
                        self.execute(f"DROP USER '{self.user}'@'{host}'")
        with contextlib.suppress(Exception):
            self.db.drop()

    # data

    def execute(self, sql: str, **params: object) -> None:
        self.db.execute(sql, **params)

    def table(self, name: str) -> str:
        return self.db.table(name)

    def create_acct(self) -> None:
        """``acct``: a table keyed by text, in the published schema."""
        charset = " CHARACTER SET utf8mb4" if self.kind == "mariadb" else ""
        self.execute(
            f"CREATE TABLE {self.table('acct')} (login VARCHAR(200){charset} NOT NULL PRIMARY KEY, "
            f"fullname VARCHAR(100){charset})"
        )

    def insert(self, table: str, rows: Sequence[dict]) -> None:
        if not rows:
            return
        names = list(rows[0])
        sql = (
            f"INSERT INTO {self.table(table)} ({', '.join(names)}) "
            f"VALUES ({', '.join(':' + n for n in names)})"
        )
        with self.engine.begin() as conn:
            conn.execute(sa.text(sql), list(rows))

    def log(self, rows: dict[str, tuple]) -> dict[str, int]:
        """Event log rows by label, each (table_key, event_type, table_name, column_name,
        old_value, new_value) padded with NULL; the label is the row's perpetrator (never
        the publisher's user, so never loopback). Returns each label's record_id."""
        values = []
        for label, row in rows.items():
            padded = row + (None,) * (len(LOG_COLUMNS) - len(row))
            values.append(dict(zip(LOG_COLUMNS, padded), perpetrator=label))
        self.insert("indirect_process", values)
        return self.record_ids(list(rows))

    def record_ids(self, labels: Sequence[str]) -> dict[str, int]:
        with self.engine.connect() as conn:
            found = dict(
                (perpetrator, record_id)
                for record_id, perpetrator in conn.execute(
                    sa.text(f"SELECT record_id, perpetrator FROM {self.table('indirect_process')}")
                )
            )
        missing = [label for label in labels if label not in found]
        assert not missing, f"rows not logged: {missing}"
        return {label: found[label] for label in labels}

    def statuses(self) -> dict[int, str]:
        return self.db.statuses()

    def rows_of(self, sql: str) -> list[tuple]:
        with self.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(sa.text(sql))]

    def victim_rows(self) -> list[tuple]:
        return self.rows_of(f"SELECT id, data FROM {self.victim}.secret ORDER BY id")

    def snapshot(self) -> dict[str, list[tuple]]:
        """Every table's rows but the event log's (SQLite: sqlite_master's too)."""
        inspector = sa.inspect(self.engine)
        schema = self.schema if self.kind != "sqlite" else None
        tables = {}
        for name in inspector.get_table_names(schema=schema):
            if name == "indirect_process":
                continue
            rows = self.rows_of(f"SELECT * FROM {self.table(name)}")
            tables[name] = sorted(rows, key=repr)
        if self.kind == "sqlite":
            tables["sqlite_master"] = sorted(self.rows_of("SELECT * FROM sqlite_master"), key=repr)
        return tables

    # the server's statement log

    def log_mark(self) -> int:
        if self.server is None:
            return 0
        path = self._log_path()
        return path.stat().st_size if path.exists() else 0

    def _log_path(self) -> Path:
        if self.kind == "postgresql":
            return self.server.log_path
        return self.server.home / "general.log"

    def statements(self, since: int) -> list[Statement]:
        """What the server logged for the publisher's user since ``since`` (log_mark)."""
        if self.server is None:
            return []
        if self.kind == "mariadb":
            self.execute("FLUSH GENERAL LOGS")
        time.sleep(0.5)  # the server writes its log after the statement
        data = self._log_path().read_bytes()
        text = data[since:].decode(errors="replace")
        if self.kind == "postgresql":
            return [s for s in pg_statements(text) if s.user == self.user]
        # Connection ids are named by their Connect entries, which may precede the mark.
        users = mariadb_users(data[:since].decode(errors="replace"))
        return [s for s in mariadb_statements(text, users) if s.user == self.user]

    # the publisher

    def export(self, out: Path, *extra: str, **options) -> Run:
        self.grant()
        return run_xdspub(
            "export",
            "--db",
            self.url,
            "--schema",
            self.schema,
            "--out",
            str(out),
            "--master",
            MASTER,
            *extra,
            **options,
        )


def make_hostile_db(kind: str, folder: Path, servers: Servers) -> HostileDb:
    folder.mkdir(parents=True, exist_ok=True)
    return HostileDb(kind, folder, servers)


# --- mounts ---------------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(mountpoint: Path, size: str, readonly: bool = False) -> Iterator[Path]:
    """A tmpfs of ``size`` at ``mountpoint`` (read-only if asked), always unmounted after.
    We run as root, so chmod stops no write: a mount is what refuses them."""
    mountpoint.mkdir(parents=True, exist_ok=True)
    options = f"size={size},mode=0755" + (",ro" if readonly else "")
    result = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "xdspub-hostile", str(mountpoint)],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        unavailable(f"cannot mount a tmpfs at {mountpoint}: {result.stderr.strip()}")
    try:
        yield mountpoint
    finally:
        if subprocess.run(["umount", str(mountpoint)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True)


def fill(folder: Path, leave: int = 0) -> None:
    """Fill the filesystem of ``folder`` up, leaving about ``leave`` bytes free."""
    stats = os.statvfs(folder)
    free = stats.f_bavail * stats.f_frsize
    with contextlib.suppress(OSError), open(folder / "filler", "wb", buffering=0) as stream:
        stream.write(b"\0" * max(0, free - leave))
    if leave == 0:
        with contextlib.suppress(OSError), open(folder / "filler2", "ab", buffering=0) as stream:
            while True:
                stream.write(b"\0" * 512)
