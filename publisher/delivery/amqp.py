"""RabbitMQ (AMQP 0-9-1) through pika (docs/delivery.md, RabbitMQ):
``amqp://user:password@host:port/vhost?exchange=X&routing_key=K``.

Each document is a persistent message published with ``mandatory`` on a channel in
publisher-confirm mode: a message no queue takes comes back and fails the send, as does
a nack, ACK_TIMEOUT without a confirm, or a closed connection. Messages go out in order on
one channel, up to IN_FLIGHT unconfirmed, while confirms come back (pika's SelectConnection:
its blocking channel waits for each confirm in turn)."""

from __future__ import annotations

import ssl
import time
from collections import deque
from collections.abc import Iterator

import pika
import pika.exceptions
from pika.adapters.select_connection import SelectConnection

from publisher.delivery.broker import ACK_TIMEOUT, HEADER, IN_FLIGHT, BrokerSink, BrokerUrl, Message, Received
from publisher.errors import BrokerUnreachable, ConfigError, SinkError

_PARAMETERS = ("exchange", "routing_key", "queue")
_ROUTING_KEY_BYTES = 255


def _url(url: str, required: tuple[str, ...] = ()) -> BrokerUrl:
    return BrokerUrl.parse(url, _PARAMETERS, required)


def _connection_parameters(url: BrokerUrl) -> pika.ConnectionParameters:
    tls = url.scheme == "amqps"
    return pika.ConnectionParameters(
        host=url.host,
        port=url.port or (5671 if tls else 5672),
        virtual_host=url.path or "/",
        credentials=pika.PlainCredentials(url.user or "guest", url.password or "guest"),
        ssl_options=pika.SSLOptions(ssl.create_default_context(), url.host) if tls else None,
        connection_attempts=1,
        socket_timeout=5,
        stack_timeout=10,
        blocked_connection_timeout=ACK_TIMEOUT,
    )


def _blocking(url: BrokerUrl) -> pika.BlockingConnection:
    try:
        return pika.BlockingConnection(_connection_parameters(url))
    except pika.exceptions.AMQPError as exc:
        raise BrokerUnreachable(f"cannot reach RabbitMQ at {url.shown}: {_reason(exc)}") from None


