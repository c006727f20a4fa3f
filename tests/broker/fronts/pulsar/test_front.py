"""The Pulsar front without a network (broker/fronts/pulsar/front.py): what it answers to
each command, and to bad input (reference §2–§4, §10)."""
from __future__ import annotations

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.broker.core import BrokerCore  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar import schema as s  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.frames import FrameDecoder, encode_payload, encode_simple  # noqa: E402
from rocketmq_emulator.broker.fronts.pulsar.front import Connection, PulsarFront  # noqa: E402


def call(front, conn, cmd, metadata=None, payload=b"", checksum=True):
    data = (encode_payload(cmd.SerializeToString(), metadata, payload, checksum=checksum) if metadata is not None
            else encode_simple(cmd.SerializeToString()))
    [frame] = FrameDecoder().feed(data)
    out = []
    for reply in front.handle(conn, frame):
        out += [s.BaseCommand.FromString(f.command) for f in FrameDecoder().feed(reply)]
    return out


def connected():
    front = PulsarFront(BrokerCore.in_memory(), "pulsar://127.0.0.1:6650")
    conn = Connection()
    hello = s.BaseCommand(type=s.Type.CONNECT, connect={"client_version": "t", "protocol_version": 20})
    [reply] = call(front, conn, hello)
    assert reply.type == s.Type.CONNECTED and reply.connected.server_version and reply.connected.protocol_version == 20
    return front, conn


def test_the_first_command_must_be_connect():
    front, conn = PulsarFront(BrokerCore.in_memory(), "pulsar://127.0.0.1:6650"), Connection()
    [reply] = call(front, conn, s.BaseCommand(type=s.Type.PING, ping={}))
    assert reply.type == s.Type.ERROR and conn.closed


def test_ping_pong_and_lookups_answer_in_band():
    front, conn = connected()
    assert [r.type for r in call(front, conn, s.BaseCommand(type=s.Type.PING, ping={}))] == [s.Type.PONG]
    [pm] = call(front, conn, s.BaseCommand(type=s.Type.PARTITIONED_METADATA, partitionMetadata={
        "topic": "persistent://public/default/x", "request_id": 1}))
    r = pm.partitionMetadataResponse
    assert (r.request_id, r.partitions, r.response) == (1, 0, s.PartitionedLookupType.Success)
    [lk] = call(front, conn, s.BaseCommand(type=s.Type.LOOKUP, lookupTopic={"topic": "persistent://public/default/x",
                                                                            "request_id": 2}))
    r = lk.lookupTopicResponse
    assert (r.response, r.brokerServiceUrl, r.request_id) == (s.LookupType.Connect, "pulsar://127.0.0.1:6650", 2)
    [live] = call(front, conn, s.BaseCommand(type=s.Type.LOOKUP, lookupTopic={
        "topic": "non-persistent://public/default/x", "request_id": 3}))
    assert live.lookupTopicResponse.response == s.LookupType.Connect      # served too (issue 51)
    [bad] = call(front, conn, s.BaseCommand(type=s.Type.LOOKUP, lookupTopic={
        "topic": "non-persistent://public/default/" + "x" * 200, "request_id": 4}))
    r = bad.lookupTopicResponse
    assert r.response == s.LookupType.Failed and r.error == s.ServerError.InvalidTopicName
    assert "too long" in r.message


def test_sends_need_an_open_producer_and_a_good_checksum():
    front, conn = connected()
    meta = s.MessageMetadata(producer_name="p", sequence_id=0, publish_time=1).SerializeToString()
    send = s.BaseCommand(type=s.Type.SEND, send={"producer_id": 9, "sequence_id": 0})
    [err] = call(front, conn, send, meta, b"x")
    assert err.type == s.Type.SEND_ERROR and "not open" in err.send_error.message
    [ok] = call(front, conn, s.BaseCommand(type=s.Type.PRODUCER, producer={"topic": "persistent://public/default/x",
                                                                           "producer_id": 9, "request_id": 5}))
    assert ok.type == s.Type.PRODUCER_SUCCESS and ok.producer_success.last_sequence_id == -1
    [receipt] = call(front, conn, send, meta, b"x")
    assert receipt.type == s.Type.SEND_RECEIPT and receipt.send_receipt.message_id.entryId == 0
    data = bytearray(encode_payload(send.SerializeToString(), meta, b"y"))
    data[-1] ^= 0xFF                                     # the payload changed after the checksum
    [frame] = FrameDecoder().feed(bytes(data))
    [reply] = [s.BaseCommand.FromString(f.command) for out in front.handle(conn, frame)
               for f in FrameDecoder().feed(out)]
    assert reply.type == s.Type.SEND_ERROR and reply.send_error.error == s.ServerError.ChecksumError
    assert front.core.store.max_offset("pulsar|public|default|x", 0) == 1      # nothing stored for it


