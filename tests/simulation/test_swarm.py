"""The swarm's pure part (client_sdk/simulation/swarm.py, issue 50), without Spark: the
seeds option, the scenario file form, drawn schedules, the options' errors.
(Spark runs swarms in tests/spark_analytics/test_sa_swarm.py.)"""
from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk.simulation import (ConsumerRestart, GroupSpec, Scenario, WriteOffWindow,
                                                     fault_spec)
from rocketmq_emulator.client_sdk.simulation import swarm_cli
from rocketmq_emulator.client_sdk.simulation.scenario import BrokerWindow
from rocketmq_emulator.client_sdk.simulation.strategies import MINUTE
from rocketmq_emulator.client_sdk.simulation.swarm import (SeedRunner, draw_schedule, parse_seeds, scenario_hash,
                                                           seed_scenario)

from .conftest import W1

BASE = Scenario(messages=20, duration_ms=5 * MINUTE, groups=(GroupSpec(**W1), GroupSpec(name="Five", protocol="5.x")),
                settle_ms=8 * 60 * MINUTE)


@pytest.mark.parametrize("text, seeds", [("3", [1, 2, 3]), ("5..8", [5, 6, 7, 8]), ("9,2,4..5,2", [2, 4, 5, 9]),
                                         ("0..1", [0, 1])])
def test_seeds_are_a_count_a_range_or_a_list(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text, says", [("0", "takes 1 to"), ("8..5", "A <= B"), ("1..x", "like 3,7,100..120"),
                                        ("-3", "like 3,7"), ("1..20000000", "more than")])
