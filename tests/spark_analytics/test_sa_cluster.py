"""`analyze --master spark://...` against a real Spark standalone cluster on 127.0.0.1
(a master and two workers started with pyspark's own launcher), and `analyze --remote
sc://...` against a real Spark Connect server (tests/support/spark_standalone.py). The
analysis runs in a child process (this process holds the suite's local SparkSession,
and a process has one SparkContext)."""
from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.spark_analytics.report import analyze_snapshot
from rocketmq_emulator.store.snapshot import take_snapshot
from tests.support.cli_run import CLI_MAIN
from tests.support.html_page import HtmlPageServer
from tests.support.processes import free_port, wait_for
from tests.support.readme import README
from tests.support.spark_standalone import SparkConnectServer, SparkStandalone, spark_class
from tests.support.wall import wall_ms

pytestmark = pytest.mark.spark
COUNTS = ("produced", "succeeded", "dead_lettered", "send_backs")


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory):
    """A simulated run with retries, dead letters and a crash, snapshotted."""
    root = tmp_path_factory.mktemp("cluster-input")
    rc = main(["simulate", "--seed", "5", "--messages", "600", "--duration", "20m", "--pattern", "w1",
               "--fail-probability", "0.05", "--crash-at", "5m", "--out", str(root / "store"), "--quiet"])
    assert rc == 0
    take_snapshot(root / "store", root / "snap", wall_ms=wall_ms)
    return root / "snap"


def analyze_cli(*args: str, timeout: float = 300.0) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CLI_MAIN, "analyze", *args], capture_output=True, text=True,
                          timeout=timeout)


class ReadmeCluster(SparkStandalone):
    """The cluster of the README's analytics guide, from its own lines (the master once,
    the worker line once per worker), with free ports for 7077 and 8090."""

    def __init__(self, workdir, lines: dict[str, list[str]]) -> None:
        super().__init__(workdir, workers=2)
        self.lines = lines

    def _readme_args(self, key: str) -> list[str]:
        words = [w.replace("7077", str(self.port)).replace("8090", str(self.ui_port)) for w in self.lines[key]]
        assert words[0] == "$SPARK_HOME/bin/spark-class" and words[-1] == "&", words
        return words[1:-1]

    def master_args(self) -> list[str]:
        return self._readme_args("Master")

    def worker_args(self) -> list[str]:
        return self._readme_args("Worker") + ["--webui-port", str(free_port())]


def readme_cluster_lines() -> dict[str, list[str]]:
    """The sh block of the README that starts a standalone cluster, its lines split."""
    block = next(b for b in re.findall(r"```sh\n(.*?)```", README.read_text(), re.S) if "deploy.master.Master" in b)
    lines = {}
    for line in block.strip().splitlines():
        words = shlex.split(line)
        key = next((k for k in ("Master", "Worker") if any(w.endswith(f".{k}") for w in words)), None)
        lines[key or words[0].split("/")[-1]] = words
    return lines


