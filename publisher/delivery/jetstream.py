"""NATS JetStream through nats-py (docs/delivery.md, NATS JetStream):
``nats://user:password@host:port/SUBJECT?stream=S``.

Each document is a message to the subject, stored by the stream that takes it, and counts
as delivered once the stream's PubAck for it has come back. The messages go out in order on
one connection, each with a reply subject of its own, up to IN_FLIGHT without a PubAck;
each carries ``Nats-Msg-Id`` (Message.message_id), so the stream drops a document sent
again within its duplicate window (after a crash between sending and marking)."""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Iterator

import nats
import nats.errors
import nats.js.errors
from nats.js.api import DeliverPolicy

from publisher.delivery.broker import ACK_TIMEOUT, HEADER, IN_FLIGHT, BrokerSink, BrokerUrl, Message, Received
from publisher.errors import BrokerUnreachable, ConfigError, SinkError

_PARAMETERS = ("stream",)
_WRONG_LAST_MSG_ID = 10071  # JetStream's error code: Nats-Expected-Last-Msg-Id not met
# What a subject token cannot hold: a class name's such characters become _ in {class}.
_NOT_IN_TOKEN = re.compile(r"[\s.*>]")


def subject_token(text: str) -> str:
    return _NOT_IN_TOKEN.sub("_", text) or "_"


def _url(url: str) -> BrokerUrl:
    parsed = BrokerUrl.parse(url, _PARAMETERS, ("stream",))
    if not parsed.path or any(not token for token in parsed.path.split(".")):
        raise ConfigError(f"--out {parsed.shown}: the path names the subject (nats://host:4222/SUBJECT?stream=S)")
    return parsed


async def _connect(url: BrokerUrl):
    server = f"nats://{url.host}:{url.port or 4222}"
    try:
        return await nats.connect(server, user=url.user, password=url.password, connect_timeout=5,
                                  allow_reconnect=False, max_reconnect_attempts=1,  # 0: without end
                                  error_cb=_quiet, disconnected_cb=_quiet, closed_cb=_quiet)
    except (OSError, asyncio.TimeoutError, nats.errors.Error) as exc:
        raise BrokerUnreachable(f"cannot reach NATS at {url.shown}: {_reason(exc)}") from None


async def _quiet(*_args: object) -> None:
    """nats-py logs each error through these otherwise; the send reports its own."""


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


async def _stream_checked(connection, url: BrokerUrl) -> None:
    try:
        await connection.jetstream().stream_info(url.params["stream"])
    except nats.js.errors.NotFoundError:
        raise ConfigError(f"--out {url.shown}: no stream {url.params['stream']!r} (docs/delivery.md, NATS JetStream)") from None
    except nats.errors.Error as exc:
        raise BrokerUnreachable(f"NATS at {url.shown}: JetStream did not answer: {_reason(exc)}") from None


class Sink(BrokerSink):
    """Documents published to a subject that a JetStream stream takes."""

    def __init__(self, url: str, batch_size: int) -> None:
        super().__init__(batch_size)
        self.url = _url(url)
        asyncio.run(self._check())

    async def _check(self) -> None:
        connection = await _connect(self.url)
        try:
            await _stream_checked(connection, self.url)
        finally:
            await connection.close()

    def send(self, messages: Iterator[Message]) -> int:
        try:
            return asyncio.run(self._send(messages))
        except BrokerUnreachable as exc:
            raise SinkError(f"{exc}; no row was marked") from None

    async def _send(self, messages: Iterator[Message]) -> int:
        connection = await _connect(self.url)
        try:
            return await _Acknowledged(connection, self.url).send(messages)
        finally:
            await connection.close()


