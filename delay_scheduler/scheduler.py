"""Which delayed messages are due, per lane, and when the next one is.

Theory of operation. A *lane* is one queue of delayed entries. Every delay level L is
lane L, queue L-1 of SCHEDULE_TOPIC_XXXX: entries of one level share the same delay,
so their delivery times are non-decreasing in queue order and only the head of each
level can be due first. The scheduler keeps, per level, the pending (queue offset,
deliver time) pairs in order plus the level's *delivery offset* (the next queue offset
to deliver, what RocketMQ persists in delayOffset.json).

Lane ``TIMER_LANE`` (0) holds messages delayed to an arbitrary timestamp (5.x
delivery_timestamp, Pulsar deliver_at): their times come in any order, so the lane is
a heap, and its progress is a *floor* (every entry below it is delivered) plus the
set of entries at or above the floor already delivered out of order.

The broker appends an entry when it diverts a message, asks ``due(now)`` on every
tick, re-stores each due message into its real topic and then calls
``delivered(lane, offset)``; a failed re-store simply leaves the head in place to be
tried again. ``next_deadline()`` tells the driver when to tick next.

It owns no messages and does no I/O: costs are O(levels) per deadline query, O(1)
per level append and delivery, O(log n) per timer append and delivery.
"""
from __future__ import annotations

import heapq
from collections import deque
from typing import Iterator

from .levels import DelayLevels

__all__ = ["DelayScheduler", "TIMER_LANE"]

TIMER_LANE = 0       # delayed to a timestamp; lanes 1..max_level are the delay levels


