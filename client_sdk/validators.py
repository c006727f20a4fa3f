"""Client-side checks (RocketMQ's Validators): fail fast with a clear message before
anything goes on the wire."""
from __future__ import annotations

import re

from .errors import MQClientError
from .message import SYSTEM_PROPERTY_KEYS, Message

__all__ = ["check_topic", "check_group", "check_message", "NOT_ALLOWED_SEND_TOPICS", "MAX_MESSAGE_SIZE"]

_VALID = re.compile(r"^[%|a-zA-Z0-9_-]+$")
TOPIC_MAX_LENGTH = 127
GROUP_MAX_LENGTH = 255
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
NOT_ALLOWED_SEND_TOPICS = frozenset({"SCHEDULE_TOPIC_XXXX", "RMQ_SYS_TRANS_HALF_TOPIC", "RMQ_SYS_TRACE_TOPIC",
                                     "RMQ_SYS_TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC",
                                     "SELF_TEST_TOPIC", "OFFSET_MOVED_EVENT"})


def check_topic(topic) -> None:
    if not isinstance(topic, str) or not topic.strip():
        raise MQClientError(f"The specified topic is blank: {topic!r}")
    if len(topic) > TOPIC_MAX_LENGTH:
        raise MQClientError(f"The specified topic is longer than topic max length {TOPIC_MAX_LENGTH}: {topic!r}")
    if not _VALID.match(topic):
        raise MQClientError(f"The specified topic[{topic}] contains illegal characters, "
                            f"allowing only ^[%|a-zA-Z0-9_-]+$")


def check_group(group, kind: str = "group") -> None:
    if not isinstance(group, str) or not group.strip():
        raise MQClientError(f"the specified {kind} is blank: {group!r}")
    if len(group) > GROUP_MAX_LENGTH:
        raise MQClientError(f"the specified {kind} is longer than {GROUP_MAX_LENGTH} characters")
    if not _VALID.match(group):
        raise MQClientError(f"the specified {kind}[{group}] contains illegal characters, "
                            f"allowing only ^[%|a-zA-Z0-9_-]+$")


def check_message(msg, max_message_size: int = MAX_MESSAGE_SIZE, valid_topics: set | None = None) -> bytes:
    """Validate a Message; returns its body as bytes. ``valid_topics`` caches topics
    already checked (the send hot path checks each topic name once)."""
    if type(msg) is not Message and not isinstance(msg, Message):
        raise MQClientError(f"the message is {type(msg).__name__}, expected client_sdk.Message")
    topic = msg.topic
    if valid_topics is None or topic not in valid_topics:
        check_topic(topic)
        if topic in NOT_ALLOWED_SEND_TOPICS:
            raise MQClientError(f"Sending message to topic[{topic}] is forbidden.")
        if valid_topics is not None:
            valid_topics.add(topic)
    body = msg.body
    if type(body) is not bytes:
        try:
            body = msg.body_bytes()
        except TypeError as exc:
            raise MQClientError(str(exc)) from None
    if not body:
        raise MQClientError("the message body length is zero")
    if len(body) > max_message_size:
        raise MQClientError(f"the message body size over max value, MAX: {max_message_size}")
    delay = msg.delay_time_level
    if delay and (not isinstance(delay, int) or delay < 0):
        raise MQClientError(f"delay_time_level must be an int >= 0 (0 = no delay), got {delay!r}")
    if type(msg.properties) is dict and not msg.properties:
        return body
    if not isinstance(msg.properties, dict):
        raise MQClientError(f"message properties must be a dict of str, got {type(msg.properties).__name__}")
    for k in msg.properties:
        if k in SYSTEM_PROPERTY_KEYS:
            raise MQClientError(f"The Property<{k}> is used by system, input another please "
                                f"(use the Message fields for tags, keys and the delay level)")
        if not isinstance(k, str) or not k or "\u0001" in k or "\u0002" in k:
            raise MQClientError(f"bad property name {k!r}")
    for v in msg.properties.values():
        if "\u0001" in str(v) or "\u0002" in str(v):
            raise MQClientError(f"property value {v!r} contains a separator char (U+0001/U+0002)")
    return body
