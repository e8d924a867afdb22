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
from contextlib import AbstractContextManager, ExitStack, nullcontext
from dataclasses import dataclass
from functools import partial


from publisher.cycle import CycleReport, run
from publisher.delivery.sinks import FileSink, open_sink
from publisher.errors import STOP_SIGNALS, ConfigError, DatabaseUnreachable, DeletesHeld, TooManyErrors
from publisher.outcome.lock import PublisherLock
from publisher.publications import Publication
from publisher.publications.event_log import EventLogPublication
from publisher.publications.triggerless import TriggerlessPublication
from publisher.service.logs import log
from publisher.service.metrics import Metrics
from publisher.service.wake_ups import WakeUps
from publisher.settings import Settings, TriggerlessOptions
from publisher.source.database import Database, connect, run_scripts
from publisher.source.event_log import open_event_log
from publisher.source.schema import published_catalogue

MAX_BACKOFF_SECONDS = 60.0


@dataclass(frozen=True)
class ServiceOptions:
    interval: float = 10.0  # Polling Interval, seconds
    heartbeat_minutes: float = 0.0  # 0: off
    post_statements: str | None = None  # SQL run after an active cycle
    metrics_port: int | None = None
    wake: bool = True  # poll at once when the event log's trigger says rows were logged
    max_errors: int | None = None  # stop when a cycle marks more rows E (None: never)


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
        self.holding: list[str] | None = None  # the delete guard's hold, as logged
        self.keyless_named = False
        self.last_active = time.monotonic()  # the last published command or heartbeat

    def stop(self, *_args: object) -> None:
        self.stopping.set()
        self.wake.set()

    def run(self) -> int:
        for number in STOP_SIGNALS:
            signal.signal(number, self.stop)
        if self.options.metrics_port is not None:
            self.metrics.serve(self.options.metrics_port)
        db = self._connect()
        if db is None:
            return 0
        self.db = db
        with ExitStack() as stack:
            stack.callback(db.engine.dispose)
            if self.triggerless is not None:
                publication = stack.enter_context(
                    TriggerlessPublication(self.settings, self.triggerless, db)
                )
            else:
                publication = EventLogPublication(
                    self.settings, db, open_event_log(db, self.settings)
                )
                published_catalogue(self.settings, db)  # a bad --tables: exit 2 at once
            if publication.lock is not None:
                stack.callback(publication.lock.release)
            if self.settings.on_spark(self.settings.query_limit or 0):
                self._warm_spark()  # a cycle may be too big for the driver: Spark ready before it
            stack.enter_context(self._wake_ups(publication))
            try:
                self._every_interval(partial(self._poll, publication))
            except TooManyErrors as exc:
                log(logging.ERROR, "stopped", reason=str(exc), exit_code=exc.exit_code)
                return exc.exit_code
        log(logging.INFO, "stopped")
        return 0

    def _poll(self, publication: Publication) -> bool:
        """One poll: a cycle when rows wait (or when only a cycle can tell); True to pause
        an interval after it."""
        lock = publication.lock
        if lock is not None and not lock.held() and not self._acquire(lock):
            return False  # asked to stop while waiting
        self.wake.clear()  # a wake-up from now on means rows this poll may miss
        waiting = publication.waiting()
        if waiting is not None:
            count, lag = waiting
            self.metrics.pending.set(count)
            self.metrics.lag.set(lag)
            if not count:
                self._heartbeat_if_due()
                return True
        report = self._cycle(publication)
        if report.commands or waiting is not None:
            self.last_active = time.monotonic()
        else:
            self._heartbeat_if_due()
        # A full Query Limit: more are waiting, no pause.
        return not (self.settings.query_limit and report.rows >= self.settings.query_limit)

    def _every_interval(self, cycle: Callable[[], bool]) -> None:
        """Run ``cycle`` until stopped, pausing an interval after each one that asks for it
        (True) or until woken; a failed one is logged and retried with a growing pause."""
        backoff = self.options.interval
        self.last_active = time.monotonic()
        while not self.stopping.is_set():
            try:
                pause = cycle()
                backoff = self.options.interval
                if self.holding:
                    log(logging.INFO, "hold ended")
                    self.holding = None
                    self.metrics.held.set(0)
            except (ConfigError, TooManyErrors):
                raise
            except DeletesHeld as held:
                self._held(held)
                self.wake.wait(self.options.interval)
                continue
            except Exception as exc:  # the service outlives any one failed cycle
                log(logging.ERROR, "cycle failed", error=_one_line(exc), retry_in=f"{backoff:.0f}s")
                self.stopping.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
                continue
            if not pause or self.stopping.is_set():  # stop() may have come before wake was cleared
                continue
            self.wake.wait(self.options.interval)

    def _held(self, held: DeletesHeld) -> None:
        """The delete guard held the cycle: logged once for as long as it holds the same."""
        texts = [h.text() for h in held.held]
        if texts != self.holding:
            log(logging.WARNING, "cycle held", reason=str(held))
            self.holding = texts
        self.metrics.held.set(sum(h.deletes for h in held.held))

    def _heartbeat_if_due(self) -> None:
        """A heartbeat document after the Heartbeat Interval without a published command."""
        minutes = self.options.heartbeat_minutes
        if minutes > 0 and time.monotonic() - self.last_active >= minutes * 60:
            self.sink.heartbeat()
            log(logging.INFO, "heartbeat")
            self.last_active = time.monotonic()

    def _wake_ups(self, publication: Publication) -> AbstractContextManager:
        """Listening for the source's notifications, where it sends them."""
        channel = publication.wake_channel() if self.options.wake else None
        if isinstance(channel, str):
            log(logging.INFO, "polling only", reason=channel)
        if not isinstance(channel, tuple):
            return nullcontext()
        conninfo, name = channel
        return WakeUps(conninfo, name, self.wake, MAX_BACKOFF_SECONDS)

    def _connect(self) -> Database | None:
        backoff = self.options.interval
        while not self.stopping.is_set():
            try:
                return connect(self.settings.db_url)
            except DatabaseUnreachable as exc:
                log(logging.ERROR, "database unreachable", error=str(exc), retry_in=f"{backoff:.0f}s")
                self.stopping.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_SECONDS)
        return None

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

    def _cycle(self, publication: Publication) -> CycleReport:
        started = time.monotonic()
        report = run(self.settings, publication, self.sink)
        if self.options.post_statements and not self.settings.dry_run and (report.rows or report.commands):
            run_scripts(self.db, [self.options.post_statements])
        seconds = time.monotonic() - started
        self.metrics.cycle.observe(seconds)
        for letter, count in report.by_status.items():
            self.metrics.rows.labels(letter).inc(count)
        if report.compared:  # objects published, and those not, which stay pending
            self.metrics.rows.labels("S").inc(report.commands)
            self.metrics.rows.labels("E").inc(len(report.failed))
            self.metrics.pending.set(len(report.failed))
        if report.state_unused:
            log(logging.INFO, "state not used", reason=report.state_unused)
        for record_id, letter, why in report.notes:
            level = logging.ERROR if letter == "E" else logging.WARNING
            log(level, "row", record_id=record_id, status=letter, reason=why)
        for name, key, why in report.failed:
            log(logging.ERROR, "object", table=name, key=key, status="E", reason=why)
        if (hint := report.loopback_hint()) and not self.loopback_hinted:
            log(logging.WARNING, "loopback rows not published", hint=hint)
            self.loopback_hinted = True  # once: a service may see them every cycle
        if report.keyless and not self.keyless_named:
            log(logging.WARNING, "tables not read", tables=",".join(report.keyless),
                reason="no key")
            self.keyless_named = True  # once, as the loopback hint
        log(logging.INFO, "cycle", **report.log_fields(), seconds=f"{seconds:.2f}")
        errors, allowed = len(report.errors), self.options.max_errors
        if allowed is not None and errors > allowed:
            marked = "objects" if report.compared else "rows"
            raise TooManyErrors(f"a cycle marked {errors} {marked} E, more than --max-errors {allowed}")
        return report


def _one_line(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    return text.splitlines()[0][:500] if text else type(exc).__name__
