"""Pulsar-style subscriptions on the core (broker/pulsar_model/cursors.py; reference
pulsar-protocol.md §5): permits, dispatch by subscription type, the cursor's mark-delete
position as the group's committed offset, redelivery counts."""
import pytest

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.notifications import DispatchReady
from rocketmq_emulator.broker.operations import SendOutcome, SendRequest
from rocketmq_emulator.broker.pulsar_model.cursors import SubscribeOutcome, SubType

T, G = "pulsar|public|default|t", "sub"


def broker(n=0):
    core = BrokerCore.in_memory()
    core.topics.create_system(T, 1, 6)
    for i in range(n):
        send(core, b"m%d" % i)
    return core


def send(core, body):
    assert core.send(SendRequest("", T, body, 0), core.connect()).outcome is SendOutcome.STORED


def bodies(ds):
    return [(d.record.body, d.redelivery_count) for d in ds]


def test_dispatch_follows_permits_and_acks_move_the_committed_offset_in_order():
    core = broker(4)
    subs = core.subscriptions
    assert subs.subscribe(G, T, "c1", SubType.EXCLUSIVE, earliest=True) is SubscribeOutcome.OK
    assert subs.dispatch(G, T) == []                       # no permits yet
    subs.flow("c1", 3)
    got = subs.dispatch(G, T)
    assert bodies(got) == [(b"m0", 0), (b"m1", 0), (b"m2", 0)]
    subs.ack("c1", [1])
    assert core.committed_offset(G, T, 0) == 0             # m0 still unacknowledged
    subs.ack("c1", [0])
    assert core.committed_offset(G, T, 0) == 2
    subs.flow("c1", 5)
    assert bodies(subs.dispatch(G, T)) == [(b"m3", 0)]
    send(core, b"m4")
    assert bodies(subs.dispatch(G, T)) == [(b"m4", 0)]
    subs.ack_cumulative("c1", 4)
    assert core.committed_offset(G, T, 0) == 5
    subs._check()


def test_a_new_subscription_starts_at_the_end_unless_earliest_and_an_old_one_where_it_was():
    core = broker(3)
    subs = core.subscriptions
    subs.subscribe("late", T, "a", SubType.SHARED)
    subs.flow("a", 10)
    assert subs.dispatch("late", T) == []
    send(core, b"new")
    assert bodies(subs.dispatch("late", T)) == [(b"new", 0)]
    core.store.commit_offset("old", T, 0, 2)
    subs.subscribe("old", T, "b", SubType.SHARED, earliest=True)
    subs.flow("b", 10)
    assert bodies(subs.dispatch("old", T)) == [(b"m2", 0), (b"new", 0)]


def test_redelivery_counts_grow_and_a_leaving_consumers_messages_go_to_the_next():
    core = broker(2)
    subs = core.subscriptions
    subs.subscribe(G, T, "c1", SubType.SHARED, earliest=True)
    subs.subscribe(G, T, "c2", SubType.SHARED)
    subs.flow("c1", 10)
    got = subs.dispatch(G, T)
    assert [d.consumer for d in got] == ["c1", "c1"]       # only c1 has permits
    subs.redeliver("c1", [0])                              # a negative ack
    again = subs.dispatch(G, T)
    assert bodies(again) == [(b"m0", 1)]
    subs.flow("c2", 10)
    subs.close("c1")                                       # m0 and m1 were still with c1
    moved = subs.dispatch(G, T)                            # a disconnect is not a redelivery: counts kept
    assert sorted(bodies(moved)) == [(b"m0", 1), (b"m1", 0)] and {d.consumer for d in moved} == {"c2"}
    subs.ack("c2", [0, 1])
    assert core.committed_offset(G, T, 0) == 2
    subs._check()


