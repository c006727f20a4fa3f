"""The message model users see.

- ``Message``       what a producer sends: topic, tags, keys, body, user properties, delay level.
- ``MessageExt``    what a listener receives: a decoded commit-log record (``MessageRecord``)
                    with RocketMQ's MessageExt accessors; ``msg_id`` is UNIQ_KEY (the id the
                    producer returned, stable across retries), else the offsetMsgId.
- ``MessageQueue``  (topic, broker_name, queue_id), ordered like Java's compareTo.
- ``SendResult`` / ``SendStatus``.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from rocketmq_emulator.store.records import SYSTEM_PROPERTY_KEYS, MessageRecord, Prop

__all__ = ["Message", "MessageExt", "MessageQueue", "SendResult", "SendStatus", "SYSTEM_PROPERTY_KEYS"]

class MessageQueue(NamedTuple):
    """One queue of a topic on one broker: (topic, broker_name, queue_id). Immutable;
    sorts by topic, broker name, queue id like Java's compareTo. A tuple, so hashing it
    (every offset update does) costs next to nothing."""

    topic: str
    broker_name: str
    queue_id: int

    def __str__(self) -> str:
        return f"MessageQueue [topic={self.topic}, brokerName={self.broker_name}, queueId={self.queue_id}]"

    def to_json(self) -> dict:
        return {"topic": self.topic, "brokerName": self.broker_name, "queueId": self.queue_id}


@dataclass(slots=True)
class Message:
    """A message to send (RocketMQ's ``Message``).

    ``body`` may be ``str`` (sent as UTF-8). ``keys`` may be one string or several
    (joined with spaces, RocketMQ's KEY_SEPARATOR). ``properties`` are user properties;
    system names (TAGS, DELAY, UNIQ_KEY, ...) are refused — use the fields.
    ``delay_time_level`` 1..18 delays delivery (``delayTimeLevel``: 1s 5s 10s 30s 1m ... 2h).
    """

    topic: str
    body: bytes | str = b""
    tags: str | None = None
    keys: str | Iterable[str] | None = None
    properties: dict[str, str] = field(default_factory=dict)
    delay_time_level: int = 0
    flag: int = 0
    wait_store_msg_ok: bool = True

    def body_bytes(self) -> bytes:
        b = self.body
        if isinstance(b, str):
            return b.encode("utf-8")
        if isinstance(b, (bytes, bytearray, memoryview)):
            return bytes(b)
        raise TypeError(f"message body must be bytes or str, not {type(b).__name__}")

    def keys_string(self) -> str | None:
        k = self.keys
        if k is None or isinstance(k, str):
            return k or None
        return " ".join(str(x) for x in k) or None

    def wire_properties(self) -> dict[str, str]:
        """The property map as it goes on the wire (before UNIQ_KEY is added)."""
        props: dict[str, str] = {}
        if self.tags:
            props[Prop.TAGS] = self.tags
        keys = self.keys_string()
        if keys:
            props[Prop.KEYS] = keys
        props[Prop.WAIT] = "true" if self.wait_store_msg_ok else "false"
        if self.delay_time_level:
            props[Prop.DELAY] = str(self.delay_time_level)
        for k, v in self.properties.items():
            props[k] = str(v)
        return props


class MessageExt(MessageRecord):
    """A consumed message: the decoded commit-log record plus MessageExt accessors.

    Fields are ``MessageRecord``'s (``topic``, ``body``, ``queue_id``, ``queue_offset``,
    ``commit_log_offset``, ``reconsume_times``, ``properties``, ``born_timestamp``,
    ``store_timestamp``, ...). A retried message arrives with ``topic`` already set back
    to the business topic (resetRetryAndNamespace) and the same ``msg_id`` as the first
    delivery. Made from a record without copying (``MessageExt.adopt``).
    """

    __slots__ = ()

    @staticmethod
    def adopt(rec: MessageRecord) -> "MessageExt":
        # Same slot layout, so the class can be swapped in place: no copy per delivery.
        rec.__class__ = MessageExt
        return rec  # type: ignore[return-value]

    def get_property(self, key: str, default: str | None = None) -> str | None:
        """``getProperty(key)``."""
        return self.properties.get(key, default)

    @property
    def user_properties(self) -> dict[str, str]:
        """Properties that are not RocketMQ's own."""
        return {k: v for k, v in self.properties.items() if k not in SYSTEM_PROPERTY_KEYS}

    @property
    def origin_message_id(self) -> str | None:
        return self.properties.get(Prop.ORIGIN_MESSAGE_ID)

    @property
    def retry_topic(self) -> str | None:
        return self.properties.get(Prop.RETRY_TOPIC)

    @property
    def delay_time_level(self) -> int:
        return self.delay_level

    @property
    def text(self) -> str:
        """The body decoded as UTF-8."""
        return self.body.decode("utf-8", "replace")

    def __repr__(self) -> str:
        return (f"MessageExt(topic={self.topic!r}, msg_id={self.msg_id}, queue_id={self.queue_id}, "
                f"queue_offset={self.queue_offset}, reconsume_times={self.reconsume_times}, "
                f"tags={self.tags!r}, body={self.body[:40]!r})")


class SendStatus(enum.Enum):
    """SendStatus: SEND_OK, or a stored-but-not-flushed/replicated outcome."""

    SEND_OK = "SEND_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"
    FLUSH_SLAVE_TIMEOUT = "FLUSH_SLAVE_TIMEOUT"
    SLAVE_NOT_AVAILABLE = "SLAVE_NOT_AVAILABLE"


class SendResult(NamedTuple):
    """What ``Producer.send`` returns (RocketMQ's SendResult); immutable.

    ``msg_id`` is the client's UNIQ_KEY (what consumers see as ``msg_id``);
    ``offset_msg_id`` the broker's id (store host + commit-log offset)."""

    status: SendStatus
    msg_id: str
    offset_msg_id: str
    queue: MessageQueue
    queue_offset: int
    region_id: str = "DefaultRegion"
    trace_on: bool = False

    @property
    def message_queue(self) -> MessageQueue:
        return self.queue

    @property
    def send_status(self) -> SendStatus:
        return self.status
