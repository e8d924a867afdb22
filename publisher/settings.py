"""The publisher parameters (docs/parameters.md) as one immutable value."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from publisher.errors import ConfigError
from publisher.model.policy import ColumnPolicy
from publisher.model.value_text import forbidden_position


@dataclass(frozen=True)
class DeleteLimit:
    """--max-deletes: a count, a percentage of the objects a class had, or neither (none:
    no limit)."""

    count: int | None = None
    percent: float | None = None

    @classmethod
    def parse(cls, text: str) -> DeleteLimit:
        """N, N% or none; ValueError otherwise."""
        text = text.strip().lower()
        if text == "none":
            return cls()
        if text.endswith("%"):
            percent = float(text[:-1])
            if not 0 <= percent <= 100:
                raise ValueError(f"{text} is not a percentage from 0 to 100")
            return cls(percent=percent)
        count = int(text)
        if count < 0:
            raise ValueError(f"{text} is negative")
        return cls(count=count)

    def __str__(self) -> str:
        if self.percent is not None:
            return f"{self.percent:g}%"
        return "none" if self.count is None else str(self.count)

    def exceeded(self, deletes: int, objects: int | None) -> bool:
        """Whether ``deletes`` of a class that had ``objects`` (None: not known) is past
        the limit; a percentage of an unknown number is."""
        if self.percent is not None:
            return objects is None or deletes * 100 > self.percent * objects
        return self.count is not None and deletes > self.count


@dataclass(frozen=True)
class Settings:
    db_url: str | None  # None: a change format read from a file
    schema: str = "indirect"
    log_table: str = "indirect_process"
    publisher_user: str | None = None  # None: the user in the URL
    allow_loopback: bool = False
    future_events: bool = False
    delete_processed: bool = False
    query_limit: int | None = None  # None: every pending row (export)
    batch_size: int = 1
    dry_run: bool = False
    # Maximum Value Length: a longer table_key or value makes its row E, and no more than
    # this (and one character) of a value is read.
    max_value_length: int = 16 * 1024 * 1024
    spark_master: str = "local[*]"
    # A cycle of at most this many rows runs in the driver, without Spark jobs: below some
    # thousands a Spark plan's fixed cost is most of the cycle (docs/parameters.md).
    small_cycle_rows: int = 10_000
    # Time Syntax: date, time and timestamp values as 1 seconds since 1970 (type time),
    # 2 canonical or 3 java strings (model/value_text.TimeSyntax).
    time_syntax: int = 1
    # Table selection (--tables): only these classes, with their child tables, are
    # published; empty: every class of the schema.
    tables: tuple[str, ...] = ()
    # Column policy (docs/parameters.md, Column policy): TABLE.COLUMN names never read nor
    # published, and those published as a keyed SHA-256 of their value.
    exclude_columns: tuple[str, ...] = ()
    hash_columns: tuple[str, ...] = ()
    # Their key (XDSPUB_HASH_KEY or the --config file's hash_key, never a flag): shown
    # nowhere.
    hash_key: str | None = field(default=None, repr=False)
    # The lineage record (docs/delivery.md, Lineage): a file or directory that gets one
    # JSON line per consumed row; None: none kept.
    lineage: str | None = None
    # The delete guard (docs/delivery.md, Delete guard): the most deletes of one class a
    # cycle publishes; ``release_deletes``: this run publishes what the guard would hold.
    max_deletes: DeleteLimit = field(default_factory=lambda: DeleteLimit(500))
    release_deletes: bool = False
    state_dir: Path | None = None  # holds and triggerless state; None: default_state_dir

    def on_spark(self, rows: int) -> bool:
        """Whether ``rows`` rows (a cycle's, a triggerless class's, its changes) are
        reduced on Spark rather than in the driver: the one rule (docs/parameters.md)."""
        return rows > self.small_cycle_rows

    @property
    def column_policy(self) -> ColumnPolicy:
        return ColumnPolicy(self.exclude_columns, self.hash_columns, self.hash_key)

    def __post_init__(self) -> None:
        # The schema is in every association, the log's name in SQL: neither may hold a
        # character XML cannot carry (a control character, say).
        for name, value in (("--schema", self.schema), ("--log-table", self.log_table)):
            if (position := forbidden_position(value)) is not None:
                raise ConfigError(
                    f"{name} {value!r} holds a character XML 1.0 cannot carry at position {position}"
                )


STARTUPS = ("resync", "future", "all")  # the driver's Startup Option 1, 2, 3


@dataclass(frozen=True)
class TriggerlessOptions:
    """--mode triggerless (docs/triggerless.md): where the state is kept, and what the
    first cycle without a usable state publishes."""

    state_dir: Path
    startup: str | None = None  # given on this run; None: resync, where there is no state yet

    def __post_init__(self) -> None:
        if self.startup is not None and self.startup not in STARTUPS:
            raise ValueError(f"unknown startup {self.startup!r}")
