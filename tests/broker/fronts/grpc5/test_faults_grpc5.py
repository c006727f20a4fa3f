"""Fault rules on the 5.x wire (issue 38) with the real RocketMQ 5.x Python client: a
refused send is retried by the client and stored once; a send acknowledged late waits
on the broker's clock; a send stored but never acknowledged makes the client's retry a
duplicate; a dropped ack makes the message come back with its next delivery attempt, a
refused one is an error the client raises; a PushConsumer's Settings answered late hold
its startup until the broker's clock is there, refused ones fail it. (ReceiveMessage:
test_receive_faults_grpc5.py.) Waits are bounded; only the broker's clock jumps."""
from __future__ import annotations

import threading

import pytest

pytest.importorskip("rocketmq.grpc_protocol", reason="needs the grpc extra: ./dev test installs it")

from rocketmq import (ClientConfiguration, ConsumeResult, Credentials, FilterExpression, Message,  # noqa: E402
                      Producer, PushConsumer, SimpleConsumer)
from rocketmq.v5.consumer.push.message_listener import MessageListener  # noqa: E402

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


# -- acks (AckMessage) ---------------------------------------------------------------------------
@pytest.fixture
def consumer(rocketmq5_endpoint, producer):
    c = SimpleConsumer(ClientConfiguration(rocketmq5_endpoint, Credentials(), request_timeout=2), "billing",
                       {"Orders": FilterExpression("*")}, await_duration=1)
    c.startup()
    yield c
    c.shutdown()


def test_a_dropped_ack_makes_the_message_come_back_with_its_next_attempt(producer, consumer, rocketmq_broker,
                                                                          time_travel):
    message_id = producer.send(message(b"acked?")).message_id
    [first] = consumer.receive(16, 15)
    rule = rocketmq_broker.faults.add("ack", "drop", group="billing", dialect="5.x", times=1)
    with pytest.raises(Exception, match="DEADLINE_EXCEEDED|Deadline|deadline"):
        consumer.ack(first)                                       # no answer: the client's 2 s deadline
    assert rule.hits == 1
    time_travel("14s")
    assert consumer.receive(16, 15) == []                         # still invisible: the ack was lost
    time_travel("1s")
    [again] = consumer.receive(16, 15)
    assert again.message_id == message_id and (first.delivery_attempt, again.delivery_attempt) == (1, 2)
    consumer.ack(again)
    time_travel("15s")
    assert consumer.receive(16, 15) == []


def test_a_refused_ack_is_an_error_the_client_raises_and_the_delivery_stands(producer, consumer, rocketmq_broker):
    producer.send(message(b"refused"))
    [m] = consumer.receive(16, 15)
    rocketmq_broker.faults.add("ack", "refuse", group="billing", times=1)
    with pytest.raises(Exception, match="INTERNAL_SERVER_ERROR|refused by fault rule"):
        consumer.ack(m)
    consumer.ack(m)                                               # its handle is still good: acked now
    with rocketmq_broker.hub.lock:
        assert rocketmq_broker.core.pops.in_flight("billing") == []


# -- Telemetry Settings (the 5.x client's registration) ----------------------------------------
class _Collect(MessageListener):
    def __init__(self):
        self.seen = []

    def consume(self, message):
        self.seen.append(message.body)
        return ConsumeResult.SUCCESS


def push_consumer(endpoint, listener):
    return PushConsumer(ClientConfiguration(endpoint, Credentials(), request_timeout=2), "billing", listener,
                        {"Orders": FilterExpression("*")})


def test_settings_answered_late_hold_a_push_consumers_startup_until_the_brokers_clock_is_there(
        rocketmq5_endpoint, producer, rocketmq_broker, time_travel):
    rule = rocketmq_broker.faults.add("heartbeat", "delay", group="billing", delay="3s", times=1)
    listener = _Collect()
    consumer = push_consumer(rocketmq5_endpoint, listener)
    starter = threading.Thread(target=consumer.startup, daemon=True)
    starter.start()
    try:
        wait_for(lambda: rule.hits == 1, timeout=5)
        starter.join(0.5)
        assert starter.is_alive()                                 # waiting for its Settings' answer
        time_travel("3s")
        starter.join(5)
        assert not starter.is_alive()
        producer.send(message(b"after the handshake"))
        wait_for(lambda: listener.seen, timeout=10)
        assert listener.seen == [b"after the handshake"]
    finally:
        starter.join(10)
        consumer.shutdown()


def test_refused_settings_fail_a_push_consumers_startup(rocketmq5_endpoint, producer, rocketmq_broker):
    """The refusal is a TelemetryCommand with the status and no settings (a proxy's answer
    to Settings it cannot take): the client waits 10 s (its own bound) for settings, then
    startup raises (5.1.2's IllegalStateException is masked by an AttributeError from its
    own cleanup of the schedulers it never started)."""
    rule = rocketmq_broker.faults.add("heartbeat", "refuse", group="billing", times=1)
    consumer = push_consumer(rocketmq5_endpoint, _Collect())
    with pytest.raises(Exception):
        consumer.startup()
    assert not consumer.is_running
    assert rule.hits == 1


def test_with_no_rule_a_receive_and_an_ack_meet_no_fault(producer, consumer, rocketmq_broker):
    assert rocketmq_broker.core.faults.active is False
    producer.send(message(b"plain"))
    [m] = consumer.receive(16, 15)
    consumer.ack(m)
    assert rocketmq_broker.core.faults.applied == 0 and m.delivery_attempt == 1


def test_a_send_acknowledged_after_the_clients_deadline_is_lost_and_retried(producer, rocketmq_broker):
    rule = rocketmq_broker.faults.add("send", "delay", topic="Orders", delay="1h", times=1)
    receipt = producer.send(message(b"too late"))                # the first answer is not due within 3 s
    assert rule.hits == 1
    stored = rocketmq_broker.messages("Orders")
    assert [m.body for m in stored] == [b"too late", b"too late"] and stored[1].msg_id == receipt.message_id


def test_settings_on_the_wire_refused_are_a_status_without_settings_and_dropped_ones_are_not_answered(
        rocketmq5_endpoint, rocketmq_broker):
    """Each Settings written on one Telemetry stream is answered in order: the first is
    refused (the proxy's answer to Settings it cannot take), the second dropped, the third
    answered — so the second answer on the stream is the third's."""
    import queue

    import grpc
    from rocketmq.grpc_protocol import definition_pb2 as pb, service_pb2 as spb, service_pb2_grpc

    rocketmq_broker.faults.add("heartbeat", "refuse", group="first", times=1)
    rocketmq_broker.faults.add("heartbeat", "drop", group="second", times=1)
    writes: queue.Queue = queue.Queue()
    for group in ("first", "second", "third"):
        writes.put(spb.TelemetryCommand(settings=pb.Settings(
            client_type=pb.SIMPLE_CONSUMER, subscription=pb.Subscription(group=pb.Resource(name=group)))))
    with grpc.insecure_channel(rocketmq5_endpoint) as channel:
        stream = service_pb2_grpc.MessagingServiceStub(channel).Telemetry(
            iter(writes.get, None), metadata=(("x-mq-client-id", "t38"),), timeout=10)
        refused, answered = next(stream), next(stream)
        writes.put(None)
        stream.cancel()
    assert refused.status.code == pb.INTERNAL_SERVER_ERROR and "refused by fault rule" in refused.status.message
    assert not refused.HasField("settings")
    assert answered.status.code == pb.OK and answered.settings.subscription.group.name == "third"
