"""Raw Pulsar frames against the front without a network, for what the real client hides:
``call`` one command (with metadata and payload for a SEND) and get the decoded replies;
``pushed`` decodes what the front queued on a connection for later (its ``outgoing``)."""
from __future__ import annotations

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.broker.fronts.pulsar import schema as s
from rocketmq_emulator.broker.fronts.pulsar.frames import FrameDecoder, encode_payload, encode_simple
from rocketmq_emulator.broker.fronts.pulsar.front import Connection, PulsarFront

__all__ = ["call", "connected", "pushed", "command", "producer", "send"]


def command(type_name: str, field: str, **fields):
    return s.BaseCommand(type=getattr(s.Type, type_name), **{field: fields})


def call(front, conn, cmd, metadata=None, payload=b""):
    data = encode_payload(cmd.SerializeToString(), metadata, payload) if metadata is not None \
        else encode_simple(cmd.SerializeToString())
    [frame] = FrameDecoder().feed(data)
    out = []
    for reply in front.handle(conn, frame):
        out += [s.BaseCommand.FromString(f.command) for f in FrameDecoder().feed(reply)]
    return out


def pushed(conn) -> list:
    out = [s.BaseCommand.FromString(f.command) for data in conn.outgoing for f in FrameDecoder().feed(data)]
    conn.outgoing.clear()
    return out


def connected(front=None, core=None):
    front = front or PulsarFront(core or BrokerCore.in_memory(), "pulsar://127.0.0.1:6650")
    conn = Connection()
    [reply] = call(front, conn, command("CONNECT", "connect", client_version="t", protocol_version=20))
    assert reply.type == s.Type.CONNECTED
    return front, conn


def producer(front, conn, topic: str, producer_id: int = 0, request_id: int = 1, **fields):
    return call(front, conn, command("PRODUCER", "producer", topic=topic, producer_id=producer_id,
                                     request_id=request_id, **fields))


def send(front, conn, producer_id: int, sequence_id: int, payload: bytes, name: str = "p", send_fields=None,
         **metadata):
    meta = s.MessageMetadata(producer_name=name, sequence_id=sequence_id, publish_time=1, **metadata)
    return call(front, conn, command("SEND", "send", producer_id=producer_id, sequence_id=sequence_id,
                                     **(send_fields or {})), meta.SerializeToString(), payload)
