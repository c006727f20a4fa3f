"""Pulsar-style subscriptions on the core: a cursor per (subscription, topic), consumers
with permits, dispatch by subscription type, individual and cumulative acks, and
redelivery with a count (issue 21; reference pulsar-protocol.md §5; seeds 000, 001, 003).

Theory of operation. A subscription is a consumer group of the store reading one queue
(a Pulsar topic is one ordered log: names.py). Its cursor is Pulsar's: the *mark-delete
position* — everything below it is acknowledged — plus the offsets acknowledged one by one
above it. The group's committed offset (the consumerOffset table 4.x uses) is the
mark-delete position + 1, so it only moves past a message once that message and every
one before it are acknowledged: the ProcessQueue minimum-offset commit, the same rule.

Dispatch hands each consumer at most as many messages as it has permits (FLOW). The
*read position* is the next offset never dispatched; messages to send again (negative
acks, REDELIVER_UNACKNOWLEDGED_MESSAGES, a consumer gone) wait in the *replay* set and go
first, each with its redelivery count + 1. Exclusive and Failover subscriptions dispatch
to one active consumer (the first by priority level, then by arrival; when another takes
its place, what it held is sent again to the new one, count unchanged); Shared to the
attached consumers in turn; Key_Shared by the message's key (a hash over the consumers
attached), so one key's messages go to one consumer in order, waiting for its permits.

Persistence. The mark-delete position is the committed offset (flushed with the other
offsets). The individual acks above it and the redelivery counts are saved at each flush
in config/subscriptions.json, so a restart neither redelivers what was acknowledged nor
resets a count — seed 003 names that loss as a flaw of Pulsar. The broker setting
``redelivery_count_in_memory`` restores Pulsar's behaviour: both live in memory only.

Batch-index acks: a stored entry may hold several messages (a Pulsar batch). A consumer
that acknowledges some of them leaves the entry *partly* acknowledged: the cursor keeps,
per offset, the mask of indexes still unacknowledged (bit i set: index i is not), the AND
of every mask acknowledged so far; the entry counts as acknowledged when it reaches 0.
Sent again, the entry carries its mask (the client skips the acknowledged indexes) and
costs only the permits of the indexes left. Saved with the individual acks.

Delayed delivery: a Shared or Key_Shared subscription that reads a message due later
keeps it in its *delayed* heap; ``tick`` moves what has come due into the replay set and
tells the fronts (a DispatchReady notification: the Pulsar front pumps), on the core's one
clock, so `clock advance` moves it.
The core tells them too of every store into a topic some subscription reads (``stored``):
whoever stored it, a Pulsar producer, a 4.x or 5.x client, a delayed message come due.
Exact by default; ``delayed_delivery_tick_time_millis`` (delayedDeliveryTickTimeMillis)
gives Pulsar's tolerance: due within a tick is not held, and held ones go a tick early.
"""
from __future__ import annotations

import enum
import heapq
from collections import Counter
import zlib
from dataclasses import dataclass, field

from rocketmq_emulator.store.accounting import PULSAR_CHUNK_PROPERTY

from ..views.delivery_log import DISPATCH, PULSAR_ACK, PULSAR_NACK
from ..notifications import DispatchReady
from ..views.rates import RETRIED
from ..retry_lifecycle import pulsar_redelivery

__all__ = ["SubscriptionService", "SubType", "Dispatch", "SubscribeOutcome", "DELIVER_AT_PROPERTY",
           "KEY_PROPERTY", "CHUNK_OFFSETS_PROPERTY", "PULSAR_CHUNK_PROPERTY"]

# A record with this property (epoch ms) is held back from Shared and Key_Shared
# subscriptions until then, and costs no permit meanwhile; Exclusive and Failover ones get
# it at once — Pulsar's delayed delivery (reference §8). Strict: due means now >= it.
DELIVER_AT_PROPERTY = "PULSAR_DELIVER_AT"
# A Key_Shared subscription sends all messages with the same value of this property (the
# message's key; none is a key of its own) to the same consumer, in order.
KEY_PROPERTY = "PULSAR_KEY"
# A chunked message is stored one record per chunk, each with PULSAR_CHUNK "<i>/<n>"; its
# last chunk also lists the offsets of all its chunks here ("12,13,14"): sent again, a
# chunk goes with the chunks of its message a consumer holds (the client can only put
# them together from all of them).
CHUNK_OFFSETS_PROPERTY = "PULSAR_CHUNK_OFFSETS"
SUBSCRIPTIONS_CONFIG = "subscriptions"       # config/subscriptions.json
# What analytics reads of each subscription (store/accounting.py redelivery_stats): counted
# redeliveries, messages redelivered at least once, the highest count reached. Kept and
# saved in either mode of the count: they describe the run, not the cursor.
STATS = ("redeliveries", "redelivered_messages", "max_redelivery_count")


class SubType(enum.IntEnum):
    EXCLUSIVE = 0
    SHARED = 1
    FAILOVER = 2
    KEY_SHARED = 3


