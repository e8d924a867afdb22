"""Delivery to the live brokers (issue 25; docs/delivery.md): RabbitMQ at 127.0.0.1:5672
and NATS JetStream at 127.0.0.1:4222, which these tests need up (a failure, never a skip).

Each test makes its own exchange, queues or stream (a uuid in each name) and removes them.
A backlog's documents are compared, name and bytes, with a directory export of the same
rows; a broker's refusal or a lost connection must leave every row N; a send in progress is
watched through a TCP proxy in a thread of the test, which can hold the broker's answers or
cut the connection."""

from __future__ import annotations

import asyncio
import contextlib
import json
import random
import shutil
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import nats
import nats.js.errors
import pika
import pika.exceptions
import pytest
import sqlalchemy as sa
from click.testing import CliRunner
from lxml import etree
from nats.js.api import DiscardPolicy, StorageType, StreamConfig

from publisher.cli import cli
from tests.conftest import SampleDb, free_port, make_sample_db
from tests.test_service import Poll

RABBITMQ = "amqp://guest:guest@127.0.0.1:5672/%2F"
NATS = "nats://127.0.0.1:4222"
BATCH = 3  # commands a document: documents mixing objects and classes
WAIT = 30  # seconds a broker may take to hold what was sent


# --- the event log -------------------------------------------------------------------


def backlog(db: SampleDb, users: int = 60, groups: int = 20) -> int:
    """Rows on ``users`` usr and ``groups`` grp objects, in four rounds over every object
    (add, modify, delete, add again): each row is a command of its own, whatever rows a
    cycle reads, and each object's commands are spread over the documents. How many rows."""
    objects = [("usr", f"idu={i}", "fname") for i in range(1, users + 1)]
    objects += [("grp", f"idg={i}", "gname") for i in range(1, groups + 1)]
    rounds = [(1, None, "a"), (2, "a", "b"), (4, None, None), (1, None, "c")]
    rows = [
        {"k": key, "e": event, "t": table, "c": column if new else None, "o": old, "n": new}
        for event, old, new in rounds
        for table, key, column in objects
    ]
    with db.engine.begin() as conn:
        conn.execute(sa.text(
            f"INSERT INTO {db.table('indirect_process')} "
            "(table_key, event_type, table_name, column_name, old_value, new_value) "
            "VALUES (:k, :e, :t, :c, :o, :n)"
        ), rows)
    return len(rows)


def unmarked(db: SampleDb) -> None:
    db.execute(f"UPDATE {db.table('indirect_process')} SET status = 'N'")


