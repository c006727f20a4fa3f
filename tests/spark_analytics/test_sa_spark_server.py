"""analyze's warm Spark server, as a user meets it: the first run starts a Spark Connect
server and says so in one line (and how to stop it), later runs use it, two runs at
once share it, a dead, stale or foreign one is replaced without a traceback, it stops
by itself when unused for its idle timeout and at `analyze --stop-spark`, and no JVM
of it is left (the ``spark_server`` fixture fails a test that leaves one)."""
from __future__ import annotations

import json
import os
import re
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
from tests.support.readme import README

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


def ready(d):
    """The server of ``d`` once it answers and has run its warm-up analysis."""
    state = _read_state(d)
    return state if state is not None and state.status == "ready" and state.warmed else None


def test_the_first_run_starts_a_server_later_and_concurrent_runs_share_it_and_stop_spark_ends_it(
        spark_server, scenario, local_tables, tmp_path, capsys):
    # A server.json left by a server that is gone (its processes and port): replaced.
    spark_server.mkdir(parents=True)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    (spark_server / "server.json").write_text(json.dumps(
        ServerState(2 ** 22 + 7, 2 ** 22 + 9, dead_port, "x", code_fingerprint(), 900.0, 0.0).__dict__))
    # two first analyses at once: each runs Spark in its own process, one server is started
    first = [analyze_child(scenario.snap, tmp_path / f"r{i}") for i in (1, 2)]
    errs = "".join(err for _, err in (finish(p) for p in first))
    assert errs.count(STARTED) == 1, errs
    assert "replacing the Spark server (its supervisor (pid 4194311) is gone)" in errs
    [said] = [line for line in errs.splitlines() if line.startswith(STARTED)]
    assert said.endswith("it stops after 15 min unused; to stop it now: rocketmq-emulator analyze --stop-spark)")
    starting = _read_state(spark_server)
    assert f"127.0.0.1:{starting.port}, pid {starting.supervisor_pid};" in said
    # the README shows this line (port and pid aside)
    shown = next(line for line in README.read_text().splitlines() if line.startswith(STARTED))
    assert re.sub(r"\d+", "N", shown) == re.sub(r"\d+", "N", said)
    # it starts in the background and warms itself up with an analysis of that snapshot
    state = wait_for(lambda: ready(spark_server), timeout=300, interval=0.2)
    assert (state.supervisor_pid, state.port) == (starting.supervisor_pid, starting.port)
    assert not (spark_server / "warm-up").exists()
    # two analyses at once use it; a later one too, saying nothing (with --quiet nothing at
    # all); in child processes: a Connect session marks its process as Spark Connect's
    runs = [analyze_child(scenario.snap, tmp_path / f"r{i}") for i in (3, 4)]
    runs.append(analyze_child(scenario.snap, tmp_path / "r5", "--quiet"))
    results = [finish(p) for p in runs]
    for out, err in results:
        assert json.loads(out) == {k: local_tables[k] for k in COUNTS}
        assert STARTED not in err and f"connecting to the Spark server on 127.0.0.1:{state.port}" in err or err == ""
    assert results[2][1] == ""
    for i in range(1, 6):
        assert json.loads((tmp_path / f"r{i}" / "summary.json").read_text())["tables"] == local_tables["tables"]
    assert _read_state(spark_server) == state
    # --stop-spark: says what it stopped; no process of the server is left
    assert analyze_main(["--stop-spark"]) == 0
    assert capsys.readouterr().out == f"stopped the Spark server (127.0.0.1:{state.port}, pid {state.supervisor_pid})\n"
    assert gone(state.jvm_pid, state.supervisor_pid) and not processes_of(spark_server)
    assert _read_state(spark_server) is None
    assert analyze_main(["--stop-spark"]) == 0
    assert capsys.readouterr().out == "no Spark server was running\n"
    # a first run with --quiet starts one all the same, and says nothing at all (the
    # fixture stops it, starting or not, and fails if a process of it is left)
    out, err = finish(analyze_child(scenario.snap, tmp_path / "r6", "--quiet"))
    assert err == "" and json.loads(out) == {k: local_tables[k] for k in COUNTS}
    assert _read_state(spark_server) is not None


def test_a_dead_or_foreign_server_is_replaced_and_an_unused_one_stops_by_itself(
        spark_server, scenario, local_tables, tmp_path):
    _, err = finish(analyze_child(scenario.snap, tmp_path / "a"))
    assert STARTED in err
    first = wait_for(lambda: ready(spark_server), timeout=300, interval=0.2)
    # the supervisor killed: its JVM goes with it (the kernel's parent-death signal) ...
    os.kill(first.supervisor_pid, signal.SIGKILL)
    wait_for(lambda: gone(first.jvm_pid), timeout=60, interval=0.2)
    # ... and the next run replaces the server its server.json still names
    _, err = finish(analyze_child(scenario.snap, tmp_path / "b"))
    assert f"replacing the Spark server (its supervisor (pid {first.supervisor_pid}) is gone)" in err
    assert STARTED in err
    second = wait_for(lambda: ready(spark_server), timeout=300, interval=0.2)
    assert second.jvm_pid != first.jvm_pid
    # a server started by other code (the package's files changed since): stopped, replaced
    (spark_server / "server.json").write_text(json.dumps({**second.__dict__, "code": "other"}))
    _, err = finish(analyze_child(scenario.snap, tmp_path / "c", "--spark-idle-timeout", "3s"))
    assert "replacing the Spark server (it was started by other code (the package changed since))" in err
    assert "it stops after 3 s unused" in err
    assert gone(second.jvm_pid, second.supervisor_pid)
    third = wait_for(lambda: ready(spark_server), timeout=300, interval=0.2)
    for name in ("a", "b", "c"):
        assert json.loads((tmp_path / name / "summary.json").read_text())["tables"] == local_tables["tables"]
    # unused for 3 s after its warm-up: it stops by itself, server.json goes, no process is left
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


