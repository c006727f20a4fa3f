"""The README's fault example for Pulsar clients (guide "Testing your failure handling"),
run as this module's own test and checked to be the README's text verbatim."""
from __future__ import annotations

import pytest

from tests.support.readme import assert_readme_shows

pytest.importorskip("pulsar", reason="needs the pulsar extra: ./dev test installs it")

# --- README example: begin ---
import time

import pulsar


def test_a_refused_send_and_a_lost_ack(pulsar_endpoint, rocketmq_faults):
    client = pulsar.Client(pulsar_endpoint)
    producer = client.create_producer("orders")
    consumer = client.subscribe("orders", "billing", consumer_type=pulsar.ConsumerType.Shared)
    with rocketmq_faults.add("send", "refuse", error="ChecksumError", times=1):
        with pytest.raises(pulsar.ChecksumError):
            producer.send(b"order-0")                       # a SEND_ERROR the client raises
    producer.send(b"order-1")
    lost = rocketmq_faults.add("ack", "drop", group="billing", times=1)
    msg = consumer.receive(timeout_millis=5000)
    consumer.acknowledge(msg)                               # sent a moment later: the client groups acks
    deadline = time.monotonic() + 5
    while lost.hits == 0 and time.monotonic() < deadline:   # ... and lost by the broker
        time.sleep(0.01)
    consumer.redeliver_unacknowledged_messages()
    again = consumer.receive(timeout_millis=5000)
    assert again.data() == b"order-1" and again.redelivery_count() == 1
    consumer.acknowledge(again)
    client.close()
# --- README example: end ---


def test_the_readme_snippet_is_this_test():
    assert_readme_shows(__file__)
