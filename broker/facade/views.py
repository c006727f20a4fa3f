"""What the dashboard, the metrics and the simulator's accounting read beside the
operations: the event stream, the rates, the waiting half messages, the delay queue's
and the held pulls' counts, the delivery log's start."""
from __future__ import annotations

from typing import Callable, Iterable

__all__ = ["ViewsDoor"]


class ViewsDoor:
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