def test_the_readme_cluster_runs_analyze_to_the_local_runs_summary(spark, snapshot, tmp_path):
    """The README's lines start a master and two workers; its analyze line (on this
    snapshot) ends with the summary the local run writes."""
    local = analyze_snapshot(str(snapshot), str(tmp_path / "local"), spark=spark)
    lines = readme_cluster_lines()
    home_line = next(ln for ln in README.read_text().splitlines() if ln.startswith("SPARK_HOME=$("))
    home = subprocess.run(["bash", "-c", f"{home_line}; echo $SPARK_HOME"], cwd=README.parent, capture_output=True,
                          text=True, timeout=30).stdout.strip()
    assert home == str(Path(spark_class()).parents[1])          # where the launcher lines find spark-class
    with ReadmeCluster(tmp_path / "cluster", lines) as cluster:
        analyze = lines["rocketmq-emulator"]
        assert analyze[1:3] == ["analyze", "/shared/snap"] and "--driver-read-max" in analyze
        args = [{"/shared/snap": str(snapshot), "/tmp/report": str(tmp_path / "remote"),
                 "spark://127.0.0.1:7077": cluster.master_url}.get(w, w) for w in analyze[2:]]
        # --driver-read-max 0: the workers decode the commit log (the data source's
        # tasks), as they would for a snapshot too large for the driver
        done = analyze_cli(*args, "--quiet")
        apps = cluster.status()["completedapps"] + cluster.status()["activeapps"]
    assert done.returncode == 0, done.stderr
    remote = json.loads((tmp_path / "remote" / "summary.json").read_text())
    assert json.loads(done.stdout) == {k: local[k] for k in COUNTS}
    assert local["dead_lettered"] > 0 and local["send_backs"] > local["dead_lettered"]
    assert remote["tables"] == json.loads((tmp_path / "local" / "summary.json").read_text())["tables"]
    assert remote["records"] == local["records"]
    # it ran on the cluster: the master saw the application take both workers' cores
    ours = [a for a in apps if a["name"] == "rocketmq-emulator-analytics"]
    assert len(ours) == 1 and ours[0]["cores"] == 2, apps


def test_a_cluster_whose_workers_go_away_mid_job_ends_in_one_line(snapshot, tmp_path):
    out = tmp_path / "report"
    out.mkdir()
    (out / "summary.json").write_text('{"produced": 1}')         # an earlier run's: must not survive as ours
    with SparkStandalone(tmp_path / "cluster", workers=2) as cluster:
        proc = subprocess.Popen([sys.executable, "-c", CLI_MAIN, "analyze", str(snapshot), "--out", str(out),
                                 "--master", cluster.master_url, "--driver-read-max", "0", "--quiet"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            def running() -> bool:
                assert proc.poll() is None, "the analysis ended before it reached the master"
                return any(a["name"] == "rocketmq-emulator-analytics" for a in cluster.status()["activeapps"])

            wait_for(running, timeout=120, interval=0.1)
            cluster.stop_workers()
            stdout, stderr = proc.communicate(timeout=180)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode == 1, stderr
    last = stderr.strip().splitlines()[-1]
    assert last.startswith("rocketmq-emulator analyze: error: the Spark cluster at spark://127.0.0.1:"), stderr
    assert "no executors" in last
    assert stdout == "" and not (out / "summary.json").exists() and not (out / "report.html").exists()


def test_analyze_through_spark_connect_equals_the_local_run(spark, snapshot, tmp_path):
    """The data source is registered over Connect (its class travels to the server,
    whose Python workers decode the log); everything else is DataFrames and SQL."""
    local = analyze_snapshot(str(snapshot), str(tmp_path / "local"), spark=spark)
    with SparkConnectServer(tmp_path / "connect") as server:
        done = analyze_cli(str(snapshot), "--out", str(tmp_path / "remote"), "--remote", server.url,
                           "--driver-read-max", "0")
    assert done.returncode == 0, done.stderr
    assert f"connecting to the Spark Connect server {server.url}" in done.stderr
    assert "Warning" not in done.stderr, done.stderr
    remote = json.loads((tmp_path / "remote" / "summary.json").read_text())
    assert json.loads(done.stdout) == {k: local[k] for k in COUNTS}
    assert remote["tables"] == json.loads((tmp_path / "local" / "summary.json").read_text())["tables"]


def test_a_status_page_that_is_not_json_yet_counts_as_no_worker_alive(tmp_path):
    """CI once met the master's status port answering an HTML page (Spark's own footer) in
    place of its JSON while the cluster came up: the readiness poll must read that as
    "not ready yet" and look again, not fail the test that started the cluster."""
    with HtmlPageServer("<!DOCTYPE html><html><body><span>4.3.0</span></body></html>") as page:
        cluster = SparkStandalone(tmp_path)
        cluster.ui_port = page.port
        assert cluster.alive_workers() == 0
