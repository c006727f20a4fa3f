"""The Pulsar front on the core (issue 21; reference pulsar-protocol.md §2–§4): a
connection's commands in, the frames to answer with out. No I/O; the listener
(broker/adapters/pulsar_server.py) moves the bytes.

Built so far: the handshake (CONNECT → CONNECTED, PING ⇄ PONG), lookups answered in band
(PARTITIONED_METADATA: 0 partitions; LOOKUP: Connect to this broker's own service URL),
producers (PRODUCER → PRODUCER_SUCCESS with a generated name, CLOSE_PRODUCER) and SEND
into the store. Subscriptions are answered with an ERROR that says so.

How a message is stored (names.py maps the topic): one record per entry in the store
topic's one queue; the body is the payload as sent (a batch stays one record, as Pulsar
keeps it one entry); the serialized MessageMetadata rides in the PULSAR_METADATA property
(base64), the user properties beside it as the record's own, so a 4.x consumer of the
same store topic sees the body and the properties. The message id is (ledgerId, entryId) =
(a stable number per topic, the queue offset): unique per topic and growing in publish
order, as the client needs. The payload is stored whatever its compression; the
metadata says which.
"""
from __future__ import annotations

import base64
import itertools
import zlib
from dataclasses import dataclass, field

from ..operations import SendOutcome, SendRequest
from ..config import PERM_READ, PERM_WRITE
from . import schema as s
from .frames import DEFAULT_MAX_MESSAGE_SIZE, Frame, FrameError, encode_simple
from .names import PulsarNameError, parse_topic, store_topic

__all__ = ["PulsarFront", "Connection", "METADATA_PROPERTY", "ledger_id"]

METADATA_PROPERTY = "PULSAR_METADATA"         # the entry's MessageMetadata, base64
SERVER_VERSION = "Pulsar Server-rocketmq-emulator"


def ledger_id(stored_topic: str) -> int:
    """The ledgerId of a store topic's messages: stable across restarts, distinct per topic
    (the client's trackers key on (ledger, entry) across topics)."""
    return zlib.crc32(stored_topic.encode()) | (len(stored_topic) << 32)


@dataclass
class _Producer:
    topic: str                  # the Pulsar topic's full name
    stored: str                 # the store's topic
    name: str


@dataclass
class Connection:
    """What the front knows of one client connection."""
    peer: str = ""
    connected: bool = False
    protocol_version: int = 0
    producers: dict[int, _Producer] = field(default_factory=dict)
    closed: bool = False                    # set when the front wants the socket closed


