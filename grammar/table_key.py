"""The table_key grammar (docs/table-key.md; BNF in ``table_key.bnf``).

``parse_table_key`` returns the ordered (column, value) pairs; ``format_table_key`` is its
exact inverse and quotes a value only where the grammar needs it, so
``format_table_key(parse_table_key(k))`` is the canonical key.
"""

from __future__ import annotations

import re

import pyparsing as pp

__all__ = ["TableKeyError", "parse_table_key", "format_table_key", "TABLE_KEY"]

SPECIALS = ",;'+\"=\\<>"
BLANKS = " \t\r\n"

pp.ParserElement.set_default_whitespace_chars(BLANKS)

EQUALS = pp.Suppress("=").set_name('"="')
PLUS = pp.Suppress("+").set_name('"+"')
COLUMN_NAME = pp.Regex(r"[^,;'+\"=\\<>\s]+").set_name("column-name")
BARE_VALUE = pp.Regex(r"[^,;'+\"=\\<>]+").set_name("bare-value")
QUOTED_VALUE = pp.Regex(r'"(?:[^"\\]|\\["\\])*"').set_name("quoted-value")
VALUE = (QUOTED_VALUE | BARE_VALUE).set_name("value")
UNIQUE_ROW_IDENTIFIER = pp.Group(
    pp.Located(COLUMN_NAME + EQUALS + VALUE)
).set_name("unique-row-identifier")
TABLE_KEY = pp.DelimitedList(
    UNIQUE_ROW_IDENTIFIER, delim=PLUS, allow_trailing_delim=False
).set_name("table-key")
TABLE_KEY.parse_with_tabs()  # a tab inside a quoted value is data, not layout

pp.ParserElement.set_default_whitespace_chars(" \n\t\r")

_ESCAPE = re.compile(r'\\(["\\])')
_NEEDS_QUOTES = re.compile(r"[,;'+\"=\\<>]")
# The common case (no quotes, no blanks, no specials) in one regular expression; it must
# give exactly what the grammar gives, which tests/test_table_key.py checks.
_PLAIN_KEY = re.compile(r"[^,;'+\"=\\<>\s]+=[^,;'+\"=\\<>\s]+(?:\+[^,;'+\"=\\<>\s]+=[^,;'+\"=\\<>\s]+)*")


class TableKeyError(ValueError):
    """A malformed table_key; ``position`` is the 1-based character where it goes wrong."""

    def __init__(self, message: str, text: str, position: int) -> None:
        super().__init__(f"{message} at character {position} of {text!r}")
        self.text = text
        self.position = position


def _value_of(token: str) -> str:
    if token.startswith('"'):
        return _ESCAPE.sub(r"\1", token[1:-1])
    return token.strip(BLANKS)


def parse_table_key(text: str) -> list[tuple[str, str]]:
    """Parse ``text`` into its ordered (column, value) pairs, or raise TableKeyError."""
    if _PLAIN_KEY.fullmatch(text):
        pairs = [tuple(pair.split("=", 1)) for pair in text.split("+")]
        if len({column for column, _ in pairs}) == len(pairs):
            return pairs  # type: ignore[return-value]
    try:
        located = TABLE_KEY.parse_string(text, parse_all=True)
    except pp.ParseBaseException as exc:
        raise TableKeyError(_describe(exc, text), text, exc.loc + 1) from None
    pairs: list[tuple[str, str]] = []
    seen: set[str] = set()
    for (start, (column, token), _end) in located:
        if column in seen:
            raise TableKeyError(f"duplicate column {column!r}", text, start + 1)
        seen.add(column)
        pairs.append((column, _value_of(token)))
    return pairs


def _describe(exc: pp.ParseBaseException, text: str) -> str:
    rest = text[exc.loc :]
    before = text[: exc.loc].rstrip(BLANKS)
    if not text.strip(BLANKS):
        return "empty table_key"
    if rest.startswith('"'):
        return "unterminated quoted value or bad escape (only \\\" and \\\\ are allowed)"
    if before.endswith("=") and (not rest.strip(BLANKS) or rest[0] == "+"):
        return "empty value"
    if not rest.strip(BLANKS):
        return "missing '='"
    if rest.startswith("+"):
        return "'+' without a unique-row-identifier after it"
    if rest.startswith("=") and (not before or before.endswith("+")):
        return "empty column name"
    if rest[0] in SPECIALS:
        return f"{rest[0]!r} in a value that is not quoted"
    return f"unexpected {rest[0]!r}"


def _format_value(value: str) -> str:
    if value and value == value.strip(BLANKS) and not _NEEDS_QUOTES.search(value):
        return value
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def format_table_key(pairs: list[tuple[str, str]]) -> str:
    """Write (column, value) pairs as a table_key, quoting only where needed."""
    return "+".join(f"{column}={_format_value(value)}" for column, value in pairs)
