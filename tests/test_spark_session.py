"""The Spark session's class archive (publisher/spark.py): set-up writes it whole, and a
session given it starts and runs a job."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from publisher.spark import class_archive

JOB = """
from publisher.spark import class_archive, spark_session
spark = spark_session("local[1]")
options = spark.sparkContext.getConf().get("spark.driver.extraJavaOptions")
assert f"SharedArchiveFile={class_archive()}" in options, options
print(spark.range(10).selectExpr("sum(id)").collect()[0][0])
"""


@pytest.mark.slow
def test_set_up_writes_the_archive_whole_and_a_session_starts_with_it(tmp_path: Path) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path)}
    made = subprocess.run(
        [sys.executable, "-m", "publisher.spark"], env=env, capture_output=True, text=True
    )
    assert made.returncode == 0, made.stderr
    folder = tmp_path / "xdspub"
    [archive] = folder.iterdir()  # no partial file left beside it
    assert archive.suffix == ".jsa" and archive.stat().st_size > 1_000_000
    written = archive.stat().st_mtime_ns
    again = subprocess.run(
        [sys.executable, "-m", "publisher.spark"], env=env, capture_output=True, text=True
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
