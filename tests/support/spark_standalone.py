"""Real Spark servers on 127.0.0.1. A standalone cluster: one master and N workers started with
pyspark's own launcher (``bin/spark-class org.apache.spark.deploy.master.Master`` and
``...worker.Worker``), as a user would start them with Spark's sbin scripts. Used by the
cluster tests and benchmarks/analyze_scale.py. And a Spark Connect server (SparkConnectServer).

Ready means: the master's RPC port accepts connections and its JSON status page lists
every worker ALIVE (bounded waits, no sleeps standing in for readiness)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

from tests.support.processes import free_port, stop_process, wait_for, wait_port


def spark_class() -> str:
    import pyspark

    return str(Path(pyspark.__file__).parent / "bin" / "spark-class")


class SparkStandalone:
    """``with SparkStandalone(workdir, workers=2) as cluster: cluster.master_url``."""

    def __init__(self, workdir: Path, workers: int = 2, cores: int = 1, memory: str = "1g") -> None:
        self.workdir = Path(workdir)
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.port = free_port()
        self.ui_port = free_port()
        self.procs: list[subprocess.Popen] = []

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.port}"

    def _env(self) -> dict:
        from rocketmq_emulator.spark_analytics.session import quiet_conf_dir

        return {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_CONF_DIR": quiet_conf_dir(),
                "PYSPARK_PYTHON": sys.executable, "SPARK_NO_DAEMONIZE": "1"}

    def _spawn(self, name: str, *args: str) -> None:
        log = open(self.workdir / f"{name}.log", "wb")
        self.procs.append(subprocess.Popen([spark_class(), *args], env=self._env(), stdout=log,
                                           stderr=subprocess.STDOUT, start_new_session=True))
        log.close()

    def master_args(self) -> list[str]:
        """spark-class's arguments for the master (a subclass may take them from elsewhere)."""
        return ["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(self.port),
                "--webui-port", str(self.ui_port)]

    def worker_args(self) -> list[str]:
        return ["org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                "--cores", str(self.cores), "--memory", self.memory, "--webui-port", str(free_port())]

    def start(self, timeout: float = 60.0) -> "SparkStandalone":
        self.workdir.mkdir(parents=True, exist_ok=True)
        self._spawn("master", *self.master_args())
        wait_port(self.port, timeout)
        # its web UI bound too before a worker picks a free port for its own: else both may
        # pick the same one, and the master's status page ends up on the next port
        wait_port(self.ui_port, timeout)
        for i in range(self.workers):
            work = self.workdir / f"worker-{i}"
            work.mkdir(exist_ok=True)
            self._spawn(f"worker-{i}", *self.worker_args(), "--work-dir", str(work))
        def ready() -> bool:
            for p in self.procs:
                if p.poll() is not None:
                    raise RuntimeError(f"a Spark daemon exited with {p.returncode}; logs in {self.workdir}")
            return self.alive_workers() >= self.workers

        try:
            wait_for(ready, timeout, interval=0.2)
        except (AssertionError, RuntimeError) as exc:
            self.stop()
            raise TimeoutError(f"{self.alive_workers()} of {self.workers} Spark workers registered with "
                               f"{self.master_url} within {timeout:g} s ({exc}); logs in {self.workdir}") from None
        return self

    def status(self) -> dict:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=2) as r:
            return json.load(r)

    def alive_workers(self) -> int:
        """0 while the status page does not answer, or answers with something other than its
        JSON (CI once met an HTML page of Spark's there while the master came up)."""
        try:
            return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")
        except (OSError, ValueError):
            return 0

    def stop(self) -> None:
        """Workers first, then the master; each gets 10 s to go before it is killed."""
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in self.procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(5)
        self.procs = []

    def stop_workers(self) -> None:
        """Only the workers: the master stays, with no one to run a task."""
        for p in self.procs[1:]:
            p.terminate()
        for p in self.procs[1:]:
            p.wait(10)
        self.procs = self.procs[:1]

    def __enter__(self) -> "SparkStandalone":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


class SparkConnectServer:
    """A Spark Connect server on 127.0.0.1 (Spark's SparkConnectServer class through
    pyspark's spark-submit, as sbin/start-connect-server.sh runs it), on local[2], its
    Python workers on this interpreter. Ready when its gRPC port accepts connections."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = Path(workdir)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"sc://127.0.0.1:{self.port}"

    def start(self, timeout: float = 90.0) -> "SparkConnectServer":
        from rocketmq_emulator.spark_analytics.session import quiet_conf_dir

        self.workdir.mkdir(parents=True, exist_ok=True)
        submit = str(Path(spark_class()).parent / "spark-submit")
        env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_CONF_DIR": quiet_conf_dir(),
               "PYSPARK_PYTHON": sys.executable}
        log = open(self.workdir / "connect-server.log", "wb")
        self.proc = subprocess.Popen(
            [submit, "--class", "org.apache.spark.sql.connect.service.SparkConnectServer", "--name", "connect",
             "--master", "local[2]", "--conf", f"spark.connect.grpc.binding.port={self.port}",
             "--conf", "spark.connect.grpc.binding.address=127.0.0.1", "--conf", "spark.driver.host=127.0.0.1",
             "--conf", "spark.ui.enabled=false", "spark-internal"],
            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        log.close()
        try:
            wait_port(self.port, timeout)
        except TimeoutError:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        stop_process(self.proc)
        self.proc = None

    def __enter__(self) -> "SparkConnectServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
