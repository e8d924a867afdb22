"""Event types of the event log (docs/event-types.md) and the commands they make."""

from __future__ import annotations

from enum import IntEnum

from publisher.model.commands import AttrOp, CommandKind

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

# The longest table_key taken (docs/event-log.md): longer is E, checked before the grammar
# parses it, and no more than one character past it is read.
TABLE_KEY_LIMIT = 4096


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

# The command each event type makes: 1 adds, 4 deletes, the rest modify (docs/reduction.md).
COMMAND_KIND = {
    1: CommandKind.ADD,
    2: CommandKind.MODIFY,
    3: CommandKind.MODIFY,
    4: CommandKind.DELETE,
    5: CommandKind.MODIFY,
    6: CommandKind.MODIFY,
    7: CommandKind.MODIFY,
    8: CommandKind.MODIFY,
}
# How a field event changes its attribute; a query-back replaces it.
FIELD_OPS = {1: AttrOp.ADD, 2: AttrOp.MODIFY, 3: AttrOp.REPLACE}
# Which of a row's logged values are rendered: a type 2's old value, a type 1-3's new one.
OLD_VALUE_RENDERED = (2,)
NEW_VALUE_RENDERED = FIELD_NON_QUERY_BACK