def test_bad_seeds_are_one_line(text, says, capsys):
    with pytest.raises(ValueError, match=says):
        parse_seeds(text)
    assert main(["simulate", "--seeds", text, "--out", "unused"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("rocketmq-emulator simulate: error: --seeds")


@pytest.mark.parametrize("args, says", [
    (["--seed", "3", "--seeds", "5"], "give --seed (one run) or --seeds (a swarm), not both"),
    (["--seed", "3", "--shrink"], "--shrink is for swarms: give --seeds too"),
    (["--draw-faults"], "--draw-faults is for swarms"),
    (["--seeds", "4", "--master", "local[2]", "--remote", "sc://127.0.0.1:1"], "give --master or --remote"),
    (["--seeds", "4", "--partitions", "0"], "--partitions takes a number >= 1"),
])
def test_swarm_options_that_do_not_fit_are_one_line(args, says, capsys, tmp_path):
    assert main(["simulate", *args, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and says in err
    assert not (tmp_path / "o").exists()


def test_without_the_analytics_extra_the_swarm_says_how_to_install_it(capsys, tmp_path, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pyspark" else real(name, *a))
    assert main(["simulate", "--seeds", "4", "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"rocketmq-emulator simulate: error: {swarm_cli.analytics_hint()}"
    assert "pip install -e '.[analytics]'" in err                     # works from a checkout


def test_a_scenario_file_form_reads_back_as_the_same_scenario(tmp_path):
    scenario = Scenario(seed=5, messages=30, duration_ms=10 * MINUTE, brokers=2, crashes_ms=(60_000,),
                        groups=(GroupSpec(poison_every=10, batch_size=2),),
                        write_off=(WriteOffWindow(1_000, 9_000),), consumer_restarts=(ConsumerRestart("SimGroup", 5, 6),),
                        broker_down=(BrokerWindow("broker-b", 10, 20),),
                        faults=(fault_spec("pull", "delay", delay="5s", window=("1m", "2m"), probability=0.5),
                                fault_spec("send", "drop", stored=True, times=3)))
    path = tmp_path / "s.json"
    path.write_text(json.dumps(scenario.to_file_data()))
    assert Scenario.load(path) == scenario
    assert Scenario(seed=9).to_file_data() == {"seed": 9}             # defaults left out


def test_drawn_schedules_come_from_the_seed_alone_in_any_process():
    drawn = {seed: seed_scenario(BASE, seed, draw_faults=True) for seed in range(1, 31)}
    assert all(seed_scenario(BASE, s, True) == drawn[s] for s in (1, 17, 30))
    assert len({json.dumps(s.to_file_data(), sort_keys=True) for s in drawn.values()}) == 30
    # the strategies' bounds hold: at most 2 crashes and 2 windows within the duration, 3 rules
    for s in drawn.values():
        assert s.seed in drawn and len(s.crashes_ms) <= 2 and len(s.write_off) <= 2 and len(s.faults) <= 3
        assert all(0 <= t <= BASE.duration_ms for t in s.crashes_ms)
        assert all(r.group in ("SimGroup", "Five") for r in s.consumer_restarts)
    assert any(s.faults for s in drawn.values()) and any(s.crashes_ms for s in drawn.values())
    # another interpreter, with other modules loaded, draws the same
    code = ("import json,sys\nfrom rocketmq_emulator.client_sdk.simulation.swarm import draw_schedule\n"
            "from tests.simulation.test_swarm import BASE\n"
            "print(json.dumps(repr(draw_schedule(BASE, 17))))")
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert json.loads(child.stdout) == repr(draw_schedule(BASE, 17))


def test_the_scenario_hash_names_the_scenario_not_the_seed():
    assert scenario_hash(BASE) == scenario_hash(Scenario.from_dict({**BASE.to_file_data(), "seed": 7}))
    assert scenario_hash(BASE) != scenario_hash(Scenario(messages=21, duration_ms=BASE.duration_ms,
                                                         groups=BASE.groups, settle_ms=BASE.settle_ms))


def test_a_seed_whose_run_raises_is_a_row_naming_the_error(monkeypatch):
    from rocketmq_emulator.client_sdk.simulation import simulator

    def broken(self):
        raise RuntimeError("planted defect")

    monkeypatch.setattr(simulator.Simulation, "run", broken)
    row = SeedRunner(BASE)(3)
    assert row["seed"] == 3 and row["error"] == "RuntimeError: planted defect" and row["produced"] is None


def test_progress_says_seeds_done_of_all_violations_so_far_and_an_eta():
    import io

    now, stream = [0.0], io.StringIO()
    progress = swarm_cli.SwarmProgress(10, every=2.0, clock=lambda: now[0], stream=stream)

    def rows(*seeds, kinds=()):
        return [{"seed": s, "violation_kinds": list(kinds), "error": None} for s in seeds]

    now[0] = 1.0
    progress(rows(1) + rows(2, kinds=["lost"]))          # within 2 s of the start: no line yet
    now[0] = 4.0
    progress(rows(3, 4))
    now[0] = 5.0
    progress(rows(5, 6, 7, 8, 9, 10))                     # the last: always a line
    assert stream.getvalue().splitlines() == ["simulate: 4/10 seeds, 1 with violations, ETA 6 s",
                                              "simulate: 10/10 seeds, 1 with violations, done"]


def test_shrinking_keeps_what_the_failure_needs_and_drops_the_rest():
    from rocketmq_emulator.client_sdk.simulation.swarm import shrink

    big = Scenario(seed=4, messages=200, duration_ms=30 * MINUTE, crashes_ms=(60_000, 120_000),
                   write_off=(WriteOffWindow(10_000, 70_000),), consumer_restarts=(ConsumerRestart("SimGroup", 1, 40_000),),
                   faults=(fault_spec("pull", "delay", delay="5s"), fault_spec("send", "refuse", window=(0, 64_000)),
                           fault_spec("ack", "drop")))

    def kinds(s):             # "lost" needs 3 messages and the send rule; fewer than 3 messages raise
        if s.messages < 3:
            raise RuntimeError("a run that raises is not the failure")
        return {"lost"} if any(f.operation == "send" for f in s.faults) else {"commit"}

    small, runs = shrink(big, "lost", kinds)
    assert small.messages == 3 and small.seed == 4 and [f.operation for f in small.faults] == ["send"]
    assert small.crashes_ms == () and small.write_off == () and small.consumer_restarts == ()
    assert small.faults[0].window_ms == (0, 1)                  # halved while it still broke
    assert runs <= 150
