"""Pulsar-style groups in the simulator (issue 21, item 9): a Shared subscription with the
client's negative acks, ack timeout and dead-letter policy on the core's subscriptions,
under the same invariants as 4.x and 5.x groups; planted bugs are caught."""
from __future__ import annotations

import json

import pytest

from rocketmq_emulator.broker.cli.main import main
from rocketmq_emulator.client_sdk.simulation import (ConsumerRestart, GroupSpec, ProducerSpec, Scenario, Simulation,
                                                     TopicSpec, WriteOffWindow, run_simulation)
from rocketmq_emulator.client_sdk.simulation import pulsar_consumer
from rocketmq_emulator.client_sdk.simulation.scenario import ScenarioError
from rocketmq_emulator.client_sdk.simulation.simulator import START_MS

from .conftest import W1, small as small_4x

ONE_LOG = (TopicSpec(queues=1),)


def small(**kw) -> Scenario:
    kw.setdefault("topics", ONE_LOG)
    return small_4x(**kw)


def pulsar(**kw) -> GroupSpec:
    return GroupSpec(protocol="pulsar", **{**W1, "nack_delay_seconds": 30, **kw})


def test_the_w1_pattern_redelivers_with_counts_and_dead_letters_after_max_redeliveries(store_dir):
    result = run_simulation(small(groups=(pulsar(max_reconsume_times=5),)), store_dir)
    assert result.ok, [str(v) for v in result.violations]
    s = result.summary()
    # 200 messages: 2 poison (6 deliveries: counts 0..5), 20 fail once (2 each), 178 once
    assert result.deliveries == 2 * 6 + 20 * 2 + 178
    assert (s["produced"], s["succeeded"], s["dead_lettered"], s["send_backs"]) == (200, 198, 2, 2)
    assert result.per_group == {"SimGroup": {"dead_lettered": 2, "redeliveries": 2 * 5 + 20,
                                             "redelivered_messages": 22, "max_redelivery_count": 5}}
    # nothing but the originals and the two dead letters is stored: redeliveries are no records
    from rocketmq_emulator.store import MessageStore, StoreConfig
    store = MessageStore(store_dir, StoreConfig())
    try:
        topics = {h.topic for h in store.heads()}
        dead = [store.look_message_by_offset(h.commit_log_offset) for h in store.heads()
                if h.topic == "SimTopic-SimGroup-DLQ"]
        originals = {h.queue_offset: h.offset_msg_id for h in store.heads() if h.topic == "SimTopic"}
    finally:
        store.close()
    assert topics == {"SimTopic", "SimTopic-SimGroup-DLQ"}
    assert [(d.body[:9], d.reconsume_times, d.properties["REAL_TOPIC"]) for d in dead] == \
        [(b"00000000|", 6, "SimTopic"), (b"00000100|", 6, "SimTopic")]
    assert [d.properties["ORIGIN_MESSAGE_ID"] for d in dead] == [originals[0], originals[100]]
    # the poison message: 5 nack delays of 30 s after its first delivery, then the move
    assert dead[0].store_timestamp - START_MS >= 6 * 30_000


def test_every_fault_keeps_every_invariant(store_dir):
    scenario = small(messages=300, groups=(pulsar(consumers=2, fail_probability=0.03, slow_probability=0.03,
                                                  ack_timeout_seconds=20),),
                     crashes_ms=(2_000, 20 * 60_000), write_off=(WriteOffWindow(1_000, 4_000),),
                     consumer_restarts=(ConsumerRestart("SimGroup", 60_000, 30_000),))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    assert result.settled and result.crashes == 2 and result.refused_sends > 0
    s = result.summary()
    assert s["produced"] == 300 and s["dead_lettered"] >= 3
    assert s["succeeded"] + s["dead_lettered"] == 300


def test_4x_5x_and_pulsar_groups_on_one_topic_each_keep_their_books(store_dir):
    scenario = small(groups=(GroupSpec(name="Old", **W1), GroupSpec(name="New", protocol="5.x", **W1),
                             pulsar(name="Pulse")), settle_ms=8 * 3_600_000)
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    s = result.summary()
    assert s["produced"] == 200 and s["dead_lettered"] == 6 and s["succeeded"] == 3 * 198
    assert {g: v["dead_lettered"] for g, v in result.per_group.items()} == {"Old": 2, "New": 2, "Pulse": 2}


def test_a_redelivery_before_its_nack_delay_is_caught(store_dir, monkeypatch):
    # planted bug: the consumer sends a negative ack back after 1 s, not the 30 s it was given
    later = pulsar_consumer.PulsarConsumer._later
    monkeypatch.setattr(pulsar_consumer.PulsarConsumer, "_later", lambda self, ms, d: later(self, 1000, d))
    result = Simulation(small(groups=(pulsar(),)), store_dir).run()
    delays = [v for v in result.violations if v.invariant == "retry_delay"]
    assert delays and "it is due after 30000 ms" in delays[0].message


