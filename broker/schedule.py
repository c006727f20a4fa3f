"""Delay levels on the broker: divert on put, re-store when due (ScheduleMessageService).

Theory of operation. A message stored with DELAY = L > 0 is not stored in its topic:
it goes to SCHEDULE_TOPIC_XXXX queue L-1 with REAL_TOPIC / REAL_QID recording where it
belongs (L above the table is treated as the last level). The store sets that entry's
tagsCode to store time + delay(L), and the DelayScheduler learns of it. On each tick
the due heads are re-stored ("messageTimeup"): topic and queue restored, DELAY dropped
from the map so it is not delayed again, WAIT=false — while the stored properties
*string* stays the one computed before, so the delivered record still lists DELAY,
REAL_TOPIC and REAL_QID exactly as upstream's does. Per-level delivery offsets are
what delayOffset.json persists; reopening re-reads each level from its offset.
"""
from __future__ import annotations

from rocketmq_emulator.delay_scheduler import DelayLevels, DelayScheduler
from rocketmq_emulator.store.records import MessageRecord, Prop, SysFlag, properties_to_string

from .topics import SCHEDULE_TOPIC

__all__ = ["ScheduleService"]


class ScheduleService:
    def __init__(self, levels: DelayLevels, store) -> None:
        self.levels = levels
        self.store = store
        self.scheduler = DelayScheduler(levels)
        self._restore()

    def _restore(self) -> None:
        """Rebuild pending entries from the schedule queues, from the saved offsets,
        clamped into [queue min, queue max] like correctDelayOffset."""
        saved = self.store.delay_offsets()
        for level in range(1, self.levels.max_level + 1):
            qid = level - 1
            lo, hi = self.store.min_offset(SCHEDULE_TOPIC, qid), self.store.max_offset(SCHEDULE_TOPIC, qid)
            start = min(max(saved.get(level, 0), lo), hi)
            self.scheduler.set_offset(level, start)
            for off in range(start, hi):
                entry = self.store.queue_entry(SCHEDULE_TOPIC, qid, off)
                if entry is not None:
                    self.scheduler.add(level, off, entry[2])

    def divert(self, rec: MessageRecord, level: int | None = None) -> int:
        """Rewrite ``rec`` for SCHEDULE_TOPIC_XXXX when it is delayed: by ``level`` when
        the caller decided it (a send-back: the retry lifecycle's int, whose DELAY
        property is already set), else by its DELAY property (a producer's
        delayTimeLevel); returns the level used (0 = not delayed). Prepared / rollback
        transaction halves are never delayed."""
        if level is None:
            raw = rec.properties.get(Prop.DELAY)
            if not raw:
                return 0
            try:
                level = int(raw)
            except ValueError:
                return 0
        tx = rec.sys_flag & SysFlag.TRANSACTION_MASK
        if level <= 0 or tx in (SysFlag.TRANSACTION_PREPARED, SysFlag.TRANSACTION_ROLLBACK):
            return 0
        if level > self.levels.max_level:
            level = self.levels.max_level
            rec.properties[Prop.DELAY] = str(level)
        rec.properties[Prop.REAL_TOPIC] = rec.topic
        rec.properties[Prop.REAL_QID] = str(rec.queue_id)
        rec.properties_text = properties_to_string(rec.properties)
        rec.topic = SCHEDULE_TOPIC
        rec.queue_id = level - 1
        return level

    def scheduled(self, level: int, queue_offset: int, store_ms: int) -> int:
        """Tell the scheduler about a diverted entry; returns its due time."""
        due = self.levels.deliver_timestamp(level, store_ms)
        self.scheduler.add(level, queue_offset, due)
        return due

    def time_up(self, level: int, queue_offset: int) -> MessageRecord | None:
        """The message to re-store for a due entry, or None if the entry is gone."""
        entry = self.store.queue_entry(SCHEDULE_TOPIC, level - 1, queue_offset)
        if entry is None:
            return None
        old = self.store.look_message_by_offset(entry[0])
        if old is None:
            return None
        props = dict(old.properties)
        props.pop(Prop.DELAY, None)
        props[Prop.WAIT] = "false"
        real_topic = props.get(Prop.REAL_TOPIC)
        if not real_topic:
            return None
        # Positional, in MessageRecord's field order (topic, body, queue_id, flag,
        # properties, sys_flag, born_timestamp, born_host, store_timestamp, store_host,
        # reconsume_times, prepared_transaction_offset, queue_offset, commit_log_offset,
        # body_crc, store_size, properties_text), as send_message does. The text is the
        # string computed before DELAY was removed: upstream's delivered copy still shows
        # DELAY / REAL_TOPIC / REAL_QID.
        return MessageRecord(real_topic, old.body, int(props.get(Prop.REAL_QID, "0")), old.flag, props,
                             old.sys_flag, old.born_timestamp, old.born_host, 0, old.store_host,
                             old.reconsume_times, old.prepared_transaction_offset, 0, 0, 0, 0,
                             old.properties_text)
