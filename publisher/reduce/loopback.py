"""Loopback (docs/statuses.md, Loopback): the rows the publisher's own database user made
are consumed (S) without publishing, unless Allow Loopback is on; a NULL perpetrator is
published. Loopback comes before every other check: such a row is never E."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

LOOPBACK = "loopback"  # the rule the lineage record names for such a row


def loopback_user(publisher_user: str | None, url_user: str | None,
                  allow_loopback: bool) -> str | None:
    """The perpetrator whose rows are loopback (Publisher User, else the database URL's
    user); None when no row is."""
    return None if allow_loopback else (publisher_user or url_user)


def is_loopback(perpetrator: str | None, user: str | None) -> bool:
    return user is not None and perpetrator == user


def loopback_mask(perpetrators: pa.Array, user: str | None) -> pa.Array:
    """``is_loopback`` over a column of perpetrators, for the vectorised classification."""
    if user is None:
        return pa.array([False] * len(perpetrators), pa.bool_())
    return pc.fill_null(pc.equal(perpetrators, user), False)
