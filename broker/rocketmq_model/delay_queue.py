"""Delayed messages on the broker: divert on put, re-store when due (ScheduleMessageService
for delay levels, 5.x's TimerMessageStore for timestamps), on one path.

Theory of operation. A message is delayed either by a *level* L > 0 (4.x delayTimeLevel,
a send-back's retry) or to a *timestamp* (5.x delivery_timestamp, Pulsar deliver_at,
or the TIMER_* properties a 5.x remoting client sets). It is not stored in its topic:

- by level, it goes to SCHEDULE_TOPIC_XXXX queue L-1 (L above the table is treated as
  the last level); the store sets the entry's tagsCode to store time + delay(L);
- to a timestamp, it goes to the timer topic's queue 0 with TIMER_DELIVER_MS set; the
  store sets the entry's tagsCode to that time.

Either way REAL_TOPIC / REAL_QID record where it belongs and the DelayScheduler learns
of it in the lane of its queue. On each tick the due entries are re-stored
("messageTimeup"): topic and queue restored, the delay dropped from the map so it is
not delayed again, WAIT=false — while the stored properties *string* stays the one
computed before, so the delivered record still lists DELAY (or TIMER_DELIVER_MS),
REAL_TOPIC and REAL_QID exactly as upstream's does. Per-level delivery offsets are what
delayOffset.json persists; the timer lane's progress is config/timerProgress.json.
Reopening re-reads each lane from its saved progress.
"""
from __future__ import annotations

from rocketmq_emulator.delay_scheduler import TIMER_LANE, DelayLevels, DelayScheduler
from rocketmq_emulator.store.records import (PROP_CRC, SCHEDULE_TOPIC, TIMER_TOPIC, MessageRecord, Prop, SysFlag,
                                             properties_to_string)

__all__ = ["ScheduleService", "TIMER_PROGRESS_CONFIG"]

TIMER_PROGRESS_CONFIG = "timerProgress"
_CRC_NAME = PROP_CRC + "\x01"
_REAL_TOPIC, _REAL_QID = Prop.REAL_TOPIC, Prop.REAL_QID
_DELAY_PROPS = (Prop.DELAY, Prop.TIMER_DELIVER_MS, Prop.TIMER_DELAY_MS, Prop.TIMER_DELAY_SEC)


