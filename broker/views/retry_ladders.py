"""A group's retry ladder, counted from the store (sans-I/O, read-only): how many of its
messages wait at each step now, how many passed through it, how many were dead-lettered
— per delay level for a 4.x group, per delivery attempt for a 5.x group, per redelivery
count for a Pulsar subscription — and the messages behind each bar, a page at a time.

  4.x     step = delay level (SCHEDULE_TOPIC_XXXX queue level-1): waiting = the group's
          send-backs at that level not due yet, passed = those already re-stored into
          %RETRY%<group>; the step's delay is the level's
  5.x     step = delivery attempt n >= 2: the retry copies in %RETRY%<group>+<topic>
          with reconsume times n-1 (waiting: not received yet or in flight; passed: done),
          and a FIFO group's messages retried in place; the step's delay is the retry
          interval before attempt n
  pulsar  step = redelivery count n: waiting = messages not acknowledged whose count is n
          now; passed = messages that reached n and moved on (counted by the cursor,
          saved with it; which ones, from the delivery log: its redeliveries to n), plus
          retry letters (reconsume_later copies) with RECONSUMETIMES n

Cost: ``RetryIndex`` reads each record of the topics where retries and dead letters go
once (its group, reconsume times, message id and ORIGIN_MESSAGE_ID) and keeps per-level
counts as the delivery offsets move, so a ladder costs O(levels), a poll of many groups
does not re-read 100,000 waiting messages, and a message's copies are found without
reading what producers store meanwhile (message_life.py asks ``copies``).
"""
from __future__ import annotations

from collections import Counter, OrderedDict

from rocketmq_emulator.store.accounting import PULSAR_DLQ_SUFFIX, PULSAR_RETRY_SUFFIX, pulsar_letter_group
from rocketmq_emulator.store.record_view import head, prop_value
from rocketmq_emulator.store.records import (DLQ_PREFIX, POP_RETRY_SEPARATOR, RETRY_PREFIX, SCHEDULE_TOPIC, Prop,
                                             RecordError)

from ..rocketmq_model.dead_letters import dead_letter_counts, dead_letters
from .delivery_log import PULSAR_NACK
from ..pulsar_model.names import STORE_PREFIX, shown_topic
from ..retry_lifecycle import DEFAULT_MAX_RECONSUME_TIMES, rocketmq5_retry_interval_ms

__all__ = ["RetryIndex", "ladder", "bar_messages", "message_row", "DIALECT_STEPS", "is_copy_topic",
           "fresh_indexes"]

DIALECT_STEPS = {"4.x": "delay level", "5.x": "delivery attempt", "pulsar": "redelivery count"}
ORIGINALS_KEPT = 1024                   # messages whose originals' places an index keeps
WAITING, PASSED, DEAD = "waiting", "passed", "dead"


def message_row(core, rec, **more) -> dict:
    """One message as the dashboard lists it (its id links to the message page)."""
    p = rec.properties
    return {"msg_id": p.get(Prop.UNIQ_KEY) or rec.offset_msg_id, "offset_msg_id": rec.offset_msg_id,
            "broker": core.config.broker_name, "topic": shown_topic(rec.topic), "queue_id": rec.queue_id,
            "queue_offset": rec.queue_offset, "store_ms": rec.store_timestamp, "keys": p.get(Prop.KEYS),
            "reconsume_times": rec.reconsume_times, "body": rec.body[:80].decode("utf-8", "replace"), **more}


def is_copy_topic(topic: str) -> bool:
    """Where retry and dead-letter copies are stored: the delay queue, %RETRY% and %DLQ%
    topics (4.x and 5.x), a Pulsar client's retry and dead-letter topics."""
    return topic == SCHEDULE_TOPIC or topic.startswith((RETRY_PREFIX, DLQ_PREFIX)) or \
        (topic.startswith(STORE_PREFIX) and topic.endswith((PULSAR_DLQ_SUFFIX, PULSAR_RETRY_SUFFIX)))


