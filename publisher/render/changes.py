"""A triggerless class's changes (reduce/objects.py) rendered as rows.COMMANDS, in the
driver or in a Spark task alike (docs/triggerless.md, Commands)."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pyarrow as pa

from publisher.model.catalogue import Table
from publisher.model.rows import BATCH_ROWS, COMMANDS
from publisher.reduce.objects import commands
from publisher.render.xds import command_xml


def rendered_changes(table: Table, schema: str, changes: pa.Table, ids: np.ndarray,
                     local_time: str | None) -> Iterator[pa.RecordBatch]:
    """Each change's command (event-ids ``ids``, reduce/objects.event_ids) as rows.COMMANDS,
    in event-id order, a slice of the changes at a time: a caller writes them as they come
    (delivery/ordered.write_ordered), holding none but the slice."""
    order = np.argsort(ids, kind="stable")
    for start in range(0, len(order), BATCH_ROWS):
        chosen = order[start : start + BATCH_ROWS]
        rows = [
            COMMANDS.row(cmd_time=0.0, cmd_id=command.event_id, xml=command_xml(command))
            for command in commands(table, schema, changes.take(chosen), ids[chosen], local_time)
        ]
        yield COMMANDS.batch(rows)
