"""A Spark cycle killed with SIGKILL leaves its work folder beside the output; the next
Spark cycle sweeps it (docs/delivery.md, Durability), publishes every row and leaves no
work folder behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.hostile.conftest import MASTER, Xdspub, documents_in, make_hostile_db, run_xdspub

pytestmark = pytest.mark.slow

ROWS = 10


def test_the_next_spark_cycle_sweeps_a_killed_cycles_work_folder(tmp_path: Path, servers) -> None:
    db = make_hostile_db("sqlite", tmp_path / "db", servers)
    try:
        db.log({f"add-{i}": (f"idu={i}", 1, "usr", "fname", None, "v") for i in range(1, ROWS + 1)})
        out = tmp_path / "out"
        export = ("export", "--db", db.url, "--out", str(out), "--master", MASTER)
        spark_cycle = ("--small-cycle-rows", "0")
        killed = Xdspub(*export, *spark_cycle)
        killed.wait_for(lambda: any(out.glob(".xdspub-work-*")), "work folder")
        killed.kill()  # SIGKILL to the driver and its JVM: nothing is cleaned up
        [left] = out.glob(".xdspub-work-*")
        assert set(db.statuses().values()) == {"N"}

        run = run_xdspub(*export, *spark_cycle)
        assert run.code == 0, run.describe()
        assert not left.exists() and list(out.glob(".xdspub-work-*")) == []
        assert len(documents_in(out)) == ROWS
        assert set(db.statuses().values()) == {"S"}
    finally:
        db.drop()
