"""Values of 100 MB in the event log (issue 12, part 6, item 3): a new_value of 100,000,000
characters (and on SQLite, whose VARCHAR(1024) holds anything, a table_key of as many), and
an old_value just over the Maximum Value Length. Each such row is E ("longer than"), the
other rows publish, and the export never holds such a value: the peak memory of its
process tree (the driver, the JVM and the Python workers, summed as bench/peak_rss.py
does) stays within BOUND_MIB of the same export without them.

Why these bounds: the publisher reads at most Maximum Value Length + 1 characters (16 MiB
+ 1 by default) of each value. A value taken whole is held several times over on its way
(the JDBC driver's buffer, the Java string, Spark's row and Arrow batch in the JVM; the
Arrow buffer and the Python string in a worker). Measured on PostgreSQL with
--max-value-length 200000000, where one 100 MB value is taken and published, the tree's
peak grew by 1.2 GB and the workers' by 575 MB. Taken bounded, each long value costs
about 17 MB per copy: the tree's peak grew by 53-165 MB on PostgreSQL and MariaDB and the
workers' by 34-60 MB, run-to-run noise being some tens of MB. Hence 256 MiB for the tree
and 100 MiB for the workers.

SQLite runs inside the processes that use it: its substr() loads the whole value into the
JVM's SQLite while it reads the prefix, and the status UPDATE rewrites each whole 100 MB
record in the driver (about 290 MB for two such rows, measured with sqlite3 alone), which
no publisher can avoid: some 400 MB of SQLite's own, so the tree's bound there is
256 + 384 = 640 MiB (measured: 330-480 MB). The workers' bound is the same everywhere.

MariaDB's default max_allowed_packet (16 MB) refuses such values: the private MariaDB here
runs with 1 GiB."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hostile.conftest import (
    KINDS,
    HostileDb,
    Run,
    make_hostile_db,
    parse_document,
)

pytestmark = pytest.mark.slow

BIG = 100_000_000
OVER = 16 * 1024 * 1024 + 222_784  # 17,000,000: just over the default limit
# Growth of the whole tree's peak, and of the Python workers' (see the module's docstring).
BOUND_MIB = {"postgresql": 256, "mariadb": 256, "sqlite": 640}
WORKERS_BOUND_MIB = 100
NORMAL = 20


def text_of(kind: str, length: int) -> str:
    """SQL for a text of ``length`` characters, made by the server (no 100 MB packet)."""
    if kind == "sqlite":
        return f"substr(hex(zeroblob({(length + 1) // 2})), 1, {length})"
    return f"repeat('x', {length})"


@dataclass
class HugeCycle:
    db: HostileDb
    baseline: Run
    huge: Run
    ids: dict[str, int]
    statuses: dict[int, str]
    out: Path

    def status(self, label: str) -> str:
        return self.statuses[self.ids[label]]


def log_normal(db: HostileDb, prefix: str, first: int) -> dict[str, int]:
    return db.log(
        {
            f"{prefix}-{i}": (f"idu={first + i}", 1, "usr", "fname", None, f"name {i}")
            for i in range(NORMAL)
        }
    )


@pytest.fixture(scope="module", params=KINDS)
def huge(request, tmp_path_factory, servers) -> HugeCycle:
    kind = request.param
    folder = tmp_path_factory.mktemp(f"huge-{kind}")
    db = make_hostile_db(kind, folder / "db", servers)
    try:
        log_normal(db, "warm", 100)
        baseline = db.export(folder / "baseline.xml")
        assert baseline.code == 0, baseline.describe()
        ids = log_normal(db, "normal", 300)
        log = db.table("indirect_process")
        db.execute(
            f"INSERT INTO {log} (table_key, event_type, table_name, column_name, new_value, "
            f"perpetrator) VALUES ('idu=200', 1, 'usr', 'fname', {text_of(kind, BIG)}, 'huge-new')"
        )
        db.execute(
            f"INSERT INTO {log} (table_key, event_type, table_name, column_name, old_value, "
            f"new_value, perpetrator) "
            f"VALUES ('idu=201', 2, 'usr', 'fname', {text_of(kind, OVER)}, 'y', 'huge-old')"
        )
        labels = ["huge-new", "huge-old"]
        if kind == "sqlite":
            db.execute(
                f"INSERT INTO {log} (table_key, event_type, table_name, perpetrator) "
                f"VALUES ('idu=' || {text_of(kind, BIG)}, 4, 'usr', 'huge-key')"
            )
            labels.append("huge-key")
        ids.update(db.record_ids(labels))
        out = folder / "huge.xml"
        run = db.export(out)
        yield HugeCycle(db, baseline, run, ids, db.statuses(), out)
    finally:
        db.drop()


def test_long_values_are_errors_saying_so(huge: HugeCycle) -> None:
    run = huge.huge
    assert run.code == 1, run.describe()
    for label in ("huge-new", "huge-old", "huge-key"):
        if label in huge.ids:
            assert huge.status(label) == "E", (label, run.describe())
            assert "longer than" in run.notes[huge.ids[label]][1], (
                label,
                run.notes.get(huge.ids[label]),
            )


def test_the_other_rows_publish(huge: HugeCycle) -> None:
    wrong = {
        label: huge.status(label)
        for label in huge.ids
        if label.startswith("normal") and huge.status(label) != "S"
    }
    assert not wrong, wrong
    root = parse_document(huge.out)
    assert len(root.findall("input/add")) == NORMAL
    assert huge.out.stat().st_size < 1 << 20


def test_memory_stays_bounded(huge: HugeCycle) -> None:
    grown = (huge.huge.peak_kib - huge.baseline.peak_kib) / 1024
    bound = BOUND_MIB[huge.db.kind]
    print(
        f"\n{huge.db.kind}: {grown:.0f} MiB more; with: {huge.huge.peak_breakdown()}; "
        f"without: {huge.baseline.peak_breakdown()}"
    )
    assert grown < bound, (
        f"peak {huge.huge.peak_kib / 1024:.0f} MiB with the 100 MB values, "
        f"{huge.baseline.peak_kib / 1024:.0f} MiB without: {grown:.0f} MiB more (bound {bound})\n"
        f"with: {huge.huge.peak_breakdown()}\nwithout: {huge.baseline.peak_breakdown()}"
    )


def test_python_workers_never_hold_a_whole_value(huge: HugeCycle) -> None:
    """The Python workers classify the rows: a value read whole would be there (as Arrow
    and as a Python string) whatever the database."""
    with_values = huge.huge.role_peaks.get("workers", 0) / 1024
    without = huge.baseline.role_peaks.get("workers", 0) / 1024
    print(f"\n{huge.db.kind}: workers {with_values:.0f} MiB, without the values {without:.0f} MiB")
    assert with_values - without < WORKERS_BOUND_MIB, (
        f"the workers peaked at {with_values:.0f} MiB, {without:.0f} MiB without the values"
    )


def test_max_value_length_is_a_parameter(tmp_path: Path, servers) -> None:
    """--max-value-length N: a table_key, old or new value of N + 1 characters is E, one of
    N characters is taken."""
    db = make_hostile_db("sqlite", tmp_path / "db", servers)
    try:
        ids = db.log(
            {
                "new-11": ("idu=1", 1, "usr", "fname", None, "x" * 11),
                "new-10": ("idu=2", 1, "usr", "fname", None, "x" * 10),
                "old-11": ("idu=3", 2, "usr", "fname", "y" * 11, "z"),
                "key-11": ("idu=0000001", 4, "usr"),  # 11 characters
                "key-10": ("idu=000002", 4, "usr"),  # 10 characters, not canonical: W
            }
        )
        run = db.export(tmp_path / "out.xml", "--max-value-length", "10")
        statuses = db.statuses()
        got = {label: statuses[i] for label, i in ids.items()}
        assert got == {"new-11": "E", "new-10": "S", "old-11": "E", "key-11": "E", "key-10": "W"}, (
            run.describe()
        )
        for label in ("new-11", "old-11", "key-11"):
            assert "longer than" in run.notes[ids[label]][1]
        parse_document(tmp_path / "out.xml")
    finally:
        db.drop()
