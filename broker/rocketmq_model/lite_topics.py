"""Lite topics (RocketMQ RIP-83): many lightweight sub-topics of one parent topic of type
LITE, one per session, task or agent, and the lite consumers that subscribe to just the
ones they own.

Model, as upstream's broker keeps it: a lite topic is its own queue — stored here as the
topic ``%LMQ%<parent>%<lite>`` of one queue (upstream's LMQ) — made on the first message
sent to it. A lite consumer (LitePushConsumer, LiteSimpleConsumer) binds to the parent and
syncs the set of lite topics it wants (SyncLiteSubscription: add some, remove some, or
the complete set); a receive of that client pops only those queues, for its group, each
in order with a failed message delivered again in place (one queue per lite topic:
upstream's lite pop is an ordered one), up to the group's max deliveries, then to
``%DLQ%<group>``. Subscriptions live in memory: a client that goes away loses them
(upstream's removeCompleteSubscription), and syncs them again when it comes back.

Quotas answered with upstream's codes: a lite topic name of [A-Za-z0-9_-] up to 64
bytes (ILLEGAL_LITE_TOPIC), a broker-wide count of (client, lite topic) subscriptions
(maxLiteSubscriptionCount, LITE_SUBSCRIPTION_QUOTA_EXCEEDED) and of lite topics
(maxLiteTopicCount, LITE_TOPIC_QUOTA_EXCEEDED). A parent with ``lite.topic.expiration``
(minutes, -1 never) drops a lite topic nobody wrote to for that long, on the broker's
clock, and tells each subscriber (NotifyUnsubscribeLiteCommand), as upstream's
cleanSubscription does. In a group with ``lite.sub.model=Exclusive`` a lite topic one
client adds (a partial add; a complete sync takes nothing) is taken from the group's other
clients that had it, each told so (upstream's excludeClientByLmqName).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..config import PERM_READ, PERM_WRITE
from .message_types import LITE, LITE_EXPIRATION_ATTRIBUTE

__all__ = ["LiteTopics", "LiteSyncOutcome", "LITE_PREFIX", "MAX_LITE_TOPIC_SIZE", "LITE_SUBSCRIPTION_QUOTA",
           "store_topic", "split_store_topic", "lite_topic_problem", "PARTIAL_ADD", "PARTIAL_REMOVE",
           "COMPLETE_ADD", "COMPLETE_REMOVE", "LITE_SUB_MODEL_ATTRIBUTE", "EXCLUSIVE"]

LITE_PREFIX = "%LMQ%"
MAX_LITE_TOPIC_SIZE = 64            # the proxy's maxLiteTopicSize (bytes)
LITE_SUBSCRIPTION_QUOTA = 1200      # a client's own quota the Settings give it (the Java client's default)
# SyncLiteSubscription's actions (LiteSubscriptionAction)
PARTIAL_ADD, PARTIAL_REMOVE, COMPLETE_ADD, COMPLETE_REMOVE = 0, 1, 2, 3
LITE_SUB_MODEL_ATTRIBUTE = "lite.sub.model"   # a group's attribute: Shared (the default) or Exclusive
EXCLUSIVE = "Exclusive"
_SWEEP_MS = 60_000                  # how often idle lite topics are looked for (while there are any)


class LiteSyncOutcome:
    OK = "ok"
    TOPIC_NOT_EXIST = "topic does not exist"
    NOT_LITE = "not a LITE topic"
    GROUP_NOT_EXIST = "group does not exist"
    ILLEGAL_LITE_TOPIC = "illegal lite topic"
    QUOTA_EXCEEDED = "lite subscription quota exceeded"


def store_topic(parent: str, lite: str) -> str:
    """The stored topic of a lite topic (its one queue)."""
    return f"{LITE_PREFIX}{parent}%{lite}"


def split_store_topic(stored: str) -> tuple[str, str] | None:
    """(parent, lite) of a lite topic's stored name, None for any other topic."""
    if not stored.startswith(LITE_PREFIX):
        return None
    parent, sep, lite = stored[len(LITE_PREFIX):].rpartition("%")
    return (parent, lite) if sep and parent and lite else None