class _Column:
    """Per queue offset: the group a record belongs to and its reconsume times, read once."""

    __slots__ = ("base", "groups", "times")

    def __init__(self, base: int) -> None:
        self.base = base
        self.groups: list[str] = []
        self.times: list[int] = []

    @property
    def end(self) -> int:
        return self.base + len(self.groups)


class RetryIndex:
    """The per-record facts ladders need, of one core, kept up to date by ``refresh``."""

    def __init__(self, core) -> None:
        self.core = core
        self._columns: dict[tuple[str, int], _Column] = {}
        self._interned: dict[str, str] = {}
        # 4.x, per level: the group's entries at or past the level's delivery offset
        # (waiting) and before it (passed), and the offset up to which that is counted
        self.waiting: dict[int, Counter] = {}
        self.passed: dict[int, Counter] = {}
        self._delivered: dict[int, int] = {}
        # the copies by the message id they keep, and by the original they name
        self._by_uniq: dict[str, list[tuple[str, int, int]]] = {}
        self._by_origin: dict[str, list[tuple[str, int, int]]] = {}
        # message id -> [signature, uses, positions in business topics] (message_life.py's)
        self._originals: OrderedDict = OrderedDict()

    # -- keeping up ---------------------------------------------------------------------------
    def refresh(self) -> None:
        """Read what was stored since the last call; move counts past delivered offsets."""
        core = self.core
        store = core.store
        offsets = core.schedule.scheduler.offsets()
        for level in range(1, len(core.levels.delays_ms) + 1):
            col = self._catch_up(SCHEDULE_TOPIC, level - 1, _schedule_group)
            waiting = self.waiting.setdefault(level, Counter())
            passed = self.passed.setdefault(level, Counter())
            done = self._delivered.get(level, col.base)
            if done == col.base and level not in self._delivered:
                waiting.update(col.groups)          # (the first pass: everything read is waiting)
            upto = max(min(offsets.get(level, 0), col.end), col.base)
            for g in col.groups[done - col.base:upto - col.base]:
                waiting[g] -= 1
                passed[g] += 1
            self._delivered[level] = max(upto, done)
        for topic, qids in store.queues().items():
            if topic != SCHEDULE_TOPIC and is_copy_topic(topic):
                for qid in qids:
                    self._catch_up(topic, qid, None)

    def known_originals(self, uniq: str) -> list[tuple[str, int, int]]:
        """Where message id ``uniq``'s records in business topics were last found (keep_originals)."""
        kept = self._originals.get(uniq)
        return [p[:3] for p in kept[2]] if kept is not None else []

    def originals_if(self, uniq: str, signature, young_after_ms: int) -> list[tuple[str, int, int]] | None:
        """The positions kept for ``uniq`` — (topic, queue, offset, store time) — while its
        ``signature`` is the one they were kept with; None (to be looked up again) when it
        changed, or at their 16th use while the newest was stored after ``young_after_ms``."""
        kept = self._originals.get(uniq)
        if kept is None or kept[0] != signature:
            return None
        kept[1] += 1
        if kept[1] >= 16 and any(p[3] > young_after_ms for p in kept[2]):
            return None
        self._originals.move_to_end(uniq)
        return [p[:3] for p in kept[2]]

    def keep_originals(self, uniq: str, signature, positions: list) -> None:
        self._originals[uniq] = [signature, 0, list(positions)]
        self._originals.move_to_end(uniq)
        while len(self._originals) > ORIGINALS_KEPT:
            self._originals.popitem(last=False)

    def copies(self, uniq: str | None = None, origin: str | None = None) -> list[tuple[str, int, int]]:
        """(topic, queue, offset) of the copies keeping message id ``uniq``, or naming the
        original ``origin`` in ORIGIN_MESSAGE_ID (refreshed by the caller)."""
        if uniq is not None:
            return list(self._by_uniq.get(uniq, ()))
        return list(self._by_origin.get(origin, ()))

    def _catch_up(self, topic: str, qid: int, group_of) -> _Column:
        store = self.core.store
        key = (topic, qid)
        col = self._columns.get(key)
        lo, hi = store.min_offset(topic, qid), store.max_offset(topic, qid)
        if col is None or lo > col.end or hi < col.end:       # new, or the queue is not the one read
            if col is not None:
                self._forget(topic, qid)
            col = self._columns[key] = _Column(lo)
            if topic == SCHEDULE_TOPIC:
                self._delivered.pop(qid + 1, None)
                self.waiting.pop(qid + 1, None)
                self.passed.pop(qid + 1, None)
        interned, new = self._interned, topic == SCHEDULE_TOPIC
        for off in range(col.end, hi):
            entry = store.queue_entry(topic, qid, off)
            raw = store.read(entry[0]) if entry else None
            group, times = "", 0
            if raw is not None:
                try:
                    h = head(raw)
                except RecordError:
                    h = None
                if h is not None:
                    times = h.reconsume_times
                    text = h.properties_text
                    if group_of is not None:
                        group = group_of(text)
                    for prop, table in ((Prop.UNIQ_KEY, self._by_uniq), (Prop.ORIGIN_MESSAGE_ID, self._by_origin)):
                        value = prop_value(text, prop)
                        if value:
                            table.setdefault(value, []).append((topic, qid, off))
            group = interned.setdefault(group, group)
            col.groups.append(group)
            col.times.append(times)
            if new and self._delivered.get(qid + 1) is not None:
                self.waiting.setdefault(qid + 1, Counter())[group] += 1
        return col

    def _forget(self, topic: str, qid: int) -> None:
        for table in (self._by_uniq, self._by_origin):
            for value in list(table):
                kept = [p for p in table[value] if (p[0], p[1]) != (topic, qid)]
                if kept:
                    table[value] = kept
                else:
                    del table[value]

    def column(self, topic: str, qid: int) -> _Column | None:
        return self._columns.get((topic, qid))

    def delivered(self, level: int) -> int:
        """The offset of ``level``'s queue up to which its entries were re-stored (counted)."""
        col = self._columns.get((SCHEDULE_TOPIC, level - 1))
        return self._delivered.get(level, col.base if col is not None else 0)

    def pop_retry_topics(self, group: str) -> list[str]:
        prefix = f"{RETRY_PREFIX}{group}{POP_RETRY_SEPARATOR}"
        return sorted({t for t, _ in self._columns if t.startswith(prefix)})


