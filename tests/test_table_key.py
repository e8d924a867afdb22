"""The table_key grammar: documented examples, errors with positions, and the round trip."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grammar import TableKeyError, format_table_key, parse_table_key
from grammar import table_key as grammar_module


@pytest.mark.parametrize(
    ("text", "pairs"),
    [
        ("idu=1", [("idu", "1")]),
        ("pk_empno=1", [("pk_empno", "1")]),
        ("pkey1=value1+pkey2=value2", [("pkey1", "value1"), ("pkey2", "value2")]),
        ('pkey=", ; \' + \\" = \\\\ < >"', [("pkey", ", ; ' + \" = \\ < >")]),
        ("name=John Smith", [("name", "John Smith")]),
        ('k=""', [("k", "")]),
        ("k=Größe", [("k", "Größe")]),
    ],
)
def test_documented_keys(text: str, pairs: list[tuple[str, str]]) -> None:
    assert parse_table_key(text) == pairs
    assert format_table_key(pairs) == text


@pytest.mark.parametrize(
    ("text", "canonical"),
    [("idu= 1", "idu=1"), (" idu = 1 ", "idu=1"), ('k="abc"', "k=abc"), ("a=1 + b=2", "a=1+b=2")],
)
def test_padding_and_needless_quotes_are_canonicalised(text: str, canonical: str) -> None:
    assert format_table_key(parse_table_key(text)) == canonical


@pytest.mark.parametrize(
    ("text", "position", "words"),
    [
        ("idu=", 5, "empty value"),
        ("idu=+b=1", 5, "empty value"),
        ("idu", 4, "missing '='"),
        ('k="abc', 3, "unterminated"),
        ('k="a\\x"', 3, "bad escape"),
        ("idu=1+idu=2", 7, "duplicate column 'idu'"),
        ("=1", 1, "empty column name"),
        ("a=1+", 4, "'+' without"),
        ("a=x<y", 4, "'<' in a value that is not quoted"),
        ("", 1, "empty table_key"),
    ],
)
def test_malformed_keys_name_the_position(text: str, position: int, words: str) -> None:
    with pytest.raises(TableKeyError) as caught:
        parse_table_key(text)
    assert caught.value.position == position
    assert words in str(caught.value)
    assert f"at character {position}" in str(caught.value)


column_names = st.text(
    alphabet=st.characters(blacklist_characters=",;'+\"=\\<> \t\r\n", blacklist_categories=("Cs",)),
    min_size=1,
    max_size=12,
).filter(lambda s: s.strip() == s and not any(c.isspace() for c in s))
any_values = st.text(
    alphabet=st.one_of(st.sampled_from(list(",;'+\"=\\<> \t")), st.characters(blacklist_categories=("Cs",))),
    max_size=20,
)


@given(st.lists(st.tuples(column_names, any_values), min_size=1, max_size=4, unique_by=lambda p: p[0]))
def test_round_trip(pairs: list[tuple[str, str]]) -> None:
    text = format_table_key(pairs)
    assert parse_table_key(text) == pairs
    assert format_table_key(parse_table_key(text)) == text


@given(st.lists(st.tuples(column_names, any_values), min_size=1, max_size=4, unique_by=lambda p: p[0]))
def test_fast_path_gives_the_grammars_result(pairs: list[tuple[str, str]]) -> None:
    text = format_table_key(pairs)
    located = grammar_module.TABLE_KEY.parse_string(text, parse_all=True)
    by_grammar = [(column, grammar_module._value_of(token)) for _s, (column, token), _e in located]
    assert parse_table_key(text) == by_grammar
