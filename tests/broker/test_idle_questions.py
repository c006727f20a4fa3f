"""The core's typed methods idle skipping uses (client_sdk/transport/idle_skip.py): the
questions it asks before it carries an idle span (would a heartbeat change nothing? who
holds a queue's lock?) and the operations it carries the span with, told the time they
stand for (a pull sent again, held from then; locks renewed then; a held pull withdrawn)."""
from __future__ import annotations

from rocketmq_emulator.broker.notifications import PullReady
from rocketmq_emulator.broker.operations import ConsumerRegistration, PullRequest, Registration
from rocketmq_emulator.broker.rocketmq_model.groups import SubscriptionData

from .wire import WireClient

G = "G"


def _subscribed(topic: str, version: int = 1) -> SubscriptionData:
    return SubscriptionData(topic, sub_version=version)


def _registration(client_id="client-a", *, topics=("T",), version=1, consume_type="CONSUME_PASSIVELY",
                  producers=("PG",)) -> Registration:
    subs = tuple(_subscribed(t, version) for t in topics)
    return Registration(client_id, (ConsumerRegistration(G, consume_type, subscriptions=subs),), producers)


def test_registered_as_says_whether_registering_again_changes_nothing(core):
    WireClient(core).send("T", b"x")
    a, b = core.connect("10.0.0.1:1"), core.connect("10.0.0.2:2")
    reg = _registration()
    assert not core.registered_as(reg, a)                   # nothing registered yet
    core.register(reg, a)
    assert core.registered_as(reg, a)
    assert not core.registered_as(reg, b)                   # another connection: it would be added
    assert not core.registered_as(_registration("client-b"), a)                    # another client id
    assert not core.registered_as(_registration(topics=("T", "U")), a)             # a topic more
    assert not core.registered_as(_registration(consume_type="CONSUME_ACTIVELY"), a)
    assert not core.registered_as(_registration(version=2), a)   # a newer subscription replaces the kept one
    assert core.registered_as(_registration(version=0), a)       # an older one is not taken: no change
    assert not core.registered_as(_registration(producers=("PG", "PG2")), a)       # a producer group more
    core.register(_registration(version=2), a)
    assert core.registered_as(_registration(version=2), a)
    core.delete_topic("%RETRY%G")                            # registering would make the retry topic again
    assert not core.registered_as(_registration(version=2), a)


def test_registered_as_wants_the_group_to_exist_already(core):
    """A registration whose group is not there yet would create it: a change."""
    core.config.auto_create_subscription_group = True
    a = core.connect("10.0.0.1:1")
    core.register(_registration(), a)
    core.delete_group(G)
    assert not core.registered_as(_registration(), a)


def test_lock_holder_and_a_lock_taken_at_a_time_handed_in(core):
    queue = ("T", "broker-a", 0)
    assert core.lock_holder(G, queue) is None
    assert core.lock_queues(G, "client-a", [queue]) == [queue]
    assert core.lock_holder(G, queue) == "client-a"
    live = core.config.rebalance_lock_max_live_time
    core.advance_clock(live + 1)
    assert core.lock_holder(G, queue) is None               # expired: nobody holds it
    now = core.clock.now_ms()
    # renewed as at an earlier time: it lives from then, not from now
    assert core.lock_queues(G, "client-a", [queue], now_ms=now - live) == [queue]
    assert core.lock_holder(G, queue) == "client-a"
    core.advance_clock(1)
    assert core.lock_holder(G, queue) is None
    assert core.lock_queues(G, "client-b", [queue]) == [queue]       # so another client may take it
    assert core.lock_holder(G, queue) == "client-b"


def _held_pull(core, *, now_ms=None, suspend_ms=15_000):
    client = WireClient(core)
    client.send("T", b"first")
    assert client.heartbeat(G, ["T"]).code == 0
    answers = []
    core.subscribe(answers.append, (PullReady,))
    mine = core.connect("127.0.0.1:40002", owner="this test")
    request = PullRequest(G, "T", 0, 1, 32)
    assert core.pull_or_hold(request, mine, suspend_ms, "ctx", now_ms=now_ms) is None
    return client, answers


def test_a_pull_held_as_sent_at_a_time_handed_in_waits_its_suspend_time_from_then(core):
    core.advance_clock(1_000)
    now = core.clock.now_ms()
    _, answers = _held_pull(core, now_ms=now + 4_000)
    assert core.next_held_pull_deadline() == now + 4_000 + 15_000
    [held] = core.held_pulls_until(now + 20_000)
    assert (held.offset, held.deadline_ms, held.context) == (1, now + 19_000, "ctx")
    core.advance_clock(18_999)
    assert answers == []
    core.advance_clock(1)
    assert [(a.context, a.result.next_offset) for a in answers] == [("ctx", 1)]


def test_without_long_polling_a_pull_handed_a_time_waits_the_short_polling_time_from_then(core):
    core.config.long_polling_enable = False
    now = core.clock.now_ms()
    _held_pull(core, now_ms=now + 500)
    assert core.next_held_pull_deadline() == now + 500 + core.config.short_polling_time_mills


def test_a_withdrawn_held_pull_is_answered_neither_at_its_timeout_nor_by_a_message(core):
    client, answers = _held_pull(core)
    [held] = core.held_pulls_until(1 << 62)
    core.withdraw_held_pull(held)
    assert core.next_held_pull_deadline() is None and core.held_pulls_until(1 << 62) == []
    client.send("T", b"second")
    core.advance_clock(20_000)
    assert answers == []
