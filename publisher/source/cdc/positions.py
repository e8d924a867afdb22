"""How far a change reader's output has been delivered (docs/change-formats.md, Positions
and delivery), kept in a table of the source database (created if missing), one row per
task. Save only after delivery: a crash then replays the last batch, it never skips
one."""

from __future__ import annotations

import sqlalchemy as sa


class PositionStore:
    """The position (text, up to 35 characters) of one task."""

    def __init__(self, engine: sa.Engine, task: str, *, table: str,
                 schema: str | None = None) -> None:
        self._engine, self._task = engine, task
        self._table = sa.Table(
            table, sa.MetaData(),
            sa.Column("task", sa.String(200), primary_key=True),
            sa.Column("position", sa.String(35), nullable=False),
            schema=schema,
        )
        self._table.create(engine, checkfirst=True)

    def load(self) -> str | None:
        """The saved position, None before the first save."""
        query = sa.select(self._table.c.position).where(self._table.c.task == self._task)
        with self._engine.connect() as conn:
            return conn.execute(query).scalar()

    def save(self, position: str) -> None:
        t = self._table
        with self._engine.begin() as conn:
            update = t.update().where(t.c.task == self._task).values(position=position)
            if conn.execute(update).rowcount == 0:
                conn.execute(t.insert().values(task=self._task, position=position))
