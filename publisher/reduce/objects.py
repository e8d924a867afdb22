"""Triggerless publication (docs/triggerless.md): a class's objects as read now, one row an
object and one column an attribute, and their comparison with the previous cycle's state.

The current rows become XDS text by the query-back rules, column by column
(vectorised_state.py); only the objects that changed reach Python, one at a time, to
become commands. The same functions run in the driver and in Spark's Python workers."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from collections import Counter
from dataclasses import dataclass
from enum import StrEnum

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from publisher.model import value_text
from publisher.model.catalogue import Catalogue, Table
from publisher.model.chains import chain_breaks, chain_depths
from publisher.model.commands import Attr, AttrOp, Command, CommandKind, association
from publisher.model.statuses import reason_text
from publisher.reduce.query_back_state import SEPARATOR
from publisher.reduce.vectorised_state import StateColumns

KEY = "key"  # the object's canonical table_key
ERROR = "error"  # why the object cannot be published now (current objects only)
ORDER = "k:"  # a key column's value as read, named after it: the objects' order
ATTRIBUTE = "a:"  # an attribute's XDS text (single-valued) or its values (multi-valued)
VALUES = pa.list_(pa.string())
_SLICE_ROWS = 10_000  # changed objects made into commands at once
_HEX = np.array([list(f"{octet:02x}".encode()) for octet in range(256)], np.uint8)  # by octet, its two digits


@dataclass(frozen=True)
class Attribute:
    name: str  # a column's, or child_table.column
    xds_type: str
    multi_valued: bool

    @property
    def field(self) -> pa.Field:
        return pa.field(ATTRIBUTE + self.name, VALUES if self.multi_valued else pa.string())


def attributes(table: Table) -> tuple[Attribute, ...]:
    """The class's attributes in its order: its non-key columns, then its multi-valued
    attributes (as query-back renders them, docs/rendering.md)."""
    single = [
        Attribute(c.name, c.published_type, False) for c in table.columns if c.name not in table.key_columns
    ]
    return (*single, *(Attribute(m.name, m.xds_type, True) for m in table.multi_valued))


def state_schema(table: Table) -> pa.Schema:
    """A class's objects as the state keeps them: key, key columns, attributes."""
    return pa.schema(
        [
            pa.field(KEY, pa.string()),
            *(pa.field(ORDER + name, pa.string()) for name in table.key_columns),
            *(a.field for a in attributes(table)),
        ]
    )


def current_schema(table: Table) -> pa.Schema:
    return state_schema(table).append(pa.field(ERROR, pa.string()))


def _text(array: pa.Array) -> pa.Array:
    """Key values as read, as text that sorts as they do: a binary key's bytes as hex digits
    (they are seldom UTF-8, and a string column must be; lowercase hex sorts as the bytes)."""
    if not pa.types.is_binary(array.type):
        return array
    offsets = np.frombuffer(array.buffers()[1], np.int32)[array.offset : array.offset + len(array) + 1]
    data = array.buffers()[2]
    octets = np.frombuffer(data, np.uint8)[offsets[0] : offsets[-1]] if data else np.empty(0, np.uint8)
    buffers = [None, pa.py_buffer((offsets - offsets[0]) * 2), pa.py_buffer(_HEX[octets].ravel())]
    digits = pa.Array.from_buffers(pa.string(), len(array), buffers)
    return pc.if_else(array.is_valid(), digits, pa.scalar(None, pa.string()))


CHILD_VALUES = pa.schema([(KEY, pa.string()), ("attribute", pa.string()), ("text", pa.string()), (ERROR, pa.string())])


def parent_objects(catalogue: Catalogue, table: Table) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    """A batch of the class's rows (as source/query_back.py reads them) as its objects
    (current_schema), their multi-valued attributes empty; a row whose key is NULL or not
    of its type is no object."""
    columns = StateColumns(catalogue, table, table)

    def objects(batch: pa.RecordBatch) -> pa.RecordBatch:
        keys = columns.keys(batch)
        texts, errors = columns.all_cell_texts(batch)
        empty = pa.array([[]] * batch.num_rows, VALUES)
        arrays = [
            keys,
            *(_text(batch.column(name)) for name in table.key_columns),
            *texts,
            *(empty for _ in table.multi_valued),
            _first_error(errors, batch.num_rows),
        ]
        return pa.RecordBatch.from_arrays(arrays, schema=current_schema(table)).filter(pc.is_valid(keys))

    return objects


