"""The Pulsar front on the core (issue 21; reference pulsar-protocol.md §2–§5): a
connection's commands in, the frames to answer with out. No I/O; the listener
(broker/fronts/pulsar/listener.py) moves the bytes.

The handshake (CONNECT → CONNECTED, PING ⇄ PONG; a client's credentials are not checked,
as on a broker without authentication), lookups answered in band (PARTITIONED_METADATA:
the topic's partitions; LOOKUP: Connect to this broker's own service URL, or to the
named advertised listener the client asks for), producers and SEND (producing.py),
consumers on the core's subscriptions (broker/pulsar_model/cursors.py): SUBSCRIBE, FLOW,
MESSAGE pushed while permits last, ACK (individual, cumulative, batch-index),
REDELIVER_UNACKNOWLEDGED_MESSAGES with the redelivery count, SEEK, CLOSE_CONSUMER; a
closed connection's consumers give back what they held. Regex subscriptions' topic lists
and watchers: topic_lists.py. Every command that carries a request_id is answered with
it: ACK with one gets ACK_RESPONSE (ack receipts), CONSUMER_STATS, the schema look-ups
their responses, and what is not served (transactions) Pulsar's NotAllowedError.
Messages go out whenever the core stores into a subscribed topic (``pump``), whoever
stored them. How an entry is stored: entries.py. Fault rules (issue 38) are asked by the
handlers of the commands they match and by ``pump``, each once through
fault_answers.fault_answer, whose one table says what each outcome looks like to a client.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from ...java_fields import as_uint64
from ...notifications import DispatchReady, PulsarConsumersDetached, PulsarTopicsChanged
from ...pulsar_model.cursors import SubscribeOutcome, SubType
from . import non_persistent, producing
from . import schema as s
from .entries import METADATA_PROPERTY, is_batch, ledger_id, metadata_of, permits_of
from .fault_answers import DIALECT, HeldDispatch, fault_answer, guarded
from .frames import Frame, FrameError, ack_set_of_mask, encode_payload, mask_of_ack_set, signed_id
from .replies import ack_response, error, frame, request_id_of, success
from .topic_lists import TopicWatchers, topics_of_namespace
from ...pulsar_model.names import PulsarNameError, checked_topic, parse_topic, store_group, store_topic

__all__ = ["PulsarFront", "Connection", "PendingBytes", "METADATA_PROPERTY", "ledger_id"]

SERVER_VERSION = "Pulsar Server-rocketmq-emulator"


class PendingBytes:
    """What the front holds for all its connections together, unsent: Pulsar's broker
    stops reading entries for dispatch once managedLedgerMaxReadsInFlightSizeInMB of
    them wait to be written, so consumers that never read hold that much between them,
    whatever their number. Past ``bound`` (0: none), a connection gets a message only
    when nothing of it waits in the server (its socket took all it was given: a consumer
    that reads goes on, one message at a time); the others wait in ``waiting`` until
    the total is below the bound again. So the total stays under the bound plus one
    message per connection (one a stalled consumer was given while its socket's buffers
    were filling)."""

    __slots__ = ("bound", "total", "waiting")

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self.total = 0
        self.waiting: set = set()           # connections passed over for the total

    def full(self) -> bool:
        return 0 < self.bound <= self.total


@dataclass(eq=False)          # (a connection is itself: kept in sets, compared by identity)
class Connection:
    """What the front knows of one client connection."""
    peer: str = ""
    connected: bool = False
    protocol_version: int = 0
    producers: dict[int, "producing.Producer"] = field(default_factory=dict)
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
    pending: PendingBytes | None = None     # the total over the listener's connections (None: none kept)
    # producers and consumers of non-persistent topics (fronts/pulsar/non_persistent.py), by their ids
    transient_producers: dict = field(default_factory=dict)
    transient_consumers: dict = field(default_factory=dict)

    def holds(self, n: int) -> None:
        """``n`` bytes wait unsent for this connection now (its listener's count)."""
        if self.pending is not None:
            self.pending.total += n - self.unsent
        self.unsent = n


class _Consumer:
    """A consumer's key in the core's subscriptions (compared by identity)."""

    __slots__ = ("conn", "consumer_id", "group", "stored", "name", "partition", "ledger", "topic", "subscription")

    def __init__(self, conn: Connection, consumer_id: int, group: str, stored: str, name: str = "",
                 partition: int = -1, topic: str = "", subscription: str = "") -> None:
        self.conn, self.consumer_id, self.group, self.stored = conn, consumer_id, group, stored
        self.name = name                        # the client's consumer name (stats show it)
        self.partition = partition              # its topic's partition index (message ids carry it), -1: none
        self.ledger = ledger_id(stored)
        self.topic, self.subscription = topic, subscription      # as the client names them (fault rules match)

    def __str__(self) -> str:
        return self.name


class PulsarFront:
    def __init__(self, core, service_url: str, max_message_size: int | None = None) -> None:
        """``service_url``: what lookups answer (this front's own pulsar:// address);
        ``max_message_size``: announced in CONNECTED (default: pulsarMaxMessageSize)."""
        self.core = core
        self.service_url = service_url
        self.max_message_size = max_message_size or core.config.pulsar_max_message_size
        self._names = itertools.count()
        self.channel = core.connect(dialect=DIALECT)    # the core's view of this front's sends
        self._dirty: set[str] = set()           # store topics with something new to dispatch
        self._active: dict[tuple[str, str], _Consumer] = {}   # Failover: the active consumer last told
        self._conns: dict[Connection, None] = {}              # connections that sent CONNECT, open
        self.watchers = TopicWatchers(core)
        self._acks = core.pulsar_acks()          # (an ack per message: bound once)
        self.on_dirty = None                    # the listener's hook: pump soon
        # a store into a subscribed topic, whoever stored it, or delayed messages come due
        self._stop_notifications = core.subscribe(lambda n: self._mark(n.topic), (DispatchReady,))
        self._stop_topics = core.subscribe(self._topics_changed, (PulsarTopicsChanged,))
        self._stop_detached = core.subscribe(lambda n: self.detached(n.consumers), (PulsarConsumersDetached,))
        self.held = HeldDispatch(self, self._mark)      # subscriptions a hold rule keeps from dispatch
        self.fenced: dict = {}                  # (store topic, producer name) -> the refusal of its sends for good
        self._stop_faults = core.on_faults_changed(self._faults_changed)

    def close(self) -> None:
        """The listener is gone: the core stops telling this front anything."""
        for stop in (self._stop_notifications, self._stop_topics, self._stop_detached, self._stop_faults):
            stop()

    def new_producer_name(self) -> str:
        return f"rocketmq-emulator-{next(self._names)}"

    # -- the one entry point -----------------------------------------------------------------
    def handle(self, conn: Connection, frame_: Frame) -> list[bytes]:
        """The frames to send back for one frame from the client (none for some)."""
        try:
            cmd = s.BaseCommand.FromString(frame_.command)
        except Exception as exc:            # (protobuf's DecodeError) a broken command ends the connection
            conn.closed = True
            raise FrameError(f"not a Pulsar command: {exc}") from None
        try:
            handler = _HANDLERS[cmd.type]           # (a subscript, not a call: every SEND comes here)
        except KeyError:
            handler = None
        if handler is None or not conn.connected and cmd.type != s.Type.CONNECT:
            if not conn.connected:
                conn.closed = True
                return [error(0, s.ServerError.NotAllowedError, "the first command must be CONNECT")]
            # (a type this schema does not know parses as no type at all)
            return [error(request_id_of(cmd), s.ServerError.UnknownError,
                          f"command {cmd.type if cmd.HasField('type') else 'of an unknown type'} is not "
                          f"supported by this broker")]
        return handler(self, conn, cmd, frame_)

    # -- connection ---------------------------------------------------------------------------
    def _connect(self, conn: Connection, cmd, frame_) -> list[bytes]:
        """CONNECT → CONNECTED. Authentication is off, as on a Pulsar broker with
        authenticationEnabled=false: a token or basic credentials are accepted unread."""
        conn.connected = True
        self._conns[conn] = None
        conn.protocol_version = min(cmd.connect.protocol_version, s.PROTOCOL_VERSION)
        reply = s.BaseCommand(type=s.Type.CONNECTED)
        reply.connected.server_version = SERVER_VERSION
        reply.connected.protocol_version = conn.protocol_version
        reply.connected.max_message_size = self.max_message_size
        reply.connected.feature_flags.supports_topic_watchers = True
        return [frame(reply)]

    def _ping(self, conn: Connection, cmd, frame_) -> list[bytes]:
        return [frame(s.BaseCommand(type=s.Type.PONG, pong={}))]

    def _pong(self, conn: Connection, cmd, frame_) -> list[bytes]:
        return []

    # -- lookups (answered in band: an ERROR to a lookup is dropped by the client) ----------------
    def _partitioned_metadata(self, conn: Connection, cmd, frame_) -> list[bytes]:
        req = cmd.partitionMetadata
        reply = s.BaseCommand(type=s.Type.PARTITIONED_METADATA_RESPONSE)
        r = reply.partitionMetadataResponse
        r.request_id = req.request_id
        if _bad_topic(r, req.topic, s.PartitionedLookupType.Failed) is None:
            r.response = s.PartitionedLookupType.Success
            r.partitions = self.core.non_persistent_partitions(parse_topic(req.topic)) \
                if req.topic.startswith(non_persistent.NON_PERSISTENT) else self.core.pulsar_partitions(req.topic)
        return [frame(reply)]

    def _lookup(self, conn: Connection, cmd, frame_) -> list[bytes]:
        req = cmd.lookupTopic
        reply = s.BaseCommand(type=s.Type.LOOKUP_RESPONSE)
        r = reply.lookupTopicResponse
        r.request_id = req.request_id
        if _bad_topic(r, req.topic, s.LookupType.Failed) is not None:
            return [frame(reply)]
        url = self.broker_url(req.advertised_listener_name)
        if url is None:                     # as Pulsar refuses a listener name it does not have
            r.response, r.error = s.LookupType.Failed, s.ServerError.ServiceNotReady
            r.message = f"the broker do not have {req.advertised_listener_name} listener"
        else:
            # the service URL the client gave, echoed, keeps it on one connection (reference §3)
            r.response, r.brokerServiceUrl, r.authoritative = s.LookupType.Connect, url, True
        return [frame(reply)]

    def broker_url(self, listener: str = "") -> str | None:
        """The pulsar:// URL a lookup answers for ``listener`` (BrokerConfig.listener_url)."""
        return self.core.config.listener_url(listener, self.service_url)

    # -- consumers ---------------------------------------------------------------------------
    def _subscribe(self, conn: Connection, cmd, frame_) -> list[bytes]:
        req = cmd.subscribe
        if req.topic.startswith(non_persistent.NON_PERSISTENT):
            name = parse_topic(req.topic)
            return non_persistent.subscribe(self, conn, req, _Consumer(
                conn, req.consumer_id, req.subscription, name.full, req.consumer_name, name.partition, name.full,
                req.subscription))
        try:
            stored = store_topic(req.topic)
            group = store_group(req.subscription)
        except PulsarNameError as exc:
            return [error(req.request_id, s.ServerError.InvalidTopicName, str(exc))]
        self.core.ensure_pulsar_topic(stored)
        consumer = conn.consumers.get(req.consumer_id)
        if consumer is None:
            name = parse_topic(req.topic)
            consumer = _Consumer(conn, req.consumer_id, group, stored, req.consumer_name, name.partition, name.full,
                                 req.subscription)
        start = None
        if not req.durable and req.HasField("start_message_id"):
            # a reader: earliest is (-1, -1), latest (2^63-1, 2^63-1), else an entry id of ours
            entry = signed_id(req.start_message_id.entryId)
            start = 0 if entry < 0 else entry
        if req.read_compacted and req.subType not in (s.SubType.Exclusive, s.SubType.Failover):
            return [error(req.request_id, s.ServerError.NotAllowedError,
                          "readCompacted only allowed on failover or exclusive subscriptions")]
        outcome = self.core.pulsar_subscribe(group, stored, consumer, SubType(req.subType),
                                                    earliest=req.initialPosition == s.InitialPosition.Earliest,
                                                    durable=req.durable, start=start, priority=req.priority_level,
                                                    read_compacted=req.read_compacted,
                                                    label=f"{req.consumer_name or req.consumer_id} ({conn.peer})")
        if outcome is not SubscribeOutcome.OK:
            return [error(req.request_id, s.ServerError.ConsumerBusy, outcome.value)]
        conn.consumers[req.consumer_id] = consumer
        return [success(req.request_id)] + self._tell_active(consumer, joined=consumer)

    def _tell_active(self, consumer: "_Consumer", joined: "_Consumer | None" = None) -> list[bytes]:
        """Failover: ACTIVE_CONSUMER_CHANGE to every consumer of ``consumer``'s subscription
        when the active one changed, else to ``joined``, a consumer that just subscribed
        (reference §5.6). Returns the frame for ``joined`` (it follows its SUCCESS); the
        others' are queued on their connections."""
        keys, active = self.core.pulsar_members(consumer)
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
                (own if key is joined else key.conn.outgoing).append(frame(cmd))
        return own

    def _leave(self, consumer: "_Consumer") -> None:
        """``consumer`` leaves its subscription, giving back what it held; on Failover the
        others learn of a new active one."""
        keys, _ = self.core.pulsar_members(consumer)
        self.core.pulsar_close(consumer)
        others = [k for k in keys if k is not consumer]
        if others:
            self._tell_active(others[0])
        else:
            self._active.pop((consumer.group, consumer.stored), None)
        self._mark(consumer.stored)

    def _flow(self, conn: Connection, cmd, frame_) -> list[bytes]:
        consumer = conn.consumers.get(cmd.flow.consumer_id)
        if consumer is not None:
            if self.core.faults_active:
                answer = fault_answer(self, s.Type.FLOW, conn, cmd, consumer, None)
                if answer is not None:
                    return answer
            self.core.pulsar_flow(consumer, cmd.flow.messagePermits)
            self._mark(consumer.stored)
        return []

    def _ack(self, conn: Connection, cmd, frame_, later: bool = False) -> list[bytes]:
        """An ACK; with a request_id (ack receipts) it is answered by ACK_RESPONSE once
        applied, or with the error that kept it from being applied. ``later``: a fault
        rule delayed it, and its time has come."""
        req = cmd.ack
        receipt = req.HasField("request_id")
        consumer = conn.consumers.get(req.consumer_id)
        if consumer is None:
            return [ack_response(req, s.ServerError.ConsumerNotFound,
                                  f"consumer {req.consumer_id} is not open on this connection")] if receipt else []
        if req.HasField("txnid_most_bits") or req.HasField("txnid_least_bits"):
            return [ack_response(req, s.ServerError.NotAllowedError,
                                  "transactions are not enabled on this broker: the ack was not applied")] \
                if receipt else []
        if self.core.faults_active and not later:
            answer = fault_answer(self, s.Type.ACK, conn, cmd, consumer, lambda: self._ack(conn, cmd, None, later=True))
            if answer is not None:
                return answer
        subs = self._acks
        if req.ack_type == s.AckType.Cumulative:
            if len(req.message_id) == 1:          # (Pulsar ignores a cumulative ack of several ids)
                [m] = req.message_id
                offset = signed_id(m.entryId)
                if m.ack_set:                     # up to this batch, and of it the indexes acked
                    subs.ack_cumulative(consumer, offset - 1)
                    subs.ack_part(consumer, offset, mask_of_ack_set(m.ack_set))
                else:
                    subs.ack_cumulative(consumer, offset)
            return [ack_response(req)] if receipt else []
        whole = [signed_id(m.entryId) for m in req.message_id if not m.ack_set]
        subs.ack(consumer, whole)
        for m in req.message_id:
            if m.ack_set:                         # batch-index ack: bit i set = index i still unacked
                subs.ack_part(consumer, signed_id(m.entryId), mask_of_ack_set(m.ack_set))
        return [ack_response(req)] if receipt else []

    def _consumer_stats(self, conn: Connection, cmd, frame_) -> list[bytes]:
        """CONSUMER_STATS: the broker's view of one consumer (rates are not measured: 0)."""
        req = cmd.consumerStats
        reply = s.BaseCommand(type=s.Type.CONSUMER_STATS_RESPONSE)
        r = reply.consumerStatsResponse
        r.request_id = req.request_id
        consumer = conn.consumers.get(req.consumer_id)
        stats = self.core.pulsar_consumer_stats(consumer) if consumer is not None else None
        if stats is None:
            r.error_code, r.error_message = s.ServerError.ConsumerNotFound, f"consumer {req.consumer_id} is not open"
            return [frame(reply)]
        # (permits go below zero when a batch takes more than are left: a Java int, written as
        # protobuf-java writes it in the uint64)
        r.type, r.availablePermits, r.unackedMessages, r.msgBacklog = (
            stats["type"], as_uint64(stats["permits"]), stats["unacked"], stats["backlog"])
        r.address = conn.peer
        return [frame(reply)]

    def _topics_of_namespace(self, conn: Connection, cmd, frame_) -> list[bytes]:
        return topics_of_namespace(self, conn, cmd, frame_)

    def _watch_topic_list(self, conn: Connection, cmd, frame_) -> list[bytes]:
        return self.watchers.watch(conn, cmd)

    def _watch_topic_list_close(self, conn: Connection, cmd, frame_) -> list[bytes]:
        return self.watchers.close(conn, cmd)

    def _get_schema(self, conn: Connection, cmd, frame_) -> list[bytes]:
        """GET_SCHEMA: no schema is kept (a producer's is accepted and ignored), so none is
        found, answered as Pulsar answers a topic without one (in the response, not ERROR)."""
        req = cmd.getSchema
        reply = s.BaseCommand(type=s.Type.GET_SCHEMA_RESPONSE)
        r = reply.getSchemaResponse
        r.request_id, r.error_code = req.request_id, s.ServerError.TopicNotFound
        r.error_message = f"Topic not found or no-schema {req.topic}"
        return [frame(reply)]

    def _get_or_create_schema(self, conn: Connection, cmd, frame_) -> list[bytes]:
        """GET_OR_CREATE_SCHEMA: accepted and not kept, as a PRODUCER's schema is (an empty
        schema version); a topic that does not exist is TopicNotFound, as in Pulsar."""
        req = cmd.getOrCreateSchema
        reply = s.BaseCommand(type=s.Type.GET_OR_CREATE_SCHEMA_RESPONSE)
        r = reply.getOrCreateSchemaResponse
        r.request_id = req.request_id
        try:
            exists = self.core.topic_config(store_topic(req.topic)) is not None
        except PulsarNameError as exc:
            r.error_code, r.error_message = s.ServerError.InvalidTopicName, str(exc)
            return [frame(reply)]
        if exists:
            r.schema_version = b""
        else:
            r.error_code, r.error_message = s.ServerError.TopicNotFound, f"Topic not found {req.topic}"
        return [frame(reply)]

    def _not_served(self, conn: Connection, cmd, frame_) -> list[bytes]:
        """A transaction request: ERROR with Pulsar's NotAllowedError, as a broker without a
        transaction coordinator answers."""
        return [error(request_id_of(cmd), s.ServerError.NotAllowedError,
                      "Transaction manager is not enabled on this broker")]

    def _redeliver(self, conn: Connection, cmd, frame_, later: bool = False) -> list[bytes]:
        """REDELIVER_UNACKNOWLEDGED_MESSAGES (``later``: a fault rule delayed it, and its
        time has come)."""
        req = cmd.redeliverUnacknowledgedMessages
        consumer = conn.consumers.get(req.consumer_id)
        if consumer is None:
            return []
        if self.core.faults_active and not later:
            answer = fault_answer(self, s.Type.REDELIVER_UNACKNOWLEDGED_MESSAGES, conn, cmd, consumer,
                                  lambda: self._redeliver(conn, cmd, None, later=True))
            if answer is not None:
                return answer
        ids = [signed_id(m.entryId) for m in req.message_ids]
        self.core.pulsar_redeliver(consumer, ids or None)
        self._mark(consumer.stored)
        return []

    def refuse_consumer(self, consumer: "_Consumer") -> list[bytes]:
        """The broker will not serve ``consumer`` now (a fault rule refused its FLOW or its
        nack): it leaves its subscription, what it held goes back with its count unchanged,
        and it is told to reconnect (CLOSE_CONSUMER, as when Pulsar unloads a topic)."""
        conn = consumer.conn
        if conn.consumers.get(consumer.consumer_id) is consumer:
            del conn.consumers[consumer.consumer_id]
            self._leave(consumer)
        return [_close_consumer_frame(consumer.consumer_id)]

    def _close_consumer(self, conn: Connection, cmd, frame_) -> list[bytes]:
        consumer = conn.consumers.pop(cmd.close_consumer.consumer_id, None)
        if consumer is not None:
            self._leave(consumer)
        return [success(cmd.close_consumer.request_id)]

    def _unsubscribe(self, conn: Connection, cmd, frame_) -> list[bytes]:
        """Delete the subscription; after SUCCESS the client drops the consumer without a
        CLOSE_CONSUMER (reference §5.7), so it is gone from the connection here."""
        req = cmd.unsubscribe
        consumer = conn.consumers.get(req.consumer_id)
        if consumer is None:
            return [error(req.request_id, s.ServerError.MetadataError, f"consumer {req.consumer_id} is not open")]
        outcome = self.core.pulsar_unsubscribe(consumer)
        if outcome is not SubscribeOutcome.OK:
            return [error(req.request_id, s.ServerError.MetadataError, outcome.value)]
        del conn.consumers[req.consumer_id]
        self._active.pop((consumer.group, consumer.stored), None)
        return [success(req.request_id)]

    def _seek(self, conn: Connection, cmd, frame_) -> list[bytes]:
        """Reset the subscription to a message id or a publish time; its consumers are told
        to reconnect (CLOSE_CONSUMER), as Pulsar does, and come back at the new position."""
        req = cmd.seek
        consumer = conn.consumers.get(req.consumer_id)
        if consumer is None:
            return [error(req.request_id, s.ServerError.ConsumerNotFound, f"consumer {req.consumer_id} is not open")]
        core = self.core
        if req.HasField("message_publish_time"):
            offset = core.pulsar_offset_at_time(consumer.stored, signed_id(req.message_publish_time))    # (2^64-1: -1)
        elif req.HasField("message_id"):
            entry = signed_id(req.message_id.entryId)
            offset = 0 if entry < 0 else entry           # earliest arrives as (-1, -1)
        else:
            return [error(req.request_id, s.ServerError.UnknownError, "seek needs a message id or a publish time")]
        self._active.pop((consumer.group, consumer.stored), None)     # (all come back: told anew)
        for key in core.pulsar_seek(consumer, offset):
            if key is not consumer:                     # (the seeking one is told below)
                key.conn.outgoing.append(_close_consumer_frame(key.consumer_id))
        # CLOSE_CONSUMER before SUCCESS, in Pulsar's order (it disconnects the consumers, then
        # answers): the client then completes its seek when it is back, from the position it
        # sought — a reader told after SUCCESS comes back from the last message it had instead
        return [_close_consumer_frame(consumer.consumer_id), success(req.request_id)]

    def detached(self, keys) -> None:
        """Consumers the core detached from their subscription (an admin reset or delete):
        each is told to reconnect (CLOSE_CONSUMER), and comes back where the cursor is."""
        for key in keys:
            if isinstance(key, _Consumer) and not key.conn.closed:
                self._active.pop((key.group, key.stored), None)
                key.conn.outgoing.append(_close_consumer_frame(key.consumer_id))
                if self.on_dirty is not None:          # (the listener flushes at its next pump)
                    self.on_dirty()

    def _get_last_message_id(self, conn: Connection, cmd, frame_) -> list[bytes]:
        req = cmd.getLastMessageId
        consumer = conn.consumers.get(req.consumer_id)
        last = self.core.pulsar_last(consumer) if consumer is not None else None
        if last is None:
            return [error(req.request_id, s.ServerError.ConsumerNotFound, f"consumer {req.consumer_id} is not open")]
        offset, mark_delete = last
        reply = s.BaseCommand(type=s.Type.GET_LAST_MESSAGE_ID_RESPONSE)
        r = reply.getLastMessageIdResponse
        r.request_id = req.request_id
        r.last_message_id.ledgerId = consumer.ledger
        if consumer.partition >= 0:
            r.last_message_id.partition = consumer.partition
        r.last_message_id.entryId = as_uint64(max(offset, -1))     # empty: -1, "no more messages"
        if offset >= 0:
            entry = self.core.queue_entry(consumer.stored, 0, offset)
            rec = self.core.record_at(entry[0]) if entry else None
            n = permits_of(rec) if rec is not None else 1
            if n > 1 or (rec is not None and is_batch(rec)):
                kept = self.core.pulsar_compacted_mask(consumer, offset)
                r.last_message_id.batch_index = kept.bit_length() - 1 if kept else n - 1
        r.consumer_mark_delete_position.ledgerId = consumer.ledger
        r.consumer_mark_delete_position.entryId = as_uint64(mark_delete - 1 if mark_delete > 0 else -1)
        return [frame(reply)]

    def closing(self, conn: Connection) -> list[bytes]:
        """The broker is shutting down: CLOSE_PRODUCER and CLOSE_CONSUMER for everything
        open on ``conn``, as Pulsar sends when it unloads a topic, so the client knows to
        reconnect (it retries the service URL until the broker is back)."""
        out = [producing.close_frame(p) for p in conn.producers.values()]
        out += [_close_consumer_frame(consumer_id) for consumer_id in conn.consumers]
        return out + non_persistent.closing_frames(conn, producing.close_frame, _close_consumer_frame)

    def disconnect(self, conn: Connection) -> None:
        """The connection is gone: its consumers give back what they held, its producers
        let a waiting exclusive one take their topics, its watchers go."""
        self._conns.pop(conn, None)
        for consumer in conn.consumers.values():
            self._leave(consumer)
        conn.consumers.clear()
        producers = list(conn.producers.values())
        conn.producers.clear()
        for p in producers:
            producing.release(self, p)
        non_persistent.disconnect(self, conn)
        self.watchers.drop(conn)

    def _topics_changed(self, n: PulsarTopicsChanged) -> None:
        """Topics were made or deleted: the watchers learn of it; a deleted topic's
        producers and consumers are closed (CLOSE_PRODUCER / CLOSE_CONSUMER: they come
        back and make it again, as after Pulsar deletes a topic with its clients)."""
        self.watchers.changed(n.topics, n.deleted)
        if not n.deleted:
            return
        gone = set(n.topics)
        for conn in list(self._conns):
            for pid, p in list(conn.producers.items()):
                if p.stored in gone:
                    del conn.producers[pid]
                    producing.release(self, p)
                    conn.outgoing.append(producing.close_frame(p))
            non_persistent.close_producers_of(self, conn, gone, producing.close_frame)
            # (consumers: the core detached them, PulsarConsumersDetached)

    # -- dispatch --------------------------------------------------------------------------------
    def wake(self, conn: Connection) -> None:
        """``conn`` can take messages again (it drained): dispatch to its consumers."""
        for consumer in conn.consumers.values():
            self._mark(consumer.stored)

    def send_later(self, conn: Connection, frames: list[bytes]) -> None:
        """Frames for ``conn`` from a timer (a SEND's receipt a fault rule delayed): out
        with the listener's next pump."""
        if conn.closed or not frames:
            return
        conn.outgoing.extend(frames)
        if self.on_dirty is not None:
            self.on_dirty()

    @staticmethod
    def has_room(consumer: "_Consumer") -> bool:
        """Whether a MESSAGE may go to ``consumer``'s connection now (its bounds)."""
        return _has_room(consumer)

    def _mark(self, stored: str) -> None:
        if not self._dirty and self.on_dirty is not None:
            self.on_dirty()
        self._dirty.add(stored)

    def pump(self) -> set[Connection]:
        """Dispatch what is waiting on every subscription of the topics marked since the
        last pump; the MESSAGE frames go to each consumer's connection's ``outgoing``.
        Returns the connections that got some. While fault rules are installed, a
        subscription a hold holds gets none, and each MESSAGE is asked of the pull rules
        that delay or duplicate it."""
        touched: set[Connection] = set()
        core = self.core
        faulty = core.faults_active
        while self._dirty:
            topic = self._dirty.pop()
            for group, keys in core.pulsar_subscriptions_on(topic):
                if not keys or not all(isinstance(k, _Consumer) for k in keys):
                    continue        # (a subscription of another kind of consumer: the simulator's, in process)
                if faulty and self.held.holds(topic, keys[0]):
                    continue
                for d in core.pulsar_dispatch(group, topic, cost=permits_of, ready=_has_room, sent=_count_unsent):
                    consumer = d.consumer
                    conn = consumer.conn
                    if conn.closed:
                        continue
                    message = self._message(consumer, d)
                    if faulty:
                        answer = fault_answer(self, s.Type.MESSAGE, conn, None, consumer, lambda m=message: [m])
                        if answer is not None:      # (delayed: none now; duplicated: twice)
                            if answer:
                                conn.outgoing.extend(answer)
                                touched.add(conn)
                            continue
                    conn.outgoing.append(message)
                    touched.add(conn)
        return touched

    def _faults_changed(self) -> None:
        """Fault rules changed: what a hold kept back is dispatched if it no longer holds."""
        self.held.release()

    def _message(self, consumer: "_Consumer", d) -> bytes:
        cmd = s.BaseCommand(type=s.Type.MESSAGE)
        m = cmd.message
        m.consumer_id = consumer.consumer_id
        m.message_id.ledgerId, m.message_id.entryId = consumer.ledger, d.offset
        if consumer.partition >= 0:
            m.message_id.partition = consumer.partition
        if d.redelivery_count:
            m.redelivery_count = d.redelivery_count
        if d.unacked_mask is not None:            # a partly acked batch: the client skips the others
            m.ack_set.extend(ack_set_of_mask(d.unacked_mask))
        return encode_payload(cmd.SerializeToString(), metadata_of(d.record, self.core), d.record.body,
                              checksum=consumer.conn.checksums)



_HANDLERS = {
    # (the commands answered once are asked of the fault rules first: fault_answers.guarded)
    s.Type.CONNECT: guarded(s.Type.CONNECT, PulsarFront._connect), s.Type.PING: PulsarFront._ping,
    s.Type.PONG: PulsarFront._pong,
    s.Type.PARTITIONED_METADATA: guarded(s.Type.PARTITIONED_METADATA, PulsarFront._partitioned_metadata),
    s.Type.LOOKUP: guarded(s.Type.LOOKUP, PulsarFront._lookup),
    # (producing.py's handlers take the front as their first argument, as a method would)
    s.Type.PRODUCER: guarded(s.Type.PRODUCER, producing.producer), s.Type.CLOSE_PRODUCER: producing.close_producer,
    s.Type.SEND: producing.send, s.Type.SUBSCRIBE: guarded(s.Type.SUBSCRIBE, PulsarFront._subscribe),
    # (a consumer command goes to fronts/pulsar/non_persistent.py when its consumer is there)
    **{kind: non_persistent.routed(kind, handler) for kind, handler in (
        (s.Type.FLOW, PulsarFront._flow), (s.Type.ACK, PulsarFront._ack),
        (s.Type.REDELIVER_UNACKNOWLEDGED_MESSAGES, PulsarFront._redeliver),
        (s.Type.CLOSE_CONSUMER, PulsarFront._close_consumer), (s.Type.SEEK, PulsarFront._seek),
        (s.Type.UNSUBSCRIBE, PulsarFront._unsubscribe), (s.Type.GET_LAST_MESSAGE_ID, PulsarFront._get_last_message_id),
        (s.Type.CONSUMER_STATS, PulsarFront._consumer_stats))},
    s.Type.GET_TOPICS_OF_NAMESPACE: PulsarFront._topics_of_namespace,
    s.Type.WATCH_TOPIC_LIST: PulsarFront._watch_topic_list,
    s.Type.WATCH_TOPIC_LIST_CLOSE: PulsarFront._watch_topic_list_close,
    s.Type.GET_SCHEMA: PulsarFront._get_schema, s.Type.GET_OR_CREATE_SCHEMA: PulsarFront._get_or_create_schema,
    **{getattr(s.Type, name): PulsarFront._not_served
       for name in ("NEW_TXN", "ADD_PARTITION_TO_TXN", "ADD_SUBSCRIPTION_TO_TXN", "END_TXN", "END_TXN_ON_PARTITION",
                    "END_TXN_ON_SUBSCRIPTION", "TC_CLIENT_CONNECT_REQUEST")},
}


def _close_consumer_frame(consumer_id: int) -> bytes:
    cmd = s.BaseCommand(type=s.Type.CLOSE_CONSUMER)
    cmd.close_consumer.consumer_id, cmd.close_consumer.request_id = consumer_id, 0
    return frame(cmd)


def _has_room(consumer: "_Consumer") -> bool:
    conn = consumer.conn
    if conn.max_unsent and conn.unsent > conn.max_unsent:
        conn.starved = True
        return False
    pending = conn.pending
    if pending is not None and conn.unsent and pending.full():
        pending.waiting.add(conn)
        return False
    return True


def _count_unsent(consumer: "_Consumer", rec) -> None:
    # (an estimate until the listener writes it: the body, its metadata and the command)
    conn = consumer.conn
    conn.holds(conn.unsent + len(rec.body) + 256)


def _bad_topic(response, topic: str, failed: int) -> str | None:
    """A lookup response for a topic this broker cannot take: Failed, InvalidTopicName and
    why (in band: the client drops an ERROR sent to a lookup). None when the name is good."""
    try:
        checked_topic(topic)
    except PulsarNameError as exc:
        response.response, response.error, response.message = failed, s.ServerError.InvalidTopicName, str(exc)
        return str(exc)
    return None
