"""``xdspub init-db``: the event log, and with ``sample`` the documents' sample schema, from
the scripts under sql/<dialect>/, and its triggers, made by ``xdspub triggers``
(triggers.py). Every table statement is IF NOT EXISTS and every trigger is replaced, so
running it again creates what is missing and keeps the data."""

from __future__ import annotations

from importlib import resources

import sqlalchemy as sa

from publisher.errors import ConfigError
from publisher.source.database import run_scripts
from publisher.source.dialects import Dialect
from publisher.source.triggers import trigger_script

# The sample's tables, which get the sample triggers (not view_usr: a view takes none).
SAMPLE_TABLES = ("usr", "grp", "usr_phone", "usr_mbr_of")


def init_db(
    engine: sa.Engine,
    dialect: Dialect,
    schema: str,
    log_table: str,
    sample: bool,
    flavour: str,
    wake: bool = False,
) -> list[str]:
    """Run the scripts (with ``wake`` the event log's wake-up trigger too), then (with
    ``sample``, unless ``flavour`` is none) install the sample's triggers; returns what
    ran."""
    if wake and dialect.wake_channel_query is None:
        raise ConfigError(f"--wake: {dialect.name} has no notifications; poll by the interval")
    folder = resources.files("sql") / dialect.sql_dir
    names = ["event_log"] + (["wake"] if wake else []) + (["sample"] if sample else [])
    log_name = log_table.rsplit(".", 1)[-1]  # init-db makes the event log in Schema Name
    substitutions = {"{{schema}}": schema, "{{log_table}}": log_name}
    scripts = []
    for name in names:
        text = (folder / f"{name}.sql").read_text(encoding="utf-8")
        for placeholder, value in substitutions.items():
            text = text.replace(placeholder, value)
        scripts.append(text)
    run_scripts(engine, dialect, scripts)
    if sample and flavour != "none":
        triggers = trigger_script(engine, dialect, schema, log_name, SAMPLE_TABLES, flavour)
        run_scripts(engine, dialect, [triggers])
        names.append(f"{flavour} triggers")
    return names
