"""ProcessQueue: the client's in-flight messages of one queue (RocketMQ's ProcessQueue).

Theory of operation
-------------------
Every pulled message is put into ``msg_tree``, a sorted map queueOffset → message (an
``OffsetTree``; Java uses a TreeMap). It leaves the tree only when its
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

Costs: put O(1) per new message pulled in order (O(n) for one out of order: a bisect
and a list insert in C), remove O(1) for the smallest offset (the usual ack) and O(log n)
plus a list delete otherwise, smallest and largest key O(1) — and few calls, since this
runs for every message: the map is a dict, its offsets a sorted list beside it.
``_check()`` verifies the invariants; randomized tests call it after every step.
"""
from __future__ import annotations

from bisect import bisect_left, insort

from rocketmq_emulator.store.records import Prop

__all__ = ["ProcessQueue", "OffsetTree", "REBALANCE_LOCK_MAX_LIVE_TIME", "REBALANCE_LOCK_INTERVAL",
           "PULL_MAX_IDLE_TIME"]

REBALANCE_LOCK_MAX_LIVE_TIME = 30000   # rocketmq.client.rebalance.lockMaxLiveTime
REBALANCE_LOCK_INTERVAL = 20000        # rocketmq.client.rebalance.lockInterval
PULL_MAX_IDLE_TIME = 120000            # rocketmq.client.pull.pullMaxIdleTime


class OffsetTree(dict):
    """Queue offset -> message, in offset order: a dict (look-ups, ``in``, ``len`` and
    ``get`` are the dict's own) and its keys kept sorted beside it (``offsets``). Change it
    only through ``put``, ``remove``, ``popitem``, ``update`` and ``clear``; it iterates
    (keys, values, items) in offset order, as a TreeMap."""

    __slots__ = ("offsets",)

    def __init__(self) -> None:
        super().__init__()
        self.offsets: list[int] = []

    def put(self, off: int, m) -> None:
        """Set ``off``'s message (a new offset, or a replacement)."""
        if off not in self:
            offsets = self.offsets
            if not offsets or off > offsets[-1]:
                offsets.append(off)
            else:
                insort(offsets, off)
        self[off] = m

    def remove(self, off: int):
        """``off``'s message, taken out; None when there is none."""
        m = self.pop(off, None)
        if m is not None:
            offsets = self.offsets
            if offsets[0] == off:
                del offsets[0]
            else:
                del offsets[bisect_left(offsets, off)]
        return m

    def peekitem(self, index: int = -1) -> tuple:
        off = self.offsets[index]
        return off, self[off]

    def popitem(self, index: int = -1) -> tuple:
        off = self.offsets.pop(index)
        return off, self.pop(off)

    def update(self, other) -> None:
        for off, m in other.items():
            self.put(off, m)

    def clear(self) -> None:
        super().clear()
        self.offsets = []

    def __iter__(self):
        return iter(list(self.offsets))

    def keys(self):
        return list(self.offsets)

    def values(self):
        return [self[off] for off in self.offsets]

    def items(self):
        return [(off, self[off]) for off in self.offsets]

    def __repr__(self) -> str:
        return f"OffsetTree({self.items()})"


class ProcessQueue:
    __slots__ = ("msg_tree", "consuming_tree", "msg_count", "msg_size", "queue_offset_max", "consuming",
                 "dropped", "locked", "last_lock_timestamp", "last_pull_timestamp", "last_consume_timestamp",
                 "msg_acc_cnt")

    def __init__(self, now_ms: int = 0) -> None:
        self.msg_tree = OffsetTree()
        self.consuming_tree = OffsetTree()
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
        offsets = tree.offsets
        for m in msgs:          # (OffsetTree.put, inlined: every message pulled)
            off = m.queue_offset
            if off not in tree:
                added += 1
                size += len(m.body)
                self.queue_offset_max = off
                if not offsets or off > offsets[-1]:
                    offsets.append(off)
                else:
                    insort(offsets, off)
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
        offsets = tree.offsets
        for m in msgs:          # (OffsetTree.remove, inlined: every message settled)
            off = m.queue_offset
            if off in tree:
                del tree[off]
                if offsets[0] == off:
                    del offsets[0]
                else:
                    del offsets[bisect_left(offsets, off)]
                removed += 1
                self.msg_size -= len(m.body)
        self.msg_count -= removed
        if self.msg_count == 0:
            self.msg_size = 0
        if tree:
            result = tree.offsets[0]
        return result

    def contains(self, msg) -> bool:
        """containsMessage: is this offset still unsettled in the tree?"""
        return msg.queue_offset in self.msg_tree

    @property
    def max_span(self) -> int:
        """Last minus first in-flight offset (flow control past consumeConcurrentlyMaxSpan)."""
        tree = self.msg_tree
        if not tree:
            return 0
        offsets = tree.offsets
        return offsets[-1] - offsets[0]

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
            self.consuming_tree.put(off, m)
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
            self.consuming_tree.remove(m.queue_offset)
            self.msg_tree.put(m.queue_offset, m)

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
            assert t.offsets == sorted(dict.keys(t)), "a tree's offsets are not its keys, sorted"

    def __repr__(self) -> str:
        first = self.msg_tree.peekitem(0)[0] if self.msg_tree else None
        return (f"ProcessQueue(count={self.msg_count}, first={first}, max={self.queue_offset_max}, "
                f"consuming={len(self.consuming_tree)}, dropped={self.dropped}, locked={self.locked})")