def test_shared_takes_turns_and_exclusive_refuses_a_second_consumer():
    core = broker(4)
    subs = core.subscriptions
    subs.subscribe(G, T, "a", SubType.SHARED, earliest=True)
    subs.subscribe(G, T, "b", SubType.SHARED)
    subs.flow("a", 5)
    subs.flow("b", 5)
    assert [d.consumer for d in subs.dispatch(G, T)] == ["a", "b", "a", "b"]
    assert subs.subscribe(G, T, "c", SubType.EXCLUSIVE) is SubscribeOutcome.TYPE_MISMATCH
    subs.subscribe("x", T, "e1", SubType.EXCLUSIVE)
    assert subs.subscribe("x", T, "e2", SubType.EXCLUSIVE) is SubscribeOutcome.CONSUMER_BUSY
    assert subs.subscribe("y", "pulsar|public|default|none", "z", SubType.SHARED) is SubscribeOutcome.TOPIC_NOT_EXIST


@pytest.mark.parametrize("in_memory", [False, True], ids=["saved", "pulsar-in-memory"])
def test_after_a_restart_acks_and_redelivery_counts_are_kept_unless_pulsars_behaviour_is_asked(tmp_path, in_memory):
    """Seed 003 names Pulsar's loss of the redelivery count on restart as a flaw: here the
    count and the individual acks survive; pulsarRedeliveryCountInMemory=true restores
    Pulsar's behaviour (both forgotten; nothing unacknowledged is lost either way)."""
    from rocketmq_emulator.broker.config import BrokerConfig
    from rocketmq_emulator.delay_scheduler import VirtualClock

    clock = VirtualClock()
    cfg = BrokerConfig.from_properties({"pulsarRedeliveryCountInMemory": str(in_memory).lower()})
    core = BrokerCore.open(tmp_path, clock, cfg)
    core.topics.create_system(T, 1, 6)
    for i in range(3):
        send(core, b"m%d" % i)
    subs = core.subscriptions
    subs.subscribe(G, T, "c", SubType.SHARED, earliest=True)
    subs.flow("c", 10)
    subs.dispatch(G, T)
    subs.ack("c", [0, 2])
    subs.redeliver("c")                                    # m1 once more: count 1
    core.flush()
    core.close()
    core = BrokerCore.open(tmp_path, clock, cfg)
    core.subscriptions.subscribe(G, T, "c", SubType.SHARED)
    core.subscriptions.flow("c", 10)
    got = bodies(core.subscriptions.dispatch(G, T))
    if in_memory:       # the committed offset kept m0; m2's individual ack and m1's count were in memory
        assert got == [(b"m1", 0), (b"m2", 0)]
    else:
        assert got == [(b"m1", 1)]
    core.subscriptions._check()


def test_delayed_messages_wait_for_shared_subscriptions_only_on_the_cores_clock():
    from rocketmq_emulator.broker.pulsar_model.cursors import DELIVER_AT_PROPERTY

    core = broker()
    now = core.clock.now_ms()
    assert core.send(SendRequest("", T, b"later", 0, {DELIVER_AT_PROPERTY: str(now + 3_600_000)}),
                     core.connect()).outcome is SendOutcome.STORED
    send(core, b"now")
    subs = core.subscriptions
    told = []
    core.subscribe(lambda n: told.append(n.topic), (DispatchReady,))
    subs.subscribe("shared", T, "s", SubType.SHARED, earliest=True)
    subs.subscribe("excl", T, "e", SubType.EXCLUSIVE, earliest=True)
    subs.flow("s", 1)
    subs.flow("e", 10)
    assert bodies(subs.dispatch("excl", T)) == [(b"later", 0), (b"now", 0)]      # Exclusive: at once
    assert bodies(subs.dispatch("shared", T)) == [(b"now", 0)]                     # the held one cost no permit
    assert core.next_deadline() == now + 3_600_000
    subs.ack("s", [1])
    assert core.committed_offset("shared", T, 0) == 0          # the delayed one is still the backlog
    core.advance_clock(3_599_999)
    assert told == []
    core.advance_clock(1)
    assert told == [T]
    subs.flow("s", 1)
    assert bodies(subs.dispatch("shared", T)) == [(b"later", 0)]
    subs.ack("s", [0])
    assert core.committed_offset("shared", T, 0) == 2
    subs._check()