_TYPE_NAMES = {SubType.EXCLUSIVE: "Exclusive", SubType.SHARED: "Shared", SubType.FAILOVER: "Failover",
               SubType.KEY_SHARED: "Key_Shared"}


class SubscribeOutcome(enum.Enum):
    OK = "ok"
    CONSUMER_BUSY = "an exclusive subscription already has a consumer"
    TYPE_MISMATCH = "the subscription is of another type"
    TOPIC_NOT_EXIST = "topic does not exist"
    NOT_SUBSCRIBED = "the consumer is not subscribed"
    OTHER_CONSUMERS = "unconnected or shared consumer attempting to unsubscribe"     # Pulsar's words


@dataclass(frozen=True, slots=True)
class Dispatch:
    """One message to send: to ``consumer``, the stored ``record`` at ``offset``."""
    consumer: object
    offset: int
    record: object
    redelivery_count: int
    unacked_mask: int | None = None          # a partly acknowledged batch: bit i set = index i not yet


@dataclass(slots=True)
class _Consumer:
    key: object
    priority: int = 0                                     # lower is preferred (Pulsar's priority level)
    permits: int = 0
    pending: set[int] = field(default_factory=set)        # dispatched to it, not acknowledged
    label: str = ""                                       # who it is, as the front names it (dashboard)


@dataclass(slots=True)
class _Cursor:
    group: str
    topic: str
    sub_type: SubType
    mark_delete: int                                      # every offset below is acknowledged
    read: int                                             # next offset never dispatched
    acked: set[int] = field(default_factory=set)          # acknowledged one by one, >= mark_delete
    partial: dict[int, int] = field(default_factory=dict)  # offset -> mask of its indexes not acknowledged
    replay: set[int] = field(default_factory=set)         # to dispatch again first
    redeliveries: dict[int, int] = field(default_factory=dict)
    consumers: list[_Consumer] = field(default_factory=list)
    turn: int = 0                                         # Shared: who is next
    delayed: list[tuple[int, int]] = field(default_factory=list)   # heap of (due ms, offset)
    durable: bool = True                                  # False: a reader's, nothing committed
    compacted: bool = False                               # readCompacted: below the horizon, the compacted view
    stats: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STATS, 0))
    out: int = 0                                          # messages dispatched (msgOutCounter), this run
    reached: dict[int, int] = field(default_factory=dict)  # redelivery count n -> messages that reached it

    @property
    def holds_back(self) -> bool:
        return self.sub_type in (SubType.SHARED, SubType.KEY_SHARED)


