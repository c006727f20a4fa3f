"""Skipping idle spans (client_sdk/transport/idle_skip.py): carrying settled periodic
work forward must leave exactly what running it would — same store bytes, same delivery
times — and must never carry work that would have changed something."""
from __future__ import annotations

import hashlib
import logging

import pytest
from hypothesis import given, settings

from rocketmq_emulator.broker.fronts.remoting.protocol import RequestCode
from rocketmq_emulator.client_sdk import ConsumeConcurrentlyStatus, ConsumeOrderlyStatus, EmbeddedBroker, Message
from rocketmq_emulator.client_sdk.simulation import GroupSpec, Scenario, Simulation
from rocketmq_emulator.client_sdk.simulation.strategies import scenarios

OK = ConsumeConcurrentlyStatus.CONSUME_SUCCESS
LATER = ConsumeConcurrentlyStatus.RECONSUME_LATER


def store_files(d) -> dict[str, str]:
    return {str(p.relative_to(d)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(d.rglob("*")) if p.is_file()}


def run_both(scenario, tmp):
    out = {}
    for skip in (False, True):
        d = tmp / ("skip" if skip else "run")
        sim = Simulation(scenario, d, skip_idle=skip)
        result = sim.run()
        out[skip] = (result, store_files(d), sim.embedded.hub.skipper)
    return out


@settings(max_examples=12)
@given(scenarios(max_messages=80))
def test_a_run_with_skipping_writes_what_a_run_without_writes(tmp_path_factory, scenario):
    logging.getLogger("client_sdk").setLevel(logging.ERROR)
    runs = run_both(scenario, tmp_path_factory.mktemp("idle"))
    (plain, plain_files, none), (skipped, skipped_files, skipper) = runs[False], runs[True]
    assert none is None and skipper is not None
    assert skipped_files == plain_files                       # commit log, queues, offsets, checkpoint
    assert (skipped.deliveries, skipped.accepted, skipped.settled, skipped.virtual_ms) == \
        (plain.deliveries, plain.accepted, plain.settled, plain.virtual_ms)
    assert [str(v) for v in skipped.violations] == [str(v) for v in plain.violations]


def test_six_idle_hours_with_a_crash_and_the_w1_ladder_match_and_are_carried(tmp_path):
    w1 = dict(poison_every=10, fail_once_every=10, fail_once_remainder=5)
    scenario = Scenario(seed=7, messages=60, duration_ms=6 * 3600_000, crashes_ms=(2 * 3600_000,),
                        groups=(GroupSpec(**w1), GroupSpec(name="Ordered", orderly=True, max_reconsume_times=2,
                                                           poison_every=20)))
    runs = run_both(scenario, tmp_path)
    assert runs[True][1] == runs[False][1]
    assert runs[True][0].summary()["dead_lettered"] == runs[False][0].summary()["dead_lettered"] > 0
    # six hours of two groups' periodic work: thousands of runs carried, not executed
    assert runs[True][2].carried > 5000


def delivery_log(skip: bool):
    """A message failing every time: when each attempt arrived, over the whole ladder."""
    b = EmbeddedBroker(skip_idle=skip)
    b.create_topic("T", 2)
    seen = []

    def listener(msgs, ctx):
        seen.extend((b.now_ms, m.reconsume_times, m.queue_offset) for m in msgs)
        return LATER

    b.push_consumer("G", "T", listener=listener, max_reconsume_times=16)
    p = b.producer("P")
    b.advance("1h")                                   # idle first: nothing to consume
    p.send(Message("T", b"x"))
    b.advance("6h")
    return b, seen


def test_retries_arrive_at_the_same_instants_with_and_without_skipping():
    plain, plain_seen = delivery_log(False)
    skip, skip_seen = delivery_log(True)
    assert len(plain_seen) == 17 and skip_seen == plain_seen
    assert len(skip.dlq_messages("G")) == 1
    assert [m.body for m in skip.dlq_messages("G")] == [m.body for m in plain.dlq_messages("G")] == [b"x"]
    assert skip.hub.skipper.carried > 1000 and plain.hub.skipper is None


def test_an_observer_sees_every_request_so_nothing_is_skipped_while_one_is_attached():
    b = EmbeddedBroker()
    b.create_topic("T", 2)
    b.push_consumer("G", "T", listener=lambda msgs, ctx: OK)
    pulls = []
    stop = b.hub.observe(lambda t, cmd: pulls.append(b.now_ms) if cmd.code == RequestCode.PULL_MESSAGE else None)
    b.advance("1h")
    # 3 queues (2 + the retry queue), a held pull expiring every 15 s on each
    assert len(pulls) == 3 * 240
    stop()
    carried = b.hub.skipper.carried
    b.advance("1h")
    assert len(pulls) == 3 * 240 and b.hub.skipper.carried > carried


def test_offsets_reach_the_broker_before_anything_is_carried():
    """Right after consuming, the broker has not got the new offsets: the pull held with
    the old commit offset and the 5 s offset job must run for real first."""
    b = EmbeddedBroker()
    b.create_topic("T", 1)
    b.push_consumer("G", "T", listener=lambda msgs, ctx: OK)
    p = b.producer("P")
    for i in range(5):
        p.send(Message("T", b"m%d" % i))
    b.run_until_idle()
    b.advance("2h")
    assert b.core.store.query_offset("G", "T", 0) == 5
    assert b.hub.skipper.carried > 0


def test_orderly_locks_are_renewed_through_a_skipped_span():
    b = EmbeddedBroker()
    b.create_topic("T", 2)
    got = []
    c = b.push_consumer("G", "T", orderly=True,
                        listener=lambda msgs, ctx: got.extend(m.body for m in msgs) or ConsumeOrderlyStatus.SUCCESS)
    b.advance("3h")
    assert b.hub.skipper.carried > 100
    now = b.now_ms
    for mq, pq in c.process_queues.items():
        assert b.core.locks.holder("G", (mq.topic, mq.broker_name, mq.queue_id), now) == c.client_id
        assert pq.locked and now - pq.last_lock_timestamp < 20_000
    b.producer("P").send(Message("T", b"after"))
    b.run_until_idle()
    assert got == [b"after"]


def test_a_second_hub_on_the_same_loop_turns_skipping_off():
    from rocketmq_emulator.client_sdk.transport.inprocess import InProcessBroker

    a = EmbeddedBroker()
    other = EmbeddedBroker(clock=a.clock)
    InProcessBroker(other.core, a.runtime)
    assert a.runtime.idle_skipper is not a.hub.skipper
    a.create_topic("T", 1)
    a.push_consumer("G", "T", listener=lambda msgs, ctx: OK)
    a.advance("1h")
    assert a.hub.skipper.carried == 0


@pytest.mark.rocketmq_broker(skip_idle=False)
def test_the_broker_marker_turns_skipping_off(rocketmq_broker, rocketmq_consumer, time_travel):
    rocketmq_broker.create_topic("T", 1)
    rocketmq_consumer("G", "T", listener=lambda msgs, ctx: OK)
    time_travel("1h")
    assert rocketmq_broker.hub.skipper is None and rocketmq_broker.runtime.idle_skipper is None


def queues_grown_log(skip: bool):
    """A topic given more queues in the middle of idle hours: what was consumed, when."""
    b = EmbeddedBroker(skip_idle=skip)
    b.create_topic("T", 2)
    got = []
    b.push_consumer("G", "T", listener=lambda msgs, ctx: got.extend((b.now_ms, m.queue_id, m.body) for m in msgs)
                    or OK)
    b.advance("1h")
    b.create_topic("T", 4)                  # the next route poll finds 4 queues; the rebalance takes them
    b.advance("1h")
    p = b.producer("P")
    for i in range(8):
        p.send(Message("T", b"m%d" % i))
    b.advance("1m")
    return b, got


def test_a_route_that_changes_during_idle_hours_is_polled_as_without_skipping():
    """The skipper parses each topic's route again only when the core's changed: a
    stale parse would call the old route settled and carry the poll that finds the new
    queues."""
    plain, plain_got = queues_grown_log(False)
    skip, skip_got = queues_grown_log(True)
    assert sorted({q for _, q, _ in skip_got}) == [0, 1, 2, 3] and len(skip_got) == 8
    assert skip_got == plain_got
    assert skip.hub.skipper.carried > 1000
