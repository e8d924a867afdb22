"""Progress on a terminal: of one cycle (the phase, how many of Spark's tasks for it are
done, and the rows read, commands and documents so far), and of ``xdspub resync`` (the
objects logged of each class).

Shown only when standard error is a terminal, CI is not set and --quiet is not given;
rich loads only then."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Protocol

POLL_SECONDS = 0.25
# How many of the running tasks are done, of how many; None when none runs.
RunningTasks = Callable[[], "tuple[int, int] | None"]


class CycleProgress(Protocol):
    def attach(self, tasks: RunningTasks) -> None:
        """Follow the running tasks (plans/spark_plan.py)."""

    def phase(self, name: str, **counts: int) -> None:
        """A new phase begins; ``counts`` (rows, commands, documents) are known so far."""

    def close(self) -> None:
        """The cycle is over, or failed: take the display down."""


class Silent:
    def attach(self, tasks: RunningTasks) -> None:
        pass

    def phase(self, name: str, **counts: int) -> None:
        pass

    def close(self) -> None:
        pass


class TerminalProgress:
    """A rich progress bar over the running tasks, polled by a background thread."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self._display = Progress(
            SpinnerColumn(),
            TextColumn("{task.description:<21}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("tasks  {task.fields[counts]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        self._task = self._display.add_task("starting Spark", total=None, counts="")
        self._counts: dict[str, int] = {}
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._display.start()

    def attach(self, tasks: RunningTasks) -> None:
        self._poller = threading.Thread(target=self._poll, args=(tasks,), daemon=True)
        self._poller.start()

    def _poll(self, tasks: RunningTasks) -> None:
        while not self._stop.wait(POLL_SECONDS):
            running = tasks()
            if running is not None:
                done, total = running
                self._display.update(self._task, total=total, completed=done)

    def phase(self, name: str, **counts: int) -> None:
        self._counts.update(counts)
        shown = "  ".join(f"{key} {value:,}" for key, value in self._counts.items())
        self._display.update(self._task, description=name, total=None, completed=0, counts=shown)

    def close(self) -> None:
        self._stop.set()
        if self._poller is not None:
            self._poller.join()
        self._display.stop()


def _watched(quiet: bool) -> bool:
    return not (quiet or os.environ.get("CI") or not sys.stderr.isatty())


def progress_for(quiet: bool) -> CycleProgress:
    """A terminal display when someone is watching, else nothing."""
    return TerminalProgress() if _watched(quiet) else Silent()


class RowProgress(Protocol):
    shown: bool  # whether anyone sees it: the totals are worth counting

    def begin(self, name: str, done: int, total: int | None) -> None:
        """A class begins, ``done`` of its ``total`` objects already logged."""

    def advance(self, rows: int) -> None:
        """``rows`` more objects of the class are logged."""

    def close(self) -> None:
        """The run is over, or failed: take the display down."""


class SilentRows:
    shown = False

    def begin(self, name: str, done: int, total: int | None) -> None:
        pass

    def advance(self, rows: int) -> None:
        pass

    def close(self) -> None:
        pass


class TerminalRows:
    """A rich progress bar for each class, one after the other."""

    shown = True

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self._display = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
        )
        self._task: object = None
        self._display.start()

    def begin(self, name: str, done: int, total: int | None) -> None:
        self._task = self._display.add_task(
            name, completed=done, total=None if total is None else done + total
        )

    def advance(self, rows: int) -> None:
        self._display.advance(self._task, rows)

    def close(self) -> None:
        self._display.stop()


def row_progress_for(quiet: bool) -> RowProgress:
    """A terminal display when someone is watching, else nothing."""
    return TerminalRows() if _watched(quiet) else SilentRows()
