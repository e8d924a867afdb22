"""What one cycle did, whatever it published: rows and statuses (the event log, a change
format) or objects and changes (triggerless), commands, documents, and where its time
went. Light to import: ``publisher`` exports it without loading Spark or SQLAlchemy."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from publisher.model.statuses import Status, reason_text


@dataclass
class CycleReport:
    rows: int = 0
    commands: int = 0
    documents: int = 0
    by_status: Counter = field(default_factory=Counter)
    notes: list[tuple[int, str, str]] = field(default_factory=list)  # record_id, letter, why
    spark_start_seconds: float = 0.0  # starting the Spark session (0 when it was warm)
    on_spark: bool = False  # False: a cycle of few rows, run in the driver
    phases: list[tuple[str, float]] = field(default_factory=list)  # (phase, seconds) in order
    loopback: int = 0  # rows by the publisher's own user, consumed unpublished (S)
    loopback_user: str | None = None
    not_selected: int = 0  # rows of tables the selection leaves out, consumed unpublished (S)
    excluded: int = 0  # rows naming an excluded column, consumed unpublished (S)
    # Triggerless (docs/triggerless.md): the objects read and what changed.
    objects: int = 0
    changes: Counter = field(default_factory=Counter)
    failed: list[tuple[str, str, str]] = field(default_factory=list)  # class, key, why
    state_unused: str | None = None  # why the previous state was not used
    state_kept: bool = False
    # Classes read byte for byte as the state's, not compared (docs/triggerless.md, A cycle
    # with no change).
    unchanged_classes: list[str] = field(default_factory=list)
    compared: bool = False  # True: a triggerless cycle, which reads objects, not rows
    keyless: list[str] = field(default_factory=list)  # triggerless: classes without a key, not read

    @property
    def seconds(self) -> float:
        """The cycle itself, after the session was up: its phases follow one another."""
        return sum(seconds for _, seconds in self.phases)

    def timing(self) -> str:
        text = (
            f"Spark start {self.spark_start_seconds:.2f} s, cycle {self.seconds:.2f} s"
            if self.on_spark else f"cycle {self.seconds:.2f} s in the driver"
        )
        steps = ", ".join(f"{name} {seconds:.1f} s" for name, seconds in self.phases)
        return f"{text} ({steps})" if steps else text

    def summary(self) -> str:
        if self.compared:
            changes = ", ".join(f"{n} {kind}" for kind, n in sorted(self.changes.items())) or "no change"
            failed = f"; {len(self.failed)} objects not published (E)" if self.failed else ""
            kept = "state kept" if self.state_kept else "state unchanged"
            return (
                f"{self.objects} objects read, {changes}; {self.commands} commands, "
                f"{self.documents} documents{failed}; {kept}"
            )
        letters = ", ".join(f"{k}={v}" for k, v in sorted(self.by_status.items())) or "none"
        counts = ((self.loopback, "loopback"), (self.not_selected, "not selected"),
                  (self.excluded, "naming excluded columns"))
        unpublished = [f"{count} {what}" for count, what in counts if count]
        if unpublished:
            unpublished[0] = unpublished[0].replace(" ", " of them ", 1)
            letters += f" ({', '.join(unpublished)})"
        return (
            f"{self.rows} rows read, {self.commands} commands, {self.documents} documents; "
            f"statuses {letters}"
        )

    def log_fields(self) -> dict[str, object]:
        """The cycle's figures for the service's log line (docs/delivery.md, The polling
        service)."""
        if self.compared:
            return {"objects": self.objects, "commands": self.commands, "documents": self.documents,
                    "failed": len(self.failed), **{f"objects_{k}": v for k, v in sorted(self.changes.items())}}
        return {"rows": self.rows, "commands": self.commands, "documents": self.documents,
                **{f"status_{k}": v for k, v in sorted(self.by_status.items())},
                "loopback": self.loopback, "not_selected": self.not_selected, "excluded": self.excluded}

    def note_lines(self) -> list[str]:
        """One line for each row that is not S, and each object not published: where it
        is, its letter and why."""
        return [f"record_id {record_id}: {letter}: {reason_text(why)}" for record_id, letter, why in self.notes] + [
            f"class {name} object {reason_text(key)}: E: {reason_text(why)}" for name, key, why in self.failed
        ]

    def loopback_hint(self) -> str | None:
        """What to do when rows were not published because the publisher's own user made
        them (docs/statuses.md, Loopback): the usual first try changes rows as that user."""
        if not self.loopback:
            return None
        return (
            f"{self.loopback} rows were logged for changes made by {self.loopback_user!r}, the "
            "publisher's own database user, and were consumed unpublished (loopback). Make "
            "changes as another user, give --publisher-user the user the publisher runs as, "
            "or --allow-loopback to publish them."
        )

    @property
    def errors(self) -> list[tuple[int | str, str]]:
        """Where each E is (a record_id, or a class and key) and why."""
        return [(rid, why) for rid, letter, why in self.notes if letter == Status.ERROR] + [
            (f"{name} {key}", why) for name, key, why in self.failed
        ]
