"""Chunked messages end to end (issue 41, item 5): a message over the broker's largest
message (Pulsar's 5 MB, announced in CONNECTED) goes in chunks and the consumer gets it
whole; acked, every chunk is acknowledged; a negative ack brings the whole message back
with its redelivery count (the broker sends the chunks of a message again together: the
3.13.0 client names only the last chunk); a chunked dead letter (as a client whose
dead-letter producer chunks sends it, in raw frames) finds its original; and the store's
accounting counts a chunked message once."""
from __future__ import annotations

import base64

import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.pulsar import schema as s
from rocketmq_emulator.broker.fronts.pulsar.entries import METADATA_PROPERTY
from rocketmq_emulator.broker.pulsar_model.names import ledger_id
from rocketmq_emulator.store import MessageStore
from rocketmq_emulator.store.accounting import account_message_store
from tests.broker.fronts.pulsar.raw import call, command, connected, producer, send
from tests.support.pulsar_http import client_of, http, serve_pulsar

pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
SMALL = "pulsarMaxMessageSize=65536\n"        # chunks of about 64 KiB: the client chunks at the broker's size


def records(store, topic):
    out = []
    for offset in range(store.min_offset(topic, 0), store.max_offset(topic, 0)):
        out.append(store.look_message_by_offset(store.queue_entry(topic, 0, offset)[0]))
    return out


