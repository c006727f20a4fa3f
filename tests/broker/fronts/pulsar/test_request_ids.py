"""Every command of PulsarApi.proto that carries a request_id is answered with that id
(issue 35, item 13): a client waits for each one, so silence blocks it. ACK with a
request_id (ack receipts: the Java client's ackReceiptEnabled) gets ACK_RESPONSE, with an
error where the ack is refused; the commands this broker does not serve (transactions,
topic-list watchers) get the error a broker without them sends (NotAllowedError); the
namespace's topic list, consumer stats and schema look-ups get their own responses.
Raw frames here, in process; over a socket to `serve`, and the real client's regex
subscription, below."""
from __future__ import annotations

import re
import socket

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.broker.core import BrokerCore  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar import schema as s  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.frames import FrameDecoder, encode_payload, encode_simple  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.front import Connection, PulsarFront  # noqa: E402

TOPIC = "persistent://public/default/receipts"


def call(front, conn, cmd, metadata=None, payload=b""):
    data = (encode_payload(cmd.SerializeToString(), metadata, payload) if metadata is not None
            else encode_simple(cmd.SerializeToString()))
    [frame] = FrameDecoder().feed(data)
    return [s.BaseCommand.FromString(f.command) for out in front.handle(conn, frame) for f in FrameDecoder().feed(out)]


def connected():
    front = PulsarFront(BrokerCore.in_memory(), "pulsar://127.0.0.1:6650")
    conn = Connection()
    call(front, conn, s.BaseCommand(type=s.Type.CONNECT, connect={"client_version": "t", "protocol_version": 20}))
    return front, conn


def with_a_message(front, conn, sub_type=s.SubType.Shared):
    """Consumer 0 on TOPIC, subscription "sub", holding the entry 0 a producer sent."""
    call(front, conn, s.BaseCommand(type=s.Type.SUBSCRIBE, subscribe={
        "topic": TOPIC, "subscription": "sub", "subType": sub_type, "consumer_id": 0, "request_id": 1,
        "initialPosition": s.InitialPosition.Earliest}))
    call(front, conn, s.BaseCommand(type=s.Type.PRODUCER, producer={"topic": TOPIC, "producer_id": 0, "request_id": 2}))
    for seq in (0, 1):
        meta = s.MessageMetadata(producer_name="p", sequence_id=seq, publish_time=1).SerializeToString()
        call(front, conn, s.BaseCommand(type=s.Type.SEND, send={"producer_id": 0, "sequence_id": seq}), meta, b"m")
    call(front, conn, s.BaseCommand(type=s.Type.FLOW, flow={"consumer_id": 0, "messagePermits": 10}))
    front.pump()
    conn.outgoing.clear()


def ack(consumer_id=0, entry=0, request_id=None, **fields):
    a = {"consumer_id": consumer_id, "ack_type": s.AckType.Individual,
         "message_id": [{"ledgerId": 0, "entryId": entry}], **fields}
    if request_id is not None:
        a["request_id"] = request_id
    return s.BaseCommand(type=s.Type.ACK, ack=a)


def test_an_ack_with_a_request_id_gets_an_ack_response_and_one_without_none():
    front, conn = connected()
    with_a_message(front, conn)
    [reply] = call(front, conn, ack(entry=0, request_id=77))
    assert reply.type == s.Type.ACK_RESPONSE
    r = reply.ackResponse
    assert (r.consumer_id, r.request_id, r.HasField("error")) == (0, 77, False)
    assert call(front, conn, ack(entry=1)) == []                  # no request_id: no receipt, as Pulsar
    assert front.core.store.query_offset("sub", "pulsar|public|default|receipts", 0) == 2   # both applied


def test_a_cumulative_ack_with_a_request_id_is_answered_too():
    front, conn = connected()
    with_a_message(front, conn, s.SubType.Exclusive)
    cumulative = ack(entry=1, request_id=5, ack_type=s.AckType.Cumulative)
    [reply] = call(front, conn, cumulative)
    assert (reply.type, reply.ackResponse.request_id, reply.ackResponse.HasField("error")) == (
        s.Type.ACK_RESPONSE, 5, False)
    assert front.core.store.query_offset("sub", "pulsar|public|default|receipts", 0) == 2


def test_an_ack_that_cannot_be_applied_gets_an_ack_response_with_its_error():
    front, conn = connected()
    with_a_message(front, conn)
    [reply] = call(front, conn, ack(consumer_id=9, request_id=3))          # no such consumer here
    assert (reply.type, reply.ackResponse.request_id, reply.ackResponse.consumer_id) == (s.Type.ACK_RESPONSE, 3, 9)
    assert reply.ackResponse.error == s.ServerError.ConsumerNotFound and reply.ackResponse.message
    [reply] = call(front, conn, ack(request_id=4, txnid_most_bits=1, txnid_least_bits=2))   # a transaction's ack
    assert reply.ackResponse.error == s.ServerError.NotAllowedError and "transaction" in reply.ackResponse.message
    assert front.core.store.query_offset("sub", "pulsar|public|default|receipts", 0) == 0   # not applied


