"""Which delayed messages are due, per level, and when the next one is.

Theory of operation. Every delay level L has its own queue L-1 in SCHEDULE_TOPIC_XXXX;
entries of one level share the same delay, so their delivery times are non-decreasing
in queue order and only the head of each level can be due first. The scheduler keeps,
per level, the pending (queue offset, deliver time) pairs in order plus the level's
*delivery offset* (the next queue offset to deliver, what RocketMQ persists in
delayOffset.json). The broker appends an entry when it diverts a message, asks
``due(now)`` on every tick, re-stores each due message into its real topic and then
calls ``delivered(level, offset)``; a failed re-store simply leaves the head in place
to be tried again. ``next_deadline()`` tells the driver when to tick next.

It owns no messages and does no I/O: costs are O(levels) per deadline query and
O(1) per append and delivery.
"""
from __future__ import annotations

from collections import deque
from typing import Iterator

from .levels import DelayLevels

__all__ = ["DelayScheduler"]


class DelayScheduler:
    def __init__(self, levels: DelayLevels) -> None:
        self.levels = levels
        self._pending: dict[int, deque[tuple[int, int]]] = {
            lvl: deque() for lvl in range(1, levels.max_level + 1)
        }
        self._offsets: dict[int, int] = {lvl: 0 for lvl in range(1, levels.max_level + 1)}

    # -- feeding ---------------------------------------------------------------
    def add(self, level: int, queue_offset: int, deliver_ms: int) -> None:
        """Record that SCHEDULE_TOPIC_XXXX queue ``level-1`` holds an entry at
        ``queue_offset`` due at ``deliver_ms``. Entries before the level's delivery
        offset are already delivered and ignored (that is how reopen skips them)."""
        if queue_offset < self._offsets[level]:
            return
        self._pending[level].append((queue_offset, deliver_ms))

    def set_offset(self, level: int, offset: int) -> None:
        """Restore a delivery offset (from delayOffset.json) before re-adding entries."""
        self._offsets[level] = offset
        pend = self._pending[level]
        while pend and pend[0][0] < offset:
            pend.popleft()

    # -- querying --------------------------------------------------------------
    def offsets(self) -> dict[int, int]:
        """Per-level next offset to deliver: the content of delayOffset.json."""
        return dict(self._offsets)

    def pending_count(self, level: int | None = None) -> int:
        if level is not None:
            return len(self._pending[level])
        return sum(len(p) for p in self._pending.values())

    def next_deadline(self, now_ms: int | None = None) -> int | None:
        """Earliest delivery time among level heads, or None when nothing is pending."""
        best = None
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
            best_level = None
            best_t = 0
            for level, pend in self._pending.items():
                if pend:
                    t = self._effective(level, pend[0][1], now_ms)
                    if t <= now_ms and (best_level is None or t < best_t):
                        best_level, best_t = level, t
            if best_level is None:
                return
            offset = self._pending[best_level][0][0]
            yield best_level, offset, self._pending[best_level][0][1]
            if self._pending[best_level] and self._pending[best_level][0][0] == offset:
                return  # the caller could not deliver it; try again on a later tick

    def delivered(self, level: int, queue_offset: int) -> None:
        """The entry at the head of ``level`` was re-stored; advance the offset."""
        pend = self._pending[level]
        if not pend or pend[0][0] != queue_offset:
            raise ValueError(f"level {level}: {queue_offset} is not the head of the pending entries")
        pend.popleft()
        self._offsets[level] = queue_offset + 1

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
