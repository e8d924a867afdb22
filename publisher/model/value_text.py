"""A value's XDS text (docs/rendering.md, Value text): the one rule for a value of the event
log, a value read back by query-back, and a key value that names an object.

Values arrive as the database writes them as text (the log holds text, and query-back reads
every column cast to text) or as bytes (binary columns read back). The vectorised
classification takes the texts that are already their own XDS text (AS_IS, and TIME_AS_IS
for date, time and timestamp columns under each Time Syntax) without Python;
tests/test_value_text.py proves those patterns agree with ``xds_text``."""

from __future__ import annotations

import base64
import datetime as dt
import re
from enum import IntEnum

from publisher.model.statuses import shown_value

STRING, OCTET, INT, STATE, TIME = "string", "octet", "int", "state", "time"
TYPES = (STRING, OCTET, INT, STATE, TIME)
DN = "dn"  # a reference: its text is the referenced object's association, not a value's


class TimeSyntax(IntEnum):
    """Time Syntax (docs/parameters.md): how date, time and timestamp columns publish."""

    INTEGER = 1  # seconds since 1970-01-01 00:00 UTC, type time
    CANONICAL = 2  # HHMMSS, CCYYMMDD, CCYYMMDDHHMMSSNNNNNNNNN, type string
    JAVA = 3  # hh:mm:ss, yyyy-mm-dd, yyyy-mm-dd hh:mm:ss.f as java.sql prints them, type string


# The kinds of time column.
DATE_KIND, TIME_KIND, TIMESTAMP_KIND = "date", "time", "timestamp"
TIME_KINDS = (DATE_KIND, TIME_KIND, TIMESTAMP_KIND)


def time_form(kind: str, syntax: int) -> str:
    """What the rule needs of a time column (Column.time_form): its kind and Time Syntax."""
    return f"{kind}:{TimeSyntax(syntax).value}"


def time_column(kind: str, syntax: int) -> tuple[str, str]:
    """(XDS type, time_form) of a column of ``kind`` published under Time Syntax ``syntax``."""
    return (TIME if TimeSyntax(syntax) == TimeSyntax.INTEGER else STRING), time_form(kind, syntax)


_TIME_FORMS = {time_form(k, s): (k, s) for k in TIME_KINDS for s in TimeSyntax}

TRUE_WORDS = ("true", "t", "yes", "y", "on", "1")
FALSE_WORDS = ("false", "f", "no", "n", "off", "0")

# Characters XML 1.0 cannot carry, and the same class in RE2 (pyarrow.compute).
_XML_FORBIDDEN = re.compile("[\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\uFFFE\\uFFFF\ud800-\udfff]")
XML_FORBIDDEN_RE2 = r"[\x00-\x08\x0B\x0C\x0E-\x1F\x{FFFE}\x{FFFF}]"

