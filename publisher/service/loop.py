"""The polling service (docs/delivery.md, The polling service).

One warm Spark session for the life of the service. Each cycle first asks the database
one cheap question (how many rows are pending); only when some are does a Spark cycle
run. A failing cycle (database restarting, connection dropped, sink unwritable) is
logged and retried with a growing pause; since statuses are written only after the
documents are durable, a retry re-publishes under the same names and loses nothing.
SIGTERM and SIGINT let the current cycle finish, then the service exits 0."""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass

import sqlalchemy as sa

from publisher.cycle import CycleReport, run_cycle
from publisher.delivery.lock import PublisherLock, lock_name
from publisher.delivery.sinks import FileSink, open_sink
from publisher.errors import ConfigError, DatabaseUnreachable
from publisher.service.logs import log
from publisher.service.metrics import Metrics
from publisher.service.wake_ups import WakeUps
from publisher.settings import Settings
from publisher.source.database import connect, libpq_conninfo, run_scripts
from publisher.source.dialects import Dialect
from publisher.source.event_log import EventLog, open_event_log, pending_probe
from publisher.source.schema import published_catalogue
from publisher.triggerless import TriggerlessOptions, TriggerlessPublisher

MAX_BACKOFF_SECONDS = 60.0


@dataclass(frozen=True)
class ServiceOptions:
    interval: float = 10.0  # Polling Interval, seconds
    heartbeat_minutes: float = 0.0  # 0: off
    post_statements: str | None = None  # SQL run after an active cycle
    metrics_port: int | None = None
    wake: bool = True  # poll at once when the event log's trigger says rows were logged