def lite_topic_problem(name: str) -> str | None:
    """Why a lite topic name is refused (the proxy's validateLiteTopic), None if it is fine."""
    if not name.strip():
        return "lite topic cannot be the char sequence of whitespace"
    if len(name.encode()) > MAX_LITE_TOPIC_SIZE:
        return f"lite topic exceed the max size {MAX_LITE_TOPIC_SIZE}"
    if not all(c.isascii() and (c.isalnum() or c in "-_") for c in name):
        return "lite topic can only contain alphanumeric characters, hyphens(-), and underscores(_)"
    return None


@dataclass(slots=True)
class _Subscription:
    group: str
    parent: str
    lites: set[str] = field(default_factory=set)


class LiteTopics:
    def __init__(self, topics, config, clock, call_later) -> None:
        """``topics``: the core's TopicManager (a lite topic's queue is a topic config of
        its own, kept with the others); ``call_later``: the core's timer, for the sweep
        of idle lite topics (armed only while a parent can expire any)."""
        self.topics = topics
        self.config = config
        self.clock = clock
        self.call_later = call_later
        self._subs: dict[str, _Subscription] = {}            # client id -> its lite subscription
        self._written: dict[str, int] = {}                    # stored name -> last write (ms)
        self._sweeping = False
        now = clock.now_ms()
        for name in list(topics.table):
            if split_store_topic(name) is not None:
                self._written[name] = now

    # -- sending ---------------------------------------------------------------------------
    def destination(self, parent: str, lite: str) -> tuple[str, str | None]:
        """(stored topic, refusal): the lite topic's queue, made on its first message."""
        stored = store_topic(parent, lite)
        if stored not in self._written:
            if len(self._written) >= self.config.max_lite_topic_count:
                return stored, f"lite topic quota exceeded {self.config.max_lite_topic_count}"
            self.topics.create_system(stored, 1, PERM_READ | PERM_WRITE)
        self._written[stored] = self.clock.now_ms()
        self._arm()
        return stored, None

    # -- subscriptions --------------------------------------------------------------------
    def sync(self, client: str, group: str, parent: str, action: int, names,
             exclusive: bool = False) -> tuple[str, str]:
        """SyncLiteSubscription of one client: (outcome, why). ``exclusive``: the group's
        lite.sub.model is Exclusive."""
        tc = self.topics.get(parent)
        if tc is None:
            return LiteSyncOutcome.TOPIC_NOT_EXIST, f"topic {parent} not found"
        if tc.message_type != LITE:
            return LiteSyncOutcome.NOT_LITE, f"topic {parent} is not a LITE topic (message.type={tc.message_type})"
        for name in names:
            why = lite_topic_problem(name)
            if why is not None:
                return LiteSyncOutcome.ILLEGAL_LITE_TOPIC, why
        sub = self._subs.get(client)
        if sub is None or sub.group != group or sub.parent != parent:
            sub = _Subscription(group, parent)
        wanted = set(names)
        if action == PARTIAL_ADD:
            after = sub.lites | wanted
        elif action == PARTIAL_REMOVE:
            after = sub.lites - wanted
        elif action == COMPLETE_ADD:
            after = wanted
        else:                                                 # COMPLETE_REMOVE: the client's whole set
            after = set()
        added = len(after - sub.lites) - len(sub.lites - after)
        limit = self.config.max_lite_subscription_count
        current = self.subscription_count()
        if added > 0 and current + added > limit:
            return LiteSyncOutcome.QUOTA_EXCEEDED, (f"lite subscription quota exceeded {limit}, current: {current}, "
                                                    f"would add: {added}")
        sub.lites = after
        self._subs[client] = sub
        if exclusive and action == PARTIAL_ADD:
            self._exclude(client, sub, wanted)
        return LiteSyncOutcome.OK, "OK"

    def _exclude(self, client: str, sub: _Subscription, lites: set[str]) -> None:
        """Exclusive mode: the group's other clients lose ``lites`` of ``sub.parent``, each told."""
        ended = []
        for other, theirs in self._subs.items():
            if other == client or theirs.group != sub.group or theirs.parent != sub.parent:
                continue
            for lite in sorted(theirs.lites & lites):
                theirs.lites.discard(lite)
                ended.append((other, theirs.group, lite))
        if ended and self.on_unsubscribed is not None:
            self.on_unsubscribed(ended)

    def forget(self, client: str) -> None:
        self._subs.pop(client, None)

    def subscribed(self, client: str, group: str, parent: str) -> list[str] | None:
        """The stored topics a receive of this client pops (None: not a lite subscriber of
        this group and parent)."""
        sub = self._subs.get(client)
        if sub is None or sub.group != group or sub.parent != parent:
            return None
        return [store_topic(parent, lite) for lite in sorted(sub.lites)]

    def subscription_count(self) -> int:
        return sum(len(s.lites) for s in self._subs.values())

    # -- views -------------------------------------------------------------------------------
    def of_parent(self, parent: str) -> list[tuple[str, int]]:
        """(lite topic, last write ms) of a parent's lite topics."""
        out = []
        for stored, written in self._written.items():
            pair = split_store_topic(stored)
            if pair is not None and pair[0] == parent:
                out.append((pair[1], written))
        return sorted(out)

    def subscriptions_of(self, group: str) -> dict[str, tuple[str, list[str]]]:
        """client id -> (parent, its lite topics) of a group's lite consumers."""
        return {client: (s.parent, sorted(s.lites)) for client, s in sorted(self._subs.items()) if s.group == group}

    def census(self) -> tuple[dict[str, int], dict[str, int]]:
        """(parent -> its lite topics, group -> its (client, lite topic) subscriptions)."""
        parents: dict[str, int] = {}
        for stored in self._written:
            parent = split_store_topic(stored)[0]
            parents[parent] = parents.get(parent, 0) + 1
        groups: dict[str, int] = {}
        for sub in self._subs.values():
            groups[sub.group] = groups.get(sub.group, 0) + len(sub.lites)
        return parents, groups

    def counts(self) -> tuple[int, int]:
        """(lite topics, lite subscriptions) on this broker."""
        return len(self._written), self.subscription_count()

    # -- expiry -------------------------------------------------------------------------------
    def _arm(self) -> None:
        if not self._sweeping:
            self._sweeping = True
            self.call_later(_SWEEP_MS, self._sweep)

    def _sweep(self) -> None:
        self._sweeping = False
        self.expire(self.clock.now_ms())
        if self._written:
            self._arm()

    def expire(self, now: int) -> list[tuple[str, str, str]]:
        """Drop the lite topics idle past their parent's lite.topic.expiration; returns
        (client, group, lite) of each subscription that ended so, for the front to notify."""
        ended = []
        for stored, written in list(self._written.items()):
            parent, lite = split_store_topic(stored)
            minutes = self._expiration(parent)
            if minutes < 0 or now - written < minutes * 60_000:
                continue
            del self._written[stored]
            self.topics.table.pop(stored, None)
            for client, sub in self._subs.items():
                if sub.parent == parent and lite in sub.lites:
                    sub.lites.discard(lite)
                    ended.append((client, sub.group, lite))
        if ended and self.on_unsubscribed is not None:
            self.on_unsubscribed(ended)
        return ended

    on_unsubscribed = None      # fn([(client, group, lite)]): the core tells the fronts

    def _expiration(self, parent: str) -> int:
        tc = self.topics.get(parent)
        raw = tc.attributes.get(LITE_EXPIRATION_ATTRIBUTE) if tc is not None else None
        return int(raw) if raw is not None else -1
