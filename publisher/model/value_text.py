"""A value's XDS text (docs/rendering.md, Value text): the one rule for a value of the event
log, a value read back by query-back, and a key value that names an object.

Values arrive as the database writes them as text (the log holds text, and query-back reads
every column cast to text) or as bytes (binary columns read back). The vectorised
classification takes the texts that are already their own XDS text (AS_IS) without
Python; tests/test_value_text.py proves those patterns agree with ``xds_text``."""

from __future__ import annotations

import base64
import datetime as dt
import re

STRING, OCTET, INT, STATE, TIME = "string", "octet", "int", "state", "time"
TYPES = (STRING, OCTET, INT, STATE, TIME)
DN = "dn"  # a reference: its text is the referenced object's association, not a value's

TRUE_WORDS = ("true", "t", "yes", "y", "on", "1")
FALSE_WORDS = ("false", "f", "no", "n", "off", "0")

# Characters XML 1.0 cannot carry, and the same class in RE2 (pyarrow.compute).
_XML_FORBIDDEN = re.compile("[\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\uFFFE\\uFFFF\ud800-\udfff]")
XML_FORBIDDEN_RE2 = r"[\x00-\x08\x0B\x0C\x0E-\x1F\x{FFFE}\x{FFFF}]"

# \Z, not $: a trailing newline is not part of a number.
_INTEGER = re.compile(r"-?[0-9]+\Z")
_TIME_OF_DAY = re.compile(r"(-?)([0-9]+):([0-9]{2})(?::([0-9]{2})(?:\.[0-9]+)?)?\Z")
_BIGINT = range(-(2**63), 2**63)  # an integer key's values: query-back matches them as such
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)

_CANONICAL_INTEGER = r"^(0|-?[1-9][0-9]*)$"
# Per type, the texts that are already their own XDS text, in RE2 (None: any text). A CHAR
# column's own text has no trailing pad space: CHAR_AS_IS.
AS_IS: dict[str, str | None] = {
    STRING: None,
    OCTET: None,  # the log holds binary values as Base64 already
    INT: _CANONICAL_INTEGER,
    STATE: r"^(true|false)$",
    TIME: _CANONICAL_INTEGER,
}
CHAR_AS_IS = r"(^$|[^ ]$)"
# An integer key value that is surely canonical and within 64 bits (at most 18 digits).
INT_KEY_AS_IS = r"^(0|-?[1-9][0-9]{0,17})$"


class InvalidValue(ValueError):
    """A value that is not valid for its column's type: ``str()`` is the value, then why."""

    def __init__(self, value: object, reason: str) -> None:
        super().__init__(f"{value} {reason}")
        self.value, self.reason = value, reason


def forbidden_position(text: str) -> int | None:
    """1-based position of the first character XML 1.0 cannot carry, or None."""
    match = _XML_FORBIDDEN.search(text)
    return match.start() + 1 if match else None


def xds_text(value: str | bytes | None, xds_type: str, is_char: bool = False) -> str | None:
    """The XDS text of a value of a column of ``xds_type``; None stays None. InvalidValue
    when the value is not one of its type."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        if xds_type != OCTET:
            raise InvalidValue("binary value", f"is not a valid {xds_type} value")
        return base64.b64encode(bytes(value)).decode("ascii")
    if xds_type == INT:
        return _integer(value, "is not a valid int value")
    if xds_type == STATE:
        word = value.strip(" ").lower()
        if word in TRUE_WORDS:
            return "true"
        if word in FALSE_WORDS:
            return "false"
        raise InvalidValue(value, "is not a valid state value")
    if xds_type == TIME:
        return str(_epoch_seconds(value))
    return value.rstrip(" ") if is_char else value


def _integer(text: str, reason: str) -> str:
    """The canonical text of an integer (spaces around it dropped); InvalidValue(reason)."""
    trimmed = text.strip(" ")
    if not _INTEGER.match(trimmed):
        raise InvalidValue(text, reason)
    return str(int(trimmed))


def _epoch_seconds(text: str) -> int:
    """Seconds since 1970-01-01 UTC of an integer, a time of day (seconds of the day), or an
    ISO date or date-time (naive ones are UTC); InvalidValue otherwise."""
    trimmed = text.strip(" ")
    if _INTEGER.match(trimmed):
        return int(trimmed)
    if clock := _TIME_OF_DAY.match(trimmed):
        sign, hours, minutes, seconds = clock.groups()
        total = int(hours) * 3600 + int(minutes) * 60 + int(seconds or 0)
        return -total if sign else total
    try:
        moment = dt.datetime.fromisoformat(trimmed)
    except ValueError:
        raise InvalidValue(text, "is not a valid time value") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return int((moment - _EPOCH).total_seconds())


def key_text(value: str | bytes, xds_type: str, is_char: bool = False) -> str:
    """A key value as objects are named and matched by it: integers canonical and within
    64 bits, CHAR without pad spaces, binary in Base64, any other type as the database
    writes it. InvalidValue when an integer key is none."""
    if isinstance(value, (bytes, bytearray, memoryview)):
        return xds_text(value, xds_type)  # Base64, or InvalidValue for a non-binary column
    if xds_type == INT:
        text = _integer(value, "is not an integer")
        if int(text) not in _BIGINT:
            raise InvalidValue(value, "is not a 64-bit integer")
        return text
    return value.rstrip(" ") if is_char else value
