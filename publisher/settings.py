"""The publisher parameters (PUBLISHER.md section 7) as one immutable value."""

from __future__ import annotations

from dataclasses import dataclass


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
    spark_master: str = "local[*]"
