"""Held pulls (PullRequestHoldService).

A pull that finds nothing, asked as a long poll (4.x: the suspend flag), is parked until
a message matching its subscription arrives in its queue or its suspend time passes.
When its suspend time passes it is executed once more (without its commit); when a
message arrives, the core answers it with that message (BrokerCore._answer_arrived) —
what running it again would find — and the result goes to the front that held it (a
PullReady notification with the front's ``context``). Costs: O(held pulls on that
queue) per arrival; O(log n) per deadline via a heap. ``version`` changes whenever a
pull is held or leaves: the core's cached next deadline is taken again then.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import Any

from rocketmq_emulator.delay_scheduler.timer_heap import ascending
from rocketmq_emulator.store.records import Prop, tags_code

__all__ = ["HeldPull", "PullHoldService"]


@dataclass(slots=True)
class HeldPull:
    channel: Any
    request: Any                # the core's PullRequest to run again
    context: Any                # the front's record of it (the 4.x front: its command)
    topic: str
    queue_id: int
    offset: int
    code_set: frozenset[int] | None
    deadline_ms: int
    done: bool = False
    seq: int = 0
    min_offset: int = 0         # the queue's first offset when it was held (a store's never moves)


class PullHoldService:
    def __init__(self) -> None:
        self._by_queue: dict[tuple[str, int], list[HeldPull]] = {}
        self._heap: list[tuple[int, int, HeldPull]] = []
        self._next_seq = 0
        self.version = 0

    def hold(self, held: HeldPull) -> None:
        held.seq = self._next_seq
        self._next_seq += 1
        self.version += 1
        self._by_queue.setdefault((held.topic, held.queue_id), []).append(held)
        heapq.heappush(self._heap, (held.deadline_ms, held.seq, held))

    def mark(self) -> int:
        """A point in the sequence of holds: ``held_before(mark)`` later returns the
        pulls held before it (still waiting), and releases them."""
        return self._next_seq

    def held_before(self, mark: int) -> list[HeldPull]:
        out = [h for _, seq, h in self._heap if seq < mark and not h.done]
        for h in out:
            self.release(h)
        return out

    def arrived(self, topic: str, queue_id: int, queue_offset: int, properties: dict) -> list[HeldPull]:
        """Held pulls a new message at ``queue_offset`` (its ``properties``) satisfies;
        they are released."""
        key = (topic, queue_id)
        by_queue = self._by_queue           # (``in`` and ``[]``: every put)
        waiting = by_queue[key] if key in by_queue else None
        if not waiting:
            return []
        ready, keep = [], []
        code = None
        for h in waiting:
            if h.done:
                continue
            if h.offset <= queue_offset:
                if h.code_set is None:
                    h.done = True
                    ready.append(h)
                    continue
                if code is None:
                    code = tags_code(properties.get(Prop.TAGS))
                if code in h.code_set:
                    h.done = True
                    ready.append(h)
                    continue
            keep.append(h)
        if keep:
            self._by_queue[key] = keep
        else:
            del self._by_queue[key]
        if ready:
            self.version += 1
        return ready

    def expired(self, now_ms: int) -> list[HeldPull]:
        out = []
        heap = self._heap
        while heap and heap[0][0] <= now_ms:
            _, _, h = heapq.heappop(heap)
            if not h.done:
                self.release(h)
                out.append(h)
        return out

    def waiting(self, before: int) -> list[HeldPull]:
        """The pulls still held whose timeout comes before ``before``, in the order the
        timeouts would answer them."""
        return [h for _, _, h in ascending(self._heap, before) if not h.done]

    def release(self, held: HeldPull) -> None:
        """Take ``held`` out of waiting (answered, timed out, or replaced by its client)."""
        held.done = True
        self.version += 1
        self._discard(held)

    def next_deadline(self) -> int | None:
        heap = self._heap
        while heap and heap[0][2].done:
            heapq.heappop(heap)
        return heap[0][0] if heap else None

    def drop_channel(self, channel: Any) -> None:
        for key in list(self._by_queue):
            for h in self._by_queue[key]:
                if h.channel is channel:
                    h.done = True
            self._by_queue[key] = [h for h in self._by_queue[key] if not h.done]
            if not self._by_queue[key]:
                del self._by_queue[key]
        self.version += 1

    def _discard(self, h: HeldPull) -> None:
        lst = self._by_queue.get((h.topic, h.queue_id))
        if lst is not None:
            lst[:] = [x for x in lst if x is not h]
            if not lst:
                del self._by_queue[(h.topic, h.queue_id)]

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_queue.values())
