"""``xdspub resync`` (docs/initial-load.md): one type 5 event (query-back of a whole row)
for each object of the selected classes, logged by the database itself, chunk by chunk in
key order, each chunk a transaction of its own that also records how far the pass got, so
that a run started again after an interruption goes on after the last chunk done."""

from __future__ import annotations

import base64
import datetime
import decimal
import operator
import uuid
from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import sqlalchemy as sa

from grammar import parse_table_key
from publisher.model import value_text
from publisher.model.catalogue import Column, MultiValued, Table
from publisher.model.chains import chain_breaks, chain_order
from publisher.progress import RowProgress
from publisher.settings import Settings
from publisher.source.database import Database
from publisher.source.event_log import EventLog, open_event_log
from publisher.source.identifiers import checked, resync_table_name, sql_quote
from publisher.source.schema import published_catalogue
from publisher.source.triggers import TRIGGER_SQL, table_key_sql, value_text_sql

# The perpetrator of the events resync logs: never a database user, so never the
# publisher's own (docs/initial-load.md, Perpetrator).
PERPETRATOR = "xdspub-resync"
ROW_QUERY_BACK = 5  # insert row, query-back (docs/event-types.md, Types)
FIELD_QUERY_BACK = 8  # update field, query-back: a forward reference's, after every class
_ROW = "t"  # the alias of the class's table in the statements

# A key value as the table_key writes it, back to the value the driver binds, by the
# column's Python type (a type not here is bound as text, which the database converts).
_FROM_KEY_TEXT = {
    int: int,
    float: float,
    decimal.Decimal: decimal.Decimal,
    bytes: base64.b64decode,
    datetime.datetime: datetime.datetime.fromisoformat,
    datetime.date: datetime.date.fromisoformat,
    datetime.time: datetime.time.fromisoformat,
    uuid.UUID: uuid.UUID,
}


@dataclass
class ClassCount:
    """One class's objects logged in this pass: by earlier, interrupted runs and by this one."""

    name: str
    before: int
    logged: int = 0
    done_before: bool = False  # an earlier run of the pass finished it

    def text(self) -> str:
        if self.done_before:
            return f"{self.name} done before ({self.before:,})"
        if self.before:
            return f"{self.name} {self.logged:,} (and {self.before:,} before the interruption)"
        return f"{self.name} {self.logged:,}"


@dataclass(frozen=True)
class ResyncReport:
    classes: list[ClassCount]
    resumed: bool

    @property
    def logged(self) -> int:
        return sum(c.logged for c in self.classes)

    completing: list[ClassCount] = field(default_factory=list)  # the type 8 of forward references
    keyless: list[str] = field(default_factory=list)  # classes without a key, passed by

    def summary(self) -> str:
        how = "resumed the interrupted pass" if self.resumed else "a new pass"
        each = ", ".join(c.text() for c in self.classes) or "no class"
        then = ""
        if self.completing:
            logged = sum(c.logged for c in self.completing)
            then = f"; then {logged:,} type 8 events: " + ", ".join(c.text() for c in self.completing)
        return f"resync ({how}): {self.logged:,} type 5 events logged: {each}{then}"


def resync(db: Database, settings: Settings, chunk: int, restart: bool,
           progress: RowProgress) -> ResyncReport:
    """Log a type 5 event for every object of the selected classes (settings.tables; none:
    every keyed class), resuming the pass an earlier run left unfinished unless
    ``restart``. UnknownTable for a name that is no keyed class."""
    checked("--schema", settings.schema)
    catalogue = published_catalogue(settings, db)
    classes = catalogue.reference_order()
    log = open_event_log(db, settings)
    passes = _Passes(db, log)
    # Where classes name each other in a cycle, a type 8 of each reference to a class
    # logged after its own, once every class is logged (docs/initial-load.md, References).
    forward = [(table, name, f"{table.name}{_PASS_SEPARATOR}{number}") for table in classes
               for number, name in enumerate(catalogue.forward_references(table))]
    resumed, state = passes.begin([c.name for c in classes] + [key for *_, key in forward], restart)
    db_schema = db.dialect.schema_named(settings.schema)
    counts = []
    for table in classes:
        last_key, before, finished = state[table.name]
        count = ClassCount(table.name, before, done_before=finished)
        counts.append(count)
        if not finished:
            chunks = _Chunks(db, log, table, db_schema)
            named = [table.attribute(name) for name in catalogue.self_references(table)]
            if named:
                chunks.run_in_reference_order(passes, last_key, chunk, count, progress, named)
            else:
                chunks.run(passes, last_key, chunk, count, progress)
    completing = []
    for table, name, key in forward:
        last_key, before, finished = state[key]
        count = ClassCount(f"{table.name} {name}", before, done_before=finished)
        completing.append(count)
        if not finished:
            _Chunks(db, log, table, db_schema).run_forward(
                passes, key, last_key, chunk, count, progress, table.attribute(name)
            )
    return ResyncReport(counts, resumed, completing, catalogue.keyless_classes())


