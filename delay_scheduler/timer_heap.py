"""Reading a heap of (time, seq, item) entries in order without popping it.

The client runtime's timers and the broker's held pulls are such heaps; the idle
skipper looks ahead in both.
"""
from __future__ import annotations

import heapq
from typing import Iterator

__all__ = ["ascending"]


def ascending(heap: list, limit: int) -> Iterator[tuple]:
    """The entries of ``heap`` with time < ``limit``, in (time, seq) order: a walk from
    the root that opens only children below the limit, so no entry at or after it is
    looked at (a busy loop's heaps hold thousands: reply timers cancelled when the
    reply came, holds already answered)."""
    if not heap or heap[0][0] >= limit:
        return
    n = len(heap)
    frontier = [(heap[0][0], heap[0][1], 0)]
    while frontier:
        _, _, i = heapq.heappop(frontier)
        yield heap[i]
        for child in (2 * i + 1, 2 * i + 2):
            if child < n and heap[child][0] < limit:
                heapq.heappush(frontier, (heap[child][0], heap[child][1], child))
