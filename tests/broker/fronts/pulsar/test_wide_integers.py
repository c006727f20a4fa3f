"""uint64 fields at their largest (issue 46, item 3). Pulsar's broker reads every uint64 of
PulsarApi.proto into a Java long, so 2^64-1 is -1 there and Long.MAX_VALUE + 1 wraps to
Long.MIN_VALUE; the same is done here. A PRODUCER with topic_epoch=2^64-1 and a SEND
with sequence_id=2^64-1 used to leave values a later PRODUCER_SUCCESS could not encode
("Value out of range"), so every later Exclusive producer of that topic, and every later
producer of that name, failed: also after a restart, the epoch being saved. The other
such fields a client sends or the broker echoes: a publish time (the record could not be
encoded), a seek's publish time, a consumer's permits below zero in CONSUMER_STATS. In
raw frames, then with the real client."""
from __future__ import annotations

import socket

import pytest

from rocketmq_emulator.broker.config import BrokerConfig
from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.pulsar import schema as s
from rocketmq_emulator.broker.fronts.pulsar.frames import FrameDecoder, encode_payload, encode_simple
from rocketmq_emulator.broker.fronts.pulsar.front import PulsarFront
from rocketmq_emulator.broker.pulsar_model.names import store_topic
from rocketmq_emulator.broker.pulsar_model.producers import PRODUCERS_CONFIG
from rocketmq_emulator.delay_scheduler import VirtualClock
from tests.broker.fronts.pulsar.raw import call, command, connected, producer, pushed, send
from tests.support.pulsar_http import client_of, serve_pulsar

U64_MAX = (1 << 64) - 1
LONG_MAX = (1 << 63) - 1
TOPIC = "persistent://public/default/wide"
EXCLUSIVE = s.ProducerAccessMode.Exclusive


def _close(front, conn, producer_id: int = 0):
    [done] = call(front, conn, command("CLOSE_PRODUCER", "close_producer", producer_id=producer_id, request_id=99))
    assert done.type == s.Type.SUCCESS


def test_an_epoch_of_2_64_minus_1_is_minus_1_and_the_next_exclusive_producer_gets_0():
    front, conn = connected()
    [ok] = producer(front, conn, TOPIC, producer_access_mode=EXCLUSIVE, topic_epoch=U64_MAX)
    assert ok.type == s.Type.PRODUCER_SUCCESS and ok.producer_success.topic_epoch == U64_MAX      # -1, echoed
    _close(front, conn)
    [next_one] = producer(front, conn, TOPIC, producer_id=1, request_id=2, producer_access_mode=EXCLUSIVE)
    assert next_one.type == s.Type.PRODUCER_SUCCESS and next_one.producer_success.topic_epoch == 0
    assert [r.type for r in send(front, conn, 1, 0, b"still a topic")] == [s.Type.SEND_RECEIPT]


def test_an_epoch_of_long_max_wraps_to_long_min_as_a_java_long_does():
    front, conn = connected()
    producer(front, conn, TOPIC, producer_access_mode=EXCLUSIVE, topic_epoch=LONG_MAX)
    _close(front, conn)
    [next_one] = producer(front, conn, TOPIC, producer_id=1, request_id=2, producer_access_mode=EXCLUSIVE)
    assert next_one.type == s.Type.PRODUCER_SUCCESS and next_one.producer_success.topic_epoch == 1 << 63


def test_a_sequence_id_of_2_64_minus_1_is_minus_1_and_the_producer_name_comes_back():
    front, conn = connected()
    producer(front, conn, TOPIC, producer_name="p")
    [receipt] = send(front, conn, 0, U64_MAX, b"last", send_fields={"highest_sequence_id": U64_MAX})
    assert receipt.type == s.Type.SEND_RECEIPT and receipt.send_receipt.sequence_id == U64_MAX      # echoed
    assert receipt.send_receipt.highest_sequence_id == U64_MAX
    _close(front, conn)
    [again] = producer(front, conn, TOPIC, producer_id=1, request_id=2, producer_name="p")
    assert again.type == s.Type.PRODUCER_SUCCESS and again.producer_success.last_sequence_id == -1
    [receipt] = send(front, conn, 1, LONG_MAX, b"largest long")
    assert receipt.type == s.Type.SEND_RECEIPT
    _close(front, conn, 1)
    [again] = producer(front, conn, TOPIC, producer_id=2, request_id=3, producer_name="p")
    assert again.producer_success.last_sequence_id == LONG_MAX


