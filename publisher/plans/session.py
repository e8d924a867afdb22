"""The Spark session: one per process, started when a pipeline first needs it."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import pyarrow as pa

from publisher.errors import STOP_SIGNALS
from publisher.source.dialects import DIALECTS

if TYPE_CHECKING:
    from publisher.plans import Phases
    from py4j.java_gateway import JavaGateway
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

SHUFFLE_PARTITIONS = 4  # a few times the cores: 200 costs seconds per stage on 2 cores
# The JVM's heap: Spark's floor is 450 MiB. A cycle's rows pass through it only where
# Spark's JDBC source reads them (MariaDB, SQLite); the process tree stays under 1.5 GiB
# (README, Memory).
DRIVER_MEMORY = "512m"
# One GC thread and no region bookkeeping: a smaller JVM beside the Python workers.
JAVA_OPTIONS = "-XX:+UseSerialGC"
# The driver's JVM runs the client compiler alone: it moves little of a cycle's data, and
# the optimising compiler's threads would take the cores from the Python workers
# (bench/README.md, Measured). A cluster's executors keep both: theirs read MariaDB's and
# SQLite's rows.
DRIVER_JAVA_OPTIONS = "-XX:TieredStopAtLevel=1"
# The driver JVM maps the classes it loads at start from an archive that set-up wrote
# (class_archive): start-up spends most of its time loading and verifying them. A missing
# archive, or one another JVM or Spark wrote, is passed over quietly.
_ARCHIVE_OPTIONS = "-XX:SharedArchiveFile={} -Xlog:cds=off -Xlog:cds+dynamic=off"


def class_archive() -> Path:
    """Where set-up (``python3 -m publisher.plans.session``) keeps the driver JVM's class
    archive, one per Spark version and Java installation (as Spark finds it: JAVA_HOME,
    else ``java`` on the PATH; its binary's path and time), so an updated JDK gets one
    anew."""
    from pyspark import __version__

    home = os.environ.get("JAVA_HOME")
    java = Path(home, "bin", "java") if home else Path(shutil.which("java") or "java")
    try:
        java = java.resolve()
        stamp = f"{java}:{java.stat().st_mtime_ns}"
    except OSError:
        stamp = str(java)
    digest = hashlib.sha256(stamp.encode()).hexdigest()[:12]
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "xdspub" / f"spark-{__version__}-java-{digest}.jsa"


def spark_session(master: str = "local[*]") -> SparkSession:
    """The process's session, started on first use and warmed up."""
    archive = class_archive()
    return _session(master, _ARCHIVE_OPTIONS.format(archive) if archive.is_file() else "")


@lru_cache(maxsize=None)
def start_spark(master: str, phases: Phases) -> None:
    """The process's Spark session, started (and warmed up) before a cycle's phases: its
    start is reported apart, and the progress display follows its tasks."""
    started = time.monotonic()
    spark = spark_session(master)
    phases.report.spark_start_seconds = time.monotonic() - started
    phases.report.on_spark = True
    phases.progress.attach(running_tasks(spark))


def running_tasks(spark: SparkSession) -> Callable[[], tuple[int, int] | None]:
    """How many of the running stages' tasks are done, of how many (None: no stage runs)."""
    tracker = spark.sparkContext.statusTracker()

    def tasks() -> tuple[int, int] | None:
        stages = [tracker.getStageInfo(s) for s in tracker.getActiveStageIds()]
        stages = [s for s in stages if s is not None]
        if not stages:
            return None
        return sum(s.numCompletedTasks for s in stages), sum(s.numTasks for s in stages)

    return tasks


def _session(master: str, driver_options: str) -> SparkSession:
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    jars = ",".join(d.jar for d in DIALECTS.values() if os.path.exists(d.jar))
    # Arrow's own allocator keeps what the passes free; malloc gives it back, so a Python
    # worker's memory follows its task. The workers inherit the driver's environment.
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")
    pa.set_memory_pool(pa.system_memory_pool())  # this process's pyarrow is loaded already
    os.environ.setdefault("MALLOC_ARENA_MAX", "2")  # the JVM's threads would each get one
    # The Python workers run this interpreter, where xdspub and pyarrow are installed, not
    # the first `python3` on the PATH: a service started by its full path has its virtual
    # environment off the PATH. A cluster's executors run it at the same path (README,
    # Running on a Spark cluster). PYSPARK_PYTHON, when given, stands.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # Quiet start-up: Spark's default logging prints a screen of warnings.
    log_config = Path(__file__).with_name("log4j2.properties")
    java_opts = f"-Dlog4j2.configurationFile=file:{log_config} {JAVA_OPTIONS}"
    conf = SparkConf().setAll([
        ("spark.master", master),
        ("spark.app.name", "xdspub"),
        ("spark.jars", jars),  # the driver serves them to a cluster's executors
        ("spark.ui.enabled", "false"),
        ("spark.ui.showConsoleProgress", "false"),
        ("spark.sql.session.timeZone", "UTC"),
        ("spark.sql.shuffle.partitions", str(SHUFFLE_PARTITIONS)),
        ("spark.driver.memory", DRIVER_MEMORY),
        ("spark.driver.extraJavaOptions", f"{java_opts} {DRIVER_JAVA_OPTIONS} {driver_options}"),
        ("spark.executor.extraJavaOptions", java_opts),
        ("spark.sql.execution.arrow.pyspark.enabled", "true"),
    ])
    if master.startswith("local"):
        # All on this machine: keep Spark off the network. A cluster's executors must reach
        # the driver, so there Spark's own choice (or SPARK_LOCAL_IP) stands.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        conf.set("spark.driver.host", "127.0.0.1")
        # The driver's RPC and block manager ports refuse a peer without the application's
        # secret: any local user could reach them otherwise. Spark draws that secret itself
        # for a local master, 256 random bits a session (a configured one is not used); a
        # cluster's is the operator's (README, Running on a Spark cluster).
        conf.set("spark.authenticate", "true")
    if SparkContext._gateway is None:
        with _signals_held():
            SparkContext._ensure_initialized(gateway=_launched(conf))
    # pyspark answers SIGINT with a KeyboardInterrupt of its own: the handler the command
    # set (cli.py; the service's, service/loop.py) stands.
    interrupt = signal.getsignal(signal.SIGINT)
    spark = SparkSession.builder.config(conf=conf).getOrCreate()
    if interrupt is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, interrupt)
    spark.sparkContext.setLogLevel("ERROR")
    _warm_up(spark)
    return spark


