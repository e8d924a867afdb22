"""``xdspub export`` on a Spark standalone cluster (one master, one worker) started from the
pip-installed pyspark itself, compared byte for byte with the same export on ``local[2]``.

The exports run as subprocesses: this test process may already hold the session-scoped
local SparkContext (conftest's ``spark``), and a process can have only one. The worker runs
on this machine, so the SQLite files and output folders under tmp_path are visible to its
executors, as a shared filesystem would make them on a real cluster."""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.conftest import free_port, make_sample_db

pytestmark = pytest.mark.slow  # a cluster and exports in processes of their own

START_TIMEOUT = 120  # seconds for the master to come up and the worker to register
EXPORT_TIMEOUT = 600  # seconds per export (a cold Spark start is about half a minute here)
WORKER_CORES = 2
BATCH_SIZE = "2"


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError as exc:
        return f"<{path}: {exc}>"
    return f"--- {path} (last {lines} lines) ---\n" + "\n".join(text[-lines:])


def _stop(process: subprocess.Popen) -> None:
    """Stop the process group ``process`` leads (the worker's holds its executors, an
    export's its JVM)."""
    if process.poll() is not None:
        return
    for sig, wait in ((signal.SIGTERM, 20), (signal.SIGKILL, 10)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(wait)
            return
        except subprocess.TimeoutExpired:
            continue


@dataclass
class Cluster:
    url: str  # spark://127.0.0.1:<port>
    web_url: str  # the master's web UI, for its /json/ state
    master_log: Path
    worker_log: Path
    work_dir: Path  # the worker's --work-dir: one app-* folder per application

    def state(self) -> dict:
        with urllib.request.urlopen(f"{self.web_url}/json/", timeout=5) as response:
            return json.load(response)

    def app_ids(self) -> set[str]:
        state = self.state()
        return {a["id"] for a in state["activeapps"] + state["completedapps"]}

    def logs(self) -> str:
        executor_logs = sorted(self.work_dir.glob("app-*/*/stderr"))
        return "\n".join(_tail(p) for p in [self.master_log, self.worker_log, *executor_logs[-2:]])


def _wait_for_worker(cluster: Cluster, processes: list[subprocess.Popen]) -> str | None:
    """None once the master reports a live worker; otherwise what went wrong."""
    deadline = time.monotonic() + START_TIMEOUT
    problem = "no answer from the master's web UI"
    while time.monotonic() < deadline:
        dead = [p.args[1].rsplit(".", 1)[-1] for p in processes if p.poll() is not None]
        if dead:
            return f"{', '.join(dead)} exited"
        try:
            if cluster.state().get("aliveworkers", 0) >= 1:
                return None
            problem = "the master is up, but no worker has registered"
        except (OSError, ValueError):  # not up yet, or its state page half written
            pass
        time.sleep(1)
    return f"{problem} within {START_TIMEOUT} s"


@contextmanager
def _started_cluster(root: Path, conf_dir: Path | None = None) -> Iterator[Cluster]:
    """A master and a worker in ``root``, with Spark's configuration folder ``conf_dir``
    (spark-defaults.conf) if given; stopped after."""
    import pyspark

    home = Path(pyspark.__file__).parent
    spark_class = home / "bin" / "spark-class"
    if not os.access(spark_class, os.X_OK):
        pytest.fail(f"{spark_class} missing or not executable: this pyspark cannot start a cluster")
    (root / "local").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SPARK_", "PYSPARK_"))}
    env.update(
        SPARK_HOME=str(home),
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_LOCAL_DIRS=str(root / "local"),  # executors' scratch space (block manager)
        # The master's REST submission server would take the fixed port 6066.
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
    )
    if conf_dir is not None:
        env["SPARK_CONF_DIR"] = str(conf_dir)
    master_port, master_ui, worker_ui = free_port(), free_port(), free_port()
    cluster = Cluster(
        url=f"spark://127.0.0.1:{master_port}",
        web_url=f"http://127.0.0.1:{master_ui}",
        master_log=root / "master.log",
        worker_log=root / "worker.log",
        work_dir=root / "work",
    )
    commands = {
        cluster.master_log: [
            str(spark_class), "org.apache.spark.deploy.master.Master",
            "--host", "127.0.0.1", "--port", str(master_port), "--webui-port", str(master_ui),
        ],
        cluster.worker_log: [
            str(spark_class), "org.apache.spark.deploy.worker.Worker", cluster.url,
            "--host", "127.0.0.1", "--port", str(free_port()), "--webui-port", str(worker_ui),
            "--cores", str(WORKER_CORES), "--memory", "1g", "--work-dir", str(cluster.work_dir),
        ],
    }
    processes: list[subprocess.Popen] = []
    try:
        for log, command in commands.items():
            with open(log, "wb") as stream:
                processes.append(subprocess.Popen(
                    command, env=env, cwd=root, stdin=subprocess.DEVNULL, stdout=stream,
                    stderr=subprocess.STDOUT, start_new_session=True,  # its own process group
                ))
        problem = _wait_for_worker(cluster, processes)
        if problem:
            pytest.fail(f"Spark standalone cluster did not start: {problem}\n{cluster.logs()}")
        assert "Registering worker 127.0.0.1" in cluster.master_log.read_text(errors="replace"), cluster.logs()
        yield cluster
    finally:
        for process in reversed(processes):  # the worker (and its executors) first
            _stop(process)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory) -> Iterator[Cluster]:
    with _started_cluster(tmp_path_factory.mktemp("cluster")) as started:
        yield started