class PollingService:
    def __init__(self, settings: Settings, options: ServiceOptions, out: str,
                 triggerless: TriggerlessOptions | None = None) -> None:
        self.settings, self.options, self.triggerless = settings, options, triggerless
        self.sink = open_sink(out, settings.batch_size)
        if isinstance(self.sink, FileSink):
            raise ConfigError("poll writes to a directory, a broker or standard output (-), not one file")
        self.stopping = threading.Event()
        self.wake = threading.Event()  # ends the pause between polls early
        self.metrics = Metrics()
        self.loopback_hinted = False
        self.last_active = time.monotonic()  # the last published command or heartbeat

    def stop(self, *_args: object) -> None:
        self.stopping.set()
        self.wake.set()

    def run(self) -> int:
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, self.stop)
        if self.options.metrics_port is not None:
            self.metrics.serve(self.options.metrics_port)
        engine, dialect = self._connect()
        if engine is None:
            return 0
        if self.triggerless is not None:
            with TriggerlessPublisher(self.settings, self.triggerless, engine, dialect) as publisher:
                self._serve_triggerless(publisher)
            engine.dispose()
            log(logging.INFO, "stopped")
            return 0
        log_table = open_event_log(engine, dialect, self.settings)
        published_catalogue(self.settings, engine, dialect)  # a bad --tables: exit 2 at once
        lock = PublisherLock(engine, dialect, lock_name(self.settings))
        if (self.settings.query_limit or 0) > self.settings.small_cycle_rows:
            self._warm_spark()  # a cycle may be too big for the driver: Spark ready before it
        with self._wake_ups(engine, dialect, log_table):
            self._serve(engine, dialect, log_table, lock)
        lock.release()
        engine.dispose()
        log(logging.INFO, "stopped")
        return 0

    def _serve(self, engine: sa.Engine, dialect: Dialect, log_table: EventLog, lock: PublisherLock) -> None:
        def poll() -> bool:
            if not lock.held() and not self._acquire(lock):
                return False  # asked to stop while waiting
            self.wake.clear()  # a wake-up from now on means rows this poll may miss
            if not self._probe(engine, dialect, log_table):
                self._heartbeat_if_due()
                return True
            report = self._cycle(engine, dialect, log_table)
            self.last_active = time.monotonic()
            # A full Query Limit: more are waiting, no pause.
            return not (self.settings.query_limit and report.rows >= self.settings.query_limit)

        self._every_interval(poll)

    def _serve_triggerless(self, publisher: TriggerlessPublisher) -> None:
        """Every interval, one triggerless cycle (docs/triggerless.md); a failed one is
        retried with a growing pause, its state untouched."""

        def compare() -> bool:
            started = time.monotonic()
            report = publisher.cycle(self.sink)
            seconds = time.monotonic() - started
            self.metrics.cycle.observe(seconds)
            if report.state_unused:
                log(logging.INFO, "state not used", reason=report.state_unused)
            for name, key, why in report.failed:
                log(logging.ERROR, "object", table=name, key=key, status="E", reason=why)
            if report.commands:
                self.last_active = time.monotonic()
            else:
                self._heartbeat_if_due()
            log(logging.INFO, "cycle", objects=report.objects, commands=report.commands,
                documents=report.documents, failed=len(report.failed), seconds=f"{seconds:.2f}",
                **{f"objects_{k}": v for k, v in sorted(report.changes.items())})
            return True

        self._every_interval(compare)

    def _every_interval(self, cycle: Callable[[], bool]) -> None:
        """Run ``cycle`` until stopped, pausing an interval after each one that asks for it
        (True) or until woken; a failed one is logged and retried with a growing pause."""
        backoff = self.options.interval
        self.last_active = time.monotonic()
        while not self.stopping.is_set():
            try:
                pause = cycle()
                backoff = self.options.interval
            except ConfigError:
                raise
            except Exception as exc:  # the service outlives any one failed cycle
                log(logging.ERROR, "cycle failed", error=_one_line(exc), retry_in=f"{backoff:.0f}s")
                self.stopping.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
                continue
            if not pause or self.stopping.is_set():  # stop() may have come before wake was cleared
                continue
            self.wake.wait(self.options.interval)

    def _heartbeat_if_due(self) -> None:
        """A heartbeat document after the Heartbeat Interval without a published command."""
        minutes = self.options.heartbeat_minutes
        if minutes > 0 and time.monotonic() - self.last_active >= minutes * 60:
            self.sink.heartbeat()
            log(logging.INFO, "heartbeat")
            self.last_active = time.monotonic()

    def _wake_ups(self, engine: sa.Engine, dialect: Dialect, log_table: EventLog) -> AbstractContextManager:
        """Listening for the event log's notifications, where it has the wake-up trigger."""
        if not (self.options.wake and dialect.wake_channel_query):
            return nullcontext()
        table = log_table.table
        with engine.connect() as conn:
            channel = conn.execute(
                sa.text(dialect.wake_channel_query), {"schema": table.schema, "table": table.name}
            ).scalar()
        if channel is None:
            log(logging.INFO, "polling only", reason="the event log has no wake-up trigger (init-db --wake)")
            return nullcontext()
        return WakeUps(libpq_conninfo(engine), channel, self.wake, MAX_BACKOFF_SECONDS)

    def _connect(self) -> tuple[sa.Engine | None, Dialect | None]:
        backoff = self.options.interval
        while not self.stopping.is_set():
            try:
                return connect(self.settings.db_url)
            except DatabaseUnreachable as exc:
                log(logging.ERROR, "database unreachable", error=str(exc), retry_in=f"{backoff:.0f}s")
                self.stopping.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
        return None, None

    def _warm_spark(self) -> None:
        from publisher.plans.session import spark_session

        started = time.monotonic()
        spark_session(self.settings.spark_master)
        log(logging.INFO, "spark ready", seconds=f"{time.monotonic() - started:.1f}")

    def _acquire(self, lock: PublisherLock) -> bool:
        """Wait for the publisher lock; False if asked to stop first."""
        waiting_logged = False
        while not self.stopping.is_set():
            if lock.try_acquire():
                log(logging.INFO, "lock acquired", lock=lock.name)
                return True
            if not waiting_logged:
                log(logging.INFO, "waiting for the publisher lock", lock=lock.name)
                waiting_logged = True
            self.stopping.wait(self.options.interval)
        return False

    def _probe(self, engine: sa.Engine, dialect: Dialect, log_table: EventLog) -> int:
        query = pending_probe(log_table, dialect, self.settings.future_events)
        with engine.connect() as conn:
            count, lag = conn.execute(query).one()
        self.metrics.pending.set(count)
        self.metrics.lag.set(max(0.0, float(lag or 0)))
        return count

    def _cycle(self, engine: sa.Engine, dialect: Dialect, log_table: EventLog) -> CycleReport:
        started = time.monotonic()
        report = run_cycle(self.settings, engine, dialect, log_table, self.sink)
        if self.options.post_statements and not self.settings.dry_run:
            run_scripts(engine, dialect, [self.options.post_statements])
        seconds = time.monotonic() - started
        self.metrics.cycle.observe(seconds)
        for letter, count in report.by_status.items():
            self.metrics.rows.labels(letter).inc(count)
        for record_id, letter, why in report.notes:
            level = logging.ERROR if letter == "E" else logging.WARNING
            log(level, "row", record_id=record_id, status=letter, reason=why)
        if (hint := report.loopback_hint()) and not self.loopback_hinted:
            log(logging.WARNING, "loopback rows not published", hint=hint)
            self.loopback_hinted = True  # once: a service may see them every cycle
        log(
            logging.INFO,
            "cycle",
            rows=report.rows,
            commands=report.commands,
            documents=report.documents,
            **{f"status_{k}": v for k, v in sorted(report.by_status.items())},
            loopback=report.loopback,
            not_selected=report.not_selected,
            excluded=report.excluded,
            seconds=f"{seconds:.2f}",
        )
        return report


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text.splitlines()[0][:500] if text else type(exc).__name__