class _Acknowledged:
    """One send: messages published in order, each with its own reply subject, at most
    IN_FLIGHT without their PubAck; the first failure ends it.

    Order across a refusal: once one message of the send is stored, each next one asks
    the stream to store it only after the one before it (``Nats-Expected-Last-Msg-Id``),
    so a message the stream refuses stops every later one, and a retry stores them in
    order. Until then (the messages a retry sends again, each dropped as a repeat) they go
    one at a time: the stream's last message is not known to be the one before."""

    def __init__(self, connection, url: BrokerUrl) -> None:
        self.connection, self.url = connection, url
        self.waiting: dict[int, str] = {}  # message number: document name
        self.stored = False  # a message of this send was stored, not dropped as a repeat
        self.failure: str | None = None
        self.changed = asyncio.Event()  # a PubAck came, or a failure
        self.progress = time.monotonic()

    async def send(self, messages: Iterator[Message]) -> int:
        inbox = self.connection.new_inbox()
        await self.connection.subscribe(f"{inbox}.*", cb=self._acknowledged)
        sent, previous = 0, None
        try:
            for message in messages:
                await self._room(IN_FLIGHT - 1 if self.stored else 0)
                if self.failure is not None:
                    break
                self.waiting[sent] = message.name
                headers = {"Nats-Msg-Id": message.message_id, "Content-Type": "application/xml", **message.headers()}
                if self.stored:
                    headers["Nats-Expected-Last-Msg-Id"] = previous
                try:
                    await self.connection.publish(message.routed(self.url.path, subject_token), message.body,
                                                  reply=f"{inbox}.{sent}", headers=headers)
                except nats.errors.MaxPayloadError:
                    self._fail(f"document {message.name} is {len(message.body):,} bytes, more than the "
                               f"server's max_payload ({self.connection.max_payload:,}): a smaller --batch-size")
                    break
                sent, previous = sent + 1, message.message_id
            # Every PubAck, not nats-py's flush: its PONG is not failed when the connection
            # is lost, so it would wait out its timeout.
            await self._room(0)
        except (nats.errors.Error, OSError, asyncio.TimeoutError) as exc:
            self._fail(_reason(exc))
        if self.failure is not None:
            raise SinkError(f"NATS at {self.url.shown}: {self.failure}; no row was marked")
        return sent

    async def _room(self, most: int) -> None:
        """Until at most ``most`` messages wait for their PubAck, or a failure."""
        while len(self.waiting) > most and self.failure is None:
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), timeout=1)
            except asyncio.TimeoutError:
                if self.connection.is_closed:
                    self._fail("the connection was closed")
                elif time.monotonic() - self.progress > ACK_TIMEOUT:
                    self._fail(f"no PubAck for {ACK_TIMEOUT:.0f} s")

    async def _acknowledged(self, reply) -> None:
        number = int(reply.subject.rsplit(".", 1)[1])
        name = self.waiting.pop(number, None)
        if name is None:
            return
        self.progress = time.monotonic()
        status = (reply.headers or {}).get("Status")
        if status == "503":
            self._fail(f"no stream takes the subject of document {name} (no responders)")
        else:
            try:
                answer = json.loads(reply.data)
            except ValueError:
                answer = {"error": {"description": f"an answer that is not a PubAck: {reply.data[:80]!r}"}}
            if "error" in answer:
                error = answer["error"]
                why = error.get("description")
                if error.get("err_code") == _WRONG_LAST_MSG_ID:
                    why = f"{why} (the document before it was not stored, or another publisher writes to the stream)"
                self._fail(f"the stream refused document {name}: {why}")
            elif not answer.get("duplicate"):
                self.stored = True
        self.changed.set()

    def _fail(self, why: str) -> None:
        if self.failure is None:
            self.failure = why
        self.changed.set()


def received(url: str, count: int | None, wait: float) -> Iterator[Received]:
    """``xdspub consume``: the stream's messages on the subject (``{class}`` as any), from
    the first, in order; the stream keeps them."""
    parsed = _url(url)
    return iter(asyncio.run(_received(parsed, count, wait)))


async def _received(url: BrokerUrl, count: int | None, wait: float) -> list[Received]:
    connection = await _connect(url)
    taken: list[Received] = []
    try:
        await _stream_checked(connection, url)
        subject = url.path.replace("{class}", "*")
        subscription = await connection.jetstream().subscribe(
            subject, stream=url.params["stream"], ordered_consumer=True, deliver_policy=DeliverPolicy.ALL
        )
        while count is None or len(taken) < count:
            try:
                message = await subscription.next_msg(timeout=wait)
            except nats.errors.TimeoutError:
                break
            headers = dict(message.headers or {})
            taken.append(Received(headers.get(HEADER + "Document", "message"), message.data, headers))
        await subscription.unsubscribe()
    finally:
        await connection.close()
    return taken
