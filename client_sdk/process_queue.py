"""ProcessQueue: the client's in-flight messages of one queue (RocketMQ's ProcessQueue).

Theory of operation
-------------------
Every pulled message is put into ``msg_tree``, a sorted map queueOffset → message (a
sortedcontainers ``SortedDict``, as Java's TreeMap). It leaves the tree only when its
consumption is *settled*: acked, or handed to the broker for a retry (send-back
succeeded). So the smallest key in the tree is the first offset whose fate is still
open, and every offset below it is settled.

That is the whole commit rule (checklist 69, 71): ``remove_messages`` returns the
smallest offset still in the tree, or ``queue_offset_max + 1`` when the tree became
empty (−1 if it was already empty), and the consumer stores that value
*increase-only*. An out-of-order ack (message 7 done while 3 is still running) removes
7 but returns 3, so the committed offset never passes an unacked message — and a
message whose send-back failed stays in the tree (retried locally every 5 s), holding
the committed offset behind it: the "blocking point" of seed 004. A crash or rebalance
then re-delivers everything from that offset: at-least-once, never a loss.

Orderly consumption adds a second map, ``consuming_tree``: ``take_messages`` moves the
smallest entries into it while the listener runs; ``commit`` forgets them and returns
the last offset + 1; ``make_message_to_consume_again`` / ``rollback`` move them back so
the same messages are delivered again after a suspension.

Costs (SortedDict: a dict and a SortedList of its keys, in sub-lists of about a
thousand): put and remove O(log n) — a bisect and an insert or delete in one short
sub-list, whatever the number in flight —, smallest and largest key O(1).
benchmarks/process_queue_cost.py measures it against the hand-written tree of d791052.
``_check()`` verifies the invariants; randomized tests call it after every step.
"""
from __future__ import annotations

from sortedcontainers import SortedDict

from rocketmq_emulator.store.records import Prop

__all__ = ["ProcessQueue", "REBALANCE_LOCK_MAX_LIVE_TIME", "REBALANCE_LOCK_INTERVAL",
           "PULL_MAX_IDLE_TIME"]

REBALANCE_LOCK_MAX_LIVE_TIME = 30000   # rocketmq.client.rebalance.lockMaxLiveTime
REBALANCE_LOCK_INTERVAL = 20000        # rocketmq.client.rebalance.lockInterval
PULL_MAX_IDLE_TIME = 120000            # rocketmq.client.pull.pullMaxIdleTime