def test_the_saved_epoch_and_sequence_ids_load_after_a_restart(tmp_path):
    root = tmp_path / "store"
    core = BrokerCore.open(root, VirtualClock(), BrokerConfig())
    front, conn = connected(PulsarFront(core, "pulsar://127.0.0.1:6650"))
    producer(front, conn, TOPIC, producer_name="p", producer_access_mode=EXCLUSIVE, topic_epoch=U64_MAX)
    assert send(front, conn, 0, U64_MAX, b"x")[0].type == s.Type.SEND_RECEIPT
    core.close()
    core = BrokerCore.open(root, VirtualClock(), BrokerConfig())
    front, conn = connected(PulsarFront(core, "pulsar://127.0.0.1:6650"))
    [ok] = producer(front, conn, TOPIC, producer_name="p", producer_access_mode=EXCLUSIVE)
    assert ok.type == s.Type.PRODUCER_SUCCESS
    assert (ok.producer_success.topic_epoch, ok.producer_success.last_sequence_id) == (0, -1)
    core.close()


def test_a_config_saved_with_values_past_64_bits_loads():
    """config/pulsarProducers.json as the broker before this fix wrote it (2^64-1 as is),
    or edited by hand: each value read as a Java long."""
    core = BrokerCore.in_memory()
    core.store.save_config(PRODUCERS_CONFIG, {store_topic(TOPIC): {
        "offset": 0, "epoch": U64_MAX, "sequences": {"p": U64_MAX, "q": (1 << 70) + 5}}})
    front, conn = connected(PulsarFront(core, "pulsar://127.0.0.1:6650"))
    [ok] = producer(front, conn, TOPIC, producer_name="p", producer_access_mode=EXCLUSIVE)
    assert ok.type == s.Type.PRODUCER_SUCCESS
    assert (ok.producer_success.topic_epoch, ok.producer_success.last_sequence_id) == (0, -1)
    _close(front, conn)
    [q] = producer(front, conn, TOPIC, producer_id=1, request_id=2, producer_name="q")
    assert q.type == s.Type.PRODUCER_SUCCESS and q.producer_success.last_sequence_id == 5


def test_consumer_stats_with_permits_below_zero_are_answered():
    """A batch takes all its messages' permits, so a consumer's permits go below zero (a
    Java int in Pulsar, written into the uint64 as protobuf-java writes it)."""
    front, conn = connected()
    producer(front, conn, TOPIC)
    call(front, conn, command("SUBSCRIBE", "subscribe", topic=TOPIC, subscription="s", consumer_id=0, request_id=5,
                              subType=s.SubType.Exclusive, initialPosition=s.InitialPosition.Earliest))
    send(front, conn, 0, 0, b"ten in one", num_messages_in_batch=10)
    call(front, conn, command("FLOW", "flow", consumer_id=0, messagePermits=1))
    front.pump()
    [stats] = call(front, conn, command("CONSUMER_STATS", "consumerStats", consumer_id=0, request_id=6))
    assert stats.type == s.Type.CONSUMER_STATS_RESPONSE and stats.consumerStatsResponse.availablePermits == U64_MAX - 8


