"""The rules in plain Python: what an event-log row is (docs/event-log.md, docs/table-key.md,
docs/statuses.md), and how one object's events become commands (docs/reduction.md).

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
from publisher.model.catalogue import Catalogue, Column, MultiValued, NotAClass, Table
from publisher.model.commands import (
    Attr,
    AttrOp,
    Command,
    CommandKind,
    association,
    reference_text,
)
from publisher.model.policy import column_text
from publisher.model.statuses import Status, reason_text, shown_value
from publisher.model.value_text import DN, InvalidValue, forbidden_position, key_text
from publisher.reduce.references import Creations, created_between, referenced_values

_TYPE_TEXT = re.compile(r"^[0-9]{1,9}\Z")
_TEXT_COLUMNS = ("table_key", "table_name", "column_name", "old_value", "new_value")
Cell = tuple[str, str, "str | None"]  # (column, xds_type, text) of a row read back
KeyPairs = list[tuple[str, str]]
# A query-back's read: the current row's non-key cells (None: vanished) and each bad
# cell's error, by column.
ReadBack = Callable[[], tuple["list[Cell] | None", dict[str, str]]]
Statuses = dict[int, tuple[str, "str | None"]]  # record_id: (letter, reason)

# Why a live row was consumed without joining a command (docs/reduction.md); `xdspub
# explain` and the lineage record name them.
QUERY_BACK_BEATS_FIELD = "query-back beats field"
ROW_BEATS_FIELD = "row beats field"
BEFORE_A_DELETE = "before a delete"
VANISHED = "query-back of a vanished row"
NAMES_A_LATER_OBJECT = "names an object made after it"
# Why a live row was consumed in a run whose modify has no attribute, and is not sent.
NOTHING_TO_SEND = "no attribute to send"


def event_type_number(raw: object) -> int | None:
    """A logged event_type's number; None when it is not written as plain digits (2.5)."""
    text = str(raw).strip(" ")
    return int(text) if _TYPE_TEXT.search(text) else None


@dataclass(slots=True)
class Event:
    """A live row. Its first fields are what travels between the passes (rows.EVENT)."""

    record_id: int
    event_type: int
    column_name: str | None
    xds_type: str | None  # the column's
    old_text: str | None  # log values as XDS text: a type 2's old, a type 1-3's new
    new_text: str | None
    warning: str | None  # the table_key was not canonical
    canonical_key: str = ""
    ord_time: float = 0.0  # processing order is (ord_time, record_id)
    error: str | None = None  # the row read back cannot be published
    superseded: bool = False  # consumed (S) without publishing
    rule: str | None = None  # why it was superseded (QUERY_BACK_BEATS_FIELD ...)
    superseded_by: int | None = None  # the record_id of the event that superseded it
    cells: list[Cell] | None = None  # query-back: the row read back (None: vanished, or not read)
    class_name: str = ""  # the class the row publishes (a child table's is its parent)


