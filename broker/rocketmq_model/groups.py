"""Subscription groups, consumer registrations (heartbeats) and queue locks.

``SubscriptionGroupConfig`` holds the retry policy of a group (retryMaxTimes 16,
retryQueueNums 1); ``ConsumerManager`` holds what heartbeats registered (channels,
client ids, subscriptions with their tag hash codes and subVersion); ``LockManager``
is RebalanceLockManager (locks expire after 60 s without renewal).

Group names follow develop's TopicValidator.validateGroup (4.9.8's broker checks none):
the topic charset ``^[%|a-zA-Z0-9_-]+$`` and at most 120 characters, so ``%RETRY%<group>``
and ``%DLQ%<group>`` are always legal topic names (127 at most) and a name can never
walk out of a directory (``../``) or split an offset key.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from rocketmq_emulator.store.records import tags_code

from ..config import BrokerConfig
from .config_table import ConfigTable
from .sql_filter import SQL92, SqlFilter, SqlFilterError, compile_sql, is_tag_type
from ..errors import RequestRefused
from ..java_fields import FieldError, java_bool, java_int, java_long, java_string
from ..retry_lifecycle import DEFAULT_MAX_RECONSUME_TIMES

__all__ = ["SubscriptionGroupConfig", "GroupManager", "SubscriptionData", "ConsumerGroupInfo",
           "ConsumerManager", "LockManager", "parse_tag_expression", "GroupNameError", "validate_group_name",
           "GROUP_MAX_LENGTH"]

GROUP_MAX_LENGTH = 120
_LEGAL = re.compile(r"[%|a-zA-Z0-9_-]+")


class GroupNameError(RequestRefused):
    """An illegal group name; the message is develop's TopicValidator remark."""


def validate_group_name(group) -> str:
    """Returns ``group`` if it is a legal group name, else raises GroupNameError."""
    if group in _VALIDATED:           # most requests name one of a few groups
        return group
    if not isinstance(group, str) or not group.strip():
        raise GroupNameError("The specified group is blank.")
    if not _LEGAL.fullmatch(group):
        raise GroupNameError(f"The specified group: {_shown(group)}, contains illegal characters, "
                             f"allowing only ^[%|a-zA-Z0-9_-]+$")
    if len(group) > GROUP_MAX_LENGTH:
        raise GroupNameError(f"The specified group: {_shown(group)}, is longer than group max length: "
                             f"{GROUP_MAX_LENGTH}")
    if len(_VALIDATED) < _VALIDATED_MAX:
        _VALIDATED.add(group)
    return group


_VALIDATED: set[str] = set()
_VALIDATED_MAX = 1 << 16


def _shown(name: str) -> str:
    """A name as a remark quotes it: whole up to 130 characters (every legal one)."""
    return name if len(name) <= 130 else f"{name[:120]}...({len(name)} chars)"


@dataclass(slots=True)
class SubscriptionGroupConfig:
    group_name: str
    consume_enable: bool = True
    consume_from_min_enable: bool = True
    consume_broadcast_enable: bool = True
    retry_queue_nums: int = 1
    retry_max_times: int = DEFAULT_MAX_RECONSUME_TIMES
    broker_id: int = 0
    which_broker_when_consume_slowly: int = 1
    notify_consumer_ids_changed_enable: bool = True
    consume_message_orderly: bool = False       # 5.x: a FIFO group (message groups in order)
    # 5.x group attributes (SubscriptionGroupAttributes: lite.sub.model, ...)
    attributes: dict[str, str] = field(default_factory=dict)

    # JSON name -> (attribute, fastjson reader of its Java type)
    _JSON = {"groupName": ("group_name", java_string), "consumeEnable": ("consume_enable", java_bool),
             "consumeFromMinEnable": ("consume_from_min_enable", java_bool),
             "consumeBroadcastEnable": ("consume_broadcast_enable", java_bool),
             "retryQueueNums": ("retry_queue_nums", java_int), "retryMaxTimes": ("retry_max_times", java_int),
             "brokerId": ("broker_id", java_long),
             "whichBrokerWhenConsumeSlowly": ("which_broker_when_consume_slowly", java_long),
             "notifyConsumerIdsChangedEnable": ("notify_consumer_ids_changed_enable", java_bool),
             "consumeMessageOrderly": ("consume_message_orderly", java_bool)}

    def to_json(self) -> dict:
        d = {k: getattr(self, a) for k, (a, _) in self._JSON.items()}
        if self.attributes:
            d["attributes"] = dict(self.attributes)
        return d

    @classmethod
    def from_json(cls, d) -> "SubscriptionGroupConfig":
        """From a SubscriptionGroupConfig body (or the saved table): each field read as
        fastjson reads its Java type; null keeps the default; fields this broker does
        not model (groupRetryPolicy, attributes, ...) are ignored. FieldError (a
        ValueError) names a field fastjson would refuse, or groupName when it is
        missing (the Java broker fails on a config without one)."""
        if not isinstance(d, dict):
            raise FieldError("the body", "a JSON object", d)
        fields = {}
        for key, (attr, read) in cls._JSON.items():
            value = d.get(key)
            if value is not None:
                fields[attr] = read(value, key)
        if "group_name" not in fields:
            raise FieldError("groupName", "the group's name", None)
        return cls(**fields, attributes=_attributes(d.get("attributes")))


