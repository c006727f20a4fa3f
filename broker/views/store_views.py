"""Counts read off a store for the views of a running broker (the dashboard, /metrics):
messages in a topic, and each group's progress per topic. Cost: one max offset per queue."""
from __future__ import annotations

__all__ = ["stored_messages", "group_progress"]


def stored_messages(store, topic: str, queues: dict | None = None) -> int:
    """Messages in ``topic``'s queues (``queues``: store.queues(), when already at hand)."""
    qids = (queues if queues is not None else store.queues()).get(topic, [])
    return sum(max(store.max_offset(topic, q), 0) for q in qids)


def group_progress(store) -> list[tuple[str, str, int, int]]:
    """(group, topic, committed, lag) for every entry of the consumer offset table."""
    out = []
    for key, offsets in sorted(store.offset_table().items()):
        topic, _, group = key.rpartition("@")
        committed = sum(max(o, 0) for o in offsets.values())
        lag = sum(max(store.max_offset(topic, int(q)) - max(o, 0), 0) for q, o in offsets.items())
        out.append((group, topic, committed, lag))
    return out