def child_values(catalogue: Catalogue, table: Table, child: Table) -> Callable[[pa.RecordBatch], pa.RecordBatch]:
    """A batch of one of the class's child tables' rows (Table.children) as CHILD_VALUES:
    each value of a multi-valued attribute with its object's key, and each row's error."""
    columns = StateColumns(catalogue, table, child)

    def values(batch: pa.RecordBatch) -> pa.RecordBatch:
        keys = columns.keys(batch)
        texts, errors = columns.all_cell_texts(batch)
        error = _first_error(errors, batch.num_rows)
        every_key = pa.concat_arrays([keys] * len(texts))
        return pa.RecordBatch.from_arrays(
            [
                every_key,
                pa.array(np.repeat([cell.label for cell in columns.cells], batch.num_rows), pa.string()),
                pa.concat_arrays(texts),
                pa.concat_arrays([error] * len(texts)),
            ],
            schema=CHILD_VALUES,
        ).filter(pc.is_valid(every_key))

    return values


def _first_error(errors: list[pa.Array], rows: int) -> pa.Array:
    return pc.coalesce(*errors) if errors else pa.nulls(rows, pa.string())


def current_objects(catalogue: Catalogue, table: Table, rows: pa.Table,
                    children: dict[str, pa.Table]) -> pa.Table:
    """The class's objects now (current_schema), unordered: ``rows`` its table's rows and
    ``children`` each child table's (Table.children), as source/query_back.py reads them."""
    objects = parent_objects(catalogue, table)
    parents = [objects(batch) for batch in rows.to_batches()]
    values = [
        child_values(catalogue, table, child)(batch)
        for child in table.children()
        for batch in children[child.name].to_batches()
    ]
    return with_children(
        table,
        pa.Table.from_batches(parents, current_schema(table)),
        pa.Table.from_batches(values, CHILD_VALUES),
    )


def with_children(table: Table, objects: pa.Table, values: pa.Table) -> pa.Table:
    """``objects`` (parent_objects) with the values of their multi-valued attributes
    (child_values), each sorted and once, and the first error of an object's child rows.
    Where a view's key holds several rows, the first is the object."""
    if not table.key_is_primary and objects.num_rows:
        first = pc.index_in(objects[KEY], value_set=objects[KEY])
        objects = objects.filter(pc.equal(first, pa.array(np.arange(objects.num_rows))))
    if not values.num_rows:
        return objects
    # Each value's object, by its row: a value of no object (a child row without its
    # parent row) has none.
    owner = pc.index_in(values[KEY], value_set=objects[KEY])
    for m in table.multi_valued:
        mine = values if len(table.multi_valued) == 1 else values.filter(pc.equal(values["attribute"], m.name))
        owners = owner if mine is values else owner.filter(pc.equal(values["attribute"], m.name))
        index = objects.schema.get_field_index(ATTRIBUTE + m.name)
        objects = objects.set_column(index, objects.field(index), _lists(owners, mine["text"], objects.num_rows))
    failed = pc.and_(pc.is_valid(values[ERROR]), pc.is_valid(owner)).to_numpy(zero_copy_only=False)
    if failed.any():
        rows = np.flatnonzero(failed)
        owners, first = np.unique(pc.take(owner, rows).to_numpy(zero_copy_only=False), return_index=True)
        errors = pc.take(values[ERROR], rows[first]).combine_chunks()
        mask = np.zeros(objects.num_rows, bool)
        mask[owners] = True
        spread = pc.replace_with_mask(pa.nulls(objects.num_rows, pa.string()), pa.array(mask), errors)
        index = objects.schema.get_field_index(ERROR)
        objects = objects.set_column(index, objects.field(index), pc.coalesce(objects[ERROR], spread))
    return objects


