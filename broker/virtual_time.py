"""A virtual clock that outlives its process (``serve --clock virtual`` on a data dir).

A VirtualClock starts at 2024-01-01T00:00Z. A server restarted on a store it already
used must not go back there: messages it stored later would lie in the clock's future
(delays would wait hours too long, offset-by-time searches answer from the future).
So the clock's time is saved with the store, as the config document ``virtualClock``,
and a restarted server resumes from the later of that time and the newest store
timestamp of any queued message — the latter covers a process killed between two
saves. Only the store's public API is used.
"""
from __future__ import annotations

import logging

from rocketmq_emulator.store import StoreError

__all__ = ["CLOCK_DOCUMENT", "ClockKeeper", "newest_store_timestamp"]

log = logging.getLogger("broker.clock")

CLOCK_DOCUMENT = "virtualClock"


def newest_store_timestamp(store) -> int | None:
    """The newest store timestamp among the last message of every queue (None for an
    empty store): one look-up per queue, not a walk of the log."""
    newest = None
    for topic, queue_ids in store.queues().items():
        for qid in queue_ids:
            last = store.max_offset(topic, qid) - 1
            if last < store.min_offset(topic, qid):
                continue
            rec = store.record_at(topic, qid, last)
            if rec is not None and (newest is None or rec.store_timestamp > newest):
                newest = rec.store_timestamp
    return newest


class ClockKeeper:
    """Resumes a virtual clock from its store and saves it there when it has moved."""

    def __init__(self, store, clock) -> None:
        self.store = store
        self.clock = clock
        self._saved: int | None = None
        self._failing = False

    def resume(self) -> int:
        """Move the clock forward to the saved time or the newest stored timestamp,
        whichever is later (never backwards); returns the clock's time."""
        candidates = [self.clock.now_ms()]
        saved = self._load()
        if saved is not None:
            candidates.append(saved)
            self._saved = saved
        newest = newest_store_timestamp(self.store)
        if newest is not None:
            candidates.append(newest)
        return self.clock.advance_to(max(candidates))

    def save(self) -> None:
        """Save the clock's time if it moved since the last save (cheap when it did not).
        A disk that refuses it (full, read-only) is the flush's to report, as for the
        rest of the store: logged once, tried again at the next flush."""
        now = self.clock.now_ms()
        if now == self._saved:
            return
        try:
            self.store.save_config(CLOCK_DOCUMENT, {"nowMillis": now})
        except (StoreError, OSError) as exc:
            if not self._failing:
                log.error("saving the virtual clock's time failed: %s; tried again at every flush", exc)
            self._failing = True
            return
        self._saved = now
        self._failing = False

    def _load(self) -> int | None:
        # A damaged document stops the start (StoreError), as a damaged topics.json does.
        doc = self.store.load_config(CLOCK_DOCUMENT)
        if doc is None:
            return None
        value = doc.get("nowMillis") if isinstance(doc, dict) else None
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise StoreError(f"config/{CLOCK_DOCUMENT}.json holds {doc!r}, not {{\"nowMillis\": <epoch ms>}}; "
                             f"fix or remove it")
        return value
