"""The real Python Pulsar client (pulsar-client 3.13.0, the C++ client 4.2.0 inside)
against the Pulsar front (issue 21): handshake, lookups, producers and batches into the
store, consumers on the core's subscriptions (acks, batch-index acks, negative acks with
the redelivery count, a closed consumer's messages to another, Exclusive's one consumer,
the dead-letter policy, readers, Key_Shared, seek). The listener runs in the test process
on a loop thread of its own; tests/broker/fronts/pulsar/test_serve_pulsar.py drives `serve`."""
from __future__ import annotations

import asyncio
import base64
import threading

import pytest

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")

from rocketmq_emulator.broker.fronts.pulsar.listener import PulsarServer  # noqa: E402
from rocketmq_emulator.broker.core import BrokerCore  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.front import METADATA_PROPERTY, ledger_id  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.schema import MessageMetadata  # noqa: E402
from rocketmq_emulator.delay_scheduler import SystemClock  # noqa: E402
from tests.support.processes import wait_for  # noqa: E402

pytestmark = pytest.mark.interop
STORED = "pulsar|public|default|orders"


@pytest.fixture
def broker():
    """A core and the Pulsar listener on a loop thread of their own (every core call is on it)."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    core = BrokerCore.in_memory(SystemClock())
    server = PulsarServer(core, "127.0.0.1", 0, lambda: None)
    asyncio.run_coroutine_threadsafe(server.start(), loop).result(10)

    def on_loop(fn):
        return asyncio.run_coroutine_threadsafe(_call(fn), loop).result(10)

    yield core, server, on_loop
    asyncio.run_coroutine_threadsafe(server.stop(), loop).result(10)
    loop.call_soon_threadsafe(loop.stop)
    thread.join(10)


async def _call(fn):
    return fn()


def records(core, topic=STORED):
    n = core.store.max_offset(topic, 0)
    return [core.store.look_message_by_offset(core.store.queue_entry(topic, 0, i)[0]) for i in range(n)]


def test_a_producer_stores_each_message_with_its_metadata_and_gets_growing_ids(broker):
    core, server, on_loop = broker
    client = pulsar.Client(f"pulsar://127.0.0.1:{server.port}", operation_timeout_seconds=10)
    try:
        producer = client.create_producer("orders")
        ids = [producer.send(b"order-%d" % i, properties={"shop": "north"}, partition_key=f"k{i}")
               for i in range(3)]
        assert [(m.ledger_id(), m.entry_id()) for m in ids] == [(ledger_id(STORED), i) for i in range(3)]
        producer.close()
    finally:
        client.close()
    recs = on_loop(lambda: records(core))
    assert [r.body for r in recs] == [b"order-0", b"order-1", b"order-2"]
    assert recs[1].properties["shop"] == "north" and recs[1].properties["KEYS"] == "k1"
    meta = MessageMetadata.FromString(base64.b64decode(recs[2].properties[METADATA_PROPERTY]))
    assert meta.sequence_id == 2 and meta.partition_key == "k2" and meta.producer_name.startswith("rocketmq-emulator")


def test_a_batch_is_one_entry_and_async_sends_keep_their_order(broker):
    core, server, on_loop = broker
    client = pulsar.Client(f"pulsar://127.0.0.1:{server.port}", operation_timeout_seconds=10)
    done = []
    try:
        producer = client.create_producer("persistent://public/default/orders", batching_enabled=True,
                                          batching_max_publish_delay_ms=50, batching_max_messages=5)
        for i in range(5):
            producer.send_async(b"b%d" % i, lambda res, msg_id: done.append((res, msg_id)))
        producer.flush()
        wait_for(lambda: len(done) == 5)                    # (callbacks run on the client's own thread)
        assert all(res == pulsar.Result.Ok for res, _ in done)
        assert {(m.ledger_id(), m.entry_id()) for _, m in done} == {(ledger_id(STORED), 0)}
        assert sorted(m.batch_index() for _, m in done) == [0, 1, 2, 3, 4]
        producer.close()
    finally:
        client.close()
    [rec] = on_loop(lambda: records(core))
    meta = MessageMetadata.FromString(base64.b64decode(rec.properties[METADATA_PROPERTY]))
    assert meta.HasField("num_messages_in_batch") and meta.num_messages_in_batch == 5


def client_of(server):
    return pulsar.Client(f"pulsar://127.0.0.1:{server.port}", operation_timeout_seconds=10)


def test_a_shared_consumer_receives_acks_and_the_cursor_is_the_groups_committed_offset(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        producer = client.create_producer("orders")
        for i in range(3):
            producer.send(b"o%d" % i, properties={"n": str(i)})
        consumer = client.subscribe("orders", "billing", consumer_type=pulsar.ConsumerType.Shared,
                                    initial_position=pulsar.InitialPosition.Earliest)
        got = [consumer.receive(timeout_millis=5000) for _ in range(3)]
        assert [(m.data(), m.properties()["n"], m.redelivery_count()) for m in got] == \
            [(b"o0", "0", 0), (b"o1", "1", 0), (b"o2", "2", 0)]
        for m in got:
            consumer.acknowledge(m)
        producer.send(b"live")                               # pushed as it is stored
        live = consumer.receive(timeout_millis=5000)
        assert live.data() == b"live"
        consumer.acknowledge(live)
        consumer.close()                                     # flushes the grouped acks first
    finally:
        client.close()
    assert on_loop(lambda: core.committed_offset("billing", STORED, 0)) == 4


def test_a_negative_ack_comes_back_with_its_redelivery_count(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        consumer = client.subscribe("orders", "retrying", consumer_type=pulsar.ConsumerType.Shared,
                                    negative_ack_redelivery_delay_ms=100)
        client.create_producer("orders").send(b"poison")
        counts = []
        for _ in range(3):
            m = consumer.receive(timeout_millis=5000)
            counts.append((m.data(), m.redelivery_count()))
            consumer.negative_acknowledge(m)
        assert counts == [(b"poison", 0), (b"poison", 1), (b"poison", 2)]
    finally:
        client.close()


def test_what_a_closed_consumer_held_goes_to_the_other_consumer(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        first = client.subscribe("orders", "pair", consumer_type=pulsar.ConsumerType.Shared, receiver_queue_size=10)
        client.create_producer("orders").send(b"held")
        assert first.receive(timeout_millis=5000).data() == b"held"
        second = client.subscribe("orders", "pair", consumer_type=pulsar.ConsumerType.Shared)
        first.close()                                        # never acknowledged
        again = second.receive(timeout_millis=5000)
        assert (again.data(), again.redelivery_count()) == (b"held", 0)      # a disconnect is not counted
    finally:
        client.close()


def test_an_exclusive_subscription_refuses_a_second_consumer(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        client.subscribe("orders", "solo")                   # Exclusive is the default
        with pytest.raises(pulsar.ConsumerBusy):
            client.subscribe("orders", "solo")
    finally:
        client.close()


def test_the_clients_dead_letter_policy_ends_in_a_dlq_topic_kept_for_its_initial_subscription(broker):
    """The C++ client moves a message past max_redeliver_count to the dead-letter topic
    through a producer that names initial_subscription_name (reference §6): the broker
    creates that subscription, so the dead letter waits for it."""
    core, server, on_loop = broker
    client = client_of(server)
    try:
        policy = pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=2, dead_letter_topic="orders-DLQ",
                                                 initial_subscription_name="dlq-audit")
        consumer = client.subscribe("orders", "strict", consumer_type=pulsar.ConsumerType.Shared,
                                    negative_ack_redelivery_delay_ms=100, dead_letter_policy=policy)
        client.create_producer("orders").send(b"poison", properties={"why": "test"})
        for expected in range(3):
            m = consumer.receive(timeout_millis=5000)
            assert m.redelivery_count() == expected
            consumer.negative_acknowledge(m)
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=1000)            # it went to the DLQ, not back here
        audit = client.subscribe("orders-DLQ", "dlq-audit")
        dead = audit.receive(timeout_millis=5000)
        assert dead.data() == b"poison" and dead.properties()["why"] == "test"
        assert "ORIGIN_MESSAGE_ID" in dead.properties() and dead.properties()["REAL_TOPIC"].endswith("/orders")
    finally:
        client.close()
    # the stored copy names its original in the store's terms (what accounting and 4.x read)
    [original] = on_loop(lambda: records(core))
    [copy] = on_loop(lambda: records(core, "pulsar|public|default|orders-DLQ"))
    assert (copy.properties["REAL_TOPIC"], copy.properties["ORIGIN_MESSAGE_ID"], copy.reconsume_times) == \
        (STORED, original.offset_msg_id, 3)


def test_a_reader_reads_from_earliest_or_a_message_id_and_leaves_no_subscription(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        producer = client.create_producer("orders")
        ids = [producer.send(b"r%d" % i) for i in range(4)]
        reader = client.create_reader("orders", pulsar.MessageId.earliest)
        assert [reader.read_next(5000).data() for _ in range(4)] == [b"r0", b"r1", b"r2", b"r3"]
        reader.close()
        later = client.create_reader("orders", ids[1])                  # after r1 (not inclusive)
        assert later.read_next(5000).data() == b"r2"
        later.close()
        inclusive = client.create_reader("orders", ids[1], start_message_id_inclusive=True)
        assert inclusive.read_next(5000).data() == b"r1"
        inclusive.close()
    finally:
        client.close()
    groups = on_loop(lambda: [g for (t, g) in [k.rsplit("@", 1) for k in core.store.offset_table()]])
    assert not [g for g in groups if g.startswith("reader")]              # nothing committed for readers


def test_key_shared_keeps_each_key_on_one_consumer(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        a = client.subscribe("orders", "keyed", consumer_type=pulsar.ConsumerType.KeyShared)
        b = client.subscribe("orders", "keyed", consumer_type=pulsar.ConsumerType.KeyShared)
        producer = client.create_producer("orders")
        for i in range(24):
            producer.send(b"%d" % i, partition_key=f"key{i % 6}")
        owner: dict[str, set[str]] = {}
        got = 0
        for name, consumer in (("a", a), ("b", b)):
            while True:
                try:
                    m = consumer.receive(timeout_millis=700)
                except pulsar.Timeout:
                    break
                owner.setdefault(m.partition_key(), set()).add(name)
                consumer.acknowledge(m)
                got += 1
        assert got == 24 and len(owner) == 6 and all(len(v) == 1 for v in owner.values())
    finally:
        client.close()


def test_seek_and_the_last_message_id(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        producer = client.create_producer("orders")
        for i in range(5):
            producer.send(b"s%d" % i)
        consumer = client.subscribe("orders", "rewind", initial_position=pulsar.InitialPosition.Earliest)
        for _ in range(5):
            consumer.acknowledge(consumer.receive(timeout_millis=5000))
        consumer.seek(pulsar.MessageId.earliest)
        assert consumer.receive(timeout_millis=5000).data() == b"s0"     # from the start again
        reader = client.create_reader("orders", pulsar.MessageId.earliest)
        seen = []
        while reader.has_message_available():
            seen.append(reader.read_next(5000).data())
        assert seen == [b"s0", b"s1", b"s2", b"s3", b"s4"]
        empty = client.create_reader("nothing-here", pulsar.MessageId.earliest)
        assert not empty.has_message_available()
    finally:
        client.close()


def test_batch_index_acks_leave_only_the_unacknowledged_messages_of_a_batch_to_come_back(broker):
    """With batch_index_ack_enabled the client acks messages of a batch one by one (ACK
    with ack_set); the batch redelivered to another consumer holds only the others."""
    core, server, on_loop = broker
    client = client_of(server)
    done = []
    try:
        first = client.subscribe("orders", "bia", consumer_type=pulsar.ConsumerType.Shared,
                                 batch_index_ack_enabled=True, initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer("orders", batching_enabled=True, batching_max_publish_delay_ms=50,
                                          batching_max_messages=4)
        for i in range(4):
            producer.send_async(b"x%d" % i, lambda res, msg_id: done.append(res))
        producer.flush()
        got = [first.receive(timeout_millis=5000) for _ in range(4)]
        assert [m.data() for m in got] == [b"x0", b"x1", b"x2", b"x3"]
        first.acknowledge(got[1])
        first.acknowledge(got[2])
        wait_for(lambda: on_loop(lambda: core.subscriptions.cursors()) and
                 on_loop(lambda: dict(core.subscriptions._cursors[("bia", STORED)].partial)) == {0: 0b1001})
        second = client.subscribe("orders", "bia", consumer_type=pulsar.ConsumerType.Shared,
                                  batch_index_ack_enabled=True)
        first.close()
        again = [second.receive(timeout_millis=5000) for _ in range(2)]
        assert [m.data() for m in again] == [b"x0", b"x3"]
        with pytest.raises(pulsar.Timeout):
            second.receive(timeout_millis=300)               # x1 and x2 stay acknowledged
        for m in again:
            second.acknowledge(m)
        second.close()
    finally:
        client.close()
    assert on_loop(lambda: core.committed_offset("bia", STORED, 0)) == 1


def test_unsubscribe_deletes_the_subscription_and_is_refused_while_another_consumer_is_attached(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        client.create_producer("orders").send(b"before")
        first = client.subscribe("orders", "gone", consumer_type=pulsar.ConsumerType.Shared,
                                 initial_position=pulsar.InitialPosition.Earliest)
        other = client.subscribe("orders", "gone", consumer_type=pulsar.ConsumerType.Shared)
        with pytest.raises(pulsar.PulsarException):
            first.unsubscribe()
        other.close()
        first.unsubscribe()
        assert on_loop(lambda: ("gone", STORED) in core.subscriptions.cursors()) is False
        assert on_loop(lambda: core.store.query_offset("gone", STORED, 0)) == -1
        again = client.subscribe("orders", "gone", consumer_type=pulsar.ConsumerType.Shared)   # Latest: a new one
        with pytest.raises(pulsar.Timeout):
            again.receive(timeout_millis=300)
    finally:
        client.close()


def test_failover_sends_to_the_active_consumer_and_what_it_held_to_the_next_when_it_leaves(broker):
    core, server, on_loop = broker
    client = client_of(server)
    try:
        first = client.subscribe("orders", "fo", consumer_type=pulsar.ConsumerType.Failover,
                                 initial_position=pulsar.InitialPosition.Earliest)
        second = client.subscribe("orders", "fo", consumer_type=pulsar.ConsumerType.Failover)
        producer = client.create_producer("orders")
        for i in range(3):
            producer.send(b"f%d" % i)
        got = [first.receive(timeout_millis=5000) for _ in range(3)]
        assert [m.data() for m in got] == [b"f0", b"f1", b"f2"]
        with pytest.raises(pulsar.Timeout):
            second.receive(timeout_millis=300)                # not the active one
        first.acknowledge(got[0])
        first.close()                                        # f1 and f2 were never acknowledged
        moved = [second.receive(timeout_millis=5000) for _ in range(2)]
        assert [(m.data(), m.redelivery_count()) for m in moved] == [(b"f1", 0), (b"f2", 0)]
        second.acknowledge_cumulative(moved[-1])
        second.close()
    finally:
        client.close()
    assert on_loop(lambda: core.committed_offset("fo", STORED, 0)) == 3


def test_a_dead_letter_topic_nobody_subscribes_to_keeps_its_messages(broker):
    """Seed 003: on Pulsar, dead letters sent to a DLQ topic with no subscription (no
    initial_subscription_name) can be lost to retention. Here the store keeps them, and a
    subscription made later from the earliest position reads them."""
    core, server, on_loop = broker
    client = client_of(server)
    try:
        policy = pulsar.ConsumerDeadLetterPolicy(max_redeliver_count=1, dead_letter_topic="orders-lost-DLQ")
        consumer = client.subscribe("orders", "careless", consumer_type=pulsar.ConsumerType.Shared,
                                    negative_ack_redelivery_delay_ms=100, dead_letter_policy=policy)
        client.create_producer("orders").send(b"poison")
        for _ in range(2):
            consumer.negative_acknowledge(consumer.receive(timeout_millis=5000))
        wait_for(lambda: on_loop(lambda: core.store.max_offset("pulsar|public|default|orders-lost-DLQ", 0)) == 1)
        assert on_loop(lambda: [g for g, t in core.subscriptions.cursors() if t.endswith("orders-lost-DLQ")]) == []
        later = client.subscribe("orders-lost-DLQ", "found-later", initial_position=pulsar.InitialPosition.Earliest)
        assert later.receive(timeout_millis=5000).data() == b"poison"
    finally:
        client.close()


def test_an_unacknowledged_message_comes_back_after_the_ack_timeout_with_its_count(broker):
    """The client's ack timeout (at least 10 s, its own real-time timer; reference §7)
    asks for the redelivery; the broker counts it as a negative ack's."""
    core, server, on_loop = broker
    client = client_of(server)
    try:
        consumer = client.subscribe("orders", "forgetful", consumer_type=pulsar.ConsumerType.Shared,
                                    unacked_messages_timeout_ms=10_000)
        client.create_producer("orders").send(b"unanswered")
        first = consumer.receive(timeout_millis=5000)
        again = consumer.receive(timeout_millis=20_000)       # ~11 s: the timeout plus the client's 1 s tick
        assert (first.redelivery_count(), again.data(), again.redelivery_count()) == (0, b"unanswered", 1)
        consumer.acknowledge(again)
    finally:
        client.close()