def test_key_shared_sends_one_keys_messages_to_one_consumer_in_order_waiting_for_its_permits():
    from rocketmq_emulator.broker.pulsar_model.cursors import KEY_PROPERTY

    core = broker()
    keys = ["k0", "k1", "k2", "k3", "k4", "k5"]
    for i in range(30):
        key = keys[i % len(keys)]
        core.send(SendRequest("", T, b"%s-%02d" % (key.encode(), i), 0, {KEY_PROPERTY: key}), core.connect())
    subs = core.subscriptions
    subs.subscribe(G, T, "c1", SubType.KEY_SHARED, earliest=True)
    subs.subscribe(G, T, "c2", SubType.KEY_SHARED)
    subs.flow("c1", 3)
    subs.flow("c2", 3)
    got = subs.dispatch(G, T)                                  # few permits: keys wait for their consumer
    subs.flow("c1", 100)
    subs.flow("c2", 100)
    got += subs.dispatch(G, T)
    consumers_of, seen = {}, {}
    for d in got:
        key = d.record.body.split(b"-")[0]
        consumers_of.setdefault(key, set()).add(d.consumer)
        seen.setdefault(key, []).append(d.record.body)
    assert all(len(c) == 1 for c in consumers_of.values())    # one consumer per key
    assert {c for cs in consumers_of.values() for c in cs} == {"c1", "c2"}
    assert all(b == sorted(b) for b in seen.values())          # in order per key
    assert sum(len(b) for b in seen.values()) == 30
    subs._check()


def test_seek_resets_the_cursor_and_detaches_its_consumers():
    core = broker(5)
    subs = core.subscriptions
    subs.subscribe(G, T, "c", SubType.SHARED, earliest=True)
    subs.flow("c", 10)
    subs.dispatch(G, T)
    subs.ack("c", [0, 1, 2, 3, 4])
    assert core.committed_offset(G, T, 0) == 5
    assert subs.seek("c", 1) == ["c"]
    assert core.committed_offset(G, T, 0) == 1
    subs.subscribe(G, T, "c", SubType.SHARED)              # the client comes back
    subs.flow("c", 10)
    assert [b for b, _ in bodies(subs.dispatch(G, T))] == [b"m1", b"m2", b"m3", b"m4"]
    assert subs.last("c") == (4, 1)
    t3 = core.store.look_message_by_offset(core.store.queue_entry(T, 0, 3)[0]).born_timestamp
    assert subs.offset_at_time(T, t3) <= 3 and subs.offset_at_time(T, t3 + 10**9) == 5
    subs._check()


def test_pulsars_delivery_tick_lets_short_delays_through_and_releases_a_tick_early():
    from rocketmq_emulator.broker.config import BrokerConfig, ConfigError
    from rocketmq_emulator.broker.pulsar_model.cursors import DELIVER_AT_PROPERTY

    core = BrokerCore.in_memory(config=BrokerConfig.from_properties({"delayedDeliveryTickTimeMillis": "1000"}))
    core.topics.create_system(T, 1, 6)
    now = core.clock.now_ms()
    for body, delay in ((b"soon", 800), (b"later", 10_000)):
        core.send(SendRequest("", T, body, 0, {DELIVER_AT_PROPERTY: str(now + delay)}), core.connect())
    subs = core.subscriptions
    subs.subscribe(G, T, "s", SubType.SHARED, earliest=True)
    subs.flow("s", 10)
    assert bodies(subs.dispatch(G, T)) == [(b"soon", 0)]               # within a tick: not held
    core.advance_clock(9_000)                                           # a tick before it is due
    assert bodies(subs.dispatch(G, T)) == [(b"later", 0)]
    with pytest.raises(ConfigError, match="delayedDeliveryTickTimeMillis"):
        BrokerConfig.from_properties({"delayedDeliveryTickTimeMillis": "-1"})