# What Spark's JVM prints that is no news: the JVM's note, at start, that Spark uses an
# incubator module (no option turns it off). Spark's own start-up lines are off in
# log4j2.properties.
_JVM_CHATTER = (b"WARNING: Using incubator modules:",)


def _launched(conf: SparkConf) -> JavaGateway:
    """Spark's JVM, started as pyspark starts it, but with its standard error (and its
    Python workers') copied to this process's a line at a time, less the chatter: through
    sys.stderr, so a progress display prints each line above itself."""
    from pyspark.java_gateway import launch_gateway

    gateway = launch_gateway(conf, popen_kwargs={"stderr": subprocess.PIPE})
    if gateway.proc is not None:  # None: a gateway pyspark was told to join
        threading.Thread(target=_copy_lines, args=(gateway.proc.stderr,), daemon=True,
                         name="spark-stderr").start()
    return gateway


@contextmanager
def _signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM held while Spark's JVM starts, then handled as they would have
    been: stopped in mid-start, pyspark would leave the JVM running, out of end_jvm's reach
    and never to end."""
    if threading.current_thread() is not threading.main_thread():
        yield  # only the main thread handles signals
        return
    held: list[int] = []
    handlers = {number: signal.signal(number, lambda number, _frame: held.append(number))
                for number in STOP_SIGNALS}
    try:
        yield
    finally:
        for number, handler in handlers.items():
            signal.signal(number, handler)
        if held:
            signal.raise_signal(held[0])


def _copy_lines(stream: BinaryIO) -> None:
    for line in stream:
        if not line.startswith(_JVM_CHATTER):
            sys.stderr.write(line.decode(errors="replace"))
            sys.stderr.flush()


def end_jvm() -> None:
    """Kill Spark's JVM now, if this process started one: an interrupted run (cli.py) then
    leaves no task writing into the work folder it removes, nor one logging that it
    failed. Its Python workers end with it (their daemon reads the JVM's pipe)."""
    from pyspark import SparkContext

    process = getattr(SparkContext._gateway, "proc", None)
    if process is not None and process.poll() is None:
        process.kill()
        process.wait()  # reaped: no zombie is left


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


def write_class_archive() -> Path | None:
    """Start a session in a JVM that archives the classes it loaded when it exits, run a
    job through a shuffle, stop it, and put the archive in place once the JVM is gone: a
    JVM given a partly written archive crashes, so only a whole one is ever in place.
    None when the JVM wrote none (Spark then starts without one)."""
    from pyspark import SparkContext

    archive = class_archive()
    archive.parent.mkdir(parents=True, exist_ok=True)
    partial = archive.with_name(f"{archive.name}.{os.getpid()}.partial")
    spark = _session("local[*]", f"-XX:ArchiveClassesAtExit={partial} -Xlog:cds=off")
    cores = spark.sparkContext.defaultParallelism
    spark.range(1000).repartition(cores, "id").sortWithinPartitions("id").mapInArrow(
        _loaded, "id BIGINT"
    ).collect()
    gateway = SparkContext._gateway
    spark.stop()
    gateway.shutdown()
    gateway.proc.stdin.close()  # the JVM exits at the end of its input, and then writes
    if gateway.proc.wait() != 0 or not partial.is_file():
        partial.unlink(missing_ok=True)
        return None
    partial.replace(archive)
    for older in archive.parent.glob("spark-*.jsa"):  # another Spark's or JDK's: 160 MB each
        if older != archive:
            older.unlink(missing_ok=True)
    return archive


if __name__ == "__main__":  # set-up (install.sh): once per Spark version
    archive = class_archive()
    written = archive if archive.is_file() else write_class_archive()
    print(f"Spark's class archive: {written or 'none written; Spark starts without one'}")