# \Z, not $: a trailing newline is not part of a number.
_INTEGER = re.compile(r"-?[0-9]+\Z")
_TIME_OF_DAY = re.compile(r"(-?)([0-9]+):([0-9]{2})(?::([0-9]{2})(?:\.[0-9]+)?)?\Z")
# An integer key's values: query-back matches them as such (signed and unsigned BIGINT).
_BIGINT = range(-(2**63), 2**64)
_HOUR_DIGITS = 15  # a time of day's hours, at most: more is no time (and int() refuses 4,300)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
# A time column's values under Time Syntax 2 and 3, by kind: ISO dates, times of day and
# date-times as the databases write them, a fraction of up to nine digits kept, an offset
# (Z, +HH, +HH:MM, +HH:MM:SS) converted to UTC.
_DATE = r"(?P<year>[0-9]{4})-(?P<month>[0-9]{2})-(?P<day>[0-9]{2})"
_CLOCK = (
    r"(?P<hour>[0-9]{1,2}):(?P<minute>[0-9]{2})"
    r"(?::(?P<second>[0-9]{2})(?:\.(?P<fraction>[0-9]+))?)?"
    r"(?P<offset>Z|[+-][0-9]{2}(?::?[0-9]{2}){0,2})?"
)
_TIME_SHAPES = {
    DATE_KIND: re.compile(_DATE + r"\Z"),
    TIME_KIND: re.compile(_CLOCK + r"\Z"),
    TIMESTAMP_KIND: re.compile(_DATE + "[T ]" + _CLOCK + r"\Z"),
}
# A moment's fields, and what a time of day takes for its date.
_FIELDS = (("year", 2000), ("month", 1), ("day", 1), ("hour", 0), ("minute", 0), ("second", 0))

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
# Per type, the key values that are surely their own key text (key_text); any other
# type's are as the database writes them.
KEY_AS_IS = {INT: INT_KEY_AS_IS, STATE: AS_IS[STATE]}
# Per time_form, the texts that are surely their own XDS text: under Time Syntax 1 the
# integers; under 3 a day 01-28 of a year 1000-9999, a time of day, and a timestamp with
# its shortest fraction; under 2 none (no database writes that form).
_NEVER = r"[^\s\S]"
_JAVA_DATE = r"[1-9][0-9]{3}-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])"
_JAVA_TIME = r"([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
TIME_AS_IS: dict[str, str] = {
    **{time_form(k, TimeSyntax.INTEGER): _CANONICAL_INTEGER for k in TIME_KINDS},
    **{time_form(k, TimeSyntax.CANONICAL): _NEVER for k in TIME_KINDS},
    time_form(DATE_KIND, TimeSyntax.JAVA): f"^{_JAVA_DATE}$",
    time_form(TIME_KIND, TimeSyntax.JAVA): f"^{_JAVA_TIME}$",
    time_form(TIMESTAMP_KIND, TimeSyntax.JAVA): rf"^{_JAVA_DATE} {_JAVA_TIME}\.(0|[0-9]{{0,8}}[1-9])$",
}


class InvalidValue(ValueError):
    """A value that is not valid for its column's type: ``str()`` is the value, then why."""

    def __init__(self, value: object, reason: str) -> None:
        super().__init__(f"{shown_value(value)} {reason}")
        self.value, self.reason = value, reason


def forbidden_position(text: str) -> int | None:
    """1-based position of the first character XML 1.0 cannot carry, or None."""
    match = _XML_FORBIDDEN.search(text)
    return match.start() + 1 if match else None


def xds_text(value: str | bytes | None, xds_type: str, is_char: bool = False,
             time_form: str | None = None) -> str | None:
    """The XDS text of a value of a column of ``xds_type`` (a time column: of ``time_form``);
    None stays None. InvalidValue when the value is not one of its type."""
    if value is None:
        return None
    if isinstance(value, (bytes, bytearray, memoryview)):
        if xds_type != OCTET:
            raise InvalidValue("binary value", f"is not a valid {xds_type} value")
        return base64.b64encode(bytes(value)).decode("ascii")
    if time_form is not None:
        return _time_text(value, time_form)
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
        return _epoch_seconds(value)
    return value.rstrip(" ") if is_char else value


def _integer(text: str, reason: str) -> str:
    """The canonical text of an integer (spaces around it dropped); InvalidValue(reason).
    Canonical by its digits, not through int(): Python refuses to convert an integer of
    more than 4,300 digits, and a row must not stop the cycle (docs/statuses.md)."""
    trimmed = text.strip(" ")
    if not _INTEGER.match(trimmed):
        raise InvalidValue(text, reason)
    digits = trimmed.lstrip("-").lstrip("0") or "0"
    return "-" + digits if trimmed.startswith("-") and digits != "0" else digits


