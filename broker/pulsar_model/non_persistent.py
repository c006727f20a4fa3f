"""Pulsar's non-persistent topics (issue 51, item 4): producers and subscriptions that
hold no message beyond the moment it is published, as Pulsar's NonPersistentTopic and
NonPersistentSubscription do.

A message published is offered at once to each subscription of its topic and given to
one consumer of it that has permits and room on its connection (Shared: the next of the
highest priority level, round robin; Key_Shared: the consumer its key hashes to;
Exclusive and Failover: the active consumer); a subscription with no such consumer drops
it (counted: the stats' msgDropRate), and a topic with no subscription drops it. Nothing
is stored, so nothing is kept for a consumer that is not connected, nothing grows when
consumers are slow, and there is nothing to ack, redeliver, seek or compact: Pulsar's
NonPersistentSubscription takes acks, redeliveries and cursor resets and does nothing.

A topic is loaded while it has producers or subscriptions (Pulsar lists those in
GET_TOPICS_OF_NAMESPACE's NON_PERSISTENT mode and in GET /admin/v2/non-persistent/t/ns);
it is unloaded when it has neither (Pulsar's topic GC does it at its next pass, here at
once). A durable subscription stays, without consumers, while its topic is loaded; a
reader's (non-durable) goes with its consumer. A partitioned non-persistent topic is its
partition count (PUT .../partitions), its partitions the topics ``<name>-partition-<i>``.
An admin may load a topic before any client (PUT .../{topic}) and delete one (DELETE,
refused while a producer or consumer is on it unless forced).
The front tells this model who to give a message to; the message itself never comes here.
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Callable

from .cursors import SubscribeOutcome, SubType
from .names import PulsarTopic
from .topics import TOPIC_IN_USE, PulsarAdminError, check_partition_count, partitioned_delete_refusal

__all__ = ["NonPersistentTopics", "NON_PERSISTENT", "UNSUPPORTED_LAST_MESSAGE_ID"]

NON_PERSISTENT = "non-persistent://"
# Pulsar's words where it refuses: NonPersistentTopic.getLastPosition
UNSUPPORTED_LAST_MESSAGE_ID = "getLastMessageId is not supported on non-persistent topic"


@dataclass(eq=False)
class _Member:
    key: object                     # the front's consumer (compared by identity)
    priority: int
    name: str
    permits: int = 0
    msg_out: int = 0
    bytes_out: int = 0


@dataclass(eq=False)
class _Subscription:
    name: str
    durable: bool
    type: SubType | None = None
    members: list[_Member] = field(default_factory=list)
    msg_out: int = 0                # what its consumers got, those gone included
    bytes_out: int = 0
    dropped: int = 0                # messages no consumer of it could take
    turn: int = 0                   # Shared: where the round robin goes on


@dataclass(eq=False)
class _Topic:
    name: str
    partition: int
    producers: dict[str, int] = field(default_factory=dict)     # producer name -> how many (one: a name is once)
    subscriptions: dict[str, _Subscription] = field(default_factory=dict)
    msg_in: int = 0
    bytes_in: int = 0
    entries: int = 0                # published entries (a batch is one): internalStats' entriesAddedCounter


class NonPersistentTopics:
    """The loaded non-persistent topics, by full name (``non-persistent://t/ns/x``)."""

    def __init__(self) -> None:
        self._topics: dict[str, _Topic] = {}
        self._partitioned: dict[str, int] = {}           # a partitioned topic's full name -> its partitions
        self._where: dict[int, tuple[_Topic, _Subscription, _Member]] = {}   # id(consumer key) -> its place

    # -- names ------------------------------------------------------------------------------------
    def partitions(self, topic: PulsarTopic) -> int:
        """A topic's partition count; 0 when it is not partitioned (as for a persistent one)."""
        return self._partitioned.get(topic.full, 0)

    def create_partitioned(self, topic: PulsarTopic, partitions: int) -> None:
        check_partition_count(partitions)
        if topic.partition >= 0:
            raise PulsarAdminError("precondition", f"{topic.full} is the name of a partition: a partitioned topic's "
                                                   f"name may not end with -partition-<i>")
        if topic.full in self._partitioned or topic.full in self._topics:
            raise PulsarAdminError("conflict", "This topic already exists")
        self._partitioned[topic.full] = partitions

    def create(self, topic: PulsarTopic) -> None:
        """PUT .../{topic}: the topic loaded now, without clients. It goes when its last
        client leaves or by DELETE (Pulsar's topic GC unloads an unused one at a later pass)."""
        if topic.full in self._partitioned or topic.full in self._topics:
            raise PulsarAdminError("conflict", "This topic already exists")
        self._load(topic)

    def delete(self, topic: PulsarTopic, force: bool, partitioned: bool) -> tuple[list[str], list[object]]:
        """DELETE .../{topic} (``partitioned``: .../partitions, every partition): refused
        while a producer or consumer is on it unless ``force``, as Pulsar refuses a topic in
        use. Returns the topics unloaded and the consumers detached (the front closes them)."""
        if partitioned:
            if topic.full not in self._partitioned:
                raise PulsarAdminError("not_found", "Partitioned topic does not exist")
            names = [f"{topic.full}-partition-{i}" for i in range(self._partitioned[topic.full])]
        elif topic.full in self._partitioned:
            raise PulsarAdminError("conflict", partitioned_delete_refusal(topic))
        elif topic.full not in self._topics:
            raise PulsarAdminError("not_found", "Topic not found")
        else:
            names = [topic.full]
        loaded = [self._topics[name] for name in names if name in self._topics]
        if not force and any(t.producers or any(sub.members for sub in t.subscriptions.values()) for t in loaded):
            raise PulsarAdminError("precondition", TOPIC_IN_USE)
        self._partitioned.pop(topic.full, None)
        detached = []
        for t in loaded:
            for sub in t.subscriptions.values():
                for member in sub.members:
                    self._where.pop(id(member.key), None)
                    detached.append(member.key)
            del self._topics[t.name]
        return [t.name for t in loaded], detached

    def topics_of(self, tenant: str, namespace: str) -> list[str]:
        """The loaded topics of a namespace (partitions one by one), sorted."""
        prefix = f"{NON_PERSISTENT}{tenant}/{namespace}/"
        return sorted(name for name in self._topics if name.startswith(prefix))

    def partitioned_topics_of(self, tenant: str, namespace: str) -> list[str]:
        prefix = f"{NON_PERSISTENT}{tenant}/{namespace}/"
        return sorted(name for name in self._partitioned if name.startswith(prefix))

    def _load(self, topic: PulsarTopic) -> _Topic:
        t = self._topics.get(topic.full)
        if t is None:
            t = self._topics[topic.full] = _Topic(topic.full, topic.partition)
        return t

    def _unload_if_idle(self, t: _Topic) -> None:
        if not t.producers and not t.subscriptions:
            self._topics.pop(t.name, None)

    # -- producers --------------------------------------------------------------------------------
    def attach_producer(self, topic: PulsarTopic, name: str) -> bool:
        """A producer of ``name`` on the topic; False when one of that name is already on it."""
        t = self._load(topic)
        if name in t.producers:
            return False
        t.producers[name] = 1
        return True

    def detach_producer(self, topic: str, name: str) -> None:
        t = self._topics.get(topic)
        if t is not None and t.producers.pop(name, None) is not None:
            self._unload_if_idle(t)

    # -- consumers --------------------------------------------------------------------------------
    def subscribe(self, topic: PulsarTopic, subscription: str, key: object, sub_type: SubType, *, durable: bool = True,
                  priority: int = 0, name: str = "") -> SubscribeOutcome:
        """``key`` joins ``subscription`` (made if new), refused as Pulsar refuses: an
        Exclusive subscription's second consumer, a consumer of another type."""
        t = self._load(topic)
        sub = t.subscriptions.get(subscription)
        if sub is None:
            sub = t.subscriptions[subscription] = _Subscription(subscription, durable)
        if sub.members:
            if sub.type is not sub_type:
                return SubscribeOutcome.TYPE_MISMATCH
            if sub_type is SubType.EXCLUSIVE:
                return SubscribeOutcome.CONSUMER_BUSY
        sub.type = sub_type
        member = _Member(key, priority, name)
        sub.members.append(member)
        self._where[id(key)] = (t, sub, member)
        return SubscribeOutcome.OK

    def leave(self, key: object) -> None:
        """A consumer closed (or its connection): a reader's subscription goes with it."""
        place = self._where.pop(id(key), None)
        if place is None:
            return
        t, sub, member = place
        sub.members.remove(member)
        if not sub.members and not sub.durable:
            del t.subscriptions[sub.name]
            self._unload_if_idle(t)

    def unsubscribe(self, key: object) -> SubscribeOutcome:
        """UNSUBSCRIBE: the subscription goes, when ``key`` is its only consumer."""
        place = self._where.get(id(key))
        if place is None:
            return SubscribeOutcome.NOT_SUBSCRIBED
        t, sub, _ = place
        if len(sub.members) > 1:
            return SubscribeOutcome.OTHER_CONSUMERS
        del self._where[id(key)]
        del t.subscriptions[sub.name]
        self._unload_if_idle(t)
        return SubscribeOutcome.OK

    def flow(self, key: object, permits: int) -> None:
        place = self._where.get(id(key))
        if place is not None:
            place[2].permits += permits

    def permits(self, key: object) -> int | None:
        place = self._where.get(id(key))
        return place[2].permits if place is not None else None

    # -- publishing -------------------------------------------------------------------------------
    def publish(self, topic: str, messages: int, size: int, sticky_key: bytes,
                ready: Callable[[object], bool]) -> list[tuple[object, str]]:
        """A message (``messages``: a batch's count) published now: the consumers to give it
        to, with their subscriptions' names, one per subscription that has one able to take
        it (permits left, and ``ready``: room on its connection); the others drop it."""
        t = self._topics.get(topic)
        if t is None:
            return []
        t.msg_in += messages
        t.bytes_in += size
        t.entries += 1
        out = []
        for sub in t.subscriptions.values():
            member = self._receiver(t, sub, sticky_key, ready)
            if member is None:
                sub.dropped += messages
                continue
            member.permits -= messages
            member.msg_out += messages
            member.bytes_out += size
            sub.msg_out += messages
            sub.bytes_out += size
            out.append((member.key, sub.name))
        return out

    @staticmethod
    def _receiver(t: _Topic, sub: _Subscription, sticky_key: bytes, ready) -> _Member | None:
        members = sub.members
        if not members:
            return None
        if sub.type is SubType.SHARED:
            able = [m for m in members if m.permits > 0 and ready(m.key)]
            if not able:
                return None
            top = min(m.priority for m in able)
            able = [m for m in able if m.priority == top]
            sub.turn += 1
            return able[sub.turn % len(able)]
        if sub.type is SubType.KEY_SHARED:
            chosen = members[zlib.crc32(sticky_key) % len(members)]
        elif sub.type is SubType.FAILOVER:
            # Pulsar's active consumer: by priority, then name, at the partition's index
            ranked = sorted(members, key=lambda m: (m.priority, m.name))
            chosen = ranked[max(t.partition, 0) % len(ranked)]
        else:
            chosen = members[0]
        return chosen if chosen.permits > 0 and ready(chosen.key) else None

    # -- what admin and stats read ----------------------------------------------------------------
    def stats(self, topic: str) -> dict | None:
        """A loaded topic's figures (None: not loaded): counters in and out, producers,
        subscriptions with their consumers and what they dropped."""
        t = self._topics.get(topic)
        if t is None:
            return None
        subs = {}
        for sub in t.subscriptions.values():
            subs[sub.name] = {
                "type": sub.type.name.title() if sub.members else "None", "durable": sub.durable,
                "msg_out": sub.msg_out, "bytes_out": sub.bytes_out, "dropped": sub.dropped,
                "consumers": [(m.name, m.permits, m.msg_out, m.bytes_out) for m in sub.members]}
        return {"msg_in": t.msg_in, "bytes_in": t.bytes_in, "entries": t.entries, "producers": sorted(t.producers), "subscriptions": subs}

    def consumer_stats(self, key: object) -> dict | None:
        place = self._where.get(id(key))
        if place is None:
            return None
        _, sub, member = place
        return {"type": int(sub.type), "permits": member.permits, "unacked": 0, "backlog": 0}
