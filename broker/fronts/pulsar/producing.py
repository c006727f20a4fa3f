"""Pulsar producers on the front (reference pulsar-protocol.md §4; issue 41, items 3–5):
PRODUCER with its access mode (the core's pulsar_producers.py decides), PRODUCER_SUCCESS
with the producer name's last sequence id, SEND into the store with deduplication and
chunked messages, CLOSE_PRODUCER, and what a closed producer lets through (a waiting
exclusive producer's second PRODUCER_SUCCESS).

A SEND is one record (entries.py). Its record properties: the user's, the metadata
(PULSAR_METADATA), the producer name and, on a message's last record, its highest
sequence id (the core reads them back after a restart), KEYS and PULSAR_KEY from the
partition or ordering key, PULSAR_DELIVER_AT for delayed delivery; a chunk also gets
PULSAR_CHUNK "<i>/<n>", and the last chunk the offsets of the others
(PULSAR_CHUNK_OFFSETS), so the message is redelivered and counted as one. Chunks are
stored up to the Pulsar front's largest message (pulsarMaxMessageSize, 5 MiB: Pulsar's
maxMessageSize, announced in CONNECTED), whatever the 4.x limit.

This is the hot path of producing: a SEND costs a handful of attribute reads and dict
writes here, one core send, and one receipt.
"""
from __future__ import annotations

import binascii
import re
import struct

from rocketmq_emulator.store.accounting import PULSAR_CHUNK_PROPERTY, PULSAR_DLQ_SUFFIX, pulsar_letter_group
from rocketmq_emulator.store.records import Prop

from ...java_fields import as_uint64
from ...operations import SendOutcome, SendRequest
from ...pulsar_model.cursors import CHUNK_OFFSETS_PROPERTY, DELIVER_AT_PROPERTY, KEY_PROPERTY
from ...pulsar_model.names import PulsarNameError, parse_topic, store_group, store_topic
from ...pulsar_model.producers import PRODUCER_PROPERTY, SEQUENCE_PROPERTY, AccessMode
from ...retry_lifecycle import pulsar_dead_letter
from . import non_persistent
from . import schema as s
from .entries import METADATA_PROPERTY, ledger_id
from .frames import signed_id
from .fault_answers import fault_answer, fence
from .replies import error, frame, send_error, sent_message, success

__all__ = ["Producer", "producer", "close_producer", "send", "release", "close_frame"]

# A message id as the clients write it in ORIGIN_MESSAGE_ID: C++ "(ledger,entry,partition,batch)",
# Java and Go "ledger:entry:partition[:batch]"
_MESSAGE_ID_TEXT = re.compile(r"^\(?(-?\d+)[,:](-?\d+)[,:]")
_NO_ID = as_uint64(-1)                      # a duplicate's receipt carries (-1, -1)
_LONG_MIN_AS_UINT64 = 1 << 63
_ACCESS_ERRORS = {"busy": s.ServerError.ProducerBusy, "fenced": s.ServerError.ProducerFenced}
_SIZES = struct.Struct(">II")                # a simple command's totalSize and commandSize


class Producer:
    """A producer of a connection; its topic's state in the core (``state``: sequence ids
    and the deduplication flag) is read on every SEND."""

    __slots__ = ("conn", "producer_id", "request_id", "topic", "stored", "name", "ledger", "state", "ready",
                 "chunks", "unanswered")

    def __init__(self, conn, producer_id: int, request_id: int, topic: str, stored: str, name: str, state) -> None:
        self.conn, self.producer_id, self.request_id = conn, producer_id, request_id
        self.topic, self.stored, self.name, self.state = topic, stored, name, state
        self.ledger = ledger_id(stored)
        self.ready = False
        self.chunks: dict[str, list[int]] = {}          # a chunked message's uuid -> its chunks' offsets so far
        self.unanswered: set[int] = set()               # sequence ids a fault rule left unanswered (dropped, delayed)


def _success(request_id: int, name: str, last_sequence_id: int, epoch: int | None = None,
             ready: bool = True) -> bytes:
    reply = s.BaseCommand(type=s.Type.PRODUCER_SUCCESS)
    r = reply.producer_success
    r.request_id, r.producer_name, r.last_sequence_id = request_id, name, last_sequence_id
    if epoch is not None:
        r.topic_epoch = as_uint64(epoch)
    if not ready:
        r.producer_ready = False
    return frame(reply)


def close_frame(p: Producer) -> bytes:
    cmd = s.BaseCommand(type=s.Type.CLOSE_PRODUCER)
    cmd.close_producer.producer_id, cmd.close_producer.request_id = p.producer_id, 0
    return frame(cmd)


