"""The service's text log (docs/delivery.md, Logs): one line per event, whatever a value
holds; a value with blanks, '=' or quotes is quoted, so no value forges a field or a line."""

from __future__ import annotations

import logging

from publisher.service.logs import _Formatter


def test_no_value_forges_a_line_or_a_field() -> None:
    record = logging.LogRecord("xdspub", logging.ERROR, __file__, 1, "row", None, None)
    record.fields = {
        "record_id": 7,
        "status": "E",
        "reason": "table usr\n2026-01-01T00:00:00Z info cycle rows=0 status=S",
    }
    line = _Formatter(as_json=False).format(record)
    assert "\n" not in line
    assert line.endswith(
        ' error row record_id=7 status=E reason="table usr\\\\x0a2026-01-01T00:00:00Z info cycle '
        'rows=0 status=S"'
    )
