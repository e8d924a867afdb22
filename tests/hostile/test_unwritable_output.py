"""A read-only or full output (issue 12, part 6, item 7). We run as root, so chmod stops no
write: the output is a tmpfs mounted read-only, or a tiny tmpfs filled up (always unmounted
afterwards). The export exits 4 with a clear error, every row stays N (nothing is marked
that was not delivered), and no final-named document is left half written. Standard output
to /dev/full with --out - must not exit 0 either, and marks nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.conftest import (
    MASTER,
    HostileDb,
    documents_in,
    fill,
    make_hostile_db,
    parse_document,
    run_xdspub,
    tmpfs,
)

pytestmark = pytest.mark.slow

ROWS = 40
VALUE = "v" * 2000  # 40 documents of some 2.5 kB: more than a 64 KiB tmpfs has left
# Either plan: a Spark cycle also keeps its scratch files beside the output.
PLANS = {"driver": [], "spark": ["--small-cycle-rows", "0"]}


def backlog(tmp_path: Path, servers) -> HostileDb:
    db = make_hostile_db("sqlite", tmp_path / "db", servers)
    db.log({f"add-{i}": (f"idu={i}", 1, "usr", "fname", None, VALUE) for i in range(1, ROWS + 1)})
    return db


def assert_nothing_marked(db: HostileDb, run) -> None:
    statuses = db.statuses()
    assert len(statuses) == ROWS
    assert set(statuses.values()) == {"N"}, f"rows marked without a document:\n{run.describe()}"


def assert_clear_error(run) -> None:
    assert run.code == 4, run.describe()
    assert "Traceback" not in run.stderr, run.describe()
    assert "xdspub: error:" in run.stderr, run.describe()


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("form", ["directory", "file"])
def test_read_only_output(tmp_path: Path, servers, form: str, plan: str) -> None:
    db = backlog(tmp_path, servers)
    try:
        with tmpfs(tmp_path / "mnt", "1m", readonly=True) as mount:
            out = mount if form == "directory" else mount / "out.xml"
            run = run_xdspub(
                "export", "--db", db.url, "--out", str(out), "--master", MASTER, *PLANS[plan]
            )
            left = sorted(p.name for p in mount.iterdir())
        assert_clear_error(run)
        assert left == []
        assert_nothing_marked(db, run)
    finally:
        db.drop()


@pytest.mark.parametrize("plan", PLANS)
@pytest.mark.parametrize("form", ["directory", "file"])
def test_full_output(tmp_path: Path, servers, form: str, plan: str) -> None:
    db = backlog(tmp_path, servers)
    try:
        with tmpfs(tmp_path / "mnt", "64k") as mount:
            (mount / "out").mkdir()
            fill(mount, leave=8192)  # room for a few documents, not for all
            folder = mount / "out"
            out = folder if form == "directory" else folder / "out.xml"
            run = run_xdspub(
                "export",
                "--db",
                db.url,
                "--out",
                str(out),
                "--batch-size",
                "1",
                "--master",
                MASTER,
                *PLANS[plan],
            )
            # Documents left under their final names must be whole; none half written.
            for document in documents_in(folder):
                parse_document(document)
        assert_clear_error(run)
        assert_nothing_marked(db, run)
    finally:
        db.drop()


def test_full_output_when_the_filesystem_has_no_room_at_all(tmp_path: Path, servers) -> None:
    db = backlog(tmp_path, servers)
    try:
        with tmpfs(tmp_path / "mnt", "64k") as mount:
            (mount / "out").mkdir()
            fill(mount)
            run = run_xdspub(
                "export", "--db", db.url, "--out", str(mount / "out"), "--master", MASTER
            )
            for document in documents_in(mount / "out"):
                parse_document(document)
        assert_clear_error(run)
        assert_nothing_marked(db, run)
    finally:
        db.drop()


def test_standard_output_to_dev_full(tmp_path: Path, servers) -> None:
    db = backlog(tmp_path, servers)
    try:
        run = run_xdspub(
            "export", "--db", db.url, "--out", "-", "--master", MASTER, stdout=Path("/dev/full")
        )
        assert run.code != 0, run.describe()
        assert_nothing_marked(db, run)
    finally:
        db.drop()