def _lists(owners: pa.ChunkedArray, texts: pa.ChunkedArray, objects: int) -> pa.Array:
    """Each of ``objects`` objects' values (``texts`` of the rows whose owner is it), sorted
    by their text and once each: a list per object, empty for one without values."""
    pairs = pa.table({"owner": owners, "text": texts})
    if pairs["owner"].null_count or pairs["text"].null_count:
        pairs = pairs.filter(pc.and_(pc.is_valid(pairs["owner"]), pc.is_valid(pairs["text"])))
    pairs = pairs.sort_by([("owner", "ascending"), ("text", "ascending")])
    owner = pairs["owner"].to_numpy()
    text = pairs["text"].combine_chunks()
    if len(owner) > 1:
        repeated = np.zeros(len(owner), bool)
        repeated[1:] = (owner[1:] == owner[:-1]) & pc.equal(text[1:], text[:-1]).to_numpy(zero_copy_only=False)
        if repeated.any():
            owner, text = owner[~repeated], text.filter(pa.array(~repeated))
    offsets = np.zeros(objects + 1, np.int32)
    np.cumsum(np.bincount(owner, minlength=objects), out=offsets[1:])
    return pa.ListArray.from_arrays(pa.array(offsets), text, type=VALUES)


def key_order(table: Table, objects: pa.Table) -> pa.Array:
    """The indices that put ``objects`` in their class's key order: an integer key column by
    its number (text when one does not fit 64 bits), any other by its text."""
    sort = []
    for name in table.key_columns:
        column = objects[ORDER + name]
        if table.column(name).xds_type == value_text.INT:
            try:
                column = pc.cast(pc.utf8_trim_whitespace(column), pa.int64())
            except pa.ArrowInvalid:
                pass
        sort.append(column)
    names = [f"c{i}" for i in range(len(sort))]
    return pc.sort_indices(pa.table(sort, names=names), sort_keys=[(n, "ascending") for n in names])


class Change(StrEnum):
    ADDED = "added"
    DELETED = "deleted"
    CHANGED = "changed"
    CURRENT = "current"  # published whole, as a type 6 query-back would (--startup resync)
    # A modify after every class's adds and modifies: the references to a class placed
    # after its own where classes name each other in a cycle (with_forward_references_split).
    COMPLETING = "completing"


# Where a class's commands are numbered from (event_ids): its adds and modifies, its
# deletes, and its completing modifies.
FirstIds = tuple[int, int, int]


@dataclass(frozen=True)
class Comparison:
    """What changed in one class: the objects to publish with how (in no order: commands
    puts them in key order), the new state (state_schema), and the objects that cannot be
    published."""

    changes: pa.Table  # state_schema plus "change", "old": the old values of a changed object; unordered
    objects: int  # read now
    failed: list[tuple[str, str]]  # (canonical key, reason)
    state: pa.Table  # the objects to keep: those read, but a failed one as it was


def _changed(old: pa.Array, new: pa.Array, multi_valued: bool) -> np.ndarray:
    if multi_valued:
        lengths = pc.not_equal(pc.list_value_length(old), pc.list_value_length(new))
        old, new = pc.binary_join(old, SEPARATOR), pc.binary_join(new, SEPARATOR)
        differ = pc.or_(pc.fill_null(lengths, True), pc.fill_null(pc.not_equal(old, new), True))
    else:
        differ = pc.or_(
            pc.fill_null(pc.not_equal(old, new), False), pc.not_equal(pc.is_null(old), pc.is_null(new))
        )
    return differ.to_numpy(zero_copy_only=False)


def aligned_state(table: Table, state: pa.Table | None) -> pa.Table:
    """The previous state in this cycle's columns: an attribute it lacks had no values."""
    schema = state_schema(table)
    if state is None:
        return schema.empty_table()
    columns = []
    for field in schema:
        if field.name in state.column_names:
            columns.append(state[field.name].cast(field.type))
        elif field.type == VALUES:
            columns.append(pa.array([[]] * state.num_rows, VALUES))
        else:
            columns.append(pa.nulls(state.num_rows, field.type))
    return pa.Table.from_arrays(columns, schema=schema).combine_chunks()


