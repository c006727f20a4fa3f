"""The one dispatch rule: which consume-queue entry a stored record gets. The live put
(MessageStore.put), recovery (opening.dispatch_from) and the invariant check
(invariants.check_store) all ask it, so a queue rebuilt from the log is the queue the
puts built, byte for byte."""
from __future__ import annotations

from .consume_queue import dispatched, entry_tags_code

__all__ = ["dispatch"]


def dispatch(topic: str, queue_id: int, sys_flag: int, properties_text: str, store_timestamp: int, phys: int,
             size: int, delays_ms: tuple[int, ...]) -> tuple[tuple[str, int], tuple[int, int, int]] | None:
    """``((topic, queue_id), (commit-log offset, size, tagsCode))`` for the record stored
    at ``phys`` with these fields (``properties_text`` as stored), or None for a record
    no queue lists (a prepared or rolled-back transaction half). O(properties) for the
    tagsCode."""
    if not dispatched(sys_flag):
        return None
    return (topic, queue_id), (phys, size, entry_tags_code(topic, properties_text, store_timestamp, delays_ms))
