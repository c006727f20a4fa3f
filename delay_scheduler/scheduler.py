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

The broker appends an entry when it diverts a message (with what it wants back when
the entry is due: the stored record it carries, so it need not read it again), asks
``due_head(now)`` on every tick, re-stores the due message into its real topic and then
calls ``delivered(lane, offset)``; a failed re-store simply leaves the head in place to
be tried again. ``next_deadline()`` tells the driver when to tick next.

It owns no messages and does no I/O. The earliest head is cached and updated as entries
come and go, so asking for the next deadline costs a look-up, not a walk of every level:
O(1) per level append, O(levels) once per delivery (finding the next head, without a
call per level), O(log n) per timer append and delivery.
"""
from __future__ import annotations

import heapq
from collections import deque
from typing import Iterator

from .levels import DelayLevels

__all__ = ["DelayScheduler", "TIMER_LANE"]

TIMER_LANE = 0       # delayed to a timestamp; lanes 1..max_level are the delay levels


_STALE = object()     # the cached head must be found again


class DelayScheduler:
    def __init__(self, levels: DelayLevels) -> None:
        self.levels = levels
        self._delays = levels.delays_ms
        # per level: pending (queue offset, deliver time, payload) in queue order
        self._pending: dict[int, deque[tuple[int, int, object]]] = {
            lvl: deque() for lvl in range(1, levels.max_level + 1)
        }
        self._offsets: dict[int, int] = {lvl: 0 for lvl in range(1, levels.max_level + 1)}
        self._timer: list[tuple[int, int, object]] = []   # heap of (deliver_ms, queue offset, payload)
        self._timer_floor = 0                        # timer entries below are all delivered
        self._timer_done: set[int] = set()           # delivered at or above the floor
        # The earliest head, (deliver ms, lane), None when nothing is pending, _STALE when
        # it must be found again. Exact only while no entry can need upstream's clock-skew
        # correction (``_effective``): an entry whose store time (deliver time - its
        # level's delay) lies after now. ``skew_until`` is the latest such store time
        # ever added; before it, the heads are walked with the correction, as upstream
        # (a driver caching the next deadline must not cache it before then).
        self._head: tuple[int, int] | None | object = None
        self.skew_until = -1

    # -- feeding ---------------------------------------------------------------
    def add(self, lane: int, queue_offset: int, deliver_ms: int, payload=None) -> None:
        """Record that ``lane``'s queue (a level's SCHEDULE_TOPIC_XXXX queue, or the
        timer queue) holds an entry at ``queue_offset`` due at ``deliver_ms``;
        ``payload`` comes back with it when it is due (``due_head``). Entries already
        delivered are ignored (that is how reopen skips them)."""
        if lane == TIMER_LANE:
            if queue_offset >= self._timer_floor and queue_offset not in self._timer_done:
                heapq.heappush(self._timer, (deliver_ms, queue_offset, payload))
                head = self._head
                if head is None or (head is not _STALE and deliver_ms < head[0]):
                    self._head = (deliver_ms, TIMER_LANE)
            return
        if queue_offset < self._offsets[lane]:
            return
        pend = self._pending[lane]
        if not pend:                    # a new head: maybe the earliest one
            head = self._head
            if head is None or (head is not _STALE and deliver_ms < head[0]):
                self._head = (deliver_ms, lane)
            elif head is not _STALE and deliver_ms == head[0]:
                self._head = _STALE     # (a tie: the lower level goes first)
        pend.append((queue_offset, deliver_ms, payload))
        stored = deliver_ms - self._delays[lane - 1]
        if stored > self.skew_until:
            self.skew_until = stored

    def set_offset(self, level: int, offset: int) -> None:
        """Restore a delivery offset (from delayOffset.json) before re-adding entries."""
        self._offsets[level] = offset
        pend = self._pending[level]
        while pend and pend[0][0] < offset:
            pend.popleft()
        self._head = _STALE

    def set_timer_progress(self, floor: int, delivered: list[int] | tuple[int, ...] = ()) -> None:
        """Restore the timer lane's progress (see ``timer_progress``) before re-adding
        its entries."""
        self._timer_floor = floor
        self._timer_done = {o for o in delivered if o >= floor}
        self._timer = [e for e in self._timer if e[1] >= floor and e[1] not in self._timer_done]
        heapq.heapify(self._timer)
        self._head = _STALE

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
        if now_ms is not None and now_ms < self.skew_until:
            head = self._find(now_ms)
        else:
            head = self._head
            if head is _STALE:
                head = self._head = self._find(None)
        return None if head is None else head[0]

    def due_head(self, now_ms: int) -> tuple[int, int, int, object] | None:
        """``(lane, queue_offset, deliver_ms, payload)`` of the earliest head due at
        ``now_ms`` (a level before the timer lane, a lower level before a higher one, on
        equal times), None when none is due. It stays the head until ``delivered``."""
        if now_ms < self.skew_until:
            head = self._find(now_ms)
        else:
            head = self._head
            if head is _STALE:
                head = self._head = self._find(None)
        if head is None or head[0] > now_ms:
            return None
        lane = head[1]
        if lane == TIMER_LANE:
            deliver_ms, offset, payload = self._timer[0]
            return TIMER_LANE, offset, deliver_ms, payload
        offset, deliver_ms, payload = self._pending[lane][0]
        return lane, offset, deliver_ms, payload

    def due(self, now_ms: int) -> Iterator[tuple[int, int, int]]:
        """Yield ``(level, queue_offset, deliver_ms)`` of due heads, earliest first.

        It yields the current head of a level again if the caller did not call
        ``delivered`` for it, so callers must either deliver or stop iterating.
        """
        while True:
            head = self.due_head(now_ms)
            if head is None:
                return
            lane, offset, deliver_ms, _ = head
            yield lane, offset, deliver_ms
            again = self.due_head(now_ms)
            if again is not None and again[0] == lane and again[1] == offset:
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
            self._head = _STALE
            return
        pend = self._pending[lane]
        if not pend or pend[0][0] != queue_offset:
            raise ValueError(f"level {lane}: {queue_offset} is not the head of the pending entries")
        pend.popleft()
        self._offsets[lane] = queue_offset + 1
        self._head = _STALE

    def _find(self, now_ms: int | None) -> tuple[int, int] | None:
        """The earliest head (deliver ms, lane): a level's head time corrected as
        ``_effective`` says when ``now_ms`` is given; the timer lane wins no tie."""
        best_t = best_lane = None
        delays = self._delays
        for level, pend in self._pending.items():
            if pend:
                t = pend[0][1]
                if now_ms is not None and t > now_ms + delays[level - 1]:
                    t = now_ms          # (_effective, inlined)
                if best_t is None or t < best_t:
                    best_t, best_lane = t, level
        timer = self._timer
        if timer and (best_t is None or timer[0][0] < best_t):
            best_t, best_lane = timer[0][0], TIMER_LANE
        return None if best_t is None else (best_t, best_lane)

    def _effective(self, level: int, deliver_ms: int, now_ms: int | None) -> int:
        # Upstream corrects a delivery time more than one level-delay in the future
        # (clock skew after a restart) down to "now".
        if now_ms is not None and deliver_ms > now_ms + self.levels.delay_ms(level):
            return now_ms
        return deliver_ms

    def _check(self) -> None:
        """Invariants, for randomized tests: per level, offsets increase and start at
        or after the delivery offset, and delivery times never decrease; the cached
        head is the earliest one."""
        for level, pend in self._pending.items():
            prev_off, prev_t = self._offsets[level] - 1, None
            for off, t, _ in pend:
                assert off > prev_off, (level, off, prev_off)
                assert prev_t is None or t >= prev_t, (level, t, prev_t)
                prev_off, prev_t = off, t
        timer = self._timer
        for i in range(1, len(timer)):
            assert timer[(i - 1) // 2][:2] <= timer[i][:2], ("timer heap order", i)
        offsets = [off for _, off, _ in timer]
        assert len(set(offsets)) == len(offsets), "a timer entry is pending twice"
        assert all(off >= self._timer_floor and off not in self._timer_done for off in offsets), \
            "a delivered timer entry is pending again"
        assert self._timer_floor not in self._timer_done
        if self._head is not _STALE:
            assert self._head == self._find(None), ("cached head", self._head, self._find(None))
