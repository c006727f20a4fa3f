"""Non-persistent topics on the Pulsar front (issue 51, item 4): the commands of
producers and consumers of ``non-persistent://`` topics, answered as Pulsar's broker
answers them (the model: broker/pulsar_model/non_persistent.py, reached through the
core's ``*_non_persistent`` methods).

A SEND is given at once to the consumers the core names (one per subscription that has
permits and room on its connection) and to no one else: it is never stored. Its receipt
is Pulsar's ``(0, 0)``, and so is the id of every MESSAGE (NonPersistentTopic makes each
entry (0, 0); the client adds the partition). The client sends no ACK on such a topic;
ACK, REDELIVER_UNACKNOWLEDGED_MESSAGES and SEEK are taken and do nothing, as
NonPersistentSubscription does; GET_LAST_MESSAGE_ID and a readCompacted subscription are
refused with Pulsar's words. A delivery time is not waited for (Pulsar's non-persistent
dispatchers deliver at once), and nothing is redelivered, so a dead-letter policy never
fires. Producer and consumer ids share their connection's counters with the persistent
ones, so each connection keeps its own non-persistent ones apart (``Connection.transient_*``)
and ``routed`` sends each consumer command to the side its consumer is on.
"""
from __future__ import annotations

from ...pulsar_model.cursors import SubscribeOutcome, SubType
from ...pulsar_model.names import PulsarNameError, checked_topic, store_group
from ...pulsar_model.non_persistent import NON_PERSISTENT, UNSUPPORTED_LAST_MESSAGE_ID
from . import schema as s
from .frames import encode_payload
from .replies import error, frame, send_error, sent_message, success

__all__ = ["NON_PERSISTENT", "Producer", "producer", "send", "subscribe", "routed", "disconnect", "closing_frames"]

_OUTCOMES = {
    SubscribeOutcome.CONSUMER_BUSY: "Exclusive consumer is already connected",
    SubscribeOutcome.TYPE_MISMATCH: "Subscription is of different type",
}


class Producer:
    __slots__ = ("producer_id", "topic", "name")

    def __init__(self, producer_id: int, topic: str, name: str) -> None:
        self.producer_id, self.topic, self.name = producer_id, topic, name


def producer(front, conn, req) -> list[bytes]:
    """PRODUCER on a non-persistent topic: no sequence ids are kept (Pulsar does no
    deduplication there), so its last one is -1."""
    try:
        topic = checked_topic(req.topic)
    except PulsarNameError as exc:
        return [error(req.request_id, s.ServerError.InvalidTopicName, str(exc))]
    known = conn.transient_producers.get(req.producer_id)
    if known is None:
        name = req.producer_name or front.new_producer_name()
        if not front.core.attach_non_persistent_producer(topic, name):
            return [error(req.request_id, s.ServerError.ProducerBusy,
                          f"Producer with name '{name}' is already connected to topic")]
        known = conn.transient_producers[req.producer_id] = Producer(req.producer_id, topic.full, name)
    reply = s.BaseCommand(type=s.Type.PRODUCER_SUCCESS)
    r = reply.producer_success
    r.request_id, r.producer_name, r.last_sequence_id = req.request_id, known.name, -1
    return [frame(reply)]


def close_producer(front, conn, producer_id: int) -> None:
    p = conn.transient_producers.pop(producer_id, None)
    if p is not None:
        front.core.detach_non_persistent_producer(p.topic, p.name)


def send(front, conn, cmd, frame_) -> list[bytes]:
    """SEND: the receipt (0, 0), and a MESSAGE for each consumer the core names."""
    req = cmd.send
    p = conn.transient_producers.get(req.producer_id)
    if p is None:
        return [send_error(req, s.ServerError.UnknownError, f"producer {req.producer_id} is not open on this "
                                                            f"connection")]
    raw_meta, payload, meta, refused = sent_message(req, frame_)
    if refused is not None:
        return [refused]
    messages = meta.num_messages_in_batch if meta.HasField("num_messages_in_batch") else 1
    sticky = meta.ordering_key or meta.partition_key.encode()
    receipt = s.BaseCommand(type=s.Type.SEND_RECEIPT)
    r = receipt.send_receipt
    r.producer_id, r.sequence_id = req.producer_id, req.sequence_id
    r.message_id.ledgerId, r.message_id.entryId = 0, 0
    if req.highest_sequence_id:
        r.highest_sequence_id = req.highest_sequence_id
    size = len(raw_meta) + len(payload)
    for consumer in front.core.publish_non_persistent(p.topic, messages, size, sticky, front.has_room):
        message = s.BaseCommand(type=s.Type.MESSAGE)
        m = message.message
        m.consumer_id = consumer.consumer_id
        m.message_id.ledgerId, m.message_id.entryId = 0, 0
        if consumer.partition >= 0:
            m.message_id.partition = consumer.partition
        consumer.conn.outgoing.append(encode_payload(message.SerializeToString(), raw_meta, payload,
                                                     checksum=consumer.conn.checksums))
        consumer.conn.holds(consumer.conn.unsent + size + 256)      # (as a persistent dispatch counts it)
    return [frame(receipt)]


