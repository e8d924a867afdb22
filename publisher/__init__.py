"""xdspub: an identity-sync publisher.

The public API: ``Settings``, ``export`` (one cycle to a sink), its ``CycleReport`` and the
errors. Importing this package loads nothing heavy; Spark starts when a cycle runs."""

from __future__ import annotations

from publisher.errors import ConfigError, DatabaseUnreachable, SinkError, XdspubError
from publisher.report import CycleReport
from publisher.settings import Settings

__all__ = [
    "ConfigError",
    "CycleReport",
    "DatabaseUnreachable",
    "Settings",
    "SinkError",
    "XdspubError",
    "export",
]


def export(settings: Settings, out: str) -> CycleReport:
    """Publish every pending row of ``settings.db_url`` to ``out`` as one cycle."""
    from publisher.cycle import export as run_export

    return run_export(settings, out)