def _attributes(raw) -> dict[str, str]:
    """A group's attributes as saved (``key``) or as mqadmin updateSubGroup -a sends them
    (``+key``: set; ``-key``: unset, so left out of the config that replaces the old)."""
    if not isinstance(raw, dict):
        return {}
    out = {}
    for key, value in raw.items():
        key = str(key)
        if key.startswith("-"):
            continue
        out[key.removeprefix("+")] = str(value)
    return out


class GroupManager(ConfigTable):
    """subscriptionGroup.json: every group's config (``ConfigTable``: ``put``, ``delete``)."""

    DOCUMENT = "subscriptionGroup"
    TABLE = "subscriptionGroupTable"
    entry_from_json = SubscriptionGroupConfig.from_json

    def __init__(self, config: BrokerConfig, saved: dict | None = None) -> None:
        self.config = config
        super().__init__(saved)

    @staticmethod
    def entry_name(entry: SubscriptionGroupConfig) -> str:
        return entry.group_name

    def find(self, group: str, *, auto_create: bool = True) -> SubscriptionGroupConfig | None:
        """``findSubscriptionGroupConfig``: auto-created when autoCreateSubscriptionGroup
        is on, and always for the CID_RMQ_SYS_ system groups."""
        g = self.table.get(group)
        if g is None and auto_create and (self.config.auto_create_subscription_group
                                          or group.startswith("CID_RMQ_SYS_")):
            try:
                validate_group_name(group)
            except GroupNameError:      # as develop: never auto-created, so "does not exist"
                return None
            g = self.put(SubscriptionGroupConfig(group))
        return g



def parse_tag_expression(expr: str | None) -> tuple[frozenset[str], frozenset[int] | None]:
    """'*' or '' → (empty, None) meaning "all"; 'TagA || TagB' → tags and their hash codes."""
    if expr is None or not expr.strip() or expr.strip() == "*":
        return frozenset(), None
    tags = frozenset(t.strip() for t in expr.split("||") if t.strip())
    if not tags:
        raise ValueError(f"bad tag expression {expr!r}")
    return tags, frozenset(tags_code(t) for t in tags)


@dataclass(slots=True)
class SubscriptionData:
    topic: str
    sub_string: str = "*"
    tags_set: frozenset[str] = frozenset()
    code_set: frozenset[int] | None = None
    sub_version: int = 0
    expression_type: str = "TAG"
    # a SQL92 subscription's compiled selector; None for a tag subscription, and for an
    # expression that does not compile (upstream takes the heartbeat and keeps no filter
    # data for it: its pulls are answered FILTER_DATA_NOT_EXIST)
    sql: SqlFilter | None = None

    @classmethod
    def from_json(cls, d: dict) -> "SubscriptionData":
        """From a heartbeat's subscriptionDataSet entry, as fastjson reads the Java class
        (topic, subString and expressionType Strings, subVersion a long; tagsSet and
        codeSet are derived here from subString); ValueError names a bad field."""
        topic = java_string(d.get("topic"), "topic")
        sub = java_string(d.get("subString"), "subString") or "*"
        expression_type = java_string(d.get("expressionType"), "expressionType") or "TAG"
        sub_version = java_long(d.get("subVersion"), "subVersion")
        if topic is None:
            raise ValueError("<topic> is missing")
        if not is_tag_type(expression_type):
            try:
                sql = compile_sql(sub) if expression_type == SQL92 else None
            except SqlFilterError:
                sql = None
            return cls(topic=topic, sub_string=sub, sub_version=sub_version, expression_type=expression_type, sql=sql)
        tags, codes = parse_tag_expression(sub)
        return cls(topic=topic, sub_string=sub, tags_set=tags, code_set=codes, sub_version=sub_version,
                   expression_type=expression_type)