# Between a class's name and its forward reference's number, the name of that reference's
# pass: a control character, which no class name holds (source/identifiers.py checked).
_PASS_SEPARATOR = "\x1f"


_Progress = tuple[str | None, int, bool]  # a class's last key logged, objects logged, finished


class _Passes:
    """The table beside the event log (made when first needed) holding, for each class of
    the pass, the table_key of the last object logged, how many were, and whether the class
    is finished (docs/initial-load.md, Resuming)."""

    def __init__(self, db: Database, log: EventLog) -> None:
        self.engine = db.engine
        name = resync_table_name(db.dialect, log.table.name)
        self.table = sa.Table(
            checked("resync table", name),
            sa.MetaData(schema=log.table.schema),
            sa.Column("table_name", sa.String(128), primary_key=True),
            sa.Column("last_key", sa.Text),
            sa.Column("logged", sa.BigInteger, nullable=False),
            sa.Column("finished", sa.Boolean, nullable=False),
            # Class names differ by case alone on MariaDB too, as in the event log.
            mysql_charset="utf8mb4",
            mysql_collate="utf8mb4_bin",
        )

    def begin(self, names: Sequence[str], restart: bool) -> tuple[bool, dict[str, _Progress]]:
        """(whether the pass is resumed, each class's progress in it). A pass is resumed when
        one of ``names`` is unfinished in it; else a new one begins."""
        self.table.create(self.engine, checkfirst=True)
        c = self.table.c
        with self.engine.begin() as conn:
            rows = conn.execute(sa.select(c.table_name, c.last_key, c.logged, c.finished))
            state = {r.table_name: (r.last_key, r.logged, bool(r.finished)) for r in rows}
            resumed = not restart and any(n in state and not state[n][2] for n in names)
            if not resumed:
                conn.execute(self.table.delete())
                state = {}
            new = [n for n in names if n not in state]
            if new:
                conn.execute(
                    self.table.insert(),
                    [{"table_name": n, "last_key": None, "logged": 0, "finished": False} for n in new],
                )
        return resumed, {n: state.get(n, (None, 0, False)) for n in names}

    def record(self, conn: sa.Connection, name: str, last_key: str | None, logged: int) -> None:
        """A chunk is done (in its own transaction): ``logged`` more objects up to
        ``last_key``; None: the class's last chunk."""
        c = self.table.c
        values = {"logged": c.logged + logged}
        values |= {"finished": True} if last_key is None else {"last_key": last_key}
        conn.execute(self.table.update().where(c.table_name == name).values(values))


