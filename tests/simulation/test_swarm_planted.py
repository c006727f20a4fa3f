"""Planted bugs are found by a swarm with drawn faults and shrunk to a repro a person
would write (issue 50, item 6): the planted bugs of the simulator's own tests (a lost
message, an early retry, a commit past an unfinished message, a double delivery), each
over the same per-seed function the Spark swarm distributes, run here in one process
(benchmarks/swarm_planted.py runs 500 seeds of each; the suite keeps to 30)."""
from __future__ import annotations

import json

import pytest

import rocketmq_emulator.client_sdk.simulation.simulator as simulator
from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk.simulation import GroupSpec, Scenario, pop_consumer
from rocketmq_emulator.client_sdk.simulation.swarm import SeedRunner, run_locally, swarm_summary
from rocketmq_emulator.client_sdk.simulation.swarm_cli import shrink_failures

from .conftest import W1
from .test_fault_rules import DeliversTwice
from .test_invariants import CommitsOnArrival, LosesSendBacks

SEEDS = range(1, 31)


def early_retry(monkeypatch):
    # the planted bug of test_rocketmq5_groups: the consumer asks for 1 s where the table says 10 s, 30 s, ...
    monkeypatch.setattr(pop_consumer, "rocketmq5_retry_interval_ms", lambda attempt: 1000)


# (invariant, consumer class or patch, protocol of the group)
PLANTED = {
    "lost": ("lost", LosesSendBacks, "4.x"),
    "early retry": ("retry_delay", early_retry, "5.x"),
    "commit past an unfinished message": ("commit", CommitsOnArrival, "4.x"),
    "double delivery": ("duplicate", DeliversTwice, "4.x"),
}


def planted_base(protocol: str) -> Scenario:
    return Scenario(messages=10, duration_ms=120_000, groups=(GroupSpec(protocol=protocol, **W1),),
                    settle_ms=8 * 3_600_000)


@pytest.mark.parametrize("bug", list(PLANTED))
def test_a_swarm_finds_the_planted_bug_and_its_shrunk_repro_replays_alone(bug, tmp_path, monkeypatch, capsys):
    invariant, plant, protocol = PLANTED[bug]
    consumer_class = None
    if isinstance(plant, type):
        consumer_class = plant
    else:
        plant(monkeypatch)
    runner = SeedRunner(planted_base(protocol), draw_faults=True, keep_dir=str(tmp_path / "failing"),
                        consumer_class=consumer_class)
    rows = run_locally(runner, SEEDS)
    summary = swarm_summary(rows, len(SEEDS), 1.0)
    assert summary["violations"][invariant]["seeds"] >= len(SEEDS) // 2
    first = summary["violations"][invariant]["first_seeds"][0]
    assert (tmp_path / "failing" / f"seed-{first}" / "commitlog").is_dir()
    repro = next(r for r in shrink_failures(runner, rows, tmp_path) if r["invariant"] == invariant)
    assert repro["seed"] == first and repro["messages"] <= 10 and repro["faults"] <= 2
    # the command printed, alone (the same planted bug in the client), breaks the same invariant
    if consumer_class is not None:
        real = simulator.run_simulation
        monkeypatch.setattr(simulator, "run_simulation",
                            lambda scenario, store, **kw: real(scenario, store, consumer_class=consumer_class, **kw))
    argv = repro["command"].split()
    assert argv[:2] == ["rocketmq-emulator", "simulate"] and "--seed" in argv and "--scenario" in argv
    assert main(argv[1:] + ["--json", "--quiet"]) == 1
    replayed = json.loads(capsys.readouterr().out)
    assert invariant in {v["invariant"] for v in replayed["violations"]}
    assert replayed["seed"] == first and replayed["messages"] == repro["messages"]
