"""Property tests (issue 32, item 6): random schemas and histories, published every way,
applied to a mirror (`xdspub apply`), and the mirror verified against the database
(`xdspub verify`) after each cycle: no difference, on SQLite, PostgreSQL and MariaDB.

- The schemas and histories are drawn by tests/schemas.py (its docstring says what they
  hold). A history is run as SQL with quoted names and bound values, and published in
  cycles: changes, cycle, apply, verify; more changes, cycle, apply, verify; so the mirror
  is built up.
- The ways: the `field` and `query-back` triggers, `--mode triggerless`, and `resync`
  after the first cycle's changes then the `field` triggers; in the driver, and on Spark
  (`small_cycle_rows=0`) for a few examples (marked slow).
- Example counts: XDSPUB_PROPERTY_EXAMPLES examples per database and way (default 4), and
  a quarter of that, at least one, on Spark, where a few kept examples are replayed too.
  The hypothesis profile is derandomized, so CI draws the same examples every run.
- A failing example is kept: the test writes it (with XDSPUB_PROPERTY_SHRINK=1 the shrunk one,
  which hypothesis runs last; shrinking on real databases takes minutes)
  to tests/property_examples/found-<database>-<way>.json, a name git ignores and the kept
  set leaves out. Rename it (<database>-<what>.json) and commit it: test_kept_example then
  replays it on every way, and once fixed it stays as a regression test.
- The kept set, tests/property_examples/<database>-<type>.json, has each type of the
  database as a key (of a class, of a composite key, referenced by a single-valued
  reference, a self-reference and a link table) and as a value (of a class and of a child
  table holding one value twice for a parent). tests/schemas.py's typed_example made them.
  The other kept files are random examples that failed (<database>-<what>.json).
"""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import sqlalchemy as sa
from hypothesis import HealthCheck, Phase, given, settings

from publisher.cycle import run_cycle
from publisher.delivery.sinks import open_sink
from publisher.mirror import apply_documents, verify_mirror
from publisher.progress import SilentRows
from publisher.settings import Settings
from publisher.source.database import connect, run_scripts
from publisher.source.event_log import open_event_log
from publisher.source.identifiers import quoted
from publisher.source.init_db import init_db
from publisher.source.resync import resync
from publisher.source.triggers import trigger_script
from publisher.triggerless import TriggerlessOptions, export_triggerless
from tests.conftest import server_url
from tests.schemas import TYPES, Schema, examples, statement, types_on

EXAMPLES = int(os.environ.get("XDSPUB_PROPERTY_EXAMPLES", "4"))
KEPT = Path(__file__).parent / "property_examples"
DATABASES = ("sqlite", "postgresql", "mariadb")
WAYS = ("field", "query-back", "triggerless", "resync")

settings.register_profile(
    "xdspub-properties", derandomize=True, deadline=None, database=None, print_blob=True,
    # Shrinking replays an example on a new database hundreds of times: minutes. Asked for
    # with XDSPUB_PROPERTY_SHRINK=1, it writes the shrunk example instead of the first.
    phases=[p for p in Phase if p is not Phase.shrink or os.environ.get("XDSPUB_PROPERTY_SHRINK") == "1"],
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much,
                           HealthCheck.function_scoped_fixture],
)

