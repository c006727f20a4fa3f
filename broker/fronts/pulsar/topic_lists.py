"""A namespace's topics for regex subscriptions (issue 41, item 6): GET_TOPICS_OF_NAMESPACE
with the client's pattern and topics hash, and WATCH_TOPIC_LIST watchers, told of every
topic made or deleted in their namespace that matches (WATCH_TOPIC_UPDATE).

As Pulsar's ServerCnx and TopicListService: the pattern is applied to each topic's name
without its domain (``public/default/orders-.*``; a partition as its partitioned topic),
as a whole-name match; a pattern longer than 50 characters
(maxSubscriptionPatternLength) is not applied by GET_TOPICS_OF_NAMESPACE (the answer
says ``filtered: false``) and refuses a watcher. The hash is Pulsar's TopicList.calculateHash:
CRC-32C of the sorted names joined by commas, written as Guava writes a 32-bit hash code
(its four bytes, low first, in hex). A client that sends the hash of the list it has
gets ``changed: false`` and no names when nothing changed.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ...pulsar_model.names import PulsarNameError, parse_topic, pulsar_topic
from . import schema as s
from .frames import crc32c
from .replies import error, frame, success

__all__ = ["topics_hash", "matching", "TopicWatchers", "MAX_PATTERN_LENGTH"]

MAX_PATTERN_LENGTH = 50                     # Pulsar's maxSubscriptionPatternLength


def topics_hash(topics: list[str]) -> str:
    """Pulsar's TopicList.calculateHash of a topic list."""
    return crc32c(",".join(sorted(topics)).encode()).to_bytes(4, "little").hex()


def _compile(pattern: str) -> re.Pattern:
    """A subscription pattern, its domain taken off (TopicList.removeTopicDomainScheme)."""
    prefix, sep, rest = pattern.partition("://")
    if sep:
        if prefix.endswith("non-persistent"):
            prefix = prefix[:-len("non-persistent")]
        elif prefix.endswith("persistent"):
            prefix = prefix[:-len("persistent")]
        else:
            raise ValueError(f"Does not support topic domain: {prefix}")
        pattern = prefix + rest
    return re.compile(pattern)


def matching(topics: list[str], pattern: str) -> list[str]:
    """The topics (full names) whose name, as its partitioned topic and without its domain,
    matches ``pattern`` whole."""
    regex = _compile(pattern)
    out = []
    for name in topics:
        t = parse_topic(name).partitioned_base
        if regex.fullmatch(f"{t.tenant}/{t.namespace}/{t.local}"):
            out.append(name)
    return out


def topics_of_namespace(front, conn, cmd, frame_) -> list[bytes]:
    """GET_TOPICS_OF_NAMESPACE: the namespace's topics of the mode asked (PERSISTENT, the
    default; NON_PERSISTENT: the loaded non-persistent ones; ALL: both), filtered by the
    pattern when one is sent, with their hash."""
    req = cmd.getTopicsOfNamespace
    tenant, _, namespace = req.namespace.partition("/")
    reply = s.BaseCommand(type=s.Type.GET_TOPICS_OF_NAMESPACE_RESPONSE)
    r = reply.getTopicsOfNamespaceResponse
    r.request_id = req.request_id
    topics = front.core.pulsar_topics_of(tenant, namespace) if req.mode != s.TopicsMode.NON_PERSISTENT else []
    if req.mode != s.TopicsMode.PERSISTENT:
        topics += front.core.non_persistent_topics_of(tenant, namespace)
    if req.topics_pattern and len(req.topics_pattern) <= MAX_PATTERN_LENGTH:
        try:
            topics = matching(topics, req.topics_pattern)
        except (re.error, ValueError) as exc:
            return [error(req.request_id, s.ServerError.InvalidTopicName, f"bad topics pattern: {exc}")]
        r.filtered = True
    r.topics_hash = topics_hash(topics)
    if req.topics_hash and req.topics_hash == r.topics_hash:
        r.changed = False
    else:
        r.topics.extend(topics)
    return [frame(reply)]


@dataclass(eq=False)
class _Watcher:
    conn: object
    watcher_id: int
    tenant: str
    namespace: str
    pattern: str
    regex: re.Pattern
    topics: set[str] = field(default_factory=set)


class TopicWatchers:
    """The WATCH_TOPIC_LIST watchers of every connection of a front."""

    def __init__(self, core) -> None:
        self.core = core
        self._all: dict[tuple[object, int], _Watcher] = {}

    def watch(self, conn, cmd) -> list[bytes]:
        req = cmd.watchTopicList
        tenant, _, namespace = req.namespace.partition("/")
        if len(req.topics_pattern) > MAX_PATTERN_LENGTH:
            return [error(req.request_id, s.ServerError.NotAllowedError,
                          f"Unable to create topic list watcher: the pattern is longer than {MAX_PATTERN_LENGTH} "
                          f"characters (maxSubscriptionPatternLength)")]
        try:
            regex = _compile(req.topics_pattern)
        except (re.error, ValueError) as exc:
            return [error(req.request_id, s.ServerError.InvalidTopicName, f"bad topics pattern: {exc}")]
        w = _Watcher(conn, req.watcher_id, tenant, namespace, req.topics_pattern, regex)
        w.topics = set(matching(self.core.pulsar_topics_of(tenant, namespace), req.topics_pattern))
        self._all[(conn, req.watcher_id)] = w
        reply = s.BaseCommand(type=s.Type.WATCH_TOPIC_LIST_SUCCESS)
        r = reply.watchTopicListSuccess
        r.request_id, r.watcher_id, r.topics_hash = req.request_id, req.watcher_id, topics_hash(list(w.topics))
        if req.topics_hash != r.topics_hash:
            r.topic.extend(sorted(w.topics))
        return [frame(reply)]

    def close(self, conn, cmd) -> list[bytes]:
        req = cmd.watchTopicListClose
        self._all.pop((conn, req.watcher_id), None)
        return [success(req.request_id)]

    def drop(self, conn) -> None:
        """A connection closed: its watchers go."""
        for key in [k for k in self._all if k[0] is conn]:
            del self._all[key]

    def changed(self, stored_topics, deleted: bool) -> None:
        """Topics were made or deleted: WATCH_TOPIC_UPDATE to each watcher whose list changed."""
        names = [t.full for t in map(pulsar_topic, stored_topics) if t is not None]
        for w in self._all.values():
            if w.conn.closed:
                continue
            hit = []
            for name in names:
                try:
                    t = parse_topic(name)
                except PulsarNameError:
                    continue
                base = t.partitioned_base
                if (t.tenant, t.namespace) == (w.tenant, w.namespace) and \
                        w.regex.fullmatch(f"{base.tenant}/{base.namespace}/{base.local}") and \
                        (name in w.topics) == deleted:
                    hit.append(name)
            if not hit:
                continue
            if deleted:
                w.topics.difference_update(hit)
            else:
                w.topics.update(hit)
            cmd = s.BaseCommand(type=s.Type.WATCH_TOPIC_UPDATE)
            u = cmd.watchTopicUpdate
            u.watcher_id, u.topics_hash = w.watcher_id, topics_hash(list(w.topics))
            (u.deleted_topics if deleted else u.new_topics).extend(sorted(hit))
            w.conn.outgoing.append(frame(cmd))
