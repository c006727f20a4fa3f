"""The README's fault example for 5.x clients (guide "Testing your failure handling"),
run as this module's own test and checked to be the README's text verbatim."""
from __future__ import annotations

import pytest

from tests.support.readme import assert_readme_shows

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

# --- README example: begin ---
from rocketmq import ClientConfiguration, Credentials, FilterExpression, Message, Producer, SimpleConsumer


def test_a_lost_ack_brings_the_order_back(rocketmq5_endpoint, rocketmq_broker, rocketmq_faults, time_travel):
    rocketmq_broker.create_topic("Orders")
    config = ClientConfiguration(rocketmq5_endpoint, Credentials())
    producer = Producer(config, ("Orders",))
    producer.startup()
    consumer = SimpleConsumer(config, "billing", {"Orders": FilterExpression("*")}, await_duration=1)
    consumer.startup()
    msg = Message()
    msg.topic, msg.body = "Orders", b"order-1"
    producer.send(msg)
    [first] = consumer.receive(1, 15)                       # invisible for 15 s
    with rocketmq_faults.add("ack", "drop", group="billing"):
        with pytest.raises(Exception, match="DEADLINE_EXCEEDED|deadline"):
            consumer.ack(first)                             # no answer: the client's call times out
    time_travel("15s")                                      # the invisible time ends: it comes back
    [again] = consumer.receive(1, 15)
    assert again.body == b"order-1" and again.delivery_attempt == 2
    consumer.ack(again)
    consumer.shutdown(); producer.shutdown()
# --- README example: end ---


def test_the_readme_snippet_is_this_test():
    assert_readme_shows(__file__)
