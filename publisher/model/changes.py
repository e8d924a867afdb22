"""Changes read from the other change-data-capture formats (docs/change-formats.md): each
reader turns its input into these, the same events the event log holds, for the shared
pipeline (publisher/source/cdc/mapping.py makes them)."""

from __future__ import annotations

from dataclasses import dataclass

from grammar import format_table_key
from publisher.model.events import EventType


@dataclass(frozen=True)
class ChangeEvent:
    """One event of a change: ``order`` is the format's own ordering key (tuples of the same
    reader compare in processing order), ``key`` the row's key columns and their values as
    text, in key order. Values are text as the event log holds them: binary in Base64."""

    order: tuple
    table_name: str
    key: tuple[tuple[str, str], ...]
    event_type: EventType
    column_name: str | None = None
    old_value: str | None = None
    new_value: str | None = None

    @property
    def table_key(self) -> str:
        """The key in the table_key grammar, canonical."""
        return format_table_key(list(self.key))
