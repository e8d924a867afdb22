"""Errors that end a run; each knows the exit code it gives (docs/parameters.md, Exit codes)."""

from __future__ import annotations

import signal

EXIT_INTERNAL = 5  # an error no rule foresaw: one line, the traceback only with --debug
# The signals that stop a run: a command at once (Interrupted), the service after its cycle.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class XdspubError(Exception):
    exit_code = 2  # usage, configuration and input errors


class ConfigError(XdspubError):
    """A usage or configuration error, such as an event log missing a column."""


class SourceInputError(XdspubError):
    """Input a change reader cannot read; ``where`` names the place (a byte offset, a line,
    a row), and the message ends with it."""

    def __init__(self, message: str, where: str) -> None:
        super().__init__(f"{message} ({where})")
        self.where = where


class PublisherBusy(XdspubError):
    """Another publisher holds this event log."""


class DatabaseUnreachable(XdspubError):
    exit_code = 3


class SinkError(XdspubError):
    """The output could not be made durable; no status was written."""

    exit_code = 4


class TooManyErrors(XdspubError):
    """poll --max-errors: one cycle marked more rows (objects, triggerless) E than allowed;
    the service stops after that cycle's statuses are written."""

    exit_code = 7


class BrokerUnreachable(XdspubError):
    """The message broker --out names cannot be reached at start."""

    exit_code = 3


class DeletesHeld(XdspubError):
    """The delete guard held the cycle: nothing was published or marked (docs/delivery.md,
    Delete guard). ``held``: outcome/holds.Held of each class held."""

    exit_code = 6

    def __init__(self, message: str, held: list) -> None:
        super().__init__(message)
        self.held = held


class Interrupted(BaseException):
    """SIGINT or SIGTERM ended the run: exit 128 + the signal's number. A BaseException, as
    KeyboardInterrupt is, so that no ``except Exception`` on its way (ours, a driver's,
    py4j's) takes it for a failure to log, retry or mark."""

    def __init__(self, number: int) -> None:
        super().__init__(f"stopped by {signal.Signals(number).name}")
        self.exit_code = 128 + number
