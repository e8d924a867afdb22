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
        ("9223372036854775808", vt.INT, False, "is not a 64-bit integer"),
        ("x", vt.INT, False, "is not an integer"),
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
