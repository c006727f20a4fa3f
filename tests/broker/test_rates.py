"""The core's rates over time (broker/views/rates.py, issue 39 item 3): per second of the
broker's clock, per topic and group, in a ring of fixed size — produced, consumed,
retried and dead-lettered counted where the core stores and commits, a virtual clock's
seconds on the x axis, and memory bounded whatever the traffic."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.events import EventKind
from rocketmq_emulator.broker.views.rates import OTHER, RateRing, classify_topic
from rocketmq_emulator.client_sdk import CONSUME_SUCCESS, RECONSUME_LATER, EmbeddedBroker, Message

T0 = 1_704_067_200_000          # the virtual clock's start (2024-01-01T00:00:00Z)


def per_second(core, kind, group="", topic=None, seconds=600):
    first, series = core.rates.window(core.clock.now_ms(), seconds)
    out = {}
    for (k, g, t), counts in series.items():
        if k == kind and g == group and (topic is None or t == topic):
            for i, n in enumerate(counts):
                if n:
                    out[first + i] = out.get(first + i, 0) + n
    return out


def test_a_poison_message_counts_as_produced_then_retried_at_each_deadline_then_dead_lettered():
    broker = EmbeddedBroker()
    broker.create_topic("Orders", 1)
    broker.push_consumer("billing", "Orders", listener=lambda msgs, ctx: RECONSUME_LATER if msgs[0].body == b"poison"
                         else CONSUME_SUCCESS, max_reconsume_times=2)
    producer = broker.producer("pg")
    producer.send(Message("Orders", b"poison"))
    for _ in range(3):
        producer.send(Message("Orders", b"fine"))
    broker.advance("2m")                        # levels 3 (10 s) and 4 (30 s), then the DLQ
    core = broker.core
    s0 = T0 // 1000
    assert per_second(core, "produced", topic="Orders") == {s0: 4}
    # a send-back at each failure, on the broker's clock: now, 10 s later, 40 s later (the DLQ)
    assert per_second(core, "retried", "billing", "Orders") == {s0: 1, s0 + 10: 1}
    assert per_second(core, "dead_lettered", "billing", "Orders") == {s0 + 40: 1}
    consumed = per_second(core, "consumed", "billing")
    assert sum(consumed.values()) >= 4            # the four originals, then the retry copies
    broker.close()


def test_the_ring_keeps_the_last_seconds_and_a_clock_jump_costs_nothing():
    ring = RateRing(seconds=5)
    for sec in range(10):
        ring.stored(T0 + sec * 1000, EventKind.STORED, "Orders", {}, None)
    first, series = ring.window(T0 + 9_000)
    assert first == T0 // 1000 + 5 and series[("produced", "", "Orders")] == [1, 1, 1, 1, 1]
    ring.stored(T0 + 3_600_000, EventKind.STORED, "Orders", {}, None)       # an hour later
    first, series = ring.window(T0 + 3_600_000)
    assert series[("produced", "", "Orders")] == [0, 0, 0, 0, 1]
    assert ring.window(T0 + 3_700_000)[1] == {}                            # nothing in the last 5 s


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([0, 1, 2, 4, 5, 6, 11, 3600]), st.integers(1, 3)), max_size=30),
       st.integers(1, 8))
def test_rates_over_clock_jumps_are_what_a_plain_count_per_second_says(steps, seconds):
    """Counts written as the clock moves in steps and jumps (an hour, past the whole
    ring, exactly the ring's size, within it): every window reads what a plain dict of
    counts per second says for the seconds the ring keeps, 0 elsewhere."""
    ring = RateRing(seconds=seconds)
    model: dict[int, int] = {}
    now = T0
    for forward, n in steps:
        now += forward * 1000
        for _ in range(n):
            ring.stored(now, EventKind.STORED, "Orders", {}, None)
        model[now // 1000] = model.get(now // 1000, 0) + n
        for look in (now, now + 2000, now + seconds * 1000):
            first, series = ring.window(look)
            expect = [model.get(t, 0) for t in range(first, first + seconds)]
            assert series.get(("produced", "", "Orders"), [0] * seconds) == expect


def test_memory_is_bounded_by_the_series_cap_whatever_the_names():
    ring = RateRing(seconds=60, max_series=10)
    for i in range(1000):
        ring.stored(T0, EventKind.STORED, f"topic-{i}", {}, None)
    _, series = ring.window(T0 + 1000)
    assert ring.series_count() == 10 + 1               # and one "(other)" of the kind, where the rest counts
    assert series[("produced", OTHER, OTHER)] == [0] * 58 + [990, 0]
    assert sum(sum(c) for c in series.values()) == 1000


def test_a_delayed_message_come_due_is_not_produced_twice_and_commits_count_as_consumed():
    core = BrokerCore.in_memory()
    ring = core.rates
    ring.stored(T0, EventKind.STORED, "Orders", {}, None)
    ring.stored(T0 + 5000, EventKind.REDELIVERED, "Orders", {}, None)
    core.offsets.commit("billing", "Orders", 0, 0)          # the first commit: nothing read before it
    core.offsets.commit("billing", "Orders", 0, 7)
    _, series = ring.window(T0 + 5000)
    assert sum(series[("produced", "", "Orders")]) == 1
    assert sum(series[("consumed", "billing", "Orders")]) == 7


def test_letter_topics_count_for_their_group():
    topics = ["pulsar|public|default|orders", "pulsar|public|default|orders-billing-DLQ"]
    assert classify_topic("pulsar|public|default|orders-billing-DLQ", topics) == \
        ("dead_lettered", "billing", "pulsar|public|default|orders")
    assert classify_topic("pulsar|public|default|orders-billing-RETRY", topics)[:2] == ("retried", "billing")
    assert classify_topic("%RETRY%billing", topics) == ("retried", "billing", "")
    assert classify_topic("Orders", topics) == ("produced", "", "Orders")


def test_a_clock_advance_is_kept_as_a_jump_the_charts_can_mark():
    """The seconds a `clock advance` skips are said (the dashboard's chart shades them), not
    drawn as a lull; the ring keeps the last few jumps, and a move within a second is none."""
    core = BrokerCore.in_memory()
    start = core.clock.now_ms()
    core.advance_clock(3_600_000)
    core.advance_clock(400)                                   # within one second: no jump
    end = core.clock.now_ms()
    assert core.rates.jumps(start // 1000, end // 1000) == [(start, start + 3_600_000)]
    assert core.rates.jumps(end // 1000 - 299, end // 1000) == [(start, start + 3_600_000)]   # it lands in the window
    assert core.rates.jumps(end // 1000 + 1, end // 1000 + 300) == []
    ring = RateRing(max_jumps=3)
    for i in range(5):
        ring.jumped(T0 + i * 10_000, T0 + i * 10_000 + 5_000)
    assert [a for a, _ in ring.jumps(0, 2 ** 40)] == [T0 + 20_000, T0 + 30_000, T0 + 40_000]
