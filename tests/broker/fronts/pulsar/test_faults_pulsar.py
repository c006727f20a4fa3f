"""Fault rules on the Pulsar wire (issue 38) with the real pulsar-client (libpulsar 4.2.0):
what each one looks like to an application. A refused SEND is retried by the client
(stored once) or, with ChecksumError, fails that send; a dropped ack brings the message
back with redelivery count 1; dispatch delayed on the broker's clock, duplicated, held and
released; refused FLOW and nack close the consumer, which comes back; a refused
subscribe, producer or lookup raises. (Every other combination, raw frames:
test_fault_answers.py.)"""
from __future__ import annotations

import threading

import pytest

from rocketmq_emulator.broker.events import EventKind
from tests.support.processes import wait_for

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
pytestmark = pytest.mark.interop

TOPIC = "persistent://public/default/orders"
STORED = "pulsar|public|default|orders"
SUB = "billing"


@pytest.fixture
def client(pulsar_endpoint):
    c = pulsar.Client(pulsar_endpoint, operation_timeout_seconds=10)
    yield c
    c.close()


@pytest.fixture
def impatient(pulsar_endpoint):
    """A client that gives up on an operation after 1 s (what a refusal it retries ends in)."""
    c = pulsar.Client(pulsar_endpoint, operation_timeout_seconds=1)
    yield c
    c.close()


def _shared(client, **options):
    return client.subscribe(TOPIC, SUB, consumer_type=pulsar.ConsumerType.Shared,
                            initial_position=pulsar.InitialPosition.Earliest, **options)


def _bodies(broker):
    return [m.body for m in broker.messages(STORED)]


# -- send ---------------------------------------------------------------------------------------
def test_a_refused_send_is_sent_again_by_the_client_and_stored_once(client, rocketmq_broker):
    producer = client.create_producer(TOPIC, send_timeout_millis=10_000)
    rule = rocketmq_broker.faults.add("send", "refuse", topic=TOPIC, dialect="pulsar", times=1)
    producer.send(b"through")
    assert rule.hits == 1
    assert _bodies(rocketmq_broker) == [b"through"]


def test_a_checksum_error_fails_that_send_to_the_application(client, rocketmq_broker):
    producer = client.create_producer(TOPIC, send_timeout_millis=5_000)
    rule = rocketmq_broker.faults.add("send", "refuse", topic=TOPIC, error="ChecksumError", times=1)
    with pytest.raises(pulsar.ChecksumError):
        producer.send(b"refused")
    assert rule.hits == 1
    producer.send(b"next")                          # the producer goes on: only that message failed
    assert _bodies(rocketmq_broker) == [b"next"]


def test_a_send_refused_for_good_ends_in_the_clients_send_timeout(client, rocketmq_broker):
    producer = client.create_producer(TOPIC, send_timeout_millis=1_000)
    rule = rocketmq_broker.faults.add("send", "refuse", topic=TOPIC)
    with pytest.raises(pulsar.Timeout):
        producer.send(b"never")             # (the topic is fenced: the client backs off, its timeout fires)
    assert rule.hits >= 1 and _bodies(rocketmq_broker) == []
    rule.remove()
    wait_for(producer.is_connected, timeout=15)     # it comes back once the rule is gone (after its backoff)
    producer.send(b"after")
    assert _bodies(rocketmq_broker) == [b"after"]


def test_a_send_refused_as_over_the_backlog_quota_fails_at_once_with_that_error(client, rocketmq_broker):
    producer = client.create_producer(TOPIC, send_timeout_millis=30_000)
    rule = rocketmq_broker.faults.add("send", "refuse", topic=TOPIC, error="ProducerBlockedQuotaExceededException")
    with pytest.raises(pulsar.ProducerBlockedQuotaExceededException):
        producer.send(b"over quota")                # (its reconnected PRODUCER is refused so too)
    assert rule.hits == 1 and _bodies(rocketmq_broker) == []


def test_a_receipt_delayed_on_the_brokers_clock(client, rocketmq_broker, time_travel):
    producer = client.create_producer(TOPIC, send_timeout_millis=10_000)
    rule = rocketmq_broker.faults.add("send", "delay", topic=TOPIC, delay="30s", times=1)
    done = []
    sender = threading.Thread(target=lambda: done.append(producer.send(b"slow")))
    sender.start()
    wait_for(lambda: rule.hits == 1, timeout=5)
    assert _bodies(rocketmq_broker) == [b"slow"]
    assert done == []
    time_travel("30s")
    sender.join(timeout=5)
    assert len(done) == 1


# -- ack ----------------------------------------------------------------------------------------
def test_a_dropped_ack_brings_the_message_back_with_redelivery_count_1(client, rocketmq_broker):
    consumer = _shared(client)
    client.create_producer(TOPIC).send(b"paid")
    rule = rocketmq_broker.faults.add("ack", "drop", group=SUB, times=1)
    first = consumer.receive(timeout_millis=5_000)
    assert first.redelivery_count() == 0
    consumer.acknowledge(first)
    wait_for(lambda: rule.hits == 1, timeout=5)         # the ack reached the broker, which lost it
    consumer.redeliver_unacknowledged_messages()
    again = consumer.receive(timeout_millis=5_000)
    assert (again.data(), again.message_id(), again.redelivery_count()) == (b"paid", first.message_id(), 1)
    consumer.acknowledge(again)
    wait_for(lambda: rocketmq_broker.core.subscriptions.acknowledged(SUB, STORED, 0), timeout=5)


