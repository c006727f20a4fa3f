"""Topic message types (RocketMQ 5.x: NORMAL, FIFO, DELAY, TRANSACTION, and LITE and
PRIORITY of RIP-83 and the priority messages) and the topic attributes that carry them,
as upstream's TopicAttributes / AttributeParser read them.

A 5.x topic is made for one type of message: ``mqadmin updateTopic -a
+message.type=FIFO`` sends the attribute modification ``+message.type=FIFO`` in
UPDATE_AND_CREATE_TOPIC's ``attributes`` header; the broker keeps ``{"message.type":
"FIFO"}`` in the topic's config, a 5.x route lists it as the queues' accepted message
types, and the proxy refuses a message of another type (MESSAGE_PROPERTY_CONFLICT_WITH_
TYPE; MESSAGE_ILLEGAL on the 4.x wire). A message's type comes from its stored
properties (TopicMessageType.parseFromMessageProperty): TRAN_MSG=true is TRANSACTION, a
delay level or a TIMER_* property is DELAY, a __SHARDINGKEY is FIFO, a lite topic LITE
(lite_topics.py), a priority PRIORITY (priorities.py), anything else NORMAL.

Differences from upstream, on purpose: a topic made without a type keeps this
emulator's earlier answers (its route accepts NORMAL, FIFO and DELAY, and no message is
refused for its type), where upstream treats it as NORMAL; MIXED (all four) is accepted
without enableMixedMessageType; values are read in any case ("fifo").
"""
from __future__ import annotations

from ..errors import RequestRefused

__all__ = ["NORMAL", "FIFO", "DELAY", "TRANSACTION", "LITE", "PRIORITY", "MIXED", "MESSAGE_TYPES",
           "LITE_TOPIC_PROPERTY", "PRIORITY_PROPERTY", "LITE_EXPIRATION_ATTRIBUTE", "MESSAGE_TYPE_ATTRIBUTE",
           "SHARDING_KEY", "UNTYPED_ACCEPTS", "TopicAttributeError", "parse_message_type", "message_type_of",
           "accepted_types", "mismatch", "apply_attribute_changes"]

NORMAL, FIFO, DELAY, TRANSACTION, MIXED = "NORMAL", "FIFO", "DELAY", "TRANSACTION", "MIXED"
LITE, PRIORITY = "LITE", "PRIORITY"
MESSAGE_TYPES = (NORMAL, FIFO, DELAY, TRANSACTION, LITE, PRIORITY)
_MIXED_ACCEPTS = (NORMAL, FIFO, DELAY, TRANSACTION)      # MIXED: the four of 5.0, not LITE or PRIORITY
MESSAGE_TYPE_ATTRIBUTE = "message.type"
# a LITE topic's idle lite topics expire after this many minutes without a write (-1: never)
LITE_EXPIRATION_ATTRIBUTE = "lite.topic.expiration"
# where a stored message keeps its lite topic and its priority (not user properties)
LITE_TOPIC_PROPERTY = "__LITE_TOPIC"
PRIORITY_PROPERTY = "__PRIORITY"
SHARDING_KEY = "__SHARDINGKEY"              # a 5.x message group, as the proxy stores it
# What a topic without a message type accepts (this emulator's answer before types existed).
UNTYPED_ACCEPTS = (NORMAL, FIFO, DELAY)
_UNSPECIFIED = "UNSPECIFIED"

# TopicAttributes.ALL: each attribute upstream knows, the values it takes, whether an
# update may change it. Unknown keys are refused ("unsupported key"), as upstream does.
_ENUMS = {MESSAGE_TYPE_ATTRIBUTE: ((_UNSPECIFIED,) + MESSAGE_TYPES + (MIXED,), True),
          "queue.type": (("BatchCQ", "SimpleCQ"), False),
          "cleanup.policy": (("DELETE", "COMPACTION"), False)}
_LONGS = {"reserve.time": (-1, True), LITE_EXPIRATION_ATTRIBUTE: (-1, True)}
# message properties that make a message a DELAY one (parseFromMessageProperty)
_DELAY_PROPS = ("DELAY", "TIMER_DELIVER_MS", "TIMER_DELAY_SEC", "TIMER_DELAY_MS")


class TopicAttributeError(RequestRefused):
    """A topic attribute modification upstream would refuse; the message says why."""


def parse_message_type(text: str) -> str | None:
    """A message type as a topic stores it (NORMAL, FIFO, DELAY, TRANSACTION, MIXED), from
    any case; UNSPECIFIED is no type (None). ValueError for anything else."""
    value = text.strip().upper()
    if value == _UNSPECIFIED:
        return None
    if value in MESSAGE_TYPES or value == MIXED:
        return value
    raise ValueError(f"message type must be one of {', '.join(t.lower() for t in MESSAGE_TYPES)} "
                     f"(or mixed), got {text!r}")


