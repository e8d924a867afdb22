"""Prometheus metrics of the polling service (``--metrics-port``)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.pending = Gauge("xdspub_pending_rows", "Rows with status N", registry=self.registry)
        self.lag = Gauge(
            "xdspub_oldest_pending_lag_seconds",
            "Age of the oldest pending row's event_time",
            registry=self.registry,
        )
        self.cycle = Histogram(
            "xdspub_cycle_duration_seconds",
            "Duration of active polling cycles",
            buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300),
            registry=self.registry,
        )
        self.held = Gauge(
            "xdspub_held_deletes", "Deletes the delete guard holds (docs/delivery.md)", registry=self.registry
        )
        self.rows = Counter(
            "xdspub_rows_total", "Rows consumed, by status written", ["status"], registry=self.registry
        )

    def serve(self, port: int) -> None:
        start_http_server(port, addr="127.0.0.1", registry=self.registry)