@dataclass(slots=True)
class ConsumerGroupInfo:
    group: str
    consume_type: str = "CONSUME_PASSIVELY"
    message_model: str = "CLUSTERING"
    consume_from_where: str = "CONSUME_FROM_LAST_OFFSET"
    channels: dict[Any, str] = field(default_factory=dict)      # channel -> clientId
    subscriptions: dict[str, SubscriptionData] = field(default_factory=dict)

    def client_ids(self) -> list[str]:
        return sorted(set(self.channels.values()))


class ConsumerManager:
    def __init__(self) -> None:
        self.groups: dict[str, ConsumerGroupInfo] = {}

    def get(self, group: str) -> ConsumerGroupInfo | None:
        return self.groups.get(group)

    def register(self, group: str, channel: Any, client_id: str, consume_type: str, message_model: str,
                 consume_from_where: str, subs: list[SubscriptionData]) -> bool:
        """Returns True when the group's membership or topic set changed (a CHANGE
        event: RocketMQ then notifies the group's consumers to rebalance)."""
        info = self.groups.get(group)
        if info is None:
            info = self.groups[group] = ConsumerGroupInfo(group)
        info.consume_type, info.message_model, info.consume_from_where = (
            consume_type, message_model, consume_from_where)
        changed = channel not in info.channels
        info.channels[channel] = client_id
        old_topics = set(info.subscriptions)
        new = {s.topic: s for s in subs}
        for topic, sub in new.items():
            cur = info.subscriptions.get(topic)
            if cur is None or sub.sub_version > cur.sub_version:
                info.subscriptions[topic] = sub
        for topic in old_topics - set(new):
            del info.subscriptions[topic]
        return changed or old_topics != set(new)

    def unregister(self, group: str, channel: Any) -> bool:
        info = self.groups.get(group)
        if info is None or channel not in info.channels:
            return False
        del info.channels[channel]
        if not info.channels:
            del self.groups[group]
        return True

    def channel_closed(self, channel: Any) -> list[str]:
        """Drop a closed connection from every group; returns the groups it left."""
        left = [g for g, info in self.groups.items() if channel in info.channels]
        for g in left:
            self.unregister(g, channel)
        return left


class LockManager:
    """Queue locks for orderly consumption: (group, topic, broker, queue) → client."""

    def __init__(self, max_live_ms: int = 60000) -> None:
        self.max_live_ms = max_live_ms
        self._locks: dict[tuple[str, tuple[str, str, int]], tuple[str, int]] = {}

    def try_lock(self, group: str, mqs: list[tuple[str, str, int]], client_id: str, now_ms: int) -> list:
        ok = []
        for mq in mqs:
            held = self._locks.get((group, mq))
            if held is None or held[0] == client_id or now_ms - held[1] > self.max_live_ms:
                self._locks[(group, mq)] = (client_id, now_ms)
                ok.append(mq)
        return ok

    def unlock(self, group: str, mqs: list[tuple[str, str, int]], client_id: str) -> None:
        for mq in mqs:
            held = self._locks.get((group, mq))
            if held is not None and held[0] == client_id:
                del self._locks[(group, mq)]

    def holder(self, group: str, mq: tuple[str, str, int], now_ms: int) -> str | None:
        held = self._locks.get((group, mq))
        if held is None or now_ms - held[1] > self.max_live_ms:
            return None
        return held[0]

    def expire(self, now_ms: int) -> None:
        for key in [k for k, (_, t) in self._locks.items() if now_ms - t > self.max_live_ms]:
            del self._locks[key]