def message_type_of(properties: dict, deliver_at_ms: int | None = None) -> str:
    """The type of a message with these stored properties (upstream's
    TopicMessageType.parseFromMessageProperty); ``deliver_at_ms`` set counts as DELAY."""
    if properties.get("TRAN_MSG", "").lower() == "true":
        return TRANSACTION
    if deliver_at_ms is not None or any(k in properties for k in _DELAY_PROPS):
        return DELAY
    if SHARDING_KEY in properties:
        return FIFO
    if LITE_TOPIC_PROPERTY in properties:
        return LITE
    if PRIORITY_PROPERTY in properties:
        return PRIORITY
    return NORMAL


def accepted_types(message_type: str | None) -> tuple[str, ...]:
    """The message types a topic's route lists as accepted."""
    if message_type is None:
        return UNTYPED_ACCEPTS
    if message_type == MIXED:
        return _MIXED_ACCEPTS
    return (message_type,)


def mismatch(message_type: str | None, properties: dict, deliver_at_ms: int | None = None) -> str | None:
    """Why a message with these properties may not go to a topic of ``message_type``
    (the proxy's TopicMessageTypeValidator), None when it may. An untyped topic takes
    every type."""
    if message_type is None:
        return None
    if message_type == MIXED:
        return None if message_type_of(properties, deliver_at_ms) in _MIXED_ACCEPTS else \
            "TopicMessageType validate failed, a MIXED topic takes no LITE or PRIORITY message"
    actual = message_type_of(properties, deliver_at_ms)
    if actual == message_type:
        return None
    return (f"TopicMessageType validate failed, the expected type is {message_type}, but actual type is "
            f"{actual}")


def apply_attribute_changes(current: dict[str, str], modification: str | None, *, create: bool) -> dict[str, str]:
    """A topic's attributes after UPDATE_AND_CREATE_TOPIC's ``attributes`` header
    (``+key=value`` adds or changes, ``-key`` removes, comma-separated; AttributeParser
    and AttributeUtil.alterCurrentAttributes). ``create``: the topic is new, only ``+``
    is allowed. No header keeps the current attributes. TopicAttributeError for what
    upstream refuses: a malformed entry, a repeated or unknown key, a value out of its
    set, an attribute that cannot change, removing one the topic does not have."""
    out = dict(current)
    if not modification:
        return out
    seen: set[str] = set()
    for entry in modification.split(","):
        entry = entry.strip()
        sign, body = entry[:1], entry[1:]
        if "=" in body:
            key, _, value = body.partition("=")
            if sign != "+":
                raise TopicAttributeError(f"add/alter attribute format is wrong: {entry}")
        else:
            key, value = body, ""
            if sign != "-":
                raise TopicAttributeError(f"delete attribute format is wrong: {entry}")
        if not key or "+" in key or "-" in key:
            raise TopicAttributeError(f"kv string format wrong: {entry!r}")
        if key in seen:
            raise TopicAttributeError(f"alter duplication key. key: {key}")
        seen.add(key)
        if key not in _ENUMS and key not in _LONGS:
            raise TopicAttributeError(f"unsupported key: {key} (known: {', '.join(sorted({*_ENUMS, *_LONGS}))})")
        changeable = (_ENUMS.get(key) or _LONGS[key])[1]
        if sign == "-":
            if create:
                raise TopicAttributeError(f"only add attribute is supported while creating topic. key: {key}")
            if key not in out:
                raise TopicAttributeError(f"attempt to delete a nonexistent key: {key}")
            if not changeable:
                raise TopicAttributeError(f"attempt to update an unchangeable attribute. key: {key}")
            del out[key]
            continue
        if not create and not changeable and key in out and out[key] != value:
            raise TopicAttributeError(f"attempt to update an unchangeable attribute. key: {key}")
        out[key] = _checked(key, value)
    return out


def _checked(key: str, value: str) -> str:
    if key in _ENUMS:
        universe = _ENUMS[key][0]
        if key == MESSAGE_TYPE_ATTRIBUTE:
            try:
                parsed = parse_message_type(value)
            except ValueError:
                raise TopicAttributeError(f"value of {key} is not in set: {list(universe)}") from None
            return parsed or _UNSPECIFIED
        if value not in universe:
            raise TopicAttributeError(f"value of {key} is not in set: {list(universe)}")
        return value
    lo = _LONGS[key][0]
    try:
        n = int(value)
    except ValueError:
        raise TopicAttributeError(f"value of {key} must be an integer, got {value!r}") from None
    if n < lo:
        raise TopicAttributeError(f"value of {key} must be >= {lo}, got {n}")
    return str(n)
