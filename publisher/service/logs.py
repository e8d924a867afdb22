"""Structured logs: one line per event, as ``key=value`` text or as JSON lines."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
import sys
from typing import Any

from publisher.model.statuses import reason_text

LOGGER = logging.getLogger("xdspub")
_QUOTED = re.compile(r'[\s="\\]')


class _Formatter(logging.Formatter):
    def __init__(self, as_json: bool) -> None:
        super().__init__()
        self.as_json = as_json

    def format(self, record: logging.LogRecord) -> str:
        moment = dt.datetime.fromtimestamp(record.created, dt.timezone.utc)
        fields: dict[str, Any] = {
            "time": moment.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "event": record.getMessage(),
            **getattr(record, "fields", {}),
        }
        if self.as_json:
            return json.dumps(fields, default=str)
        rest = " ".join(f"{k}={_text_value(v)}" for k, v in fields.items() if k not in ("time", "level", "event"))
        return f"{fields['time']} {fields['level']} {fields['event']} {rest}".rstrip()


def _text_value(value: Any) -> str:
    """A field's value in a text line: escaped and bounded as a reason is, and quoted when
    it holds blanks, '=' or quotes, so that no value can forge a field or a line."""
    text = reason_text(str(value))
    return json.dumps(text, ensure_ascii=False) if not text or _QUOTED.search(text) else text


def configure(log_format: str) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Formatter(log_format == "json"))
    LOGGER.handlers[:] = [handler]
    LOGGER.setLevel(logging.INFO)
    LOGGER.propagate = False


def log(level: int, event: str, **fields: Any) -> None:
    LOGGER.log(level, event, extra={"fields": fields})