# Known failures, each for an item of issue 32 being fixed elsewhere: (database, way) for
# the random examples, (kept example, way) for the kept ones; None: every way. Remove a
# line once its item is merged and the tests pass.
KNOWN_FAILURES: dict[tuple[str, str | None], str] = {
    # the random examples, by database and way: among the keys drawn are those item 1
    # mends (which of the first examples hold one depends on the example count)
    **{(database, way): "issue 32 item 1: binary keys, MariaDB BIGINT UNSIGNED past 2^63 (PostgreSQL: uuid, date, "
                              "timestamp, numeric keys too)"
       for database in ("sqlite", "postgresql", "mariadb")
       for way in ("field", "query-back", "triggerless", "resync")},
    # the kept examples
    ("postgresql-random-1", None): "issue 32 item 1: a binary key: 'utf-8' codec can't decode byte 0xde",
    ("mariadb-random-1", None): "issue 32 item 1: a binary key: field: new_value has a character XML 1.0 cannot "
                                "carry; else 'utf-8' codec can't decode byte 0x8d",
    ("postgresql-bigint", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("postgresql-bigint", "query-back"):
        "issue 32 item 1: integer out of range",
    ("postgresql-bigint", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("postgresql-bigint", "resync"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("postgresql-binary", "field"):
        "issue 32 item 1: cycle 1: a reference to an object the mirror lacks (a binary key: key text and "
        "reference text differ)",
    ("postgresql-binary", "query-back"):
        "issue 32 item 1: operator does not exist: bytea = character varying",
    ("postgresql-binary", "triggerless"):
        "issue 32 item 1: UnicodeDecodeError 'utf-8' codec can't decode byte 0xff in position 0: invalid s",
    ("postgresql-binary", "resync"):
        "issue 32 item 1: operator does not exist: bytea = character varying",
    ("postgresql-boolean", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("postgresql-boolean", "query-back"):
        "issue 32 item 1: operator does not exist: boolean = character varying",
    ("postgresql-boolean", "resync"):
        "issue 32 item 1: ArgumentError Only '=', '!=', 'is_()', 'is_not()', 'is_distinct_from()', 'is_not",
    ("postgresql-char", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("postgresql-char", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("postgresql-char", "resync"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("postgresql-date", "field"):
        "issue 32 item 1: operator does not exist: date = character varying",
    ("postgresql-date", "query-back"):
        "issue 32 item 1: operator does not exist: date = character varying",
    ("postgresql-date", "resync"):
        "issue 32 item 1: operator does not exist: date = character varying",
    ("postgresql-numeric", "field"):
        "issue 32 item 1: operator does not exist: numeric = character varying",
    ("postgresql-numeric", "query-back"):
        "issue 32 item 1: operator does not exist: numeric = character varying",
    ("postgresql-numeric", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("postgresql-numeric", "resync"):
        "issue 32 item 1: operator does not exist: numeric = character varying",
    ("postgresql-text", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("postgresql-text", "resync"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("postgresql-timestamptz", "field"): "issue 32 item 1: operator does not exist: timestamp with time zone = character varying",
    ("postgresql-timestamptz", "query-back"): "issue 32 item 1: operator does not exist: timestamp with time zone = character varying",
    ("postgresql-timestamptz", "triggerless"):
        "issue 32 item 4 (or 1): cycle 1: a reference comes before the add of the object it names",
    ("postgresql-timestamptz", "resync"): "issue 32 item 1: operator does not exist: timestamp with time zone = character varying",
    ("postgresql-smallint", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("postgresql-smallint", "resync"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-smallint", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-smallint", "resync"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("postgresql-timestamp", "field"):
        "issue 32 item 1: operator does not exist: timestamp without time zone = cha",
    ("postgresql-timestamp", "query-back"):
        "issue 32 item 1: operator does not exist: timestamp without time zone = cha",
    ("postgresql-timestamp", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("postgresql-timestamp", "resync"):
        "issue 32 item 1: operator does not exist: timestamp without time zone = cha",
    ("postgresql-uuid", "field"):
        "issue 32 item 1: operator does not exist: uuid = character varying",
    ("postgresql-uuid", "query-back"):
        "issue 32 item 1: operator does not exist: uuid = character varying",
    ("postgresql-uuid", "resync"):
        "issue 32 item 1: operator does not exist: uuid = character varying",
    ("postgresql-varchar", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("postgresql-varchar", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("postgresql-varchar", "resync"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("sqlite-bigint", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("sqlite-bigint", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("sqlite-bigint", "resync"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("sqlite-binary", "field"):
        "issue 32 item 1: cycle 1: rows marked E: [(2, 'new_value has a character XML 1.0 cannot carry at ",
    ("sqlite-binary", "query-back"):
        "issue 32 item 1: cycle 1: rows marked E: [(3, 'current value of Kind_ref has a character XML 1.0 ",
    ("sqlite-binary", "triggerless"):
        "issue 32 item 1: cycle 1: objects failed: [('Kind', 'Key=\"/4A=\"', 'current value of Self has a ch",
    ("sqlite-binary", "resync"):
        "issue 32 item 1: cycle 1: rows marked E: [(4, 'current value of Kind_ref has a character XML 1.0 ",
    ("sqlite-numeric_text", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("sqlite-numeric_text", "resync"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("sqlite-text", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("sqlite-text", "resync"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("sqlite-untyped", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("sqlite-untyped", "query-back"):
        "issue 32 item 1: cycle 1: a reference to an object the mirror lacks (untyped key 7 read back as '7')",
    ("sqlite-untyped", "triggerless"):
        "issue 32 item 1: cycle 1: a reference to an object the mirror lacks (untyped key 7 read back as '7')",
    ("sqlite-untyped", "resync"):
        "issue 32 item 1: cycle 1: a reference to an object the mirror lacks (untyped key 7 read back as '7')",
    ("sqlite-varchar", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("sqlite-varchar", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("sqlite-varchar", "resync"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("mariadb-bigint", "field"):
        "issue 32 item 1: cycle 1: rows marked E: [(1, 'table_key value 18446744073709551615 of Key is not",
    ("mariadb-bigint", "query-back"):
        "issue 32 item 1: cycle 1: rows marked E: [(1, 'table_key value 18446744073709551615 of Key is not",
    ("mariadb-bigint", "triggerless"):
        "issue 32 item 1: cycle 1: objects failed: [('order', 'id=1', \"current value '18446744073709551615",
    ("mariadb-bigint", "resync"):
        "issue 32 item 1: cycle 1: rows marked E: [(1, 'table_key value 9223372036854775808 of Key is not ",
    ("mariadb-binary", "field"):
        "issue 32 item 1: the trigger: (1300, \"Invalid utf8mb4 character string: '\\\\xFF\\\\x80'\")",
    ("mariadb-binary", "query-back"):
        "issue 32 item 1: cycle 1: rows marked E: [(3, 'current value of Kind_ref has a character XML 1.0 ",
    ("mariadb-binary", "triggerless"):
        "issue 32 item 1: cycle 1: objects failed: [('Kind', 'Key=\"/4A=\"', 'current value of Self has a ch",
    ("mariadb-binary", "resync"):
        "issue 32 item 1: cycle 1: rows marked E: [(5, 'current value of Kind_ref has a character XML 1.0 ",
    ("mariadb-boolean", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-boolean", "resync"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-char", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-char", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("mariadb-char", "resync"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-date", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-date", "resync"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-numeric", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-numeric", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("mariadb-numeric", "resync"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("mariadb-text", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-text", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("mariadb-text", "resync"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-char", "query-back"):
        "issue 32 item 1: cycle 3: a reference in another case than its key ('abc' and 'ABC' are one key)",
    ("mariadb-text", "query-back"):
        "issue 32 item 1: cycle 3: a reference in another case than its key ('abc' and 'ABC' are one key)",
    ("mariadb-varchar", "query-back"):
        "issue 32 item 1: cycle 3: a reference in another case than its key ('abc' and 'ABC' are one key)",
    ("mariadb-timestamp", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-timestamp", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("mariadb-timestamp", "resync"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("mariadb-uuid", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-uuid", "resync"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-varchar", "field"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    ("mariadb-varchar", "triggerless"):
        "issue 32 item 4: cycle 1: a reference comes before the add of the object it names",
    ("mariadb-varchar", "resync"):
        "issue 32 item 3: cycle 2: remove-value of a child value still held (held twice, one row deleted)",
    # found by these tests, in no item of issue 32: a type 5 publishes nothing for an
    # object without a value (docs/triggers.md#query-back), so a later reference to it
    # names an object the consumer never received
    ("sqlite-valueless-referenced", "query-back"):
        "found: an object without a value announced only by a type 5 (an insert under the query-back "
        "triggers) is never published; a later reference to it cannot be applied",
    ("sqlite-valueless-referenced", "resync"):
        "found: an object without a value announced only by resync's type 5 is never published; "
        "a later reference to it cannot be applied",
    ("postgresql-valueless-rekeyed", "field"):
        "found: the key change of an object without a value (type 4, then a type 5 that publishes "
        "nothing) loses the object; a later reference to its new key cannot be applied",
    ("postgresql-valueless-rekeyed", "resync"):
        "found: the key change of an object without a value (type 4, then a type 5 that publishes "
        "nothing) loses the object; a later reference to its new key cannot be applied",
}


def known(name: str, way: str) -> str | None:
    return KNOWN_FAILURES.get((name, way)) or KNOWN_FAILURES.get((name, None))


# --- a database for one example -------------------------------------------------------------


class ExampleDb:
    """An example's schema, its event log and tables, in a new SQLite file or a new
    PostgreSQL schema or MariaDB database (dropped by ``drop``)."""

    def __init__(self, database: str, folder: Path, schema: dict) -> None:
        if database == "sqlite":
            url, name = f"sqlite:///{folder / 'example.db'}", "indirect"
        else:
            url, name = server_url(database), f"xp_{uuid.uuid4().hex[:10]}"
        # The tests change the tables as the publisher's own user: not loopback here.
        self.settings = Settings(db_url=url, schema=name, spark_master="local[2]", allow_loopback=True)
        self.engine, self.dialect = connect(url, create=True)
        self.database, self.name = database, name
        self.schema = Schema(schema)
        init_db(self.engine, self.dialect, name, self.settings.log_table, False, "none")
        with self.engine.begin() as conn:
            for ddl in self.schema.ddl(database, self.quote, self.qualify):
                conn.execute(sa.text(ddl))

    def quote(self, name: str) -> str:
        return quoted(self.engine, "name", name)

    def qualify(self, table: str) -> str:
        return f"{self.quote(self.name)}.{self.quote(table)}" if self.dialect.has_schemas else self.quote(table)

    def install_triggers(self, flavour: str) -> None:
        script = trigger_script(self.engine, self.dialect, self.name, self.settings.log_table, None, flavour)
        run_scripts(self.engine, self.dialect, [script.ddl])

    def run(self, ops: list[dict]) -> None:
        """Each operation in a transaction of its own; a rollback's in one rolled back."""
        for op in ops:
            with self.engine.connect() as conn:
                for each in op["ops"] if op["op"] == "rollback" else [op]:
                    sql, binds = statement(self.engine, self.schema, self.database, each, self.qualify)
                    conn.execute(sa.text(sql), binds)
                if op["op"] == "rollback":
                    conn.rollback()
                else:
                    conn.commit()

    def drop(self) -> None:
        if self.dialect.has_schemas:
            drop = "DROP SCHEMA {} CASCADE" if self.database == "postgresql" else "DROP DATABASE {}"
            with self.engine.begin() as conn:
                conn.execute(sa.text(drop.format(self.quote(self.name))))
        self.engine.dispose()


# --- publishing an example one way, applying, verifying -------------------------------------


def published_and_verified(example: dict, way: str, folder: Path, on_spark: bool = False) -> None:
    """Run the example's history in cycles, published ``way``; after each cycle, apply the
    documents to the mirror and verify it against the database."""
    db = ExampleDb(example["database"], folder, example["schema"])
    try:
        settings_ = replace(db.settings, small_cycle_rows=0) if on_spark else db.settings
        out, mirror = folder / "out", folder / "mirror.db"
        if way in ("field", "query-back"):
            db.install_triggers(way)
        for number, cycle in enumerate(example["history"], 1):
            db.run(cycle)
            if way == "resync" and number == 1:
                db.install_triggers("field")
                resync(db.engine, db.dialect, db.settings, 2, False, SilentRows())
            if way == "triggerless":
                report = export_triggerless(settings_, TriggerlessOptions(folder / "state", "all"), str(out))
                assert not report.failed, f"cycle {number}: objects failed: {report.failed}"
            else:
                log = open_event_log(db.engine, db.dialect, settings_)
                report = run_cycle(settings_, db.engine, db.dialect, log, open_sink(str(out), 2))
                assert not report.errors, f"cycle {number}: rows marked E: {report.errors}"
                assert report.on_spark == (on_spark and report.rows > 0)
            if not out.exists():
                continue  # nothing published yet
            applied = apply_documents([str(out)], mirror)
            assert applied.failure is None, f"cycle {number}: {applied.failure}"
            differences = [str(d) for d in verify_mirror(db.settings, mirror)]
            assert differences == [], f"cycle {number}: the mirror differs: " + "; ".join(differences[:5])
    finally:
        db.drop()


def kept_on_failure(example: dict, way: str, name: str) -> None:
    """Write ``example`` as tests/property_examples/found-<name>-<way>.json (git ignores
    that name: rename the file to keep it)."""
    (KEPT / f"found-{name}-{way}.json").write_text(json.dumps(example, indent=1, ensure_ascii=False) + "\n")


def _property(database: str, way: str, tmp_path_factory: pytest.TempPathFactory, on_spark: bool = False):
    @settings(settings.get_profile("xdspub-properties"),
              max_examples=max(1, EXAMPLES // 4) if on_spark else EXAMPLES)
    @given(example=examples(database))
    def check(example: dict) -> None:
        try:
            published_and_verified(example, way, tmp_path_factory.mktemp("example"), on_spark)
        except BaseException:
            kept_on_failure(example, way, database)
            raise

    return check


def _mark_known(params: list[tuple[str, str]]) -> list:
    return [pytest.param(name, way, marks=pytest.mark.xfail(strict=False, reason=known(name, way)))
            if known(name, way) else pytest.param(name, way) for name, way in params]


@pytest.mark.parametrize("database, way", _mark_known([(d, w) for d in DATABASES for w in WAYS]))
def test_random_schemas_and_histories_reproduce_the_database(database, way, tmp_path_factory):
    _property(database, way, tmp_path_factory)()


@pytest.mark.parametrize("database, way", [("sqlite", "field"), ("postgresql", "query-back")])
def test_random_schemas_and_histories_on_spark(spark, database, way, tmp_path_factory):
    _property(database, way, tmp_path_factory, on_spark=True)()


# --- the kept examples ----------------------------------------------------------------------


def _kept() -> list:
    files = sorted(path for path in KEPT.glob("*.json") if not path.name.startswith("found-"))
    return _mark_known([(path.stem, way) for path in files for way in WAYS])


@pytest.mark.parametrize("name, way", _kept())
def test_kept_example(name, way, tmp_path):
    example = json.loads((KEPT / f"{name}.json").read_text())
    published_and_verified(example, way, tmp_path)


@pytest.mark.parametrize("name, way", _mark_known([
    ("sqlite-text", "query-back"), ("postgresql-char", "query-back"), ("mariadb-date", "triggerless"),
    ("sqlite-varchar", "field"),
]))
def test_kept_example_on_spark(spark, name, way, tmp_path):
    example = json.loads((KEPT / f"{name}.json").read_text())
    published_and_verified(example, way, tmp_path, on_spark=True)


def test_the_kept_set_has_each_type_as_a_key_and_as_a_value_on_each_database():
    for database in DATABASES:
        for kind in types_on(database):
            example = json.loads((KEPT / f"{database}-{kind}.json").read_text())
            schema = Schema(example["schema"])
            assert example["database"] == database
            assert any(c["type"] == kind for cls in schema.classes.values() for c in cls["values"])
            assert any(c["type"] == kind for child in schema.children.values() for c in child["values"])
            if database in TYPES[kind].key_on:
                assert any(c["type"] == kind for cls in schema.classes.values() for c in cls["key"])


def test_an_example_is_drawn_alike_each_run():
    """The derandomized profile: CI replays the same examples."""
    drawn = []

    @settings(settings.get_profile("xdspub-properties"), max_examples=3)
    @given(example=examples("postgresql"))
    def collect(example):
        drawn.append(json.dumps(example, sort_keys=True))

    collect()
    first = list(drawn)
    drawn.clear()
    collect()
    assert drawn == first