def test_a_dead_letter_one_redelivery_early_is_caught(store_dir, monkeypatch):
    # planted bug: the client's threshold one below the group's max_redeliver_count
    start = pulsar_consumer.PulsarConsumer.start

    def start_with_a_lower_max(self):
        self.max_redeliver_count -= 1
        return start(self)

    monkeypatch.setattr(pulsar_consumer.PulsarConsumer, "start", start_with_a_lower_max)
    result = Simulation(small(groups=(pulsar(max_reconsume_times=3),)), store_dir).run()
    attempts = [v for v in result.violations if v.invariant == "attempts"]
    assert attempts and "expected 0..3" in attempts[0].message


def test_a_broker_that_forgets_to_count_is_caught(store_dir, monkeypatch):
    # planted bug: redeliveries not counted, so the client never sees the maximum: the
    # poison messages never end (they are reported lost when the run stops)
    from rocketmq_emulator.broker.pulsar_model.cursors import SubscriptionService
    back = SubscriptionService._back
    monkeypatch.setattr(SubscriptionService, "_back", lambda self, cursor, offsets, count=True:
                        back(self, cursor, offsets, count=False))
    result = Simulation(small(groups=(pulsar(),), settle_ms=3_600_000), store_dir).run()
    assert not result.settled and "lost" in {v.invariant for v in result.violations}