def compare(table: Table, previous: pa.Table | None, current: pa.Table, startup: str | None) -> Comparison:
    """``current`` objects (current_objects) against the ``previous`` state; ``startup``
    (resync, future or all) when there is no usable previous state (docs/triggerless.md,
    Startup). Column by column: only the changed objects' rows are copied."""
    schema = state_schema(table)
    error = current[ERROR]
    failed_mask = pc.is_valid(error)
    has_failed = error.null_count < len(error)
    failed = []
    good = current.select(schema.names)
    if has_failed:
        failed = [(k, reason_text(e)) for k, e in zip(
            current[KEY].filter(failed_mask).to_pylist(), error.filter(failed_mask).to_pylist())]
        good = good.filter(pc.invert(failed_mask))
    if startup is not None:
        change = {"resync": Change.CURRENT, "all": Change.ADDED}.get(startup)
        changes = good if change else schema.empty_table()
        return Comparison(_with_change(changes, change, None), current.num_rows, failed, good)
    old = aligned_state(table, previous)
    if old.num_rows == good.num_rows and pc.all(pc.equal(good[KEY], old[KEY])).as_py() is not False:
        at_old = np.arange(good.num_rows)  # the same objects in the same order: no lookup
    else:
        at_old = pc.fill_null(pc.index_in(good[KEY], value_set=old[KEY]), -1).to_numpy(zero_copy_only=False)
    matched = at_old >= 0
    new_rows, old_rows = np.flatnonzero(matched), at_old[matched]
    in_place = bool(matched.all()) and old.num_rows == good.num_rows and bool((old_rows == new_rows).all())
    differ = np.zeros(len(new_rows), bool)
    for attribute in attributes(table):
        name = ATTRIBUTE + attribute.name
        before, after = old[name], good[name]
        if not in_place:  # the objects in another order, or some added or deleted
            before, after = before.take(old_rows), after.take(new_rows)
        differ |= _changed(before, after, attribute.multi_valued)
    kept = np.zeros(old.num_rows, bool)
    kept[old_rows] = True
    kept_failed = np.empty(0, np.int64)
    if has_failed:
        # A failed object keeps its previous state, so the next cycle compares with what was
        # published; a new one that failed is left out, and is new again next time.
        at = pc.fill_null(pc.index_in(current[KEY].filter(failed_mask), value_set=old[KEY]), -1)
        kept_failed = at.to_numpy(zero_copy_only=False)
        kept_failed = kept_failed[kept_failed >= 0]
        kept[kept_failed] = True
    changes = pa.concat_tables([
        _with_change(good.take(np.flatnonzero(~matched)), Change.ADDED, None),
        _with_change(good.take(new_rows[differ]), Change.CHANGED, old.take(old_rows[differ])),
        _with_change(old.take(np.flatnonzero(~kept)), Change.DELETED, None),
    ])
    state = pa.concat_tables([good, old.take(kept_failed)]) if len(kept_failed) else good
    return Comparison(changes, current.num_rows, failed, state)


def _with_change(objects: pa.Table, change: Change | None, old: pa.Table | None) -> pa.Table:
    """``objects`` with their change, and the old values of changed ones as one struct."""
    old_type = pa.struct([f for f in objects.schema if f.name.startswith(ATTRIBUTE)])
    if old is None:
        old_values = pa.nulls(objects.num_rows, old_type)
    else:
        old_values = pa.StructArray.from_arrays(
            [old[f.name].combine_chunks() for f in old_type], fields=list(old_type)
        )
    changes = pa.repeat(pa.scalar(change, pa.string()), objects.num_rows)
    return objects.append_column("change", changes).append_column("old", old_values)


def change_counts(changes: pa.Table) -> Counter:
    """How many objects each kind of change touched."""
    return Counter({c["values"]: c["counts"] for c in pc.value_counts(changes["change"]).to_pylist()})


