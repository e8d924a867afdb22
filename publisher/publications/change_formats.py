"""A change format as a publication (docs/change-formats.md): its events staged as event
log rows, reduced as the event log's (no query-back: its events carry their values),
and the stream's position saved once the documents are durable."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from publisher.delivery.work import WorkFolder as StagingFolder
from publisher.delivery.work import sweep_once
from publisher.errors import ConfigError
from publisher.model.rows import PENDING, Note
from publisher.plans import Phases
from publisher.publications import Planned, Publication, WorkFolder, planned_rows
from publisher.settings import Settings
from publisher.source.cdc.formats import ChangeInput
from publisher.source.changes import StagedChanges, stage_changes


class ChangeFormatPublication(Publication):
    """A change stream's events, staged, as one cycle's rows."""

    loopback_user = None  # the formats carry no perpetrator
    current = None  # no query-back events

    def __init__(self, settings: Settings, staged: StagedChanges, changes: ChangeInput) -> None:
        self.settings, self.staged, self.changes = settings, staged, changes
        self.catalogue = staged.catalogue

    def start(self) -> int:
        return self.count()

    def count(self) -> int:
        return self.staged.rows

    def pending_read(self, parts: int) -> StagedChanges:
        return self.staged

    def pending_rows(self) -> pa.Table:
        return pq.read_table(self.staged.directory, schema=PENDING.arrow)

    def mark_early(self, runs: list[tuple[int, int]], rejected: list[Note]) -> None:
        pass  # the stream is acknowledged whole, at the end

    def plan(self, phases: Phases, work: WorkFolder) -> Planned:
        return planned_rows(self.settings, self, phases, work)[0]

    def acknowledge(self, phases: Phases) -> None:
        self.changes.delivered()


@contextmanager
def opened(settings: Settings, changes: ChangeInput, out: str) -> Iterator[ChangeFormatPublication]:
    """``xdspub export --source FORMAT``: the stream's events staged in a folder of TMPDIR
    (one a killed export left is swept, as beside --out), removed after."""
    folder = Path(out)
    if folder.suffix != ".xml" and folder.is_dir() and any(folder.glob("*.xml")):
        # Documents are named by their first event's place in the stream, which starts at
        # 1 each run: an earlier run's documents would be overwritten.
        raise ConfigError(f"{out} holds documents already: give change formats an empty folder")
    staging = Path(tempfile.gettempdir())
    sweep_once(staging)
    with StagingFolder(staging) as directory:
        yield ChangeFormatPublication(settings, stage_changes(changes.events, directory, settings.schema), changes)