def fresh_indexes():
    """``index_of(core)``: a RetryIndex of each core, made and read on first use."""
    made: dict[int, RetryIndex] = {}

    def index_of(core) -> RetryIndex:
        index = made.get(id(core))
        if index is None:
            index = made[id(core)] = RetryIndex(core)
            index.refresh()
        return index
    return index_of


def _schedule_group(props_text: str) -> str:
    real = prop_value(props_text, Prop.REAL_TOPIC) or ""
    return real[len(RETRY_PREFIX):] if real.startswith(RETRY_PREFIX) else ""


# -- the ladders ---------------------------------------------------------------------------------
def ladder(core, index: RetryIndex, group: str, dialect: str, dead_count: int | None = None) -> dict:
    """``{"group", "dialect", "step_name", "steps": [{"step", "label", "delay_ms",
    "waiting", "passed", ...}], "dead_lettered", "max_retries"}`` (index refreshed by
    the caller). ``dead_count``: the group's dead letters when already counted."""
    gc = core.groups.table.get(group)
    max_retries = gc.retry_max_times if gc is not None else DEFAULT_MAX_RECONSUME_TIMES
    steps = {"4.x": _ladder_4x, "5.x": _ladder_5x, "pulsar": _ladder_pulsar}[dialect](core, index, group, gc)
    if dead_count is None:
        dead_count = dead_letter_counts(core).get(group, 0)
    return {"group": group, "dialect": dialect, "step_name": DIALECT_STEPS[dialect], "steps": steps,
            "dead_lettered": dead_count, "max_retries": max_retries}


