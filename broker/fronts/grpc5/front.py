"""The RocketMQ 5.x front: each MessagingService call as typed core operations
(reference rocketmq-5x-grpc.md §2.3, §3, §8). Synchronous and sans-I/O: the gRPC adapter
(broker/fronts/grpc5/listener.py) owns the sockets, the streams and the long-poll waits.

Every answer carries a Status with a real code: clients treat a missing one as an
illegal response. Bad input gets its 5.x code and the call goes no further; nothing
raises to the adapter for a client's mistake.
"""
from __future__ import annotations

import logging
import zlib
from typing import Callable

from rocketmq_emulator.store.records import Prop, SysFlag

from ...operations import (AckOutcome, EndOutcome, EndTransaction, InvisibleOutcome, PopOutcome, PopRequest,
                           Registration, Resolution, SendOutcome, SendRequest)
from ...rocketmq_model.invisible_time import MAX_INVISIBLE_MS
from ...dialects import NOT_CREATED_BY_ROCKETMQ, is_pulsar_store_topic
from ...rocketmq_model.message_types import accepted_types
from ...notifications import LiteUnsubscribed, TransactionCheck
from ...rocketmq_model.lite_topics import LITE_PREFIX, LITE_SUBSCRIPTION_QUOTA, MAX_LITE_TOPIC_SIZE, LiteSyncOutcome, store_topic
from ...rocketmq_model.message_types import PRIORITY_PROPERTY
from ...rocketmq_model.priorities import priority_problem
from ...retry_lifecycle import DEFAULT_MAX_RECONSUME_TIMES, FIFO_RETRY_INTERVAL_MS, ROCKETMQ5_UNORDERED_INTERVALS_MS
from ...rocketmq_model.topics import TopicNameError, validate_topic_name
from .convert import SHARDING_KEY, duration, duration_ms, pb, status, timestamp_ms, to_proto_message
from .stubs import spb

__all__ = ["Rocketmq5Front", "DEFAULT_LONG_POLL_MS", "MAX_LONG_POLL_MS"]

log = logging.getLogger("broker.rocketmq5")

DEFAULT_LONG_POLL_MS = 20_000          # grpcClientConsumerMaxLongPollingTimeoutMillis
MAX_LONG_POLL_MS = 20_000
_MIN_INVISIBLE_MS = 10_000             # minInvisibleTimeMillsForRecv
_AUTO_RENEW_INVISIBLE_MS = 60_000      # defaultInvisibleTimeMills
_MAX_BATCH = 32
_FIFO_RETRY_MS = FIFO_RETRY_INTERVAL_MS
_PRODUCER_BACKOFF = pb.RetryPolicy(max_attempts=3, exponential_backoff=pb.ExponentialBackoff(
    initial=duration(10), max=duration(1000), multiplier=2.0))

_SEND_CODES = {
    SendOutcome.TOPIC_NOT_EXIST: pb.TOPIC_NOT_FOUND,
    SendOutcome.TOPIC_ILLEGAL: pb.ILLEGAL_TOPIC,
    SendOutcome.TOPIC_NOT_ALLOWED: pb.FORBIDDEN,
    SendOutcome.TOPIC_NOT_WRITEABLE: pb.FORBIDDEN,
    SendOutcome.BROKER_NOT_WRITEABLE: pb.FORBIDDEN,
    SendOutcome.TIMER_ILLEGAL: pb.ILLEGAL_DELIVERY_TIME,
    SendOutcome.DELAY_ILLEGAL: pb.BAD_REQUEST,
    SendOutcome.MESSAGE_ILLEGAL: pb.BAD_REQUEST,
    SendOutcome.QUEUE_ILLEGAL: pb.BAD_REQUEST,
    SendOutcome.GROUP_NOT_EXIST: pb.CONSUMER_GROUP_NOT_FOUND,
    SendOutcome.STORE_REFUSED: pb.INTERNAL_SERVER_ERROR,
    SendOutcome.MESSAGE_TYPE_MISMATCH: pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
    SendOutcome.LITE_TOPIC_ILLEGAL: pb.ILLEGAL_LITE_TOPIC,
    SendOutcome.LITE_TOPIC_QUOTA_EXCEEDED: pb.LITE_TOPIC_QUOTA_EXCEEDED,
}
_LITE_SYNC_CODES = {
    LiteSyncOutcome.TOPIC_NOT_EXIST: pb.TOPIC_NOT_FOUND,
    LiteSyncOutcome.NOT_LITE: pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE,
    LiteSyncOutcome.GROUP_NOT_EXIST: pb.CONSUMER_GROUP_NOT_FOUND,
    LiteSyncOutcome.ILLEGAL_LITE_TOPIC: pb.ILLEGAL_LITE_TOPIC,
    LiteSyncOutcome.QUOTA_EXCEEDED: pb.LITE_SUBSCRIPTION_QUOTA_EXCEEDED,
}
_LITE_CLIENTS = (pb.LITE_PUSH_CONSUMER, pb.LITE_SIMPLE_CONSUMER)
_RESOLUTIONS = {pb.COMMIT: Resolution.COMMIT, pb.ROLLBACK: Resolution.ROLLBACK}
_END_CODES = {EndOutcome.NOT_FOUND: pb.INVALID_TRANSACTION_ID, EndOutcome.GROUP_MISMATCH: pb.INVALID_TRANSACTION_ID,
              EndOutcome.STORE_REFUSED: pb.INTERNAL_SERVER_ERROR}
