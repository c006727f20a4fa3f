"""The Pulsar front on the core (issue 21; reference pulsar-protocol.md §2–§4): a
connection's commands in, the frames to answer with out. No I/O; the listener
(broker/fronts/pulsar/listener.py) moves the bytes.

Built so far: the handshake (CONNECT → CONNECTED, PING ⇄ PONG), lookups answered in band
(PARTITIONED_METADATA: 0 partitions; LOOKUP: Connect to this broker's own service URL),
producers (PRODUCER → PRODUCER_SUCCESS with a generated name, CLOSE_PRODUCER), SEND into
the store, and consumers on the core's subscriptions (broker/pulsar_cursors.py): SUBSCRIBE,
FLOW, MESSAGE pushed while permits last, ACK (individual, cumulative),
REDELIVER_UNACKNOWLEDGED_MESSAGES with the redelivery count, CLOSE_CONSUMER; a closed
connection's consumers give back what they held. Every command that carries a request_id is
answered with it: ACK with one gets ACK_RESPONSE (ack receipts), CONSUMER_STATS,
GET_TOPICS_OF_NAMESPACE (regex subscriptions) and the schema look-ups their responses, and
what is not served (transactions, topic-list watchers) Pulsar's NotAllowedError. Messages go out whenever the core
stores into a subscribed topic (``pump``), whoever stored them.

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
import re
import zlib
from dataclasses import dataclass, field

from rocketmq_emulator.store.accounting import PULSAR_DLQ_SUFFIX, pulsar_letter_group
from rocketmq_emulator.store.records import Prop

from ...notifications import DispatchReady
from ...operations import SendOutcome, SendRequest
from ...retry_lifecycle import pulsar_dead_letter
from ...pulsar_cursors import DELIVER_AT_PROPERTY, KEY_PROPERTY, SubscribeOutcome, SubType
from . import schema as s
from .frames import (DEFAULT_MAX_MESSAGE_SIZE, Frame, FrameError, ack_set_of_mask, encode_payload,
                     encode_simple, mask_of_ack_set, signed_id)
from ...pulsar_names import PulsarNameError, parse_topic, pulsar_topic, store_group, store_topic

__all__ = ["PulsarFront", "Connection", "METADATA_PROPERTY", "ledger_id"]

METADATA_PROPERTY = "PULSAR_METADATA"         # the entry's MessageMetadata, base64
SERVER_VERSION = "Pulsar Server-rocketmq-emulator"
# A message id as the clients write it in ORIGIN_MESSAGE_ID: C++ "(ledger,entry,partition,batch)",
# Java and Go "ledger:entry:partition[:batch]"
_MESSAGE_ID_TEXT = re.compile(r"^\(?(-?\d+)[,:](-?\d+)[,:]")


def ledger_id(stored_topic: str) -> int:
    """The ledgerId of a store topic's messages: stable across restarts, distinct per topic
    (the client's trackers key on (ledger, entry) across topics)."""
    return zlib.crc32(stored_topic.encode()) | (len(stored_topic) << 32)


@dataclass
class _Producer:
    topic: str                  # the Pulsar topic's full name
    stored: str                 # the store's topic
    name: str
    ledger: int = 0             # ledger_id(stored), worked out once

    def __post_init__(self) -> None:
        self.ledger = ledger_id(self.stored)


@dataclass(eq=False)          # (a connection is itself: kept in sets, compared by identity)
class Connection:
    """What the front knows of one client connection."""
    peer: str = ""
    connected: bool = False
    protocol_version: int = 0
    producers: dict[int, _Producer] = field(default_factory=dict)
    consumers: dict[int, "_Consumer"] = field(default_factory=dict)
    closed: bool = False                    # set when the front wants the socket closed
    checksums: bool = True                  # MESSAGE frames with a CRC-32C (off in process: no wire)
    outgoing: list[bytes] = field(default_factory=list)   # MESSAGE frames pushed to it
    # Pulsar's channel writability: no message is pushed to a connection once ``unsent``
    # bytes (its listener's write buffer, as last seen, and the messages pushed since)
    # reach ``max_unsent`` (0: no bound); ``starved`` says a dispatch passed it over, so
    # the listener dispatches again once it has drained.
    max_unsent: int = 0
    unsent: int = 0
    starved: bool = False


class _Consumer:
    """A consumer's key in the core's subscriptions (compared by identity)."""

    __slots__ = ("conn", "consumer_id", "group", "stored")

    def __init__(self, conn: Connection, consumer_id: int, group: str, stored: str) -> None:
        self.conn, self.consumer_id, self.group, self.stored = conn, consumer_id, group, stored


class PulsarFront:
    def __init__(self, core, service_url: str, max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE) -> None:
        self.core = core
        self.service_url = service_url
        self.max_message_size = max_message_size
        self._names = itertools.count()
        self._channel = core.connect()          # the core's view of this front's sends
        self._dirty: set[str] = set()           # store topics with something new to dispatch
        self._active: dict[tuple[str, str], _Consumer] = {}   # Failover: the active consumer last told
        self.on_dirty = None                    # the listener's hook: pump soon
        # a store into a subscribed topic, whoever stored it, or delayed messages come due
        self._stop_notifications = core.subscribe(lambda n: self._mark(n.topic), (DispatchReady,))

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
        handler = _HANDLERS.get(cmd.type) if cmd.HasField("type") else None
        if handler is None:         # (a type this schema does not know parses as no type at all)
            return [_error(_request_id(cmd), s.ServerError.UnknownError,
                           f"command {cmd.type if cmd.HasField('type') else 'of an unknown type'} is not "
                           f"supported by this broker")]
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
            r.response, r.partitions = s.PartitionedLookupType.Success, self._partitions(req.topic)
        return [_frame(reply)]

    def _partitions(self, topic: str) -> int:
        """How many partitions a topic has: its ``-partition-<i>`` store topics (made with
        ``topic create NAME --pulsar --partitions N``); 0 for a topic that is not
        partitioned or does not exist yet (a real broker answers 0 for those too)."""
        prefix = store_topic(topic) + "-partition-"
        found = [name[len(prefix):] for name in self.core.topics.table if name.startswith(prefix)]
        indexes = [int(x) for x in found if x.isdigit()]
        return max(indexes) + 1 if indexes else 0

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
        refusal = self.core.store.write_refusal()
        if refusal is not None:
            # As the Pulsar broker fences a topic whose ledger refused a write: producers are
            # refused (ServiceNotReady) until it takes writes again. The client retries the
            # producer with backoff and keeps its messages pending, so its send timeout fires
            # (a SEND_ERROR alone makes it reconnect and resend for ever).
            return [_error(req.request_id, s.ServerError.ServiceNotReady,
                           f"Topic is temporarily unavailable: {refusal}")]
        if known is None:
            self.core.ensure_pulsar_topic(stored)
            if req.initial_subscription_name:
                # the client's dead-letter producer: the subscription exists from now on, so
                # what it publishes is kept for it (reference §6.3)
                try:
                    self.core.subscriptions.create(store_group(req.initial_subscription_name), stored)
                except PulsarNameError as exc:
                    return [_error(req.request_id, s.ServerError.InvalidTopicName, str(exc))]
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
        try:
            parts = frame.metadata_and_payload(checked=True)
            if parts is None:
                return [_send_error(req, s.ServerError.ChecksumError, "checksum failed on the broker")]
            raw_meta, payload = parts
            meta = s.MessageMetadata.FromString(raw_meta)
        except Exception as exc:
            return [_send_error(req, s.ServerError.UnknownError, f"bad message metadata: {exc}")]
        props = {kv.key: kv.value for kv in meta.properties}
        props[METADATA_PROPERTY] = base64.b64encode(raw_meta).decode()
        if meta.partition_key:
            props["KEYS"] = meta.partition_key
        if meta.HasField("ordering_key") or meta.partition_key:     # Key_Shared routes by it
            props[KEY_PROPERTY] = (base64.b64encode(meta.ordering_key).decode() if meta.HasField("ordering_key")
                                   else meta.partition_key)
        if meta.HasField("deliver_at_time"):
            # the delay the client asked for (deliver_at - its publish time) from the broker's
            # now: deliver_after works the same on a virtual clock and across clock skew
            now = self.core.clock.now_ms()
            delay = meta.deliver_at_time - (meta.publish_time or now)
            props[DELIVER_AT_PROPERTY] = str(now + max(delay, 0))
        reconsume_times = 0
        if Prop.REAL_TOPIC in props and Prop.ORIGIN_MESSAGE_ID in props:
            reconsume_times = self._as_store_copy(conn, props, producer.stored)
        result = self.core.send(SendRequest("", producer.stored, payload, 0, props,
                                            born_timestamp=meta.publish_time or self.core.clock.now_ms(),
                                            reconsume_times=reconsume_times),
                                self._channel)
        if result.outcome is not SendOutcome.STORED:
            return [_send_error(req, s.ServerError.PersistenceError, result.remark or result.outcome.value)]
        reply = s.BaseCommand(type=s.Type.SEND_RECEIPT)
        r = reply.send_receipt
        r.producer_id, r.sequence_id = req.producer_id, req.sequence_id
        r.message_id.ledgerId, r.message_id.entryId = producer.ledger, result.queue_offset
        if req.HasField("highest_sequence_id"):
            r.highest_sequence_id = req.highest_sequence_id
        return [_frame(reply)]

    def _as_store_copy(self, conn: Connection, props: dict, stored: str) -> int:
        """A copy a Pulsar client made of a message (a dead letter, a retry letter: with
        REAL_TOPIC and ORIGIN_MESSAGE_ID): the record's own REAL_TOPIC and ORIGIN_MESSAGE_ID
        are written in the store's terms — the original's store topic and offsetMsgId, as
        a 4.x send-back's are — so the store's accounting finds its original; Pulsar
        consumers still get the client's values, from the metadata. Returns the copy's
        reconsumeTimes: RECONSUMETIMES when the client set it, else for a dead letter the
        redelivery count its subscription reached + 1 (the subscription: the one consumer
        of the original's topic on this connection, else the one the DLQ's name holds). A
        copy of a message this broker does not hold is stored as sent."""
        try:
            real = store_topic(props[Prop.REAL_TOPIC])
        except PulsarNameError:
            return 0
        m = _MESSAGE_ID_TEXT.match(props[Prop.ORIGIN_MESSAGE_ID])
        if m is None or int(m.group(1)) != ledger_id(real):
            return 0
        offset = int(m.group(2))
        entry = self.core.store.queue_entry(real, 0, offset)
        original = self.core.store.look_message_by_offset(entry[0]) if entry else None
        if original is None:
            return 0
        props[Prop.REAL_TOPIC], props[Prop.ORIGIN_MESSAGE_ID] = real, original.offset_msg_id
        times = props.get("RECONSUMETIMES", "")
        if times.isdigit():
            return int(times)
        if not stored.endswith(PULSAR_DLQ_SUFFIX):
            return 0
        readers = {c.group for c in conn.consumers.values() if c.stored == real}
        group = readers.pop() if len(readers) == 1 else pulsar_letter_group(stored, real)
        return pulsar_dead_letter(real, group, self.core.subscriptions.redelivery_count(group, real, offset)).attempt

    # -- consumers ---------------------------------------------------------------------------
    def _subscribe(self, conn: Connection, cmd, frame) -> list[bytes]:
        req = cmd.subscribe
        try:
            stored = store_topic(req.topic)
            group = store_group(req.subscription)
        except PulsarNameError as exc:
            return [_error(req.request_id, s.ServerError.InvalidTopicName, str(exc))]
        self.core.ensure_pulsar_topic(stored)
        consumer = conn.consumers.get(req.consumer_id)
        if consumer is None:
            consumer = _Consumer(conn, req.consumer_id, group, stored)
        start = None
        if not req.durable and req.HasField("start_message_id"):
            # a reader: earliest is (-1, -1), latest (2^63-1, 2^63-1), else an entry id of ours
            entry = signed_id(req.start_message_id.entryId)
            start = 0 if entry < 0 else entry
        outcome = self.core.subscriptions.subscribe(group, stored, consumer, SubType(req.subType),
                                                    earliest=req.initialPosition == s.InitialPosition.Earliest,
                                                    durable=req.durable, start=start, priority=req.priority_level)
        if outcome is not SubscribeOutcome.OK:
            return [_error(req.request_id, s.ServerError.ConsumerBusy, outcome.value)]
        conn.consumers[req.consumer_id] = consumer
        return [_success(req.request_id)] + self._tell_active(consumer, joined=consumer)

    def _tell_active(self, consumer: "_Consumer", joined: "_Consumer | None" = None) -> list[bytes]:
        """Failover: ACTIVE_CONSUMER_CHANGE to every consumer of ``consumer``'s subscription
        when the active one changed, else to ``joined``, a consumer that just subscribed
        (reference §5.6). Returns the frame for ``joined`` (it follows its SUCCESS); the
        others' are queued on their connections."""
        keys, active = self.core.subscriptions.members(consumer)
        if active is None:
            return []
        changed = self._active.get((consumer.group, consumer.stored)) is not active
        self._active[(consumer.group, consumer.stored)] = active
        own = []
        for key in keys:
            if changed or key is joined:
                cmd = s.BaseCommand(type=s.Type.ACTIVE_CONSUMER_CHANGE)
                cmd.active_consumer_change.consumer_id = key.consumer_id
                cmd.active_consumer_change.is_active = key is active
                (own if key is joined else key.conn.outgoing).append(_frame(cmd))
        return own

    def _leave(self, consumer: "_Consumer") -> None:
        """``consumer`` leaves its subscription, giving back what it held; on Failover the
        others learn of a new active one."""
        keys, _ = self.core.subscriptions.members(consumer)
        self.core.subscriptions.close(consumer)
        others = [k for k in keys if k is not consumer]
        if others:
            self._tell_active(others[0])
        else:
            self._active.pop((consumer.group, consumer.stored), None)
        self._mark(consumer.stored)

    def _flow(self, conn: Connection, cmd, frame) -> list[bytes]:
        consumer = conn.consumers.get(cmd.flow.consumer_id)
        if consumer is not None:
            self.core.subscriptions.flow(consumer, cmd.flow.messagePermits)
            self._mark(consumer.stored)
        return []

    def _ack(self, conn: Connection, cmd, frame) -> list[bytes]:
        """An ACK; with a request_id (ack receipts) it is answered by ACK_RESPONSE once
        applied, or with the error that kept it from being applied."""
        req = cmd.ack
        receipt = req.HasField("request_id")
        consumer = conn.consumers.get(req.consumer_id)
        if consumer is None:
            return [_ack_response(req, s.ServerError.ConsumerNotFound,
                                  f"consumer {req.consumer_id} is not open on this connection")] if receipt else []
        if req.HasField("txnid_most_bits") or req.HasField("txnid_least_bits"):
            return [_ack_response(req, s.ServerError.NotAllowedError,
                                  "transactions are not enabled on this broker: the ack was not applied")] \
                if receipt else []
        subs = self.core.subscriptions
        if req.ack_type == s.AckType.Cumulative:
            if len(req.message_id) == 1:          # (Pulsar ignores a cumulative ack of several ids)
                [m] = req.message_id
                offset = signed_id(m.entryId)
                if m.ack_set:                     # up to this batch, and of it the indexes acked
                    subs.ack_cumulative(consumer, offset - 1)
                    subs.ack_part(consumer, offset, mask_of_ack_set(m.ack_set))
                else:
                    subs.ack_cumulative(consumer, offset)
            return [_ack_response(req)] if receipt else []
        whole = [signed_id(m.entryId) for m in req.message_id if not m.ack_set]
        subs.ack(consumer, whole)
        for m in req.message_id:
            if m.ack_set:                         # batch-index ack: bit i set = index i still unacked
                subs.ack_part(consumer, signed_id(m.entryId), mask_of_ack_set(m.ack_set))
        return [_ack_response(req)] if receipt else []

    def _consumer_stats(self, conn: Connection, cmd, frame) -> list[bytes]:
        """CONSUMER_STATS: the broker's view of one consumer (rates are not measured: 0)."""
        req = cmd.consumerStats
        reply = s.BaseCommand(type=s.Type.CONSUMER_STATS_RESPONSE)
        r = reply.consumerStatsResponse
        r.request_id = req.request_id
        consumer = conn.consumers.get(req.consumer_id)
        stats = self.core.subscriptions.consumer_stats(consumer) if consumer is not None else None
        if stats is None:
            r.error_code, r.error_message = s.ServerError.ConsumerNotFound, f"consumer {req.consumer_id} is not open"
            return [_frame(reply)]
        r.type, r.availablePermits, r.unackedMessages, r.msgBacklog = (
            stats["type"], stats["permits"], stats["unacked"], stats["backlog"])
        r.address = conn.peer
        return [_frame(reply)]

    def _topics_of_namespace(self, conn: Connection, cmd, frame) -> list[bytes]:
        """GET_TOPICS_OF_NAMESPACE (a regex subscription's look-up): the namespace's
        topics, unfiltered (the client applies its pattern). Every topic here is persistent."""
        req = cmd.getTopicsOfNamespace
        tenant, _, namespace = req.namespace.partition("/")
        reply = s.BaseCommand(type=s.Type.GET_TOPICS_OF_NAMESPACE_RESPONSE)
        r = reply.getTopicsOfNamespaceResponse
        r.request_id = req.request_id
        if req.mode != s.TopicsMode.NON_PERSISTENT:
            found = (pulsar_topic(stored) for stored in self.core.topics.table)
            r.topics.extend(sorted(t.full for t in found if t is not None and (t.tenant, t.namespace) ==
                                   (tenant, namespace)))
        return [_frame(reply)]

    def _get_schema(self, conn: Connection, cmd, frame) -> list[bytes]:
        """GET_SCHEMA: no schema is kept (a producer's is accepted and ignored), so none is
        found, answered as Pulsar answers a topic without one (in the response, not ERROR)."""
        req = cmd.getSchema
        reply = s.BaseCommand(type=s.Type.GET_SCHEMA_RESPONSE)
        r = reply.getSchemaResponse
        r.request_id, r.error_code = req.request_id, s.ServerError.TopicNotFound
        r.error_message = f"Topic not found or no-schema {req.topic}"
        return [_frame(reply)]

    def _get_or_create_schema(self, conn: Connection, cmd, frame) -> list[bytes]:
        """GET_OR_CREATE_SCHEMA: accepted and not kept, as a PRODUCER's schema is (an empty
        schema version); a topic that does not exist is TopicNotFound, as in Pulsar."""
        req = cmd.getOrCreateSchema
        reply = s.BaseCommand(type=s.Type.GET_OR_CREATE_SCHEMA_RESPONSE)
        r = reply.getOrCreateSchemaResponse
        r.request_id = req.request_id
        try:
            exists = self.core.topics.get(store_topic(req.topic)) is not None
        except PulsarNameError as exc:
            r.error_code, r.error_message = s.ServerError.InvalidTopicName, str(exc)
            return [_frame(reply)]
        if exists:
            r.schema_version = b""
        else:
            r.error_code, r.error_message = s.ServerError.TopicNotFound, f"Topic not found {req.topic}"
        return [_frame(reply)]

    def _not_served(self, conn: Connection, cmd, frame) -> list[bytes]:
        """A request of something this broker does not serve (transactions, broker-side
        topic-list watchers): ERROR with Pulsar's NotAllowedError, as a broker with them
        disabled answers."""
        what = ("topic-list watchers (broker-side subscription pattern evaluation) are not enabled"
                if cmd.type == s.Type.WATCH_TOPIC_LIST else "Transaction manager is not enabled")
        return [_error(_request_id(cmd), s.ServerError.NotAllowedError, f"{what} on this broker")]

    def _watch_topic_list_close(self, conn: Connection, cmd, frame) -> list[bytes]:
        """Closing a watcher: none is ever open here, so there is nothing left to close."""
        return [_success(cmd.watchTopicListClose.request_id)]

    def _redeliver(self, conn: Connection, cmd, frame) -> list[bytes]:
        req = cmd.redeliverUnacknowledgedMessages
        consumer = conn.consumers.get(req.consumer_id)
        if consumer is not None:
            ids = [signed_id(m.entryId) for m in req.message_ids]
            self.core.subscriptions.redeliver(consumer, ids or None)
            self._mark(consumer.stored)
        return []

    def _close_consumer(self, conn: Connection, cmd, frame) -> list[bytes]:
        consumer = conn.consumers.pop(cmd.close_consumer.consumer_id, None)
        if consumer is not None:
            self._leave(consumer)
        return [_success(cmd.close_consumer.request_id)]

    def _unsubscribe(self, conn: Connection, cmd, frame) -> list[bytes]:
        """Delete the subscription; after SUCCESS the client drops the consumer without a
        CLOSE_CONSUMER (reference §5.7), so it is gone from the connection here."""
        req = cmd.unsubscribe
        consumer = conn.consumers.get(req.consumer_id)
        if consumer is None:
            return [_error(req.request_id, s.ServerError.MetadataError, f"consumer {req.consumer_id} is not open")]
        outcome = self.core.subscriptions.unsubscribe(consumer)
        if outcome is not SubscribeOutcome.OK:
            return [_error(req.request_id, s.ServerError.MetadataError, outcome.value)]
        del conn.consumers[req.consumer_id]
        self._active.pop((consumer.group, consumer.stored), None)
        return [_success(req.request_id)]

    def _seek(self, conn: Connection, cmd, frame) -> list[bytes]:
        """Reset the subscription to a message id or a publish time; its consumers are told
        to reconnect (CLOSE_CONSUMER), as Pulsar does, and come back at the new position."""
        req = cmd.seek
        consumer = conn.consumers.get(req.consumer_id)
        if consumer is None:
            return [_error(req.request_id, s.ServerError.ConsumerNotFound, f"consumer {req.consumer_id} is not open")]
        subs = self.core.subscriptions
        if req.HasField("message_publish_time"):
            offset = subs.offset_at_time(consumer.stored, req.message_publish_time)
        elif req.HasField("message_id"):
            entry = signed_id(req.message_id.entryId)
            offset = 0 if entry < 0 else entry           # earliest arrives as (-1, -1)
        else:
            return [_error(req.request_id, s.ServerError.UnknownError, "seek needs a message id or a publish time")]
        self._active.pop((consumer.group, consumer.stored), None)     # (all come back: told anew)
        for key in subs.seek(consumer, offset):
            close = s.BaseCommand(type=s.Type.CLOSE_CONSUMER)
            close.close_consumer.consumer_id, close.close_consumer.request_id = key.consumer_id, 0
            if key is not consumer:                     # (the seeking one is told after SUCCESS, below)
                key.conn.outgoing.append(_frame(close))
        reply = [_success(req.request_id)]
        close = s.BaseCommand(type=s.Type.CLOSE_CONSUMER)
        close.close_consumer.consumer_id, close.close_consumer.request_id = consumer.consumer_id, 0
        return reply + [_frame(close)]

    def _get_last_message_id(self, conn: Connection, cmd, frame) -> list[bytes]:
        req = cmd.getLastMessageId
        consumer = conn.consumers.get(req.consumer_id)
        last = self.core.subscriptions.last(consumer) if consumer is not None else None
        if last is None:
            return [_error(req.request_id, s.ServerError.ConsumerNotFound, f"consumer {req.consumer_id} is not open")]
        offset, mark_delete = last
        reply = s.BaseCommand(type=s.Type.GET_LAST_MESSAGE_ID_RESPONSE)
        r = reply.getLastMessageIdResponse
        r.request_id = req.request_id
        r.last_message_id.ledgerId = ledger_id(consumer.stored)
        r.last_message_id.entryId = offset if offset >= 0 else (1 << 64) - 1      # empty: "no more messages"
        if offset >= 0:
            entry = self.core.store.queue_entry(consumer.stored, 0, offset)
            rec = self.core.store.look_message_by_offset(entry[0]) if entry else None
            n = _permits_of(rec) if rec is not None else 1
            if n > 1 or (rec is not None and _is_batch(rec)):
                r.last_message_id.batch_index = n - 1
        r.consumer_mark_delete_position.ledgerId = ledger_id(consumer.stored)
        r.consumer_mark_delete_position.entryId = mark_delete - 1 if mark_delete > 0 else (1 << 64) - 1
        return [_frame(reply)]

    def closing(self, conn: Connection) -> list[bytes]:
        """The broker is shutting down: CLOSE_PRODUCER and CLOSE_CONSUMER for everything
        open on ``conn``, as Pulsar sends when it unloads a topic, so the client knows to
        reconnect (it retries the service URL until the broker is back)."""
        out = []
        for producer_id in conn.producers:
            cmd = s.BaseCommand(type=s.Type.CLOSE_PRODUCER)
            cmd.close_producer.producer_id, cmd.close_producer.request_id = producer_id, 0
            out.append(_frame(cmd))
        for consumer_id in conn.consumers:
            cmd = s.BaseCommand(type=s.Type.CLOSE_CONSUMER)
            cmd.close_consumer.consumer_id, cmd.close_consumer.request_id = consumer_id, 0
            out.append(_frame(cmd))
        return out

    def disconnect(self, conn: Connection) -> None:
        """The connection is gone: its consumers give back what they held."""
        for consumer in conn.consumers.values():
            self._leave(consumer)
        conn.consumers.clear()
        conn.producers.clear()

    # -- dispatch --------------------------------------------------------------------------------
    def wake(self, conn: Connection) -> None:
        """``conn`` can take messages again (it drained): dispatch to its consumers."""
        for consumer in conn.consumers.values():
            self._mark(consumer.stored)

    def _mark(self, stored: str) -> None:
        if not self._dirty and self.on_dirty is not None:
            self.on_dirty()
        self._dirty.add(stored)

    def pump(self) -> set[Connection]:
        """Dispatch what is waiting on every subscription of the topics marked since the
        last pump; the MESSAGE frames go to each consumer's connection's ``outgoing``.
        Returns the connections that got some."""
        touched: set[Connection] = set()
        subs = self.core.subscriptions
        while self._dirty:
            stored = self._dirty.pop()
            for group, topic in subs.cursors():
                if topic != stored:
                    continue
                keys = subs.consumer_keys(group, topic)
                if not keys or not all(isinstance(k, _Consumer) for k in keys):
                    continue        # (a subscription of another kind of consumer: the simulator's, in process)
                for d in subs.dispatch(group, topic, cost=_permits_of, ready=_has_room, sent=_count_unsent):
                    consumer = d.consumer
                    if consumer.conn.closed:
                        continue
                    consumer.conn.outgoing.append(self._message(consumer, d))
                    touched.add(consumer.conn)
        return touched

    def _message(self, consumer: "_Consumer", d) -> bytes:
        cmd = s.BaseCommand(type=s.Type.MESSAGE)
        m = cmd.message
        m.consumer_id = consumer.consumer_id
        m.message_id.ledgerId, m.message_id.entryId = ledger_id(consumer.stored), d.offset
        if d.redelivery_count:
            m.redelivery_count = d.redelivery_count
        if d.unacked_mask is not None:            # a partly acked batch: the client skips the others
            m.ack_set.extend(ack_set_of_mask(d.unacked_mask))
        return encode_payload(cmd.SerializeToString(), _metadata_of(d.record), d.record.body,
                              checksum=consumer.conn.checksums)



_HANDLERS = {
    s.Type.CONNECT: PulsarFront._connect, s.Type.PING: PulsarFront._ping, s.Type.PONG: PulsarFront._pong,
    s.Type.PARTITIONED_METADATA: PulsarFront._partitioned_metadata, s.Type.LOOKUP: PulsarFront._lookup,
    s.Type.PRODUCER: PulsarFront._producer, s.Type.CLOSE_PRODUCER: PulsarFront._close_producer,
    s.Type.SEND: PulsarFront._send, s.Type.SUBSCRIBE: PulsarFront._subscribe, s.Type.FLOW: PulsarFront._flow,
    s.Type.ACK: PulsarFront._ack, s.Type.REDELIVER_UNACKNOWLEDGED_MESSAGES: PulsarFront._redeliver,
    s.Type.CLOSE_CONSUMER: PulsarFront._close_consumer, s.Type.SEEK: PulsarFront._seek,
    s.Type.UNSUBSCRIBE: PulsarFront._unsubscribe,
    s.Type.GET_LAST_MESSAGE_ID: PulsarFront._get_last_message_id,
    s.Type.CONSUMER_STATS: PulsarFront._consumer_stats,
    s.Type.GET_TOPICS_OF_NAMESPACE: PulsarFront._topics_of_namespace,
    s.Type.GET_SCHEMA: PulsarFront._get_schema, s.Type.GET_OR_CREATE_SCHEMA: PulsarFront._get_or_create_schema,
    s.Type.WATCH_TOPIC_LIST_CLOSE: PulsarFront._watch_topic_list_close,
    **{getattr(s.Type, name): PulsarFront._not_served
       for name in ("NEW_TXN", "ADD_PARTITION_TO_TXN", "ADD_SUBSCRIPTION_TO_TXN", "END_TXN", "END_TXN_ON_PARTITION",
                    "END_TXN_ON_SUBSCRIPTION", "TC_CLIENT_CONNECT_REQUEST", "WATCH_TOPIC_LIST")},
}


def _has_room(consumer: "_Consumer") -> bool:
    conn = consumer.conn
    if conn.max_unsent and conn.unsent > conn.max_unsent:
        conn.starved = True
        return False
    return True


def _count_unsent(consumer: "_Consumer", rec) -> None:
    # (an estimate until the listener writes it: the body, its metadata and the command)
    consumer.conn.unsent += len(rec.body) + 256


def _metadata_of(rec) -> bytes:
    """The stored entry's MessageMetadata; for a record a non-Pulsar client stored, one
    made from it (its properties, born time, a producer name)."""
    raw = rec.properties.get(METADATA_PROPERTY)
    if raw:
        return base64.b64decode(raw)
    meta = s.MessageMetadata(producer_name="rocketmq", sequence_id=max(rec.queue_offset, 0),
                             publish_time=rec.store_timestamp or rec.born_timestamp)
    for k, v in rec.properties.items():
        meta.properties.add(key=k, value=v)
    return meta.SerializeToString()


def _is_batch(rec) -> bool:
    raw = rec.properties.get(METADATA_PROPERTY)
    return bool(raw) and s.MessageMetadata.FromString(base64.b64decode(raw)).HasField("num_messages_in_batch")


def _permits_of(rec) -> int:
    """Permits an entry takes: its number of messages (a batch's count)."""
    raw = rec.properties.get(METADATA_PROPERTY)
    if not raw:
        return 1
    meta = s.MessageMetadata.FromString(base64.b64decode(raw))
    return meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 1


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
    """The request_id of the command ``cmd`` carries (0 when it has none)."""
    for field, value in cmd.ListFields():
        if field.message_type is not None and "request_id" in field.message_type.fields_by_name:
            return value.request_id
    return 0


def _ack_response(req, error: int | None = None, message: str = "") -> bytes:
    cmd = s.BaseCommand(type=s.Type.ACK_RESPONSE)
    r = cmd.ackResponse
    r.consumer_id, r.request_id = req.consumer_id, req.request_id
    if error is not None:
        r.error, r.message = error, message
    return _frame(cmd)


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