def event_ids(table: Table, changes: pa.Table, first_ids: FirstIds, schema: str,
              self_references: Sequence[str] = ()) -> np.ndarray:
    """Each change's event-id (docs/triggerless.md, Commands): adds and modifies numbered
    from ``first_ids[0]``, deletes from ``first_ids[1]`` and completing modifies
    (Change.COMPLETING) from ``first_ids[2]``, each in the class's key order but
    that, through ``self_references`` (Catalogue.self_references), an add or modify comes
    after the add of a new object it names, and a delete before the delete of an object
    it names. ``changes`` needs only its key columns (ORDER) and change, and with
    ``self_references`` its key and those attributes."""
    ids = np.empty(changes.num_rows, np.int64)
    rank = _key_rank(table, changes)
    deleted, new = _kinds(changes)
    completing = pc.equal(changes["change"], Change.COMPLETING.value).to_numpy(zero_copy_only=False)
    for rows, targets, first, later in ((np.flatnonzero(~deleted & ~completing), new, first_ids[0], 1),
                                        (np.flatnonzero(deleted), deleted, first_ids[1], -1),
                                        (np.flatnonzero(completing), None, first_ids[2], 1)):
        depth = np.zeros(len(rows), np.int64)
        if self_references and len(rows) and targets is not None:
            edges = _reference_edges(table, _named(changes, self_references).take(rows), schema, self_references,
                                     targets[rows])
            depth = chain_depths(edges[0], edges[1], rank[rows])
        order = rows[np.lexsort((rank[rows], later * depth))]
        ids[order] = first + np.arange(len(rows))
    return ids


def _named(changes: pa.Table, self_references: Sequence[str]) -> pa.Table:
    """The columns of ``changes`` that its references to its own class need: no row copied whole."""
    return changes.select([KEY, *(ATTRIBUTE + name for name in self_references)])


def _key_rank(table: Table, changes: pa.Table) -> np.ndarray:
    rank = np.empty(changes.num_rows, np.int64)
    rank[key_order(table, changes).to_numpy()] = np.arange(changes.num_rows)
    return rank


def _kinds(changes: pa.Table) -> tuple[np.ndarray, np.ndarray]:
    """Which changes are deletes, and which new objects (added, or current at startup)."""
    kind = changes["change"]
    deleted = pc.equal(kind, Change.DELETED.value).to_numpy(zero_copy_only=False)
    new = pc.is_in(kind, pa.array([Change.ADDED.value, Change.CURRENT.value])).to_numpy(zero_copy_only=False)
    return deleted, new


def association_texts(keys: pa.ChunkedArray | pa.Array, class_name: str, schema: str) -> pa.Array:
    """Each canonical key's association (model/commands.association), as a reference holds it."""
    return pc.binary_join_element_wise(keys, f"table={class_name},schema={schema}", ",")


def _reference_edges(table: Table, changes: pa.Table, schema: str, self_references: Sequence[str],
                     targets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, pa.Array]:
    """The references among ``changes`` to objects of ``targets`` (a mask of its rows), as
    model/chains takes them: (the row holding each, the row it names, the number of its
    attribute in ``self_references``, its text). A row's key held twice names its first."""
    owners = association_texts(changes[KEY], table.name, schema)
    sources, names, numbers, texts = [], [], [], []
    for number, name in enumerate(self_references):
        values = changes[ATTRIBUTE + name].combine_chunks()
        if pa.types.is_list(values.type):
            sources.append(pc.list_parent_indices(values).to_numpy())
            values = pc.list_flatten(values)
        else:
            sources.append(np.arange(changes.num_rows))
        names.append(pc.fill_null(pc.index_in(values, value_set=owners), -1).to_numpy(zero_copy_only=False))
        numbers.append(np.full(len(values), number))
        texts.append(values)
    source, target = np.concatenate(sources), np.concatenate(names)
    kept = target >= 0
    kept[kept] = targets[target[kept]]
    return source[kept], target[kept], np.concatenate(numbers)[kept], pa.concat_arrays(texts).filter(kept)