def _reason(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


class Sink(BrokerSink):
    """Documents published to an exchange (the default one when none is named)."""

    def __init__(self, url: str, batch_size: int) -> None:
        super().__init__(batch_size)
        self.url = _url(url, ("routing_key",))
        self.exchange = self.url.params.get("exchange", "")
        self.routing_key = self.url.params["routing_key"]
        self.parameters = _connection_parameters(self.url)
        connection = _blocking(self.url)
        try:
            if self.exchange:
                connection.channel().exchange_declare(self.exchange, passive=True)
        except pika.exceptions.ChannelClosedByBroker as exc:
            raise ConfigError(f"--out {self.url.shown}: exchange {self.exchange!r}: {exc.reply_text}") from None
        finally:
            if connection.is_open:
                connection.close()

    def send(self, messages: Iterator[Message]) -> int:
        return _Confirmed(self, messages).run()

    def routing_key_of(self, message: Message) -> str:
        key = message.routed(self.routing_key)
        if len(key.encode()) > _ROUTING_KEY_BYTES:
            raise SinkError(f"the routing key for document {message.name} is longer than {_ROUTING_KEY_BYTES} bytes")
        return key


class _Confirmed:
    """One send on a connection of its own: messages published in order, at most IN_FLIGHT
    unconfirmed, until each is confirmed; the first failure closes the connection."""

    def __init__(self, sink: Sink, messages: Iterator[Message]) -> None:
        self.sink, self.messages = sink, messages
        self.unconfirmed: deque[tuple[int, str]] = deque()  # delivery tag, document name
        self.sent = 0
        self.failure: str | None = None
        self.finished = False
        self.exhausted = False
        self.progress = time.monotonic()

    def run(self) -> int:
        self.connection = SelectConnection(
            self.sink.parameters,
            on_open_callback=lambda connection: connection.channel(on_open_callback=self._channel_open),
            on_open_error_callback=lambda _connection, error: self._fail(f"cannot connect: {_reason(error)}"),
            on_close_callback=self._closed,
        )
        self.connection.ioloop.start()
        if self.failure is not None:
            raise SinkError(f"RabbitMQ at {self.sink.url.shown}: {self.failure}; no row was marked")
        return self.sent

    def _channel_open(self, channel) -> None:
        self.channel = channel
        channel.add_on_close_callback(lambda _channel, reason: self._fail(f"the channel was closed: {reason}"))
        channel.add_on_return_callback(self._returned)
        channel.confirm_delivery(self._confirmed, callback=lambda _frame: self._send_more())
        self._watch()

    def _send_more(self) -> None:
        try:
            while not self.exhausted and len(self.unconfirmed) < IN_FLIGHT and self.failure is None:
                message = next(self.messages, None)
                if message is None:
                    self.exhausted = True
                    break
                properties = pika.BasicProperties(
                    content_type="application/xml",
                    delivery_mode=pika.DeliveryMode.Persistent,
                    message_id=message.message_id,
                    headers=message.headers(),
                )
                self.channel.basic_publish(self.sink.exchange, self.sink.routing_key_of(message), message.body,
                                           properties, mandatory=True)
                self.sent += 1
                self.unconfirmed.append((self.sent, message.name))
        except Exception as exc:  # the documents' reading, or the channel: the send fails
            self._fail(_reason(exc))
            return
        if self.exhausted and not self.unconfirmed and self.failure is None:
            self.finished = True
            self.connection.close()

    def _confirmed(self, frame) -> None:
        method = frame.method
        if isinstance(method, pika.spec.Basic.Nack):
            names = [name for tag, name in self.unconfirmed
                     if tag == method.delivery_tag or (method.multiple and tag <= method.delivery_tag)]
            self._fail(f"the broker refused document {names[0] if names else method.delivery_tag} (nack)")
            return
        if method.multiple:
            while self.unconfirmed and self.unconfirmed[0][0] <= method.delivery_tag:
                self.unconfirmed.popleft()
        elif self.unconfirmed and self.unconfirmed[0][0] == method.delivery_tag:
            self.unconfirmed.popleft()
        else:  # a confirm out of order
            self.unconfirmed = deque(p for p in self.unconfirmed if p[0] != method.delivery_tag)
        self.progress = time.monotonic()
        self._send_more()

    def _returned(self, _channel, method, properties, _body) -> None:
        name = (properties.headers or {}).get(HEADER + "Document", "?")
        self._fail(f"document {name} was returned: {method.reply_text} (exchange {method.exchange!r}, "
                   f"routing key {method.routing_key!r}): no queue is bound for it")

    def _watch(self) -> None:
        if self.failure is not None or self.finished:
            return
        if self.unconfirmed and time.monotonic() - self.progress > ACK_TIMEOUT:
            self._fail(f"no confirm for {ACK_TIMEOUT:.0f} s")
            return
        self.connection.ioloop.call_later(1, self._watch)

    def _fail(self, why: str) -> None:
        if self.finished:  # the channel's and connection's own closing, after the last confirm
            return
        if self.failure is None:
            self.failure = why
        if self.connection.is_open:
            self.connection.close()
        elif not self.connection.is_closing:
            self.connection.ioloop.stop()

    def _closed(self, connection, reason) -> None:
        if not self.finished and self.failure is None:
            self.failure = f"the connection was closed: {reason}"
        connection.ioloop.stop()


def received(url: str, count: int | None, wait: float) -> Iterator[Received]:
    """``xdspub consume``: the queue's messages (``queue=``, or the routing key on the
    default exchange), each acknowledged once the caller has taken it."""
    parsed = _url(url)
    queue = parsed.params.get("queue") or (parsed.params.get("routing_key") if not parsed.params.get("exchange") else None)
    if not queue:
        raise ConfigError(f"{parsed.shown}: queue= is needed to read messages")
    connection = _blocking(parsed)
    try:
        channel = connection.channel()
        channel.basic_qos(prefetch_count=100)
        taken = 0
        for method, properties, body in channel.consume(queue, inactivity_timeout=wait):
            if method is None:
                break
            headers = {k: str(v) for k, v in (properties.headers or {}).items()}
            yield Received(headers.get(HEADER + "Document", properties.message_id or "message"), body, headers)
            channel.basic_ack(method.delivery_tag)
            taken += 1
            if count is not None and taken >= count:
                break
        channel.cancel()
    except pika.exceptions.ChannelClosedByBroker as exc:
        raise ConfigError(f"{parsed.shown}: queue {queue!r}: {exc.reply_text}") from None
    finally:
        if connection.is_open:
            connection.close()