class SubscriptionService:
    def __init__(self, store, clock, config, topics, offsets, notify, first_offset=None, compaction=None,
                 deliveries=None, rates=None) -> None:
        """``offsets``: the core's OffsetBook (a durable cursor's mark-delete position is
        its group's offset); ``notify``: the core's Notifier (DispatchReady);
        ``first_offset(topic)``: where a topic's live records begin (a topic deleted and
        made again starts past its old records: pulsar_topics.py); ``compaction``: the
        core's pulsar_compaction.Compaction (readCompacted cursors); ``deliveries`` and
        ``rates``: its DeliveryLog and RateRing (dispatches, acks and redeliveries are
        told there)."""
        self.store = store
        self.first_offset = first_offset if first_offset is not None else (lambda topic: store.min_offset(topic, 0))
        self.compaction = compaction
        self.clock = clock
        self.config = config
        self.topics_config = topics
        self.offsets = offsets
        self.notify = notify
        self.deliveries = deliveries
        self.rates = rates
        self._cursors: dict[tuple[str, str], _Cursor] = {}
        self._of: dict[object, _Cursor] = {}              # consumer key -> its cursor
        self.topics: dict[str, int] = {}                  # topic -> its subscriptions (the core looks here)
        self._dirty = False                               # acks or counts changed since the last save
        self._saved = None                                # config/subscriptions.json as loaded

    # -- consumers ------------------------------------------------------------------------
    def subscribe(self, group: str, topic: str, consumer, sub_type: SubType, *, earliest: bool = False,
                  durable: bool = True, start: int | None = None, priority: int = 0,
                  read_compacted: bool = False, label: str = "") -> SubscribeOutcome:
        """A consumer joins ``group``'s subscription of ``topic`` (made if new: where the
        group's committed offset says, else at the start or the end). A non-durable one (a
        reader) starts at ``start`` (clamped to the queue), keeps no committed offset and
        is gone when its consumer leaves. Consumers are kept in order of ``priority``, then
        of arrival: a Failover subscription's active consumer is the first. With
        ``read_compacted`` the subscription reads the compacted view below the compaction
        horizon (pulsar_compaction.py). ``label``: the consumer's name as its front gives
        it (shown by the dashboard)."""
        if self.topics_config.get(topic) is None:
            return SubscribeOutcome.TOPIC_NOT_EXIST
        cursor = self._cursors.get((group, topic))
        if cursor is None:
            if durable:
                cursor = self._load(group, topic, sub_type, start, earliest)
            else:
                at = self._clamp(topic, start) if start is not None else None
                cursor = self._new(group, topic, sub_type, at, earliest, durable=False)
        elif cursor.consumers and cursor.sub_type is not sub_type:
            return SubscribeOutcome.TYPE_MISMATCH
        elif cursor.consumers and sub_type is SubType.EXCLUSIVE:
            return SubscribeOutcome.CONSUMER_BUSY
        cursor.sub_type = sub_type
        cursor.compacted = read_compacted
        if not cursor.holds_back:
            self._release(cursor, None)        # (what was held back for Shared goes out now)
        if consumer not in self._of:
            at = next((i for i, c in enumerate(cursor.consumers) if c.priority > priority), len(cursor.consumers))
            if at == 0 and cursor.consumers and not cursor.holds_back:
                self._back(cursor, cursor.consumers[0].pending, count=False)    # a new active consumer
            cursor.consumers.insert(at, _Consumer(consumer, priority, label=label))
            self._of[consumer] = cursor
        else:       # the same consumer again (a client re-subscribing): its FLOW starts from zero
            self._consumer(consumer).permits = 0
        return SubscribeOutcome.OK

    def create(self, group: str, topic: str, at: int | None = None) -> bool:
        """A subscription with no consumer yet, at ``at`` (clamped to the topic; None: its
        start — what a producer's initial subscription does, before the producer is
        acknowledged: everything the topic holds waits for it). False when it exists."""
        if self.exists(group, topic):
            return False
        self.offsets.commit(group, topic, 0, self._clamp(topic, at) if at is not None else self.first_offset(topic))
        return True

    def exists(self, group: str, topic: str) -> bool:
        """Whether ``group`` has a subscription of ``topic`` (loaded, or its saved cursor)."""
        return (group, topic) in self._cursors or self.store.query_offset(group, topic, 0) >= 0

    def names(self, topic: str) -> list[str]:
        """The groups that have a subscription of ``topic``: saved cursors and readers'."""
        found = {g for g, t in self._cursors if t == topic}
        for key in self.store.offset_table():
            t, _, g = key.rpartition("@")
            if t == topic:
                found.add(g)
        return sorted(found)

    def _load(self, group: str, topic: str, sub_type: SubType = SubType.EXCLUSIVE, start: int | None = None,
              earliest: bool = False) -> _Cursor:
        """A durable subscription's cursor: as loaded, or read back from its committed
        offset and saved acks, or new (at ``start``, else the start or the end)."""
        cursor = self._cursors.get((group, topic))
        if cursor is not None:
            return cursor
        committed = self.store.query_offset(group, topic, 0)
        if committed < 0:
            return self._new(group, topic, sub_type, self._clamp(topic, start) if start is not None else None, earliest)
        cursor = self._new(group, topic, sub_type, max(committed, self.first_offset(topic)), earliest)
        self._restore(cursor)
        return cursor

    def _new(self, group: str, topic: str, sub_type: SubType, at: int | None, earliest: bool,
             durable: bool = True) -> _Cursor:
        if at is None:
            at = self.first_offset(topic) if earliest else self.store.max_offset(topic, 0)
        cursor = self._cursors[(group, topic)] = _Cursor(group, topic, sub_type, at, at, durable=durable)
        self.topics[topic] = self.topics.get(topic, 0) + 1
        self._commit(cursor)
        return cursor

    def _clamp(self, topic: str, offset: int) -> int:
        return min(max(offset, self.first_offset(topic)), self.store.max_offset(topic, 0))

    def flow(self, consumer, permits: int) -> None:
        c = self._consumer(consumer)
        if c is not None:
            c.permits += max(permits, 0)

    def close(self, consumer) -> None:
        """A consumer left: what it held is delivered again, its count unchanged (Pulsar
        does not count a disconnect as a redelivery)."""
        cursor = self._of.pop(consumer, None)
        if cursor is None:
            return
        c = next(x for x in cursor.consumers if x.key is consumer)
        cursor.consumers.remove(c)
        self._back(cursor, c.pending, count=False)
        if not cursor.durable and not cursor.consumers:
            self._drop(cursor)
        elif not cursor.consumers and self.config.redelivery_count_in_memory:
            cursor.redeliveries.clear()        # Pulsar forgets them when the last consumer leaves

    def unsubscribe(self, consumer) -> SubscribeOutcome:
        """Delete ``consumer``'s subscription: its cursor, committed offset and saved acks and
        counts. Refused while other consumers are attached to it, as Pulsar refuses."""
        cursor = self._of.get(consumer)
        if cursor is None:
            return SubscribeOutcome.NOT_SUBSCRIBED
        if any(c.key is not consumer for c in cursor.consumers):
            return SubscribeOutcome.OTHER_CONSUMERS
        del self._of[consumer]
        self._drop(cursor)
        if cursor.durable:
            self.offsets.delete(cursor.group, cursor.topic)
            if self._loaded().pop(f"{cursor.topic}@{cursor.group}", None) is not None:
                self._dirty = True
        return SubscribeOutcome.OK

    def seek(self, consumer, offset: int) -> list:
        """Reset ``consumer``'s subscription to ``offset`` (clamped to the queue): nothing
        before it is delivered again, everything from it is. Its consumers are detached
        (the front tells them to reconnect, as Pulsar does); returns their keys."""
        cursor = self._of.get(consumer)
        if cursor is None:
            return []
        return self._reset(cursor, offset)

    def _reset(self, cursor: _Cursor, offset: int) -> list:
        at = self._clamp(cursor.topic, offset)
        detached = [c.key for c in cursor.consumers]
        for key in detached:
            self._of.pop(key, None)
        cursor.consumers.clear()
        cursor.mark_delete = cursor.read = at
        cursor.acked.clear()
        cursor.partial.clear()
        cursor.replay.clear()
        cursor.delayed.clear()
        cursor.redeliveries.clear()
        self._commit(cursor)
        return detached

    def offset_at_time(self, topic: str, time_ms: int) -> int:
        """The first offset of ``topic`` published at or after ``time_ms`` (its end if none):
        Pulsar seeks by the messages' publish time (their born time here, which a Pulsar
        producer sets to its publish_time), not by when the broker stored them."""
        store = self.store
        lo, hi = self.first_offset(topic), store.max_offset(topic, 0)
        while lo < hi:                                  # publish times grow with the offset
            mid = (lo + hi) // 2
            rec = store.record_at(topic, 0, mid)
            if rec is not None and rec.born_timestamp < time_ms:
                lo = mid + 1
            else:
                hi = mid
        return lo

    # -- subscriptions without their consumers (the admin API) ---------------------------------------
    def reset(self, group: str, topic: str, offset: int) -> list | None:
        """Reset a subscription's cursor to ``offset`` (resetcursor): its consumers are
        detached (told to reconnect) and returned; None when there is no such subscription."""
        if not self.exists(group, topic):
            return None
        cursor = self._load(group, topic)
        for c in cursor.consumers:
            self._of.pop(c.key, None)
        return self._reset(cursor, offset)

    def skip(self, group: str, topic: str, n: int | None) -> bool:
        """Acknowledge the first ``n`` messages of the backlog (None: all of it). False
        when there is no such subscription."""
        if not self.exists(group, topic):
            return False
        cursor = self._load(group, topic)
        end = self.store.max_offset(topic, 0)
        o = cursor.mark_delete
        left = end - o if n is None else n
        picked = []
        while left > 0 and o < end:
            if o not in cursor.acked:
                picked.append(o)
                left -= 1
            o += 1
        for offset in picked:
            cursor.acked.add(offset)
            self._forget(cursor, offset)
        self._advance(cursor)
        cursor.read = max(cursor.read, cursor.mark_delete)
        return True

    def delete(self, group: str, topic: str) -> list | None:
        """Delete a subscription whatever holds it (unsubscribe with force): returns the
        consumers it had (the front closes them), None when there was none."""
        if not self.exists(group, topic):
            return None
        cursor = self._load(group, topic)
        keys = [c.key for c in cursor.consumers]
        for key in keys:
            self._of.pop(key, None)
        self._drop(cursor)
        self.offsets.delete(group, topic)
        if self._loaded().pop(f"{topic}@{group}", None) is not None:
            self._dirty = True
        return keys

    def connected(self, group: str, topic: str) -> list:
        """The consumers attached to a subscription (Pulsar refuses some admin requests
        while there are any)."""
        return self.consumer_keys(group, topic)

    def forget_topic(self, topic: str) -> list:
        """A deleted topic: every subscription of it goes; returns the consumers it had."""
        keys = []
        for group in self.names(topic):
            keys += self.delete(group, topic) or []
        return keys

    def subscription_stats(self, group: str, topic: str) -> dict | None:
        """One subscription as Pulsar's stats show it: type, backlog, consumers (key,
        permits, unacked), whether durable, what was dispatched and redelivered."""
        if not self.exists(group, topic):
            return None
        cursor = self._cursors.get((group, topic))
        end = self.store.max_offset(topic, 0)
        if cursor is None:                  # (a saved cursor, not loaded: its committed offset)
            at = max(self.store.query_offset(group, topic, 0), self.first_offset(topic))
            return {"type": "Exclusive", "backlog": max(end - at, 0), "consumers": [], "durable": True,
                    "out": 0, "mark_delete": at, "read": at, "acked": [], "stats": {}}
        return {"type": _TYPE_NAMES[cursor.sub_type],
                "backlog": max(end - cursor.mark_delete, 0) - len(cursor.acked),
                "consumers": [(c.key, c.permits, len(c.pending)) for c in cursor.consumers],
                "durable": cursor.durable, "out": cursor.out, "mark_delete": cursor.mark_delete,
                "read": cursor.read, "acked": sorted(cursor.acked), "stats": dict(cursor.stats)}

    def last(self, consumer) -> tuple[int, int] | None:
        """(last offset of the consumer's topic or -1 when empty, its mark-delete position).
        For a readCompacted cursor whose topic ends below the compaction horizon, the last
        offset compaction kept (what it can read), as Pulsar answers it."""
        cursor = self._of.get(consumer)
        if cursor is None:
            return None
        end = self.store.max_offset(cursor.topic, 0)
        last = end - 1 if end > self.first_offset(cursor.topic) else -1
        if cursor.compacted and self.compaction is not None and last >= 0:
            horizon, kept = self.compaction.kept(cursor.topic)
            if last < horizon:
                last = max(kept, default=-1)
        return last, cursor.mark_delete

    def compacted_mask(self, consumer, offset: int) -> int | None:
        """Of a batch a readCompacted cursor reads below the horizon, the indexes kept
        (None: the whole entry)."""
        cursor = self._of.get(consumer)
        if cursor is None or not cursor.compacted or self.compaction is None:
            return None
        horizon, kept = self.compaction.kept(cursor.topic)
        return kept.get(offset) if offset < horizon else None

    # -- acknowledgements -----------------------------------------------------------------
    def ack(self, consumer, offsets) -> None:
        cursor = self._of.get(consumer)
        if cursor is None:
            return
        log = self.deliveries
        now = self.clock.now_ms() if log is not None else 0
        for offset in offsets:
            if offset >= cursor.mark_delete:
                cursor.acked.add(offset)
            self._forget(cursor, offset)
            if log is not None:
                log.one(now, PULSAR_ACK, cursor.group, cursor.topic, 0, offset)
        self._advance(cursor)

    def ack_part(self, consumer, offset: int, unacked_mask: int) -> None:
        """A batch-index ack: of the entry at ``offset``, the indexes whose bit is clear in
        ``unacked_mask`` are acknowledged. The entry is acknowledged once none is left."""
        cursor = self._of.get(consumer)
        if cursor is None or offset < cursor.mark_delete or offset in cursor.acked:
            return
        left = cursor.partial.get(offset, unacked_mask) & unacked_mask
        if left == 0:
            self.ack(consumer, [offset])
        else:
            cursor.partial[offset] = left
            self._dirty = True

    def ack_cumulative(self, consumer, offset: int) -> None:
        """Everything up to and including ``offset`` (Exclusive and Failover only)."""
        cursor = self._of.get(consumer)
        if cursor is None or offset < cursor.mark_delete:
            return
        for o in [o for c in cursor.consumers for o in c.pending if o <= offset] + \
                [o for o in cursor.replay if o <= offset]:
            self._forget(cursor, o)
        cursor.acked = {o for o in cursor.acked if o > offset}
        cursor.partial = {o: m for o, m in cursor.partial.items() if o > offset}
        if self.deliveries is not None:
            self.deliveries.span(self.clock.now_ms(), PULSAR_ACK, cursor.group, cursor.topic, 0, cursor.mark_delete,
                                 offset + 1)
        cursor.mark_delete = offset + 1
        cursor.read = max(cursor.read, cursor.mark_delete)
        self._advance(cursor)

    def redeliver(self, consumer, offsets=None) -> None:
        """Negative acks and REDELIVER_UNACKNOWLEDGED_MESSAGES: the given offsets (None:
        all this consumer holds) are dispatched again with their count + 1."""
        cursor = self._of.get(consumer)
        c = self._consumer(consumer)
        if cursor is None or c is None:
            return
        chosen = set(c.pending) if offsets is None else {o for o in offsets if o in c.pending}
        if offsets is not None:
            chosen |= self._chunk_siblings(cursor, chosen) & c.pending
        # (Pulsar keeps no count for Exclusive and Failover: its fidelity setting does the same)
        counted = cursor.holds_back or not self.config.redelivery_count_in_memory
        self._back(cursor, chosen, count=counted)

    def _chunk_siblings(self, cursor: _Cursor, offsets) -> set[int]:
        """The other chunks of the chunked messages whose last chunk is in ``offsets``."""
        out: set[int] = set()
        store = self.store
        for o in offsets:
            rec = store.record_at(cursor.topic, 0, o)
            listed = rec.properties.get(CHUNK_OFFSETS_PROPERTY) if rec is not None else None
            if listed:
                out.update(int(x) for x in listed.split(",") if x.isdigit())
        return out

    # -- dispatch -------------------------------------------------------------------------
    def dispatch(self, group: str, topic: str, cost=None, ready=None, sent=None) -> list[Dispatch]:
        """What to send now to ``group``'s consumers of ``topic``, while they have permits;
        ``cost(record)`` is the permits one entry takes (default 1; a Pulsar batch takes
        its number of messages, and permits may go below zero, as Pulsar's do).
        ``ready(key)``: False for a consumer that takes nothing now whatever its permits
        (its connection has too much unsent: Pulsar's channel writability); ``sent(key,
        record)`` is told each entry chosen, so ``ready`` sees it at once."""
        cursor = self._cursors.get((group, topic))
        if cursor is None or not cursor.consumers:
            return []
        store = self.store
        out: list[Dispatch] = []
        end = store.max_offset(topic, 0)
        now = self.clock.now_ms()
        self._release(cursor, now)
        by_key = cursor.sub_type is SubType.KEY_SHARED
        tick = self.config.delayed_delivery_tick_time_millis
        parked: list[int] = []                # Key_Shared: its consumer has no permits now
        horizon, kept = self.compaction.kept(topic) if cursor.compacted and self.compaction else (0, None)
        while True:
            c = self._next_consumer(cursor, ready)
            if c is None:
                break
            if cursor.replay:
                offset = min(cursor.replay)
                cursor.replay.discard(offset)
            elif cursor.read < end:
                offset = cursor.read
                cursor.read += 1
                if offset in cursor.acked:
                    continue
            else:
                break
            if offset < horizon and offset not in kept:     # compacted away: acknowledged for this cursor
                cursor.acked.add(offset)
                self._advance(cursor)
                continue
            rec = store.record_at(topic, 0, offset)
            if rec is None:                   # gone from the store: nothing to deliver
                cursor.acked.add(offset)
                self._advance(cursor)
                continue
            if cursor.holds_back and offset not in cursor.redeliveries:
                due = _deliver_at(rec)
                if due is not None and due > now + tick:
                    heapq.heappush(cursor.delayed, (due - tick, offset))     # (released a tick early)
                    continue
            if by_key:
                key = rec.properties.get(KEY_PROPERTY, "")
                c = cursor.consumers[zlib.crc32(key.encode()) % len(cursor.consumers)]
                if c.permits <= 0 or (ready is not None and not ready(c.key)):
                    # it waits for its consumer; its key's later ones too
                    parked.append(offset)
                    continue
            mask = cursor.partial.get(offset)
            if offset < horizon and kept[offset] is not None:      # of a batch, the indexes compaction kept
                mask = kept[offset] if mask is None else mask & kept[offset]
            if mask is not None:              # only the indexes not yet acknowledged are sent and cost
                c.permits -= mask.bit_count()
            else:
                c.permits -= 1 if cost is None else cost(rec)
            c.pending.add(offset)
            cursor.out += 1
            count = cursor.redeliveries.get(offset, 0)
            out.append(Dispatch(c.key, offset, rec, count, mask))
            if self.deliveries is not None:
                self.deliveries.one(now, DISPATCH, group, topic, 0, offset, count, c.label)
            if sent is not None:
                sent(c.key, rec)
        cursor.replay.update(parked)
        return out

    def consumer_keys(self, group: str, topic: str) -> list:
        """The consumers attached to ``group``'s subscription of ``topic``."""
        cursor = self._cursors.get((group, topic))
        return [c.key for c in cursor.consumers] if cursor is not None else []

    def consumer_stats(self, consumer) -> dict | None:
        """One consumer's figures (Pulsar's CONSUMER_STATS): its subscription's type, its
        permits, what it holds unacknowledged, and the subscription's backlog (messages not
        acknowledged). None when it is attached to no subscription."""
        cursor = self._of.get(consumer)
        c = self._consumer(consumer)
        if cursor is None or c is None:
            return None
        end = self.store.max_offset(cursor.topic, 0)
        backlog = max(end - cursor.mark_delete, 0) - len(cursor.acked)
        return {"type": _TYPE_NAMES[cursor.sub_type],
                "permits": c.permits, "unacked": len(c.pending), "backlog": backlog}

    def members(self, consumer) -> tuple[list, object | None]:
        """The consumers attached to ``consumer``'s subscription, and the active one of a
        Failover subscription (None for other types or when ``consumer`` is not attached)."""
        cursor = self._of.get(consumer)
        if cursor is None:
            return [], None
        keys = [c.key for c in cursor.consumers]
        return keys, (keys[0] if cursor.sub_type is SubType.FAILOVER else None)

    def redelivery_count(self, group: str, topic: str, offset: int) -> int:
        """The redelivery count of ``offset`` in ``group``'s subscription of ``topic`` (0: none)."""
        cursor = self._cursors.get((group, topic))
        return cursor.redeliveries.get(offset, 0) if cursor is not None else 0

    def describe(self) -> list[dict]:
        """Every durable subscription as the dashboard shows it: type, its consumers'
        labels, backlog (not acknowledged), unacked (delivered, not acknowledged),
        delayed (held for a later delivery time), redeliveries (offset -> count of the
        messages not acknowledged yet), reached (count -> messages that reached it),
        the mark-delete position. Subscriptions no consumer has opened since the start
        are read from the store and the saved cursor state (``saved_subscription``)."""
        out = []
        seen = set()
        for (group, topic), c in self._cursors.items():
            if not c.durable:
                continue
            seen.add((group, topic))
            end = self.store.max_offset(topic, 0)
            out.append({"group": group, "topic": topic, "type": _TYPE_NAMES[c.sub_type],
                        "consumers": [x.label for x in c.consumers],
                        "backlog": max(end - c.mark_delete, 0) - len(c.acked),
                        "unacked": sum(len(x.pending) for x in c.consumers), "delayed": len(c.delayed),
                        "redeliveries": dict(c.redeliveries), "reached": dict(c.reached),
                        "mark_delete": c.mark_delete, "acked": set(c.acked)})
        for key in self._loaded():
            topic, _, group = key.rpartition("@")
            if (group, topic) not in seen and self.store.query_offset(group, topic, 0) >= 0:
                out.append(self.saved_subscription(group, topic))
        return out

    def saved_subscription(self, group: str, topic: str) -> dict:
        """A subscription as its committed offset and saved state say (no consumer
        since the start): the same fields as ``describe``, type unknown ("")."""
        mark = max(self.store.query_offset(group, topic, 0), 0)
        saved = self._loaded().get(f"{topic}@{group}") or {}
        acked = {int(o) for o in saved.get("acked", ()) if int(o) >= mark}
        redeliveries = {int(o): int(n) for o, n in (saved.get("redeliveries") or {}).items() if int(o) >= mark}
        end = self.store.max_offset(topic, 0)
        return {"group": group, "topic": topic, "type": "", "consumers": [],
                "backlog": max(end - mark, 0) - len(acked), "unacked": 0, "delayed": 0,
                "redeliveries": redeliveries, "reached": {int(n): int(k) for n, k in (saved.get("reached") or {}).items()},
                "mark_delete": mark, "acked": acked}

    def acknowledged(self, group: str, topic: str, offset: int) -> bool | None:
        """Whether ``group``'s subscription of ``topic`` acknowledged ``offset`` (None: no
        such subscription)."""
        c = self._cursors.get((group, topic))
        if c is not None:
            return offset < c.mark_delete or offset in c.acked
        if self.store.query_offset(group, topic, 0) < 0:
            return None
        saved = self.saved_subscription(group, topic)
        return offset < saved["mark_delete"] or offset in saved["acked"]

    def stats(self) -> dict[tuple[str, str], dict[str, int]]:
        """(group, topic) -> the redelivery stats of each durable subscription (STATS)."""
        return {k: dict(c.stats) for k, c in self._cursors.items() if c.durable}

    def cursors(self) -> list[tuple[str, str]]:
        return list(self._cursors)

    def durable_cursors(self) -> list[tuple[str, str]]:
        """(group, topic) of the subscriptions, readers' cursors left out."""
        return [key for key, cursor in self._cursors.items() if cursor.durable]

    def subscribed(self, topic: str) -> bool:
        """Whether some subscription reads ``topic`` (a store into it may be dispatched)."""
        return topic in self.topics

    def stored(self, topic: str) -> None:
        """The core stored into ``topic``, which a subscription reads: the fronts are told."""
        self.notify(DispatchReady(topic))

    def _drop(self, cursor: _Cursor) -> None:
        del self._cursors[(cursor.group, cursor.topic)]
        left = self.topics[cursor.topic] - 1
        if left:
            self.topics[cursor.topic] = left
        else:
            del self.topics[cursor.topic]

    # -- the clock ----------------------------------------------------------------------------
    def next_deadline(self) -> int | None:
        dues = [c.delayed[0][0] for c in self._cursors.values() if c.delayed]
        return min(dues) if dues else None

    def tick(self, now: int) -> None:
        """Delayed messages that came due wait in their replay set; the fronts are told."""
        for cursor in self._cursors.values():
            if cursor.delayed and cursor.delayed[0][0] <= now:
                self._release(cursor, now)
                self.notify(DispatchReady(cursor.topic))

    def _release(self, cursor: _Cursor, now: int | None) -> None:
        """Due delayed offsets (all of them: ``now`` None) to the replay set, count unchanged."""
        while cursor.delayed and (now is None or cursor.delayed[0][0] <= now):
            _, offset = heapq.heappop(cursor.delayed)
            if offset >= cursor.mark_delete and offset not in cursor.acked:
                cursor.replay.add(offset)

    # -- inside -----------------------------------------------------------------------------
    def _next_consumer(self, cursor: _Cursor, ready=None) -> _Consumer | None:
        if cursor.sub_type in (SubType.EXCLUSIVE, SubType.FAILOVER):
            active = cursor.consumers[0]
            return active if active.permits > 0 and (ready is None or ready(active.key)) else None
        n = len(cursor.consumers)
        for i in range(n):
            c = cursor.consumers[(cursor.turn + i) % n]
            if c.permits > 0 and (ready is None or ready(c.key)):
                cursor.turn = (cursor.turn + i + 1) % n
                return c
        return None

    def _consumer(self, key) -> _Consumer | None:
        cursor = self._of.get(key)
        return next((c for c in cursor.consumers if c.key is key), None) if cursor else None

    def _back(self, cursor: _Cursor, offsets, count: bool = True) -> None:
        self._dirty = True
        now = self.clock.now_ms()
        for o in list(offsets):
            for c in cursor.consumers:
                c.pending.discard(o)
            cursor.replay.add(o)
            if count:
                n = cursor.redeliveries[o] = pulsar_redelivery(cursor.topic, cursor.group,
                                                               cursor.redeliveries.get(o, 0), None).attempt
                st = cursor.stats
                st["redeliveries"] += 1
                st["redelivered_messages"] += n == 1
                st["max_redelivery_count"] = max(st["max_redelivery_count"], n)
                cursor.reached[n] = cursor.reached.get(n, 0) + 1
                if self.deliveries is not None:
                    self.deliveries.one(now, PULSAR_NACK, cursor.group, cursor.topic, 0, o, n)
                if self.rates is not None:
                    self.rates.add(now, RETRIED, cursor.group, cursor.topic)

    def _forget(self, cursor: _Cursor, offset: int) -> None:
        for c in cursor.consumers:
            c.pending.discard(offset)
        cursor.replay.discard(offset)
        cursor.redeliveries.pop(offset, None)
        cursor.partial.pop(offset, None)

    def _advance(self, cursor: _Cursor) -> None:
        while cursor.mark_delete in cursor.acked:
            cursor.acked.discard(cursor.mark_delete)
            cursor.mark_delete += 1
        self._commit(cursor)

    def _commit(self, cursor: _Cursor) -> None:
        if cursor.durable:
            self.offsets.commit(cursor.group, cursor.topic, 0, cursor.mark_delete)
        self._dirty = True

    # -- persistence ------------------------------------------------------------------------------
    def save(self) -> None:
        """At flush: the individual acks and redelivery counts of durable cursors (unless
        kept in memory only), and their stats. A refused write raises the store's error,
        as other flushes."""
        if not self._dirty:
            return
        in_memory = self.config.redelivery_count_in_memory
        doc = dict(self._loaded())
        for (group, topic), c in self._cursors.items():
            if c.durable:
                entry = {} if in_memory else {
                    "acked": sorted(c.acked),
                    "redeliveries": {str(o): n for o, n in sorted(c.redeliveries.items())},
                    "partial": {str(o): m for o, m in sorted(c.partial.items())}}
                entry["stats"] = dict(c.stats)
                entry["reached"] = {str(n): k for n, k in sorted(c.reached.items())}
                doc[f"{topic}@{group}"] = entry
        self.store.save_config(SUBSCRIPTIONS_CONFIG, doc)
        self._saved = doc
        self._dirty = False

    def _loaded(self) -> dict:
        if self._saved is None:
            self._saved = self.store.load_config(SUBSCRIPTIONS_CONFIG) or {}
        return self._saved

    def _restore(self, cursor: _Cursor) -> None:
        saved = self._loaded().get(f"{cursor.topic}@{cursor.group}") or {}
        cursor.stats.update({k: int(v) for k, v in (saved.get("stats") or {}).items() if k in STATS})
        cursor.reached = {int(n): int(k) for n, k in (saved.get("reached") or {}).items()}
        if self.config.redelivery_count_in_memory:
            return
        cursor.acked = {int(o) for o in saved.get("acked", ()) if int(o) >= cursor.mark_delete}
        cursor.redeliveries = {int(o): int(n) for o, n in (saved.get("redeliveries") or {}).items()
                               if int(o) >= cursor.mark_delete}
        cursor.partial = {int(o): int(m) for o, m in (saved.get("partial") or {}).items()
                          if int(o) >= cursor.mark_delete and int(m) > 0 and int(o) not in cursor.acked}
        self._advance(cursor)

    def _check(self) -> None:
        """Every pending or replayed offset is between the mark-delete and the read position;
        no offset is both pending and acknowledged."""
        assert self.topics == dict(Counter(t for _, t in self._cursors)), "the topic index is off"
        for cursor in self._cursors.values():
            held = set(cursor.replay)
            delayed = {o for _, o in cursor.delayed}
            assert not (held & delayed), f"{cursor.group}: an offset is both delayed and to replay"
            held |= delayed
            for c in cursor.consumers:
                assert not (held & c.pending), f"{cursor.group}: an offset is held twice"
                held |= c.pending
            assert all(cursor.mark_delete <= o < cursor.read for o in held), f"{cursor.group}: held out of range"
            assert not (held & cursor.acked), f"{cursor.group}: an acknowledged offset is still held"
            assert all(o > cursor.mark_delete for o in cursor.acked), f"{cursor.group}: acked below mark-delete"
            assert all(o >= cursor.mark_delete and o not in cursor.acked and m > 0
                       for o, m in cursor.partial.items()), f"{cursor.group}: a partly acked entry out of place"


_TYPE_NAMES = {SubType.EXCLUSIVE: "Exclusive", SubType.SHARED: "Shared", SubType.FAILOVER: "Failover",
               SubType.KEY_SHARED: "Key_Shared"}


def _deliver_at(rec) -> int | None:
    text = rec.properties.get(DELIVER_AT_PROPERTY)
    return int(text) if text and text.lstrip("-").isdigit() else None