def test_a_bad_producer_topic_and_an_unknown_command_get_errors():
    front, conn = connected()
    [err] = call(front, conn, s.BaseCommand(type=s.Type.PRODUCER, producer={"topic": "a/b", "producer_id": 0,
                                                                            "request_id": 7}))
    assert (err.type, err.error.request_id, err.error.error) == (s.Type.ERROR, 7, s.ServerError.InvalidTopicName)
    [err] = call(front, conn, s.BaseCommand(type=s.Type.SEEK, seek={"consumer_id": 0, "request_id": 8}))
    assert err.type == s.Type.ERROR and err.error.request_id == 8 and not conn.closed
    [err] = call(front, conn, s.BaseCommand(type=s.Type.UNSUBSCRIBE, unsubscribe={"consumer_id": 3, "request_id": 9}))
    assert (err.type, err.error.request_id, err.error.error) == (s.Type.ERROR, 9, s.ServerError.MetadataError)


def test_a_message_a_rocketmq_client_stored_reaches_a_pulsar_consumer_with_its_properties():
    from rocketmq_emulator.broker.operations import SendRequest

    front, conn = connected()
    [ok] = call(front, conn, s.BaseCommand(type=s.Type.SUBSCRIBE, subscribe={
        "topic": "persistent://public/default/x", "subscription": "sub", "subType": s.SubType.Shared,
        "consumer_id": 0, "request_id": 1, "initialPosition": s.InitialPosition.Earliest}))
    assert ok.type == s.Type.SUCCESS
    call(front, conn, s.BaseCommand(type=s.Type.FLOW, flow={"consumer_id": 0, "messagePermits": 10}))
    core = front.core
    core.send(SendRequest("P", "pulsar|public|default|x", b"from 4.x", 0, {"color": "red"}), core.connect())
    front.pump()
    [frame] = FrameDecoder().feed(b"".join(conn.outgoing))
    msg = s.BaseCommand.FromString(frame.command)
    raw_meta, payload = frame.metadata_and_payload()
    meta = s.MessageMetadata.FromString(raw_meta)
    assert msg.type == s.Type.MESSAGE and msg.message.message_id.entryId == 0 and frame.checksum_ok()
    assert payload == b"from 4.x" and ("color", "red") in [(p.key, p.value) for p in meta.properties]
    assert {p.key for p in meta.properties} == {"color"}             # the user's, none of the store's own


def _subscribe(front, conn, consumer_id, request_id, priority=0):
    cmd = s.BaseCommand(type=s.Type.SUBSCRIBE, subscribe={
        "topic": "persistent://public/default/fo", "subscription": "fo", "subType": s.SubType.Failover,
        "consumer_id": consumer_id, "request_id": request_id, "priority_level": priority})
    return call(front, conn, cmd)


def _told(conn):
    frames = [s.BaseCommand.FromString(f.command) for out in conn.outgoing for f in FrameDecoder().feed(out)]
    conn.outgoing.clear()
    return [(f.active_consumer_change.consumer_id, f.active_consumer_change.is_active) for f in frames
            if f.type == s.Type.ACTIVE_CONSUMER_CHANGE]


def test_failover_tells_every_consumer_when_the_active_one_changes_by_priority_then_arrival():
    front, a = connected()
    b = Connection(connected=True)
    c = Connection(connected=True)
    ok, change = _subscribe(front, a, 1, 1)
    assert ok.type == s.Type.SUCCESS and (change.active_consumer_change.consumer_id,
                                          change.active_consumer_change.is_active) == (1, True)
    [ok, change] = _subscribe(front, b, 2, 2)                  # a second one: told it waits, nobody else told
    assert change.active_consumer_change.is_active is False and _told(a) == []
    [ok, change] = _subscribe(front, c, 3, 3, priority=-1)     # a preferred one takes over: all are told
    assert change.active_consumer_change.is_active is True
    assert _told(a) == [(1, False)] and _told(b) == [(2, False)]
    [ok] = call(front, c, s.BaseCommand(type=s.Type.CLOSE_CONSUMER, close_consumer={"consumer_id": 3,
                                                                                     "request_id": 4}))
    assert _told(a) == [(1, True)] and _told(b) == [(2, False)]
    front.disconnect(a)                                        # the active one's connection goes
    assert _told(b) == [(2, True)]
