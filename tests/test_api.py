"""The public API: what ``publisher`` lists is what it exports, and importing it is light."""

from __future__ import annotations

import subprocess
import sys
from types import ModuleType

import publisher


def test_every_listed_name_is_exported() -> None:
    from publisher import CycleReport, export  # noqa: F401  (each name imports by itself)

    public = {
        name
        for name, value in vars(publisher).items()
        if not name.startswith("_") and not isinstance(value, ModuleType) and name != "annotations"
    }
    assert public == set(publisher.__all__)


def test_importing_the_api_loads_nothing_heavy() -> None:
    code = (
        "import sys; from publisher import *\n"
        "print([m for m in sys.modules if m.split('.')[0] in ('pyspark', 'sqlalchemy', 'lxml', 'pyarrow')])"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_export_publishes_the_event_log_or_triggerless(sample_db, tmp_path) -> None:
    with sample_db.engine.begin() as conn:
        conn.exec_driver_sql("INSERT INTO usr (idu, fname, lname) VALUES (7, 'Ada', 'Lovelace')")
    options = publisher.TriggerlessOptions(tmp_path / "state", "all")
    compared = publisher.export(sample_db.settings, str(tmp_path / "triggerless.xml"), options)
    assert compared.compared and compared.changes["added"] >= 1 and compared.state_kept
    logged = publisher.export(sample_db.settings, str(tmp_path / "event-log.xml"))
    assert not logged.compared and logged.rows == 0
