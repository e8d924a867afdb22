"""``xdspub init-db``: the event log and its lock table, and with ``sample`` the documents'
sample schema, from the scripts under sql/<dialect>/, and its triggers, made by ``xdspub
triggers`` (triggers.py). Every table statement is IF NOT EXISTS and every trigger is
replaced, so running it again creates what is missing and keeps the data. Every name the
scripts hold is quoted (source/identifiers.py)."""

from __future__ import annotations

from importlib import resources

import sqlalchemy as sa

from publisher.errors import ConfigError
from publisher.source.database import Database, filled, run_named, run_scripts
from publisher.source.dialects import WAKE_TRIGGER
from publisher.source.identifiers import checked, derived_name, lock_table_name, quoted
from publisher.source.triggers import trigger_script

# The sample's tables, which get the sample triggers (not view_usr: a view takes none).
SAMPLE_TABLES = ("usr", "grp", "usr_phone", "usr_mbr_of")


def init_db(db: Database, schema: str, log_table: str, sample: bool, flavour: str,
            wake: bool = False) -> list[str]:
    """Run the scripts (with ``wake`` the event log's wake-up trigger too), then (with
    ``sample``, unless ``flavour`` is none) install the sample's triggers; returns what
    ran. UnsafeName for a schema or event log name holding a control character."""
    if wake and db.dialect.wake_channel_query is None:
        raise ConfigError(f"--wake: {db.dialect.name} has no notifications; poll by the interval")
    folder = resources.files("sql") / db.dialect.sql_dir
    names = ["event_log"] + (["wake"] if wake else []) + (["sample"] if sample else [])
    log_name = checked("--log-table", log_table.rsplit(".", 1)[-1])  # made in Schema Name
    limit = db.dialect.identifier_bytes
    derived = {
        "pending_index": derived_name(log_name, "_pending", limit),
        "pending_time_index": derived_name(log_name, "_pending_time", limit),
        "lock_table": lock_table_name(db.dialect, log_name),
        "wake_function": derived_name(log_name, "_wake", limit),
        "wake_trigger": WAKE_TRIGGER,
        "earlier_wake_trigger": log_name + "_wake",  # the database cuts it as it did then
    }
    values = {
        "schema": quoted(db.engine, "--schema", schema),
        "log_table": quoted(db.engine, "--log-table", log_name),
        **{placeholder: quoted(db.engine, "name", name) for placeholder, name in derived.items()},
    }
    scripts = [filled((folder / f"{name}.sql").read_text(encoding="utf-8"), values) for name in names]
    run_scripts(db, scripts)
    if db.dialect.publisher_lock is not None and not sa.inspect(db.engine).has_table(
        derived["lock_table"], schema=schema
    ):
        run_scripts(db, [filled((folder / "lock.sql").read_text(encoding="utf-8"), values)])
        _give_lock_table_the_log_owner(db, values)
    if sample and flavour != "none":
        triggers = trigger_script(db, schema, log_name, SAMPLE_TABLES, flavour)
        run_scripts(db, [triggers.ddl])
        names.append(f"{flavour} triggers")
    return names


def _give_lock_table_the_log_owner(db: Database, values: dict[str, str]) -> None:
    """The lock table belongs to the event log's owner, whoever ran init-db, so that the
    publisher lock is the log owner's to grant (docs/delivery.md)."""
    lock = db.dialect.publisher_lock
    if lock is None or lock.other_owner is None:
        return
    table = f"{values['schema']}.{values['lock_table']}"
    with db.engine.begin() as conn:
        owner = conn.execute(
            sa.text(lock.other_owner), {"log": f"{values['schema']}.{values['log_table']}", "lock": table}
        ).scalar()
        if owner is not None:
            run_named(conn, lock.give_owner.format(table=table, owner=quoted(db.engine, "owner", owner)))
