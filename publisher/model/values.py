"""XDS value types and the text a database value becomes (PUBLISHER.md section 4)."""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import re

STRING, OCTET, INT, STATE, TIME = "string", "octet", "int", "state", "time"

# Characters XML 1.0 cannot carry. The pattern is written so that Python's re and Java's
# regular expressions (Spark's rlike) read it alike.
XML_FORBIDDEN = "[\\x00-\\x08\\x0B\\x0C\\x0E-\\x1F\\uFFFE\\uFFFF]"
_XML_FORBIDDEN = re.compile(XML_FORBIDDEN + "|[\ud800-\udfff]")
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def forbidden_position(text: str) -> int | None:
    """1-based position of the first character XML 1.0 cannot carry, or None."""
    match = _XML_FORBIDDEN.search(text)
    return match.start() + 1 if match else None


def xds_text(value: object, xds_type: str, is_char: bool = False) -> str | None:
    """The XDS text of a value read back from the database; None stays None."""
    if value is None:
        return None
    if xds_type == OCTET:
        raw = value if isinstance(value, (bytes, bytearray, memoryview)) else str(value).encode()
        return base64.b64encode(bytes(raw)).decode("ascii")
    if xds_type == STATE:
        return "true" if value and value not in ("0", "f", "false", "F") else "false"
    if xds_type == TIME:
        return str(epoch_seconds(value))
    if isinstance(value, decimal.Decimal):
        return format(value, "f")
    text = value if isinstance(value, str) else str(value)
    return text.rstrip(" ") if is_char else text


def epoch_seconds(value: object) -> int:
    """Seconds since 1970-01-01 UTC; naive date-times are taken as UTC."""
    if isinstance(value, dt.datetime):
        moment = value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)
    elif isinstance(value, dt.date):
        moment = dt.datetime(value.year, value.month, value.day, tzinfo=dt.timezone.utc)
    elif isinstance(value, dt.time):
        return value.hour * 3600 + value.minute * 60 + value.second
    elif isinstance(value, (int, float)):
        return int(value)
    else:
        text = str(value).strip()
        if re.fullmatch(r"-?\d+", text):
            return int(text)
        if re.fullmatch(r"\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?", text):
            return epoch_seconds(dt.time.fromisoformat(text))
        return epoch_seconds(dt.datetime.fromisoformat(text))
    return int((moment - _EPOCH).total_seconds())