class ScheduleService:
    def __init__(self, levels: DelayLevels, store) -> None:
        self.levels = levels
        self._delays = levels.delays_ms
        self._max_level = levels.max_level
        self.store = store
        self.scheduler = DelayScheduler(levels)
        self._saved_timer_progress = None
        self._restore()

    @staticmethod
    def queue_of(lane: int) -> tuple[str, int]:
        """The (topic, queue id) that holds a lane's entries."""
        return (TIMER_TOPIC, 0) if lane == TIMER_LANE else (SCHEDULE_TOPIC, lane - 1)

    def _restore(self) -> None:
        """Rebuild pending entries from the delay queues, from the saved progress,
        clamped into [queue min, queue max] like correctDelayOffset."""
        saved = self.store.delay_offsets()
        for level in range(1, self.levels.max_level + 1):
            start = self._clamped(level, saved.get(level, 0))
            self.scheduler.set_offset(level, start)
            self._re_add(level, start)
        progress = self.store.load_config(TIMER_PROGRESS_CONFIG) or {}
        floor = self._clamped(TIMER_LANE, int(progress.get("floor", 0)))
        self.scheduler.set_timer_progress(floor, [int(o) for o in progress.get("delivered", ())])
        self._re_add(TIMER_LANE, floor)
        self._saved_timer_progress = self.scheduler.timer_progress()

    def _clamped(self, lane: int, offset: int) -> int:
        topic, qid = self.queue_of(lane)
        return min(max(offset, self.store.min_offset(topic, qid)), self.store.max_offset(topic, qid))

    def _re_add(self, lane: int, start: int) -> None:
        topic, qid = self.queue_of(lane)
        for off in range(start, self.store.max_offset(topic, qid)):
            entry = self.store.queue_entry(topic, qid, off)
            if entry is not None:
                self.scheduler.add(lane, off, entry[2])     # tagsCode = the delivery time

    def divert(self, rec: MessageRecord, now_ms: int, level: int | None = None,
               deliver_at_ms: int | None = None) -> int | None:
        """Rewrite ``rec`` for its delay queue when it is delayed, and return its lane
        (a level, or TIMER_LANE); None when it is stored as it is.

        The delay is ``level`` when the caller decided it (a send-back: the retry
        lifecycle's int, whose DELAY property is already set), else ``deliver_at_ms``
        (a 5.x or Pulsar front's timestamp), else the message's DELAY property (a
        producer's delayTimeLevel), else its TIMER_* properties. A timestamp not in
        the future is no delay. Prepared / rollback transaction halves are never delayed."""
        props = rec.properties
        if level is None and deliver_at_ms is None:
            raw = props.get(Prop.DELAY)
            if raw:
                try:
                    level = int(raw)
                except ValueError:
                    level = None
            if level is None and (Prop.TIMER_DELIVER_MS in props or Prop.TIMER_DELAY_MS in props
                                  or Prop.TIMER_DELAY_SEC in props):
                deliver_at_ms = self.timer_property(props, now_ms)
            if level is None and deliver_at_ms is None:
                return None
        tx = rec.sys_flag & SysFlag.TRANSACTION_MASK
        if tx in (SysFlag.TRANSACTION_PREPARED, SysFlag.TRANSACTION_ROLLBACK):
            return None
        if level is not None:
            if level <= 0:
                return None
            if level > self._max_level:
                level = self._max_level
                props[Prop.DELAY] = str(level)
            lane, topic, qid = level, SCHEDULE_TOPIC, level - 1
        else:
            if deliver_at_ms is None or deliver_at_ms <= now_ms:
                return None
            props.pop(Prop.DELAY, None)         # a timestamp given by the caller wins over a level
            props[Prop.TIMER_DELIVER_MS] = str(deliver_at_ms)
            lane, topic, qid = TIMER_LANE, TIMER_TOPIC, 0
        props[Prop.REAL_TOPIC] = rec.topic
        props[Prop.REAL_QID] = str(rec.queue_id)
        rec.properties_text = properties_to_string(props)
        rec.topic = topic
        rec.queue_id = qid
        return lane

    @staticmethod
    def timer_property(props: dict, now_ms: int) -> int | None:
        """The delivery time a 5.x client's TIMER_* property asks for (absolute
        TIMER_DELIVER_MS, else now + TIMER_DELAY_MS, else now + 1000 * TIMER_DELAY_SEC);
        None for a value that is not a whole number (the message is not delayed)."""
        for key, scale, base in ((Prop.TIMER_DELIVER_MS, 1, 0), (Prop.TIMER_DELAY_MS, 1, now_ms),
                                 (Prop.TIMER_DELAY_SEC, 1000, now_ms)):
            raw = props.get(key)
            if raw is not None:
                try:
                    return base + scale * int(raw)
                except ValueError:
                    return None
        return None

    def scheduled(self, lane: int, rec: MessageRecord, queue_offset: int, store_ms: int, kept=None) -> int:
        """Tell the scheduler about a diverted entry; returns its due time (the same
        the store wrote as the entry's tagsCode). ``kept``: the record with its map as
        stored (broker/kept_records.py), carried until it is due (``due_copy``)."""
        if lane == TIMER_LANE:
            due = int(rec.properties[Prop.TIMER_DELIVER_MS])
        else:       # (DelayLevels.deliver_timestamp: a diverted level is always one of the table's)
            due = store_ms + self._delays[lane - 1]
        self.scheduler.add(lane, queue_offset, due, kept)
        return due

    def time_up(self, lane: int, queue_offset: int) -> MessageRecord | None:
        """The message to re-store for a due entry, read from the store, or None if the
        entry is gone. (``due_copy`` makes it from the record carried since it was
        stored; this is for the entries a reopen found.)"""
        topic, qid = self.queue_of(lane)
        old = self.store.record_at(topic, qid, queue_offset)
        if old is None:
            return None
        props = dict(old.properties)
        for key in _DELAY_PROPS:         # (a delayed copy of a delivered timer message has both)
            props.pop(key, None)
        props[Prop.WAIT] = "false"
        real_topic = props.get(Prop.REAL_TOPIC)
        if not real_topic:
            return None
        # Positional, in MessageRecord's field order (topic, body, queue_id, flag,
        # properties, sys_flag, born_timestamp, born_host, store_timestamp, store_host,
        # reconsume_times, prepared_transaction_offset, queue_offset, commit_log_offset,
        # body_crc, store_size, properties_text), as send_message does. The text is the
        # string computed before the delay was removed: upstream's delivered copy still
        # shows DELAY / REAL_TOPIC / REAL_QID.
        return MessageRecord(real_topic, old.body, int(props.get(Prop.REAL_QID, "0")), old.flag, props,
                             old.sys_flag, old.born_timestamp, old.born_host, 0, old.store_host,
                             old.reconsume_times, old.prepared_transaction_offset, 0, 0, 0, 0,
                             old.properties_text)

    @staticmethod
    def due_copy(kept) -> MessageRecord | None:
        """The message to re-store for a due entry, made from the record carried since it
        was stored (``kept``: the record and its map as stored), None when it names no
        real topic. What ``time_up`` makes, but for its map: this one's is the map as
        stored — the same stored string (DELAY, REAL_TOPIC and REAL_QID still in it, as
        upstream's delivered copy shows them), so the copy is stored as it is, never
        delayed again (the caller passes delay level 0), and the store gives it a CRC
        property of its own."""
        old, props = kept
        real_topic = props[_REAL_TOPIC] if _REAL_TOPIC in props else None     # (not ``get``: every due message)
        if not real_topic:
            return None
        text = old.properties_text
        if text[-19:-10] == _CRC_NAME:      # the store's CRC property, the one there is: not the copy's
            text = text[:-20]               # (with its separator; "" when it is the only one)
        # positional, in MessageRecord's field order (see ``time_up``)
        return MessageRecord(real_topic, old.body, int(props[_REAL_QID] if _REAL_QID in props else "0"), old.flag,
                             dict(props),
                             old.sys_flag, old.born_timestamp, old.born_host, 0, old.store_host,
                             old.reconsume_times, old.prepared_transaction_offset, 0, 0, 0, 0, text)

    def save_timer_progress(self) -> None:
        """Write the timer lane's progress if it moved (at flush, after the log: what
        it calls delivered is durable by then). A refused write raises StoreError."""
        progress = self.scheduler.timer_progress()
        if progress != self._saved_timer_progress:
            floor, delivered = progress
            self.store.save_config(TIMER_PROGRESS_CONFIG, {"floor": floor, "delivered": list(delivered)})
            self._saved_timer_progress = progress
