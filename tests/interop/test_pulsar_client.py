"""The real Python Pulsar client (pulsar-client 3.13.0, the C++ client 4.2.0 inside)
against the Pulsar front (issue 21, first slice): handshake, lookups, producers and sends
into the store. Subscriptions are not served yet; they are refused with an error."""
from __future__ import annotations

import asyncio
import base64
import threading

import pytest

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")

from rocketmq_emulator.broker.adapters.pulsar_server import PulsarServer  # noqa: E402
from rocketmq_emulator.broker.core import BrokerCore  # noqa: E402
from rocketmq_emulator.broker.pulsar_front.front import METADATA_PROPERTY, ledger_id  # noqa: E402
from rocketmq_emulator.broker.pulsar_front.schema import MessageMetadata  # noqa: E402
from rocketmq_emulator.delay_scheduler import SystemClock  # noqa: E402

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
        assert len(done) == 5 and all(res == pulsar.Result.Ok for res, _ in done)
        assert {(m.ledger_id(), m.entry_id()) for _, m in done} == {(ledger_id(STORED), 0)}
        assert sorted(m.batch_index() for _, m in done) == [0, 1, 2, 3, 4]
        producer.close()
    finally:
        client.close()
    [rec] = on_loop(lambda: records(core))
    meta = MessageMetadata.FromString(base64.b64decode(rec.properties[METADATA_PROPERTY]))
    assert meta.HasField("num_messages_in_batch") and meta.num_messages_in_batch == 5


def test_a_subscription_is_refused_for_now_and_the_connection_goes_on(broker):
    core, server, on_loop = broker
    client = pulsar.Client(f"pulsar://127.0.0.1:{server.port}", operation_timeout_seconds=5)
    try:
        with pytest.raises(Exception):
            client.subscribe("orders", "sub")
        producer = client.create_producer("orders")
        assert producer.send(b"after").entry_id() == 0
    finally:
        client.close()
