"""The pytest fixture pulsar_endpoint (issue 21, item 8): the real Pulsar client against the
in-process test broker, on its virtual clock — time_travel moves delayed deliveries."""
from __future__ import annotations

import datetime

import pytest

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytestmark = pytest.mark.interop


def test_a_delayed_message_arrives_when_the_test_moves_the_clock(pulsar_endpoint, time_travel, rocketmq_broker):
    client = pulsar.Client(pulsar_endpoint, operation_timeout_seconds=10)
    try:
        consumer = client.subscribe("reminders", "mailer", consumer_type=pulsar.ConsumerType.Shared)
        client.create_producer("reminders").send(b"tomorrow", deliver_after=datetime.timedelta(days=1))
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=300)
        time_travel("23h")
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=300)
        time_travel("1h")
        assert consumer.receive(timeout_millis=5000).data() == b"tomorrow"
    finally:
        client.close()
    # the same broker the 4.x fixtures use: the message is in its store
    assert [m.body for m in rocketmq_broker.messages("pulsar|public|default|reminders")] == [b"tomorrow"]
