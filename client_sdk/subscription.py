"""Subscriptions and tag expressions (RocketMQ's SubscriptionData / FilterAPI), and
MessageSelector.

``"*"`` (or empty) subscribes to everything; ``"TagA || TagB"`` to those tags. The
broker filters by the tags' Java hash codes (``codeSet``); the client filters again by
the tag strings, because different tags can share a hash. ``MessageSelector.by_sql``
subscribes by a SQL92 expression over the messages' properties: the broker alone filters
(it must have enablePropertyFilter on, as a real one; the consumer asks at its start).
"""
from __future__ import annotations

from dataclasses import dataclass

from rocketmq_emulator.store.records import java_string_hash

from .errors import MQClientError

__all__ = ["SubscriptionData", "MessageSelector", "SUB_ALL", "SQL92", "TAG"]

SUB_ALL = "*"
SQL92, TAG = "SQL92", "TAG"


@dataclass(frozen=True, slots=True)
class MessageSelector:
    """RocketMQ's MessageSelector: ``MessageSelector.by_sql("region = 'eu' AND amount > 100")``
    or ``MessageSelector.by_tag("TagA || TagB")``, given to ``PushConsumer.subscribe``."""

    expression_type: str
    expression: str | None

    @classmethod
    def by_sql(cls, sql: str | None) -> "MessageSelector":
        return cls(SQL92, sql)

    @classmethod
    def by_tag(cls, tag: str | None) -> "MessageSelector":
        return cls(TAG, tag)


@dataclass(frozen=True, slots=True)
class SubscriptionData:
    topic: str
    sub_string: str = SUB_ALL
    tags_set: frozenset[str] = frozenset()
    code_set: tuple[int, ...] = ()
    sub_version: int = 0
    expression_type: str = "TAG"

    @classmethod
    def build(cls, topic: str, expression: "str | MessageSelector | None", sub_version: int) -> "SubscriptionData":
        """FilterAPI.build: a tag expression (a string, or ``MessageSelector.by_tag``), or
        a ``MessageSelector`` of another type, kept as written (the broker compiles it)."""
        if isinstance(expression, MessageSelector):
            if expression.expression_type == TAG:
                expression = expression.expression
            elif expression.expression is None or not str(expression.expression).strip():
                raise MQClientError(f"Expression can't be null! {expression.expression_type}")
            else:
                return cls(topic, expression.expression, frozenset(), (), sub_version, expression.expression_type)
        if expression is not None and not isinstance(expression, str):
            raise MQClientError(f"a tag expression is a string like '*' or 'TagA || TagB', not {expression!r}")
        if expression is None or not expression.strip() or expression.strip() == SUB_ALL:
            return cls(topic, SUB_ALL, frozenset(), (), sub_version)
        tags = [t.strip() for t in expression.split("||") if t.strip()]
        if not tags:
            raise MQClientError(f"subString split error: tag expression {expression!r} names no tag")
        ordered = list(dict.fromkeys(tags))
        return cls(topic, expression, frozenset(ordered), tuple(java_string_hash(t) for t in ordered),
                   sub_version)

    @property
    def all_tags(self) -> bool:
        return not self.tags_set

    def matches(self, tags: str | None) -> bool:
        """Client-side re-filter: with a tag set, a message must carry one of its tags
        (a message without TAGS is dropped)."""
        return not self.tags_set or tags in self.tags_set

    def to_json(self) -> dict:
        """SubscriptionData as the heartbeat body carries it (§2.7)."""
        return {"classFilterMode": False, "topic": self.topic, "subString": self.sub_string,
                "tagsSet": sorted(self.tags_set), "codeSet": list(self.code_set),
                "subVersion": self.sub_version, "expressionType": self.expression_type}
