"""What Pulsar's admin REST API does to the core (issue 41, item 1), in the core's terms:
deleting topics with what hangs on them, subscriptions without their consumers (create
at a position, delete, skip, reset by time or id), compaction, and the figures topic
stats and internal stats show. The HTTP front's pulsar_admin.py reads requests into these
calls and writes Pulsar's JSON; PulsarAdminError carries Pulsar's refusals.

Consumers the core detaches from their subscription here (a reset cursor, a deleted
subscription or topic) are handed to the Pulsar front in a PulsarConsumersDetached
notification: it tells them to reconnect, as Pulsar disconnects them.
"""
from __future__ import annotations

from ..notifications import PulsarConsumersDetached
from .compaction import COMPACTION_SUBSCRIPTION
from .names import PulsarTopic, store_group, store_topic
from .topics import TOPIC_IN_USE, PulsarAdminError, partitioned_delete_refusal

__all__ = ["delete_topic", "create_subscription", "delete_subscription", "skip", "reset_cursor", "compact",
           "topic_figures", "subscription_group", "LATEST", "EARLIEST"]

LATEST, EARLIEST = "latest", "earliest"


def subscription_group(name: str) -> str:
    try:
        return store_group(name)
    except ValueError as exc:
        raise PulsarAdminError("precondition", str(exc)) from None


def _existing(core, topic: PulsarTopic) -> str:
    stored = store_topic(topic)
    if core.topics.get(stored) is None:
        raise PulsarAdminError("not_found", "Topic not found")
    return stored


def delete_topic(core, topic: PulsarTopic, force: bool, partitioned: bool) -> None:
    """DELETE a topic (``partitioned``: .../partitions, every partition). Without
    ``force``, refused while a producer or consumer is connected, as Pulsar refuses."""
    pt = core.pulsar_topics
    if partitioned and not pt.partitions(topic):
        raise PulsarAdminError("not_found", "Partitioned topic does not exist")
    if not partitioned and pt.partitions(topic):
        raise PulsarAdminError("conflict", partitioned_delete_refusal(topic))
    names = pt.deletable(topic)
    busy = [n for n in names if core.pulsar_producers.producers_of(n) or
            any(core.subscriptions.connected(g, n) for g in core.subscriptions.names(n))]
    if busy and not force:
        raise PulsarAdminError("precondition", TOPIC_IN_USE)
    detached = []
    for stored in names:
        detached += core.subscriptions.forget_topic(stored)
        core.pulsar_producers.forget_topic(stored)
        core.compaction.forget(stored)
    pt.delete(names)              # (the Pulsar front closes the producers: PulsarTopicsChanged)
    if detached:
        core.notify(PulsarConsumersDetached(tuple(detached)))


def create_subscription(core, topic: PulsarTopic, name: str, at) -> None:
    """PUT .../subscription/{name}: at LATEST, EARLIEST or an offset; the topic is made
    when it does not exist yet (as a consumer's subscribe would)."""
    stored = store_topic(topic)
    core.ensure_pulsar_topic(stored)
    group = subscription_group(name)
    first, end = core.pulsar_topics.first_offset(stored), core.store.max_offset(stored, 0)
    offset = end if at == LATEST else first if at == EARLIEST else at
    if not core.subscriptions.create(group, stored, offset):
        raise PulsarAdminError("conflict", "Subscription already exists for topic")


def delete_subscription(core, topic: PulsarTopic, name: str, force: bool) -> None:
    stored = _existing(core, topic)
    group = subscription_group(name)
    subs = core.subscriptions
    if not subs.exists(group, stored):
        raise PulsarAdminError("not_found", "Subscription not found")
    if subs.connected(group, stored) and not force:
        raise PulsarAdminError("precondition", "Subscription has active connected consumers")
    detached = subs.delete(group, stored) or []
    if detached:
        core.notify(PulsarConsumersDetached(tuple(detached)))


def skip(core, topic: PulsarTopic, name: str, n: int | None) -> None:
    """POST .../skip/{n} (None: skip_all, the whole backlog)."""
    stored = _existing(core, topic)
    if not core.subscriptions.skip(subscription_group(name), stored, n):
        raise PulsarAdminError("not_found", "Subscription not found")


def reset_cursor(core, topic: PulsarTopic, name: str, *, time_ms: int | None = None, offset: int | None = None) -> None:
    """POST .../resetcursor/{timestamp} or .../resetcursor with a message id: the cursor
    goes to the first message published at or after the time, or to the id; its
    consumers are disconnected and come back there."""
    stored = _existing(core, topic)
    subs = core.subscriptions
    at = subs.offset_at_time(stored, time_ms) if time_ms is not None else offset
    detached = subs.reset(subscription_group(name), stored, at)
    if detached is None:
        raise PulsarAdminError("not_found", "Subscription not found")
    if detached:
        core.notify(PulsarConsumersDetached(tuple(detached)))
    core.subscriptions.stored(stored)       # (the cursor moved: whatever waits is dispatched)


def compact(core, topic: PulsarTopic) -> None:
    """PUT .../compaction: the topic (each partition of a partitioned one) is compacted now."""
    stored = store_topic(topic)
    n = core.pulsar_topics.partitions(topic)
    names = [f"{stored}-partition-{i}" for i in range(n)] if n else [_existing(core, topic)]
    for name in names:
        core.compaction.compact(name)


def topic_figures(core, stored: str) -> dict:
    """What the stats endpoints show of one store topic: entries and bytes held, the
    last entry, its producers, each subscription's figures (pulsar_cursors'
    subscription_stats), the compaction horizon, whether deduplication applies."""
    store = core.store
    first, end = core.pulsar_topics.first_offset(stored), store.max_offset(stored, 0)
    size = 0
    for offset in range(first, end):
        entry = store.queue_entry(stored, 0, offset)
        size += entry[1] if entry else 0
    subs = {}
    for group in core.subscriptions.names(stored):
        fig = core.subscriptions.subscription_stats(group, stored)
        if fig is not None:
            subs[group] = fig
    horizon = core.compaction.horizon(stored)
    return {"first": first, "end": end, "size": size, "producers": core.pulsar_producers.producers_of(stored),
            "subscriptions": subs, "compaction_horizon": horizon, "compaction": core.compaction.status(stored),
            "compaction_subscription": COMPACTION_SUBSCRIPTION,
            "dedup": bool(core.pulsar_topics.effective(stored, "deduplicationEnabled")),
            "epoch": core.pulsar_producers.topic(stored).epoch}