class PulsarFront:
    def __init__(self, core, service_url: str, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.core = core
        self.service_url = service_url
        self.max_message_size = max_message_size
        self._names = itertools.count()
        self._channel = core.connect()          # the core's view of this front's sends

    # -- the one entry point -----------------------------------------------------------------
    def handle(self, conn: Connection, frame: Frame) -> list[bytes]:
        """The frames to send back for one frame from the client (none for some)."""
        try:
            cmd = s.BaseCommand.FromString(frame.command)
        except Exception as exc:            # (protobuf's DecodeError) a broken command ends the connection
            conn.closed = True
            raise FrameError(f"not a Pulsar command: {exc}") from None
        if not conn.connected and cmd.type != s.Type.CONNECT:
            conn.closed = True
            return [_error(0, s.ServerError.NotAllowedError, "the first command must be CONNECT")]
        handler = _HANDLERS.get(cmd.type)
        if handler is None:
            return [_error(_request_id(cmd), s.ServerError.UnknownError,
                           f"command {cmd.type} is not supported by this broker yet")]
        return handler(self, conn, cmd, frame)

    # -- connection ---------------------------------------------------------------------------
    def _connect(self, conn: Connection, cmd, frame) -> list[bytes]:
        conn.connected = True
        conn.protocol_version = min(cmd.connect.protocol_version, s.PROTOCOL_VERSION)
        reply = s.BaseCommand(type=s.Type.CONNECTED)
        reply.connected.server_version = SERVER_VERSION
        reply.connected.protocol_version = conn.protocol_version
        reply.connected.max_message_size = self.max_message_size
        return [_frame(reply)]

    def _ping(self, conn: Connection, cmd, frame) -> list[bytes]:
        return [_frame(s.BaseCommand(type=s.Type.PONG, pong={}))]

    def _pong(self, conn: Connection, cmd, frame) -> list[bytes]:
        return []

    # -- lookups (answered in band: an ERROR to a lookup is dropped by the client) ----------------
    def _partitioned_metadata(self, conn: Connection, cmd, frame) -> list[bytes]:
        req = cmd.partitionMetadata
        reply = s.BaseCommand(type=s.Type.PARTITIONED_METADATA_RESPONSE)
        r = reply.partitionMetadataResponse
        r.request_id = req.request_id
        if _bad_topic(r, req.topic, s.PartitionedLookupType.Failed) is None:
            r.response, r.partitions = s.PartitionedLookupType.Success, 0
        return [_frame(reply)]

    def _lookup(self, conn: Connection, cmd, frame) -> list[bytes]:
        req = cmd.lookupTopic
        reply = s.BaseCommand(type=s.Type.LOOKUP_RESPONSE)
        r = reply.lookupTopicResponse
        r.request_id = req.request_id
        if _bad_topic(r, req.topic, s.LookupType.Failed) is None:
            # the service URL the client gave, echoed, keeps it on one connection (reference §3)
            r.response, r.brokerServiceUrl, r.authoritative = s.LookupType.Connect, self.service_url, True
        return [_frame(reply)]

    # -- producers ------------------------------------------------------------------------------
    def _producer(self, conn: Connection, cmd, frame) -> list[bytes]:
        req = cmd.producer
        try:
            topic = parse_topic(req.topic)
            stored = store_topic(topic)
        except PulsarNameError as exc:
            return [_error(req.request_id, s.ServerError.InvalidTopicName, str(exc))]
        known = conn.producers.get(req.producer_id)
        if known is None:
            self._ensure_topic(stored)
            name = req.producer_name or f"rocketmq-emulator-{next(self._names)}"
            known = conn.producers[req.producer_id] = _Producer(topic.full, stored, name)
        reply = s.BaseCommand(type=s.Type.PRODUCER_SUCCESS)
        reply.producer_success.request_id = req.request_id
        reply.producer_success.producer_name = known.name
        reply.producer_success.last_sequence_id = -1
        return [_frame(reply)]

    def _close_producer(self, conn: Connection, cmd, frame) -> list[bytes]:
        conn.producers.pop(cmd.close_producer.producer_id, None)
        return [_success(cmd.close_producer.request_id)]

    def _send(self, conn: Connection, cmd, frame) -> list[bytes]:
        req = cmd.send
        producer = conn.producers.get(req.producer_id)
        if producer is None:
            return [_send_error(req, s.ServerError.UnknownError,
                                f"producer {req.producer_id} is not open on this connection")]
        if not frame.checksum_ok():
            return [_send_error(req, s.ServerError.ChecksumError, "checksum failed on the broker")]
        try:
            raw_meta, payload = frame.metadata_and_payload()
            meta = s.MessageMetadata.FromString(raw_meta)
        except Exception as exc:
            return [_send_error(req, s.ServerError.UnknownError, f"bad message metadata: {exc}")]
        props = {kv.key: kv.value for kv in meta.properties}
        props[METADATA_PROPERTY] = base64.b64encode(raw_meta).decode()
        if meta.partition_key:
            props["KEYS"] = meta.partition_key
        result = self.core.send(SendRequest("", producer.stored, payload, 0, props,
                                            born_timestamp=meta.publish_time or self.core.clock.now_ms()),
                                self._channel)
        if result.outcome is not SendOutcome.STORED:
            return [_send_error(req, s.ServerError.PersistenceError, result.remark or result.outcome.value)]
        reply = s.BaseCommand(type=s.Type.SEND_RECEIPT)
        r = reply.send_receipt
        r.producer_id, r.sequence_id = req.producer_id, req.sequence_id
        r.message_id.ledgerId, r.message_id.entryId = ledger_id(producer.stored), result.queue_offset
        if req.HasField("highest_sequence_id"):
            r.highest_sequence_id = req.highest_sequence_id
        return [_frame(reply)]

    # -- consumers (next) ---------------------------------------------------------------------
    def _subscribe(self, conn: Connection, cmd, frame) -> list[bytes]:
        return [_error(cmd.subscribe.request_id, s.ServerError.NotAllowedError,
                       "subscriptions are not served by this broker's Pulsar front yet")]

    def _ensure_topic(self, stored: str) -> None:
        core = self.core
        if core.topics.get(stored) is None:
            core.topics.create_system(stored, 1, PERM_READ | PERM_WRITE)
            core._save_config_changes()


_HANDLERS = {
    s.Type.CONNECT: PulsarFront._connect, s.Type.PING: PulsarFront._ping, s.Type.PONG: PulsarFront._pong,
    s.Type.PARTITIONED_METADATA: PulsarFront._partitioned_metadata, s.Type.LOOKUP: PulsarFront._lookup,
    s.Type.PRODUCER: PulsarFront._producer, s.Type.CLOSE_PRODUCER: PulsarFront._close_producer,
    s.Type.SEND: PulsarFront._send, s.Type.SUBSCRIBE: PulsarFront._subscribe,
}


def _bad_topic(response, topic: str, failed: int) -> str | None:
    """A lookup response for a topic this broker cannot take: Failed, InvalidTopicName and
    why (in band: the client drops an ERROR sent to a lookup). None when the name is good."""
    try:
        store_topic(topic)
    except PulsarNameError as exc:
        response.response, response.error, response.message = failed, s.ServerError.InvalidTopicName, str(exc)
        return str(exc)
    return None


def _frame(cmd) -> bytes:
    return encode_simple(cmd.SerializeToString())


def _request_id(cmd) -> int:
    for name in ("producer", "subscribe", "close_producer", "close_consumer", "unsubscribe", "seek",
                 "getLastMessageId"):
        if cmd.HasField(name):
            return getattr(cmd, name).request_id
    return 0


def _error(request_id: int, code: int, message: str) -> bytes:
    cmd = s.BaseCommand(type=s.Type.ERROR)
    cmd.error.request_id, cmd.error.error, cmd.error.message = request_id, code, message
    return _frame(cmd)


def _success(request_id: int) -> bytes:
    cmd = s.BaseCommand(type=s.Type.SUCCESS)
    cmd.success.request_id = request_id
    return _frame(cmd)


def _send_error(req, code: int, message: str) -> bytes:
    cmd = s.BaseCommand(type=s.Type.SEND_ERROR)
    e = cmd.send_error
    e.producer_id, e.sequence_id, e.error, e.message = req.producer_id, req.sequence_id, code, message
    return _frame(cmd)