def cycle_breaks(table: Table, changes: pa.Table, schema: str,
                 self_references: Sequence[str]) -> tuple[np.ndarray, dict[str, list]]:
    """Where a class's new objects, or its deleted ones, name each other in a cycle
    (docs/triggerless.md, Commands): the rows of ``changes`` (its key columns, change, key
    and ``self_references`` suffice) holding the references model/chains.chain_breaks
    takes as not made, and each such attribute's values without them, a list a row
    (split_changes)."""
    if not self_references:
        return np.empty(0, np.int64), {}
    deleted, new = _kinds(changes)
    rank = _key_rank(table, changes)
    found, kept = [], {name: [] for name in self_references}
    for rows, targets in ((np.flatnonzero(~deleted), new), (np.flatnonzero(deleted), deleted)):
        if not len(rows):
            continue
        part = _named(changes, self_references).take(rows)
        source, target, attribute_of, text = _reference_edges(table, part, schema, self_references, targets[rows])
        broken = chain_breaks(source, target, rank[rows])
        if not len(broken):
            continue
        withheld: dict[tuple[int, int], set[str]] = {}
        for row, attribute, value in zip(source[broken].tolist(), attribute_of[broken].tolist(),
                                         text.take(pa.array(broken)).to_pylist()):
            withheld.setdefault((row, attribute), set()).add(value)
        affected = sorted({row for row, _ in withheld})
        found.append(rows[affected])
        for number, name in enumerate(self_references):
            values = part[ATTRIBUTE + name].take(pa.array(affected)).to_pylist()
            gone = [withheld.get((row, number), set()) for row in affected]
            if pa.types.is_list(part.schema.field(ATTRIBUTE + name).type):
                kept[name] += [[v for v in value or () if v not in out] for value, out in zip(values, gone)]
            else:
                kept[name] += [None if value in out else value for value, out in zip(values, gone)]
    return (np.concatenate(found), kept) if found else (np.empty(0, np.int64), {})


def split_changes(table: Table, rows: pa.Table, kept: dict[str, list]) -> tuple[pa.Table, pa.Table]:
    """The rows cycle_breaks names, whole, as (the rows to put in their place, the modifies
    to add). A new object's command goes with its attributes ``kept``, and a modify gives
    the rest after the objects they name; a deleted object's delete stays, and a modify
    among the adds and modifies, before every delete, takes the rest away."""
    trimmed = rows
    for name, values in kept.items():
        index = rows.schema.get_field_index(ATTRIBUTE + name)
        trimmed = trimmed.set_column(index, rows.field(index), pa.array(values, rows.field(index).type))
    deleted = pc.equal(rows["change"], Change.DELETED.value)
    staying = pc.invert(deleted)
    names = state_schema(table).names
    gives = _with_change(rows.select(names), Change.CHANGED, trimmed.select(names)).filter(staying)
    takes = _with_change(trimmed.select(names), Change.CHANGED, rows.select(names)).filter(deleted)
    return pa.concat_tables([trimmed.filter(staying), rows.filter(deleted)]), pa.concat_tables([gives, takes])


def with_cycles_split(table: Table, changes: pa.Table, schema: str, self_references: Sequence[str]) -> pa.Table:
    """``changes`` with the commands of cycle_breaks split (split_changes), the modifies last."""
    rows, kept = cycle_breaks(table, changes, schema, self_references)
    if not len(rows):
        return changes
    replaced, modifies = split_changes(table, changes.take(rows), kept)
    others = np.ones(changes.num_rows, bool)
    others[rows] = False
    return pa.concat_tables([changes.filter(pa.array(others)), replaced, modifies])


