"""Consumer groups' committed offsets as the core keeps them (in the store's offset
table): where a group resumes a queue, a commit (with its event, and a flush to come),
a group's topic forgotten. One book for every dialect: 4.x commits, 5.x pop's committed
low-water mark, Pulsar's mark-delete position."""
from __future__ import annotations

from typing import Callable

from ..events import Event, EventKind, EventLog
from ..views.rates import CONSUMED

__all__ = ["OffsetBook"]


class OffsetBook:
    def __init__(self, store, clock, events: EventLog, changed: Callable[[int], None], rates=None,
                 first_read: Callable[[str, str, int], int | None] = lambda group, topic, queue_id: None) -> None:
        self._store = store
        self._clock = clock
        self._events = events
        self._changed = changed          # an offset changed at this time: persist at the next flush
        self._rates = rates              # rates.RateRing: a commit moving forward counts as consumed
        self._first_read = first_read    # where a group began reading a queue it never committed in

    def committed(self, group: str, topic: str, queue_id: int) -> int | None:
        """Where ``group`` resumes reading the queue: its stored offset, else 0 while
        the queue still holds offset 0 (an empty queue counts), else None (4.x's
        QUERY_NOT_FOUND: the client falls back to its consume-from-where)."""
        stored = self._store.query_offset(group, topic, queue_id)
        if stored >= 0:
            return stored
        return 0 if self._store.min_offset(topic, queue_id) <= 0 else None

    def commit(self, group: str, topic: str, queue_id: int, offset: int, now: int | None = None) -> None:
        """Record ``offset`` as ``group``'s (OFFSET_COMMITTED event when it changed);
        ``now``: the clock's time when the caller just read it."""
        before = self._store.replace_offset(group, topic, queue_id, offset)
        if before is None:
            return
        if now is None:
            now = self._clock.now_ms()
        self._changed(now)
        if self._rates is not None:
            if before < 0:              # the first commit: from where the group's first pull began
                start = self._first_read(group, topic, queue_id)
                before = offset if start is None else start
            if before < offset:
                self._rates.add(now, CONSUMED, group, topic, offset - before)
        if EventKind.OFFSET_COMMITTED in self._events.wanted:
            self._events.append(Event(EventKind.OFFSET_COMMITTED, now, topic, queue_id, offset, group=group))

    def delete(self, group: str, topic: str) -> None:
        """A group no longer reads ``topic`` (a Pulsar unsubscribe): its offsets are gone."""
        if self._store.delete_offsets(group, topic):
            self._changed(self._clock.now_ms())