def xdspub(*args: str, cwd: Path | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """``xdspub`` as a process: its exit code, its standard output (bytes), its stderr (text)."""
    run = subprocess.run([sys.executable, "-m", "publisher", *args], capture_output=True,
                         cwd=cwd, timeout=timeout)
    run.stderr = run.stderr.decode(errors="replace")
    return run


def export(db: SampleDb, out: str, *extra: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return xdspub("export", "--db", db.settings.db_url, "--schema", db.schema, "--out", out,
                  "--batch-size", str(BATCH), *extra, cwd=cwd)


@dataclass(frozen=True)
class Document:
    name: str
    body: bytes

    def commands(self) -> list[etree._Element]:
        return list(etree.fromstring(self.body).find("input"))


def folder_documents(folder: Path) -> list[Document]:
    """The documents of a folder, in publication order (by name: the first record_id)."""
    return [Document(p.name, p.read_bytes()) for p in sorted(folder.glob("*.xml"))]


def directory_export(db: SampleDb, folder: Path) -> list[Document]:
    """The documents a directory export of the pending rows writes (in this process: it is
    the reference, not what is tested); the rows N again after."""
    run = CliRunner().invoke(cli, ["export", "--db", db.settings.db_url, "--schema", db.schema,
                                   "--out", str(folder), "--batch-size", str(BATCH), "--quiet"])
    assert run.exit_code == 0, run.output
    assert set(db.statuses().values()) == {"S"}
    unmarked(db)
    return folder_documents(folder)


def association(command: etree._Element) -> str:
    return command.findtext("association")


def by_object(documents: list[Document]) -> dict[str, list[bytes]]:
    """Each object's commands (their XML), in the order of ``documents``."""
    commands: dict[str, list[bytes]] = defaultdict(list)
    for document in documents:
        for command in document.commands():
            commands[association(command)].append(etree.tostring(command, with_tail=False))
    return commands


# --- what a broker holds --------------------------------------------------------------


@dataclass(frozen=True)
class Delivered:
    """A message as the broker holds it."""

    route: str  # routing key or subject
    body: bytes
    headers: dict[str, str]
    message_id: str
    content_type: str | None
    persistent: bool = True  # JetStream stores every message

    @property
    def name(self) -> str:
        return self.headers["Xdspub-Document"]

    def document(self) -> Document:
        return Document(self.name, self.body)


def assert_delivered_as(delivered: list[Delivered], expected: list[Document]) -> None:
    """``delivered`` is ``expected``, once each, in order, each with its headers."""
    assert [d.document() for d in delivered] == expected
    assert len({d.message_id for d in delivered}) == len(delivered)
    for message in delivered:
        first = message.document().commands()[0]
        assert message.content_type == "application/xml"
        assert message.persistent
        assert message.message_id.startswith(message.name.removesuffix(".xml"))
        assert {k: v for k, v in message.headers.items() if k.startswith("Xdspub-")} == {
            "Xdspub-Document": message.name,
            "Xdspub-Commands": str(len(message.document().commands())),
            "Xdspub-Class": first.get("class-name"),
            "Xdspub-Association": association(first),
        }


def first_class(document: Document) -> str:
    return document.commands()[0].get("class-name")


class RabbitMQ:
    """The test's exchanges and queues on the live RabbitMQ, deleted at the end."""

    def __init__(self) -> None:
        try:
            self.connection = pika.BlockingConnection(pika.URLParameters(RABBITMQ))
        except pika.exceptions.AMQPError as exc:
            pytest.fail(f"RabbitMQ unreachable at {RABBITMQ}: {exc!r}")
        self.channel = self.connection.channel()
        self.exchanges: list[str] = []
        self.queues: list[str] = []

    def url(self, host: str = "127.0.0.1:5672", **params: str) -> str:
        return f"amqp://guest:guest@{host}/%2F?" + "&".join(f"{k}={v}" for k, v in params.items())

    def exchange(self) -> str:
        name = f"xt-{uuid.uuid4().hex[:10]}"
        self.channel.exchange_declare(name, "topic")
        self.exchanges.append(name)
        return name

    def queue(self, name: str | None = None, exchange: str | None = None, binding: str = "#",
              **arguments: object) -> str:
        name = name or f"xt-{uuid.uuid4().hex[:10]}"
        self.channel.queue_declare(name, arguments=arguments or None)
        self.queues.append(name)
        if exchange:
            self.channel.queue_bind(name, exchange, binding)
        return name

    def count(self, queue: str) -> int:
        return self.channel.queue_declare(queue, passive=True).method.message_count

    def taken(self, queue: str) -> list[Delivered]:
        """Every message of ``queue``, in order, taken off it."""
        taken = []
        while True:
            method, properties, body = self.channel.basic_get(queue, auto_ack=True)
            if method is None:
                return taken
            taken.append(Delivered(
                method.routing_key, body, {k: _text(v) for k, v in (properties.headers or {}).items()},
                properties.message_id, properties.content_type,
                properties.delivery_mode == pika.DeliveryMode.Persistent.value,
            ))

    def close(self) -> None:
        for queue in self.queues:
            self.channel.queue_delete(queue)
        for exchange in self.exchanges:
            self.channel.exchange_delete(exchange)
        self.connection.close()


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


@pytest.fixture
def rabbitmq() -> Iterator[RabbitMQ]:
    broker = RabbitMQ()
    yield broker
    broker.close()


class JetStream:
    """The test's streams on the live NATS server, deleted at the end; each call on a
    connection of its own."""

    def __init__(self) -> None:
        self.streams: list[str] = []
        self.call(lambda js: js.account_info())

    def call(self, action: Callable):
        async def run():
            try:
                connection = await nats.connect(NATS, connect_timeout=5, allow_reconnect=False,
                                                max_reconnect_attempts=1, error_cb=_unlogged)
            except Exception as exc:  # nats-py raises several kinds; a failure either way
                pytest.fail(f"NATS unreachable at {NATS}: {exc!r}")
            try:
                return await action(connection.jetstream())
            finally:
                await connection.close()

        return asyncio.run(run())

    def stream(self, **config: object) -> tuple[str, str]:
        """A new stream (its name, and the subject prefix it takes: PREFIX.>)."""
        token = uuid.uuid4().hex[:10]
        name, prefix = f"XT_{token}", f"xt-{token}"
        config = {"storage": StorageType.MEMORY, **config}
        self.call(lambda js: js.add_stream(StreamConfig(name=name, subjects=[f"{prefix}.>"], **config)))
        self.streams.append(name)
        return name, prefix

    def url(self, stream: str, subject: str, host: str = "127.0.0.1:4222") -> str:
        return f"nats://{host}/{subject}?stream={stream}"

    def update(self, name: str, **config: object) -> None:
        async def update(js):
            current = (await js.stream_info(name)).config
            for key, value in config.items():
                setattr(current, key, value)
            await js.update_stream(current)

        self.call(update)

    def count(self, name: str) -> int:
        async def count(js):
            return (await js.stream_info(name)).state.messages

        return self.call(count)

    def stored(self, name: str) -> list[Delivered]:
        """Every message of stream ``name``, in its order."""

        async def read(js):
            state = (await js.stream_info(name)).state
            messages = []
            for sequence in range(state.first_seq, state.last_seq + 1) if state.messages else ():
                message = await js.get_msg(name, sequence)
                headers = dict(message.headers or {})
                messages.append(Delivered(message.subject, message.data, headers,
                                          headers.get("Nats-Msg-Id"), headers.get("Content-Type")))
            return messages

        return self.call(read)

    def close(self) -> None:
        async def delete(js):
            for name in self.streams:
                with contextlib.suppress(nats.js.errors.NotFoundError):
                    await js.delete_stream(name)

        self.call(delete)


async def _unlogged(_error: Exception) -> None:
    """nats-py would log each failed attempt with its traceback; the failure says it once."""


@pytest.fixture
def jetstream() -> Iterator[JetStream]:
    broker = JetStream()
    yield broker
    broker.close()


class Proxy:
    """A TCP proxy on 127.0.0.1 to a broker's port, in threads of the test. Once a
    connection's client has sent more than ``hold_after`` bytes, the broker's answers on it
    wait for ``release``; once it would send more than ``cut_after``, the bytes up to that
    limit go through and both sockets are closed (a connection lost in the middle of a send)."""

    def __init__(self, target: int, *, hold_after: int | None = None, cut_after: int | None = None) -> None:
        self.target, self.hold_after, self.cut_after = target, hold_after, cut_after
        self.released = threading.Event()
        self.cuts = 0
        self.sockets: list[socket.socket] = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.address = f"127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def release(self) -> None:
        self.released.set()

    def close(self) -> None:
        self.released.set()
        for connection in [self.listener, *self.sockets]:
            _closed(connection)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return  # the proxy was closed
            upstream = socket.create_connection(("127.0.0.1", self.target))
            self.sockets += [client, upstream]
            sent = [0]  # the client's bytes forwarded on this connection
            threading.Thread(target=self._requests, args=(client, upstream, sent), daemon=True).start()
            threading.Thread(target=self._answers, args=(upstream, client, sent), daemon=True).start()

    def _requests(self, client: socket.socket, upstream: socket.socket, sent: list[int]) -> None:
        with contextlib.suppress(OSError):
            while data := client.recv(65536):
                if self.cut_after is not None and sent[0] + len(data) > self.cut_after:
                    upstream.sendall(data[: self.cut_after - sent[0]])
                    self.cuts += 1
                    break
                sent[0] += len(data)  # before the broker may answer them
                upstream.sendall(data)
        _closed(client)
        _closed(upstream)

    def _answers(self, upstream: socket.socket, client: socket.socket, sent: list[int]) -> None:
        with contextlib.suppress(OSError):
            while data := upstream.recv(65536):
                if self.hold_after is not None and sent[0] > self.hold_after:
                    self.released.wait()
                client.sendall(data)
        _closed(client)
        _closed(upstream)


def _closed(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
    connection.close()


@pytest.fixture
def proxies() -> Iterator[Callable[..., Proxy]]:
    made: list[Proxy] = []

    def make(target: int, **limits: int) -> Proxy:
        made.append(Proxy(target, **limits))
        return made[-1]

    yield make
    for proxy in made:
        proxy.close()


def wait_until(condition: Callable[[], bool], what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"no {what} within {timeout} s"
        time.sleep(0.05)


# --- 1. a backlog, delivered ------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_a_backlog_reaches_rabbitmq_once_in_order_routed_by_class(kind, rabbitmq, tmp_path):
    db = make_sample_db(kind, tmp_path)
    try:
        rows = backlog(db)
        expected = directory_export(db, tmp_path / "folder")
        assert {first_class(d) for d in expected} == {"usr", "grp"}
        exchange = rabbitmq.exchange()
        every = rabbitmq.queue(exchange=exchange, binding="xds.#")
        by_class = {name: rabbitmq.queue(exchange=exchange, binding=f"xds.{name}") for name in ("usr", "grp")}

        run = export(db, rabbitmq.url(exchange=exchange, routing_key="xds.{class}"))

        assert run.returncode == 0, run.stderr
        assert db.statuses() == dict.fromkeys(range(1, rows + 1), "S")
        assert_delivered_as(rabbitmq.taken(every), expected)
        for name, queue in by_class.items():
            routed = rabbitmq.taken(queue)
            assert [d.document() for d in routed] == [d for d in expected if first_class(d) == name]
            assert {d.route for d in routed} == {f"xds.{name}"}
    finally:
        db.drop()


def test_a_backlog_reaches_jetstream_once_in_order_by_subject_of_its_class(sample_db, jetstream, tmp_path):
    rows = backlog(sample_db)
    expected = directory_export(sample_db, tmp_path / "folder")
    stream, prefix = jetstream.stream()
    lineage = tmp_path / "lineage.jsonl"

    run = export(sample_db, jetstream.url(stream, f"{prefix}.xds.{{class}}"), "--lineage", str(lineage))

    assert run.returncode == 0, run.stderr
    assert sample_db.statuses() == dict.fromkeys(range(1, rows + 1), "S")
    stored = jetstream.stored(stream)
    assert_delivered_as(stored, expected)
    assert [d.route for d in stored] == [f"{prefix}.xds.{first_class(d)}" for d in expected]
    # The lineage names each row's message and command (docs/delivery.md, Lineage).
    commands = {d.name: list(etree.fromstring(d.body).find("input")) for d in stored}
    lines = [json.loads(line) for line in lineage.read_text().splitlines()]
    assert [line["record_id"] for line in lines] == list(range(1, rows + 1))
    for line in lines:  # each row is a command of its own
        assert commands[line["document"]][line["command"] - 1].get("event-id") == str(line["record_id"])


@pytest.mark.parametrize("broker", ["rabbitmq", "nats"])
def test_rows_are_marked_only_once_the_broker_acknowledged_every_document(
    broker, sample_db, tmp_path, proxies, request
):
    """The broker's answers held back by the proxy: every document is in the queue or
    stream, and not one row is marked until the acknowledgements get through."""
    backlog(sample_db)
    expected = directory_export(sample_db, tmp_path / "folder")
    if broker == "rabbitmq":
        rabbitmq = request.getfixturevalue("rabbitmq")
        queue = rabbitmq.queue()
        proxy = proxies(5672, hold_after=4096)
        url = rabbitmq.url(proxy.address, routing_key=queue)
        held = partial(rabbitmq.count, queue)
    else:
        jetstream = request.getfixturevalue("jetstream")
        stream, prefix = jetstream.stream()
        proxy = proxies(4222, hold_after=4096)
        url = jetstream.url(stream, f"{prefix}.{{class}}", proxy.address)
        held = partial(jetstream.count, stream)
    process = subprocess.Popen(
        [sys.executable, "-m", "publisher", "export", "--db", sample_db.settings.db_url, "--out", url,
         "--batch-size", str(BATCH)],
        stderr=subprocess.PIPE,
    )
    try:
        wait_until(lambda: held() == len(expected), "document held by the broker")
        time.sleep(0.5)  # time enough to mark rows, if it did not wait
        assert process.poll() is None
        assert set(sample_db.statuses().values()) == {"N"}
    finally:
        proxy.release()
    assert process.wait(timeout=60) == 0, process.stderr.read().decode()
    assert set(sample_db.statuses().values()) == {"S"}


@pytest.mark.slow
def test_a_spark_cycle_delivers_the_documents_of_a_cycle_in_the_driver(sample_db, jetstream, tmp_path):
    rows = backlog(sample_db)
    expected = directory_export(sample_db, tmp_path / "folder")
    stream, prefix = jetstream.stream()

    run = export(sample_db, jetstream.url(stream, f"{prefix}.{{class}}"),
                 "--small-cycle-rows", "0", "--master", "local[2]")

    assert run.returncode == 0, run.stderr
    assert sample_db.statuses() == dict.fromkeys(range(1, rows + 1), "S")
    assert_delivered_as(jetstream.stored(stream), expected)


# --- 2. refusals ------------------------------------------------------------------------


def assert_refused(run: subprocess.CompletedProcess, db: SampleDb, why: str) -> None:
    assert run.returncode == 4, run.stderr
    assert why in run.stderr and "no row was marked" in run.stderr, run.stderr
    assert set(db.statuses().values()) == {"N"}


def test_a_rabbitmq_nack_fails_the_export_then_a_queue_with_room_takes_everything(
    sample_db, rabbitmq, tmp_path
):
    backlog(sample_db)
    expected = directory_export(sample_db, tmp_path / "folder")
    queue = rabbitmq.queue(**{"x-max-length": 2, "x-overflow": "reject-publish"})
    url = rabbitmq.url(routing_key=queue)  # the default exchange: straight to the queue

    assert_refused(export(sample_db, url), sample_db, f"the broker refused document {expected[2].name} (nack)")
    kept = rabbitmq.taken(queue)
    assert [d.document() for d in kept] == expected[:2]

    rabbitmq.channel.queue_delete(queue)
    rabbitmq.queue(queue)  # the same name, no limit
    run = export(sample_db, url)

    assert run.returncode == 0, run.stderr
    assert set(sample_db.statuses().values()) == {"S"}
    delivered = rabbitmq.taken(queue)
    assert_delivered_as(delivered, expected)
    # At least once: a consumer drops the refused run's documents by their message_id.
    assert [d.message_id for d in kept] == [d.message_id for d in delivered[:2]]


def test_an_unroutable_document_fails_the_export_then_a_bound_queue_takes_everything(
    sample_db, rabbitmq, tmp_path
):
    backlog(sample_db)
    expected = directory_export(sample_db, tmp_path / "folder")
    exchange = rabbitmq.exchange()  # no queue bound: mandatory messages come back
    url = rabbitmq.url(exchange=exchange, routing_key="xds.{class}")

    assert_refused(export(sample_db, url), sample_db, f"document {expected[0].name} was returned")

    queue = rabbitmq.queue(exchange=exchange, binding="xds.*")
    run = export(sample_db, url)

    assert run.returncode == 0, run.stderr
    assert set(sample_db.statuses().values()) == {"S"}
    assert_delivered_as(rabbitmq.taken(queue), expected)


def test_a_full_jetstream_stream_fails_the_export_then_with_room_holds_each_document_once(
    sample_db, jetstream, tmp_path
):
    backlog(sample_db)
    expected = directory_export(sample_db, tmp_path / "folder")
    stream, prefix = jetstream.stream(max_msgs=2, discard=DiscardPolicy.NEW)
    url = jetstream.url(stream, f"{prefix}.{{class}}")

    run = export(sample_db, url)
    assert_refused(run, sample_db, f"the stream refused document {expected[2].name}: maximum messages exceeded")
    assert [d.document() for d in jetstream.stored(stream)] == expected[:2]

    jetstream.update(stream, max_msgs=-1)
    run = export(sample_db, url)

    assert run.returncode == 0, run.stderr
    assert set(sample_db.statuses().values()) == {"S"}
    assert_delivered_as(jetstream.stored(stream), expected)  # the first two dropped as repeats


def test_a_document_refused_between_stored_ones_keeps_each_objects_order(sample_db, jetstream, tmp_path):
    sample_db.log(("idu=1", 1, "usr", "fname", None, "x" * 5000),  # too big for the stream
                  *((f"idu={i}", 1, "usr", "fname", None, "v") for i in range(2, 6)),
                  ("idu=1", 4, "usr"))  # in the next document, which the stream takes
    expected = directory_export(sample_db, tmp_path / "folder")
    stream, prefix = jetstream.stream(max_msg_size=2000)
    url = jetstream.url(stream, f"{prefix}.{{class}}")
    assert_refused(export(sample_db, url), sample_db, "message size exceeds maximum allowed")

    jetstream.update(stream, max_msg_size=-1)
    assert export(sample_db, url).returncode == 0

    assert by_object([d.document() for d in jetstream.stored(stream)]) == by_object(expected)


# --- 3. a broker that cannot be used: refused at start --------------------------------


@pytest.mark.parametrize("command", ["export", "poll"])
@pytest.mark.parametrize("scheme", ["amqp", "nats"])
def test_a_closed_port_exits_3_at_start_marking_nothing_and_creating_nothing(
    command, scheme, sample_db, tmp_path
):
    backlog(sample_db, users=2, groups=0)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    port = free_port()
    url = (f"amqp://guest:s3cret@127.0.0.1:{port}/%2F?routing_key=q" if scheme == "amqp"
           else f"nats://xdspub:s3cret@127.0.0.1:{port}/xds.x?stream=S")

    run = xdspub(command, "--db", sample_db.settings.db_url, "--out", url, "--interval", "1",
                 cwd=cwd) if command == "poll" else export(sample_db, url, cwd=cwd)

    assert run.returncode == 3, run.stderr
    assert f"cannot reach {'RabbitMQ' if scheme == 'amqp' else 'NATS'} at" in run.stderr
    assert ":***@127.0.0.1" in run.stderr and "s3cret" not in run.stderr
    assert set(sample_db.statuses().values()) == {"N"}
    assert list(cwd.iterdir()) == []


def test_a_wrong_rabbitmq_password_exits_3_and_is_never_shown(sample_db, rabbitmq, tmp_path):
    backlog(sample_db, users=2, groups=0)
    secret = f"wrong-{uuid.uuid4().hex}"

    run = export(sample_db, f"amqp://guest:{secret}@127.0.0.1:5672/%2F?routing_key={rabbitmq.queue()}")

    assert run.returncode == 3, run.stderr
    assert "ACCESS_REFUSED" in run.stderr and "amqp://guest:***@127.0.0.1:5672" in run.stderr
    assert secret not in run.stderr
    assert set(sample_db.statuses().values()) == {"N"}


def test_a_missing_exchange_or_stream_is_a_usage_error(sample_db, rabbitmq, jetstream):
    backlog(sample_db, users=2, groups=0)
    missing = f"xt-missing-{uuid.uuid4().hex[:10]}"

    to_exchange = export(sample_db, rabbitmq.url(exchange=missing, routing_key="xds"))
    to_stream = export(sample_db, jetstream.url(missing, "xds.x"))

    assert to_exchange.returncode == 2 and f"exchange {missing!r}: NOT_FOUND" in to_exchange.stderr
    assert to_stream.returncode == 2 and f"no stream {missing!r}" in to_stream.stderr
    assert set(sample_db.statuses().values()) == {"N"}


def test_any_other_scheme_is_a_usage_error_not_a_folder(sample_db, tmp_path):
    backlog(sample_db, users=2, groups=0)
    cwd = tmp_path / "cwd"
    cwd.mkdir()

    run = export(sample_db, "xyz://127.0.0.1:4299/x", cwd=cwd)

    assert run.returncode == 2, run.stderr
    assert "no broker for xyz://" in run.stderr
    assert list(cwd.iterdir()) == []  # no folder xyz:
    assert set(sample_db.statuses().values()) == {"N"}


# --- 4. a connection lost in the middle of a send ------------------------------------


@pytest.mark.parametrize("broker", ["rabbitmq", "nats"])
def test_a_connection_lost_mid_send_exits_4_then_an_export_delivers_everything(
    broker, sample_db, tmp_path, proxies, request
):
    backlog(sample_db)
    expected = directory_export(sample_db, tmp_path / "folder")
    cut_after = sum(len(d.body) for d in expected) // 2  # about half the documents' bytes
    if broker == "rabbitmq":
        rabbitmq = request.getfixturevalue("rabbitmq")
        queue = rabbitmq.queue()
        proxy = proxies(5672, cut_after=cut_after)
        through, direct = rabbitmq.url(proxy.address, routing_key=queue), rabbitmq.url(routing_key=queue)
        held = partial(rabbitmq.taken, queue)
    else:
        jetstream = request.getfixturevalue("jetstream")
        stream, prefix = jetstream.stream()
        proxy = proxies(4222, cut_after=cut_after)
        subject = f"{prefix}.{{class}}"
        through, direct = jetstream.url(stream, subject, proxy.address), jetstream.url(stream, subject)
        held = partial(jetstream.stored, stream)

    started = time.monotonic()
    assert_refused(export(sample_db, through), sample_db, "closed")
    assert time.monotonic() - started < 15, "the lost connection was noticed only by a timeout"
    assert proxy.cuts == 1
    if broker == "nats":
        sent_before = len(jetstream.stored(stream))
        assert 0 < sent_before < len(expected)

    run = export(sample_db, direct)

    assert run.returncode == 0, run.stderr
    assert set(sample_db.statuses().values()) == {"S"}
    delivered = held()
    if broker == "rabbitmq":  # at least once: the documents before the cut, then all
        repeated = len(delivered) - len(expected)
        assert 0 < repeated < len(expected)
        assert [d.document() for d in delivered[:repeated]] == expected[:repeated]
        delivered = delivered[repeated:]
    assert_delivered_as(delivered, expected)


# --- 5. kill -9 of the service, four times -------------------------------------------


def assert_marked_rows_were_delivered(db: SampleDb, stored: list[Delivered], why: str) -> None:
    """Each row marked is in a stored document (each row here is a command, its event-id)."""
    delivered = {int(c.get("event-id")) for d in stored for c in d.document().commands()}
    marked = {rid for rid, letter in db.statuses().items() if letter != "N"}
    assert marked <= delivered, f"{why}: marked without a document: {sorted(marked - delivered)[:10]}"


@pytest.mark.slow
def test_kill_9_of_the_service_four_times_loses_no_change_and_stores_no_duplicate(
    sample_db, jetstream, tmp_path, proxies
):
    rows = backlog(sample_db, users=300, groups=100)
    (tmp_path / "reference").mkdir()
    shutil.copyfile(tmp_path / "sample.db", tmp_path / "reference" / "sample.db")
    reference = make_sample_db("sqlite", tmp_path / "reference")
    expected = directory_export(reference, tmp_path / "folder")
    reference.drop()
    # The stream's duplicate window outlasts the test: a document sent again is dropped.
    stream, prefix = jetstream.stream(duplicate_window=600)
    subject = f"{prefix}.{{class}}"
    # Cycles of 16 rows, 8 documents: the same rows each time, so the same documents.
    extra = ("--query-limit", "16", "--batch-size", "2")
    documents = rows // 2

    # First, surely: killed with documents stored, their PubAcks held back (the sink sends
    # one at a time until one is stored, then the rest, docs/delivery.md, Brokers).
    proxy = proxies(4222, hold_after=1024)
    poll = Poll(sample_db, jetstream.url(stream, subject, proxy.address), tmp_path / "held.log", *extra)
    poll.wait_for(lambda: jetstream.count(stream) >= 1, "a cycle's first document stored")
    poll.kill()
    assert set(sample_db.statuses().values()) == {"N"}

    # Then four times at a random moment of the drain (its seed in every failure).
    seed = random.randrange(1 << 32)
    moments = random.Random(seed)
    for kill in range(4):
        poll = Poll(sample_db, jetstream.url(stream, subject), tmp_path / f"poll{kill}.log", *extra)
        poll.wait_log("lock acquired")
        time.sleep(moments.uniform(0, 0.6))
        poll.kill()
        assert_marked_rows_were_delivered(sample_db, jetstream.stored(stream), f"kill {kill}, seed {seed}")
    poll = Poll(sample_db, jetstream.url(stream, subject), tmp_path / "final.log", *extra)
    poll.wait_log("lock acquired")
    poll.wait_for(lambda: set(sample_db.statuses().values()) == {"S"}, "every row published")
    assert poll.terminate() == 0

    stored = jetstream.stored(stream)
    assert len({d.message_id for d in stored}) == len(stored), f"seed {seed}"
    assert len({(d.name, d.body) for d in stored}) == len(stored), f"seed {seed}"
    assert len(stored) == documents, f"seed {seed}"
    # Every change, each object's in the order of a directory export.
    assert by_object([d.document() for d in stored]) == by_object(expected), f"seed {seed}"


@pytest.mark.slow
def test_the_service_retries_a_lost_connection_and_resumes(sample_db, jetstream, tmp_path, proxies):
    rows = backlog(sample_db)
    expected = directory_export(sample_db, tmp_path / "folder")
    stream, prefix = jetstream.stream()
    proxy = proxies(4222, cut_after=sum(len(d.body) for d in expected) // 2)
    poll = Poll(sample_db, jetstream.url(stream, f"{prefix}.{{class}}", proxy.address),
                tmp_path / "poll.log", "--batch-size", str(BATCH))
    poll.wait_for(lambda: proxy.cuts >= 2, "two lost connections")
    assert set(sample_db.statuses().values()) == {"N"}
    proxy.cut_after = None  # the broker back

    poll.wait_for(lambda: set(sample_db.statuses().values()) == {"S"}, "every row published")
    assert poll.terminate() == 0
    log = poll.log()
    assert log.count("cycle failed") >= 2 and "the connection was closed" in log
    assert f"info cycle rows={rows}" in log
    assert_delivered_as(jetstream.stored(stream), expected)


# --- 6. xdspub consume ----------------------------------------------------------------


def consume(url: str, *extra: str) -> subprocess.CompletedProcess:
    run = xdspub("consume", url, "--wait", "1", *extra)
    assert run.returncode == 0, run.stderr
    return run


def stdout_of(documents: list[Document]) -> bytes:
    return b"".join(d.body if d.body.endswith(b"\n") else d.body + b"\n" for d in documents)


def test_consume_takes_documents_off_a_rabbitmq_queue_to_a_folder_or_stdout(sample_db, rabbitmq, tmp_path):
    backlog(sample_db)
    expected = directory_export(sample_db, tmp_path / "folder")
    queue = rabbitmq.queue()
    assert export(sample_db, rabbitmq.url(routing_key=queue)).returncode == 0
    url = rabbitmq.url(queue=queue)

    saved = consume(url, "--count", "10", "--out", str(tmp_path / "consumed"))
    printed = consume(url, "--count", "5")
    rest = consume(url)

    assert folder_documents(tmp_path / "consumed") == expected[:10]
    assert printed.stdout == stdout_of(expected[10:15])
    assert rest.stdout == stdout_of(expected[15:])
    assert f"xdspub: 10 documents read from amqp://guest:***@127.0.0.1:5672/%2F?queue={queue}" in saved.stderr
    assert rabbitmq.count(queue) == 0


def test_consume_reads_a_jetstream_stream_to_a_folder_or_stdout(sample_db, jetstream, tmp_path):
    backlog(sample_db)
    expected = directory_export(sample_db, tmp_path / "folder")
    stream, prefix = jetstream.stream()
    url = jetstream.url(stream, f"{prefix}.{{class}}")
    assert export(sample_db, url).returncode == 0

    consume(url, "--out", str(tmp_path / "consumed"))
    printed = consume(url, "--count", "5")
    grp_only = consume(jetstream.url(stream, f"{prefix}.grp"))

    assert folder_documents(tmp_path / "consumed") == expected
    assert printed.stdout == stdout_of(expected[:5])  # the stream keeps them
    assert grp_only.stdout == stdout_of([d for d in expected if first_class(d) == "grp"])