def _ladder_4x(core, index: RetryIndex, group: str, gc) -> list[dict]:
    store, delays = core.store, core.levels.delays_ms
    out = []
    for level in range(1, len(delays) + 1):
        waiting = index.waiting.get(level, Counter()).get(group, 0)
        step = {"step": level, "label": f"L{level}", "delay_ms": delays[level - 1], "waiting": waiting,
                "passed": index.passed.get(level, Counter()).get(group, 0), "next_due_ms": None}
        if waiting:
            col = index.column(SCHEDULE_TOPIC, level - 1)
            start = index.delivered(level)
            for off in range(start, col.end):
                if col.groups[off - col.base] == group:
                    entry = store.queue_entry(SCHEDULE_TOPIC, level - 1, off)
                    step["next_due_ms"] = entry[2] if entry else None
                    break
        out.append(step)
    return out


def _pop_pointer(core, group: str, topic: str, qid: int) -> tuple[int, dict]:
    """(next offset never received, in flight: offset -> (visible at, renewed)) of a
    group's pop queue; without a pop since the start, the committed offset."""
    for s in core.pops.queue_states(group):
        if s["topic"] == topic and s["queue_id"] == qid:
            return s["next_offset"], s["in_flight"]
    return max(core.store.query_offset(group, topic, qid), 0), {}


def _pop_retry_columns(core, index: RetryIndex, group: str):
    """(topic, queue id, its RetryIndex column, next offset never received, in flight) of
    each of a group's pop retry queues the index has a column for."""
    for topic in index.pop_retry_topics(group):
        for qid in core.store.queues().get(topic, []):
            col = index.column(topic, qid)
            if col is not None:
                yield (topic, qid, col, *_pop_pointer(core, group, topic, qid))


def _ladder_5x(core, index: RetryIndex, group: str, gc) -> list[dict]:
    max_retries = gc.retry_max_times if gc is not None else DEFAULT_MAX_RECONSUME_TIMES
    fifo = bool(gc is not None and gc.consume_message_orderly)
    waiting, passed = Counter(), Counter()
    for _, _, col, popped, flight in _pop_retry_columns(core, index, group):
        cut = min(max(popped - col.base, 0), len(col.times))
        for t in col.times[cut:]:
            waiting[t + 1] += 1
        for t in col.times[:cut]:
            passed[t + 1] += 1
        for off in flight:
            if col.base <= off < col.end:
                attempt = col.times[off - col.base] + 1
                passed[attempt] -= 1
                waiting[attempt] += 1
    for s in core.pops.queue_states(group):         # a FIFO group retries in place
        if s["fifo"]:
            for off, n in s["deliveries"].items():
                waiting[n if off in s["in_flight"] else n + 1] += 1
    top = max([max_retries + 1, *waiting, *passed])
    return [{"step": n, "label": f"attempt {n}", "delay_ms": rocketmq5_retry_interval_ms(n - 1, fifo=fifo),
             "waiting": waiting.get(n, 0), "passed": max(passed.get(n, 0), 0)} for n in range(2, top + 1)]


def _pulsar_subscriptions(core, group: str) -> list[dict]:
    return [s for s in core.subscriptions.describe() if s["group"] == group]


def _retry_letters(core, group: str) -> list:
    """The group's Pulsar retry letters (reconsume_later copies), as decoded records."""
    store, out = core.store, []
    for topic, qids in store.queues().items():
        if not topic.endswith(PULSAR_RETRY_SUFFIX) or topic.startswith((RETRY_PREFIX, DLQ_PREFIX)):
            continue
        for qid in qids:
            for off in range(store.min_offset(topic, qid), store.max_offset(topic, qid)):
                rec = store.record_at(topic, qid, off)
                if rec is not None and pulsar_letter_group(topic, rec.properties.get(Prop.REAL_TOPIC)) == group:
                    out.append(rec)
    return out


def _letter_count(rec) -> int:
    text = rec.properties.get("RECONSUMETIMES", "")
    return int(text) if text.isdigit() else rec.reconsume_times


def _ladder_pulsar(core, index: RetryIndex, group: str, gc) -> list[dict]:
    waiting, reached, letters = Counter(), Counter(), Counter()
    for s in _pulsar_subscriptions(core, group):
        for off, n in s["redeliveries"].items():
            if off >= s["mark_delete"] and off not in s["acked"]:
                waiting[n] += 1
        reached.update(s["reached"])
    for rec in _retry_letters(core, group):
        letters[_letter_count(rec)] += 1
    top = max([1, *waiting, *reached, *letters])
    return [{"step": n, "label": f"redelivery {n}", "delay_ms": None, "waiting": waiting.get(n, 0),
             "passed": max(reached.get(n, 0) - waiting.get(n, 0), 0) + letters.get(n, 0),
             "retry_letters": letters.get(n, 0)} for n in range(1, top + 1)]