# Every client-to-broker command of PulsarApi.proto with a request_id that the front did
# not answer before: (type, its sub-message, its fields, the reply type, the error or None).
REQUESTS = [
    ("CONSUMER_STATS", "consumerStats", {"consumer_id": 0}, "CONSUMER_STATS_RESPONSE", None),
    ("GET_TOPICS_OF_NAMESPACE", "getTopicsOfNamespace", {"namespace": "public/default"},
     "GET_TOPICS_OF_NAMESPACE_RESPONSE", None),
    ("GET_SCHEMA", "getSchema", {"topic": TOPIC}, "GET_SCHEMA_RESPONSE", "TopicNotFound"),
    ("GET_OR_CREATE_SCHEMA", "getOrCreateSchema", {"topic": TOPIC, "schema": {"name": "x", "schema_data": b"",
                                                                            "type": 1}},
     "GET_OR_CREATE_SCHEMA_RESPONSE", None),
    ("NEW_TXN", "newTxn", {}, "ERROR", "NotAllowedError"),
    ("ADD_PARTITION_TO_TXN", "addPartitionToTxn", {"partitions": [TOPIC]}, "ERROR", "NotAllowedError"),
    ("ADD_SUBSCRIPTION_TO_TXN", "addSubscriptionToTxn", {}, "ERROR", "NotAllowedError"),
    ("END_TXN", "endTxn", {}, "ERROR", "NotAllowedError"),
    ("END_TXN_ON_PARTITION", "endTxnOnPartition", {"topic": TOPIC}, "ERROR", "NotAllowedError"),
    ("END_TXN_ON_SUBSCRIPTION", "endTxnOnSubscription", {}, "ERROR", "NotAllowedError"),
    ("TC_CLIENT_CONNECT_REQUEST", "tcClientConnectRequest", {"tc_id": 0}, "ERROR", "NotAllowedError"),
    ("WATCH_TOPIC_LIST", "watchTopicList", {"watcher_id": 1, "namespace": "public/default", "topics_pattern": ".*"},
     "WATCH_TOPIC_LIST_SUCCESS", None),
    ("WATCH_TOPIC_LIST_CLOSE", "watchTopicListClose", {"watcher_id": 1}, "SUCCESS", None),
]


def _reply_request_id(reply) -> int:
    for name in ("error", "success", "consumerStatsResponse", "getTopicsOfNamespaceResponse", "getSchemaResponse",
                 "getOrCreateSchemaResponse", "watchTopicListSuccess"):
        if reply.HasField(name):
            return getattr(reply, name).request_id
    raise AssertionError(f"no request_id in {reply}")


@pytest.mark.parametrize("type_name, field, fields, reply_type, error", REQUESTS, ids=[r[0] for r in REQUESTS])
def test_every_command_with_a_request_id_is_answered_with_it(type_name, field, fields, reply_type, error):
    front, conn = connected()
    with_a_message(front, conn)
    cmd = s.BaseCommand(type=getattr(s.Type, type_name), **{field: {"request_id": 4242, **fields}})
    [reply] = call(front, conn, cmd)
    assert reply.type == getattr(s.Type, reply_type), reply
    assert _reply_request_id(reply) == 4242
    body = reply.error if reply.type == s.Type.ERROR else getattr(reply, {
        "CONSUMER_STATS_RESPONSE": "consumerStatsResponse", "GET_SCHEMA_RESPONSE": "getSchemaResponse",
        "GET_OR_CREATE_SCHEMA_RESPONSE": "getOrCreateSchemaResponse",
        "WATCH_TOPIC_LIST_SUCCESS": "watchTopicListSuccess"}.get(reply_type, "success"), None)
    if error is not None:
        code = body.error if reply.type == s.Type.ERROR else body.error_code
        assert code == getattr(s.ServerError, error), reply
    assert not conn.closed


def test_the_namespaces_topics_and_a_consumers_stats_are_real_answers():
    front, conn = connected()
    with_a_message(front, conn)
    call(front, conn, s.BaseCommand(type=s.Type.PRODUCER, producer={"topic": "persistent://t/ns/other",
                                                                     "producer_id": 1, "request_id": 3}))
    [topics] = call(front, conn, s.BaseCommand(type=s.Type.GET_TOPICS_OF_NAMESPACE, getTopicsOfNamespace={
        "request_id": 1, "namespace": "public/default"}))
    assert list(topics.getTopicsOfNamespaceResponse.topics) == [TOPIC]
    [stats] = call(front, conn, s.BaseCommand(type=s.Type.CONSUMER_STATS, consumerStats={"request_id": 2,
                                                                                         "consumer_id": 0}))
    r = stats.consumerStatsResponse
    assert (r.type, r.unackedMessages, r.msgBacklog, r.availablePermits) == ("Shared", 2, 2, 8)
    [missing] = call(front, conn, s.BaseCommand(type=s.Type.CONSUMER_STATS, consumerStats={"request_id": 3,
                                                                                           "consumer_id": 99}))
    assert missing.consumerStatsResponse.error_code == s.ServerError.ConsumerNotFound


