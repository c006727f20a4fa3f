"""Topic configuration: names, queue counts, permissions, auto-creation, persistence.

Mirrors RocketMQ's TopicConfigManager: TBW102 is the template producers fall back to
when a topic has no route (present only when autoCreateTopicEnable); ``%RETRY%<group>``
topics are created with the group's retryQueueNums and ``%DLQ%<group>`` with one queue,
both perm RW (6), as in 4.9.2+.

System topics (4.9.8's TopicValidator set, the ``rmq_sys_`` prefix and the names a
broker registers for itself: its cluster name, its broker name, <cluster>_REPLY_TOPIC)
are the broker's own, so UPDATE_AND_CREATE_TOPIC refuses them; the emulator also counts
the RMQ_SYS_ prefix among them. %RETRY%<group> and %DLQ%<group> stay updatable, as
upstream: operators raise a DLQ's permission to read it (mqadmin updateTopic -p 6).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from rocketmq_emulator.store.records import (AUTO_CREATE_TOPIC_KEY, DLQ_PREFIX, NOT_ALLOWED_SEND_TOPICS, RETRY_PREFIX,
                                             SCHEDULE_TOPIC, SYSTEM_PREFIXES, SYSTEM_TOPICS, TIMER_TOPIC)

from ..config import PERM_INHERIT, PERM_PRIORITY, PERM_READ, PERM_WRITE, BrokerConfig
from .config_table import ConfigTable
from ..errors import RequestRefused
from .message_types import MESSAGE_TYPE_ATTRIBUTE, parse_message_type
from ..retry_lifecycle import dlq_topic, retry_topic

__all__ = [
    "TopicConfig",
    "TopicManager",
    "TopicNameError",
    "AUTO_CREATE_TOPIC_KEY",
    "SCHEDULE_TOPIC",
    "TIMER_TOPIC",
    "RETRY_PREFIX",
    "DLQ_PREFIX",
    "retry_topic",
    "dlq_topic",
    "validate_topic_name",
    "is_system_topic",
    "TopicSettingsError",
    "check_topic_settings",
    "QUEUE_NUMS_MAX",
]

TOPIC_MAX_LENGTH = 127
_VALID = re.compile(r"^[%|a-zA-Z0-9_-]+$")
# Topics a client may never send to (TopicValidator.isNotAllowedSendTopic), defined with
# the other system names in store/records.py.
NOT_ALLOWED_SEND = NOT_ALLOWED_SEND_TOPICS
# No upstream bound: 1024 is its largest built-in topic (BenchmarkTest) and the CLI's
# limit; every client builds one MessageQueue per queue of a route.
QUEUE_NUMS_MAX = 1024


def is_system_topic(topic: str) -> bool:
    """A system topic of any broker (TopicManager.is_system adds this broker's own names)."""
    return topic in SYSTEM_TOPICS or topic.startswith(SYSTEM_PREFIXES)


class TopicNameError(RequestRefused):
    """An illegal topic name; the message is RocketMQ's TopicValidator remark."""


class TopicSettingsError(RequestRefused):
    """Queue counts or a permission a topic cannot have."""


def check_topic_settings(read_queue_nums: int, write_queue_nums: int, perm: int) -> None:
    """Queue counts 1..QUEUE_NUMS_MAX; perm a PermName value (PermName.isValid: 0..7)."""
    for name, n in (("readQueueNums", read_queue_nums), ("writeQueueNums", write_queue_nums)):
        if not 1 <= n <= QUEUE_NUMS_MAX:
            raise TopicSettingsError(f"{name} {_number(n)} is out of range: a topic has 1 to {QUEUE_NUMS_MAX} "
                                     f"queues")
    if not 0 <= perm < PERM_PRIORITY:
        raise TopicSettingsError(f"perm {_number(perm)} is not a permission: 0 to 7 ({PERM_READ} read + "
                                 f"{PERM_WRITE} write + {PERM_INHERIT} inherit)")


def _number(n: int) -> str:
    text = str(n)
    return text if len(text) <= 20 else f"{text[:12]}...({len(text)} digits)"


def validate_topic_name(topic: str | None) -> None:
    """RocketMQ 4.x TopicValidator: non-blank, charset ``[%|a-zA-Z0-9_-]``, <= 127 chars."""
    if topic in _VALIDATED:           # every send checks its topic; most name a few topics
        return
    if topic is None or not topic.strip():
        raise TopicNameError("The specified topic is blank.")
    if not _VALID.match(topic):
        raise TopicNameError(
            f"The specified topic[{topic}] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise TopicNameError(f"The specified topic[{topic}] is longer than topic max length {TOPIC_MAX_LENGTH}.")
    if len(_VALIDATED) < _VALIDATED_MAX:
        _VALIDATED.add(topic)


_VALIDATED: set[str] = set()
_VALIDATED_MAX = 1 << 16


@dataclass(slots=True)
class TopicConfig:
    topic_name: str
    read_queue_nums: int = 4
    write_queue_nums: int = 4
    perm: int = PERM_READ | PERM_WRITE
    topic_filter_type: str = "SINGLE_TAG"
    topic_sys_flag: int = 0
    order: bool = False
    # RocketMQ 5.x topic attributes (TopicAttributes: message.type, queue.type, ...)
    attributes: dict[str, str] = field(default_factory=dict)
    # the 5.x message type the attributes give (NORMAL, FIFO, DELAY, TRANSACTION, MIXED;
    # None: made without one), read once here: every send to the topic looks at it
    message_type: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        raw = self.attributes.get(MESSAGE_TYPE_ATTRIBUTE)
        try:
            self.message_type = parse_message_type(raw) if raw else None
        except ValueError:          # (a hand-edited topics.json: the topic stays untyped)
            self.message_type = None

    @property
    def queue_nums(self) -> int:
        return max(self.read_queue_nums, self.write_queue_nums)

    @property
    def readable(self) -> bool:
        return bool(self.perm & PERM_READ)

    @property
    def writeable(self) -> bool:
        return bool(self.perm & PERM_WRITE)

    def to_json(self) -> dict:
        # RocketMQ's topics.json field names (5.x adds "attributes").
        d = {"topicName": self.topic_name, "readQueueNums": self.read_queue_nums,
             "writeQueueNums": self.write_queue_nums, "perm": self.perm,
             "topicFilterType": self.topic_filter_type, "topicSysFlag": self.topic_sys_flag,
             "order": self.order}
        if self.attributes:
            d["attributes"] = dict(self.attributes)
        return d

    @classmethod
    def from_json(cls, d: dict) -> "TopicConfig":
        attributes = d.get("attributes") or {}
        return cls(topic_name=d["topicName"], read_queue_nums=int(d.get("readQueueNums", 4)),
                   write_queue_nums=int(d.get("writeQueueNums", 4)), perm=int(d.get("perm", 6)),
                   topic_filter_type=d.get("topicFilterType", "SINGLE_TAG"),
                   topic_sys_flag=int(d.get("topicSysFlag", 0)), order=bool(d.get("order", False)),
                   attributes={str(k): str(v) for k, v in attributes.items()} if isinstance(attributes, dict)
                   else {})


class TopicManager(ConfigTable):
    """topics.json: all topic configs of the broker (``ConfigTable``: ``put``, ``delete``)."""

    DOCUMENT = "topics"
    TABLE = "topicConfigTable"
    entry_from_json = TopicConfig.from_json

    def __init__(self, config: BrokerConfig, saved: dict | None = None) -> None:
        self.config = config
        super().__init__(saved)
        # System topics every broker has.
        self.table.setdefault(SCHEDULE_TOPIC, TopicConfig(SCHEDULE_TOPIC, 18, 18, PERM_READ | PERM_WRITE))
        if config.auto_create_topic_enable:
            self.table.setdefault(AUTO_CREATE_TOPIC_KEY, TopicConfig(
                AUTO_CREATE_TOPIC_KEY, config.default_topic_queue_nums, config.default_topic_queue_nums,
                PERM_INHERIT | PERM_READ | PERM_WRITE))
        else:
            self.table.pop(AUTO_CREATE_TOPIC_KEY, None)

    def get(self, topic: str) -> TopicConfig | None:
        return self.table.get(topic)

    def is_system(self, topic: str) -> bool:
        """A system topic, including the names this broker registers for itself."""
        c = self.config
        return is_system_topic(topic) or topic in (c.broker_cluster_name, c.broker_name,
                                                   f"{c.broker_cluster_name}_REPLY_TOPIC")

    @staticmethod
    def entry_name(entry: TopicConfig) -> str:
        return entry.topic_name

    def create_in_send(self, topic: str, default_topic: str, queue_nums: int) -> TopicConfig | None:
        """``createTopicInSendMessageMethod``: inherit from a template topic that has the
        INHERIT bit; queue count = min(requested, template's)."""
        template = self.table.get(default_topic)
        if template is None or not (template.perm & PERM_INHERIT):
            return None
        if default_topic == AUTO_CREATE_TOPIC_KEY and not self.config.auto_create_topic_enable:
            return None
        n = max(1, min(queue_nums, template.write_queue_nums))
        return self.put(TopicConfig(topic, n, n, template.perm & ~PERM_INHERIT))

    def create_system(self, topic: str, queue_nums: int, perm: int, sys_flag: int = 0) -> TopicConfig:
        """``createTopicInSendMessageBackMethod``: an existing topic is returned unchanged."""
        tc = self.table.get(topic)
        if tc is None:
            tc = self.put(TopicConfig(topic, queue_nums, queue_nums, perm, topic_sys_flag=sys_flag))
        return tc

