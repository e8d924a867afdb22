"""Wake-ups of the polling service (docs/delivery.md, The polling service): on PostgreSQL the
event log's trigger notifies a channel when rows are logged, and a thread listening on it
wakes the service, which then polls at once instead of at the end of its interval.

A notification is only a hint: the service still polls every interval, so a lost
connection or a notification missed while reconnecting delays rows by one interval at
most, and loses none."""

from __future__ import annotations

import logging
import threading
import time

from publisher.service.logs import log

_CHECK_SECONDS = 0.5  # how soon the thread sees that it should stop


class WakeUps:
    """Sets ``wake`` on every notification on ``channel``, from a thread of its own with a
    connection of its own, reconnecting after a failure (pausing from 1 s, doubling up to
    ``longest_pause``) until closed."""

    def __init__(self, conninfo: str, channel: str, wake: threading.Event, longest_pause: float) -> None:
        self.conninfo, self.channel, self.wake = conninfo, channel, wake
        self.longest_pause = longest_pause
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._listen, name="xdspub-wake-ups", daemon=True)

    def __enter__(self) -> WakeUps:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.closing.set()
        self.thread.join(timeout=2 * _CHECK_SECONDS)

    def _listen(self) -> None:
        import psycopg
        from psycopg import sql

        retry = 1.0
        while not self.closing.is_set():
            opened = time.monotonic()
            try:
                with psycopg.connect(self.conninfo, autocommit=True) as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    log(logging.INFO, "listening", channel=self.channel)
                    self.wake.set()  # rows logged before LISTEN sent no notification here
                    while not self.closing.is_set():
                        for _ in conn.notifies(timeout=_CHECK_SECONDS):
                            self.wake.set()
            except Exception as exc:  # whatever ends the session, the thread goes on
                if time.monotonic() - opened >= self.longest_pause:
                    retry = 1.0  # the session lasted: this loss is a new one
                message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                log(logging.WARNING, "not listening", error=message, retry_in=f"{retry:.0f}s")
                self.closing.wait(retry)
                retry = min(retry * 2, self.longest_pause)
