"""Fault rules on the 5.x ReceiveMessage stream (issue 38) with the real RocketMQ 5.x
Python client: a receive answered late waits for the broker's clock; a duplicated
delivery is seen twice and stored once; a hold stops deliveries to its group until it
is removed, and a long poll waiting under it delivers then; a refused receive is an
error the SimpleConsumer raises and the PushConsumer backs off from and retries; a
dropped receive times out and pops nothing. Waits are bounded; only the broker's clock
jumps."""
from __future__ import annotations

import threading

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message,  # noqa: E402
                      Producer, PushConsumer, SimpleConsumer)
from rocketmq.v5.consumer.push.message_listener import MessageListener  # noqa: E402

from tests.support.processes import wait_for  # noqa: E402
from tests.support.threads import in_background  # noqa: E402


@pytest.fixture
def config(rocketmq5_endpoint):
    return ClientConfiguration(rocketmq5_endpoint, Credentials(), request_timeout=2)


@pytest.fixture
def send(config, rocketmq_broker):
    rocketmq_broker.create_topic("Orders", queues=1)
    p = Producer(config, ("Orders",))
    p.startup()

    def send(body: bytes) -> str:
        m = Message()
        m.topic, m.body = "Orders", body
        return p.send(m).message_id

    yield send
    p.shutdown()


@pytest.fixture
def simple(config, send):
    """``simple(group, await_s)``: a started SimpleConsumer of Orders (long poll ``await_s``)."""
    started = []

    def make(group: str = "billing", await_s: int = 1) -> SimpleConsumer:
        c = SimpleConsumer(config, group, {"Orders": FilterExpression("*")}, await_duration=await_s)
        c.startup()
        started.append(c)
        return c

    yield make
    for c in started:
        c.shutdown()


def test_a_receive_answered_late_waits_for_the_brokers_clock(rocketmq_broker, send, simple, time_travel):
    consumer = simple(await_s=5)
    message_id = send(b"late")
    rule = rocketmq_broker.faults.add("pull", "delay", group="billing", delay="5s", times=1)
    receiver, got = in_background(lambda: consumer.receive(16, 30))
    wait_for(lambda: rule.hits == 1 and in_flight(rocketmq_broker, "billing"), timeout=5)    # popped now
    time_travel("4s")
    receiver.join(0.5)
    assert receiver.is_alive() and got == []                      # not due yet on the broker's clock
    time_travel("1s")
    receiver.join(5)
    [[m]] = got
    assert (m.message_id, m.body, m.delivery_attempt) == (message_id, b"late", 1)
    # popped when asked, told late: the invisible time ran from the pop (30 s, 5 s of it gone)
    quick = simple(await_s=1)
    time_travel("24s")
    assert quick.receive(16, 30) == []
    time_travel("1s")
    [again] = quick.receive(16, 30)
    assert again.message_id == message_id and again.delivery_attempt == 2


def test_a_duplicated_delivery_is_seen_twice_and_stored_once(rocketmq_broker, send, simple, time_travel):
    consumer = simple()
    message_id = send(b"twice")
    rule = rocketmq_broker.faults.add("pull", "duplicate", topic="Orders", dialect="5.x", times=1)
    first, second = consumer.receive(16, 30)
    assert rule.hits == 1
    assert first.message_id == second.message_id == message_id and first.body == second.body == b"twice"
    assert first.receipt_handle == second.receipt_handle and first.delivery_attempt == second.delivery_attempt == 1
    assert [m.body for m in rocketmq_broker.messages("Orders")] == [b"twice"]        # one record
    # the client acks each copy: the first settles the message, the second's handle is spent
    consumer.ack(first)
    with pytest.raises(Exception, match="INVALID_RECEIPT_HANDLE|receipt handle"):
        consumer.ack(second)
    time_travel("30s")
    assert consumer.receive(16, 30) == []                          # acked once: it never comes back


def test_a_hold_stops_deliveries_to_its_group_until_it_is_removed(rocketmq_broker, send, simple):
    billing, audit = simple("billing", await_s=1), simple("audit", await_s=1)
    hold = rocketmq_broker.faults.add("pull", "hold", group="billing")
    message_id = send(b"held")
    assert billing.receive(16, 30) == []                          # a long poll that finds nothing
    [seen] = audit.receive(16, 30)                                # another group is not held
    assert seen.message_id == message_id
    held = hold.hits
    assert held >= 1 and hold.rule.matched == held                # issue 47.8: a held receive counts, as in 4.x
    hold.remove()
    [m] = billing.receive(16, 30)
    assert m.message_id == message_id and m.delivery_attempt == 1 and hold.hits == held


