"""A held 5.x receive is answered when a delivery becomes visible again in place — a
FIFO group's message or a lite topic's, whose invisible time ended without an ack — at
that moment on the broker's clock, not when the long poll runs out (issue 51). With the
real SimpleConsumer and LiteSimpleConsumer on the rocketmq5_endpoint fixture's virtual
clock; the long poll is 20 s of real time, every wait here far shorter."""
from __future__ import annotations

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from rocketmq import (ClientConfiguration, Credentials, FilterExpression, LiteSimpleConsumer,  # noqa: E402
                      Message, Producer, SimpleConsumer)
from rocketmq.v5.exception import LiteSubscriptionQuotaExceededException  # noqa: E402

from rocketmq_emulator.broker.rocketmq_model.groups import SubscriptionGroupConfig  # noqa: E402
from tests.support.processes import wait_for  # noqa: E402
from tests.support.threads import in_background  # noqa: E402

LONG_POLL_S = 20        # the receive's long poll: an answer within a few seconds is the wake-up


@pytest.fixture
def config(rocketmq5_endpoint):
    return ClientConfiguration(rocketmq5_endpoint, Credentials(), request_timeout=3)


def started(client):
    client.startup()
    return client


def subscribe_when_settled(consumer, lite: str) -> None:
    """5.1.2's LiteSimpleConsumer.startup() does not wait for the server's Settings: its
    quota is 0 (every subscribe refused by the client) until they come. Then
    subscribe_lite (which sends the name's characters) and the complete set."""
    def subscribed() -> bool:
        try:
            consumer.subscribe_lite(lite)
        except LiteSubscriptionQuotaExceededException:
            return False
        return True
    wait_for(subscribed, timeout=5)
    consumer.subscribe_lite_all()


def assert_woken_at_visibility(receive, time_travel, invisible_s: int):
    """The delivery popped ``invisible_s`` ago (on the broker's clock) is not acked: a
    receive held meanwhile gets it when the clock reaches its visibility, at once."""
    receiver, got = in_background(receive)
    time_travel(f"{invisible_s - 1}s")
    receiver.join(1)
    assert receiver.is_alive() and got == []             # held: nothing visible yet
    time_travel("1s")
    receiver.join(5)                                     # (not the 20 s long poll)
    assert not receiver.is_alive(), "the held receive was not woken by the redelivery"
    [[again]] = got
    return again


def test_a_fifo_groups_redelivery_in_place_wakes_a_held_receive(config, rocketmq_broker, time_travel):
    rocketmq_broker.create_topic("Steps", 1, message_type="fifo")
    rocketmq_broker.core.update_group(SubscriptionGroupConfig("fifo-simple", consume_message_orderly=True))
    producer = started(Producer(config, ("Steps",)))
    consumer = started(SimpleConsumer(config, "fifo-simple", {"Steps": FilterExpression("*")},
                                      await_duration=LONG_POLL_S))
    try:
        m = Message()
        m.topic, m.body, m.message_group = "Steps", b"step-1", "order-7"
        message_id = producer.send(m).message_id
        [first] = consumer.receive(1, 10)
        assert (first.message_id, first.delivery_attempt) == (message_id, 1)
        again = assert_woken_at_visibility(lambda: consumer.receive(1, 10), time_travel, 10)
        assert (again.message_id, again.body, again.delivery_attempt) == (message_id, b"step-1", 2)
        consumer.ack(again)
    finally:
        consumer.shutdown()
        producer.shutdown()


def test_a_lite_topics_redelivery_in_place_wakes_a_held_receive(config, rocketmq_broker, time_travel):
    rocketmq_broker.create_topic("Chats", 1, message_type="lite")
    producer = started(Producer(config, ("Chats",)))
    consumer = started(LiteSimpleConsumer("Chats", config, "lite-simple", await_duration=LONG_POLL_S))
    try:
        subscribe_when_settled(consumer, "s1")
        m = Message()
        m.topic, m.body, m.lite_topic = "Chats", b"hello", "s1"
        message_id = producer.send(m).message_id
        [first] = consumer.receive(1, 30)
        assert (first.message_id, first.lite_topic, first.delivery_attempt) == (message_id, "s1", 1)
        again = assert_woken_at_visibility(lambda: consumer.receive(1, 30), time_travel, 30)
        assert (again.message_id, again.lite_topic, again.delivery_attempt) == (message_id, "s1", 2)
        consumer.ack(again)
    finally:
        consumer.shutdown()
        producer.shutdown()
