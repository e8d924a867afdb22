"""``xdspub init-db``: the event log, and with ``sample`` the documents' sample schema and
its triggers, from the scripts under sql/<dialect>/. Every statement is IF NOT EXISTS, so
running it again creates what is missing and keeps what exists."""

from __future__ import annotations

from importlib import resources

import sqlalchemy as sa

from publisher.source.database import run_scripts
from publisher.source.dialects import Dialect


def init_db(
    engine: sa.Engine, dialect: Dialect, schema: str, log_table: str, sample: bool, flavour: str
) -> list[str]:
    """Run the scripts; returns their names."""
    folder = resources.files("sql") / dialect.sql_dir
    names = ["event_log"]
    if sample:
        names.append("sample")
        if flavour != "none":
            names += [f"triggers_{flavour.replace('-', '_')}", "triggers_common"]
    substitutions = {"{{schema}}": schema, "{{log_table}}": log_table.rsplit(".", 1)[-1]}
    scripts = []
    for name in names:
        text = (folder / f"{name}.sql").read_text(encoding="utf-8")
        for placeholder, value in substitutions.items():
            text = text.replace(placeholder, value)
        scripts.append(text)
    run_scripts(engine, dialect, scripts)
    return names