class _Chunks:
    """One class's objects, logged chunk by chunk in key order."""

    def __init__(self, db: Database, log: EventLog, table: Table, db_schema: str | None) -> None:
        self.engine, self.name, self.table, self.db_schema = db.engine, table.name, table, db_schema
        checked("table", table.name)
        for key in table.key_columns:
            checked(f"table {table.name!r}, key column", key)
        reflected = sa.Table(table.name, sa.MetaData(), schema=db_schema, autoload_with=db.engine)
        self.row = reflected.alias(_ROW)
        self.keys = [self.row.c[k] for k in table.key_columns]
        self.booleans = {k for k in table.key_columns if table.column(k).xds_type == value_text.STATE}
        # A zoned key's text is in UTC, not in the session's zone (Dialect.utc_key).
        self.utc_key = db.dialect.utc_key
        self.zoned = {k for k in table.key_columns if self.utc_key and db.dialect.zoned(table.column(k).sql_type)}
        self.key_sql = partial(
            table_key_sql, TRIGGER_SQL[db.dialect.sql_dir], sql_quote(db.engine), value_text_sql(db), table
        )
        self.key_text = sa.literal_column(self.key_sql(_ROW))
        self.log = log.table
        # What a query-back trigger writes for an inserted row, but the perpetrator;
        # status and event_time are the event log's defaults, as for the triggers.
        self.columns = [log.column(r) for r in ("table_key", "event_type", "perpetrator", "table_name")]
        self.column_name = log.column("column_name")
        events = sa.select(
            self.key_text,
            sa.literal_column(str(ROW_QUERY_BACK)),
            sa.literal(PERPETRATOR),
            sa.literal(table.name),
        ).select_from(self.row)
        # A view's key may hold several rows (one per multi-valued value): one event each.
        self.events = events if table.key_is_primary else events.group_by(*self.keys)

    def run(self, passes: _Passes, last_key: str | None, chunk: int, count: ClassCount,
            progress: RowProgress) -> None:
        last = None if last_key is None else self._values(last_key)
        total = None
        if progress.shown:
            with self.engine.connect() as conn:
                total = conn.execute(
                    sa.select(sa.func.count()).select_from(self.row).where(*self._after(last))
                ).scalar_one()
        progress.begin(self.name, count.before, total)
        while True:
            with self.engine.begin() as conn:
                bound = conn.execute(
                    sa.select(*self.keys, self.key_text)
                    .select_from(self.row)
                    .where(*self._after(last))
                    .order_by(*self.keys)
                    .offset(chunk - 1)
                    .limit(1)
                ).first()
                upto = () if bound is None else (_beyond(self.keys, bound[:-1], above=False),)
                events = self.events.where(*self._after(last), *upto).order_by(*self.keys)
                insert = sa.insert(self.log).from_select(self.columns, events)
                logged = conn.execute(insert.execution_options(preserve_rowcount=True)).rowcount
                passes.record(conn, self.name, None if bound is None else bound[-1], logged)
            count.logged += logged
            progress.advance(logged)
            if bound is None:
                return
            last = tuple(bound[:-1])

    def run_in_reference_order(self, passes: _Passes, last_key: str | None, chunk: int, count: ClassCount,
                               progress: RowProgress, named: Sequence[Column | MultiValued]) -> None:
        """A class whose references (``named``) name its own objects: each object logged
        after those it names, then in key order (docs/initial-load.md, References). The
        keys and references are read and put in order here; the events are logged chunk by
        chunk in that order, resuming after ``last_key``."""
        with self.engine.connect() as conn:
            present = [k.is_not(None) for k in self.keys]
            objects = sa.select(self.key_text).select_from(self.row).where(*present)
            if not self.table.key_is_primary:
                objects = objects.group_by(*self.keys)
            keys = pa.array(conn.execute(objects.order_by(*self.keys)).scalars().all(), pa.string())
            sources, targets, attributes = [], [], []
            for number, attribute in enumerate(named):
                for owner, target in conn.execute(self._references(attribute)):
                    sources.append(owner)
                    targets.append(target)
                    attributes.append(number)
        source, target = (pc.fill_null(pc.index_in(pa.array(texts, pa.string()), value_set=keys), -1).to_numpy()
                          for texts in (sources, targets))
        del sources, targets
        both = (source >= 0) & (target >= 0)
        source, target, attribute_of = source[both], target[both], np.array(attributes, np.int64)[both]
        rank = np.arange(len(keys))
        ordered = keys.take(chain_order(source, target, rank)).to_pylist()
        # Where objects name each other in a cycle, the one placed first reads references to
        # objects logged after it: a type 8 of each such reference, once the class is logged.
        closing = sorted({(keys[int(source[i])].as_py(), named[int(attribute_of[i])].name)
                          for i in chain_breaks(source, target, rank).tolist()})
        if last_key is not None and last_key in ordered:
            ordered = ordered[ordered.index(last_key) + 1 :]
        table_key, event_type, perpetrator, table_name = self.columns
        insert = sa.insert(self.log).values(
            {event_type.name: sa.literal_column(str(ROW_QUERY_BACK)), perpetrator.name: PERPETRATOR,
             table_name.name: self.name}
        )
        close = sa.insert(self.log).values(
            {event_type.name: sa.literal_column(str(FIELD_QUERY_BACK)), perpetrator.name: PERPETRATOR,
             table_name.name: self.name}
        )
        progress.begin(self.name, count.before, len(ordered) if progress.shown else None)
        for start in range(0, len(ordered), chunk):
            part = ordered[start : start + chunk]
            done = start + chunk >= len(ordered)
            with self.engine.begin() as conn:
                if part:
                    conn.execute(insert, [{table_key.name: key} for key in part])
                if done and closing:
                    conn.execute(close, [{table_key.name: key, self.column_name.name: name} for key, name in closing])
                passes.record(conn, self.name, None if done else part[-1], len(part))
            count.logged += len(part)
            progress.advance(len(part))
        if not ordered:
            with self.engine.begin() as conn:
                passes.record(conn, self.name, None, 0)

    def run_forward(self, passes: _Passes, pass_key: str, last_key: str | None, chunk: int, count: ClassCount,
                    progress: RowProgress, attribute: Column | MultiValued) -> None:
        """A type 8 of ``attribute`` (a reference to a class logged after this one) for each
        object holding a value of it, chunk by chunk in the order of the table_keys'
        texts, resuming after ``last_key`` (docs/initial-load.md, References)."""
        with self.engine.connect() as conn:
            owners = sorted(conn.execute(self._holders(attribute)).scalars().all())
        if last_key is not None:
            owners = owners[bisect_right(owners, last_key):]
        table_key, event_type, perpetrator, table_name = self.columns
        insert = sa.insert(self.log).values(
            {event_type.name: sa.literal_column(str(FIELD_QUERY_BACK)), perpetrator.name: PERPETRATOR,
             table_name.name: self.name, self.column_name.name: attribute.name}
        )
        progress.begin(count.name, count.before, len(owners) if progress.shown else None)
        for start in range(0, max(len(owners), 1), chunk):
            part = owners[start : start + chunk]
            done = start + chunk >= len(owners)
            with self.engine.begin() as conn:
                if part:
                    conn.execute(insert, [{table_key.name: key} for key in part])
                passes.record(conn, pass_key, None if done else part[-1], len(part))
            count.logged += len(part)
            progress.advance(len(part))

    def _holders(self, attribute: Column | MultiValued) -> sa.Select:
        """The table_key of each object holding a value of ``attribute``, once."""
        if isinstance(attribute, MultiValued) and not attribute.own:
            values = sa.Table(checked("table", attribute.child_table), sa.MetaData(), schema=self.db_schema,
                              autoload_with=self.engine).alias("c")
            for name in (*attribute.link, attribute.column.read_name):
                checked(f"table {attribute.child_table!r}, column", name)
            match = [self.row.c[k] == values.c[n] for k, n in zip(self.table.key_columns, attribute.link)]
            held = values.c[attribute.column.read_name]
            return sa.select(self.key_text).select_from(values.join(self.row, sa.and_(*match))).where(
                held.is_not(None), *self._after(None)).distinct()
        column = attribute.column if isinstance(attribute, MultiValued) else attribute
        checked(f"table {self.name!r}, column", column.read_name)
        held = self.row.c[column.read_name]
        return sa.select(self.key_text).select_from(self.row).where(held.is_not(None), *self._after(None)).distinct()

    def _references(self, attribute: Column | MultiValued) -> sa.Select:
        """(the owner's table_key, the named object's) of each value of ``attribute`` that
        names an object: the rows joined by the database, so that a value names the key
        its row holds whatever the key's collation."""
        if isinstance(attribute, MultiValued) and not attribute.own:
            values = sa.Table(checked("table", attribute.child_table), sa.MetaData(), schema=self.db_schema,
                              autoload_with=self.engine).alias("c")
            link, source = attribute.link, attribute.child_table
        else:  # a column of the class, or a view's own multi-valued column
            values = self.row.element.alias("c")
            link, source = self.table.key_columns, self.name
        column = attribute.column if isinstance(attribute, MultiValued) else attribute
        for name in (*link, column.read_name):
            checked(f"table {source!r}, column", name)
        named = self.row.element.alias("p")
        return (
            sa.select(self.key_text, sa.literal_column(self.key_sql("p")))
            .select_from(values)
            .join(self.row, sa.and_(*(self.row.c[k] == values.c[n] for k, n in zip(self.table.key_columns, link))))
            .join(named, named.c[self.table.key_columns[0]] == values.c[column.read_name])
            .distinct()
        )

    def _after(self, last: Sequence[object] | None) -> list[sa.ColumnElement]:
        """The conditions of the objects after ``last`` (None: all); a view's row with a
        NULL key value names no object."""
        present = [k.is_not(None) for k in self.keys]
        return present if last is None else [*present, _beyond(self.keys, last, above=True)]

    def _values(self, last_key: str) -> tuple[object, ...]:
        """The key values of the table_key ``last_key``, as the driver binds them."""
        values = dict(parse_table_key(last_key))
        bound = []
        for key in self.keys:
            if key.name in self.booleans:  # true or false, whatever type holds it (TINYINT(1))
                bound.append(values[key.name] == "true")
                continue
            if key.name in self.zoned:
                bound.append(self.utc_key(values[key.name]))
                continue
            try:
                convert = _FROM_KEY_TEXT.get(key.type.python_type, str)
            except NotImplementedError:
                convert = str
            bound.append(convert(values[key.name]))
        return tuple(bound)


def _beyond(keys: Sequence[sa.ColumnElement], values: Sequence[object], above: bool) -> sa.ColumnElement:
    """The keys after ``values`` in key order (``above``), or up to them and with them:
    ``k1 >= v1 AND (k1 > v1 OR k2 > v2)`` and so on, whose leading ``k1 >= v1`` is a range
    of the key's index on every database."""
    strict, loose = (operator.gt, operator.ge) if above else (operator.lt, operator.le)
    # Bound as the keys' types: SQLAlchemy orders no column by a bare True or False.
    values = [
        value if isinstance(value, sa.ColumnElement) else sa.literal(value, key.type)
        for key, value in zip(keys, values)
    ]
    condition = (strict if above else loose)(keys[-1], values[-1])
    for key, value in zip(reversed(keys[:-1]), reversed(values[:-1])):
        condition = sa.and_(loose(key, value), sa.or_(strict(key, value), condition))
    return condition
