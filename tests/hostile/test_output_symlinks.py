"""An output directory holding symbolic links (issue 12, part 6, item 6): before the run, a
link is planted at every name the publisher might write (the final document names,
heartbeat.xml, and the temporary names earlier code used, ``.<name>.<pid>.tmp`` and
``.<name>.part<n>.<pid>.tmp``, for every process id it is likely to get), each pointing
outside --out: at a file there (which must stay as it was) or at a name there that does not
exist (which must stay so). The project's decision: temporary files get random names,
created exclusively, and a link is never followed."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

from tests.hostile.conftest import (
    MASTER,
    HostileDb,
    Proc,
    Xdspub,
    make_hostile_db,
    parse_document,
)

# Trap plants bait files outside --out; they are not XDS.
pytestmark = [pytest.mark.slow, pytest.mark.not_xds("outside/bait-*.xml")]

DOCUMENTS = 3
PID_WINDOW = 4000  # the ids after the last one given out: an export takes about 1,100
PARTS = 4


def next_pids(count: int) -> list[int]:
    last = int(Path("/proc/sys/kernel/ns_last_pid").read_text())
    highest = int(Path("/proc/sys/kernel/pid_max").read_text())
    pids, pid = [], last
    for _ in range(count):
        pid += 1
        if pid >= highest:
            pid = 301  # where Linux starts again
        pids.append(pid)
    return pids


class Trap:
    """Links planted in ``folder`` at names the publisher might write, pointing into
    ``outside``: alternately at a bait file there and at a name there that does not exist."""

    def __init__(self, folder: Path, outside: Path) -> None:
        self.folder, self.outside = folder, outside
        folder.mkdir(parents=True, exist_ok=True)
        outside.mkdir(parents=True, exist_ok=True)
        self.baits = []
        for i in range(4):
            bait = outside / f"bait-{i}.xml"
            bait.write_text(f"<bait n='{i}'>outside --out: must not change</bait>\n")
            self.baits.append(bait)
        self.planted = 0
        self.pids_done: set[int] = set()
        self.temporary_names: list[str] = []
        self.before = self.state()

    def link(self, name: str) -> None:
        path = self.folder / name
        if path.is_symlink() or path.exists():
            return
        self.planted += 1
        if self.planted % 2:
            target = self.baits[self.planted % len(self.baits)]
        else:
            target = self.outside / f"absent-{self.planted}"
        os.symlink(target, path)

    def for_pids(self, pids) -> None:
        for pid in pids:
            if pid in self.pids_done:
                continue
            self.pids_done.add(pid)
            for name in self.temporary_names:
                self.link(f".{name}.{pid}.tmp")
                for part in range(PARTS):
                    self.link(f".{name}.part{part:05d}.{pid}.tmp")

    def on_sample(self, procs: list[Proc]) -> None:
        """Watching the run: the same links for each new process of its tree."""
        self.for_pids(p.pid for p in procs)

    def state(self) -> dict[str, str]:
        """Every file under ``outside``, with a digest of its content."""
        return {
            str(p.relative_to(self.outside)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(self.outside.rglob("*"))
            if p.is_file()
        }

    def assert_outside_untouched(self) -> None:
        after = self.state()
        created = sorted(set(after) - set(self.before))
        changed = sorted(n for n in self.before if after.get(n) != self.before[n])
        assert not created and not changed, f"outside --out: created {created}, changed {changed}"


def deletes(db: HostileDb, count: int) -> dict[str, int]:
    return db.log({f"delete-{i}": (f"idu={i}", 4, "usr") for i in range(1, count + 1)})


def final_names(ids: dict[str, int]) -> list[str]:
    return [f"{record_id:020d}.xml" for record_id in sorted(ids.values())]


def test_directory_output_never_follows_a_link(tmp_path: Path, servers) -> None:
    db = make_hostile_db("sqlite", tmp_path / "db", servers)
    try:
        ids = deletes(db, DOCUMENTS)
        names = final_names(ids)
        trap = Trap(tmp_path / "out", tmp_path / "outside")
        for name in [*names, "heartbeat.xml"]:
            trap.link(name)
        trap.temporary_names = [*names, "heartbeat.xml"]
        trap.for_pids(next_pids(PID_WINDOW))
        run = Xdspub(
            "export",
            "--db",
            db.url,
            "--out",
            str(trap.folder),
            "--batch-size",
            "1",
            "--master",
            MASTER,
            on_sample=trap.on_sample,
        ).wait()
        trap.assert_outside_untouched()
        assert run.code == 0, run.describe()
        for name in names:
            path = trap.folder / name
            assert not path.is_symlink() and path.is_file(), f"{name} is not a regular file"
            assert len(parse_document(path).findall("input/delete")) == 1
        assert set(db.statuses().values()) == {"S"}
    finally:
        db.drop()


def test_file_output_that_is_a_link_is_replaced_not_followed(tmp_path: Path, servers) -> None:
    db = make_hostile_db("sqlite", tmp_path / "db", servers)
    try:
        deletes(db, DOCUMENTS)
        trap = Trap(tmp_path / "out", tmp_path / "outside")
        out = trap.folder / "out.xml"
        os.symlink(trap.baits[0], out)
        trap.temporary_names = ["out.xml"]
        trap.for_pids(next_pids(PID_WINDOW))
        run = Xdspub(
            "export",
            "--db",
            db.url,
            "--out",
            str(out),
            "--master",
            MASTER,
            on_sample=trap.on_sample,
        ).wait()
        trap.assert_outside_untouched()
        statuses = set(db.statuses().values())
        if run.code == 0:  # replaced by the document
            assert not out.is_symlink() and out.is_file()
            assert len(parse_document(out).findall("input/delete")) == DOCUMENTS
            assert statuses == {"S"}
        else:  # or refused: then nothing is marked
            assert statuses == {"N"}, run.describe()
    finally:
        db.drop()


def test_heartbeat_never_follows_a_link(tmp_path: Path, servers) -> None:
    db = make_hostile_db("sqlite", tmp_path / "db", servers)
    try:
        trap = Trap(tmp_path / "out", tmp_path / "outside")
        trap.link("heartbeat.xml")
        trap.temporary_names = ["heartbeat.xml"]
        trap.for_pids(next_pids(PID_WINDOW))
        heartbeat = trap.folder / "heartbeat.xml"
        poll = Xdspub(
            "poll",
            "--db",
            db.url,
            "--out",
            str(trap.folder),
            "--interval",
            "1",
            "--heartbeat",
            "0.02",
            "--master",
            MASTER,
            stderr=tmp_path / "poll.log",
            on_sample=trap.on_sample,
        )
        try:
            poll.wait_for(
                lambda: (
                    not heartbeat.is_symlink()
                    or trap.state() != trap.before
                    or " heartbeat" in poll.stderr_text()
                ),
                "a heartbeat",
            )
        finally:
            run = poll.terminate()
        trap.assert_outside_untouched()
        assert run.code == 0, run.describe()
        assert not heartbeat.is_symlink() and heartbeat.is_file()
        status = parse_document(heartbeat).find("input/status")
        assert status is not None and status.get("type") == "heartbeat"
    finally:
        db.drop()
