"""The Pulsar wire codec (issue 21, item 1; reference pulsar-protocol.md §1–§2): frames,
CRC-32C, and the handshake commands, checked against the bytes the real 3.13.0 client
sent in the reference's capture."""
from __future__ import annotations

import struct

import pytest

pytest.importorskip("google_crc32c", reason="needs the pulsar extra: ./dev test installs it")

from rocketmq_emulator.broker.fronts.pulsar.frames import (FrameDecoder, FrameError, FrameTooLarge, crc32c,  # noqa: E402
                                                          encode_payload, encode_simple, entry_of)
from rocketmq_emulator.broker.fronts.pulsar.schema import (PROTOCOL_VERSION, BaseCommand, ServerError,  # noqa: E402
                                                          Type)

# CONNECT as the real client sent it (reference §2, 45 bytes)
CAPTURED_CONNECT = (bytes.fromhex("00000029 00000025 0802 1221 0a11".replace(" ", "")) + b"Pulsar-CPP-v4.2.0"
                    + bytes.fromhex("2014 2a04") + b"none" + bytes.fromhex("5204 0801 1001"))


def test_crc32c_is_castagnolis():
    assert crc32c(b"123456789") == 0xE3069283


def test_the_captured_connect_decodes():
    assert len(CAPTURED_CONNECT) == 45
    [frame] = FrameDecoder().feed(CAPTURED_CONNECT)
    assert frame.entry is None
    cmd = BaseCommand.FromString(frame.command)
    assert cmd.type == Type.CONNECT
    c = cmd.connect
    assert (c.client_version, c.protocol_version, c.auth_method_name) == ("Pulsar-CPP-v4.2.0", 20, "none")
    assert c.feature_flags.supports_auth_refresh and c.feature_flags.supports_broker_entry_metadata
    # and it encodes back to the same bytes
    assert encode_simple(cmd.SerializeToString()) == CAPTURED_CONNECT


def test_connected_round_trips_with_the_fields_the_client_needs():
    cmd = BaseCommand(type=Type.CONNECTED)
    cmd.connected.server_version = "Pulsar Server-rocketmq-emulator"
    cmd.connected.protocol_version = PROTOCOL_VERSION
    cmd.connected.max_message_size = 5 * 1024 * 1024
    data = encode_simple(cmd.SerializeToString())
    total, size = struct.unpack(">II", data[:8])
    assert total == len(data) - 4 and size == len(data) - 8
    [frame] = FrameDecoder().feed(data)
    back = BaseCommand.FromString(frame.command)
    assert back.HasField("connected") and back.connected.max_message_size == 5_242_880


def test_error_codes_by_name():
    cmd = BaseCommand(type=Type.ERROR)
    cmd.error.request_id, cmd.error.error, cmd.error.message = 7, ServerError.TopicNotFound, "no such topic"
    back = BaseCommand.FromString(cmd.SerializeToString())
    assert (back.error.error, ServerError.ChecksumError) == (11, 9)


def test_a_payload_frame_carries_a_checksum_over_metadata_and_payload():
    data = encode_payload(b"\x08\x06", b"META", b"payload bytes")
    [frame] = FrameDecoder().feed(data)
    assert frame.has_checksum and frame.checksum_ok()
    assert frame.metadata_and_payload() == (b"META", b"payload bytes")
    assert frame.entry == entry_of(b"META", b"payload bytes")          # storable and replayable as is
    bad = bytearray(data)
    bad[-1] ^= 1
    [corrupt] = FrameDecoder().feed(bytes(bad))
    assert not corrupt.checksum_ok()


def test_without_a_checksum_and_with_broker_entry_metadata():
    plain = encode_payload(b"\x08\x06", b"M", b"p", checksum=False)
    [frame] = FrameDecoder().feed(plain)
    assert not frame.has_checksum and frame.checksum_ok() and frame.metadata_and_payload() == (b"M", b"p")
    entry = entry_of(b"M", b"p")
    rest = struct.pack(">I", 2) + b"\x08\x09" + struct.pack(">HI", 0x0E02, 3) + b"BEM" + entry
    [frame] = FrameDecoder().feed(struct.pack(">I", len(rest)) + rest)
    assert frame.broker_entry_metadata == b"BEM" and frame.checksum_ok()
    assert frame.metadata_and_payload() == (b"M", b"p")