def test_pulsar_groups_refuse_what_the_client_or_a_topic_cannot_do(tmp_path, capsys):
    with pytest.raises(ScenarioError, match="a Pulsar topic is one log; give topic SimTopic 1 queue, not 4"):
        Scenario(groups=(pulsar(),))
    with pytest.raises(ScenarioError, match="0 .off. or at least 10"):
        Scenario(topics=ONE_LOG, groups=(pulsar(ack_timeout_seconds=5),))
    with pytest.raises(ScenarioError, match="come back only through an ack timeout"):
        Scenario(topics=ONE_LOG, groups=(pulsar(slow_probability=0.1),))
    with pytest.raises(ScenarioError, match="at least 1"):
        Scenario(topics=ONE_LOG, groups=(pulsar(max_reconsume_times=0),))
    with pytest.raises(ScenarioError, match="Shared subscriptions"):
        Scenario(topics=ONE_LOG, groups=(pulsar(orderly=True, max_reconsume_times=2),))
    rc = main(["simulate", "--protocol", "pulsar", "--ack-timeout", "9s", "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and "at least 10" in err


def test_the_cli_runs_a_pulsar_group(tmp_path, capsys):
    rc = main(["simulate", "--protocol", "pulsar", "--messages", "300", "--pattern", "w1", "--nack-delay", "10s",
               "--ack-timeout", "30s", "--slow-probability", "0.05", "--crash-at", "2m", "--out",
               str(tmp_path / "o"), "--json", "--quiet"])
    printed = json.loads(capsys.readouterr().out)
    assert rc == 0 and printed["invariant_violations"] == 0 and printed["settled"]
    assert printed["produced"] == 300 and printed["dead_lettered"] == 3
    assert printed["succeeded"] + printed["dead_lettered"] == 300
    assert printed["groups"]["SimGroup"]["max_redelivery_count"] == 16


def test_the_same_seed_writes_the_same_bytes_with_pulsar_groups(tmp_path):
    from .conftest import commit_log_bytes

    scenario = small(messages=150, groups=(pulsar(fail_probability=0.05, slow_probability=0.05,
                                                  ack_timeout_seconds=15),), crashes_ms=(90_000,))
    run_simulation(scenario, tmp_path / "a")
    run_simulation(scenario, tmp_path / "b")
    assert commit_log_bytes(tmp_path / "a") == commit_log_bytes(tmp_path / "b")


LETTERS = "pulsar|public|default|Letters"


def lettered(mode: str, **kw) -> Scenario:
    kw.setdefault("groups", (pulsar(topic=LETTERS, retry_letters=mode, max_reconsume_times=4),))
    return small_4x(topics=(TopicSpec(LETTERS, 1),), producers=(ProducerSpec(topic=LETTERS),), **kw)


@pytest.mark.parametrize("mode, retry_gaps_s", [("increasing", [1, 5, 10, 30]), ("level", [10] * 4),
                                                ("delay", [7] * 4)])
def test_retry_letter_groups_walk_their_mode_into_the_dlq(store_dir, mode, retry_gaps_s):
    """Seed 000's three reconsume_later modes through the SDK's Pulsar consumer: each
    retry is a new copy in <topic>-<subscription>-RETRY, due after its mode's delay; the
    copy after the 4th retry goes to the DLQ."""
    scenario = lettered(mode, groups=(pulsar(topic=LETTERS, retry_letters=mode, max_reconsume_times=4,
                                             retry_level=3, retry_delay_seconds=7),))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    s = result.summary()
    assert (s["produced"], s["succeeded"], s["dead_lettered"]) == (200, 198, 2)
    assert s["send_backs"] == 2 * 4 + 20 + 2             # the retry letters and the dead letters
    from rocketmq_emulator.store import MessageStore, StoreConfig
    store = MessageStore(store_dir, StoreConfig())
    try:
        poison = sorted((store.look_message_by_offset(h.commit_log_offset) for h in store.heads()
                         if h.topic == LETTERS + "-SimGroup-RETRY"), key=lambda r: r.store_timestamp)
        poison = [r for r in poison if r.body.startswith(b"00000000|")]
        dead = [h for h in store.heads() if h.topic == LETTERS + "-SimGroup-DLQ"]
    finally:
        store.close()
    assert [r.properties["RECONSUMETIMES"] for r in poison] == ["1", "2", "3", "4"] and len(dead) == 2
    delays = [int(r.properties["DELAY_TIME"]) // 1000 for r in poison]
    assert delays == retry_gaps_s


def test_retry_letter_groups_keep_every_invariant_through_faults(store_dir):
    scenario = lettered("increasing", messages=300, crashes_ms=(2_000, 20 * 60_000),
                        write_off=(WriteOffWindow(1_000, 4_000), WriteOffWindow(30_000, 90_000)),
                        groups=(pulsar(topic=LETTERS, retry_letters="increasing", consumers=2,
                                       fail_probability=0.05),),
                        consumer_restarts=(ConsumerRestart("SimGroup", 60_000, 30_000),))
    result = run_simulation(scenario, store_dir)
    assert result.ok, [str(v) for v in result.violations]
    s = result.summary()
    assert result.settled and s["produced"] == 300 and s["succeeded"] + s["dead_lettered"] == 300


def test_a_retry_letter_sooner_than_its_mode_is_caught(store_dir, monkeypatch):
    # planted bug: the application retries at level 1 (1 s) where the group says level 3 (10 s)
    from rocketmq_emulator.client_sdk.pulsar_client.consumer import Consumer
    reconsume = Consumer.reconsume_later
    monkeypatch.setattr(Consumer, "reconsume_later", lambda self, m, delay_ms=None, level=None:
                        reconsume(self, m, level=1))
    result = Simulation(lettered("level", groups=(pulsar(topic=LETTERS, retry_letters="level", retry_level=3),)),
                        store_dir).run()
    delays = [v for v in result.violations if v.invariant == "retry_delay"]
    assert delays and "it is due after 10000 ms" in delays[0].message


def test_retry_letter_groups_need_a_pulsar_topic_and_a_known_mode(tmp_path, capsys):
    with pytest.raises(ScenarioError, match="name topic SimTopic pulsar"):
        Scenario(topics=ONE_LOG, groups=(pulsar(retry_letters="increasing"),))
    with pytest.raises(ScenarioError, match="retry_letters must be one of"):
        lettered("sometimes")
    with pytest.raises(ScenarioError, match="retry_delay_seconds must be <= 864000"):
        lettered("delay", groups=(pulsar(topic=LETTERS, retry_letters="delay", retry_delay_seconds=900_000),))
    rc = main(["simulate", "--protocol", "pulsar", "--retry-letters", "level", "--retry-level", "19",
               "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.count("\n") == 0 and "retry_level must be <= 18" in err


def test_the_cli_runs_a_retry_letter_group(tmp_path, capsys):
    rc = main(["simulate", "--protocol", "pulsar", "--retry-letters", "increasing", "--messages", "300",
               "--pattern", "w1", "--crash-at", "2m", "--out", str(tmp_path / "o"), "--json", "--quiet"])
    printed = json.loads(capsys.readouterr().out)
    assert rc == 0 and printed["invariant_violations"] == 0 and printed["settled"]
    assert (printed["produced"], printed["dead_lettered"], printed["succeeded"]) == (300, 3, 297)


def test_without_the_pulsar_extra_a_retry_letter_group_is_one_clear_line(monkeypatch):
    import rocketmq_emulator.broker.cli.common as cli_common
    monkeypatch.setattr(cli_common, "missing_extra", lambda extra, *m: f"needs the {extra} extra, which is not "
                                                                        f"installed: pip install x")
    with pytest.raises(ScenarioError, match="runs the SDK's Pulsar client, which needs the pulsar extra"):
        lettered("increasing")
    assert Scenario(topics=ONE_LOG, groups=(pulsar(),)).groups[0].protocol == "pulsar"   # nack groups need none
