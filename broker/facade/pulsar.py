"""Pulsar's side of the core for the Pulsar front, its REST admin and the simulator's
Pulsar consumer: partitions and namespaces' topics (pulsar_model/topics.py),
subscriptions and their cursors (pulsar_model/cursors.py), producers' admission
(pulsar_model/producers.py) and compaction (pulsar_model/compaction.py). A
subscription's ``consumer`` is the caller's own key, as the cursors take it."""
from __future__ import annotations

from typing import Callable, NamedTuple

__all__ = ["PulsarDoor", "PulsarAcks"]


class PulsarAcks(NamedTuple):
    """The cursors' acknowledgements, bound once by the Pulsar front (an ack per
    message: no call in between)."""
    ack: Callable               # (consumer, offsets)
    ack_cumulative: Callable    # (consumer, offset)
    ack_part: Callable          # (consumer, offset, mask of the indexes still unacked)


class PulsarDoor:
    # -- topics ------------------------------------------------------------------------
    def pulsar_partitions(self, topic) -> int:
        """The partition count of a (Pulsar-named) topic, 0 when not partitioned."""
        return self.pulsar_topics.partitions(topic)

    def pulsar_topics_of(self, tenant: str, namespace: str) -> list[str]:
        """The persistent topics of a namespace, by their Pulsar names."""
        return self.pulsar_topics.topics_of(tenant, namespace)

    # -- subscriptions -------------------------------------------------------------------
    def pulsar_subscribe(self, group: str, topic: str, consumer, sub_type, **options):
        """A consumer joins a subscription (SubscribeOutcome; options as cursors.subscribe)."""
        return self.subscriptions.subscribe(group, topic, consumer, sub_type, **options)

    def pulsar_create_subscription(self, group: str, topic: str, at: int | None = None) -> bool:
        return self.subscriptions.create(group, topic, at)

    def pulsar_unsubscribe(self, consumer):
        return self.subscriptions.unsubscribe(consumer)

    def pulsar_close(self, consumer) -> None:
        self.subscriptions.close(consumer)

    def pulsar_members(self, consumer) -> tuple[list, object | None]:
        """(the consumers of ``consumer``'s subscription, its active one)."""
        return self.subscriptions.members(consumer)

    def pulsar_flow(self, consumer, permits: int) -> None:
        self.subscriptions.flow(consumer, permits)

    def pulsar_acks(self) -> PulsarAcks:
        subs = self.subscriptions
        return PulsarAcks(subs.ack, subs.ack_cumulative, subs.ack_part)

    def pulsar_redeliver(self, consumer, offsets=None) -> None:
        self.subscriptions.redeliver(consumer, offsets)

    def pulsar_dispatch(self, group: str, topic: str, cost=None, ready=None, sent=None) -> list:
        """What a subscription hands its consumers now (cursors.Dispatch each)."""
        return self.subscriptions.dispatch(group, topic, cost=cost, ready=ready, sent=sent)

    def pulsar_subscriptions_on(self, stored: str) -> list[tuple[str, list]]:
        """Each subscription of a stored topic with its consumers' keys, in the cursors'
        order: what a front's dispatch pump walks."""
        subs = self.subscriptions
        return [(group, subs.consumer_keys(group, topic)) for group, topic in subs.cursors() if topic == stored]

    def pulsar_seek(self, consumer, offset: int) -> list:
        return self.subscriptions.seek(consumer, offset)

    def pulsar_offset_at_time(self, topic: str, time_ms: int) -> int:
        return self.subscriptions.offset_at_time(topic, time_ms)

    def pulsar_last(self, consumer) -> tuple[int, int] | None:
        return self.subscriptions.last(consumer)

    def pulsar_compacted_mask(self, consumer, offset: int) -> int | None:
        return self.subscriptions.compacted_mask(consumer, offset)

    def pulsar_consumer_stats(self, consumer) -> dict | None:
        return self.subscriptions.consumer_stats(consumer)

    def pulsar_redelivery_count(self, group: str, topic: str, offset: int) -> int:
        return self.subscriptions.redelivery_count(group, topic, offset)

    def pulsar_subscription_names(self, topic: str) -> list[str]:
        return self.subscriptions.names(topic)

    def pulsar_cursor_stats(self) -> dict:
        """{(group, topic): counts} of every subscription (the simulator's accounting)."""
        return self.subscriptions.stats()

    # -- producers -------------------------------------------------------------------------
    def pulsar_producer_topic(self, stored: str):
        """The producers' state of a store topic (TopicProducers)."""
        return self.pulsar_producers.topic(stored)

    def attach_pulsar_producer(self, stored: str, key, name: str, mode, topic_epoch: int | None):
        """A producer asks for the topic in its access mode (an Admission)."""
        return self.pulsar_producers.attach(stored, key, name, mode, topic_epoch)

    def detach_pulsar_producer(self, key) -> list:
        """A producer is gone: (waiting producer, its admission) of those that may take the topic now."""
        return self.pulsar_producers.detach(key)

    # -- compaction ----------------------------------------------------------------------
    def pulsar_stored_bytes(self, stored: str, nbytes: int) -> bool:
        """``nbytes`` were stored into a topic with a compaction threshold (True: it compacted)."""
        return self.compaction.grown(stored, nbytes)

    def compact_pulsar_topic(self, stored: str) -> tuple[str, str]:
        """Compact a store topic to its end now; its status."""
        return self.compaction.compact(stored)

    def pulsar_compaction_status(self, stored: str) -> tuple[str, str]:
        return self.compaction.status(stored)

    def pulsar_compacted_view(self, stored: str) -> tuple[int, dict]:
        """(horizon, {offset kept: index mask, None: whole}) of a compacted topic."""
        return self.compaction.kept(stored)