def subscribe(front, conn, req, consumer) -> list[bytes]:
    """SUBSCRIBE on a non-persistent topic (``consumer``: the front's key for it)."""
    if req.read_compacted:
        return [error(req.request_id, s.ServerError.NotAllowedError, "readCompacted only valid on persistent topics")]
    try:
        topic = checked_topic(req.topic)
        store_group(req.subscription)           # (held to the names a persistent subscription takes)
    except PulsarNameError as exc:
        return [error(req.request_id, s.ServerError.InvalidTopicName, str(exc))]
    if req.consumer_id in conn.transient_consumers:          # (the same SUBSCRIBE again: its consumer is there)
        return [success(req.request_id)]
    outcome = front.core.subscribe_non_persistent(topic, req.subscription, consumer, SubType(req.subType),
                                                  durable=req.durable, priority=req.priority_level,
                                                  name=req.consumer_name)
    if outcome is not SubscribeOutcome.OK:
        return [error(req.request_id, s.ServerError.ConsumerBusy, _OUTCOMES.get(outcome, outcome.value))]
    conn.transient_consumers[req.consumer_id] = consumer
    return [success(req.request_id)]


# -- the consumer commands, for a consumer of a non-persistent topic ------------------------------
def _flow(front, conn, consumer, cmd) -> list[bytes]:
    front.core.flow_non_persistent(consumer, cmd.flow.messagePermits)
    return []


def _ack(front, conn, consumer, cmd) -> list[bytes]:
    req = cmd.ack                               # (nothing to ack: taken, as Pulsar takes it)
    if not req.HasField("request_id"):
        return []
    reply = s.BaseCommand(type=s.Type.ACK_RESPONSE)
    reply.ackResponse.consumer_id, reply.ackResponse.request_id = req.consumer_id, req.request_id
    return [frame(reply)]


def _ignored(front, conn, consumer, cmd) -> list[bytes]:
    return []                                   # REDELIVER: nothing is kept to deliver again


def _seek(front, conn, consumer, cmd) -> list[bytes]:
    return [success(cmd.seek.request_id)]       # Pulsar resets no cursor here, and says it did


def _close_consumer(front, conn, consumer, cmd) -> list[bytes]:
    del conn.transient_consumers[consumer.consumer_id]
    front.core.leave_non_persistent(consumer)
    return [success(cmd.close_consumer.request_id)]


def _unsubscribe(front, conn, consumer, cmd) -> list[bytes]:
    req = cmd.unsubscribe
    if front.core.unsubscribe_non_persistent(consumer) is not SubscribeOutcome.OK:
        return [error(req.request_id, s.ServerError.MetadataError,
                      "Unconnected or shared consumer attempting to unsubscribe")]
    del conn.transient_consumers[consumer.consumer_id]
    return [success(req.request_id)]


def _last_message_id(front, conn, consumer, cmd) -> list[bytes]:
    return [error(cmd.getLastMessageId.request_id, s.ServerError.NotAllowedError, UNSUPPORTED_LAST_MESSAGE_ID)]


def _consumer_stats(front, conn, consumer, cmd) -> list[bytes]:
    req = cmd.consumerStats
    reply = s.BaseCommand(type=s.Type.CONSUMER_STATS_RESPONSE)
    r = reply.consumerStatsResponse
    r.request_id = req.request_id
    stats = front.core.non_persistent_consumer_stats(consumer)
    r.type, r.availablePermits, r.unackedMessages, r.msgBacklog = (
        stats["type"], max(stats["permits"], 0), 0, 0)
    r.address = conn.peer
    return [frame(reply)]


# the consumer commands: their field in BaseCommand, and what a non-persistent consumer gets
_CONSUMER_COMMANDS = {
    s.Type.FLOW: ("flow", _flow), s.Type.ACK: ("ack", _ack),
    s.Type.REDELIVER_UNACKNOWLEDGED_MESSAGES: ("redeliverUnacknowledgedMessages", _ignored),
    s.Type.SEEK: ("seek", _seek), s.Type.CLOSE_CONSUMER: ("close_consumer", _close_consumer),
    s.Type.UNSUBSCRIBE: ("unsubscribe", _unsubscribe), s.Type.GET_LAST_MESSAGE_ID: ("getLastMessageId", _last_message_id),
    s.Type.CONSUMER_STATS: ("consumerStats", _consumer_stats),
}


def routed(kind: int, persistent):
    """The handler of a consumer command: ``persistent`` unless the consumer it names is
    one of a non-persistent topic (a connection without any pays one truth test)."""
    field, transient = _CONSUMER_COMMANDS[kind]

    def handle(front, conn, cmd, frame_):
        if conn.transient_consumers:
            consumer = conn.transient_consumers.get(getattr(cmd, field).consumer_id)
            if consumer is not None:
                return transient(front, conn, consumer, cmd)
        return persistent(front, conn, cmd, frame_)
    return handle


def disconnect(front, conn) -> None:
    """The connection is gone: its non-persistent consumers and producers leave."""
    for consumer in conn.transient_consumers.values():
        front.core.leave_non_persistent(consumer)
    conn.transient_consumers.clear()
    for producer_id in list(conn.transient_producers):
        close_producer(front, conn, producer_id)


def close_producers_of(front, conn, topics: set[str], close_producer_frame) -> None:
    """Topics an admin deleted: their producers on ``conn`` are closed (CLOSE_PRODUCER)."""
    for producer_id, p in list(conn.transient_producers.items()):
        if p.topic in topics:
            close_producer(front, conn, producer_id)
            conn.outgoing.append(close_producer_frame(p))
            if front.on_dirty is not None:          # (the listener flushes at its next pump)
                front.on_dirty()


def closing_frames(conn, close_producer_frame, close_consumer_frame) -> list[bytes]:
    """CLOSE_PRODUCER and CLOSE_CONSUMER for the non-persistent ones of ``conn`` (the broker stops)."""
    return ([close_producer_frame(p) for p in conn.transient_producers.values()]
            + [close_consumer_frame(consumer_id) for consumer_id in conn.transient_consumers])
