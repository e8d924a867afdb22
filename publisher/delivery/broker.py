"""Documents delivered to a message broker (docs/delivery.md, Brokers): each document one
message, sent in publication order; ``publish`` returns only once the broker has
acknowledged every message, so a cycle marks rows only for documents the broker holds,
and any failure (a refusal, a timeout, a lost connection) is a SinkError: nothing marked.

A broker is a module with a ``Sink`` class (BrokerSink's ``send``) and ``received``, named
here by URL scheme: a Kafka sink is one more module and one more line in SCHEMES."""

from __future__ import annotations

import hashlib
import html
import importlib
import re
import tempfile
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlsplit, urlunsplit

from publisher.delivery.documents import document_bytes
from publisher.delivery.lineage import Documents, batched_documents
from publisher.delivery.ordered import OrderedCommands
from publisher.errors import ConfigError
from publisher.render.xds import heartbeat_xml

SCHEMES = {  # URL scheme: the module of its broker
    "amqp": "publisher.delivery.amqp",
    "amqps": "publisher.delivery.amqp",
    "nats": "publisher.delivery.jetstream",
}
# Seconds a send may wait for the broker without any acknowledgement before it fails.
ACK_TIMEOUT = 30.0
# Messages sent and not yet acknowledged, at most: the broker's acknowledgements come back
# while the next ones go, and a burst of small documents is not a round trip each.
IN_FLIGHT = 1000
HEADER = "Xdspub-"  # the prefix of the headers each message carries
_CLASS = re.compile(rb'^\s*<\w+ [^>]*?class-name="([^"]*)"')
_ASSOCIATION = re.compile(rb"<association>([^<]*)</association>")
_DOCUMENT_NAME = re.compile(r"[0-9]{20}\.xml|heartbeat\.xml")


@dataclass(frozen=True)
class Message:
    """One document as a message: its name (the directory sink's file name), its bytes,
    and what a consumer may route or filter by."""

    name: str
    body: bytes
    commands: int
    class_name: str | None = None  # of the first command
    association: str | None = None  # of the first command
    unique: str | None = None  # heartbeats: each its own id

    @property
    def message_id(self) -> str:
        """The name and a digest of the bytes: the same document sent again has the same id
        (a broker that drops repeats drops it); a document of the same name whose commands
        changed since (rows that came in between, reduced into it) has another."""
        return self.unique or f"{self.name.removesuffix('.xml')}-{hashlib.blake2b(self.body, digest_size=8).hexdigest()}"

    def headers(self) -> dict[str, str]:
        pairs = {"Document": self.name, "Commands": str(self.commands), "Class": self.class_name,
                 "Association": self.association}
        return {HEADER + key: value for key, value in pairs.items() if value is not None}

    def routed(self, template: str, safe=lambda text: text) -> str:
        """``template`` with ``{class}`` as the first command's class (``safe`` of it)."""
        return template.replace("{class}", safe(self.class_name or "heartbeat"))


def messages(commands: OrderedCommands, batch_size: int) -> Iterator[Message]:
    """The documents of ``commands``, ``batch_size`` commands each, in order, as messages
    (OrderedCommands.batched)."""
    for name, xml in commands.batched(batch_size):
        first = xml[0]
        found_class, found_association = _CLASS.search(first), _ASSOCIATION.search(first)
        yield Message(
            name,
            document_bytes(xml),
            len(xml),
            _text(found_class),
            _text(found_association),
        )


def heartbeat_message() -> Message:
    body = document_bytes([heartbeat_xml()])
    return Message("heartbeat.xml", body, 0, unique=f"heartbeat-{time.time_ns()}")


def _text(found: re.Match | None) -> str | None:
    return html.unescape(found.group(1).decode()) if found else None


def masked(url: str) -> str:
    """``url`` with its password as ***: what messages and logs show."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


@dataclass(frozen=True)
class BrokerUrl:
    """A broker URL taken apart: the query's parameters checked against those its broker
    knows (a misspelt one is an error, not ignored)."""

    scheme: str
    host: str
    port: int | None
    user: str | None
    password: str | None
    path: str  # unquoted, without its leading /
    params: dict[str, str]
    shown: str  # the URL with its password masked

    @classmethod
    def parse(cls, url: str, known: Iterable[str], required: Iterable[str] = ()) -> BrokerUrl:
        shown = masked(url)
        try:
            parts = urlsplit(url)
            port = parts.port
        except ValueError as exc:
            raise ConfigError(f"--out {shown}: {exc}") from None
        params = dict(parse_qsl(parts.query, keep_blank_values=True))
        unknown = sorted(set(params) - set(known))
        if unknown:
            raise ConfigError(f"--out {shown}: unknown parameter {', '.join(unknown)} "
                              f"(known: {', '.join(sorted(known))})")
        missing = [name for name in required if not params.get(name)]
        if missing:
            raise ConfigError(f"--out {shown}: {', '.join(missing)}= is needed")
        if not parts.hostname:
            raise ConfigError(f"--out {shown}: no host")
        return cls(parts.scheme.lower(), parts.hostname, port,
                   unquote(parts.username) if parts.username else None,
                   unquote(parts.password) if parts.password is not None else None,
                   unquote(parts.path[1:]), params, shown)


class BrokerSink:
    """A broker's sink: the documents as messages, sent by ``send``, which returns once the
    broker has acknowledged each (SinkError otherwise)."""

    # Spark's spills go to the temporary folder: a broker has no folder beside it.
    work_parent = Path(tempfile.gettempdir())

    def __init__(self, batch_size: int) -> None:
        self.batch_size = batch_size

    def publish(self, commands: OrderedCommands) -> int:
        return self.send(messages(commands, self.batch_size))

    def documents(self, commands: OrderedCommands) -> Documents:
        return batched_documents(commands.ids_in_order(), self.batch_size)

    def heartbeat(self) -> None:
        self.send(iter([heartbeat_message()]))

    def send(self, messages: Iterator[Message]) -> int:
        """Every message, in order, acknowledged; how many."""
        raise NotImplementedError


@dataclass(frozen=True)
class Received:
    """A message read back (``xdspub consume``): its document's name, bytes and headers."""

    name: str
    body: bytes
    headers: dict[str, str]

    def file_name(self, number: int) -> str:
        """The name to save it under: its document's, when it is one xdspub gives (a name
        from the broker is never a path), else by its place in the reading."""
        return self.name if _DOCUMENT_NAME.fullmatch(self.name) else f"message-{number:08d}.xml"


def _module(url: str):
    scheme = url.split("://", 1)[0].lower()
    if scheme not in SCHEMES:
        raise ConfigError(
            f"--out {masked(url)}: no broker for {scheme}:// (a file.xml, a folder, -, "
            f"or {', '.join(f'{s}://' for s in SCHEMES)})"
        )
    return importlib.import_module(SCHEMES[scheme])


def broker_sink(url: str, batch_size: int) -> BrokerSink:
    """The sink of broker ``url``, checked: the broker reached (BrokerUnreachable, exit 3)
    and the exchange or stream there (ConfigError, exit 2)."""
    return _module(url).Sink(url, batch_size)


def received(url: str, count: int | None, wait: float) -> Iterator[Received]:
    """The messages at ``url`` (its queue or stream), in order: ``count`` of them at most,
    until none came for ``wait`` seconds."""
    return _module(url).received(url, count, wait)