class DelayScheduler:
    def __init__(self, levels: DelayLevels) -> None:
        self.levels = levels
        self._pending: dict[int, deque[tuple[int, int]]] = {
            lvl: deque() for lvl in range(1, levels.max_level + 1)
        }
        self._offsets: dict[int, int] = {lvl: 0 for lvl in range(1, levels.max_level + 1)}
        self._timer: list[tuple[int, int]] = []     # heap of (deliver_ms, queue offset)
        self._timer_floor = 0                        # timer entries below are all delivered
        self._timer_done: set[int] = set()           # delivered at or above the floor

    # -- feeding ---------------------------------------------------------------
    def add(self, lane: int, queue_offset: int, deliver_ms: int) -> None:
        """Record that ``lane``'s queue (a level's SCHEDULE_TOPIC_XXXX queue, or the
        timer queue) holds an entry at ``queue_offset`` due at ``deliver_ms``. Entries
        already delivered are ignored (that is how reopen skips them)."""
        if lane == TIMER_LANE:
            if queue_offset >= self._timer_floor and queue_offset not in self._timer_done:
                heapq.heappush(self._timer, (deliver_ms, queue_offset))
            return
        if queue_offset < self._offsets[lane]:
            return
        self._pending[lane].append((queue_offset, deliver_ms))

    def set_offset(self, level: int, offset: int) -> None:
        """Restore a delivery offset (from delayOffset.json) before re-adding entries."""
        self._offsets[level] = offset
        pend = self._pending[level]
        while pend and pend[0][0] < offset:
            pend.popleft()

    def set_timer_progress(self, floor: int, delivered: list[int] | tuple[int, ...] = ()) -> None:
        """Restore the timer lane's progress (see ``timer_progress``) before re-adding
        its entries."""
        self._timer_floor = floor
        self._timer_done = {o for o in delivered if o >= floor}
        self._timer = [e for e in self._timer if e[1] >= floor and e[1] not in self._timer_done]
        heapq.heapify(self._timer)

    # -- querying --------------------------------------------------------------
    def offsets(self) -> dict[int, int]:
        """Per-level next offset to deliver: the content of delayOffset.json."""
        return dict(self._offsets)

    def timer_progress(self) -> tuple[int, tuple[int, ...]]:
        """The timer lane's (floor, offsets at or above it already delivered): what a
        reopen needs to deliver each timer entry once."""
        return self._timer_floor, tuple(sorted(self._timer_done))

    def pending_count(self, lane: int | None = None) -> int:
        if lane == TIMER_LANE:
            return len(self._timer)
        if lane is not None:
            return len(self._pending[lane])
        return sum(len(p) for p in self._pending.values()) + len(self._timer)

    def next_deadline(self, now_ms: int | None = None) -> int | None:
        """Earliest delivery time among lane heads, or None when nothing is pending."""
        best = self._timer[0][0] if self._timer else None
        for level, pend in self._pending.items():
            if pend:
                t = self._effective(level, pend[0][1], now_ms)
                if best is None or t < best:
                    best = t
        return best

    def due(self, now_ms: int) -> Iterator[tuple[int, int, int]]:
        """Yield ``(level, queue_offset, deliver_ms)`` of due heads, earliest first.

        It yields the current head of a level again if the caller did not call
        ``delivered`` for it, so callers must either deliver or stop iterating.
        """
        while True:
            best_lane = None
            best_t = 0
            for level, pend in self._pending.items():
                if pend:
                    t = self._effective(level, pend[0][1], now_ms)
                    if t <= now_ms and (best_lane is None or t < best_t):
                        best_lane, best_t = level, t
            timer = self._timer
            if timer and timer[0][0] <= now_ms and (best_lane is None or timer[0][0] < best_t):
                best_lane = TIMER_LANE
            if best_lane is None:
                return
            if best_lane == TIMER_LANE:
                deliver_ms, offset = timer[0]
                yield TIMER_LANE, offset, deliver_ms
                if timer and timer[0][1] == offset:
                    return  # not delivered; try again on a later tick
                continue
            offset = self._pending[best_lane][0][0]
            yield best_lane, offset, self._pending[best_lane][0][1]
            if self._pending[best_lane] and self._pending[best_lane][0][0] == offset:
                return  # the caller could not deliver it; try again on a later tick

    def delivered(self, lane: int, queue_offset: int) -> None:
        """The entry at the head of ``lane`` was re-stored; advance its progress."""
        if lane == TIMER_LANE:
            if not self._timer or self._timer[0][1] != queue_offset:
                raise ValueError(f"timer lane: {queue_offset} is not the earliest pending entry")
            heapq.heappop(self._timer)
            done = self._timer_done
            done.add(queue_offset)
            while self._timer_floor in done:
                done.remove(self._timer_floor)
                self._timer_floor += 1
            return
        pend = self._pending[lane]
        if not pend or pend[0][0] != queue_offset:
            raise ValueError(f"level {lane}: {queue_offset} is not the head of the pending entries")
        pend.popleft()
        self._offsets[lane] = queue_offset + 1

    def _effective(self, level: int, deliver_ms: int, now_ms: int | None) -> int:
        # Upstream corrects a delivery time more than one level-delay in the future
        # (clock skew after a restart) down to "now".
        if now_ms is not None and deliver_ms > now_ms + self.levels.delay_ms(level):
            return now_ms
        return deliver_ms

    def _check(self) -> None:
        """Invariants, for randomized tests: per level, offsets increase and start at
        or after the delivery offset, and delivery times never decrease."""
        for level, pend in self._pending.items():
            prev_off, prev_t = self._offsets[level] - 1, None
            for off, t in pend:
                assert off > prev_off, (level, off, prev_off)
                assert prev_t is None or t >= prev_t, (level, t, prev_t)
                prev_off, prev_t = off, t
        timer = self._timer
        for i in range(1, len(timer)):
            assert timer[(i - 1) // 2] <= timer[i], ("timer heap order", i)
        offsets = [off for _, off in timer]
        assert len(set(offsets)) == len(offsets), "a timer entry is pending twice"
        assert all(off >= self._timer_floor and off not in self._timer_done for off in offsets), \
            "a delivered timer entry is pending again"
        assert self._timer_floor not in self._timer_done
