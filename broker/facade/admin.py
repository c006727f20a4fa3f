"""The name server and the admin's reads and changes of topics, groups, clients and
stored records (the 4.x admin processors, the MQTT bridge, the gRPC front's checks),
and what an embedding program asks of its broker: hooks, a crash, the fault rules'
random source (EmbeddedBroker, the simulator)."""
from __future__ import annotations

from typing import Callable

__all__ = ["AdminDoor"]


class AdminDoor:
    # -- the name server (this broker, or the Cluster it belongs to) -------------------
    def name_route(self, topic: str):
        """The topic's route as the name server answers it (every member's queues)."""
        return self.names.route(topic)

    def name_brokers(self) -> tuple:
        """Every broker the name server knows."""
        return self.names.brokers()

    def advance_cluster_clock(self, ms: int) -> int:
        """Move the (shared) virtual clock by ``ms``, every member ticking on the way."""
        return self.names.advance_clock(ms)

    def flush_cluster(self) -> None:
        """Flush every member (a move of time asked for is written before its reply)."""
        self.names.flush()

    def cluster_changed(self) -> None:
        """Tell the cluster's drivers that members may have queued replies (a re-drive
        stored messages): each writes what its connections have waiting."""
        for fn in getattr(self.names, "after_change", ()):
            fn()

    def cluster(self):
        """The Cluster this broker belongs to (one of its own when it is alone)."""
        from ..cluster import Cluster

        return self.names if isinstance(self.names, Cluster) else Cluster([self])

    # -- topics and groups ------------------------------------------------------------
    def topic_config(self, topic: str):
        """The topic's config (TopicConfig), None for an unknown topic."""
        return self.topics.get(topic)

    def topic_names(self) -> list[str]:
        """Every topic this broker has a config of."""
        return list(self.topics.table)

    def is_system_topic(self, topic: str) -> bool:
        return self.topics.is_system(topic)

    def delete_topic(self, topic: str) -> bool:
        """Forget the topic's config (its records stay in the log); False if unknown."""
        return self.topics.delete(topic)

    def group_config(self, group: str, *, auto_create: bool = True):
        """The group's config (SubscriptionGroupConfig), created with the defaults when
        ``auto_create`` and the broker auto-creates groups; None otherwise."""
        return self.groups.find(group, auto_create=auto_create)

    def group_count(self) -> int:
        return len(self.groups.table)

    def groups_json(self) -> dict:
        """Every group's config as GET_ALL_SUBSCRIPTIONGROUP_CONFIG's body."""
        return self.groups.to_json()

    def delete_group(self, group: str) -> bool:
        """Forget the group's config; False if unknown."""
        return self.groups.delete(group)

    # -- clients ------------------------------------------------------------------------
    def consumer_group(self, group: str):
        """The group's live consumers (ConsumerGroupInfo: channels, subscriptions), None if none."""
        return self.consumers.get(group)

    def producer_channels(self, group: str) -> dict:
        """The producer group's connections (channel -> client id)."""
        return self.producers.get(group) or {}

    # -- stored records and offsets ----------------------------------------------------------
    def queue_entry(self, topic: str, queue_id: int, offset: int):
        """(commit-log offset, size, tags code) of a queue's entry, None if none."""
        return self.store.queue_entry(topic, queue_id, offset)

    def record_at(self, commit_log_offset: int):
        """The stored record (MessageRecord) at a commit-log offset, None if none."""
        return self.store.look_message_by_offset(commit_log_offset)

    def record_bytes_at(self, commit_log_offset: int) -> bytes | None:
        """The raw record starting exactly at a commit-log offset, undecoded; None where
        none starts (the simulator looks for what a crash may have lost in these bytes)."""
        return self.store.read(commit_log_offset)

    def queue_records(self, topic: str, queue_id: int) -> list[bytes]:
        """The raw records of a queue, in queue order (an entry whose record is gone is
        left out): one call for a whole queue, as EmbeddedBroker.messages reads it."""
        store = self.store
        out = []
        for off in range(store.min_offset(topic, queue_id), store.max_offset(topic, queue_id)):
            entry = store.queue_entry(topic, queue_id, off)
            raw = store.read(entry[0]) if entry is not None else None
            if raw is not None:
                out.append(raw)
        return out

    def committed_offsets(self) -> list[str]:
        """The keys (``topic@group``) of every committed offset."""
        return list(self.store.offset_table())

    def stored_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The group's stored offset of a queue (-1 when none)."""
        return self.store.query_offset(group, topic, queue_id)

    def group_offsets(self, group: str, topic: str) -> dict[int, int]:
        """{queue id: the group's stored offset} of every queue of ``topic`` that has one."""
        return {int(q): o for q, o in self.store.offset_table().get(f"{topic}@{group}", {}).items()}

    def commit_log_bounds(self) -> tuple[int, int]:
        """(min, max) physical offsets of the commit log."""
        return self.store.commit_log_min_offset, self.store.commit_log_max_offset

    def write_refusal(self) -> str | None:
        """Why the store refuses writes now (a full disk), None when it takes them."""
        return self.store.write_refusal()

    def stored_queues(self) -> dict:
        """Every stored topic's queue ids (the store's queues())."""
        return self.store.queues()

    # -- hooks of the embedding program ---------------------------------------------------
    def add_flush_hook(self, fn: Callable[[], None]) -> None:
        """``fn()`` at every flush, after the store's (serve keeps a virtual clock's time so)."""
        self.flush_hooks.append(fn)

    def clock_keeper(self):
        """The keeper of a virtual clock's time in this broker's store (virtual_time.py)."""
        from ..virtual_time import ClockKeeper

        return ClockKeeper(self.store, self.clock)

    def crash(self) -> None:
        """Stop as a killed broker process stops: the store writes and syncs nothing
        (MessageStore.crash: every acknowledged put is in the files already; offsets,
        queues and the checkpoint not flushed yet are lost) and releases its directory,
        so that opening it again runs the unclean-shutdown recovery. The core is done:
        a later close() does nothing."""
        self._closed = True
        self.store.crash()

    def reseed_faults(self, rng) -> None:
        """Draw the fault rules' probabilities from ``rng`` (a random.Random) from now on:
        the simulator seeds them from its run's seed (a core's own source is fixed)."""
        self.faults.reseed(rng)

    def flush_log(self) -> None:
        """Write the log to disk now (the MQTT bridge, before it acknowledges a QoS 1 publish)."""
        self.store.flush()
