"""What the dashboard shows, as one JSON document read from the cores (sans-I/O), and the
two things it can do: move a virtual clock (by a duration, or to the next due message)
and re-drive dead letters.

  clock        {"virtual": bool, "now_ms": int}
  brokers      [{"name", "up", "permission"}]
  topics       [{"broker", "topic", "messages"}]            business topics
  groups       [{"group", "lag", "consumed", "retry_messages", "dead_letters",
                 "ladder": [{"level", "delay_ms", "waiting", "next_due_ms"}]}]
  waiting      [{"broker", "group", "level", "due_ms", "msg_id", "reconsume_times", "body"}]
               each message waiting for its retry's delay level (the first 200)
  delay_queue  [{"level", "delay_ms", "waiting"}]           every delay level, all brokers
  dead_letters [{"broker", "group", "msg_id", "offset_msg_id", "keys", "topic", "attempts", "died_at_ms",
                 "redriven_as"}]
  half_messages [{"broker", "transaction_id", "topic", "queue_id", "producer_group", "stored_ms", "checks",
                 "next_check_ms", "body_size"}]   transactions waiting for their producer (the first 200)

``msg_id`` is the message id (UNIQ_KEY) everywhere, as consumers, `message send` and the
event feed give it; a dead letter has its DLQ record's ``offset_msg_id`` beside it (the
id `dlq list` shows and a re-drive takes).
"""
from __future__ import annotations

from rocketmq_emulator.store.records import DLQ_PREFIX, RETRY_PREFIX, SCHEDULE_TOPIC, Prop, decode_record

from ...dead_letters import dead_letters
from ...store_views import group_progress, stored_messages
from ...events import EventKind

# The retry lifecycle's events, not every store (that would cost each put an event).
FEED_KINDS = (EventKind.DELAYED, EventKind.REDELIVERED, EventKind.SENT_BACK, EventKind.DEAD_LETTERED)

__all__ = ["dashboard_state", "WAITING_SHOWN", "EventFeed", "FEED_KINDS"]

WAITING_SHOWN = 200


def _groups_of(store) -> list[str]:
    names = set()
    for key in store.offset_table():
        topic, _, group = key.rpartition("@")
        if not topic.startswith(RETRY_PREFIX) and group:
            names.add(group)
    for topic in store.queues():
        for prefix in (RETRY_PREFIX, DLQ_PREFIX):
            if topic.startswith(prefix):
                names.add(topic[len(prefix):].partition("+")[0])
    return sorted(names)


def _waiting(core) -> list[dict]:
    """Messages in SCHEDULE_TOPIC_XXXX not delivered yet: level, due time, group."""
    store, out = core.store, []
    delivered = store.delay_offsets()
    delays = core.levels.delays_ms
    for qid in sorted(store.queues().get(SCHEDULE_TOPIC, [])):
        level = qid + 1
        for off in range(max(delivered.get(level, 0), store.min_offset(SCHEDULE_TOPIC, qid)),
                         store.max_offset(SCHEDULE_TOPIC, qid)):
            entry = store.queue_entry(SCHEDULE_TOPIC, qid, off)
            raw = store.read(entry[0]) if entry else None
            if raw is None:
                continue
            rec = decode_record(raw, check_crc=False)
            real = rec.properties.get(Prop.REAL_TOPIC, "")
            group = real[len(RETRY_PREFIX):] if real.startswith(RETRY_PREFIX) else ""
            delay = delays[level - 1] if level <= len(delays) else 0
            out.append({"broker": core.config.broker_name, "group": group, "level": level,
                        "due_ms": rec.store_timestamp + delay, "msg_id": rec.properties.get(Prop.UNIQ_KEY)
                        or rec.offset_msg_id, "reconsume_times": rec.reconsume_times,
                        "body": rec.body[:80].decode("utf-8", "replace")})
    return out


def dashboard_state(cores: list) -> dict:
    clock = cores[0].clock
    levels = cores[0].levels.delays_ms
    topics, groups, waiting, dead, half = [], {}, [], [], []
    for core in cores:
        store, b = core.store, core.config.broker_name
        queues = store.queues()
        for topic in sorted(queues):
            if topic.startswith((RETRY_PREFIX, DLQ_PREFIX)) or core.topics.is_system(topic) or topic == SCHEDULE_TOPIC:
                continue
            topics.append({"broker": b, "topic": topic, "messages": stored_messages(store, topic, queues)})
        if core.stopped:
            continue
        progress = [p for p in group_progress(store) if not p[1].startswith(RETRY_PREFIX)]
        for group in _groups_of(store):
            g = groups.setdefault(group, {"group": group, "lag": 0, "consumed": 0, "retry_messages": 0,
                                          "dead_letters": 0})
            for owner, _topic, committed, lag in progress:
                if owner == group:
                    g["consumed"] += committed
                    g["lag"] += lag
            g["retry_messages"] += stored_messages(store, RETRY_PREFIX + group, queues)
            for d in dead_letters(core, group):
                g["dead_letters"] += 1
                dead.append({"broker": b, "group": group, "msg_id": d.uniq_key or d.msg_id,
                             "offset_msg_id": d.msg_id, "keys": d.keys, "topic": d.original_topic,
                             "attempts": d.attempts, "died_at_ms": d.died_at_ms, "redriven_as": d.redriven_as,
                             "body_size": d.body_size})
        waiting += _waiting(core)
        half += [dict(m.to_json(), broker=b) for m in core.transactions.waiting()]
    waiting.sort(key=lambda w: (w["due_ms"], w["msg_id"]))
    for g in groups.values():
        mine = [w for w in waiting if w["group"] == g["group"]]
        g["ladder"] = [{"level": lvl, "delay_ms": levels[lvl - 1], "waiting": n,
                        "next_due_ms": min(w["due_ms"] for w in mine if w["level"] == lvl)}
                       for lvl in range(1, len(levels) + 1)
                       if (n := sum(1 for w in mine if w["level"] == lvl))]
    delay_queue = [{"level": lvl, "delay_ms": levels[lvl - 1],
                    "waiting": sum(c.schedule.scheduler.pending_count(lvl) for c in cores if not c.stopped)}
                   for lvl in range(1, len(levels) + 1)]
    return {"clock": {"virtual": bool(getattr(clock, "is_virtual", False)), "now_ms": clock.now_ms()},
            "brokers": [{"name": c.config.broker_name, "up": not c.stopped,
                         "permission": c.config.broker_permission} for c in cores],
            "topics": topics, "groups": sorted(groups.values(), key=lambda g: g["group"]),
            "waiting": waiting[:WAITING_SHOWN], "delay_queue": delay_queue, "dead_letters": dead,
            "half_messages": sorted(half, key=lambda m: (m["stored_ms"], m["transaction_id"]))[:WAITING_SHOWN]}


class EventFeed:
    """The newest ``size`` retry-lifecycle events of every broker, numbered: the page asks
    for those after the last number it saw (``after``)."""

    def __init__(self, cores: list, size: int = 500) -> None:
        from collections import deque

        self.size = size
        self._events: deque = deque(maxlen=size)
        self._seq = 0
        self._stops = [core.events.subscribe(self._taker(core.config.broker_name), kinds=FEED_KINDS)
                       for core in cores]

    def _taker(self, broker: str):
        def take(event) -> None:
            self._seq += 1
            self._events.append({"seq": self._seq, "broker": broker, **event.to_json()})
        return take

    def after(self, seq: int, limit: int = 100) -> list[dict]:
        return [e for e in self._events if e["seq"] > seq][-limit:]

    def close(self) -> None:
        for stop in self._stops:
            stop()