def test_the_audit_every_request_command_of_the_protocol_has_a_handler():
    """The schema's client-to-broker commands with a request_id (responses, SUCCESS and
    ERROR aside) each have a handler: none is answered by the catch-all."""
    from rocketmq_emulator.broker.fronts.pulsar.front import _HANDLERS

    fields = {f[1]: f[2] for f in s.MESSAGES["BaseCommand"] if f[1] != "type"}
    requests = [t for t, number in s.TYPES.items()
                if any(n == number for n, *_ in s.MESSAGES["BaseCommand"])
                and any(f[1] == "request_id" for f in s.MESSAGES[fields[_field_of(number)]])
                and not t.endswith(("_RESPONSE", "_SUCCESS")) and t not in ("SUCCESS", "ERROR", "ACK_RESPONSE")]
    assert {"ACK", "SUBSCRIBE", "CONSUMER_STATS", "GET_TOPICS_OF_NAMESPACE", "NEW_TXN", "WATCH_TOPIC_LIST_CLOSE"} \
        <= set(requests)
    missing = [t for t in requests if s.TYPES[t] not in _HANDLERS]
    assert not missing, missing


def _field_of(number: int) -> str:
    return next(name for n, name, *_ in s.MESSAGES["BaseCommand"] if n == number)


# -- over a socket: a client that waits for each ack's receipt gets its next message -------------
def _read(sock, decoder, want):
    while True:
        for frame in decoder.feed(sock.recv(65536)):
            cmd = s.BaseCommand.FromString(frame.command)
            if cmd.type == want:
                return cmd


def test_over_tcp_an_ack_receipt_comes_back_and_the_next_message_follows(tmp_path):
    from tests.support.processes import EmulatorProcess

    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", pulsar=True).start()
    try:
        with socket.create_connection(("127.0.0.1", server.pulsar_port), timeout=10) as sock:
            decoder = FrameDecoder()

            def send(cmd, metadata=None, payload=b""):
                sock.sendall(encode_payload(cmd.SerializeToString(), metadata, payload) if metadata is not None
                             else encode_simple(cmd.SerializeToString()))

            send(s.BaseCommand(type=s.Type.CONNECT, connect={"client_version": "raw", "protocol_version": 20}))
            _read(sock, decoder, s.Type.CONNECTED)
            send(s.BaseCommand(type=s.Type.SUBSCRIBE, subscribe={
                "topic": TOPIC, "subscription": "sub", "subType": s.SubType.Exclusive, "consumer_id": 0,
                "request_id": 1, "initialPosition": s.InitialPosition.Earliest}))
            _read(sock, decoder, s.Type.SUCCESS)
            send(s.BaseCommand(type=s.Type.PRODUCER, producer={"topic": TOPIC, "producer_id": 0, "request_id": 2}))
            _read(sock, decoder, s.Type.PRODUCER_SUCCESS)
            for seq in (0, 1):
                meta = s.MessageMetadata(producer_name="p", sequence_id=seq, publish_time=1).SerializeToString()
                send(s.BaseCommand(type=s.Type.SEND, send={"producer_id": 0, "sequence_id": seq}), meta, b"m%d" % seq)
                _read(sock, decoder, s.Type.SEND_RECEIPT)
            send(s.BaseCommand(type=s.Type.FLOW, flow={"consumer_id": 0, "messagePermits": 1}))     # one at a time
            for entry in (0, 1):
                message = _read(sock, decoder, s.Type.MESSAGE)
                assert message.message.message_id.entryId == entry
                send(ack(entry=entry, request_id=10 + entry))
                receipt = _read(sock, decoder, s.Type.ACK_RESPONSE)       # the client waits for this
                assert (receipt.ackResponse.request_id, receipt.ackResponse.HasField("error")) == (10 + entry, False)
                send(s.BaseCommand(type=s.Type.FLOW, flow={"consumer_id": 0, "messagePermits": 1}))
    finally:
        server.stop()


def test_the_real_clients_regex_subscription_finds_the_namespaces_topics(tmp_path):
    """The Python client resolves a regex subscription with GET_TOPICS_OF_NAMESPACE."""
    import pulsar

    from tests.support.processes import EmulatorProcess

    server = EmulatorProcess(tmp_path / "store", "--clock", "virtual", pulsar=True).start()
    client = pulsar.Client(f"pulsar://127.0.0.1:{server.pulsar_port}", operation_timeout_seconds=10)
    try:
        for name in ("orders-eu", "orders-us", "billing"):
            client.create_producer(name).send(name.encode())
        consumer = client.subscribe(re.compile("persistent://public/default/orders-.*"), "audit",
                                    initial_position=pulsar.InitialPosition.Earliest)
        got = sorted(consumer.receive(timeout_millis=10_000).data() for _ in range(2))
        assert got == [b"orders-eu", b"orders-us"]
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=500)                # billing does not match
        consumer.close()
    finally:
        client.close()
        server.stop()
