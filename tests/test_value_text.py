"""A value's XDS text (docs/rendering.md, Value text): one rule, and the patterns the
vectorised classification derives from it agree with it on every value type."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from publisher.model import value_text as vt

TEXTS = st.one_of(
    st.text(max_size=12),
    st.from_regex(r"\A-?[0-9]{1,22}\Z"),
    st.from_regex(r"\A ?-?0*[0-9]{1,3} ?\Z"),
    st.sampled_from(["true", "false", "True", " yes", "no", "2", "-0", "007", "10:30", "1:02:03.5",
                     "2024-02-29", "2024-02-29T10:00:00Z", "2024-02-29 10:00:00.25+02:00",
                     "abc ", " abc", "", " ", "half past", "1e3", "5\n"]),
)


def _matches(pattern: str | None, text: str) -> bool:
    if pattern is None:
        return True
    return pc.match_substring_regex(pa.array([text]), pattern)[0].as_py()


def _text_or_error(text: str, xds_type: str, is_char: bool = False) -> str | None:
    try:
        return vt.xds_text(text, xds_type, is_char)
    except vt.InvalidValue:
        return None


@settings(max_examples=500, deadline=None)
@given(TEXTS, st.sampled_from(vt.TYPES))
def test_a_text_the_vectorised_path_takes_as_is_is_its_own_xds_text(text, xds_type):
    if _matches(vt.AS_IS[xds_type], text):
        assert _text_or_error(text, xds_type) == text


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_a_char_text_taken_as_is_has_no_pad_spaces_to_lose(text):
    if _matches(vt.CHAR_AS_IS, text):
        assert vt.xds_text(text, vt.STRING, is_char=True) == text


@settings(max_examples=300, deadline=None)
@given(TEXTS)
def test_an_integer_key_taken_as_is_is_canonical_and_64_bit(text):
    if _matches(vt.INT_KEY_AS_IS, text):
        assert vt.key_text(text, vt.INT) == text


@pytest.mark.parametrize(
    ("value", "xds_type", "is_char", "expected"),
    [
        # state: a boolean, 1/0, or a word, in any case; anything else is not a state
        ("true", vt.STATE, False, "true"),
        ("t", vt.STATE, False, "true"),
        (" YES ", vt.STATE, False, "true"),
        ("On", vt.STATE, False, "true"),
        ("1", vt.STATE, False, "true"),
        ("no", vt.STATE, False, "false"),
        ("F", vt.STATE, False, "false"),
        ("0", vt.STATE, False, "false"),
        ("2", vt.STATE, False, None),
        ("maybe", vt.STATE, False, None),
        # int: an integer, canonical
        ("42", vt.INT, False, "42"),
        (" 007 ", vt.INT, False, "7"),
        ("-0", vt.INT, False, "0"),
        ("4.0", vt.INT, False, None),
        ("5\n", vt.INT, False, None),
        # time: seconds since 1970 UTC
        ("86400", vt.TIME, False, "86400"),
        ("10:30", vt.TIME, False, "37800"),
        ("10:30:15.75", vt.TIME, False, "37815"),
        ("-838:59:59", vt.TIME, False, "-3020399"),
        ("1970-01-02", vt.TIME, False, "86400"),
        ("1970-01-02 00:00:01", vt.TIME, False, "86401"),
        ("1970-01-02T02:00:00+02:00", vt.TIME, False, "86400"),
        ("half past ten", vt.TIME, False, None),
        # octet: Base64 as the log holds it; bytes read back are encoded
        ("qqo=", vt.OCTET, False, "qqo="),
        (b"\xaa\xaa", vt.OCTET, False, "qqo="),
        (b"\xaa", vt.STRING, False, None),
        # string: as is; CHAR(n) without its pad spaces
        ("  Doe  ", vt.STRING, False, "  Doe  "),
        ("Doe   ", vt.STRING, True, "Doe"),
        ("12.50", vt.STRING, False, "12.50"),
        (None, vt.INT, False, None),
    ],
)
def test_value_text(value, xds_type, is_char, expected):
    if expected is None and value is not None:
        with pytest.raises(vt.InvalidValue):
            vt.xds_text(value, xds_type, is_char)
    else:
        assert vt.xds_text(value, xds_type, is_char) == expected


@pytest.mark.parametrize(
    ("value", "xds_type", "is_char", "expected"),
    [
        ("1", vt.INT, False, "1"),
        ("01", vt.INT, False, "1"),
        (" 1", vt.INT, False, "1"),
        ("9223372036854775807", vt.INT, False, "9223372036854775807"),
        ("18446744073709551615", vt.INT, False, "18446744073709551615"),  # an unsigned BIGINT's
        ("18446744073709551616", vt.INT, False, "is not a 64-bit integer"),
        ("-9223372036854775809", vt.INT, False, "is not a 64-bit integer"),
        ("x", vt.INT, False, "is not an integer"),
        ("1", vt.STATE, False, "true"),  # one text whatever the database writes
        ("false", vt.STATE, False, "false"),
        ("2", vt.STATE, False, "is not a valid state value"),
        ("bob  ", vt.STRING, True, "bob"),
        ("Bob ", vt.STRING, False, "Bob "),
        ("2024-01-01", vt.TIME, False, "2024-01-01"),  # matched as the database writes it
        (b"\x01", vt.OCTET, False, "AQ=="),
    ],
)
def test_key_text(value, xds_type, is_char, expected):
    if expected.startswith("is not"):
        with pytest.raises(vt.InvalidValue, match=expected):
            vt.key_text(value, xds_type, is_char)
    else:
        assert vt.key_text(value, xds_type, is_char) == expected


def test_forbidden_position_is_one_based_and_covers_surrogates():
    assert vt.forbidden_position("ab\x01") == 3
    assert vt.forbidden_position("\ud800") == 1
    assert vt.forbidden_position("tab\tand\nnewline") is None
    for text in ("\x00", "\x0b", "\ufffe", "\uffff"):
        assert pc.match_substring_regex(pa.array([text]), vt.XML_FORBIDDEN_RE2)[0].as_py()


# Time Syntax (docs/rendering.md, Value text): date, time and timestamp columns.
TIME_TEXTS = st.one_of(
    TEXTS,
    st.dates().map(str),
    st.datetimes().map(str),
    st.datetimes().map(lambda d: d.isoformat(sep=" ", timespec="milliseconds")),
    st.times().map(str),
    st.from_regex(r"\A[0-9]{4}-[0-9]{2}-[0-9]{2}( [0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?)?\Z"),
    st.from_regex(r"\A[0-9]{2}:[0-9]{2}:[0-9]{2}\Z"),
    st.sampled_from(["2024-01-28 10:00:00.0", "2024-01-28 10:00:00.10", "2024-02-29", "0999-01-01",
                     "23:59:59", "24:00:00", "2024-01-28 10:00:00.5+00", "10:00:00Z"]),
)


def _time(value, kind: str, syntax: int):
    xds_type, form = vt.time_column(kind, syntax)
    return vt.xds_text(value, xds_type, False, form)


@settings(max_examples=800, deadline=None)
@given(TIME_TEXTS, st.sampled_from(sorted(vt.TIME_AS_IS)))
def test_a_time_text_the_vectorised_path_takes_as_is_is_its_own_xds_text(text, form):
    kind, syntax = form.split(":")
    if _matches(vt.TIME_AS_IS[form], text):
        assert _time(text, kind, int(syntax)) == text


def test_time_syntax_types_and_forms():
    assert vt.time_column(vt.DATE_KIND, 1) == (vt.TIME, "date:1")
    assert vt.time_column(vt.TIME_KIND, 2) == (vt.STRING, "time:2")
    assert vt.time_column(vt.TIMESTAMP_KIND, vt.TimeSyntax.JAVA) == (vt.STRING, "timestamp:3")
    with pytest.raises(ValueError):
        vt.time_form(vt.DATE_KIND, 4)


@pytest.mark.parametrize(
    ("value", "kind", "integer", "canonical", "java"),
    [
        # dates: each database writes yyyy-mm-dd
        ("2024-01-31", "date", "1706659200", "20240131", "2024-01-31"),
        (" 2024-02-29 ", "date", "1709164800", "20240229", "2024-02-29"),
        ("0044-03-15", "date", "-60772291200", "00440315", "0044-03-15"),
        # times of day: fractions dropped; an offset (PostgreSQL's TIME WITH TIME ZONE)
        # converted to UTC, around the clock
        ("10:00:00", "time", "36000", "100000", "10:00:00"),
        ("09:05", "time", "32700", "090500", "09:05:00"),
        ("23:59:59.999999", "time", "86399", "235959", "23:59:59"),
        ("10:00:00+02", "time", "28800", "080000", "08:00:00"),
        ("01:30:00.25+02:00", "time", "84600", "233000", "23:30:00"),
        ("22:00:00-03:30", "time", "5400", "013000", "01:30:00"),
        # timestamps: nanoseconds always nine digits (2), trailing zeros dropped but one (3)
        ("2024-01-31 10:00:00", "timestamp", "1706695200", "20240131100000000000000",
         "2024-01-31 10:00:00.0"),
        ("2024-01-31 10:00:00.123", "timestamp", "1706695200", "20240131100000123000000",
         "2024-01-31 10:00:00.123"),
        ("2024-01-31 10:00:00.120000", "timestamp", "1706695200", "20240131100000120000000",
         "2024-01-31 10:00:00.12"),
        ("2024-01-31T10:00:00.000000001", "timestamp", "1706695200", "20240131100000000000001",
         "2024-01-31 10:00:00.000000001"),
        ("2024-01-31 10:00:00.1234567891", "timestamp", "1706695200", "20240131100000123456789",
         "2024-01-31 10:00:00.123456789"),
        ("2024-01-31 10:00", "timestamp", "1706695200", "20240131100000000000000",
         "2024-01-31 10:00:00.0"),
        # with an offset (PostgreSQL's TIMESTAMP WITH TIME ZONE): converted to UTC
        ("2024-01-31 08:00:00.12+00", "timestamp", "1706688000", "20240131080000120000000",
         "2024-01-31 08:00:00.12"),
        ("2024-01-01 01:00:00+05:45", "timestamp", "1704050100", "20231231191500000000000",
         "2023-12-31 19:15:00.0"),
        ("2024-01-31T10:00:00Z", "timestamp", "1706695200", "20240131100000000000000",
         "2024-01-31 10:00:00.0"),
        ("1900-01-01 00:00:00+00:19:32", "timestamp", "-2208989972", "18991231234028000000000",
         "1899-12-31 23:40:28.0"),
        ("1969-12-31 23:59:59-00:00:01", "timestamp", "0", "19700101000000000000000",
         "1970-01-01 00:00:00.0"),
    ],
)
def test_time_syntax_of_each_kind(value, kind, integer, canonical, java):
    assert _time(value, kind, vt.TimeSyntax.INTEGER) == integer
    assert _time(value, kind, vt.TimeSyntax.CANONICAL) == canonical
    assert _time(value, kind, vt.TimeSyntax.JAVA) == java
    assert _time(None, kind, vt.TimeSyntax.JAVA) is None


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        # not of its column's kind
        ("2024-01-31 10:00:00", "date"),
        ("10:00:00", "date"),
        ("1706659200", "date"),
        ("2024-01-31", "time"),
        ("2024-01-31", "timestamp"),
        ("10:00:00", "timestamp"),
        ("1706695200", "timestamp"),
        # not a valid one: MariaDB's zero date, a day or hour out of range, a time past one
        # day (PostgreSQL's 24:00:00, MariaDB's intervals), a leap second, a bad offset
        ("0000-00-00", "date"),
        ("2023-02-29", "date"),
        ("2024-13-01", "date"),
        ("0000-00-00 00:00:00", "timestamp"),
        ("2024-01-31 25:00:00", "timestamp"),
        ("24:00:00", "time"),
        ("-10:00:00", "time"),
        ("838:59:59", "time"),
        ("23:59:60", "time"),
        ("10:00:00+24", "time"),
        ("10:00:00+02:60", "time"),
        ("2024-01-31 10:00:00 +02", "timestamp"),
        # what no ISO text is: PostgreSQL's infinity and BC dates, other date styles
        ("infinity", "timestamp"),
        ("0044-03-15 BC", "date"),
        ("31.01.2024", "date"),
        ("20240131", "date"),
        ("2024-W05-3", "date"),
        ("0001-01-01 00:00:00+02", "timestamp"),  # before year 1 in UTC
        ("10:00:00\n", "time"),
        ("", "date"),
    ],
)
def test_time_syntax_rejects_a_value_not_of_its_kind(value, kind):
    for syntax in (vt.TimeSyntax.CANONICAL, vt.TimeSyntax.JAVA):
        with pytest.raises(vt.InvalidValue, match=f"is not a valid {kind} value"):
            _time(value, kind, syntax)


def test_time_syntax_1_takes_any_time_value_as_before():
    """Under Time Syntax 1 every time column takes what a time column took before the
    parameter: an integer, a time of day past a day, a date or a date-time; a time of day
    with an offset is the seconds of its time of day in UTC."""
    for kind in vt.TIME_KINDS:
        assert _time("86400", kind, 1) == "86400"
        assert _time("-838:59:59", kind, 1) == "-3020399"
        assert _time("1970-01-02", kind, 1) == "86400"
        assert _time("10:00:00+02", kind, 1) == "28800"
        assert _time(" 1970-01-02T02:00:00+02:00 ", kind, 1) == "86400"
        with pytest.raises(vt.InvalidValue, match="is not a valid time value"):
            _time("half past ten", kind, 1)
    assert vt.xds_text("10:00:00+02", vt.TIME) == "28800"  # a time column without a form
