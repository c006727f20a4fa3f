"""One seed, one run: the same (scenario, seed) writes the same commit log, byte for
byte — in this process and in a fresh one with another hash seed."""
from __future__ import annotations

import json
import os
import subprocess
import sys

from rocketmq_emulator.client_sdk.simulation import GroupSpec, WriteOffWindow, run_simulation

from .conftest import W1, commit_log_bytes, small

BUSY = dict(groups=(GroupSpec(batch_size=3, fail_probability=0.05, **W1),), crashes_ms=(90_000,),
            write_off=(WriteOffWindow(500, 1500),))


def test_the_same_seed_writes_identical_bytes(tmp_path):
    a = run_simulation(small(seed=11, **BUSY), tmp_path / "a")
    b = run_simulation(small(seed=11, **BUSY), tmp_path / "b")
    assert a.ok and b.ok, a.violations + b.violations
    assert a.crashes == 1 and a.refused_sends > 0           # the faults really happened
    assert commit_log_bytes(tmp_path / "a") == commit_log_bytes(tmp_path / "b")
    assert a.summary()["send_backs"] == b.summary()["send_backs"]


def test_another_seed_writes_other_bytes(tmp_path):
    run_simulation(small(seed=11, **BUSY), tmp_path / "a")
    run_simulation(small(seed=12, **BUSY), tmp_path / "b")
    assert commit_log_bytes(tmp_path / "a") != commit_log_bytes(tmp_path / "b")


def test_a_fresh_process_with_another_hash_seed_writes_the_same_bytes(tmp_path):
    """Set iteration order of strings changes with PYTHONHASHSEED; nothing may depend on it."""
    outs = []
    for i, hash_seed in enumerate(("1", "2")):
        out = tmp_path / f"run{i}"
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        proc = subprocess.run([sys.executable, "-m", "rocketmq_emulator.broker.cli", "simulate", "--seed", "5", "--messages", "150",
                               "--duration", "10m", "--pattern", "w1", "--crash-at", "1m", "--out", str(out),
                               "--json", "--quiet"], capture_output=True, text=True, env=env, timeout=120)
        assert proc.returncode == 0, proc.stderr
        outs.append((json.loads(proc.stdout), commit_log_bytes(out)))
    assert outs[0][1] == outs[1][1]
    assert outs[0][0]["send_backs"] == outs[1][0]["send_backs"] > 0


def test_the_cyclic_collector_is_paused_for_a_run_and_restored_after(tmp_path):
    import gc

    from rocketmq_emulator.client_sdk.simulation import Simulation

    during = []
    progress = lambda *_: during.append(gc.isenabled())   # noqa: E731
    assert gc.isenabled()
    result = Simulation(small(seed=3), tmp_path / "a", progress=progress).run()
    assert result.ok and during and not any(during)
    assert gc.isenabled()
    gc.disable()
    try:
        Simulation(small(seed=3), tmp_path / "b").run()
        assert not gc.isenabled()                           # a caller's choice is kept
    finally:
        gc.enable()
    assert commit_log_bytes(tmp_path / "a") == commit_log_bytes(tmp_path / "b")