class ProcessQueue:
    __slots__ = ("msg_tree", "consuming_tree", "msg_count", "msg_size", "queue_offset_max", "consuming",
                 "dropped", "locked", "last_lock_timestamp", "last_pull_timestamp", "last_consume_timestamp",
                 "msg_acc_cnt")

    def __init__(self, now_ms: int = 0) -> None:
        self.msg_tree: SortedDict = SortedDict()
        self.consuming_tree: SortedDict = SortedDict()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0
        self.consuming = False
        self.dropped = False
        self.locked = False
        self.last_lock_timestamp = now_ms
        self.last_pull_timestamp = now_ms
        self.last_consume_timestamp = now_ms
        self.msg_acc_cnt = 0

    # -- concurrently and orderly ------------------------------------------------------
    def put_messages(self, msgs) -> bool:
        """Add pulled messages. Only new offsets count (checklist 70). Returns True when
        this put starts consumption (the tree is non-empty and nothing was consuming)."""
        tree = self.msg_tree
        added = 0
        size = 0
        for m in msgs:
            off = m.queue_offset
            if off not in tree:
                added += 1
                size += len(m.body)
                self.queue_offset_max = off
            tree[off] = m   # Java's TreeMap.put replaces the value of an existing key too
        self.msg_count += added
        self.msg_size += size
        dispatch = False
        if tree and not self.consuming:
            dispatch = True
            self.consuming = True
        if msgs:
            last = msgs[-1]
            max_off = last.properties.get(Prop.MAX_OFFSET)
            if max_off is not None:
                acc = int(max_off) - last.queue_offset
                if acc > 0:
                    self.msg_acc_cnt = acc
        return dispatch

    def remove_messages(self, msgs, now_ms: int | None = None) -> int:
        """Settle messages (concurrently). Returns the offset that may be committed:
        the smallest offset still in flight, ``queue_offset_max + 1`` if none is left,
        or −1 if the tree was already empty (checklist 69)."""
        if now_ms is not None:
            self.last_consume_timestamp = now_ms
        tree = self.msg_tree
        if not tree:
            return -1
        result = self.queue_offset_max + 1
        removed = 0
        for m in msgs:
            if tree.pop(m.queue_offset, None) is not None:
                removed += 1
                self.msg_size -= len(m.body)
        self.msg_count -= removed
        if self.msg_count == 0:
            self.msg_size = 0
        if tree:
            result = tree.peekitem(0)[0]
        return result

    def contains(self, msg) -> bool:
        """containsMessage: is this offset still unsettled in the tree?"""
        return msg.queue_offset in self.msg_tree

    @property
    def max_span(self) -> int:
        """Last minus first in-flight offset (flow control past consumeConcurrentlyMaxSpan)."""
        tree = self.msg_tree
        if len(tree) < 2:       # (asked at every pull: one in flight, the usual, needs no look)
            return 0
        return tree.peekitem(-1)[0] - tree.peekitem(0)[0]

    def first_message(self):
        """The smallest in-flight message, or None."""
        tree = self.msg_tree
        return tree.peekitem(0)[1] if tree else None

    # -- orderly -------------------------------------------------------------------------
    def take_messages(self, batch_size: int, now_ms: int | None = None) -> list:
        """Move up to ``batch_size`` smallest messages into the consuming map; if none
        is left, consumption stops (``consuming = False``)."""
        if now_ms is not None:
            self.last_consume_timestamp = now_ms
        tree = self.msg_tree
        taken = []
        for _ in range(batch_size):
            if not tree:
                break
            off, m = tree.popitem(0)
            self.consuming_tree[off] = m
            taken.append(m)
        if not taken:
            self.consuming = False
        return taken

    def commit(self) -> int:
        """Forget the consuming messages; returns last offset + 1 (−1 if none)."""
        cons = self.consuming_tree
        if not cons:
            return -1
        offset = cons.peekitem(-1)[0]
        self.msg_count -= len(cons)
        for m in cons.values():
            self.msg_size -= len(m.body)
        cons.clear()
        if self.msg_count == 0:
            self.msg_size = 0
        return offset + 1

    def make_message_to_consume_again(self, msgs) -> None:
        """Move these messages from the consuming map back into the tree."""
        for m in msgs:
            self.consuming_tree.pop(m.queue_offset, None)
            self.msg_tree[m.queue_offset] = m

    def rollback(self) -> None:
        """Move every consuming message back into the tree."""
        self.msg_tree.update(self.consuming_tree)
        self.consuming_tree.clear()

    # -- locks and liveness ----------------------------------------------------------------
    def is_lock_expired(self, now_ms: int) -> bool:
        return now_ms - self.last_lock_timestamp > REBALANCE_LOCK_MAX_LIVE_TIME

    def is_pull_expired(self, now_ms: int) -> bool:
        return now_ms - self.last_pull_timestamp > PULL_MAX_IDLE_TIME

    def clear(self) -> None:
        self.msg_tree.clear()
        self.consuming_tree.clear()
        self.msg_count = 0
        self.msg_size = 0
        self.queue_offset_max = 0

    # -- invariants --------------------------------------------------------------------------
    def _check(self) -> None:
        tree, cons = self.msg_tree, self.consuming_tree
        both = list(tree.items()) + list(cons.items())
        assert not (set(tree) & set(cons)), "an offset is both waiting and consuming"
        for off, m in both:
            assert m.queue_offset == off, f"message at key {off} has queue_offset {m.queue_offset}"
        assert self.msg_count == len(tree) + len(cons), (self.msg_count, len(tree), len(cons))
        assert self.msg_size == sum(len(m.body) for _, m in both), "msg_size out of step"
        if both:
            assert self.queue_offset_max >= max(off for off, _ in both), "queue_offset_max below a key"
        for t in (tree, cons):
            t._check()          # SortedDict's own: its sorted keys are its dict's keys

    def __repr__(self) -> str:
        first = self.msg_tree.peekitem(0)[0] if self.msg_tree else None
        return (f"ProcessQueue(count={self.msg_count}, first={first}, max={self.queue_offset_max}, "
                f"consuming={len(self.consuming_tree)}, dropped={self.dropped}, locked={self.locked})")
