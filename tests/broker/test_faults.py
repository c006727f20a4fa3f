"""The fault rules (broker/faults/rules.py): what a rule matches, how often it fires (the next
N, a seeded probability, a window of the broker's clock), bad input named by field, and
every applied fault told as an event."""
import random

import pytest

from rocketmq_emulator.broker.events import EventKind, EventLog
from rocketmq_emulator.broker.faults.rules import (
    MAX_DELAY_MS,
    Action,
    FaultError,
    FaultSet,
    Operation,
    list_rules,
    rule_from,
)
from rocketmq_emulator.delay_scheduler import SystemClock, VirtualClock


def faults(clock=None, seed=7):
    events = EventLog()
    return FaultSet(clock or VirtualClock(), random.Random(seed), events, broker="broker-a"), events


def test_no_rule_is_inactive_and_matches_nothing():
    fs, _ = faults()
    assert fs.active is False and fs.match(Operation.SEND, topic="T") is None


def test_matchers_and_the_next_n():
    fs, events = faults()
    rule = fs.add(rule_from("send", "refuse", topic="Orders", times=2))
    assert fs.active
    assert fs.match(Operation.SEND, topic="Other") is None                 # another topic
    assert fs.match(Operation.PULL, topic="Orders") is None                # another operation
    assert fs.match(Operation.SEND, topic="Orders") is rule
    assert fs.match(Operation.SEND, topic="Orders") is rule
    assert fs.match(Operation.SEND, topic="Orders") is None                # used up: removed
    assert not fs.active and rule.hits == 2
    assert [e.kind for e in events] == [EventKind.FAULT, EventKind.FAULT]


def test_group_client_dialect_and_broker_matchers():
    fs, _ = faults()
    fs.add(rule_from("ack", "drop", group="billing", client="c1", dialect="5.x", broker="broker-a"))
    assert fs.match(Operation.ACK, group="billing", client="c1", dialect="4.x") is None
    assert fs.match(Operation.ACK, group="billing", client="c2", dialect="5.x") is None
    assert fs.match(Operation.ACK, group="billing", client="c1", dialect="5.x") is not None
    other, _ = faults()
    other._broker = "broker-b"
    other.add(rule_from("ack", "drop", broker="broker-a"))
    assert other.match(Operation.ACK) is None


def test_a_seeded_probability_gives_the_same_faults_for_the_same_seed():
    def fired(seed):
        fs, _ = faults(seed=seed)
        fs.add(rule_from("pull", "duplicate", probability=0.3))
        return [fs.match(Operation.PULL) is not None for _ in range(200)]
    a, b = fired(11), fired(11)
    assert a == b and 30 < sum(a) < 90
    assert fired(12) != a


def test_a_window_on_the_brokers_clock():
    clock = VirtualClock()
    fs, _ = faults(clock)
    now = clock.now_ms()
    fs.add(rule_from("route", "delay", delay_ms=500, window_ms=(now + 1000, now + 2000)))
    assert fs.match(Operation.ROUTE) is None
    clock.advance(1000)
    assert fs.match(Operation.ROUTE) is not None
    clock.advance(1000)
    assert fs.match(Operation.ROUTE) is None                                # end exclusive


def test_hold_is_a_state_not_a_hit():
    fs, _ = faults()
    rule = fs.add(rule_from("pull", "hold", group="billing"))
    assert fs.holds("billing") and not fs.holds("audit")
    assert rule.hits == 0
    fs.remove(rule.id)
    assert not fs.holds("billing")


def test_removing_a_rule_that_is_gone_is_not_an_error():
    fs, _ = faults()
    rule = fs.add(rule_from("send", "refuse"))
    assert fs.remove(rule.id) is True and fs.remove(rule.id) is False and fs.clear() == 0


@pytest.mark.parametrize("kwargs, field", [
    (dict(operation="publish", action="refuse"), "operation"),
    (dict(operation="send", action="explode"), "action"),
    (dict(operation="send", action="hold"), "action"),
    (dict(operation="send", action="refuse", probability=1.5), "probability"),
    (dict(operation="send", action="refuse", probability=-0.1), "probability"),
    (dict(operation="send", action="delay", delay_ms=-5), "delay"),
    (dict(operation="send", action="delay"), "delay"),
    (dict(operation="send", action="refuse", times=0), "times"),
    (dict(operation="send", action="refuse", dialect="kafka"), "dialect"),
    (dict(operation="ack", action="drop", stored=True), "stored"),
    (dict(operation="send", action="refuse", window_ms=(10, 5)), "window"),
    (dict(operation="send", action="refuse", topic=""), "topic"),
    (dict(operation="send", action="drop", error="SYSTEM_BUSY"), "error"),
    (dict(operation="send", action="refuse", error=True), "error"),
])
def test_bad_rules_name_their_field(kwargs, field):
    with pytest.raises(FaultError, match=f"^{field}"):
        rule_from(**kwargs)


