"""Table selection (docs/parameters.md, Table selection): the rows of a class or child
table the selection leaves out are consumed (S) without publishing and counted as not
selected. After loopback, before every other check: such a row is never E."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from publisher.model.catalogue import Catalogue

# The reason a classified S row carries when its table is not selected (a loopback row
# carries none): how the census tells the two apart.
NOT_SELECTED = "not selected"


def left_out_mask(table_names: pa.Array, catalogue: Catalogue) -> pa.Array:
    """``Catalogue.is_left_out`` over a column of table names, for the vectorised
    classification."""
    names = pa.array([*catalogue.left_out, *catalogue.left_out_children], pa.string())
    return pc.fill_null(pc.is_in(table_names, value_set=names), False)
