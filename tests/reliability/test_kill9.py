"""kill -9 under load loses nothing acknowledged, in both flush modes (issue 17, items 1
and 2): `serve` in a subprocess, a producer and a consumer that fails about 10 % over TCP,
SIGKILL at a random moment, restart on the same directory; every acknowledged message
is read back by a fresh group from offset 0, no offsetMsgId is given twice, and the
failing group consumes everything (tests/reliability/harness.py). A few runs per mode;
benchmarks/kill9_table.py runs many for the table."""
from __future__ import annotations

import random

import pytest

from .harness import run_once

RUNS = 3


@pytest.mark.parametrize("mode", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_kill_9_under_load_loses_no_acknowledged_message(tmp_path, mode):
    rng = random.Random(f"kill9/{mode}")
    for i in range(RUNS):
        run = run_once(tmp_path / f"run{i}", mode, rng)
        print(run.row())
        assert run.acked_before_kill > 100, f"too little load before the kill to mean anything: {run.row()}"
        assert run.acked > run.acked_before_kill, f"nothing was acknowledged after the restart: {run.row()}"
        assert (run.lost, run.reused, run.not_resumed) == (0, 0, 0), f"{run.row()}; lost e.g. {run.samples}"
