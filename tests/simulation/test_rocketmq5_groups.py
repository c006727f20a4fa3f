"""5.x-style groups in the simulator (issue 20, item 7): pop with an invisible time,
server-side attempts and DLQ, under the same invariants as 4.x groups; planted bugs
are caught."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.broker.retry_lifecycle import ROCKETMQ5_UNORDERED_INTERVALS_MS
from rocketmq_emulator.client_sdk.simulation import (ConsumerRestart, GroupSpec, Scenario, Simulation, WriteOffWindow,
                                                     run_simulation)
from rocketmq_emulator.client_sdk.simulation import pop_consumer
from rocketmq_emulator.client_sdk.simulation.scenario import ScenarioError
from rocketmq_emulator.client_sdk.simulation.simulator import START_MS

from .conftest import W1, small as small_4x

EIGHT_HOURS = 8 * 3_600_000     # a 5.x poison message ends 6 h 46 min after its first delivery


def small(**kw) -> Scenario:
    kw.setdefault("settle_ms", EIGHT_HOURS)
    return small_4x(**kw)


def five(**kw) -> GroupSpec:
    return GroupSpec(protocol="5.x", **{**W1, **kw})


def kinds(result):
    return {v.invariant for v in result.violations}


def test_the_w1_pattern_walks_the_5x_retry_table_into_the_dlq(store_dir):
    # the 17th delivery's failure is nacked for 2 h too, then moved: 6 h 46 min in all
    result = run_simulation(small(groups=(five(),), duration_ms=60_000), store_dir)
    assert result.ok, [str(v) for v in result.violations]
    s = result.summary()
    # 200 messages: 2 poison (17 deliveries each), 20 fail once (2 each), 178 once
    assert result.deliveries == 2 * 17 + 20 * 2 + 178
    assert (s["produced"], s["succeeded"], s["dead_lettered"]) == (200, 198, 2)
    assert s["send_backs"] == 2 * 17 + 20            # each redelivery is a stored copy, plus the DLQ moves
    # the poison message's copies: %RETRY%<group>+<topic>, reconsume 1..16, each stored one
    # retry interval after the one before (the invisible time the failure left it)
    from rocketmq_emulator.store import MessageStore, StoreConfig
    store = MessageStore(store_dir, StoreConfig())
    try:
        heads = [h for h in store.heads() if h.topic.startswith(("%RETRY%", "%DLQ%"))]
        topics = {h.topic for h in heads}
        assert topics == {"%RETRY%SimGroup+SimTopic", "%DLQ%SimGroup"}
        records = [store.look_message_by_offset(h.commit_log_offset) for h in heads]
    finally:
        store.close()
    poison = sorted((r for r in records if r.body.startswith(b"00000000|")), key=lambda r: r.store_timestamp)
    assert [r.reconsume_times for r in poison] == list(range(1, 17)) + [18]   # the DLQ copy: one above 4.x
    first_delivery = START_MS
    gaps = [b.store_timestamp - a.store_timestamp for a, b in zip([None] + poison[:-1], poison) if a]
    assert gaps == list(ROCKETMQ5_UNORDERED_INTERVALS_MS[1:]) + [ROCKETMQ5_UNORDERED_INTERVALS_MS[-1]]
    assert poison[0].store_timestamp - first_delivery >= ROCKETMQ5_UNORDERED_INTERVALS_MS[0]
    assert all(r.properties["ORIGIN_MESSAGE_ID"] == poison[0].properties["ORIGIN_MESSAGE_ID"] for r in poison)


def test_every_fault_keeps_every_invariant(store_dir):
    scenario = small(messages=300, groups=(five(batch_size=8, consumers=2, fail_probability=0.03,
                                                slow_probability=0.03, invisible_seconds=30),),
                     crashes_ms=(2_000, 20 * 60_000), write_off=(WriteOffWindow(1_000, 4_000),),
                     consumer_restarts=(ConsumerRestart("SimGroup", 60_000, 30_000),))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and result.crashes == 2 and result.refused_sends > 0
    s = result.summary()
    assert s["produced"] == 300 and s["dead_lettered"] >= 3
    assert s["succeeded"] + s["dead_lettered"] == 300


def test_4x_and_5x_groups_on_one_topic_each_keep_their_books(store_dir):
    scenario = small(groups=(GroupSpec(name="Old", **W1), five(name="New")))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    s = result.summary()
    assert s["produced"] == 200 and s["dead_lettered"] == 4 and s["succeeded"] == 2 * 198
    assert result.per_group == {"Old": {"dead_lettered": 2}, "New": {"dead_lettered": 2}}


def test_a_redelivery_before_its_invisible_time_is_caught(store_dir, monkeypatch):
    # planted bug: the consumer asks for 1 s where the retry table says 10 s, 30 s, ...
    monkeypatch.setattr(pop_consumer, "rocketmq5_retry_interval_ms", lambda attempt: 1000)
    result = Simulation(small(groups=(five(),)), store_dir).run()
    delays = [v for v in result.violations if v.invariant == "retry_delay"]
    assert delays and "it is due after 10000 ms" in delays[0].message


def test_a_dlq_one_attempt_early_is_caught(store_dir, monkeypatch):
    # planted bug: the group's retryMaxTimes one below what the consumer was told
    start = pop_consumer.PopConsumer.start

    def start_with_a_lower_max(self):
        start(self)
        core = self.transport.core()
        from dataclasses import replace
        core.update_group(replace(core.groups.find(self.spec.name), retry_max_times=2))
        return self

    monkeypatch.setattr(pop_consumer.PopConsumer, "start", start_with_a_lower_max)
    result = Simulation(small(groups=(five(max_reconsume_times=3),)), store_dir).run()
    attempts = [v for v in result.violations if v.invariant == "attempts"]
    assert attempts and "expected 0..3" in attempts[0].message


def test_5x_fifo_groups_and_bad_options_are_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(ScenarioError, match="5.x FIFO groups are not simulated"):
        Scenario(groups=(five(orderly=True, max_reconsume_times=3),))
    with pytest.raises(ScenarioError, match="protocol must be one of 4.x, 5.x"):
        Scenario(groups=(GroupSpec(protocol="6.x"),))
    rc = main(["simulate", "--protocol", "5.x", "--invisible-time", "1500ms", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and "whole seconds" in err


def test_the_cli_runs_a_5x_group(tmp_path, capsys):
    rc = main(["simulate", "--protocol", "5.x", "--messages", "300", "--pattern", "w1", "--invisible-time", "45s",
               "--slow-probability", "0.05", "--crash-at", "2m", "--out", str(tmp_path / "o"), "--json", "--quiet"])
    printed = json.loads(capsys.readouterr().out)
    assert rc == 0 and printed["invariant_violations"] == 0 and printed["settled"]
    assert printed["produced"] == 300 and printed["dead_lettered"] == 3
    assert printed["succeeded"] + printed["dead_lettered"] == 300


def test_the_same_seed_writes_the_same_bytes_with_5x_groups(tmp_path):
    from .conftest import commit_log_bytes

    scenario = small(messages=150, groups=(five(fail_probability=0.05, slow_probability=0.05),),
                     crashes_ms=(90_000,))
    run_simulation(scenario, tmp_path / "a")
    run_simulation(scenario, tmp_path / "b")
    assert commit_log_bytes(tmp_path / "a") == commit_log_bytes(tmp_path / "b")
