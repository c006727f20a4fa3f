"""Fixtures of the spark_analytics tests: ONE SparkSession for the whole suite (loopback,
no UI, few shuffle partitions: tech-check §1-2), one scripted run, built once, and
analyze's warm Spark server kept off unless a test asks for one (``spark_server``); no
server of the suite outlives it."""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))          # sa_scenario, the scripted run

import sa_scenario  # noqa: E402

from rocketmq_emulator.store.snapshot import take_snapshot  # noqa: E402
from tests.support.wall import wall_ms  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def no_spark_server_left(tmp_path_factory):
    """analyze runs Spark in its own process here (as in CI), also in the CLI's child
    processes (the setting is in the environment); a server some test starts under the
    suite's state directory is stopped at the end, and none of its processes is left."""
    from rocketmq_emulator.spark_analytics.cli import SERVER_ENV
    from rocketmq_emulator.spark_analytics.spark_server import STATE_DIR_ENV, stop_server

    d = tmp_path_factory.mktemp("spark-server")
    patch = pytest.MonkeyPatch()
    patch.setenv(SERVER_ENV, "off")
    patch.setenv(STATE_DIR_ENV, str(d))
    yield d
    stop_server(d)
    patch.undo()
    assert not processes_of(d), "a Spark server of the test suite is still running"


def processes_of(state_dir: Path) -> list[int]:
    """The pids of a server's processes: its command line names ``state_dir`` (the
    supervisor) or one of its open files is in it (the JVM writes server.log there)."""
    mark = str(state_dir)
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if mark.encode() in (entry / "cmdline").read_bytes() or any(
                    os.readlink(fd).startswith(mark) for fd in (entry / "fd").iterdir()):
                pids.append(int(entry.name))
        except OSError:                        # gone meanwhile, or not ours to look at
            pass
    return pids


@pytest.fixture()
def spark_server(tmp_path, monkeypatch):
    """A state directory of its own for analyze's warm Spark server, the server on: the
    test's CLI runs (in process or children) use or start it. At the end it is stopped,
    and the test fails if any process of it (supervisor or JVM) is left."""
    from rocketmq_emulator.spark_analytics.cli import SERVER_ENV
    from rocketmq_emulator.spark_analytics.spark_server import STATE_DIR_ENV, stop_server

    d = tmp_path / "spark-server"
    monkeypatch.setenv(SERVER_ENV, "on")
    monkeypatch.setenv(STATE_DIR_ENV, str(d))
    yield d
    stop_server(d)
    left = processes_of(d)
    assert not left, f"processes of the Spark server still run: {left}"


@pytest.fixture(scope="session")
def spark():
    from rocketmq_emulator.spark_analytics.session import build_session

    # Whole-stage codegen off: the test data is tiny, and compiling each of the analysis'
    # plans costs more than running it interpreted (measured: ~21 s instead of ~34 s).
    session = build_session("local[2]", app_name="spark_analytics-tests", driver_memory="1g", shuffle_partitions=2,
                            conf={"spark.sql.codegen.wholeStage": "false"})
    yield session
    session.stop()


class Scenario:
    def __init__(self, root: Path) -> None:
        self.store = root / "store"
        self.snap = root / "snap"
        self.truth = sa_scenario.run(self.store, self.snap,
                                     lambda root, out: take_snapshot(root, out, wall_ms=wall_ms))


@pytest.fixture(scope="session")
def scenario(tmp_path_factory) -> Scenario:
    """The scripted run of sa_scenario: its store (written on after the snapshot), the
    live snapshot, and the truth."""
    return Scenario(tmp_path_factory.mktemp("scenario"))