@pytest.mark.interop
def test_a_message_over_five_megabytes_goes_in_chunks_and_arrives_whole(tmp_path):
    server = serve_pulsar(tmp_path / "store")
    big = bytes(range(256)) * (12 * 1024 * 1024 // 256)            # 12 MiB
    try:
        client = client_of(server)
        consumer = client.subscribe("big", "s", initial_position=pulsar.InitialPosition.Earliest)
        producer = client.create_producer("big", chunking_enabled=True)
        msg_id = producer.send(big)
        got = consumer.receive(10000)
        assert got.data() == big
        consumer.acknowledge(got)
        consumer.close()                                            # (flushes the ack: every chunk's)
        stats = http(server.http_port, "GET", "/admin/v2/persistent/public/default/big/stats")[1]
        assert stats["msgInCounter"] == 3 and stats["subscriptions"]["s"]["msgBacklog"] == 0
        assert msg_id.entry_id() == 2                               # the client's id names the last chunk
        with pytest.raises(pulsar.MessageTooBig):                   # without chunking the client refuses it
            client.create_producer("big").send(big)
        client.close()
    finally:
        server.stop()
    with MessageStore(tmp_path / "store") as store:
        chunks = records(store, "pulsar|public|default|big")
        assert [r.properties["PULSAR_CHUNK"] for r in chunks] == ["0/3", "1/3", "2/3"]
        assert b"".join(r.body for r in chunks) == big
        counts = account_message_store(store)
    assert counts.produced_by_topic["pulsar|public|default|big"] == 1      # one message, not three records
    assert counts.succeeded == 1


@pytest.mark.interop
def test_a_negatively_acknowledged_chunked_message_comes_back_whole_with_its_count(tmp_path):
    server = serve_pulsar(tmp_path / "store", conf=SMALL)
    body = b"chunk me " * 25_000                                     # 225 KB: 4 chunks
    try:
        client = client_of(server)
        consumer = client.subscribe("nacked", "s", consumer_type=pulsar.ConsumerType.Shared,
                                    initial_position=pulsar.InitialPosition.Earliest,
                                    negative_ack_redelivery_delay_ms=100)
        client.create_producer("nacked", chunking_enabled=True).send(body, properties={"order": "7"})
        first = consumer.receive(5000)
        assert (first.data(), first.properties(), first.redelivery_count()) == (body, {"order": "7"}, 0)
        consumer.negative_acknowledge(first)
        again = consumer.receive(5000)
        assert (again.data(), again.redelivery_count()) == (body, 1)
        consumer.acknowledge(again)
        consumer.close()
        stats = http(server.http_port, "GET", "/admin/v2/persistent/public/default/nacked/stats")[1]
        assert stats["msgInCounter"] == 4 and stats["subscriptions"]["s"]["msgBacklog"] == 0
        client.close()
    finally:
        server.stop()
    with MessageStore(tmp_path / "store") as store:
        counts = account_message_store(store)
    assert counts.produced_by_topic["pulsar|public|default|nacked"] == 1 and counts.succeeded == 1


def _chunked_send(front, conn, producer_id, sequence_id, body, chunks, uuid, properties=None):
    size = -(-len(body) // chunks)
    replies = []
    for i in range(chunks):
        replies += send(front, conn, producer_id, sequence_id, body[i * size:(i + 1) * size],
                        send_fields={"is_chunk": True}, uuid=uuid, chunk_id=i, num_chunks_from_msg=chunks,
                        total_chunk_msg_size=len(body), properties=properties or [])
    return replies


def test_raw_frames_a_chunked_dead_letter_finds_its_chunked_original_and_counts_once():
    core = BrokerCore.in_memory(config=BrokerConfig(pulsar_max_message_size=4096))
    front, conn = connected(core=core)
    [ok] = producer(front, conn, "persistent://public/default/orders")
    assert ok.type == s.Type.PRODUCER_SUCCESS
    receipts = _chunked_send(front, conn, 0, 0, b"x" * 10_000, 3, "p-0")
    assert [r.send_receipt.message_id.entryId for r in receipts] == [0, 1, 2]
    # the subscription reads it, then the consumer gives up on it: a dead letter in chunks
    call(front, conn, command("SUBSCRIBE", "subscribe", topic="persistent://public/default/orders",
                              subscription="billing", subType=s.SubType.Shared, consumer_id=0, request_id=2,
                              initialPosition=s.InitialPosition.Earliest))
    call(front, conn, command("FLOW", "flow", consumer_id=0, messagePermits=10))
    front.pump()
    conn.outgoing.clear()
    origin = f"({ledger_id('pulsar|public|default|orders')},2,-1,-1)"
    dlq = "persistent://public/default/orders-billing-DLQ"
    producer(front, conn, dlq, producer_id=1, request_id=3)
    props = [s.message("KeyValue")(key="REAL_TOPIC", value="persistent://public/default/orders"),
             s.message("KeyValue")(key="ORIGIN_MESSAGE_ID", value=origin)]
    assert [r.type for r in _chunked_send(front, conn, 1, 0, b"x" * 10_000, 3, "d-0", props)] == \
        [s.Type.SEND_RECEIPT] * 3
    call(front, conn, command("ACK", "ack", consumer_id=0, ack_type=s.AckType.Individual,
                              message_id=[{"ledgerId": 0, "entryId": e} for e in (0, 1, 2)]))
    assert core.committed_offset("billing", "pulsar|public|default|orders", 0) == 3
    counts = account_message_store(core.store)
    per = {g.topic: g for g in counts.per_group if g.group == "billing"}
    assert counts.produced_by_topic == {"pulsar|public|default|orders": 1}      # the dead letter is no message
    assert per["pulsar|public|default|orders"].dead_lettered == 1 and counts.succeeded == 0
    dead = [core.store.look_message_by_offset(core.store.queue_entry("pulsar|public|default|orders-billing-DLQ", 0,
                                                                     o)[0]) for o in range(3)]
    meta = s.MessageMetadata.FromString(base64.b64decode(dead[2].properties[METADATA_PROPERTY]))
    assert meta.chunk_id == 2 and dead[2].properties["PULSAR_CHUNK"] == "2/3"
    assert dead[2].properties["PULSAR_CHUNK_OFFSETS"] == "0,1"


def test_raw_frames_a_resent_chunked_message_is_not_stored_again_with_deduplication():
    core = BrokerCore.in_memory(config=BrokerConfig(broker_deduplication_enabled=True, pulsar_max_message_size=4096))
    front, conn = connected(core=core)
    producer(front, conn, "persistent://public/default/c", producer_name="chunker")
    first = _chunked_send(front, conn, 0, 5, b"y" * 9000, 3, "chunker-5")
    again = _chunked_send(front, conn, 0, 5, b"y" * 9000, 3, "chunker-5")
    assert [r.send_receipt.message_id.entryId for r in first] == [0, 1, 2]
    assert {r.send_receipt.message_id.entryId for r in again} == {(1 << 64) - 1}
    assert core.store.max_offset("pulsar|public|default|c", 0) == 3