# -- the messages behind a bar -------------------------------------------------------------------
def bar_messages(core, index: RetryIndex, group: str, dialect: str, step: int | None, which: str,
                 start: int = 0, limit: int = 50) -> tuple[list[dict], int]:
    """(a page of rows, how many there are) of the messages behind one bar: ``which`` is
    waiting, passed or dead (the dead-letter bar; ``step`` unused)."""
    if which == DEAD:
        rows = [{"msg_id": d.msg_id, "offset_msg_id": d.offset_msg_id, "broker": core.config.broker_name,
                 "topic": d.original_topic or "", "keys": d.keys, "reconsume_times": d.attempts, "store_ms": d.died_at_ms,
                 "redriven_as": d.redriven_as} for d in dead_letters(core, group)]
        return rows[start:start + limit], len(rows)
    found = {"4.x": _bar_4x, "5.x": _bar_5x, "pulsar": _bar_pulsar}[dialect](core, index, group, step, which)
    total = len(found)
    rows = []
    for topic, qid, off, more in found[start:start + limit]:
        rec = core.store.record_at(topic, qid, off)
        if rec is not None:
            rows.append(message_row(core, rec, **more))
    return rows, total


def _bar_4x(core, index, group, level, which):
    col = index.column(SCHEDULE_TOPIC, level - 1)
    if col is None:
        return []
    done = index.delivered(level)
    lo, hi = (done, col.end) if which == WAITING else (col.base, done)
    out = []
    for off in range(lo, hi):
        if col.groups[off - col.base] == group:
            entry = core.store.queue_entry(SCHEDULE_TOPIC, level - 1, off)
            out.append((SCHEDULE_TOPIC, level - 1, off, {"due_ms": entry[2] if entry else None, "level": level}))
    return out


def _bar_5x(core, index, group, attempt, which):
    out = []
    for topic, qid, col, popped, flight in _pop_retry_columns(core, index, group):
        for off in range(col.base, col.end):
            if col.times[off - col.base] + 1 != attempt:
                continue
            is_waiting = off >= popped or off in flight
            if is_waiting == (which == WAITING):
                more = {"attempt": attempt}
                if off in flight:
                    more["invisible_until_ms"] = flight[off][0]
                out.append((topic, qid, off, more))
    if which == WAITING:
        for s in core.pops.queue_states(group):
            if s["fifo"]:
                for off, n in sorted(s["deliveries"].items()):
                    if (n if off in s["in_flight"] else n + 1) == attempt:
                        out.append((s["topic"], s["queue_id"], off, {"attempt": attempt}))
    return out


def _bar_pulsar(core, index, group, count, which):
    out = []
    for s in _pulsar_subscriptions(core, group):
        waiting = sorted(off for off, n in s["redeliveries"].items()
                         if n == count and off >= s["mark_delete"] and off not in s["acked"])
        if which == WAITING:
            out += [(s["topic"], 0, off, {"redelivery_count": count}) for off in waiting]
            continue
        # passed: the cursor saves how many reached the count, not which; its redeliveries
        # to the count are in the (bounded, in-memory) delivery log
        seen = set(waiting)
        for e in core.deliveries.entries(s["topic"], 0):
            if e[1] == PULSAR_NACK and e[5] == count and e[2] == group and e[3] not in seen:
                seen.add(e[3])
                out.append((s["topic"], 0, e[3], {"redelivery_count": count, "known_from": "event log"}))
    if which == WAITING:
        return out
    for rec in _retry_letters(core, group):
        if _letter_count(rec) == count:
            out.append((rec.topic, rec.queue_id, rec.queue_offset, {"redelivery_count": count,
                                                                     "retry_letter": True}))
    return out
