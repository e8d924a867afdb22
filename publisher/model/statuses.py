"""Status letters of the event log and what becomes of each (docs/statuses.md)."""

from __future__ import annotations


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
