"""What happened to a stored message that its store cannot tell: each delivery (to which
client, with which attempt or redelivery count) and each answer that leaves no record
(a 5.x ack, negative ack, change of invisible time, an invisible time that ended; a
Pulsar ack or negative ack). The dashboard's message page (message_life.py) puts these
beside what the store proves, and marks them as known from this log only.

In memory, bounded: the newest ``capacity`` entries of every queue together, kept per
queue so that looking one message up reads only its queue's entries. Nothing survives
a restart; ``since_ms`` says where the log starts (the core's start).

An entry is a tuple ``(time_ms, kind, group, lo, hi, attempt, client, extra, position)``
about the queue offsets ``lo <= offset < hi`` of one queue; ``position`` is the commit
log's end when it happened, so that within one millisecond of a virtual clock it is
placed between the records stored before and after it:

  pull         a 4.x pull read [lo, hi); ``extra``: the tag codes it took (None: all)
  pop          a 5.x receive (``attempt``: its delivery attempt; ``extra``: visible again at)
  ack, nack    a 5.x ack; a change of invisible time to 0 (a negative ack)
  invisible    a 5.x change of invisible time (``extra``: visible again at)
  expired      a 5.x delivery whose invisible time ended unanswered
  dispatch     a Pulsar delivery (``attempt``: its redelivery count)
  pulsar_ack   a Pulsar ack (cumulative: every offset of [lo, hi))
  pulsar_nack  a Pulsar negative ack or redelivery request (``attempt``: the new count)

Cost: one tuple and two deque appends per entry (a 4.x pull is one entry whatever it
reads).
"""
from __future__ import annotations

from collections import deque

__all__ = ["DeliveryLog", "DEFAULT_CAPACITY", "PULL", "POP", "ACK", "NACK", "INVISIBLE", "EXPIRED", "DISPATCH",
           "PULSAR_ACK", "PULSAR_NACK"]

DEFAULT_CAPACITY = 20_000
PULL, POP, ACK, NACK, INVISIBLE, EXPIRED = "pull", "pop", "ack", "nack", "invisible", "expired"
DISPATCH, PULSAR_ACK, PULSAR_NACK = "dispatch", "pulsar_ack", "pulsar_nack"


class DeliveryLog:
    def __init__(self, since_ms: int, capacity: int = DEFAULT_CAPACITY, store=None) -> None:
        """``store``: the core's store (an entry's position is its commit_log_max_offset)."""
        if capacity < 0:
            raise ValueError(f"a delivery log keeps 0 or more entries, not {capacity}")
        self.since_ms = since_ms
        self.capacity = capacity
        self.dropped_upto_ms: int | None = None           # the newest entry dropped to keep the bound
        self._store = store
        self._queues: dict[tuple[str, int], deque] = {}
        self._order: deque[tuple[str, int]] = deque()     # the queue of each entry, oldest first
        self._size = 0

    def _position(self) -> int:
        return self._store.commit_log_max_offset if self._store is not None else 0

    def add(self, topic: str, queue_id: int, entry: tuple) -> None:
        """Keep ``entry`` (its 9 fields, the position last) about a queue."""
        if not self.capacity:
            return
        key = (topic, queue_id)
        q = self._queues.get(key)
        if q is None:
            q = self._queues[key] = deque()
        q.append(entry)
        self._order.append(key)
        self._size += 1
        if self._size > self.capacity:
            self._drop_oldest()

    def _drop_oldest(self) -> None:
        old = self._order.popleft()
        oq = self._queues[old]
        self.dropped_upto_ms = oq.popleft()[0]
        if not oq:
            del self._queues[old]
        self._size -= 1

    # -- what the core tells ------------------------------------------------------------------
    def pulled(self, now: int, group: str, topic: str, queue_id: int, lo: int, hi: int, tag_codes,
               client: str) -> None:
        self.add(topic, queue_id, (now, PULL, group, lo, hi, None, client, tag_codes, self._position()))

    def one(self, now: int, kind: str, group: str, topic: str, queue_id: int, offset: int, attempt: int | None = None,
            client: str = "", extra=None) -> None:
        self.add(topic, queue_id, (now, kind, group, offset, offset + 1, attempt, client, extra, self._position()))

    def span(self, now: int, kind: str, group: str, topic: str, queue_id: int, lo: int, hi: int) -> None:
        """One entry about every offset of [lo, hi) (a cumulative ack)."""
        self.add(topic, queue_id, (now, kind, group, lo, hi, None, "", None, self._position()))

    # -- reading ------------------------------------------------------------------------------
    def about(self, topic: str, queue_id: int, offset: int, tags_code: int | None = None) -> list[tuple]:
        """The entries about the message at ``offset`` of a queue, oldest first
        (``tags_code``: its tags' hash, to leave out pulls that filtered it away)."""
        out = []
        for e in self._queues.get((topic, queue_id), ()):
            if e[3] <= offset < e[4] and (e[1] != PULL or e[7] is None or tags_code in e[7]):
                out.append(e)
        return out

    def entries(self, topic: str, queue_id: int):
        """Every entry about a queue still in the log, oldest first."""
        return iter(self._queues.get((topic, queue_id), ()))

    def first_pulled(self, group: str, topic: str, queue_id: int) -> int | None:
        """Where ``group``'s first pull of a queue still in the log started (None: none is)."""
        for e in self._queues.get((topic, queue_id), ()):
            if e[1] == PULL and e[2] == group:
                return e[3]
        return None

    def __len__(self) -> int:
        return self._size
