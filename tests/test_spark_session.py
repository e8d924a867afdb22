"""The Spark session (publisher/plans/session.py): set-up writes the class archive whole, and a
session given it starts and runs a job; the Python workers run the driver's interpreter,
so a Spark cycle runs with no Python on the PATH."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

from publisher.plans.session import class_archive
from tests.conftest import make_sample_db

JOB = """
from publisher.plans.session import class_archive, spark_session
spark = spark_session("local[1]")
options = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")
assert f"SharedArchiveFile={class_archive()}" in options, options
print(spark.range(10).selectExpr("sum(id)").collect()[0][0])
"""


@pytest.mark.slow
def test_set_up_writes_the_archive_whole_and_a_session_starts_with_it(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    made = subprocess.run(
        [sys.executable, "-m", "publisher.plans.session"], env=env, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "xdspub"
    [archive] = folder.iterdir()  # no partial file left beside it
    assert archive.suffix == ".jsa" and archive.stat().st_size > 1_000_000
    written = archive.stat().st_mtime_ns
    again = subprocess.run(
        [sys.executable, "-m", "publisher.plans.session"], env=env, capture_output=True, text=True
    )
    assert again.returncode == 0 and archive.stat().st_mtime_ns == written  # kept as it is
    job = subprocess.run([sys.executable, "-c", JOB], env=env, capture_output=True, text=True)
    assert job.returncode == 0, job.stderr
    assert job.stdout.split()[-1] == "45"


def test_the_archive_is_named_by_the_java_installation(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.delenv("JAVA_HOME", raising=False)
    on_path = class_archive()
    java = tmp_path / "jdk" / "bin" / "java"
    java.parent.mkdir(parents=True)
    java.write_text("")
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "jdk"))
    other = class_archive()
    assert other != on_path and other.parent == on_path.parent == tmp_path / "xdspub"
    os.utime(java, ns=(0, 0))  # the same JDK updated in place
    assert class_archive() != other


def bare_path(folder: Path) -> Path:
    """A folder holding ``java`` and the two commands pyspark's launch scripts run (bash,
    dirname), but no Python: as a service whose virtual environment is off the PATH."""
    java_home = os.environ.get("JAVA_HOME")
    java = Path(java_home, "bin", "java") if java_home else shutil.which("java")
    folder.mkdir()
    for name, target in (("java", java), ("bash", shutil.which("bash")), ("dirname", shutil.which("dirname"))):
        assert target, f"{name} not found"
        (folder / name).symlink_to(Path(target).resolve())
    return folder


def export_without_python_on_the_path(command: list[str], tmp_path: Path) -> None:
    """A Spark cycle of ``command`` (an ``xdspub export`` to be completed) on a SQLite
    sample, with the bare PATH: its documents are written and its rows marked."""
    db = make_sample_db("sqlite", tmp_path, triggers="field")
    db.add_user(1, "Jack", "Frost", None)
    db.add_user(2, "Ann", None, None)
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDSPUB_", "SPARK_", "PYSPARK_"))}
    env.pop("JAVA_HOME", None)
    env["PATH"] = str(bare_path(tmp_path / "bin"))
    run = subprocess.run(
        [*command, "export", "--db", db.settings.db_url, "--out", str(out),
         "--master", "local[1]", "--small-cycle-rows", "0"],
        env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, capture_output=True, text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Spark start" in run.stderr, run.stderr  # the cycle ran on Spark
    assert len(list(out.glob("*.xml"))) == 2
    assert set(db.statuses().values()) == {"S"}


@pytest.mark.slow
def test_a_spark_cycle_runs_with_no_python_on_the_path(tmp_path: Path) -> None:
    export_without_python_on_the_path([sys.executable, "-m", "publisher"], tmp_path)


@pytest.mark.slow
def test_the_installed_command_by_its_full_path_runs_a_spark_cycle(tmp_path: Path) -> None:
    script = Path(sysconfig.get_path("scripts"), "xdspub")  # beside this interpreter
    if not script.is_file():
        pytest.skip(f"no installed xdspub at {script}")
    export_without_python_on_the_path([str(script)], tmp_path)


def _endpoint_without_the_secret(spark, port: int, name: str) -> str | None:
    """Ask the driver's RPC server at ``port`` for its endpoint ``name`` as a Spark client
    with no secret (a client RPC environment of its own in this JVM): None when it answers,
    else why the driver refused."""
    jvm = spark.sparkContext._jvm
    conf = jvm.org.apache.spark.SparkConf(False).set("spark.rpc.askTimeout", "60s")
    manager_class = jvm.org.apache.spark.SecurityManager
    manager = manager_class(
        conf,
        getattr(manager_class, "$lessinit$greater$default$2")(),
        getattr(manager_class, "$lessinit$greater$default$3")(),
    )
    client = jvm.org.apache.spark.rpc.RpcEnv.create("probe", "127.0.0.1", 0, conf, manager, True)
    try:
        client.setupEndpointRef(jvm.org.apache.spark.rpc.RpcAddress("127.0.0.1", port), name)
        return None
    except Exception as refused:  # py4j's error carrying the JVM's exception
        return str(refused).splitlines()[0]
    finally:
        client.shutdown()


def test_a_local_driver_refuses_a_peer_without_the_secret(spark) -> None:
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.master").startswith("local")
    port = int(conf.get("spark.driver.port"))
    assert _endpoint_without_the_secret(spark, port, "HeartbeatReceiver") is not None
    assert conf.get("spark.authenticate") == "true"  # the block manager's port too
    # Python workers, a shuffle and the block manager still work.
    frame = spark.range(1000).repartition(3, "id").mapInArrow(lambda b: b, "id BIGINT")
    assert frame.groupBy().sum("id").collect()[0][0] == 499500
    assert spark.sparkContext.broadcast([1, 2]).value == [1, 2]
