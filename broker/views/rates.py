"""Rates over time: messages produced, consumed, retried and dead-lettered per second of
the broker's clock, per topic and group, for the last ``seconds`` seconds (the dashboard's
charts and ``/metrics``). Sans-I/O; the clock is whatever the core's is, so on a virtual
clock the seconds are the virtual ones and a `clock advance` shows the retries of each
deadline at its own time.

Memory is bounded whatever the traffic: one array of ``seconds`` counters per series
(kind, group, topic), at most ``max_series`` of them and one "(other)" series per kind
(group and topic "(other)") where what is past the cap counts. Each slot is stamped with the
second it counts: a slot stamped with another second reads as 0 and is reset when written,
so nothing is zeroed ahead and a clock jump costs one write, however many seconds it skips.

Cost on the put path (``stored``): a comparison and a dict increment per message; the
counts of the current second move into the arrays once a second (``_flush``), which is
also where a stored topic's name is read — a Pulsar dead- or retry-letter topic, or a
client's fallback send to %RETRY%<group>, counts as dead-lettered or retried for its
group rather than produced (``classify_topic``, cached per topic).

Clock jumps (``jumped``): a virtual clock moved by ``clock advance`` skips the seconds
between where it was and where it lands (what came due on the way still counts at its own
second). The ring keeps the last ``max_jumps`` of them, so a chart can say that the clock
jumped there rather than draw a quiet stretch the broker never lived through as one.

What each kind counts:

  produced       a message stored by a producer (delayed ones when sent, not when due)
  consumed       a group's committed offset moving forward, by how far (4.x commits, 5.x
                 acks, a Pulsar cursor's mark-delete); a group's first commit in a queue
                 counts from where its first pull there began (delivery_log.py), or 0
                 when that is not known
  retried        a failed delivery given another try: a 4.x send-back, a 5.x retry copy
                 (nack or invisible time ended), a Pulsar redelivery (negative ack, ack
                 timeout) or retry letter
  dead_lettered  a dead-letter copy stored (%DLQ%<group>, a Pulsar client's -DLQ copy)
"""
from __future__ import annotations

from array import array
from collections import deque
from typing import Callable

from rocketmq_emulator.store.accounting import PULSAR_DLQ_SUFFIX, PULSAR_RETRY_SUFFIX, pulsar_letter_group
from rocketmq_emulator.store.records import DLQ_PREFIX, POP_RETRY_SEPARATOR, RETRY_PREFIX, Prop

from ..events import EventKind
from ..pulsar_model.names import STORE_PREFIX

__all__ = ["RateRing", "KINDS", "PRODUCED", "CONSUMED", "RETRIED", "DEAD_LETTERED", "OTHER", "classify_topic"]

PRODUCED, CONSUMED, RETRIED, DEAD_LETTERED = "produced", "consumed", "retried", "dead_lettered"
KINDS = (PRODUCED, CONSUMED, RETRIED, DEAD_LETTERED)
OTHER = "(other)"                       # group and topic of what is past max_series
_STORED, _REDELIVERED, _DEAD = EventKind.STORED, EventKind.REDELIVERED, EventKind.DEAD_LETTERED


def classify_topic(topic: str, topics) -> tuple[str, str, str]:
    """(kind, group, topic) a plain store into ``topic`` counts as; ``topics``: the
    broker's topic names (a Pulsar letter's original is the longest one it starts with)."""
    if topic.startswith(RETRY_PREFIX):          # a 4.x client's fallback send-back
        group, _, original = topic[len(RETRY_PREFIX):].partition(POP_RETRY_SEPARATOR)
        return RETRIED, group, original
    if topic.startswith(DLQ_PREFIX):
        return DEAD_LETTERED, topic[len(DLQ_PREFIX):], ""
    if topic.startswith(STORE_PREFIX) and topic.endswith((PULSAR_DLQ_SUFFIX, PULSAR_RETRY_SUFFIX)):
        real = max((t for t in topics if t != topic and topic.startswith(t + "-")), key=len, default="")
        kind = DEAD_LETTERED if topic.endswith(PULSAR_DLQ_SUFFIX) else RETRIED
        return kind, pulsar_letter_group(topic, real or None), real
    return PRODUCED, "", topic


class _Series:
    __slots__ = ("last", "counts", "stamps")

    def __init__(self, seconds: int) -> None:
        self.last = -1                                  # the newest second written
        self.counts = array("I", bytes(4 * seconds))
        self.stamps = array("q", [-1]) * seconds        # the second each slot counts

    def at(self, sec: int, size: int) -> int:
        """The count of second ``sec`` (0 when its slot counts another second)."""
        i = sec % size
        return self.counts[i] if self.stamps[i] == sec else 0


