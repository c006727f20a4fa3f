"""Fault rules on the Pulsar wire (issue 38) with the real pulsar-client: a refused SEND is
a SEND_ERROR (PersistenceError: the client reconnects and sends again, stored once); a
receipt delayed on the broker's clock. (Still to do: a SEND_ERROR the client surfaces —
refused for good, pulsar-client 3.13 reconnects and resends for ever, ChecksumError too
in a first try.)"""
from __future__ import annotations

import threading

import pytest

from tests.support.processes import wait_for

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytestmark = pytest.mark.interop

TOPIC = "persistent://public/default/orders"
STORED = "pulsar|public|default|orders"


@pytest.fixture
def client(pulsar_endpoint):
    c = pulsar.Client(pulsar_endpoint, operation_timeout_seconds=10)
    yield c
    c.close()


def test_a_refused_send_is_sent_again_by_the_client_and_stored_once(client, rocketmq_broker):
    producer = client.create_producer(TOPIC, send_timeout_millis=10_000)
    rule = rocketmq_broker.faults.add("send", "refuse", topic=TOPIC, dialect="pulsar", times=1)
    producer.send(b"through")
    assert rule.hits == 1
    assert [m.body for m in rocketmq_broker.messages(STORED)] == [b"through"]


def test_a_receipt_delayed_on_the_brokers_clock(client, rocketmq_broker, time_travel):
    producer = client.create_producer(TOPIC, send_timeout_millis=10_000)
    rule = rocketmq_broker.faults.add("send", "delay", topic=TOPIC, delay="30s", times=1)
    done = []
    sender = threading.Thread(target=lambda: done.append(producer.send(b"slow")))
    sender.start()
    wait_for(lambda: rule.hits == 1, timeout=5)
    assert [m.body for m in rocketmq_broker.messages(STORED)] == [b"slow"]
    assert done == []
    time_travel("30s")
    sender.join(timeout=5)
    assert len(done) == 1