def with_forward_references_split(table: Table, changes: pa.Table, forward: Sequence[str]) -> pa.Table:
    """``changes`` with the references ``forward`` (Catalogue.forward_references) given
    after every class's adds and modifies: a new object's command goes without them, and
    a completing modify gives them; a modify that changes one of them comes there whole
    (docs/reduction.md, Triggerless and resync)."""
    if not forward or not changes.num_rows:
        return changes
    kind = changes["change"]
    fresh = pc.is_in(kind, pa.array([Change.ADDED.value, Change.CURRENT.value])).to_numpy(zero_copy_only=False)
    changed = pc.equal(kind, Change.CHANGED.value).to_numpy(zero_copy_only=False)
    old = changes["old"].combine_chunks()
    holds, moves = np.zeros(changes.num_rows, bool), np.zeros(changes.num_rows, bool)
    for name in forward:
        values = changes[ATTRIBUTE + name].combine_chunks()
        multi = pa.types.is_list(values.type)
        present = pc.fill_null(pc.greater(pc.list_value_length(values), 0), False) if multi else pc.is_valid(values)
        holds |= fresh & present.to_numpy(zero_copy_only=False)
        moves |= changed & _changed(old.field(ATTRIBUTE + name), values, multi)
    if not holds.any() and not moves.any():
        return changes
    relabelled = np.where(moves, Change.COMPLETING.value, kind.to_numpy(zero_copy_only=False))
    changes = changes.set_column(changes.schema.get_field_index("change"), "change", pa.array(relabelled, pa.string()))
    rows = np.flatnonzero(holds)
    split = changes.take(rows)
    kept = {name: [[] if pa.types.is_list(split.schema.field(ATTRIBUTE + name).type) else None] * len(rows)
            for name in forward}
    replaced, gives = split_changes(table, split, kept)
    gives = gives.set_column(gives.schema.get_field_index("change"), "change",
                             pa.repeat(pa.scalar(Change.COMPLETING.value, pa.string()), gives.num_rows))
    return pa.concat_tables([changes.filter(pa.array(~holds)), replaced, gives])


def commands(table: Table, schema: str, changes: pa.Table, ids: np.ndarray,
             local_time: str | None) -> Iterator[Command]:
    """The commands of one class's changes, in the changes' order, each with its event-id
    from ``ids`` (event_ids)."""
    names = attributes(table)
    for row, event_id in zip(_rows(changes), ids.tolist()):
        where = association(row[KEY], table.name, schema)
        change = row["change"]
        if change == Change.DELETED:
            yield Command(CommandKind.DELETE, table.name, event_id, where, local_time=local_time)
            continue
        if change == Change.ADDED:
            attrs = tuple(Attr(AttrOp.ADD, a.name, a.xds_type, None, values, a.multi_valued)
                          for a in names if (values := _values(row, a)))
            kind = CommandKind.ADD
        elif change == Change.CURRENT:
            attrs = tuple(Attr(AttrOp.REPLACE, a.name, a.xds_type, None, _values(row, a), a.multi_valued)
                          for a in names)
            # A key-only object: announced by an add alone, as a type 6 would (rules.object_runs).
            kind = CommandKind.MODIFY if attrs else CommandKind.ADD
        else:
            attrs = tuple(_modified(names, row["old"], row))
            kind = CommandKind.MODIFY
        yield Command(kind, table.name, event_id, where, attrs, local_time=local_time)


def _rows(changes: pa.Table) -> Iterable[dict]:
    """The rows of ``changes``, a slice at a time: they may be many (every object, at
    startup) and mapped from a file."""
    for batch in changes.to_batches(max_chunksize=_SLICE_ROWS):
        yield from batch.to_pylist()


def _values(row: dict, attribute: Attribute) -> tuple[str, ...]:
    value = row[ATTRIBUTE + attribute.name]
    if attribute.multi_valued:
        return tuple(value or ())
    return () if value is None else (value,)


def _modified(names: Sequence[Attribute], old: dict, row: dict) -> Iterator[Attr]:
    """A changed object's changed attributes: a single value's remove-value of the old and
    add-value of the new; a multi-valued one's removed and added values."""
    for a in names:
        name = ATTRIBUTE + a.name
        before, after = old[name], row[name]
        if not a.multi_valued:
            if before != after:
                yield Attr(AttrOp.MODIFY, a.name, a.xds_type, before, () if after is None else (after,))
            continue
        removed = sorted(set(before or ()) - set(after or ()))
        added = tuple(sorted(set(after or ()) - set(before or ())))
        for value in removed:
            yield Attr(AttrOp.MODIFY, a.name, a.xds_type, value, (), True)
        if added:
            yield Attr(AttrOp.ADD, a.name, a.xds_type, None, added, True)