def _epoch_seconds(text: str) -> str:
    """Seconds since 1970-01-01 UTC of an integer, a time of day (seconds of the day), or an
    ISO date or date-time (naive ones are UTC), as canonical integer text; InvalidValue
    otherwise."""
    trimmed = text.strip(" ")
    if _INTEGER.match(trimmed):
        return _integer(trimmed, "")
    if clock := _TIME_OF_DAY.match(trimmed):
        sign, hours, minutes, seconds = clock.groups()
        if len(hours) > _HOUR_DIGITS:
            raise InvalidValue(text, "is not a valid time value")
        total = int(hours) * 3600 + int(minutes) * 60 + int(seconds or 0)
        return str(-total if sign else total)
    if _TIME_SHAPES[TIME_KIND].match(trimmed):  # with an offset: its time of day in UTC
        moment, _nanos = _moment(text, TIME_KIND)
        return str(moment.hour * 3600 + moment.minute * 60 + moment.second)
    try:
        moment = dt.datetime.fromisoformat(trimmed)
    except ValueError:
        raise InvalidValue(text, "is not a valid time value") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return str(int((moment - _EPOCH).total_seconds()))


def _time_text(text: str, form: str) -> str:
    """A time column's value under its Time Syntax (docs/rendering.md, Value text)."""
    kind, syntax = _TIME_FORMS[form]
    if syntax == TimeSyntax.INTEGER:
        return _epoch_seconds(text)
    moment, nanos = _moment(text, kind)
    separator, middle = ("", "") if syntax == TimeSyntax.CANONICAL else ("-", " ")
    day = f"{moment.year:04d}{separator}{moment.month:02d}{separator}{moment.day:02d}"
    clock = f"{moment.hour:02d}:{moment.minute:02d}:{moment.second:02d}"
    if syntax == TimeSyntax.CANONICAL:
        clock = clock.replace(":", "")
        fraction = f"{nanos:09d}"
    else:
        fraction = "." + (f"{nanos:09d}".rstrip("0") or "0")  # java.sql.Timestamp.toString
    if kind == DATE_KIND:
        return day
    if kind == TIME_KIND:
        return clock
    return f"{day}{middle}{clock}{fraction}"


def _moment(text: str, kind: str) -> tuple[dt.datetime, int]:
    """A date, time of day (on 2000-01-01) or date-time of ``kind`` as a naive UTC datetime
    without its fraction, and the fraction in nanoseconds (digits past the ninth dropped).
    Spaces around it are dropped; naive values are UTC. InvalidValue when it is none."""
    match = _TIME_SHAPES[kind].match(text.strip(" "))
    try:
        if match is None:
            raise ValueError
        part = match.groupdict()
        moment = dt.datetime(
            *(int(part.get(name) or default) for name, default in _FIELDS),
            tzinfo=_offset(part.get("offset")),
        )
        if moment.tzinfo is not None:
            moment = moment.astimezone(dt.timezone.utc).replace(tzinfo=None)
    except (ValueError, OverflowError):
        raise InvalidValue(text, f"is not a valid {kind} value") from None
    return moment, int((part.get("fraction") or "")[:9].ljust(9, "0"))


def _offset(text: str | None) -> dt.timezone | None:
    """The time zone of an offset: Z, or a sign and HH, HHMM, HHMMSS (colons optional);
    ValueError when it is none."""
    if not text:
        return None
    if text == "Z":
        return dt.timezone.utc
    digits = text[1:].replace(":", "")
    hours, minutes, seconds = int(digits[:2]), int(digits[2:4] or 0), int(digits[4:] or 0)
    if minutes > 59 or seconds > 59:
        raise ValueError(text)
    delta = dt.timedelta(hours=hours, minutes=minutes, seconds=seconds)
    return dt.timezone(-delta if text[0] == "-" else delta)  # ValueError from 24 hours


def key_text(value: str | bytes, xds_type: str, is_char: bool = False) -> str:
    """A key value as objects are named and matched by it: integers canonical and within
    64 bits (signed or unsigned), booleans ``true`` or ``false``, CHAR without pad spaces,
    binary in Base64, any other type as the database writes it. InvalidValue when an
    integer or boolean key is none."""
    if isinstance(value, (bytes, bytearray, memoryview)) or xds_type == STATE:
        return xds_text(value, xds_type)  # Base64 or a boolean, or InvalidValue
    if xds_type == INT:
        text = _integer(value, "is not an integer")
        if len(text) > 20 or int(text) not in _BIGINT:
            raise InvalidValue(value, "is not a 64-bit integer")
        return text
    return value.rstrip(" ") if is_char else value
