"""Event types of the event log (PUBLISHER.md section 2) and the commands they make."""

from __future__ import annotations

from enum import IntEnum

EVENT_LOG_COLUMNS = (
    "record_id",
    "table_key",
    "status",
    "event_type",
    "event_time",
    "perpetrator",
    "table_name",
    "column_name",
    "old_value",
    "new_value",
)


class EventType(IntEnum):
    INSERT_FIELD = 1
    UPDATE_FIELD = 2
    UPDATE_FIELD_REMOVE_ALL = 3
    DELETE_ROW = 4
    INSERT_ROW_QUERY_BACK = 5
    UPDATE_ROW_QUERY_BACK = 6
    INSERT_FIELD_QUERY_BACK = 7
    UPDATE_FIELD_QUERY_BACK = 8


FIELD_NON_QUERY_BACK = (1, 2, 3)
ROW_QUERY_BACK = (5, 6)
FIELD_QUERY_BACK = (7, 8)
QUERY_BACK = ROW_QUERY_BACK + FIELD_QUERY_BACK
PER_FIELD = FIELD_NON_QUERY_BACK + FIELD_QUERY_BACK
KNOWN = tuple(int(t) for t in EventType)

# Command kind per event type: 1 adds, 4 deletes, the rest modify (section 4, grouping).
ADD, MODIFY, DELETE = "add", "modify", "delete"
COMMAND_KIND = {1: ADD, 2: MODIFY, 3: MODIFY, 4: DELETE, 5: MODIFY, 6: MODIFY, 7: MODIFY, 8: MODIFY}
# How a field event changes its attribute; a query-back replaces it.
FIELD_OPS = {1: "add", 2: "modify", 3: "replace"}


class Status:
    """Letters written back to the status column (section 6)."""

    NEW = "N"
    DONE = "S"
    WARNED = "W"
    ERROR = "E"
    FATAL = "F"


StatusRange = tuple[str, int, int]  # a status letter over the record_ids low..high
