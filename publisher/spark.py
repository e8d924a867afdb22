"""The Spark session: one per process, started when a pipeline first needs it."""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

import pyarrow as pa

from publisher.source.dialects import DIALECTS

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SHUFFLE_PARTITIONS = 4  # a few times the cores: 200 costs seconds per stage on 2 cores
# The JVM's heap: Spark's floor is 450 MiB. The rows Spark holds (the checkpoint of the
# classified rows, the shuffle by object) spill to disk past it; the process tree stays
# under 1.5 GiB (README, Memory).
DRIVER_MEMORY = "512m"
# One GC thread and no region bookkeeping: a smaller JVM beside the Python workers.
JAVA_OPTIONS = "-XX:+UseSerialGC"


@lru_cache(maxsize=None)
def spark_session(master: str = "local[*]") -> SparkSession:
    from pyspark.sql import SparkSession

    jars = ",".join(d.jar for d in DIALECTS.values() if os.path.exists(d.jar))
    # Arrow's own allocator keeps what the passes free; malloc gives it back, so a Python
    # worker's memory follows its task. The workers inherit the driver's environment.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    pa.set_memory_pool(pa.system_memory_pool())  # this process's pyarrow is loaded already
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")  # the JVM's threads would each get one
    # Quiet start-up: Spark's default logging prints a screen of warnings.
    log_config = Path(__file__).with_name("log4j2.properties")
    java_opts = f"-Dlog4j2.configurationFile=file:{log_config} {JAVA_OPTIONS}"
    builder = (
        SparkSession.builder.master(master)
        .appName("xdspub")
        .config("spark.jars", jars)  # the driver serves them to a cluster's executors
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS))
        .config("spark.driver.memory", DRIVER_MEMORY)
        .config("spark.driver.extraJavaOptions", java_opts)
        .config("spark.executor.extraJavaOptions", java_opts)
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
    )
    if master.startswith("local"):
        # All on this machine: keep Spark off the network. A cluster's executors must reach
        # the driver, so there Spark's own choice (or SPARK_LOCAL_IP) stands.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        builder = builder.config("spark.driver.host", "127.0.0.1")
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    _warm_up(spark)
    return spark


def _loaded(batches):
    """mapInArrow body: nothing, once the executor's Python has what a cycle imports."""
    import publisher.reduce.pipeline  # noqa: F401
    import publisher.render.object_pass  # noqa: F401

    yield from batches


def _warm_up(spark: SparkSession) -> None:
    """One task per core through the Python workers: a fresh JVM compiles its hot paths
    and forks its workers on its first jobs, a cost of starting, not of the first cycle."""
    cores = spark.sparkContext.defaultParallelism
    spark.range(0, cores, numPartitions=cores).mapInArrow(_loaded, "id BIGINT").collect()
