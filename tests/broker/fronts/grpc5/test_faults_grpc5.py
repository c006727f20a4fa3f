"""Fault rules on the 5.x wire (issue 38) with the real RocketMQ 5.x Python client: a
refused send is retried by the client and stored once; a send acknowledged late waits
on the broker's clock; a send stored but never acknowledged makes the client's retry a
duplicate. Waits are bounded; only the broker's clock jumps."""
from __future__ import annotations

import threading

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from rocketmq import ClientConfiguration, Credentials, Message, Producer  # noqa: E402

from tests.support.processes import wait_for  # noqa: E402


@pytest.fixture
def producer(rocketmq5_endpoint, rocketmq_broker):
    rocketmq_broker.create_topic("Orders", queues=1)
    p = Producer(ClientConfiguration(rocketmq5_endpoint, Credentials(), request_timeout=3), ("Orders",))
    p.startup()
    yield p
    p.shutdown()


def message(body: bytes) -> Message:
    m = Message()
    m.topic, m.body = "Orders", body
    return m


def test_a_refused_send_is_retried_by_the_client_and_stored_once(producer, rocketmq_broker):
    rule = rocketmq_broker.faults.add("send", "refuse", topic="Orders", dialect="5.x", times=1)
    receipt = producer.send(message(b"through"))
    assert receipt.message_id
    assert rule.hits == 1
    assert [m.body for m in rocketmq_broker.messages("Orders")] == [b"through"]


def test_a_send_acknowledged_late_waits_for_the_brokers_clock(producer, rocketmq_broker, time_travel):
    rule = rocketmq_broker.faults.add("send", "delay", topic="Orders", delay="10s", times=1)
    done = []
    sender = threading.Thread(target=lambda: done.append(producer.send(message(b"slow"))))
    sender.start()
    wait_for(lambda: rule.hits == 1, timeout=5)
    assert [m.body for m in rocketmq_broker.messages("Orders")] == [b"slow"]      # stored at once
    assert done == []                                                             # not acknowledged yet
    time_travel("10s")
    sender.join(timeout=5)
    assert len(done) == 1 and done[0].message_id


def test_a_send_stored_but_never_acknowledged_makes_the_clients_retry_a_duplicate(producer, rocketmq_broker):
    rocketmq_broker.faults.add("send", "drop", topic="Orders", stored=True, times=1)
    receipt = producer.send(message(b"twice"))                   # times out once (3 s), then retried
    stored = rocketmq_broker.messages("Orders")
    assert [m.body for m in stored] == [b"twice", b"twice"]
    assert stored[0].msg_id == stored[1].msg_id == receipt.message_id
