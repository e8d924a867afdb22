"""What is kept of a publication between runs: its last cycle, and the delete guard's hold
(docs/delivery.md, Delete guard) until ``xdspub release``; and which classes a cycle's
deletes put on hold.

The record is a JSON file under the state folder (``--state-dir``), one per publication,
so that a running service, ``xdspub status`` and ``xdspub release`` on the same machine
see the same."""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from publisher.errors import ConfigError
from publisher.outcome.lock import lock_name
from publisher.outcome.state import default_state_dir, folder_name
from publisher.settings import DeleteLimit, Settings

EMPTY_READ = "read empty"
PUBLISHED = "published"  # a last cycle's outcome that ends the hold
MAX_NOTED = 10_000  # E and W rows whose reasons a record keeps


@dataclass(frozen=True)
class Held:
    """One class a cycle would have deleted too much of."""

    class_name: str
    deletes: int
    objects: int | None  # how many objects the class had before the cycle (None: not known)
    why: str  # "over --max-deletes LIMIT", or EMPTY_READ

    def text(self) -> str:
        had = "" if self.objects is None else f" of the {self.objects} it had"
        if self.why == EMPTY_READ:
            return f"{self.class_name}: read empty, {self.deletes} deletes{had}"
        return f"{self.class_name}: {self.deletes} deletes{had}, {self.why}"


def held_classes(deletes: Mapping[str, int], objects: Mapping[str, int] | None,
                 emptied: Collection[str], limit: DeleteLimit,
                 released: Mapping[str, int]) -> list[Held]:
    """The classes whose ``deletes`` this cycle are held: past ``limit`` (a percentage of
    ``objects``, the class sizes before the cycle), or ``emptied`` (read empty while their
    state held objects), unless ``released`` allows that many."""
    held = []
    for name, count in sorted(deletes.items()):
        had = None if objects is None else objects.get(name)
        if count <= released.get(name, -1):
            continue
        if name in emptied:
            held.append(Held(name, count, had, EMPTY_READ))
        elif limit.exceeded(count, had):
            held.append(Held(name, count, had, f"over --max-deletes {limit}"))
    return held


def publication_name(database: str, settings: Settings, triggerless: bool) -> str:
    """The name a publication's hold is kept under: its database (Database.identity), and
    its event log or, triggerless, its schema."""
    if triggerless:
        return f"triggerless {database} {settings.schema}"
    return f"event log {database} {lock_name(settings)}"


class PublicationRecord:
    """One publication's record: ``{"publication", "last_cycle", "hold"}``, the hold being
    the classes held, since when, and what ``release`` allowed."""

    def __init__(self, state_dir: Path | None, publication: str) -> None:
        folder = (state_dir or default_state_dir()) / "publications"
        self.publication = publication
        self.path = folder / f"{folder_name(publication, 'record')}.json"

    def read(self) -> dict[str, Any]:
        """The record ({}: none yet); ConfigError when it is not one xdspub wrote."""
        try:
            record = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise ConfigError(f"the publication record {self.path} cannot be read: {exc}") from None
        if not isinstance(record, dict) or not isinstance(record.get("hold", {}), dict):
            raise ConfigError(f"the publication record {self.path} is not one xdspub wrote")
        return record

    def reasons(self) -> dict[int, tuple[str, str]]:
        """The letter and reason of each E and W row noted: record_id: (letter, why)."""
        return {int(r): (letter, why) for r, (letter, why) in self.read().get("rows", {}).items()}

    def held(self) -> list[Held]:
        return [Held(**h) for h in self.read().get("hold", {}).get("held", [])]

    def released(self) -> dict[str, int]:
        return {str(k): int(v) for k, v in self.read().get("hold", {}).get("released", {}).items()}

    def hold(self, held: list[Held]) -> bool:
        """Keep ``held`` as the hold (since its first time); True when it is new: not the
        hold the record held already."""
        rows = [asdict(h) for h in held]
        kept = self.read().get("hold", {}).get("held")

        def change(record: dict) -> None:
            hold = record.get("hold", {})
            record["hold"] = {"since": hold.get("since", _now()), "held": rows, "released": hold.get("released", {})}

        self._update(change)
        return kept != rows

    def release(self, classes: Collection[str] = ()) -> list[Held]:
        """Allow the next cycle the deletes held of ``classes`` (none named: every one);
        the holds released."""
        chosen = [h for h in self.held() if not classes or h.class_name in classes]
        if chosen:
            def change(record: dict) -> None:
                hold = record.setdefault("hold", {})
                hold["released"] = {**hold.get("released", {}), **{h.class_name: h.deletes for h in chosen}}

            self._update(change)
        return chosen

    def cycle_ended(self, outcome: str, summary: Mapping[str, Any],
                    notes: list[tuple[int, str, str]]) -> None:
        """The last cycle: ``outcome`` (published, held, failed: why) and its figures; a
        published cycle ends the hold, and its ``notes`` (record_id, letter, why of its E
        and W rows) are kept, the newest MAX_NOTED rows in all. Only a record, for
        ``xdspub status``: a state folder that cannot be written is let be."""

        def change(record: dict) -> None:
            record["last_cycle"] = {"ended": _now(), "outcome": outcome, **summary}
            if outcome == PUBLISHED:
                record.pop("hold", None)
                rows = {**record.get("rows", {}), **{str(r): [letter, why] for r, letter, why in notes}}
                record["rows"] = dict(sorted(rows.items(), key=lambda item: int(item[0]))[-MAX_NOTED:])

        try:
            self._update(change)
        except OSError:
            pass

    def _update(self, change: Callable[[dict], None]) -> None:
        """``change`` the record under a lock, so that ``release`` and a running service
        do not undo each other's writes."""
        with self._locked():
            record = self.read()
            change(record)
            record["publication"] = self.publication
            temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
            temporary.write_text(json.dumps(record, indent=1), "utf-8")
            os.replace(temporary, self.path)

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")
