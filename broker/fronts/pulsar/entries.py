"""How a Pulsar entry is kept in the store, read back (reference pulsar-protocol.md §1).

One record per entry in the store topic's one queue: the body is the payload as sent (a
batch stays one record, as Pulsar keeps it one entry; compressed or not, as the metadata
says); the serialized MessageMetadata rides in the PULSAR_METADATA property (base64), the
user properties beside it as the record's own, so a 4.x consumer of the same store topic
sees the body and the properties. The message id is (ledgerId, entryId) = (a stable
number per topic, the queue offset): unique per topic and growing in publish order, as
the client needs.
"""
from __future__ import annotations

import base64
import struct

from rocketmq_emulator.store.records import Prop, decode_offset_msg_id, decode_record

from ...pulsar_model.names import ledger_id, message_id_text, pulsar_topic, shown_topic
from ...user_properties import user_properties
from . import schema as s

__all__ = ["METADATA_PROPERTY", "ledger_id", "metadata_of", "pulsar_properties", "is_batch", "permits_of",
           "keys_of", "batch_items"]

METADATA_PROPERTY = "PULSAR_METADATA"         # the entry's MessageMetadata, base64
_ROCKETMQ_CLIENT_FIELDS = (Prop.UNIQ_KEY, Prop.KEYS, Prop.TAGS)
_U32 = struct.Struct(">I")


def metadata_of(rec, core) -> bytes:
    """The stored entry's MessageMetadata; for a record a non-Pulsar client (or a re-drive)
    stored, one made from it: its born time, a producer name, its properties as a Pulsar
    broker would send them (``pulsar_properties``)."""
    raw = rec.properties.get(METADATA_PROPERTY)
    if raw:
        return base64.b64decode(raw)
    meta = s.MessageMetadata(producer_name="rocketmq", sequence_id=max(rec.queue_offset, 0),
                             publish_time=rec.store_timestamp or rec.born_timestamp)
    for k, v in pulsar_properties(rec, core).items():
        meta.properties.add(key=k, value=v)
    return meta.SerializeToString()


def pulsar_properties(rec, core) -> dict[str, str]:
    """What a Pulsar consumer reads of a record no Pulsar client stored: its user's
    properties (user_properties.py: none of the store's, the proxy's or this front's own)
    and Pulsar's retry and dead-letter properties in Pulsar's form — REAL_TOPIC by the
    topic's Pulsar name, ORIGIN_MESSAGE_ID as the message id (ledger:entry) of the Pulsar
    entry it names (as stored when it names none here)."""
    props = rec.properties
    out = user_properties(props)
    # a RocketMQ client's own fields of a message it sent (its message id, keys and tag)
    # have no place of their own in Pulsar's metadata: a Pulsar consumer of that message
    # reads them as properties, as it did before any filter (a Pulsar entry has none)
    for k in _ROCKETMQ_CLIENT_FIELDS:
        if k in props:
            out[k] = props[k]
    if props.get(Prop.REAL_TOPIC):
        out[Prop.REAL_TOPIC] = shown_topic(props[Prop.REAL_TOPIC])
    if props.get(Prop.ORIGIN_MESSAGE_ID):
        out[Prop.ORIGIN_MESSAGE_ID] = _as_pulsar_id(core, props[Prop.ORIGIN_MESSAGE_ID])
    return out


def _as_pulsar_id(core, offset_msg_id: str) -> str:
    """The Pulsar message id of the entry an offsetMsgId of this broker names."""
    try:
        host, phys = decode_offset_msg_id(offset_msg_id.upper())
    except ValueError:
        return offset_msg_id
    raw = core.message_at(phys) if tuple(host) == tuple(core.store_host) else None
    rec = decode_record(raw, check_crc=False) if raw is not None else None
    if rec is None or pulsar_topic(rec.topic) is None:
        return offset_msg_id
    return message_id_text(rec.topic, rec.queue_offset)


def _meta(rec):
    raw = rec.properties.get(METADATA_PROPERTY)
    return s.MessageMetadata.FromString(base64.b64decode(raw)) if raw else None


def is_batch(rec) -> bool:
    meta = _meta(rec)
    return meta is not None and meta.HasField("num_messages_in_batch")


def permits_of(rec) -> int:
    """Permits an entry takes: its number of messages (a batch's count)."""
    meta = _meta(rec)
    return meta.num_messages_in_batch if meta is not None and meta.HasField("num_messages_in_batch") else 1


def batch_items(payload: bytes, n: int) -> list[tuple[object, bytes]]:
    """The (SingleMessageMetadata, payload) of each message of an uncompressed batch."""
    out, pos = [], 0
    for _ in range(n):
        size = _U32.unpack_from(payload, pos)[0]
        smm = s.SingleMessageMetadata.FromString(payload[pos + 4:pos + 4 + size])
        pos += 4 + size
        out.append((smm, payload[pos:pos + smm.payload_size]))
        pos += smm.payload_size
    return out


def keys_of(rec) -> list[tuple[str | None, bool]] | None:
    """What compaction reads of an entry (broker/pulsar_model/compaction.py): per message, its
    partition key (None: none) and whether it removes that key (an empty payload, or
    null_value); None for a compressed batch, which it keeps whole."""
    meta = _meta(rec)
    if meta is None:
        return [(rec.properties.get("KEYS") or None, not rec.body)]
    if not meta.HasField("num_messages_in_batch"):
        size = meta.uncompressed_size if meta.HasField("uncompressed_size") else len(rec.body)
        return [(meta.partition_key if meta.HasField("partition_key") else None, meta.null_value or size == 0)]
    if meta.compression != s.CompressionType.NONE:
        return None
    return [(smm.partition_key if smm.HasField("partition_key") else None, smm.null_value or smm.payload_size == 0)
            for smm, _ in batch_items(rec.body, meta.num_messages_in_batch)]