class RateRing:
    def __init__(self, seconds: int = 600, max_series: int = 4096,
                 topics: Callable[[], object] = lambda: (), max_jumps: int = 64) -> None:
        """``topics()``: the broker's topic names, for ``classify_topic``."""
        if seconds < 1 or max_series < 1:
            raise ValueError("a rate ring keeps at least one second and one series")
        self.seconds = seconds
        self.max_series = max_series
        self._topics = topics
        self._series: dict[tuple[str, str, str], _Series] = {}
        self._sec = -1                  # the current second (ms // 1000)
        self._next_ms = 0               # where it ends: the put path compares with this
        self._produced: dict[str, int] = {}             # this second: topic -> stores
        self._other: dict[tuple[str, str, str], int] = {}    # this second: (kind, group, topic) -> n
        self._kind_of: dict[str, tuple[str, str, str]] = {}  # topic -> classify_topic's answer
        self._jumps: deque[tuple[int, int]] = deque(maxlen=max_jumps)    # (from ms, to ms), oldest first

    # -- counting (the core calls these) ------------------------------------------------
    def stored(self, now: int, kind: str, topic: str, props: dict, group: str | None) -> None:
        """A put of the core (``put_message``'s kind and group; a delayed message come due,
        REDELIVERED, is not counted again: the core does not call for it)."""
        if now >= self._next_ms:
            self._turn(now)
        if kind is _STORED and group is None:
            d = self._produced
            d[topic] = d.get(topic, 0) + 1
        elif kind is not _REDELIVERED:
            original = props.get(Prop.RETRY_TOPIC) or props.get(Prop.REAL_TOPIC) or ""
            key = (DEAD_LETTERED if kind is _DEAD else RETRIED, group or "", original)
            self._other[key] = self._other.get(key, 0) + 1

    def add(self, now: int, kind: str, group: str, topic: str, n: int = 1) -> None:
        """``n`` of ``kind`` for (group, topic): consumed, or a Pulsar redelivery."""
        if n <= 0:
            return
        if now >= self._next_ms:
            self._turn(now)
        key = (kind, group, topic)
        self._other[key] = self._other.get(key, 0) + n

    def jumped(self, from_ms: int, to_ms: int) -> None:
        """The clock moved from ``from_ms`` to ``to_ms`` in one step (a clock advance); a
        move within one second is no jump."""
        if to_ms // 1000 > from_ms // 1000 + 1:
            self._jumps.append((from_ms, to_ms))

    # -- reading ----------------------------------------------------------------------------
    def jumps(self, first_s: int, end_s: int) -> list[tuple[int, int]]:
        """The clock's jumps (from ms, to ms) that skipped seconds from ``first_s`` to
        ``end_s`` (inclusive), oldest first."""
        return [(a, b) for a, b in self._jumps if b // 1000 >= first_s and a // 1000 < end_s]

    def window(self, now_ms: int, seconds: int | None = None) -> tuple[int, dict[tuple[str, str, str], list[int]]]:
        """(first second, {(kind, group, topic): counts per second}) of the ``seconds``
        (at most the ring's) up to and including the one of ``now_ms``; series with no
        count in the window are left out."""
        self._flush()
        span = min(seconds or self.seconds, self.seconds)
        end = max(now_ms // 1000, self._sec)
        first = end - span + 1
        out = {}
        for key, s in self._series.items():
            if s.last < first:
                continue
            row = [s.at(t, self.seconds) for t in range(first, end + 1)]
            if any(row):
                out[key] = row
        return first, out

    def series_count(self) -> int:
        return len(self._series)

    # -- inside ---------------------------------------------------------------------------
    def _turn(self, now: int) -> None:
        """A new second: what the last one counted goes into the arrays."""
        self._flush()
        sec = now // 1000
        if sec > self._sec:
            self._sec = sec
        self._next_ms = (self._sec + 1) * 1000

    def _flush(self) -> None:
        if not self._produced and not self._other:
            return
        sec = self._sec
        for topic, n in self._produced.items():
            key = self._kind_of.get(topic)
            if key is None:
                key = self._kind_of[topic] = classify_topic(topic, self._topics())
            self._write(key, sec, n)
        for key, n in self._other.items():
            self._write(key, sec, n)
        self._produced = {}
        self._other = {}

    def _write(self, key: tuple[str, str, str], sec: int, n: int) -> None:
        s = self._series.get(key)
        if s is None:
            if len(self._series) >= self.max_series:
                key = (key[0], OTHER, OTHER)
                s = self._series.get(key)
            if s is None:
                s = self._series[key] = _Series(self.seconds)
        if sec > s.last:
            s.last = sec
        elif sec <= s.last - self.seconds:
            return                      # older than what the ring keeps
        i = sec % self.seconds
        counts = s.counts
        if s.stamps[i] != sec:          # the slot counted an older second: it starts again
            s.stamps[i] = sec
            counts[i] = 0
        counts[i] = min(counts[i] + n, 0xFFFFFFFF)