_POP_CODES = {
    PopOutcome.TOPIC_NOT_EXIST: pb.TOPIC_NOT_FOUND,
    PopOutcome.GROUP_NOT_EXIST: pb.CONSUMER_GROUP_NOT_FOUND,
    PopOutcome.ILLEGAL_INVISIBLE_TIME: pb.ILLEGAL_INVISIBLE_TIME,
    PopOutcome.ILLEGAL_ARGUMENT: pb.BAD_REQUEST,
    PopOutcome.ILLEGAL_FILTER_EXPRESSION: pb.ILLEGAL_FILTER_EXPRESSION,
}


class Rocketmq5Front:
    def __init__(self, core) -> None:
        self.core = core
        self.settings: dict[str, pb.Settings] = {}      # x-mq-client-id -> the client's last Settings
        self._channel = core.connect(remote="127.0.0.1:0")
        # A producer's own connection to the core: it is registered as a producer of each
        # topic it publishes (the proxy's producer group for a 5.x client is the topic), so
        # the core's transaction check-backs find it.
        self._producers: dict[str, object] = {}          # client id -> its Channel
        self._client_of: dict[int, str] = {}              # channel id -> client id
        # ``outgoing(client_id, TelemetryCommand)``: how the adapter writes a command on a
        # client's Telemetry stream (the listener sets it)
        self.outgoing: Callable[[str, object], None] | None = None
        self.close = core.subscribe(self._on_notification, (TransactionCheck, LiteUnsubscribed))

    # -- clients -----------------------------------------------------------------------------
    def telemetry_settings(self, client_id: str, settings: pb.Settings) -> pb.Settings | None:
        """The server's Settings for a client's (§2.3), None for one that is neither a
        producer nor a consumer (the adapter answers INVALID_ARGUMENT)."""
        if not settings.HasField("publishing") and not settings.HasField("subscription"):
            return None
        self.settings[client_id] = settings
        out = pb.Settings()
        out.CopyFrom(settings)
        out.metric.on = False
        if settings.HasField("publishing"):
            self._register_producer(client_id, [t.name for t in settings.publishing.topics])
            out.backoff_policy.CopyFrom(_PRODUCER_BACKOFF)
            out.publishing.max_body_size = self.core.config.max_message_size
            out.publishing.validate_message_type = True
            return out
        group = settings.subscription.group.name
        gc = self.core.group_config(group) if group else None
        retry_max = gc.retry_max_times if gc is not None else DEFAULT_MAX_RECONSUME_TIMES
        fifo = gc is not None and gc.consume_message_orderly
        sub = out.subscription
        if settings.client_type in _LITE_CLIENTS:
            # a lite consumer needs its quota and the longest name (0 would refuse every subscribe)
            sub.lite_subscription_quota = LITE_SUBSCRIPTION_QUOTA
            sub.max_lite_topic_size = MAX_LITE_TOPIC_SIZE
        sub.receive_batch_size = _MAX_BATCH
        sub.long_polling_timeout.CopyFrom(duration(DEFAULT_LONG_POLL_MS))
        sub.fifo = fifo
        policy = out.backoff_policy
        policy.Clear()
        policy.max_attempts = retry_max + 1
        # As the proxy (GrpcClientSettingsManager#mergeSubscriptionData): the group's
        # policy as a customized backoff, whichever client asks. Node 1.0.8 reads only an
        # exponential one, so it has none and gives a failure back at once (an invisible
        # time of 0; a FIFO message straight to the DLQ): what it gets from a real proxy.
        if fifo:
            # seed 002: an ordered message is retried at a fixed interval
            policy.customized_backoff.next.append(duration(_FIFO_RETRY_MS))
        else:
            # seed 002's table for non-FIFO groups: next[attempt - 1] is the wait after attempt
            policy.customized_backoff.next.extend(duration(ms) for ms in ROCKETMQ5_UNORDERED_INTERVALS_MS)
        return out

    def heartbeat(self, client_id: str) -> pb.Status:
        if client_id not in self.settings:
            return status(pb.UNRECOGNIZED_CLIENT_TYPE, "no Settings received from this client yet")
        return status(pb.OK, "OK")

    def notify_termination(self, client_id: str) -> pb.Status:
        """NotifyClientTermination, or the client's Telemetry stream ended: forget its
        settings and release its auto-renewed deliveries (visible again after 1 s)."""
        self.settings.pop(client_id, None)
        channel = self._producers.pop(client_id, None)
        if channel is not None:
            self._client_of.pop(channel.id, None)
            self.core.disconnect(channel)
        if client_id:
            self.core.release_client(client_id)
        return status(pb.OK, "OK")

    def _register_producer(self, client_id: str, topics: list[str]) -> None:
        channel = self._producers.get(client_id)
        if channel is None:
            channel = self._producers[client_id] = self.core.connect(remote=f"5.x {client_id}", owner=self)
            self._client_of[channel.id] = client_id
        self.core.register(Registration(client_id, producers=tuple(t for t in topics if t)), channel)

    # -- routes --------------------------------------------------------------------------------
    def query_route(self, topic: str, endpoints: pb.Endpoints):
        """(status, queues): every queue of the topic, broker "broker-a" id 0 at the
        client's own access point (what the proxy does), each accepting the topic's
        message type (an untyped topic: NORMAL, FIFO and DELAY). A topic that does not
        exist is TOPIC_NOT_FOUND, as a proxy answers: no route lookup creates one."""
        tc = self._topic(topic)
        if tc.__class__ is pb.Status:
            return tc, []
        broker = pb.Broker(name=self.core.config.broker_name, id=0, endpoints=endpoints)
        perm = {2: pb.WRITE, 4: pb.READ, 6: pb.READ_WRITE}.get(tc.perm & 6, pb.NONE)
        types = [pb.MessageType.Value(t) for t in accepted_types(tc.message_type)]
        queues = [pb.MessageQueue(topic=pb.Resource(name=topic), id=q, permission=perm, broker=broker,
                                  accept_message_types=types)
                  for q in range(max(tc.read_queue_nums, tc.write_queue_nums))]
        return status(pb.OK, "OK"), queues

    def query_assignment(self, topic: str, group: str, endpoints: pb.Endpoints):
        tc = self._topic(topic)
        if tc.__class__ is pb.Status:
            return tc, []
        if self.core.group_config(group) is None:
            return status(pb.CONSUMER_GROUP_NOT_FOUND, f"group {group} not found"), []
        if not tc.readable:
            return status(pb.FORBIDDEN, "no readable queue"), []
        broker = pb.Broker(name=self.core.config.broker_name, id=0, endpoints=endpoints)
        gc = self.core.group_config(group)
        # an unordered group pops every queue (-1); a FIFO group one assignment per queue
        ids = range(tc.read_queue_nums) if gc.consume_message_orderly else (-1,)
        assignments = [pb.Assignment(message_queue=pb.MessageQueue(topic=pb.Resource(name=topic), id=q,
                                                                   permission=pb.READ_WRITE, broker=broker))
                       for q in ids]
        return status(pb.OK, "OK"), assignments

    def _topic(self, topic: str):
        try:
            validate_topic_name(topic)
        except TopicNameError as exc:
            return status(pb.ILLEGAL_TOPIC, str(exc))
        tc = self.core.topic_config(topic)
        if tc is None and is_pulsar_store_topic(topic):
            return status(pb.TOPIC_NOT_FOUND, f"topic {topic} not found ({NOT_CREATED_BY_ROCKETMQ})")
        if tc is None:
            return status(pb.TOPIC_NOT_FOUND, f"topic {topic} not found: create it first (rocketmq-emulator topic "
                                              f"create {topic}, or mqadmin updateTopic)")
        return tc

    # -- producing -------------------------------------------------------------------------------
    def send(self, messages) -> tuple[pb.Status, list]:
        if len(messages) != 1:
            return status(pb.BAD_REQUEST, "send one message per request"), []
        m = messages[0]
        sp = m.system_properties
        if not m.body:
            return status(pb.MESSAGE_BODY_EMPTY, "message body is empty"), []
        if not sp.message_id.strip():
            return status(pb.ILLEGAL_MESSAGE_ID, "message_id is blank"), []
        if sp.HasField("tag") and (not sp.tag.strip() or "|" in sp.tag):
            return status(pb.ILLEGAL_MESSAGE_TAG, f"tag {sp.tag!r} is blank or contains '|'"), []
        props = dict(m.user_properties)
        reserved = sorted(k for k in props if k in _RESERVED)
        if reserved:
            return status(pb.ILLEGAL_MESSAGE_PROPERTY_KEY, f"property key {reserved[0]!r} is reserved"), []
        if sp.HasField("tag"):
            props[Prop.TAGS] = sp.tag
        if sp.keys:
            props[Prop.KEYS] = " ".join(sp.keys)
        props[Prop.UNIQ_KEY] = sp.message_id
        topic = m.topic.name
        props[Prop.PGROUP] = topic          # the proxy's producer group: the topic (transaction checks find it)
        sys_flag = 0
        if sp.message_type == pb.TRANSACTION:
            props[Prop.TRAN_MSG] = "true"
            sys_flag = SysFlag.TRANSACTION_PREPARED
            if sp.HasField("orphaned_transaction_recovery_duration"):
                props[Prop.CHECK_IMMUNITY_TIME_IN_SECONDS] = str(sp.orphaned_transaction_recovery_duration.seconds)
        queue_id = -1
        if sp.HasField("message_group"):
            if len(sp.message_group.encode()) >= 64:
                return status(pb.ILLEGAL_MESSAGE_GROUP, "message_group must be under 64 bytes"), []
            props[SHARDING_KEY] = sp.message_group
            tc = self.core.topic_config(topic)
            if tc is not None:          # one queue per group, as the proxy's hash does
                queue_id = zlib.crc32(sp.message_group.encode()) % tc.write_queue_nums
        if sp.HasField("priority"):
            why = priority_problem(sp.priority)
            if sp.HasField("lite_topic"):
                why = "a message cannot have both a lite topic and a priority"
            if why is not None:
                # Out of range: BAD_REQUEST. Upstream's proxy code for it was not found (the
                # apache/rocketmq sources at hand predate RIP-80's priority messages, and the
                # 5.1.2 client checks only priority >= 0); BAD_REQUEST is the generic code of
                # a request field the proxy cannot take, so a client raises its
                # BadRequestException as for any other illegal field.
                code = pb.MESSAGE_PROPERTY_CONFLICT_WITH_TYPE if sp.HasField("lite_topic") else pb.BAD_REQUEST
                return status(code, why), []
            props[PRIORITY_PROPERTY] = str(sp.priority)
            queue_id = self.core.priority_queue(topic, sp.priority)
        if sp.born_host:
            props["__BORNHOST"] = sp.born_host
        deliver_at = timestamp_ms(sp.delivery_timestamp) if sp.HasField("delivery_timestamp") else None
        born = timestamp_ms(sp.born_timestamp) if sp.HasField("born_timestamp") else self.core.clock.now_ms()
        # no default topic: a 5.x send never creates its topic (the proxy finds no route for it)
        request = SendRequest(topic, topic, bytes(m.body), queue_id, props, 0, sys_flag, born,
                              max(sp.delivery_attempt - 1, 0), None, "", 4, deliver_at)
        if sp.HasField("lite_topic"):
            result = self.core.send_lite(request, sp.lite_topic, self._channel)
        else:
            result = self.core.send(request, self._channel)
        if result.outcome is not SendOutcome.STORED:
            code = _SEND_CODES.get(result.outcome, pb.INTERNAL_SERVER_ERROR)
            return status(code, result.remark), [spb.SendResultEntry(status=status(code, result.remark),
                                                                    message_id=sp.message_id)]
        # transaction_id: the message id, as the broker answers every send (SendMessageProcessor)
        entry = spb.SendResultEntry(status=status(pb.OK, "OK"), message_id=sp.message_id,
                                   transaction_id=sp.message_id, offset=result.queue_offset)
        return status(pb.OK, "OK"), [entry]

    # -- transactions --------------------------------------------------------------------------
    def end_transaction(self, topic: str, transaction_id: str, resolution: int, source: int) -> pb.Status:
        """EndTransaction: COMMIT or ROLLBACK the half message of ``transaction_id``; any
        other resolution (a checker that does not know yet) leaves it for the next check.
        The producer group is the topic, as the proxy names it."""
        try:
            validate_topic_name(topic)
        except TopicNameError as exc:
            return status(pb.ILLEGAL_TOPIC, str(exc))
        if not transaction_id.strip():
            return status(pb.INVALID_TRANSACTION_ID, "transaction id cannot be empty")
        result = self.core.end_transaction(EndTransaction(topic, transaction_id,
                                                          _RESOLUTIONS.get(resolution, Resolution.UNKNOWN),
                                                          source == pb.SOURCE_SERVER_CHECK))
        code = _END_CODES.get(result.outcome)
        if code is not None:
            return status(code, result.remark)
        return status(pb.OK, "OK")

    def _on_notification(self, note) -> None:
        if note.__class__ is LiteUnsubscribed:
            # the broker ended a lite subscription (its lite topic expired, or another client
            # of an exclusive group took it): told on the
            # client's Telemetry stream, as the broker's notifyUnsubscribeLite
            if self.outgoing is not None and note.client_id in self.settings:
                self.outgoing(note.client_id, spb.TelemetryCommand(
                    notify_unsubscribe_lite_command=spb.NotifyUnsubscribeLiteCommand(lite_topic=note.lite_topic)))
            return
        self._on_check(note)

    def _on_check(self, check: TransactionCheck) -> None:
        """The core asks a producer of this front how a transaction ended: a
        RecoverOrphanedTransactionCommand on its Telemetry stream, with the half message
        as the proxy builds it (GrpcConverter#buildMessage)."""
        if check.channel.owner is not self or self.outgoing is None:
            return
        client_id = self._client_of.get(check.channel.id)
        if client_id is None:
            return
        rec = check.record
        message = to_proto_message(rec, rec.topic, "", rec.reconsume_times + 1, rec.queue_id, check.queue_offset,
                                   None)
        self.outgoing(client_id, spb.TelemetryCommand(recover_orphaned_transaction_command=
                                                      spb.RecoverOrphanedTransactionCommand(
                                                          message=message, transaction_id=check.transaction_id)))

    # -- consuming -----------------------------------------------------------------------------
    def receive(self, req, client_id: str = "") -> tuple[pb.Status | None, list]:
        """(status, messages) of one pop; (None, []) when nothing is visible yet (the
        adapter waits and asks again until its long-poll time is up). With auto_renew
        (a PushConsumer) the deliveries are renewed for ``client_id`` while it is there."""
        topic = req.message_queue.topic.name
        group = req.group.name
        fe = req.filter_expression
        tags = None
        sql = fe.expression if fe.type == pb.SQL else None     # (the core compiles it: ILLEGAL_FILTER_EXPRESSION)
        expr = fe.expression.strip()
        if sql is None and expr and expr != "*":
            tags = frozenset(t.strip() for t in expr.split("||") if t.strip())
            if not tags:
                return status(pb.ILLEGAL_FILTER_EXPRESSION, f"bad tag expression {fe.expression!r}"), []
        batch = req.batch_size if 0 < req.batch_size <= _MAX_BATCH else _MAX_BATCH
        if req.auto_renew or not req.HasField("invisible_duration"):
            invisible = _AUTO_RENEW_INVISIBLE_MS
        else:
            invisible = duration_ms(req.invisible_duration)
            if not _MIN_INVISIBLE_MS <= invisible <= MAX_INVISIBLE_MS:
                return status(pb.ILLEGAL_INVISIBLE_TIME, f"invisible duration must be {_MIN_INVISIBLE_MS} ms.."
                                                         f"{MAX_INVISIBLE_MS} ms, got {invisible} ms"), []
        gc = self.core.group_config(group) if group else None
        fifo = gc is not None and gc.consume_message_orderly
        # the proxy pops every queue of the broker whatever queue a client names (a FIFO
        # group's per-queue assignment too: ConsumerProcessor pops queue -1)
        renew_for = client_id if req.auto_renew else ""
        pop = PopRequest(group, topic, batch, invisible, tags, fifo, -1, renew_for, client_id, sql)
        client = self.settings.get(client_id)
        if client is not None and client.client_type in _LITE_CLIENTS:
            result = self.core.pop_lite(pop, client_id)
        else:
            result = self.core.pop(pop)
        if result.outcome is PopOutcome.NO_NEW_MESSAGE:
            return None, []
        if result.outcome is not PopOutcome.FOUND:
            return status(_POP_CODES.get(result.outcome, pb.INTERNAL_SERVER_ERROR), result.remark), []
        # (a lite topic's message is shown under the topic asked for, its lite topic beside)
        msgs = [to_proto_message(p.record, topic if p.topic != topic and _is_lite(p.topic) else p.topic,
                                 p.receipt_handle, p.delivery_attempt, p.queue_id, p.queue_offset, invisible)
                for p in result.messages]
        return status(pb.OK, "OK"), msgs

    def ack(self, group: str, topic: str, entries) -> tuple[pb.Status, list]:
        out = []
        for e in entries:
            outcome = self.core.ack(group, store_topic(topic, e.lite_topic) if e.lite_topic else topic,
                                    e.receipt_handle)
            code = pb.OK if outcome is AckOutcome.ACKED else pb.INVALID_RECEIPT_HANDLE
            why = "OK" if code == pb.OK else ("receipt handle is expired" if outcome is AckOutcome.EXPIRED
                                              else "receipt handle is not valid")
            out.append(spb.AckMessageResultEntry(message_id=e.message_id, receipt_handle=e.receipt_handle,
                                                status=status(code, why)))
        codes = {r.status.code for r in out}
        top = status(codes.pop(), None) if len(codes) == 1 else status(pb.MULTIPLE_RESULTS)
        if not out:
            top = status(pb.BAD_REQUEST, "no entries to ack")
        return top, out

    def change_invisible(self, group: str, topic: str, handle: str, invisible: pb.Duration, lite_topic: str = ""):
        ms = duration_ms(invisible)
        result = self.core.change_invisible_time(group, store_topic(topic, lite_topic) if lite_topic else topic,
                                                 handle, ms)
        if result.outcome is InvisibleOutcome.CHANGED:
            return status(pb.OK, "OK"), result.receipt_handle
        code = pb.ILLEGAL_INVISIBLE_TIME if result.outcome is InvisibleOutcome.ILLEGAL_INVISIBLE_TIME \
            else pb.INVALID_RECEIPT_HANDLE
        return status(code, result.remark), ""

    def forward_to_dlq(self, group: str, topic: str, handle: str, lite_topic: str = "") -> pb.Status:
        outcome = self.core.forward_to_dlq(group, store_topic(topic, lite_topic) if lite_topic else topic, handle)
        if outcome is AckOutcome.ACKED:
            return status(pb.OK, "OK")
        if outcome is AckOutcome.STORE_REFUSED:
            return status(pb.INTERNAL_SERVER_ERROR, "the store refused the dead-letter copy")
        return status(pb.INVALID_RECEIPT_HANDLE, "receipt handle is not valid or expired")

    # -- lite topics ---------------------------------------------------------------------------
    def sync_lite_subscription(self, client_id: str, req) -> pb.Status:
        """SyncLiteSubscription: a lite consumer adds, removes or restates the lite topics
        of its bound topic it wants."""
        outcome, why = self.core.sync_lite_subscription(client_id, req.group.name, req.topic.name, req.action,
                                                        list(req.lite_topic_set))
        if outcome == LiteSyncOutcome.OK:
            return status(pb.OK, "OK")
        return status(_LITE_SYNC_CODES.get(outcome, pb.INTERNAL_SERVER_ERROR), why)


def _is_lite(stored: str) -> bool:
    return stored.startswith(LITE_PREFIX)


# Property names a 5.x client may not set (the proxy's reserved set, in part): the
# broker's own bookkeeping would be confused by them. (__SHARDINGKEY is not one: the
# proxy takes it as a user property, and a message group overrides it.)
_RESERVED = frozenset({Prop.UNIQ_KEY, Prop.TAGS, Prop.KEYS, Prop.DELAY, Prop.REAL_TOPIC, Prop.REAL_QID,
                       Prop.RETRY_TOPIC, Prop.ORIGIN_MESSAGE_ID, Prop.RECONSUME_TIME, Prop.MAX_RECONSUME_TIMES,
                       Prop.TRAN_MSG, Prop.WAIT, Prop.TIMER_DELIVER_MS, Prop.TIMER_DELAY_MS, Prop.TIMER_DELAY_SEC,
                       Prop.PGROUP})