def test_frames_arrive_in_pieces_and_back_to_back():
    frames = CAPTURED_CONNECT + encode_payload(b"\x08\x06", b"META", b"x" * 1000) + CAPTURED_CONNECT
    dec = FrameDecoder()
    got = []
    for i in range(0, len(frames), 7):
        got += dec.feed(frames[i:i + 7])
    assert [f.entry is None for f in got] == [True, False, True]


def test_bad_frames_are_refused_with_a_readable_error():
    with pytest.raises(FrameTooLarge, match="over the limit"):
        FrameDecoder(max_frame=100).feed(struct.pack(">I", 101))
    with pytest.raises(FrameError, match="command size"):
        FrameDecoder().feed(struct.pack(">II", 8, 50) + b"xxxx")
    [frame] = FrameDecoder().feed(encode_payload(b"\x08\x06", entry=struct.pack(">I", 99) + b"short"))
    with pytest.raises(FrameError, match="runs past the frame"):
        frame.metadata_and_payload()


def test_the_captured_batch_entry_decodes_into_single_message_metadata():
    """Reference §1: a batch of 3 from the real client, each [size][SingleMessageMetadata][payload]."""
    from rocketmq_emulator.broker.fronts.pulsar.schema import SingleMessageMetadata

    blob = b"".join(bytes.fromhex("00000004 1802 40".replace(" ", "")) + bytes([i]) + b"b%d" % i for i in range(3))
    pos, got = 0, []
    while pos < len(blob):
        (size,) = struct.unpack_from(">I", blob, pos)
        meta = SingleMessageMetadata.FromString(blob[pos + 4:pos + 4 + size])
        payload = blob[pos + 4 + size:pos + 4 + size + meta.payload_size]
        got.append((meta.sequence_id, payload))
        pos += 4 + size + meta.payload_size
    assert got == [(0, b"b0"), (1, b"b1"), (2, b"b2")]


def test_proto2_defaults_and_presence_the_client_relies_on():
    from rocketmq_emulator.broker.fronts.pulsar.schema import (MessageIdData, MessageMetadata, SubType, LookupType,
                                                              PartitionedLookupType, message)

    sub = message("CommandSubscribe")()
    assert sub.durable and sub.force_topic_creation              # true unless sent false
    assert message("CommandProducerSuccess")().last_sequence_id == -1
    assert MessageIdData().partition == -1 and MessageIdData().batch_index == -1
    meta = MessageMetadata(producer_name="p", sequence_id=0, publish_time=1)
    assert not meta.HasField("num_messages_in_batch")           # "batch or not" is presence, not value
    assert (SubType.Shared, SubType.Key_Shared, LookupType.Connect, PartitionedLookupType.Success) == (1, 3, 1, 0)


def test_a_send_and_its_receipt_round_trip():
    from rocketmq_emulator.broker.fronts.pulsar.schema import MessageMetadata

    cmd = BaseCommand(type=Type.SEND)
    cmd.send.producer_id, cmd.send.sequence_id = 0, 7
    meta = MessageMetadata(producer_name="standalone-0-1", sequence_id=7, publish_time=1_767_225_600_000,
                           deliver_at_time=1_767_225_610_000)
    meta.properties.add(key="k", value="v")
    data = encode_payload(cmd.SerializeToString(), meta.SerializeToString(), b"hello")
    [frame] = FrameDecoder().feed(data)
    back = BaseCommand.FromString(frame.command)
    raw_meta, payload = frame.metadata_and_payload()
    m = MessageMetadata.FromString(raw_meta)
    assert (back.type, back.send.sequence_id, payload) == (Type.SEND, 7, b"hello")
    assert (m.deliver_at_time, [(p.key, p.value) for p in m.properties]) == (1_767_225_610_000, [("k", "v")])
    receipt = BaseCommand(type=Type.SEND_RECEIPT)
    receipt.send_receipt.producer_id, receipt.send_receipt.sequence_id = 0, 7
    receipt.send_receipt.message_id.ledgerId, receipt.send_receipt.message_id.entryId = 12, 0
    assert BaseCommand.FromString(receipt.SerializeToString()).send_receipt.message_id.ledgerId == 12
