"""Names that reach SQL (docs/triggers.md, Names): each one quoted by the database's own
identifier preparer, and refused when it holds a control character; and the names xdspub
derives from a table's (its triggers, the event log's indexes and lock), kept within the
database's identifier length."""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import sqlalchemy as sa

from publisher.errors import ConfigError
from publisher.model.statuses import unsafe_position
from publisher.source.dialects import Dialect

_HASH_DIGITS = 8  # of the full name's SHA-256, in a name too long for the database


class UnsafeName(ConfigError):
    """A name xdspub writes into no SQL: one holding a control character, which a printed
    script would show as something else (a line break ends an SQL comment)."""


def checked(what: str, name: str) -> str:
    """``name``, or UnsafeName naming ``what`` (e.g. ``table 'usr'``) and the name, escaped.
    Refused: what a reason escapes (model/statuses.py), control characters and the
    characters that change how a printed line reads (separators, bidirectional overrides)."""
    position = unsafe_position(name)
    if position is not None:
        raise UnsafeName(
            f"{what} {name!r}: the name holds a control character (U+{ord(name[position - 1]):04X} "
            f"at position {position}); xdspub writes no such name into SQL"
        )
    return name


def sql_quote(engine: sa.Engine) -> Callable[[str], str]:
    """The engine's identifier preparer's quoting, for SQL sent as written (scripts, printed
    DDL, statements without parameters): the preparer doubles each ``%`` for a driver that
    reads ``%s`` as a parameter, which SQL without parameters must not."""
    preparer = engine.dialect.identifier_preparer
    if not getattr(preparer, "_double_percents", False):
        return preparer.quote
    return lambda name: preparer.quote(name).replace("%%", "%")


def quoted(engine: sa.Engine, what: str, name: str) -> str:
    """``name`` checked, then quoted as ``sql_quote`` does."""
    return sql_quote(engine)(checked(what, name))


def derived_name(base: str, suffix: str, limit: int | None) -> str:
    """``base`` + ``suffix``; when that is longer than ``limit`` bytes of UTF-8, the longest
    prefix of ``base`` that fits before ``_``, 8 hex digits of the full name's SHA-256 and
    ``suffix``: still readable, within the database's limit, and distinct for distinct full
    names (a database that cuts a long name instead would make the names of one table's
    triggers one name)."""
    full = base + suffix
    if limit is None or len(full.encode()) <= limit:
        return full
    tail = f"_{hashlib.sha256(full.encode()).hexdigest()[:_HASH_DIGITS]}{suffix}"
    return cut_name(base, limit - len(tail.encode())) + tail


def cut_name(name: str, limit: int) -> str:
    """The longest start of ``name`` within ``limit`` bytes of UTF-8, cut between
    characters: what PostgreSQL makes of a longer name."""
    return name.encode()[:limit].decode("utf-8", "ignore")


def lock_table_name(dialect: Dialect, log_table: str) -> str:
    """The table beside the event log whose lock is the publisher lock (outcome/lock.py),
    made by init-db (docs/delivery.md, One publisher per event log)."""
    return derived_name(log_table, "_lock", dialect.identifier_bytes)


def resync_table_name(dialect: Dialect, log_table: str) -> str:
    """The table beside the event log where ``xdspub resync`` records how far it got
    (docs/initial-load.md, Resuming)."""
    return derived_name(log_table, "_resync", dialect.identifier_bytes)