# -- over a socket to `serve`, then the real client ------------------------------------------------
def _exchange(port: int, commands: list) -> list:
    """Each (command, metadata or None) over one connection; the replies' commands."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        decoder, got = FrameDecoder(), []
        for cmd, meta in commands:
            data = encode_payload(cmd.SerializeToString(), meta.SerializeToString(), b"raw") if meta is not None \
                else encode_simple(cmd.SerializeToString())
            sock.sendall(data)
            want = len(got) + 1
            while len(got) < want:
                chunk = sock.recv(1 << 16)
                assert chunk, f"the server closed the connection after {got}"
                got += [s.BaseCommand.FromString(f.command) for f in decoder.feed(chunk)]
        return got


@pytest.mark.interop
def test_the_real_clients_producers_go_on_after_the_largest_epoch_and_sequence_id(tmp_path):
    pulsar = pytest.importorskip("pulsar", reason="needs pulsar-client: ./dev test installs it")
    server = serve_pulsar(tmp_path / "store")
    try:
        replies = _exchange(server.pulsar_port, [
            (command("CONNECT", "connect", client_version="raw", protocol_version=20), None),
            (command("PRODUCER", "producer", topic=TOPIC, producer_id=0, request_id=1, producer_name="app",
                     producer_access_mode=EXCLUSIVE, topic_epoch=U64_MAX), None),
            (command("SEND", "send", producer_id=0, sequence_id=U64_MAX),
             s.MessageMetadata(producer_name="app", sequence_id=U64_MAX, publish_time=1)),
            (command("CLOSE_PRODUCER", "close_producer", producer_id=0, request_id=2), None)])
        assert [r.type for r in replies] == [s.Type.CONNECTED, s.Type.PRODUCER_SUCCESS, s.Type.SEND_RECEIPT,
                                             s.Type.SUCCESS]
        client = client_of(server, timeout=5)
        exclusive = client.create_producer(TOPIC, producer_name="app", access_mode=pulsar.ProducerAccessMode.Exclusive)
        assert exclusive.last_sequence_id() == -1
        exclusive.send(b"after")
        exclusive.close()
        reader = client.create_reader(TOPIC, pulsar.MessageId.earliest)
        assert [reader.read_next(5000).data() for _ in range(2)] == [b"raw", b"after"]
        client.close()
    finally:
        server.stop()
    assert "Traceback" not in server.proc.stderr.read()


def test_a_publish_time_of_2_64_minus_1_is_stored_with_the_brokers_time():
    """publish_time is a uint64 the Java broker reads as a long (-1 here): the record gets
    the broker's time, as for a message without one, and the metadata goes out as sent."""
    front, conn = connected()
    producer(front, conn, TOPIC)
    meta = s.MessageMetadata(producer_name="p", sequence_id=0, publish_time=U64_MAX)
    [receipt] = call(front, conn, command("SEND", "send", producer_id=0, sequence_id=0), meta.SerializeToString(),
                     b"timeless")
    assert receipt.type == s.Type.SEND_RECEIPT
    call(front, conn, command("SUBSCRIBE", "subscribe", topic=TOPIC, subscription="s", consumer_id=0, request_id=5,
                              subType=s.SubType.Exclusive, initialPosition=s.InitialPosition.Earliest))
    call(front, conn, command("FLOW", "flow", consumer_id=0, messagePermits=1))
    front.pump()
    [message] = [FrameDecoder().feed(data)[0] for data in conn.outgoing]
    got, payload = message.metadata_and_payload()
    assert s.MessageMetadata.FromString(got).publish_time == U64_MAX and payload == b"timeless"


def test_a_seek_to_the_publish_time_2_64_minus_1_is_a_seek_to_minus_1_the_start():
    front, conn = connected()
    producer(front, conn, TOPIC)
    for i in range(3):
        send(front, conn, 0, i, b"m%d" % i)
    call(front, conn, command("SUBSCRIBE", "subscribe", topic=TOPIC, subscription="s", consumer_id=0, request_id=5,
                              subType=s.SubType.Exclusive, initialPosition=s.InitialPosition.Latest))
    replies = call(front, conn, command("SEEK", "seek", consumer_id=0, request_id=6, message_publish_time=U64_MAX))
    assert [r.type for r in replies] == [s.Type.CLOSE_CONSUMER, s.Type.SUCCESS]
    call(front, conn, command("SUBSCRIBE", "subscribe", topic=TOPIC, subscription="s", consumer_id=1, request_id=7,
                              subType=s.SubType.Exclusive))
    call(front, conn, command("FLOW", "flow", consumer_id=1, messagePermits=10))
    front.pump()
    assert [m.message.message_id.entryId for m in pushed(conn) if m.type == s.Type.MESSAGE] == [0, 1, 2]