def producer(front, conn, cmd, frame_) -> list[bytes]:
    req = cmd.producer
    if req.topic.startswith(non_persistent.NON_PERSISTENT):
        return non_persistent.producer(front, conn, req)
    try:
        topic = parse_topic(req.topic)
        stored = store_topic(topic)
    except PulsarNameError as exc:
        return [error(req.request_id, s.ServerError.InvalidTopicName, str(exc))]
    known = conn.producers.get(req.producer_id)
    if known is not None:                   # the same PRODUCER again (Pulsar answers it again)
        if not known.ready:
            return [error(req.request_id, s.ServerError.ServiceNotReady, "Producer is already present on the "
                                                                         "connection")]
        return [_success(req.request_id, known.name, known.state.sequences.get(known.name, -1))]
    core = front.core
    if front.fenced:                        # (a fault rule refused this producer's SENDs: fault_answers.py)
        fenced = fence(front, stored, req.producer_name)
        if fenced is not None:
            return [error(req.request_id, *fenced)]
    refusal = core.write_refusal()
    if refusal is not None:
        # As the Pulsar broker fences a topic whose ledger refused a write: producers are
        # refused (ServiceNotReady) until it takes writes again. The client retries the
        # producer with backoff and keeps its messages pending, so its send timeout fires
        # (a SEND_ERROR alone makes it reconnect and resend for ever).
        return [error(req.request_id, s.ServerError.ServiceNotReady, f"Topic is temporarily unavailable: {refusal}")]
    core.ensure_pulsar_topic(stored)
    if req.initial_subscription_name:
        # the client's dead-letter producer: the subscription exists from now on, so
        # what it publishes is kept for it (reference §6.3)
        try:
            core.pulsar_create_subscription(store_group(req.initial_subscription_name), stored)
        except PulsarNameError as exc:
            return [error(req.request_id, s.ServerError.InvalidTopicName, str(exc))]
    name = req.producer_name or front.new_producer_name()
    try:
        mode = AccessMode(req.producer_access_mode)
    except ValueError:
        return [error(req.request_id, s.ServerError.NotAllowedError, f"unknown access mode {req.producer_access_mode}")]
    p = Producer(conn, req.producer_id, req.request_id, topic.full, stored, name, core.pulsar_producer_topic(stored))
    # (uint64s read as Pulsar's broker reads them, longs: 2^64-1 is -1, and the next epoch 0)
    admission = core.attach_pulsar_producer(stored, p, name, mode, signed_id(req.topic_epoch) if req.HasField("topic_epoch")
                                else None)
    for other in admission.fenced:          # ExclusiveWithFencing took the topic: they are closed
        other.conn.producers.pop(other.producer_id, None)
        if other.conn is not conn:
            other.conn.outgoing.append(close_frame(other))
    fenced_here = [close_frame(o) for o in admission.fenced if o.conn is conn]
    if admission.error is not None:
        return fenced_here + [error(req.request_id, _ACCESS_ERRORS[admission.error], admission.message)]
    conn.producers[req.producer_id] = p
    if admission.waiting:                   # WaitForExclusive: told now that it waits, later that it is ready
        return fenced_here + [_success(req.request_id, name, admission.last_sequence_id, ready=False)]
    p.ready = True
    return fenced_here + [_success(req.request_id, name, admission.last_sequence_id, admission.epoch)]


def close_producer(front, conn, cmd, frame_) -> list[bytes]:
    p = conn.producers.pop(cmd.close_producer.producer_id, None)
    if p is not None:
        release(front, p)
    elif conn.transient_producers:
        non_persistent.close_producer(front, conn, cmd.close_producer.producer_id)
    return [success(cmd.close_producer.request_id)]


def release(front, p: Producer) -> None:
    """``p`` is gone (closed, or its connection): a producer waiting for the topic may
    take it now, and is told (its second PRODUCER_SUCCESS)."""
    for waiting, admission in front.core.detach_pulsar_producer(p):
        waiting.ready = True
        if not waiting.conn.closed:
            waiting.conn.outgoing.append(_success(waiting.request_id, waiting.name, admission.last_sequence_id,
                                                  admission.epoch))


def _receipt(req, ledger: int, entry: int) -> bytes:
    reply = s.BaseCommand(type=s.Type.SEND_RECEIPT)
    r = reply.send_receipt
    r.producer_id, r.sequence_id = req.producer_id, req.sequence_id
    r.message_id.ledgerId, r.message_id.entryId = ledger, entry
    if req.highest_sequence_id:
        r.highest_sequence_id = req.highest_sequence_id
    command = reply.SerializeToString()
    n = len(command)
    return _SIZES.pack(n + 4, n) + command            # (frames.encode_simple, inlined: one per SEND)


def send(front, conn, cmd, frame_) -> list[bytes]:
    req = cmd.send
    try:
        p = conn.producers[req.producer_id]
    except KeyError:
        if req.producer_id in conn.transient_producers:
            return non_persistent.send(front, conn, cmd, frame_)
        p = None
    if p is None or not p.ready:
        return [send_error(req, s.ServerError.UnknownError, f"producer {req.producer_id} is not open on this "
                                                            f"connection")]
    if front.core.faults_active:
        answer = fault_answer(front, s.Type.SEND, conn, cmd, p, lambda: _store(front, conn, req, p, frame_))
        if answer is not None:
            return answer
    return _store(front, conn, req, p, frame_)


