"""The query-back state pass two ways: column by column with pyarrow (vectorised_state.py)
against the rules row by row. Random current rows, good and bad, of a class, its child
table and a view with a two-column key; the same rows.STATE must come out."""

from __future__ import annotations

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from publisher.model import value_text as values
from publisher.model.catalogue import Catalogue, Column, MultiValued, Table
from publisher.reduce.current import current_pass
from tests import test_vectorised as classified

# The classification test's columns (every type, CHAR, Time Syntax 2 and 3), and references.
USR_COLUMNS = (
    *classified.CATALOGUE.tables["usr"].columns,
    Column("manager", 12, values.DN, False, reference="usr"),
    Column("grp", 13, values.DN, False, reference="grp"),
    Column("lost", 14, values.DN, False, reference="nowhere"),
)
USR = Table(
    "usr",
    USR_COLUMNS,
    ("idu",),
    key_is_primary=True,
    multi_valued=(
        MultiValued("usr_phone", ("owner",), Column("phoneno", 2, values.STRING, False)),
        MultiValued("usr_phone", ("owner",), Column("boss", 3, values.DN, False, reference="usr")),
    ),
)
GRP = Table("grp", (Column("gname", 1, values.STRING, False), Column("note", 2, values.STRING, True)),
            ("gname",), key_is_primary=True)
VIEW = Table("pair", (Column("a", 1, values.INT, False), Column("b", 2, values.STRING, True),
                      Column("c", 3, values.STRING, False)), ("a", "b"))
CODE = Table("code", (Column("k", 1, values.STRING, True), Column("v", 2, values.STRING, False)), ("k",),
             key_is_primary=True)
BLOB = Table("blob", (Column("id", 1, values.OCTET, False), Column("v", 2, values.STRING, False)), ("id",),
             key_is_primary=True)
CATALOGUE = Catalogue("indirect", {"usr": USR, "grp": GRP, "pair": VIEW, "code": CODE, "blob": BLOB})

# The classification test's texts, and keys' forms: non-canonical, 18 digits, quoted.
texts = st.one_of(
    classified.texts,
    st.sampled_from(["007", "No ", "123456789012345678", "a b", 'q"t', "g1", "+", "x=y", "0", "-0"]),
)
binary = st.sampled_from([None, b"", b"\x00\xff", b"abc"])


def _batch(table: Table, rows: list[dict]) -> pa.RecordBatch:
    fields = [(c.name, pa.binary() if c.xds_type == values.OCTET else pa.string()) for c in table.columns]
    arrays = [pa.array([r[name] for r in rows], kind) for name, kind in fields]
    return pa.RecordBatch.from_arrays(arrays, schema=pa.schema(fields))


def _rows(table: Table):
    row = st.fixed_dictionaries(
        {c.name: binary if c.xds_type == values.OCTET else texts for c in table.columns}
    )
    return st.lists(row, max_size=30)


def _both(owner: Table, table: Table, rows: list[dict]) -> None:
    batch = _batch(table, rows)
    fast = list(current_pass(CATALOGUE, owner, table)(iter([batch])))
    rules = list(current_pass(CATALOGUE, owner, table, vectorised=False)(iter([batch])))
    as_rows = [r for b in fast for r in b.to_pylist()]
    assert as_rows == [r for b in rules for r in b.to_pylist()]
    assert all(b.schema == rules[0].schema for b in fast)


@settings(max_examples=150, deadline=None)
@given(_rows(USR))
def test_a_class_s_current_rows(rows):
    _both(USR, USR, rows)


@settings(max_examples=100, deadline=None)
@given(_rows(USR.children()[0]))
def test_a_child_table_s_rows(rows):
    (child,) = USR.children()
    _both(USR, child, rows)


@settings(max_examples=100, deadline=None)
@given(st.one_of(_rows(VIEW).map(lambda r: (VIEW, r)), _rows(CODE).map(lambda r: (CODE, r)),
                 _rows(GRP).map(lambda r: (GRP, r)), _rows(BLOB).map(lambda r: (BLOB, r))))
def test_a_two_column_key_a_char_key_a_string_key_and_a_binary_key(table_rows):
    table, rows = table_rows
    _both(table, table, rows)


def test_an_empty_batch():
    _both(USR, USR, [])
