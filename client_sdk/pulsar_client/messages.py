"""Messages and message ids as a Pulsar consumer sees them (the Python client's method
names), built from a MESSAGE frame: its metadata and payload, split when it is a batch."""
from __future__ import annotations

from dataclasses import dataclass

import rocketmq_emulator.broker.fronts.pulsar.schema as s
from rocketmq_emulator.broker.fronts.pulsar.frames import mask_of_ack_set, signed_id

__all__ = ["MessageId", "Message", "messages_of"]


@dataclass(frozen=True, slots=True)
class MessageId:
    ledger: int
    entry: int
    partition: int = -1
    batch: int = -1

    def ledger_id(self) -> int:
        return self.ledger

    def entry_id(self) -> int:
        return self.entry

    def partition_index(self) -> int:
        return self.partition

    def batch_index(self) -> int:
        return self.batch

    def __str__(self) -> str:
        """The Java client's form, which ORIGIN_MESSAGE_ID carries: ledger:entry:partition[:batch]."""
        tail = f":{self.batch}" if self.batch >= 0 else ""
        return f"{self.ledger}:{self.entry}:{self.partition}{tail}"


class Message:
    """One message of a topic; ``redelivery_count()`` is the broker's count."""

    __slots__ = ("_data", "_props", "_id", "_count", "_topic", "_publish", "_event", "_key", "channel",
                 "batch_size")

    def __init__(self, data: bytes, props: dict, mid: MessageId, count: int, topic: str, publish_ms: int,
                 event_ms: int, key: str, channel, batch_size: int = 0) -> None:
        self._data, self._props, self._id, self._count = data, props, mid, count
        self._topic, self._publish, self._event, self._key = topic, publish_ms, event_ms, key
        self.channel = channel                  # the consumer's subscription it came through
        self.batch_size = batch_size            # messages in its entry (0: not a batch)

    def data(self) -> bytes:
        return self._data

    def value(self) -> bytes:
        return self._data

    def properties(self) -> dict:
        return dict(self._props)

    def message_id(self) -> MessageId:
        return self._id

    def redelivery_count(self) -> int:
        return self._count

    def topic_name(self) -> str:
        return self._topic

    def publish_timestamp(self) -> int:
        return self._publish

    def event_timestamp(self) -> int:
        return self._event

    def partition_key(self) -> str:
        return self._key

    def __repr__(self) -> str:
        return f"Message({self._topic}, {self._id}, redelivery_count={self._count}, {len(self._data)} bytes)"


def messages_of(cmd_message, frame, topic: str, channel) -> list[Message]:
    """The messages of one MESSAGE frame (several when its entry is a batch; indexes whose
    bit is clear in ``ack_set`` were acknowledged already and are left out)."""
    raw_meta, payload = frame.metadata_and_payload()
    meta = s.MessageMetadata.FromString(raw_meta)
    mid = cmd_message.message_id
    ledger, entry, partition = mid.ledgerId, signed_id(mid.entryId), mid.partition
    count = cmd_message.redelivery_count
    if not meta.HasField("num_messages_in_batch"):
        props = {kv.key: kv.value for kv in meta.properties}
        return [Message(payload, props, MessageId(ledger, entry, partition), count, topic, meta.publish_time,
                        meta.event_time, meta.partition_key, channel)]
    left = None
    if cmd_message.ack_set:
        left = mask_of_ack_set(cmd_message.ack_set)
    out, pos, n = [], 0, meta.num_messages_in_batch
    for index in range(n):
        size = int.from_bytes(payload[pos:pos + 4], "big")
        single = s.SingleMessageMetadata.FromString(payload[pos + 4:pos + 4 + size])
        pos += 4 + size
        body = payload[pos:pos + single.payload_size]
        pos += single.payload_size
        if left is not None and not (left >> index) & 1:
            continue
        props = {kv.key: kv.value for kv in single.properties}
        out.append(Message(body, props, MessageId(ledger, entry, partition, index), count, topic, meta.publish_time,
                           single.event_time, single.partition_key, channel, n))
    return out