@pytest.fixture(scope="module")
def template_db(tmp_path_factory) -> Path:
    """A SQLite event log written by the sample per-field triggers and by hand: adds,
    modifies, deletes, a query-back (5) and a non-canonical table_key (W); no E rows."""
    folder = tmp_path_factory.mktemp("template")
    db = make_sample_db("sqlite", folder, triggers="field")
    for idu, fname, lname, photo in [
        (1, "Jack", "Frost", "qqo="), (2, "Ann", None, None), (3, "Bob", "Smith", "u7s="),
        (4, "Eve", "Adams", None), (5, "Zoë", "Ünal", "AAEC"),
    ]:
        db.add_user(idu, fname, lname, photo)
    db.execute("UPDATE usr SET fname = 'John', lname = 'Doe' WHERE idu = 1")
    db.execute("UPDATE usr SET photo = X'BBBB' WHERE idu = 2")
    db.execute("DELETE FROM usr WHERE idu = 3")
    db.execute("UPDATE usr SET lname = 'Baker' WHERE idu = 4")
    db.log(("idu=4", 5, "usr"), ("idu= 5", 2, "usr", "fname", "Zoë", "Zoe"))
    db.execute("UPDATE usr SET fname = 'Zoe' WHERE idu = 5")
    db.drop()
    path = folder / "sample.db"
    assert _statuses(path) and set(_statuses(path).values()) == {"N"}
    return path


def _statuses(db: Path) -> dict[int, str]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT record_id, status FROM indirect_process"))


