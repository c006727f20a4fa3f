"""analyze's warm Spark server, as a user meets it: the first run starts a Spark Connect
server and says so in one line (and how to stop it), later runs use it, two runs at
once share it, a dead, stale or foreign one is replaced without a traceback, it stops
by itself when unused for its idle timeout and at `analyze --stop-spark`, and no JVM
of it is left (the ``spark_server`` fixture fails a test that leaves one)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys

import pytest

from conftest import processes_of
from rocketmq_emulator.spark_analytics import cli
from rocketmq_emulator.spark_analytics.cli import analyze_main
from rocketmq_emulator.spark_analytics.report import analyze_snapshot
from rocketmq_emulator.spark_analytics.spark_server import ServerState, _read_state, code_fingerprint
from tests.support.cli_run import CLI_MAIN
from tests.support.processes import wait_for

pytestmark = pytest.mark.spark
COUNTS = ("produced", "succeeded", "dead_lettered", "send_backs")
STARTED = "rocketmq-emulator analyze: started a Spark server for later analyses (127.0.0.1:"


def analyze_child(snap, out, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", CLI_MAIN, "analyze", str(snap), "--out", str(out), *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(proc: subprocess.Popen, timeout: float = 420.0) -> tuple[str, str]:
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    assert proc.returncode == 0, err
    assert "Traceback" not in err, err
    return out, err


def gone(*pids: int) -> bool:
    return not any(os.path.exists(f"/proc/{pid}") and _not_zombie(pid) for pid in pids)


def _not_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def local_tables(spark, scenario, tmp_path_factory):
    """The tables the suite's own session computes for the scripted run's snapshot."""
    out = tmp_path_factory.mktemp("local")
    analyze_snapshot(str(scenario.snap), str(out), spark=spark, progress=lambda msg: None)
    return json.loads((out / "summary.json").read_text())


def test_the_first_run_starts_a_server_later_and_concurrent_runs_share_it_and_stop_spark_ends_it(
        spark_server, scenario, local_tables, tmp_path, capsys):
    # A server.json left by a server that is gone (its processes and port): replaced.
    spark_server.mkdir(parents=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    (spark_server / "server.json").write_text(json.dumps(
        ServerState(2 ** 22 + 7, 2 ** 22 + 9, dead_port, "x", code_fingerprint(), 900.0, 0.0).__dict__))
    # two analyses at once, no live server: one starts it, both use it
    first = [analyze_child(scenario.snap, tmp_path / f"r{i}") for i in (1, 2)]
    results = [finish(p) for p in first]
    errs = "".join(err for _, err in results)
    assert errs.count(STARTED) == 1, errs
    assert "replacing the Spark server (its supervisor (pid 4194311) is gone)" in errs
    [said] = [line for line in errs.splitlines() if line.startswith(STARTED)]
    assert said.endswith("it stops after 15 min unused; to stop it now: rocketmq-emulator analyze --stop-spark)")
    state = _read_state(spark_server)
    assert f"127.0.0.1:{state.port}, pid {state.jvm_pid};" in said
    for i, (out, _) in enumerate(results, 1):
        summary = json.loads((tmp_path / f"r{i}" / "summary.json").read_text())
        assert summary["tables"] == local_tables["tables"]
        assert json.loads(out) == {k: local_tables[k] for k in COUNTS}
    # a later run uses it: nothing said, and with --quiet nothing at all (in a child
    # process: a Connect session marks its process as Spark Connect's for good)
    out, err = finish(analyze_child(scenario.snap, tmp_path / "r3", "--quiet"))
    assert err == "" and json.loads(out) == {k: local_tables[k] for k in COUNTS}
    assert _read_state(spark_server) == state
    assert json.loads((tmp_path / "r3" / "summary.json").read_text())["tables"] == local_tables["tables"]
    # --stop-spark: says what it stopped; no process of the server is left
    assert analyze_main(["--stop-spark"]) == 0
    assert capsys.readouterr().out == f"stopped the Spark server (127.0.0.1:{state.port}, pid {state.jvm_pid})\n"
    assert gone(state.jvm_pid, state.supervisor_pid) and not processes_of(spark_server)
    assert _read_state(spark_server) is None
    assert analyze_main(["--stop-spark"]) == 0
    assert capsys.readouterr().out == "no Spark server was running\n"


def test_a_dead_or_foreign_server_is_replaced_and_an_unused_one_stops_by_itself(
        spark_server, scenario, local_tables, tmp_path):
    _, err = finish(analyze_child(scenario.snap, tmp_path / "a"))
    first = _read_state(spark_server)
    assert STARTED in err
    # the supervisor killed: its JVM goes with it (the kernel's parent-death signal) ...
    os.kill(first.supervisor_pid, signal.SIGKILL)
    wait_for(lambda: gone(first.jvm_pid), timeout=60, interval=0.2)
    # ... and the next run replaces the server its server.json still names
    _, err = finish(analyze_child(scenario.snap, tmp_path / "b"))
    assert f"replacing the Spark server (its supervisor (pid {first.supervisor_pid}) is gone)" in err
    assert STARTED in err
    second = _read_state(spark_server)
    assert second.jvm_pid != first.jvm_pid
    # a server started by other code (the package's files changed since): stopped, replaced
    (spark_server / "server.json").write_text(json.dumps({**second.__dict__, "code": "other"}))
    _, err = finish(analyze_child(scenario.snap, tmp_path / "c", "--spark-idle-timeout", "3s"))
    assert "replacing the Spark server (it was started by other code (the package changed since))" in err
    assert "it stops after 3 s unused" in err
    third = _read_state(spark_server)
    assert gone(second.jvm_pid, second.supervisor_pid)
    for name in ("a", "b", "c"):
        assert json.loads((tmp_path / name / "summary.json").read_text())["tables"] == local_tables["tables"]
    # unused for 3 s: it stops by itself, server.json goes, no process is left
    wait_for(lambda: gone(third.jvm_pid, third.supervisor_pid), timeout=90, interval=0.2)
    assert _read_state(spark_server) is None and not processes_of(spark_server)


def test_stop_spark_and_the_idle_timeout_refuse_what_they_cannot_use(tmp_path, capsys):
    assert analyze_main(["--stop-spark", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == "rocketmq-emulator analyze: error: --stop-spark takes no snapshot and no --out"
    assert analyze_main([str(tmp_path), "--out", str(tmp_path / "o"), "--spark-idle-timeout", "soon"]) == 2
    assert "'soon' is not a duration (e.g. 90s, 15m, 1h)" in capsys.readouterr().err
    assert [cli._seconds(t) for t in ("90", "90s", "15m", "1h", "0.5m")] == [90, 90, 900, 3600, 30]


@pytest.mark.parametrize("env, args, expected", [
    ({}, [], True),                                   # on by default on a developer's machine
    ({"CI": "true"}, [], False),                       # off in CI
    ({"CI": "true", cli.SERVER_ENV: "on"}, [], True),
    ({cli.SERVER_ENV: "off"}, [], False),
    ({}, ["--no-spark-server"], False),
    ({}, ["--master", "local[2]"], False),             # Spark where the user says
    ({}, ["--remote", "sc://127.0.0.1:15002"], False),
])
def test_when_analyze_uses_the_warm_server(env, args, expected, monkeypatch):
    for name in ("CI", cli.SERVER_ENV):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    parsed = cli._analyze_parser().parse_args(["snap", "--out", "o", *args])
    assert cli._use_spark_server(parsed) is expected