def test_a_long_poll_waiting_under_a_hold_delivers_when_it_is_removed(rocketmq_broker, send, simple, monkeypatch):
    consumer = simple(await_s=15)
    faults = rocketmq_broker.core.faults
    looks = []                                                    # each time a receive asks for the hold
    holds = faults.holds
    monkeypatch.setattr(faults, "holds", lambda *a: looks.append(a) or holds(*a))
    hold = rocketmq_broker.faults.add("pull", "hold", group="billing")
    message_id = send(b"released")
    receiver, got = in_background(lambda: consumer.receive(16, 30))
    wait_for(lambda: len(looks) >= 3, timeout=5)                  # the poll is there, looking again
    assert receiver.is_alive() and got == []                      # stored, visible, held
    hold.remove()
    receiver.join(5)                                              # well inside its 15 s long poll
    [[m]] = got
    assert m.message_id == message_id


def test_a_refused_receive_is_an_error_and_the_next_one_gets_the_message(rocketmq_broker, send, simple):
    consumer = simple()
    message_id = send(b"after a refusal")
    rule = rocketmq_broker.faults.add("pull", "refuse", group="billing", times=1)
    with pytest.raises(Exception, match="refused by fault rule"):
        consumer.receive(16, 30)
    assert rule.hits == 1
    [m] = consumer.receive(16, 30)                               # the refusal popped nothing
    assert m.message_id == message_id and m.delivery_attempt == 1


def test_a_refusal_carries_the_rules_status(rocketmq_broker, send, simple):
    consumer = simple()
    send(b"x")
    rocketmq_broker.faults.add("pull", "refuse", group="billing", error="TOO_MANY_REQUESTS", times=1)
    with pytest.raises(Exception) as raised:
        consumer.receive(16, 30)
    assert "TOO_MANY_REQUESTS" in str(raised.value) or "42900" in str(raised.value)


class _Collect(MessageListener):
    def __init__(self):
        self.seen = []
        self.lock = threading.Lock()

    def consume(self, message):
        with self.lock:
            self.seen.append((message.message_id, message.delivery_attempt))
        return ConsumeResult.SUCCESS


def test_a_push_consumer_backs_off_from_refused_receives_and_then_consumes(rocketmq_broker, config, send):
    message_id = send(b"patience")
    rule = rocketmq_broker.faults.add("pull", "refuse", group="billing", times=2)
    listener = _Collect()
    consumer = PushConsumer(config, "billing", listener, {"Orders": FilterExpression("*")})
    consumer.startup()
    try:
        wait_for(lambda: listener.seen, timeout=15)               # (the client waits 1 s after each refusal)
        assert rule.hits == 2
        assert listener.seen == [(message_id, 1)]
        wait_for(lambda: not in_flight(rocketmq_broker, "billing"), timeout=5)     # acked
    finally:
        consumer.shutdown()


def test_a_dropped_receive_times_out_and_pops_nothing(rocketmq_broker, send, simple):
    consumer = simple()                                           # deadline: 2 s request + 1 s poll
    message_id = send(b"unanswered")
    rule = rocketmq_broker.faults.add("pull", "drop", group="billing", times=1)
    with pytest.raises(Exception, match="DEADLINE_EXCEEDED|Deadline|deadline"):
        consumer.receive(16, 30)
    assert rule.hits == 1
    [m] = consumer.receive(16, 30)
    assert m.message_id == message_id and m.delivery_attempt == 1


def in_flight(broker, group: str) -> list:
    with broker.hub.lock:
        return broker.core.pops.in_flight(group)


def test_a_push_consumer_consumes_a_duplicated_delivery_twice_and_it_is_settled_once(rocketmq_broker, config, send,
                                                                                     time_travel, caplog):
    """Both copies carry one receipt handle: the client acks each, the second ack is told
    INVALID_RECEIPT_HANDLE and the client gives it up (it does not retry it)."""
    rule = rocketmq_broker.faults.add("pull", "duplicate", group="billing", times=1)
    message_id = send(b"twice")
    listener = _Collect()
    consumer = PushConsumer(config, "billing", listener, {"Orders": FilterExpression("*")})
    consumer.startup()
    try:
        wait_for(lambda: len(listener.seen) == 2, timeout=10)
        assert listener.seen == [(message_id, 1), (message_id, 1)] and rule.hits == 1
        wait_for(lambda: not in_flight(rocketmq_broker, "billing"), timeout=5)     # settled by the first ack
        wait_for(lambda: "invalid receipt handle, give up retrying" in caplog.text, timeout=5)   # the second's
        time_travel("2h")
        assert [m.body for m in rocketmq_broker.messages("Orders")] == [b"twice"]
        assert rocketmq_broker.dlq_messages("billing") == []
    finally:
        consumer.shutdown()
    assert listener.seen == [(message_id, 1), (message_id, 1)]                    # never delivered again


def test_an_error_that_is_no_5x_code_refuses_with_the_default_and_says_so(rocketmq_broker, send, simple):
    consumer = simple()
    send(b"x")
    rocketmq_broker.faults.add("pull", "refuse", group="billing", error="SYSTEM_ERROR", times=1)
    with pytest.raises(Exception, match="SYSTEM_ERROR is not a 5.x status code"):
        consumer.receive(16, 30)
    [m] = consumer.receive(16, 30)
    assert m.body == b"x"
