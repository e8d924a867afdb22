"""xdspub: an identity-sync publisher.

The public API: ``Settings``, ``export`` (one cycle to a sink, of the event log or, with
``TriggerlessOptions``, triggerless), its ``CycleReport`` and the errors. Importing this
package loads nothing heavy; Spark starts when a cycle runs."""

from __future__ import annotations

from publisher.errors import ConfigError, DatabaseUnreachable, SinkError, XdspubError
from publisher.report import CycleReport
from publisher.settings import Settings, TriggerlessOptions

__all__ = [
    "ConfigError", "CycleReport", "DatabaseUnreachable", "Settings", "SinkError",
    "TriggerlessOptions", "XdspubError", "export",
]


def export(settings: Settings, out: str, triggerless: TriggerlessOptions | None = None) -> CycleReport:
    """Publish every pending row of ``settings.db_url`` to ``out`` as one cycle; with
    ``triggerless``, one triggerless cycle of its tables (docs/triggerless.md)."""
    from functools import partial

    from publisher.cycle import export as run_export
    from publisher.publications import event_log, triggerless as compared

    opening = event_log.opened if triggerless is None else partial(compared.opened, options=triggerless)
    return run_export(settings, out, opening=opening)
