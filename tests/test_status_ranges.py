"""Status ranges: the runs of the rows read, S but where the few E and W rows lie."""

from __future__ import annotations

import pytest

from publisher.reduce.status_ranges import status_ranges


def test_status_ranges_never_mark_around_a_row_not_read() -> None:
    assert status_ranges([(1, 2), (5, 6)], [(2, "E"), (5, "W")]) == [
        ("S", 1, 1), ("E", 2, 2), ("W", 5, 5), ("S", 6, 6),
    ]
    for stray in (3, 7):
        with pytest.raises(ValueError, match=f"record_id {stray} is not among the rows read"):
            status_ranges([(1, 2), (5, 6)], [(stray, "E")])
