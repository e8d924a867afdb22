"""The rules of PUBLISHER.md section 4 in plain Python: what a log row is (its event, or why
it cannot be published), and how one object's events reduce to commands.

The Spark cycle runs them in the executors, one object at a time after a shuffle by object;
the row-at-a-time publisher of bench/ runs them in a loop. Both take the current row of a
query-back event from their own read, so they differ in how rows travel, never in what a
row means."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from grammar import TableKeyError, format_table_key, parse_table_key
from publisher.model import events as ev
from publisher.model import values
from publisher.model.catalogue import Catalogue, Column, Table

TRUE_WORDS = ("1", "true", "t", "y", "yes", "on")
FALSE_WORDS = ("0", "false", "f", "n", "no", "off")
# \Z, not $: a trailing newline is not part of a number.
DIGITS = re.compile(r"^-?[0-9]+\Z")
KEY_INT = re.compile(r"^-?[0-9]{1,19}\Z")
BIGINT = range(-(2**63), 2**63)  # an integer key's values: query-back matches them as such
TYPE_TEXT = re.compile(r"^[0-9]{1,9}\Z")
Cell = tuple[str, str, "str | None"]  # (column, xds_type, text) of a row read back
KeyPairs = list[tuple[str, str]]
# A query-back's read: the current row's non-key cells (None: vanished) and each bad
# cell's error, by column.
ReadBack = Callable[[], tuple["list[Cell] | None", dict[str, str]]]


@dataclass(slots=True)
class Event:
    record_id: int
    type: int
    column: str | None
    xds_type: str | None  # the column's
    old: str | None  # log values as XDS text: a type 2's old, a type 1-3's new
    new: str | None
    warning: str | None  # the table_key was not canonical
    key: str = ""  # the canonical table_key
    ord_time: float = 0.0  # processing order is (ord_time, record_id)
    error: str | None = None  # the row read back cannot be published
    superseded: bool = False
    cells: list[Cell] | None = None  # query-back: the row read back (None: vanished, or not read)


class Rejected(Exception):
    """A row that cannot become XDS: status E, with this reason."""


def log_text(raw: str, column: Column) -> str:
    """A value of the log as XDS text for its column; ValueError when not valid for it."""
    trimmed, kind = raw.strip(" "), column.xds_type
    if kind == values.INT and DIGITS.search(trimmed):
        return trimmed
    if kind == values.STATE and trimmed.lower() in TRUE_WORDS + FALSE_WORDS:
        return "true" if trimmed.lower() in TRUE_WORDS else "false"
    if kind == values.TIME:
        if DIGITS.search(trimmed):
            return trimmed
        return str(values.epoch_seconds(trimmed))  # time of day, or ISO date-time
    if kind in (values.INT, values.STATE):
        raise ValueError(raw)
    return raw.rstrip(" ") if column.is_char else raw


def _forbidden(name: str, text: object) -> None:
    if text is not None and (position := values.forbidden_position(str(text))):
        raise Rejected(f"{name} has a character XML 1.0 cannot carry at position {position}")


class Classifier:
    """What a log row is: ``classifier(row)`` gives its event and key pairs, or raises
    Rejected with the first reason (the order of the checks is the order of the reasons).
    No cache of keys: in a record_id range each object recurs too seldom to pay for one."""

    def __init__(self, catalogue: Catalogue) -> None:
        self.catalogue = catalogue

    def __call__(self, row: Mapping[str, Any]) -> tuple[Event, KeyPairs]:
        raw_type = row["event_type"]
        if raw_type is None:
            raise Rejected("event_type is NULL")
        text = str(raw_type).strip(" ")
        t = int(text) if TYPE_TEXT.search(text) else None
        if t not in ev.KNOWN:
            raise Rejected(f"unknown event_type {raw_type}")
        for name in ("table_name", "table_key"):
            if row[name] is None:
                raise Rejected(f"{name} is NULL")
        for name in ("table_key", "table_name", "column_name"):
            _forbidden(name, row[name])
        table_key, table_name, column_name = row["table_key"], row["table_name"], row["column_name"]
        table, pairs, canonical = self._checked_key(table_name, table_key)
        column = table.column(column_name) if column_name is not None else None
        if t in ev.PER_FIELD and column_name is None:
            raise Rejected(f"column_name is NULL for per-field event_type {t}")
        if t in ev.PER_FIELD and column is None:
            raise Rejected(f"column {column_name} is not in table {table_name}")
        texts: dict[str, str | None] = {"old_value": None, "new_value": None}
        for name, rendered in (("old_value", t == 2), ("new_value", t in ev.FIELD_NON_QUERY_BACK)):
            raw = row[name]
            if not rendered or raw is None:
                continue
            _forbidden(name, raw)
            try:
                texts[name] = log_text(str(raw), column)
            except ValueError:
                raise Rejected(f"{name} {raw} is not a valid {column.xds_type} value") from None
        warning = None
        if canonical != table_key:
            warning = f"table_key {table_key} is not canonical; published as {canonical}"
        xds_type = column.xds_type if column is not None else None
        event = Event(row["record_id"], t, column_name, xds_type, *texts.values(), warning, canonical)
        return event, pairs

    def _checked_key(self, table_name: str, table_key: str) -> tuple[Table, KeyPairs, str]:
        """The table, the key's pairs and its canonical text; Rejected if the key is bad."""
        try:
            pairs = parse_table_key(table_key)
        except TableKeyError as exc:
            raise Rejected(f"malformed table_key: {exc}") from None
        table = self.catalogue.tables.get(table_name)
        if table is None:
            raise Rejected(
                f"table {table_name} is not in the published schema {self.catalogue.schema}"
            )
        if any(table.column(c) is None for c, _ in pairs):
            raise Rejected(f"a table_key column is not a column of {table_name}")
        for c, v in pairs:
            if table.column(c).xds_type != values.INT:
                continue
            if not KEY_INT.search(v):
                raise Rejected(f"table_key value {v} of {c} is not an integer")
            if int(v) not in BIGINT:
                raise Rejected(f"table_key value {v} of {c} is not a 64-bit integer")
        return table, pairs, format_table_key(pairs)


