"""Status letters of the event log and what becomes of each (docs/statuses.md)."""

from __future__ import annotations

import re


class Status:
    """Letters written back to the status column."""

    NEW = "N"
    DONE = "S"
    WARNED = "W"
    ERROR = "E"
    FATAL = "F"


StatusRange = tuple[str, int, int]  # a status letter over the record_ids low..high
# Consumed rows: with Delete Processed Rows they are deleted, not marked. E and F rows stay
# marked for the operator.
CONSUMED = (Status.DONE, Status.WARNED)


def is_deleted(letter: str, delete_processed: bool) -> bool:
    """Whether a row that gets ``letter`` is deleted rather than marked."""
    return delete_processed and letter in CONSUMED


# What a reason may not carry as it is: controls (a newline would forge a log line), line
# and paragraph separators, bidirectional overrides, lone surrogates (unprintable) and
# noncharacters. Each is written as a \x, \u escape instead.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]")
REASON_LIMIT = 1000  # characters of a reason, its cut mark included


def unsafe_position(text: str) -> int | None:
    """1-based position of the first character a reason escapes (a control character, a
    line separator, a bidirectional override ...), or None."""
    match = _UNSAFE.search(text)
    return match.start() + 1 if match else None


def _escaped(match: re.Match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def reason_text(text: str) -> str:
    """A reason as it is reported and logged (docs/statuses.md, Reasons): unsafe characters
    escaped, at most REASON_LIMIT characters. Applied again, it changes nothing."""
    escaped = _UNSAFE.sub(_escaped, text[: REASON_LIMIT + 1])
    if len(escaped) <= REASON_LIMIT and len(text) <= REASON_LIMIT:
        return escaped
    mark = f" ... (cut: {len(text):,} characters in all)"
    return escaped[: REASON_LIMIT - len(mark)] + mark


SHOWN_VALUE = 60  # characters of a value a reason quotes; a longer one is cut


def shown_value(value: object) -> str:
    """A value as a reason quotes it: a long one cut, so that what the reason says of it
    still shows (reason_text cuts the end of the whole reason)."""
    text = str(value)
    if len(text) <= SHOWN_VALUE:
        return text
    return f"{text[:SHOWN_VALUE]}... ({len(text):,} characters)"


def failure_reason(exc: BaseException) -> str:
    """The reason of a row (or object) that failed in a way the rules did not foresee: it
    alone is E (docs/statuses.md, Reasons), and the message says what to report."""
    return reason_text(f"cannot be published: unexpected {type(exc).__name__}: {exc} (please report)")
