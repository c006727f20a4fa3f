"""Priority messages with the real 5.x clients (issue 51, item 2): a backlog sent in
mixed priorities on one broker is received highest priority first — by a
SimpleConsumer and by a PushConsumer — each message with its priority; a priority
outside 0..9 is refused and nothing is stored. On the rocketmq5_endpoint fixture (one
broker, virtual clock); waits are bounded."""
from __future__ import annotations

import threading

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message,  # noqa: E402
                      Producer, PushConsumer, SimpleConsumer)
from rocketmq.v5.consumer.push.message_listener import MessageListener  # noqa: E402

from tests.support.processes import wait_for  # noqa: E402

# (priority, body) in the order sent: low ones first, so arrival order is not the answer
BACKLOG = [(0, b"p0-a"), (3, b"p3-a"), (9, b"p9-a"), (1, b"p1-a"), (7, b"p7-a"), (3, b"p3-b"), (9, b"p9-b"),
           (0, b"p0-b"), (5, b"p5-a")]
# highest priority first; within one priority in the order sent
EXPECTED = sorted(BACKLOG, key=lambda pb: -pb[0])


@pytest.fixture
def config(rocketmq5_endpoint):
    return ClientConfiguration(rocketmq5_endpoint, Credentials(), request_timeout=3)


@pytest.fixture
def backlog(config, rocketmq_broker):
    """Jobs: a PRIORITY topic with a queue per priority, and BACKLOG in it."""
    rocketmq_broker.create_topic("Jobs", 10, message_type="priority")
    p = Producer(config, ("Jobs",))
    p.startup()
    try:
        for priority, body in BACKLOG:
            m = Message()
            m.topic, m.body, m.priority = "Jobs", body, priority
            p.send(m)
        yield p
    finally:
        p.shutdown()


def test_a_simple_consumer_receives_a_backlog_highest_priority_first(config, backlog):
    c = SimpleConsumer(config, "workers", {"Jobs": FilterExpression("*")}, await_duration=2)
    c.startup()
    try:
        got = []
        wait_for(lambda: got.extend(c.receive(4, 30)) or len(got) >= len(BACKLOG), timeout=20, interval=0)
        assert [(m.priority, m.body) for m in got] == EXPECTED
        for m in got:
            c.ack(m)
    finally:
        c.shutdown()


class _InOrder(MessageListener):
    def __init__(self):
        self.seen: list[tuple[int, bytes]] = []
        self.lock = threading.Lock()

    def consume(self, message):
        with self.lock:
            self.seen.append((message.priority, message.body))
        return ConsumeResult.SUCCESS


def test_a_push_consumer_consumes_a_backlog_highest_priority_first(config, backlog, rocketmq_broker):
    listener = _InOrder()
    pc = PushConsumer(config, "pushers", listener, {"Jobs": FilterExpression("*")}, consumption_thread_count=1)
    pc.startup()
    try:
        wait_for(lambda: len(listener.seen) >= len(BACKLOG), timeout=20)
        assert listener.seen == EXPECTED
    finally:
        pc.shutdown()


def test_a_priority_out_of_range_is_refused_and_nothing_is_stored(config, rocketmq_broker):
    rocketmq_broker.create_topic("Urgent", 10, message_type="priority")
    p = Producer(config, ("Urgent",))
    p.startup()
    try:
        m = Message()
        m.topic, m.body, m.priority = "Urgent", b"too high", 10
        with pytest.raises(Exception, match="priority must be 0..9"):
            p.send(m)
    finally:
        p.shutdown()
    assert rocketmq_broker.messages("Urgent") == []