def reduce_object(
    events: list[Event], read: ReadBack, statuses: dict[int, tuple[str, str | None]]
) -> list[tuple[str, list[Event]]]:
    """Precedence (section 4) over one object's live events, in processing order: every
    event's status into ``statuses``, and the runs of one command kind that remain."""
    deletes = [i for i, e in enumerate(events) if e.type == ev.EventType.DELETE_ROW]
    after_last_delete = events[deletes[-1] + 1 :] if deletes else events
    effective = []  # query-back events before a delete have no effect, and are not read
    for e in after_last_delete:
        if e.type in ev.QUERY_BACK:
            e.cells, errors = read()
            whole_row = e.type in ev.ROW_QUERY_BACK
            e.error = next(iter(errors.values()), None) if whole_row else errors.get(e.column)
            if e.error:
                continue
        effective.append(e)
    row_qb = any(e.type in ev.ROW_QUERY_BACK for e in effective)
    field_qb = {e.column for e in effective if e.type in ev.FIELD_QUERY_BACK}
    for e in effective:
        if e.type in ev.FIELD_NON_QUERY_BACK:
            e.superseded = row_qb or e.column in field_qb
        elif e.type in ev.FIELD_QUERY_BACK:
            e.superseded = row_qb
    runs: list[tuple[str, list[Event]]] = []
    for e in events:
        if e.error:
            statuses[e.record_id] = (ev.Status.ERROR, e.error)
        elif e.superseded:
            statuses[e.record_id] = (ev.Status.DONE, None)
        else:
            warned = (ev.Status.WARNED, e.warning)
            statuses[e.record_id] = warned if e.warning else (ev.Status.DONE, None)
            kind = ev.COMMAND_KIND[e.type]
            if runs and runs[-1][0] == kind:
                runs[-1][1].append(e)
            else:
                runs.append((kind, [e]))
    return runs


def attrs_of(run: list[Event]) -> list[dict]:
    """The add-attr/modify-attr pieces of one run in event order; query-back fields once.
    A modify run without any is not sent (e.g. a query-back of a vanished row)."""
    attrs, seen = [], set()
    for e in run:
        if e.type in ev.FIELD_OPS and (
            e.new is not None or (e.type == 2 and e.old is not None) or e.type == 3
        ):
            attrs.append(
                {
                    "op": ev.FIELD_OPS[e.type],
                    "name": e.column,
                    "type": e.xds_type,
                    "old": e.old,
                    "new": e.new,
                }
            )
        for name, xds_type, text in e.cells or ():
            if name not in seen and (e.type in ev.ROW_QUERY_BACK or name == e.column):
                seen.add(name)
                cell = {"name": name, "type": xds_type, "old": None, "new": text}
                attrs.append(cell | {"op": "replace"})
    return attrs
