"""Readers of the other change-data-capture formats (docs/change-formats.md), each decoding
its own input into row changes that ``mapping`` turns into events the same way."""

from __future__ import annotations

import reprlib

from publisher.model.value_text import forbidden_position

# The largest GBase 8s record, Avro message, JSON line, CSV field or .dfm a reader buffers: a
# size claiming more is an input error at once, so that a corrupt or hostile length never
# fills memory (docs/change-formats.md, Errors).
MAX_RECORD_BYTES = 64 * 1024 * 1024
# The most a reader holds before it can hand anything over: the records of open GBase 8s
# transactions, the messages of open Qlik Kafka transactions, the change-table files read
# before any is published (docs/change-formats.md, Errors). Each reader takes another
# bound as a parameter.
MAX_BUFFERED_BYTES = 1024 * 1024 * 1024

# How much of an input's text an error message shows (docs/change-formats.md, Errors).
SHOWN_CHARACTERS = 200
_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = SHOWN_CHARACTERS
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 20


def shown(value: object) -> str:
    """Input text (or any value) as an error message shows it: repr-style, so control
    characters and lone surrogates are escaped, and at most SHOWN_CHARACTERS characters of
    that, followed by the value's length when cut."""
    if isinstance(value, str):
        text, length = repr(value[:SHOWN_CHARACTERS]), len(value)
        cut = length > SHOWN_CHARACTERS
    else:
        text, length, cut = _REPR.repr(value), None, False
    if not cut and len(text) <= SHOWN_CHARACTERS:
        return text
    return f"{text[:SHOWN_CHARACTERS]}..." + (f" ({length} characters)" if length else "")


def unpublishable(name: str) -> str | None:
    """Why ``name``, a table or column name a schema declares, cannot be published (it
    holds a character XML 1.0 cannot carry), for the reader's error; None when it can."""
    position = forbidden_position(name)
    if position is None:
        return None
    return f"{shown(name)} has a character XML 1.0 cannot carry at position {position}"