class Rejected(Exception):
    """A row that cannot become XDS: status E, with this reason (as reason_text gives it)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason_text(reason))


def _forbidden(name: str, text: str | None) -> None:
    if text is not None and (position := forbidden_position(text)):
        raise Rejected(f"{name} has a character XML 1.0 cannot carry at position {position}")


class Classifier:
    """What a log row is: ``classifier(row)`` gives its event and canonical key pairs, or
    raises Rejected with the first reason (the order of the checks is the order of the
    reasons). ``max_value_length``: the longest table_key or rendered value taken.
    No cache of keys: in a record_id range each object recurs too seldom to pay for one."""

    def __init__(self, catalogue: Catalogue, max_value_length: int | None = None) -> None:
        self.catalogue = catalogue
        self.max_value_length = max_value_length

    def __call__(self, row: Mapping[str, Any]) -> tuple[Event, KeyPairs]:
        raw_type = row["event_type"]
        if raw_type is None:
            raise Rejected("event_type is NULL")
        t = event_type_number(raw_type)
        if t not in ev.KNOWN:
            raise Rejected(f"unknown event_type {raw_type}")
        # As text whatever the database stored (SQLite keeps a number a trigger wrote).
        text = {name: None if row[name] is None else str(row[name]) for name in _TEXT_COLUMNS}
        for name in ("table_name", "table_key"):
            if text[name] is None:
                raise Rejected(f"{name} is NULL")
        rendered = {
            "old_value": t in ev.OLD_VALUE_RENDERED,
            "new_value": t in ev.NEW_VALUE_RENDERED,
        }
        if len(text["table_key"]) > ev.TABLE_KEY_LIMIT:  # before the grammar spends time on it
            raise Rejected(f"table_key is longer than {ev.TABLE_KEY_LIMIT} characters")
        for name in ("table_key", *(n for n, shown in rendered.items() if shown)):
            self._check_length(name, text[name])
        for name in ("table_key", "table_name", "column_name"):
            _forbidden(name, text[name])
        table_key, table_name = text["table_key"], text["table_name"]
        try:
            named = parse_table_key(table_key)
        except TableKeyError as exc:
            raise Rejected(f"malformed table_key: {exc}") from None
        table, column_name, link = self._class_of(table_name, text["column_name"])
        pairs, canonical = self._checked_key(table, named, link)
        attribute = table.attribute(column_name) if column_name is not None else None
        if t in ev.PER_FIELD and column_name is None:
            raise Rejected(f"column_name is NULL for per-field event_type {t}")
        if t in ev.PER_FIELD and attribute is None:
            raise Rejected(self._no_attribute(table, column_name))
        column = attribute.column if isinstance(attribute, MultiValued) else attribute
        if column is not None and column.reference is not None:
            try:
                self.catalogue.referenced(column)
            except NotAClass as exc:
                raise Rejected(str(exc)) from None
        texts: dict[str, str | None] = {"old_value": None, "new_value": None}
        for name, shown in rendered.items():
            raw = text[name]
            if not shown or raw is None:
                continue
            _forbidden(name, raw)
            try:
                texts[name] = self._text(raw, column)
            except InvalidValue as exc:
                raise Rejected(f"{name} {exc}") from None
        warning = None
        if canonical != table_key:
            warning = f"table_key {table_key} is not canonical; published as {canonical}"
        xds_type = column.published_type if column is not None else None
        event = Event(row["record_id"], t, column_name, xds_type, *texts.values(), warning, canonical)
        event.class_name = table.name
        return event, pairs

    def _text(self, raw: str, column: Column) -> str:
        """A logged value's XDS text (a hashed column's: its hash); a reference's is the
        association it names."""
        if column.reference is not None:
            return reference_text(raw, self.catalogue.referenced(column), self.catalogue.schema)
        return column_text(raw, column)

    def _class_of(self, table_name: str,
                  column_name: str | None) -> tuple[Table, str | None, dict[str, str]]:
        """The class a row names, the attribute its column_name names, and how the row's
        key names map to the class's: a child table stands for its parent's class, its
        bare column for ``child_table.column`` (docs/classes.md, Child tables); a view
        column for the attribute it declares (Views in the driver's form)."""
        table = self.catalogue.tables.get(table_name)
        if table is not None:
            return table, None if column_name is None else table.attribute_name(column_name), {}
        parent = self.catalogue.child_tables.get(table_name)
        if parent is None:
            raise Rejected(
                f"table {table_name} is not in the published schema {self.catalogue.schema}"
            )
        table = self.catalogue.tables[parent]
        link = next(m.link for m in table.multi_valued if m.child_table == table_name)
        attribute = None if column_name is None else f"{table_name}.{column_name}"
        return table, attribute, dict(zip(link, table.key_columns))

    def _no_attribute(self, table: Table, column_name: str) -> str:
        child, dot, _ = column_name.partition(".")
        if dot and child not in (m.child_table for m in table.multi_valued):
            return f"column {column_name}: table {child} is not a child table of {table.name}"
        return f"column {column_name} is not in table {table.name}"

    def _check_length(self, name: str, text: str | None) -> None:
        limit = self.max_value_length
        if limit is not None and text is not None and len(text) > limit:
            raise Rejected(f"{name} is longer than {limit} characters")

    def _checked_key(self, table: Table, named: KeyPairs,
                     link: dict[str, str]) -> tuple[KeyPairs, str]:
        """The key's canonical pairs (in the table's key order) and its text; Rejected if
        the key does not name exactly the table's key columns (a child table's link
        columns name them by ``link``)."""
        pairs = {link.get(name, name): value for name, value in named}
        if not table.key_columns:
            raise Rejected(f"table {table.name} has no key (no primary key, no pk_ column)")
        if set(pairs) != set(table.key_columns):
            raise Rejected(
                f"table_key names {'+'.join(pairs)}; the key of {table.name} is "
                f"{'+'.join(table.key_columns)}"
            )
        canonical = [(c, _key_value(table.column(c), pairs[c])) for c in table.key_columns]
        return canonical, format_table_key(canonical)


def _key_value(column: Column, value: str) -> str:
    try:
        return key_text(value, column.xds_type, column.is_char)
    except InvalidValue as exc:
        raise Rejected(f"table_key value {shown_value(exc.value)} of {column.name} {exc.reason}") from None


def object_commands(table: Table, schema: str, events: list[Event], read: ReadBack,
                    statuses: Statuses, creations: Creations | None = None) -> list[Command]:
    """One object's live events, in processing order, as its commands (docs/reduction.md);
    every event's status into ``statuses``. A modify left without attributes is not sent
    (e.g. a query-back of a vanished row). ``creations``: where the objects a reference
    may name are created in the cycle (reduce/references.py), which cut runs."""
    runs = object_runs(table, schema, events, read, statuses, creations)
    return [command for command, _ in runs if command]


def object_runs(table: Table, schema: str, events: list[Event], read: ReadBack, statuses: Statuses,
                creations: Creations | None = None) -> list[tuple[Command | None, list[Event]]]:
    """object_commands with the events each command carries; None for a run whose modify
    has no attribute and is not sent (its events publish nothing)."""
    runs = []
    for kind, run in _runs(table, events, read, statuses, creations):
        attrs = _attrs_of(table, kind, run)
        if kind == CommandKind.MODIFY and not attrs:
            if not any(e.event_type in ev.ROW_QUERY_BACK for e in run):
                runs.append((None, run))
                continue
            # A row read back without any value (a key-only row; inserted: every column
            # NULL) is an object all the same: announced by an add alone, as the field
            # triggers do (docs/rendering.md, Empty pieces).
            kind = CommandKind.ADD
        head = run[0]
        where = association(head.canonical_key, table.name, schema)
        runs.append((Command(kind, table.name, head.record_id, where, attrs, head.ord_time), run))
    return runs


def _runs(table: Table, events: list[Event], read: ReadBack, statuses: Statuses,
          creations: Creations | None = None) -> list[tuple[CommandKind, list[Event]]]:
    """Precedence over one object's live events: every event's status into ``statuses``,
    and the runs of one command kind that remain, cut where a reference needs it."""
    deletes = [i for i, e in enumerate(events) if e.event_type == ev.EventType.DELETE_ROW]
    last_delete = deletes[-1] if deletes else -1
    effective = []
    for index, e in enumerate(events):
        if e.event_type in ev.QUERY_BACK:
            # Before a delete the row is gone, and a vanished row has no effect either:
            # such an event is consumed, supersedes nothing and joins no run.
            if index < last_delete:
                _supersede(e, BEFORE_A_DELETE, events[last_delete])
                continue
            e.cells, errors = read()
            whole_row = e.event_type in ev.ROW_QUERY_BACK
            e.error = next(iter(errors.values()), None) if whole_row else errors.get(e.column_name)
            if e.error:
                continue
            if e.cells is None:
                _supersede(e, VANISHED, None)
                continue
        if index > last_delete:
            effective.append(e)
    taking_over: set[int] = set()  # field query-backs that publish what a row one left out
    if creations:
        effective = _read_too_early(effective, creations, taking_over)
    # The first of each kind of query-back is what supersedes (docs/reduction.md).
    row_qb = next((e for e in effective if e.event_type in ev.ROW_QUERY_BACK), None)
    field_qb: dict[str | None, Event] = {}
    for e in effective:
        if e.event_type in ev.FIELD_QUERY_BACK:
            field_qb.setdefault(e.column_name, e)
    for e in effective:  # precedence acts after the last delete (docs/reduction.md)
        if e.event_type in ev.FIELD_QUERY_BACK and row_qb is not None and e.record_id not in taking_over:
            _supersede(e, ROW_BEATS_FIELD, row_qb)
        elif e.event_type in ev.FIELD_NON_QUERY_BACK:
            by = field_qb.get(e.column_name) if e.record_id in taking_over else row_qb or field_qb.get(e.column_name)
            if by is not None:
                _supersede(e, QUERY_BACK_BEATS_FIELD, by)
    runs: list[tuple[CommandKind, list[Event]]] = []
    continuing = False  # the last run is a modify cut from an add: the add's type 1s join it
    for e in events:
        if e.error:
            statuses[e.record_id] = (Status.ERROR, e.error)
        elif e.superseded:
            statuses[e.record_id] = (Status.DONE, None)
        else:
            warned = (Status.WARNED, e.warning)
            statuses[e.record_id] = warned if e.warning else (Status.DONE, None)
            kind = ev.COMMAND_KIND[e.event_type]
            last = runs[-1][0] if runs else None
            if kind == CommandKind.ADD and last != CommandKind.ADD and (
                continuing or table.is_multi_valued(e.column_name)
            ):
                kind = CommandKind.MODIFY  # a value added to an object added before (add-value)
            if kind == last:
                if not _names_newer(e, runs[-1][1][0], creations):
                    runs[-1][1].append(e)
                    continue
                if kind == CommandKind.ADD:  # an add cut: the object exists from its first part
                    kind, continuing = CommandKind.MODIFY, True
            else:
                continuing = False
            runs.append((kind, [e]))
    return runs


def _read_too_early(effective: list[Event], creations: Creations, taking_over: set[int]) -> list[Event]:
    """``effective`` without the query-backs whose row read back names an object made after
    them, when a later query-back that reads the same attributes comes after that object
    is made (docs/reduction.md, References and order): it publishes the same values at a
    place where the object exists. A row query-back whose naming attributes each have
    such a later field query-back stays, without those attributes: the record_ids of the
    field query-backs that publish them go into ``taking_over``."""
    kept = []
    for index, e in enumerate(effective):
        if e.event_type in ev.QUERY_BACK and e.cells is not None:
            values = referenced_values(e.event_type, e.column_name, e.xds_type, e.new_text, e.cells)
            made = max((creations[v][-1] for v in values if v in creations), default=None)
            if made is not None and made > (e.ord_time, e.record_id):
                later = effective[index + 1:]
                after = next((o for o in later if _reads_as_much(o, e) and (o.ord_time, o.record_id) > made), None)
                if after is not None:
                    _supersede(e, NAMES_A_LATER_OBJECT, after)
                    continue
                if e.event_type in ev.ROW_QUERY_BACK:
                    _leave_to_later(e, effective, creations, taking_over)
        kept.append(e)
    return kept


def _leave_to_later(e: Event, effective: list[Event], creations: Creations, taking_over: set[int]) -> None:
    """Row query-back ``e`` without the attributes whose values name an object made after
    it, when each has a later event of its own after that object is made: a field
    query-back, which publishes the attribute's values; else a logged change, and then
    every logged change of the attribute publishes (none is superseded by ``e``)."""
    position = (e.ord_time, e.record_id)
    made: dict[str, tuple[float, int]] = {}  # attribute: the latest creation it names
    for name, cell_type, text in e.cells:
        created = creations.get(text) if cell_type == DN and text is not None else None
        if created and created[-1] > position:
            made[name] = max(made.get(name, created[-1]), created[-1])
    taking: set[int] = set()
    for name, creation in made.items():
        after = [o for o in effective if o.column_name == name and (o.ord_time, o.record_id) > creation]
        field = next((o for o in after if o.event_type in ev.FIELD_QUERY_BACK), None)
        if field is not None:
            taking.add(field.record_id)
        elif any(o.event_type in ev.FIELD_NON_QUERY_BACK for o in after):
            taking.update(o.record_id for o in effective
                          if o.column_name == name and o.event_type in ev.FIELD_NON_QUERY_BACK)
        else:
            return  # not covered (docs/reduction.md): the row publishes as read
    e.cells = [cell for cell in e.cells if cell[0] not in made]
    taking_over.update(taking)


def _reads_as_much(later: Event, early: Event) -> bool:
    """Whether query-back ``later`` reads every attribute ``early`` does."""
    if later.event_type in ev.ROW_QUERY_BACK:
        return True
    return early.event_type in ev.FIELD_QUERY_BACK and later.event_type in ev.FIELD_QUERY_BACK \
        and later.column_name == early.column_name


def _names_newer(event: Event, head: Event, creations: Creations | None) -> bool:
    """Whether ``event``'s values name an object created after the first event of the run
    it would join (docs/reduction.md, References and order): the run is cut before it."""
    if not creations or event.event_type == ev.EventType.DELETE_ROW:
        return False
    if event.cells is None and event.xds_type != DN:  # most events: a value of no reference
        return False
    after, before = (head.ord_time, head.record_id), (event.ord_time, event.record_id)
    values = referenced_values(event.event_type, event.column_name, event.xds_type, event.new_text, event.cells)
    return any(created_between(creations, value, after, before) for value in values)


def _supersede(event: Event, rule: str, by: Event | None) -> None:
    event.superseded, event.rule = True, rule
    event.superseded_by = None if by is None else by.record_id


def _attrs_of(table: Table, kind: CommandKind, run: list[Event]) -> tuple[Attr, ...]:
    """The add-attr/modify-attr pieces of one run in event order; query-back attributes
    once. An empty piece adds nothing: a type 1 or 2 with nothing to add or remove."""
    attrs, seen = [], set()
    for e in run:
        op = ev.FIELD_OPS.get(e.event_type)
        new = () if e.new_text is None else (e.new_text,)
        if op is not None and (
            new or (op == AttrOp.MODIFY and e.old_text is not None) or op == AttrOp.REPLACE
        ):
            multi = table.is_multi_valued(e.column_name)
            attrs.append(Attr(op, e.column_name, e.xds_type, e.old_text, new, multi))
        if e.cells is None:
            continue
        whole_row = e.event_type in ev.ROW_QUERY_BACK
        # An inserted row's object is new: its attributes without a value have nothing to
        # remove (docs/rendering.md, Query-back rendering).
        inserted = e.event_type == ev.EventType.INSERT_ROW_QUERY_BACK
        for name, (xds_type, values, multi) in _current_attributes(table, e.cells).items():
            if name in seen or not (whole_row or name == e.column_name) or (inserted and not values):
                continue
            seen.add(name)
            attrs.append(Attr(AttrOp.REPLACE, name, xds_type, None, values, multi))
    return tuple(attrs)


def _current_attributes(table: Table,
                        cells: list[Cell]) -> dict[str, tuple[str, tuple[str, ...], bool]]:
    """The current values read back by attribute, in the class's order: its non-key
    columns' cells as read, then each multi-valued attribute's values, sorted and once
    each (docs/classes.md, Child tables; a child table's value in none of its rows is none)."""
    multi = table.multi_valued_types
    current = {name: (xds_type, () if text is None else (text,), False) for name, xds_type, text in cells
               if name not in multi}
    if multi:
        values: dict[str, set[str]] = {name: set() for name in multi}
        for name, _, text in cells:
            if name in values and text is not None:
                values[name].add(text)
        for name, xds_type in multi.items():
            current[name] = (xds_type, tuple(sorted(values[name])), True)
    return current
