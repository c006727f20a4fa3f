"""What the dashboard, the metrics and the simulator's accounting read beside the
operations: the event stream, the rates, the waiting half messages, the delay queue's
and the held pulls' counts, the delivery log's start; the read models of one broker
(broker/views/: stored counts, groups' progress, retry ladders' index and bars) and its
dead letters (rocketmq_model/dead_letters.py). What spans several brokers: across.py."""
from __future__ import annotations

from typing import Callable, Iterable

from ..rocketmq_model import dead_letters as _dead
from ..views.retry_ladders import RetryIndex, bar_messages
from ..views.store_views import group_progress, stored_messages

__all__ = ["ViewsDoor"]


class ViewsDoor:
    def fault_figures(self) -> tuple[int, int]:
        """(faults applied by any rule, rules installed) on this broker (/metrics)."""
        return self.faults.applied, len(self.faults.rules())

    def event_log(self):
        """The broker's EventLog (broker/events.py): what happened, in order, to read
        and filter (EmbeddedBroker.events hands it to tests)."""
        return self.events

    def subscribe_events(self, fn: Callable, kinds: Iterable[str] | None = None) -> Callable[[], None]:
        """``fn(event)`` for each new event of ``kinds`` (broker/events.py); returns the
        function that stops it."""
        return self.events.subscribe(fn, kinds=kinds)

    def rate_window(self, now_ms: int, seconds: int | None = None) -> tuple[int, dict]:
        """(first second, {(kind, group, topic): counts per second}) up to ``now_ms``
        (views/rates.py)."""
        return self.rates.window(now_ms, seconds)

    def rate_jumps(self, first_s: int, end_s: int) -> list[tuple[int, int]]:
        """The clock's jumps that skipped seconds between ``first_s`` and ``end_s``."""
        return self.rates.jumps(first_s, end_s)

    def waiting_transactions(self, topic: str | None = None) -> list:
        """The half messages waiting for a commit or rollback (HalfMessage), oldest first."""
        return self.transactions.waiting(topic)

    def waiting_transaction_count(self, topic: str | None = None) -> int:
        return self.transactions.waiting_count(topic)

    @property
    def delay_level_count(self) -> int:
        """How many delay levels the broker has (messageDelayLevel)."""
        return len(self.levels.delays_ms)

    def delay_levels_ms(self) -> list[int]:
        """Each delay level's delay (level 1 first)."""
        return list(self.levels.delays_ms)

    def delayed_waiting(self, level: int) -> int:
        """How many messages wait at a delay level (its schedule's pending entries)."""
        return self.schedule.scheduler.pending_count(level)

    def held_pull_count(self) -> int:
        """How many long-polling pulls are held."""
        return len(self.holds)

    @property
    def deliveries_since_ms(self) -> int:
        """Where the delivery log starts (the core's start, or the time a clock resumed)."""
        return self.deliveries.since_ms

    def restart_delivery_log_at(self, now_ms: int) -> None:
        """The delivery log starts at ``now_ms`` (a virtual clock resumed from its store)."""
        self.deliveries.since_ms = now_ms

    @property
    def rate_seconds(self) -> int:
        """How many seconds of rates the broker keeps."""
        return self.rates.seconds

    # -- the store's counts ------------------------------------------------------------------
    def stored_message_count(self, topic: str, queues: dict | None = None) -> int:
        """Messages in ``topic``'s queues (``queues``: stored_queues(), when already at hand)."""
        return stored_messages(self.store, topic, queues)

    def group_progress(self) -> list[tuple[str, str, int, int]]:
        """(group, topic, committed, lag) of every entry of the consumer offset table."""
        return group_progress(self.store)

    def stored_record(self, topic: str, queue_id: int, offset: int):
        """The decoded record (MessageRecord) at a queue offset, None when there is none."""
        return self.store.record_at(topic, queue_id, offset)

    # -- retry ladders (views/retry_ladders.py) -------------------------------------------------
    def retry_index(self) -> RetryIndex:
        """A new index of this broker's retries (the caller keeps it and ``refresh()``es it)."""
        return RetryIndex(self)

    def retry_bar(self, index: RetryIndex, group: str, dialect: str, step: int | None, which: str,
                  start: int = 0, limit: int = 50) -> tuple[list[dict], int]:
        """(a page of rows, how many) of the messages behind one bar of ``group``'s ladder."""
        return bar_messages(self, index, group, dialect, step, which, start, limit)

    # -- dead letters (rocketmq_model/dead_letters.py) -----------------------------------------
    def dead_letters(self, group: str) -> list:
        """``group``'s dead letters here (DeadLetter each)."""
        return _dead.dead_letters(self, group)

    def dead_letter_counts(self) -> dict[str, int]:
        """{group: dead letters} (%DLQ%<group> and its Pulsar dead-letter topics)."""
        return _dead.dead_letter_counts(self)

    def dead_letter_page(self, group: str, start: int = 0, limit: int = 50) -> tuple[list, int]:
        """(a page of ``group``'s dead letters, newest first, how many there are)."""
        return _dead.dead_letter_page(self, group, start, limit)
