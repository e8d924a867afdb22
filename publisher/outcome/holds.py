"""The delete guard (docs/delivery.md, Delete guard): which classes a cycle's deletes put
on hold, and the hold record a held publication keeps until ``xdspub release``.

The record is a JSON file under the state folder (``--state-dir``), one per publication,
so that a running service, ``xdspub status`` and ``xdspub release`` on the same machine
see the same hold."""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path

from publisher.errors import ConfigError
from publisher.outcome.lock import lock_name
from publisher.outcome.state import default_state_dir, folder_name
from publisher.settings import DeleteLimit, Settings

EMPTY_READ = "read empty"


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


class HoldRecord:
    """A publication's hold: the classes held, since when, and what ``release`` allowed."""

    def __init__(self, state_dir: Path | None, publication: str) -> None:
        folder = (state_dir or default_state_dir()) / "holds"
        self.publication = publication
        self.path = folder / f"{folder_name(publication, 'holds')}.json"

    def read(self) -> dict | None:
        """The record (None: nothing is held); ConfigError when it is not ours."""
        try:
            record = json.loads(self.path.read_text("utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            raise ConfigError(f"the hold record {self.path} cannot be read: {exc}") from None
        if not isinstance(record, dict) or not isinstance(record.get("held"), list):
            raise ConfigError(f"the hold record {self.path} is not one xdspub wrote")
        return record

    def held(self) -> list[Held]:
        record = self.read()
        return [Held(**h) for h in record["held"]] if record else []

    def released(self) -> dict[str, int]:
        record = self.read()
        return {str(k): int(v) for k, v in (record or {}).get("released", {}).items()}

    def hold(self, held: list[Held]) -> bool:
        """Keep ``held`` as the hold (its first time kept); True when it is new: not the
        hold the record held already."""
        record = self.read() or {}
        rows = [asdict(h) for h in held]
        if record.get("held") == rows:
            return False
        now = datetime.now(timezone.utc).isoformat(timespec="seconds")
        self._write({"publication": self.publication, "since": record.get("since", now),
                     "held": rows, "released": record.get("released", {})})
        return True

    def release(self, classes: Collection[str] = ()) -> list[Held]:
        """Allow the next cycle the deletes held of ``classes`` (none named: every one);
        the holds released."""
        record = self.read()
        if record is None:
            return []
        chosen = [h for h in self.held() if not classes or h.class_name in classes]
        released = {**record.get("released", {}), **{h.class_name: h.deletes for h in chosen}}
        self._write({**record, "released": released})
        return chosen

    def clear(self) -> None:
        """A cycle was published: nothing is held any more."""
        self.path.unlink(missing_ok=True)

    def _write(self, record: dict) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}.tmp")
        temporary.write_text(json.dumps(record, indent=1), "utf-8")
        os.replace(temporary, self.path)
