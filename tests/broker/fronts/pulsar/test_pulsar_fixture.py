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


def test_a_retry_letter_message_another_client_wrote_is_delivered_at_its_time(pulsar_endpoint, time_travel):
    """What the Java and Go clients' reconsumeLater publishes to the retry-letter topic
    (reference §6.4): the original's properties plus REAL_TOPIC, ORIGIN_MESSAGE_ID,
    RECONSUMETIMES and DELAY_TIME, with deliver_at_time = now + delay. The retry topic's
    Shared subscription gets it at that time on the broker's clock, properties intact."""
    client = pulsar.Client(pulsar_endpoint, operation_timeout_seconds=10)
    retry_topic = "persistent://public/default/orders-billing-RETRY"
    try:
        consumer = client.subscribe(retry_topic, "billing", consumer_type=pulsar.ConsumerType.Shared)
        props = {"shop": "north", "REAL_TOPIC": "persistent://public/default/orders",
                 "ORIGIN_MESSAGE_ID": "7:3:-1", "RECONSUMETIMES": "2", "DELAY_TIME": "600000"}
        client.create_producer(retry_topic).send(b"again", properties=props,
                                                 deliver_after=datetime.timedelta(minutes=10))
        time_travel("9m59s")
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=300)
        time_travel("1s")
        m = consumer.receive(timeout_millis=5000)
        assert (m.data(), m.properties()) == (b"again", props)
    finally:
        client.close()