def test_a_partly_acknowledged_batch_comes_back_with_its_mask_and_costs_only_what_is_left():
    core = broker(2)                                       # (entry 0 stands for a batch of 4)
    subs = core.subscriptions
    subs.subscribe(G, T, "c1", SubType.SHARED, earliest=True)
    subs.flow("c1", 10)
    assert [d.unacked_mask for d in subs.dispatch(G, T, cost=lambda rec: 4 if rec.body == b"m0" else 1)] == [None, None]
    subs.ack_part("c1", 0, 0b1101)                         # index 1 acknowledged
    subs.ack_part("c1", 0, 0b1011)                         # index 2: the AND is what is left
    assert subs._of["c1"].partial == {0: 0b1001} and core.committed_offset(G, T, 0) == 0
    subs.redeliver("c1", [0])
    [again] = subs.dispatch(G, T, cost=lambda rec: 4)
    assert (again.offset, again.unacked_mask, again.redelivery_count) == (0, 0b1001, 1)
    assert subs._consumer("c1").permits == 10 - 4 - 1 - 2  # the second time, two indexes' permits
    subs.ack_part("c1", 0, 0b0110)                         # the last two: the whole entry is acknowledged
    assert subs._of["c1"].partial == {} and core.committed_offset(G, T, 0) == 1
    subs._check()


def test_partial_acks_survive_a_restart(tmp_path):
    from rocketmq_emulator.delay_scheduler import VirtualClock

    clock = VirtualClock()
    core = BrokerCore.open(tmp_path, clock)
    core.topics.create_system(T, 1, 6)
    for i in range(2):
        send(core, b"m%d" % i)
    subs = core.subscriptions
    subs.subscribe(G, T, "c1", SubType.SHARED, earliest=True)
    subs.flow("c1", 10)
    subs.dispatch(G, T)
    subs.ack_part("c1", 1, 0b10)
    core.flush()
    core.close()
    core = BrokerCore.open(tmp_path, clock)
    core.subscriptions.subscribe(G, T, "c2", SubType.SHARED, earliest=True)
    core.subscriptions.flow("c2", 10)
    assert [(d.offset, d.unacked_mask) for d in core.subscriptions.dispatch(G, T)] == [(0, None), (1, 0b10)]
    core.close()


def test_unsubscribe_deletes_the_cursor_and_its_offsets_and_is_refused_while_others_are_attached(tmp_path):
    from rocketmq_emulator.delay_scheduler import VirtualClock

    clock = VirtualClock()
    core = BrokerCore.open(tmp_path, clock)
    core.topics.create_system(T, 1, 6)
    for i in range(3):
        send(core, b"m%d" % i)
    subs = core.subscriptions
    assert subs.unsubscribe("nobody") is SubscribeOutcome.NOT_SUBSCRIBED
    subs.subscribe(G, T, "a", SubType.SHARED, earliest=True)
    subs.subscribe(G, T, "b", SubType.SHARED)
    subs.flow("a", 10)
    subs.dispatch(G, T)
    subs.ack("a", [0, 2])
    subs.redeliver("a", [1])
    core.flush()
    assert subs.unsubscribe("a") is SubscribeOutcome.OTHER_CONSUMERS
    subs.close("b")
    assert subs.unsubscribe("a") is SubscribeOutcome.OK
    assert subs.cursors() == [] and core.store.query_offset(G, T, 0) == -1
    core.flush()
    core.close()
    core = BrokerCore.open(tmp_path, clock)                # nothing of it comes back after a restart
    assert core.store.query_offset(G, T, 0) == -1
    core.subscriptions.subscribe(G, T, "c", SubType.SHARED, earliest=True)
    core.subscriptions.flow("c", 10)
    assert bodies(core.subscriptions.dispatch(G, T)) == [(b"m0", 0), (b"m1", 0), (b"m2", 0)]
    core.close()


def test_a_preferred_failover_consumer_takes_over_and_gets_what_the_active_one_held():
    core = broker(2)
    subs = core.subscriptions
    subs.subscribe(G, T, "old", SubType.FAILOVER, earliest=True)
    subs.flow("old", 10)
    assert [d.consumer for d in subs.dispatch(G, T)] == ["old", "old"]
    subs.subscribe(G, T, "late", SubType.FAILOVER)           # same priority: waits behind
    assert subs.members("late") == (["old", "late"], "old")
    subs.subscribe(G, T, "vip", SubType.FAILOVER, priority=-1)
    assert subs.members("old") == (["vip", "old", "late"], "vip")
    subs.flow("vip", 10)
    assert bodies(subs.dispatch(G, T)) == [(b"m0", 0), (b"m1", 0)]   # sent again, count unchanged
    subs._check()