def _store(front, conn, req, p, frame_) -> list[bytes]:
    """Store one SEND's message (or chunk): its receipt, or the SEND_ERROR saying why not."""
    raw_meta, payload, meta, refused = sent_message(req, frame_)
    if refused is not None:
        return [refused]
    state = p.state
    seq = signed_id(req.sequence_id)        # (longs, as Pulsar's broker compares them; the receipt echoes the uint64s)
    highest = signed_id(req.highest_sequence_id)
    if highest < seq or (seq < 0 and not req.HasField("highest_sequence_id")):
        highest = seq                       # (Pulsar takes a highest id only when given and not below)
    if state.dedup:
        last = state.sequences.get(p.name)
        if last is not None and seq <= last:
            # a resend of what is stored (every chunk of it, as its last chunk was):
            # acknowledged with the id (-1, -1) and not stored again, as Pulsar's dedup does
            return [_receipt(req, _NO_ID, _NO_ID)]
    props = {}
    for kv in meta.properties:              # (a loop: a dict comprehension is a call of its own)
        props[kv.key] = kv.value
    props[METADATA_PROPERTY] = binascii.b2a_base64(raw_meta, newline=False).decode()
    props[PRODUCER_PROPERTY] = p.name
    last_chunk = True
    if req.is_chunk:
        chunk_id, chunks = meta.chunk_id, meta.num_chunks_from_msg
        props[PULSAR_CHUNK_PROPERTY] = f"{chunk_id}/{chunks}"
        last_chunk = chunk_id >= chunks - 1
        earlier = p.chunks.pop(meta.uuid, []) if chunk_id else []
        if last_chunk and earlier:
            props[CHUNK_OFFSETS_PROPERTY] = ",".join(map(str, earlier))
    if last_chunk:
        props[SEQUENCE_PROPERTY] = str(highest)
    key = meta.partition_key
    if key:
        props["KEYS"] = key
    if meta.ordering_key:                   # Key_Shared routes by it
        props[KEY_PROPERTY] = binascii.b2a_base64(meta.ordering_key, newline=False).decode()
    elif key:
        props[KEY_PROPERTY] = key
    core = front.core
    born = meta.publish_time
    if born >= _LONG_MIN_AS_UINT64:         # (a uint64 the Java broker reads as a negative long: none)
        born = 0
    if meta.deliver_at_time:
        # the delay the client asked for (deliver_at - its publish time) from the broker's
        # now: deliver_after works the same on a virtual clock and across clock skew
        now = core.clock.now_ms()
        delay = meta.deliver_at_time - (born or now)
        props[DELIVER_AT_PROPERTY] = str(now + max(delay, 0))
    reconsume_times = 0
    if Prop.REAL_TOPIC in props and Prop.ORIGIN_MESSAGE_ID in props:
        reconsume_times = _as_store_copy(front, conn, props, p.stored)
    result = core.send(SendRequest("", p.stored, payload, 0, props,
                                   born_timestamp=born or core.clock.now_ms(),
                                   reconsume_times=reconsume_times),
                       front.channel)
    if result.outcome is not SendOutcome.STORED:
        return [send_error(req, s.ServerError.PersistenceError, result.remark or result.outcome.value)]
    offset = result.queue_offset
    if not last_chunk:
        earlier.append(offset)
        p.chunks[meta.uuid] = earlier
    else:
        state.sequences[p.name] = highest
    if state.compacting:
        core.pulsar_stored_bytes(p.stored, len(payload) + len(raw_meta))
    return [_receipt(req, p.ledger, offset)]


def _as_store_copy(front, conn, props: dict, stored: str) -> int:
    """A copy a Pulsar client made of a message (a dead letter, a retry letter: with
    REAL_TOPIC and ORIGIN_MESSAGE_ID): the record's own REAL_TOPIC and ORIGIN_MESSAGE_ID
    are written in the store's terms — the original's store topic and offsetMsgId, as
    a 4.x send-back's are — so the store's accounting finds its original; Pulsar
    consumers still get the client's values, from the metadata. Returns the copy's
    reconsumeTimes: RECONSUMETIMES when the client set it, else for a dead letter the
    redelivery count its subscription reached + 1 (the subscription: the one consumer
    of the original's topic on this connection, else the one the DLQ's name holds). A
    copy of a message this broker does not hold is stored as sent."""
    core = front.core
    try:
        real = store_topic(props[Prop.REAL_TOPIC])
    except PulsarNameError:
        return 0
    m = _MESSAGE_ID_TEXT.match(props[Prop.ORIGIN_MESSAGE_ID])
    if m is None or int(m.group(1)) != ledger_id(real):
        return 0
    offset = int(m.group(2))
    entry = core.queue_entry(real, 0, offset)
    original = core.record_at(entry[0]) if entry else None
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
    return pulsar_dead_letter(real, group, core.pulsar_redelivery_count(group, real, offset)).attempt