# -- pull ---------------------------------------------------------------------------------------
def test_a_delayed_dispatch_waits_for_the_brokers_clock(client, rocketmq_broker, time_travel):
    rule = rocketmq_broker.faults.add("pull", "delay", group=SUB, delay="30s", times=1)
    consumer = _shared(client)
    client.create_producer(TOPIC).send(b"late")
    wait_for(lambda: rule.hits == 1, timeout=5)         # dispatched, and held back by the rule
    with pytest.raises(pulsar.Timeout):
        consumer.receive(timeout_millis=100)
    time_travel("30s")
    assert consumer.receive(timeout_millis=5_000).data() == b"late"


def test_a_duplicated_dispatch_is_seen_twice_and_stored_once(client, rocketmq_broker):
    rule = rocketmq_broker.faults.add("pull", "duplicate", topic=TOPIC, times=1)
    consumer = _shared(client)
    client.create_producer(TOPIC).send(b"twice")
    a = consumer.receive(timeout_millis=5_000)
    b = consumer.receive(timeout_millis=5_000)
    assert (a.data(), b.data()) == (b"twice", b"twice") and a.message_id() == b.message_id()
    assert rule.hits == 1 and _bodies(rocketmq_broker) == [b"twice"]
    consumer.acknowledge(a)
    consumer.acknowledge(b)                             # (the second ack of one message is harmless)
    wait_for(lambda: rocketmq_broker.core.subscriptions.acknowledged(SUB, STORED, 0), timeout=5)


def test_a_hold_stops_dispatch_to_its_subscription_until_it_is_removed(client, rocketmq_broker):
    hold = rocketmq_broker.faults.add("pull", "hold", group=SUB)
    held = _shared(client)
    other = client.subscribe(TOPIC, "audit", initial_position=pulsar.InitialPosition.Earliest)
    client.create_producer(TOPIC).send(b"wait")
    assert other.receive(timeout_millis=5_000).data() == b"wait"      # another subscription is not held
    with pytest.raises(pulsar.Timeout):
        held.receive(timeout_millis=200)
    assert hold.hits >= 1 and hold.rule.matched == hold.hits     # issue 47.8: a held dispatch counts, as in 4.x
    hold.remove()
    assert held.receive(timeout_millis=5_000).data() == b"wait"


def test_a_refused_flow_closes_the_consumer_which_comes_back_and_gets_its_messages(client, rocketmq_broker):
    rule = rocketmq_broker.faults.add("pull", "refuse", group=SUB, times=1)
    consumer = _shared(client)
    client.create_producer(TOPIC).send(b"after a reconnect")
    assert consumer.receive(timeout_millis=5_000).data() == b"after a reconnect"
    assert rule.hits == 1


# -- send back (nack) ---------------------------------------------------------------------------
def test_a_refused_nack_closes_the_consumer_and_the_message_comes_back_uncounted(client, rocketmq_broker):
    consumer = _shared(client, negative_ack_redelivery_delay_ms=50)
    client.create_producer(TOPIC).send(b"retry me")
    rule = rocketmq_broker.faults.add("send_back", "refuse", group=SUB, times=1)
    consumer.negative_acknowledge(consumer.receive(timeout_millis=5_000))
    back = consumer.receive(timeout_millis=5_000)
    assert (back.data(), back.redelivery_count(), rule.hits) == (b"retry me", 0, 1)
    consumer.negative_acknowledge(back)                 # no rule now: the nack counts
    assert consumer.receive(timeout_millis=5_000).redelivery_count() == 1


# -- heartbeat (CONNECT, SUBSCRIBE, PRODUCER) and route (lookups) --------------------------------
def test_a_refused_subscribe_raises_in_the_application(client, rocketmq_broker):
    rule = rocketmq_broker.faults.add("heartbeat", "refuse", group=SUB, error="NotAllowedError")
    with pytest.raises(pulsar.NotAllowedError):
        _shared(client)
    assert rule.hits == 1


def test_a_subscribe_refused_with_service_not_ready_ends_in_the_operation_timeout(impatient, rocketmq_broker):
    # (libpulsar 4.2.0 does not try a first SUBSCRIBE again after a retryable error: it
    # waits out its operation timeout)
    rule = rocketmq_broker.faults.add("heartbeat", "refuse", group=SUB, times=1)
    with pytest.raises(pulsar.Timeout):
        _shared(impatient)
    assert rule.hits == 1
    _shared(impatient).close()


def test_a_refused_lookup_raises_in_the_application(client, rocketmq_broker):
    rule = rocketmq_broker.faults.add("route", "refuse", topic=TOPIC, error="TopicNotFound")
    with pytest.raises(pulsar.TopicNotFound):
        client.create_producer(TOPIC)
    assert rule.hits == 1
    rule.remove()
    client.create_producer(TOPIC).send(b"found")
    assert _bodies(rocketmq_broker) == [b"found"]


def test_a_refused_producer_raises(impatient, rocketmq_broker):
    rule = rocketmq_broker.faults.add("heartbeat", "refuse", topic=TOPIC)
    with pytest.raises(pulsar.Timeout):
        impatient.create_producer(TOPIC)
    assert rule.hits >= 2


def test_a_refused_handshake_is_retried_by_the_client(pulsar_endpoint, rocketmq_broker):
    handshake = rocketmq_broker.faults.add("heartbeat", "refuse", times=1)       # the first: CONNECT
    c = pulsar.Client(pulsar_endpoint, operation_timeout_seconds=10)
    try:
        c.create_producer(TOPIC).send(b"connected")
    finally:
        c.close()
    [fault] = rocketmq_broker.events.of_kind(EventKind.FAULT)
    assert handshake.hits == 1 and fault.topic == ""                            # (a CONNECT is about no topic)
    assert _bodies(rocketmq_broker) == [b"connected"]
