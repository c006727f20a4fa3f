"""Every consumer group a broker knows and the client dialects that use it: what `group
list` shows and what the CLI checks a group name against (a name no broker knows is a
mistake, not an empty answer).

A group is known by its config (mqadmin updateSubGroup, or made on first use), its
committed offsets, its live consumers, its Pulsar cursors, its retry or dead-letter
topics. Its dialects are read off the same things:

  4.x     a remoting consumer registered by heartbeat, or its %RETRY%<group> topic
          (a 4.x consumer's heartbeat makes it)
  5.x     a pop consumer (gRPC receive, or a remoting consumer of CONSUME_POP), or its
          pop retry topics %RETRY%<group>+<topic>
  pulsar  a subscription cursor, or offsets on a Pulsar topic (pulsar|...)

A group with nothing but a config has no dialect yet (no client has used it).
"""
from __future__ import annotations

from rocketmq_emulator.store.records import DLQ_PREFIX, POP_RETRY_SEPARATOR, RETRY_PREFIX

from ..pulsar_model.names import STORE_PREFIX

__all__ = ["known_groups", "DIALECTS"]

DIALECTS = ("4.x", "5.x", "pulsar")


def known_groups(cores) -> list[dict]:
    """[{"group", "dialects": [...], "topics": [...]}] of every group the running brokers
    of ``cores`` know, sorted by name. Cost: one pass over configs, offsets and topics."""
    groups: dict[str, tuple[set, set]] = {}

    def add(group: str, dialect: str | None = None, topic: str | None = None) -> None:
        dialects, topics = groups.setdefault(group, (set(), set()))
        if dialect:
            dialects.add(dialect)
        if topic and not topic.startswith((RETRY_PREFIX, DLQ_PREFIX)):
            topics.add(topic)

    for core in cores:
        for group in core.groups.table:
            add(group)
        for key in core.store.offset_table():
            topic, _, group = key.rpartition("@")
            if group:
                add(group, "pulsar" if topic.startswith(STORE_PREFIX) else None, topic)
        for group, info in core.consumers.groups.items():
            dialect = "5.x" if info.consume_type == "CONSUME_POP" else "4.x"
            for topic in info.subscriptions or (None,):
                add(group, dialect, topic)
        for group, topic in core.pops.groups_and_topics():
            add(group, "5.x", topic)
        for group, topic in core.subscriptions.durable_cursors():
            add(group, "pulsar", topic)
        for topic in core.topics.table:
            if topic.startswith(RETRY_PREFIX):
                name, sep, _ = topic[len(RETRY_PREFIX):].partition(POP_RETRY_SEPARATOR)
                add(name, "5.x" if sep else "4.x")
            elif topic.startswith(DLQ_PREFIX):
                add(topic[len(DLQ_PREFIX):])
    return [{"group": g, "dialects": [d for d in DIALECTS if d in dialects], "topics": sorted(topics)}
            for g, (dialects, topics) in sorted(groups.items())]