def test_a_real_clock_broker_refuses_a_window_that_has_started():
    fs, _ = faults(SystemClock())
    now = SystemClock().now_ms()
    with pytest.raises(FaultError, match="^window: this broker runs on the real clock"):
        fs.add(rule_from("send", "refuse", window_ms=(now - 5000, now + 60_000)))
    assert fs.add(rule_from("send", "refuse", window_ms=(now + 60_000, now + 120_000))).id == 1
    assert fs.add(rule_from("send", "refuse", window_ms=(now - 20, now + 60_000))).id == 2     # "from now": taken


def test_a_spent_rule_stays_listed_as_spent_until_removed():
    """Issue 47.8: a "times 1" rule that fired is not asked again but stays listed, with
    what it did, until removed or cleared."""
    fs, _ = faults()
    rule = fs.add(rule_from("send", "refuse", topic="Orders", times=1))
    assert fs.match(Operation.SEND, topic="Orders") is rule
    assert fs.match(Operation.SEND, topic="Orders") is None and not fs.active       # spent: asked no more
    assert fs.rules() == [] and fs.listed() == [rule]
    [row] = list_rules([fs])
    assert (row["state"], row["matched"], row["hits"], row["left"]) == ("spent", 1, 1, 0)
    assert fs.remove(rule.id) is True and fs.listed() == []
    fs.add(rule_from("send", "refuse", times=1))
    fs.match(Operation.SEND)
    assert fs.clear() == 1 and list_rules([fs]) == []


def test_a_live_rule_is_listed_active():
    fs, _ = faults()
    fs.add(rule_from("send", "refuse", times=2))
    fs.match(Operation.SEND)
    [row] = list_rules([fs])
    assert (row["state"], row["left"], row["hits"]) == ("active", 1, 1)


def test_a_hold_counts_each_request_it_holds_and_a_counted_hold_can_be_spent():
    """What a 4.x pull's match counts, FaultSet.hold counts for the fronts that look at a
    hold as a state (a 5.x receive, a Pulsar dispatch): matched and fired, an event."""
    fs, events = faults()
    rule = fs.add(rule_from("pull", "hold", group="billing", times=2))
    assert fs.hold("audit") is None and rule.matched == 0
    assert fs.hold("billing", "Orders", "5.x") is rule and fs.holds("billing")
    assert (rule.matched, rule.hits) == (1, 1) and [e.kind for e in events] == [EventKind.FAULT]
    assert fs.hold("billing") is rule                                        # its second: spent now
    assert not fs.holds("billing") and fs.hold("billing") is None and rule.spent


@pytest.mark.parametrize("field, value", [
    ("topic", "Orders"), ("topic", "%RETRY%billing"), ("topic", "persistent://public/default/orders"),
    ("topic", "persistent://t/ns/a.b:c=d"), ("topic", "my-tenant/my-ns/orders"),
    ("group", "billing"), ("group", "GID_billing-1"), ("group", "pulsar sub.1"),
    ("client", "127.0.0.1@4242#1287262"), ("client", "127.0.0.1:51234"), ("client", "host@123@0@abc"),
])
def test_name_matchers_take_the_names_clients_use(field, value):
    assert getattr(rule_from("send", "refuse", **{field: value}), field) == value


@pytest.mark.parametrize("field, value", [
    ("topic", "T\x1b[31m"), ("topic", "T\nforged line"), ("topic", "T" * 10_000), ("topic", "A\u202eB"),
    ("topic", "persistent://public/default/" + "x" * 200), ("topic", "persistent://public/default/a\rb"),
    ("group", "g\x07"), ("group", "g\n2024-01-01 INFO forged"), ("group", "g" * 10_000),
    ("client", "c\x1b]0;title\x07"), ("client", "c" * 10_000), ("client", "c\u2028d"),
    ("broker", "broker-a\n"),
])
def test_name_matchers_refuse_control_characters_and_overlong_names_in_one_line(field, value):
    with pytest.raises(FaultError, match=f"^{field}: ") as refused:
        rule_from("send", "refuse", **{field: value})
    text = str(refused.value)
    assert "\n" not in text and "\x1b" not in text and "\u202e" not in text and len(text) < 400


def test_one_bound_for_a_delay():
    assert rule_from("send", "delay", delay_ms=MAX_DELAY_MS).delay_ms == MAX_DELAY_MS
    with pytest.raises(FaultError, match="^delay: at most 1d"):
        rule_from("send", "delay", delay_ms=MAX_DELAY_MS + 1)
    with pytest.raises(FaultError, match="^delay: at most"):
        rule_from("send", "delay", delay_ms=99999999999 * 86_400_000)      # `--delay 99999999999d`


def test_times_and_a_window_are_bounded_as_numbers_of_the_clock():
    with pytest.raises(FaultError, match="^times: "):
        rule_from("send", "refuse", times=2 ** 63)
    with pytest.raises(FaultError, match="^window: "):
        rule_from("send", "refuse", window_ms=(0, 2 ** 63))
