"""Fixtures of the spark_analytics tests: ONE SparkSession for the whole suite (loopback,
no UI, few shuffle partitions: tech-check §1-2) and one scripted run, built once."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))          # sa_scenario, the scripted run

import sa_scenario  # noqa: E402

from rocketmq_emulator.store.snapshot import take_snapshot  # noqa: E402
from tests.support.wall import wall_ms  # noqa: E402


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