def _copy(template: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "sample.db"
    shutil.copyfile(template, target)
    return target


@dataclass
class Run:
    db: Path
    out: Path
    returncode: int
    stderr: str
    seconds: float

    @property
    def files(self) -> dict[str, bytes]:
        return {p.name: p.read_bytes() for p in sorted(self.out.iterdir())} if self.out.is_dir() else {}

    @property
    def summary(self) -> list[str]:
        """The publisher's lines but its timing, which differs from run to run."""
        lines = self.stderr.splitlines()
        return [line for line in lines if line.startswith("xdspub:") and "Spark start" not in line]


def _essentials(stderr: str) -> str:
    """The publisher's own lines and the distinct exception messages of a failed export."""
    lines = [line.strip() for line in stderr.splitlines()]
    kept = [line for line in lines if line.startswith("xdspub:") or "Exception: " in line]
    return "\n".join(dict.fromkeys(kept)) or stderr[-3000:]


def _run(
    db: Path, out: Path, master: str, cwd: Path, db_arg: str | None = None,
    out_arg: str | None = None, conf_dir: Path | None = None,
) -> Run:
    """``xdspub export`` of ``db`` into the directory ``out`` (or the given --db and --out
    arguments, relative to ``cwd``), in a subprocess with its own Spark driver, reading
    Spark's configuration from ``conf_dir`` if given. A cluster's master URL is given as
    ``spark.master`` in a TOML file, local ones with --master."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDSPUB_", "SPARK_", "PYSPARK_"))}
    # The executors' Python workers must be this interpreter, where xdspub is installed.
    env.update(PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    if conf_dir is not None:
        env["SPARK_CONF_DIR"] = str(conf_dir)
    command = [
        sys.executable, "-m", "publisher", "export", "--db", db_arg or f"sqlite:///{db}",
        "--out", out_arg or str(out), "--batch-size", BATCH_SIZE,
        "--small-cycle-rows", "0",  # a few rows: on Spark only when asked
    ]
    if master.startswith("spark://"):
        config = cwd / "xdspub.toml"
        config.write_text(f'[spark]\nmaster = "{master}"\n')
        command += ["--config", str(config)]
    else:
        command += ["--master", master]
    started = time.monotonic()
    process = subprocess.Popen(
        command, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, start_new_session=True,  # with its JVM, killable as one
    )
    try:
        _stdout, stderr = process.communicate(timeout=EXPORT_TIMEOUT)
    except subprocess.TimeoutExpired:
        _stop(process)
        _stdout, stderr = process.communicate()
        stderr += f"\nxdspub: killed by the test after {EXPORT_TIMEOUT} s"
    return Run(db, out, process.returncode, stderr, time.monotonic() - started)


@pytest.fixture(scope="module")
def exports(cluster, template_db, tmp_path_factory) -> dict:
    """The same export on two copies of the database, on local[2] then on the cluster (one
    after the other: on 2 cores running them at once is no faster), and the applications
    the master saw start meanwhile."""
    root = tmp_path_factory.mktemp("exports")
    apps_before = cluster.app_ids()
    runs: dict = {}
    for name, master in (("local", "local[2]"), ("cluster", cluster.url)):
        db = _copy(template_db, root / name)
        runs[name] = _run(db, root / name / "out", master, cwd=root)
    runs["apps"] = cluster.app_ids() - apps_before
    return runs


def test_cluster_export_equals_local_export(cluster, exports):
    local, remote = exports["local"], exports["cluster"]
    assert local.returncode == 0, f"local[2] export failed ({local.returncode}):\n{_essentials(local.stderr)}"
    assert remote.returncode == 0, (
        f"export on {cluster.url} failed ({remote.returncode}):\n{_essentials(remote.stderr)}\n{cluster.logs()}"
    )
    assert local.files, "the local export wrote no documents"
    assert len(local.files) > 1  # batch size 2: several documents
    assert list(remote.files) == list(local.files)
    for name, content in local.files.items():
        assert remote.files[name] == content, f"{name} differs between local[2] and the cluster"
    assert not [p for p in remote.out.iterdir() if p.name.startswith(".")]  # no temporary left
    assert remote.summary == local.summary
    assert any("statuses S=" in line and "W=1" in line for line in local.summary), local.summary

    local_statuses, remote_statuses = _statuses(local.db), _statuses(remote.db)
    assert remote_statuses == local_statuses
    assert set(local_statuses.values()) == {"S", "W"}


def test_the_cluster_really_ran_the_export(cluster, exports):
    """One new application, named xdspub, ran on the cluster's executors (the local[2]
    export registered none), and the worker gave it a work folder."""
    assert exports["cluster"].returncode == 0, "see test_cluster_export_equals_local_export"
    assert len(exports["apps"]) == 1, f"new applications on the master: {exports['apps']}"
    (app_id,) = exports["apps"]
    apps = {a["id"]: a for a in cluster.state()["completedapps"]}
    assert app_id in apps, f"{app_id} has not finished: {cluster.state()['activeapps']}"
    assert apps[app_id]["name"] == "xdspub"
    assert apps[app_id]["state"] == "FINISHED"
    assert f"Registered app xdspub with ID {app_id}" in cluster.master_log.read_text(errors="replace")
    executor_dirs = list((cluster.work_dir / app_id).iterdir())
    assert executor_dirs, f"no executor folder under {cluster.work_dir / app_id}"
    executor_log = (executor_dirs[0] / "stderr").read_text(errors="replace")
    assert "CoarseGrainedExecutorBackend" in executor_log


# A real cluster's executors run in the worker's folder (work/app-*/N), not in the
# driver's working directory: the driver must make a relative SQLite path and --out
# absolute before Spark sees them.
RELATIVE = [
    pytest.param("sqlite:///sample.db", None, id="relative-db"),
    pytest.param(None, "out", id="relative-out"),
]


@pytest.mark.parametrize(("db_arg", "out_arg"), RELATIVE)
def test_relative_paths_work_on_the_cluster(cluster, exports, template_db, tmp_path, db_arg, out_arg):
    db = _copy(template_db, tmp_path)
    run = _run(db, tmp_path / "out", cluster.url, cwd=tmp_path, db_arg=db_arg, out_arg=out_arg)
    assert run.returncode == 0, f"exit {run.returncode}:\n{_essentials(run.stderr)}"
    assert run.files == exports["local"].files
    assert _statuses(db) == _statuses(exports["local"].db)


def test_a_cluster_with_a_shared_secret_runs_the_export(exports, template_db, tmp_path_factory):
    """The operator's spark-defaults.conf (README, Running on a Spark cluster) gives the
    master, the worker and xdspub's driver the same secret: the export runs as on local[2],
    every party authenticated, and the secret is in no log (nor the executors' command
    lines, which their logs begin with)."""
    root = tmp_path_factory.mktemp("secured")
    conf = root / "conf"
    conf.mkdir(mode=0o700)
    secret = secrets.token_hex(32)
    defaults = conf / "spark-defaults.conf"
    defaults.write_text(f"spark.authenticate true\nspark.authenticate.secret {secret}\n")
    defaults.chmod(0o600)
    db = _copy(template_db, root / "export")
    with _started_cluster(root / "cluster", conf) as secured:
        run = _run(db, root / "export" / "out", secured.url, cwd=root / "export", conf_dir=conf)
        executor_logs = sorted(secured.work_dir.glob("app-*/*/stderr"))
        assert run.returncode == 0, f"exit {run.returncode}:\n{_essentials(run.stderr)}\n{secured.logs()}"
        assert run.files == exports["local"].files
        assert _statuses(db) == _statuses(exports["local"].db)
        assert executor_logs, secured.logs()
        for log in (secured.master_log, secured.worker_log):
            assert "authentication enabled" in log.read_text(errors="replace"), _tail(log)
        # An executor's log starts with its command line: authenticated, with no secret.
        assert all('"-Dspark.authenticate=true"' in p.read_text() for p in executor_logs)
        for log in (secured.master_log, secured.worker_log, *executor_logs):
            assert secret not in log.read_text(errors="replace"), f"the secret is in {log}"