def test_a_server_directory_it_cannot_use_is_one_line(tmp_path, monkeypatch, capsys, scenario):
    from rocketmq_emulator.spark_analytics.spark_server import STATE_DIR_ENV

    (tmp_path / "file").write_text("not a directory")
    monkeypatch.setenv(cli.SERVER_ENV, "on")
    monkeypatch.setenv(STATE_DIR_ENV, str(tmp_path / "file" / "server"))
    assert analyze_main([str(scenario.snap), "--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err.strip()
    assert err == (f"rocketmq-emulator analyze: error: cannot use the Spark server's directory {tmp_path}/file/server: "
                   "Not a directory (or run with --no-spark-server)")


def start_warming_server(snap) -> ServerState:
    """A server started as the first analysis starts it (warming up with ``snap``),
    without that analysis' own Spark run."""
    from rocketmq_emulator.spark_analytics.spark_server import start_in_background

    return start_in_background(warm_up=str(snap))


def test_an_analysis_of_the_same_snapshot_during_the_warm_up_takes_its_report_and_errors_stay_one_line(
        spark_server, scenario, local_tables, tmp_path):
    start_warming_server(scenario.snap)
    # sent while the server starts: it waits for the warm-up's analysis, not beside it
    out, err = finish(analyze_child(scenario.snap, tmp_path / "during"))
    assert "the Spark server is warming up with an analysis of this snapshot: taking its report" in err
    assert json.loads(out) == {k: local_tables[k] for k in COUNTS}
    state = wait_for(lambda: ready(spark_server), timeout=300, interval=0.2)
    assert not (spark_server / "warm-up").exists()
    # on the warm server: the same report as Spark in this process computes
    out, err = finish(analyze_child(scenario.snap, tmp_path / "warm"))
    assert f"connecting to the Spark server on 127.0.0.1:{state.port}" in err and "warming up" not in err
    for name in ("during", "warm"):
        summary = json.loads((tmp_path / name / "summary.json").read_text())
        assert summary["tables"] == local_tables["tables"]
        assert {k: summary[k] for k in COUNTS} == {k: local_tables[k] for k in COUNTS}
        assert (tmp_path / name / "report.html").is_file() and (tmp_path / name / "aggregates" / "lag.parquet").is_file()
    # what the supervisor refuses is one line and its exit code, as without a server
    (tmp_path / "a-file").write_text("")
    for args, line in [
        ([str(tmp_path / "nowhere"), "--out", str(tmp_path / "o")], f"{tmp_path / 'nowhere'}"),
        ([str(scenario.snap), "--out", str(tmp_path / "a-file")], "is a file; give a directory for the report"),
        ([str(scenario.snap), "--out", str(tmp_path / "o"), "--delay-levels", "1s soon"], "soon"),
    ]:
        done = subprocess.run([sys.executable, "-c", CLI_MAIN, "analyze", *args], capture_output=True, text=True,
                              timeout=120)
        assert done.returncode == 2, done.stderr
        [shown] = done.stderr.strip().splitlines()[-1:]
        assert shown.startswith("rocketmq-emulator analyze: error: ") and line in shown, done.stderr
        assert "Traceback" not in done.stderr
    assert "Traceback" not in (spark_server / "supervisor.log").read_text()
    assert _read_state(spark_server) == state


def test_an_analysis_of_something_else_during_the_warm_up_cancels_it_and_a_command_gone_cancels_its_own(
        spark_server, scenario, local_tables, tmp_path):
    from rocketmq_emulator.spark_analytics.spark_server import _idle

    start_warming_server(scenario.snap)
    # other options: another report, so the warm-up's is no use to it
    levels = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
    out, err = finish(analyze_child(scenario.snap, tmp_path / "other", "--delay-levels", levels))
    assert "warming up" not in err
    assert json.loads(out) == {k: local_tables[k] for k in COUNTS}
    wait_for(lambda: ready(spark_server), timeout=300, interval=0.2)
    log = (spark_server / "supervisor.log").read_text()
    assert "the warm-up analysis is cancelled: an analysis of another snapshot (or with other options) came" in log
    assert "Traceback" not in log and not (spark_server / "warm-up").exists()
    # a command killed while the server computes its tables: its analysis stops, no report
    # appears after it, and the server goes on serving
    killed = analyze_child(scenario.snap, tmp_path / "killed")
    for line in killed.stderr:
        if "computing the" in line:
            break
    killed.kill()
    killed.communicate(timeout=30)
    wait_for(lambda: "an analysis is cancelled: its command went away" in (spark_server / "supervisor.log").read_text(),
             timeout=60, interval=0.1)
    wait_for(lambda: _idle(spark_server), timeout=120, interval=0.2)
    assert not (tmp_path / "killed" / "report.html").exists() and not (tmp_path / "killed" / "summary.json").exists()
    out, _ = finish(analyze_child(scenario.snap, tmp_path / "after"))
    assert json.loads(out) == {k: local_tables[k] for k in COUNTS}
    assert "Traceback" not in (spark_server / "supervisor.log").read_text()
