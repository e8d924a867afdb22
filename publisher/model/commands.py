"""The XDS commands reduction hands to rendering (docs/rendering.md): typed, so that the
renderer reads fields, not string keys."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from grammar import format_table_key
from publisher.model.catalogue import Table
from publisher.model.value_text import key_text


class CommandKind(StrEnum):
    """The command an event type makes (docs/event-types.md); also its skeleton's name
    in xds_templates/."""

    ADD = "add"
    MODIFY = "modify"
    DELETE = "delete"


class AttrOp(StrEnum):
    """How an attribute's values change (docs/rendering.md)."""

    ADD = "add"  # type 1: add-attr, or add-value in a modify
    MODIFY = "modify"  # type 2: remove-value of the old value, then add-value of the new
    REPLACE = "replace"  # type 3 and query-back: remove-all-values, then add-value


@dataclass(frozen=True, slots=True)
class Attr:
    """One change of an attribute: ``old`` is removed (MODIFY only), ``new`` added. The
    changes of one multi-valued attribute in a command share one element
    (docs/classes.md, Child tables)."""

    op: AttrOp
    name: str
    xds_type: str
    old: str | None
    new: tuple[str, ...]  # a single value's, or a multi-valued query-back's every value
    multi_valued: bool = False


@dataclass(frozen=True, slots=True)
class Command:
    """One add, modify or delete of an object, placed at its first event: ``event_id`` is
    that event's record_id and ``ord_time`` its time order (0 without future events)."""

    kind: CommandKind
    class_name: str
    event_id: int
    association: str
    attrs: tuple[Attr, ...] = ()
    ord_time: float = 0.0
    # A triggerless cycle's read time, with future events (docs/triggerless.md, Future
    # events): the jdbc:database-local-time attribute.
    local_time: str | None = None


def association(canonical_key: str, class_name: str, schema: str) -> str:
    """An object's association (docs/rendering.md, Association)."""
    return f"{canonical_key},table={class_name},schema={schema}"


def reference_text(value: str | bytes, target: Table, schema: str) -> str:
    """A reference's text: the association of the object of ``target`` whose one key
    column holds ``value`` (docs/classes.md, References). InvalidValue when the value is
    not a key of its type."""
    (key_name,) = target.key_columns
    key = target.column(key_name)
    canonical = format_table_key([(key_name, key_text(value, key.xds_type, key.is_char))])
    return association(canonical, target.name, schema)
