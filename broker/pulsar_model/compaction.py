"""Pulsar topic compaction, derived from the log (issue 41, item 8).

Pulsar's compactor reads a topic up to its last message, keeps the latest message of
each key (the partition key; a message whose payload is empty, or marked null,
removes its key; messages without a key are dropped) and writes them to a compacted
ledger; a consumer or reader with ``readCompacted`` reads that ledger up to where the
compaction went (its *horizon*) and the topic after it. Here nothing is copied: the
horizon is one offset per topic (config/pulsarCompaction.json, written when a
compaction ends; the stats show it as Pulsar's ``__compaction`` cursor), and the
compacted view — which offsets below the horizon are kept, and of a batch which indexes
— is worked out from the records whenever it is needed (after a compaction, after a
restart), so it is the log's, as everything else here.

Compaction runs when asked (the REST API's PUT .../compaction) or when the backlog of
the compaction reaches the topic's compaction threshold (its policy, its namespace's,
or ``brokerServiceCompactionThresholdInBytes``): the Pulsar front reports bytes
stored into a topic with a threshold. A compaction runs at once, to the end of the
topic; its status is Pulsar's (NOT_RUN, RUNNING, SUCCESS, ERROR with the error).

Reading keys needs the entry format, which the one who builds the core gives it (a
constructor argument, BrokerCore's ``entry_keys``: the Pulsar entry codec's
``keys_of(record)``), so a core compacts alike whether a Pulsar front was built or not;
it returns per message of an entry (key or None, removes-its-key), or None when the
entry cannot be read (a compressed batch), which is then kept whole.
"""
from __future__ import annotations

from typing import Callable

__all__ = ["Compaction", "COMPACTION_SUBSCRIPTION", "COMPACTION_CONFIG", "record_keys"]

COMPACTION_SUBSCRIPTION = "__compaction"            # what Pulsar calls the compactor's cursor
COMPACTION_CONFIG = "pulsarCompaction"              # config/pulsarCompaction.json: topic -> horizon


def record_keys(rec) -> list[tuple[str | None, bool]] | None:
    """The keys of a record no front described: one message, its KEYS property (what a
    Pulsar partition key is stored as), removed when its body is empty."""
    return [(rec.properties.get("KEYS") or None, not rec.body)]


class Compaction:
    def __init__(self, store, first_offset: Callable[[str], int], threshold_of: Callable[[str], int],
                 keys_of: Callable = record_keys):
        """``first_offset(topic)``: where its live records begin; ``threshold_of(topic)``:
        its compaction threshold in bytes (0: none); ``keys_of(record)``: the keys of an
        entry (default: ``record_keys``, for records no Pulsar client stored)."""
        self.store = store
        self._horizons: dict[str, int] = {k: int(v) for k, v in
                                          (store.load_config(COMPACTION_CONFIG) or {}).items()}
        self.first_offset = first_offset
        self.threshold_of = threshold_of
        self._keys_of = keys_of
        self._views: dict[str, dict[int, int | None]] = {}   # topic -> offset kept -> index mask (None: whole)
        self._status: dict[str, tuple[str, str]] = {}
        self._grown: dict[str, int] = {}                     # bytes stored since the last threshold check

    def horizon(self, topic: str) -> int:
        """The offset below which ``topic`` is compacted (0: never compacted)."""
        return self._horizons.get(topic, 0)

    def status(self, topic: str) -> tuple[str, str]:
        """(status, last error) of the last compaction of ``topic`` in this run; a topic
        compacted before a restart answers SUCCESS."""
        if topic in self._status:
            return self._status[topic]
        return ("SUCCESS", "") if self.horizon(topic) > 0 else ("NOT_RUN", "")

    def compact(self, topic: str) -> tuple[str, str]:
        """Compact ``topic`` to its end now; its new status."""
        self._status[topic] = ("RUNNING", "")
        try:
            end = self.store.max_offset(topic, 0)
            view = self._view_to(topic, end)
        except Exception as exc:             # (a record the reader cannot take) said in the status
            self._status[topic] = ("ERROR", f"{type(exc).__name__}: {exc}")
            return self._status[topic]
        self._views[topic] = view
        self._horizons[topic] = end
        self.store.save_config(COMPACTION_CONFIG, self._horizons)
        self._grown.pop(topic, None)
        self._status[topic] = ("SUCCESS", "")
        return self._status[topic]

    def grown(self, topic: str, nbytes: int) -> bool:
        """``nbytes`` were stored into ``topic``, which has a compaction threshold: compact
        when what was stored since the last compaction reaches it. True when it compacted."""
        total = self._grown.get(topic)
        if total is None:                    # (first time in this run: the backlog the log holds)
            total = self._backlog_bytes(topic)
        else:
            total += nbytes
        threshold = self.threshold_of(topic)
        if threshold <= 0 or total < threshold:
            self._grown[topic] = total
            return False
        self.compact(topic)
        return True

    def _backlog_bytes(self, topic: str) -> int:
        store = self.store
        total = 0
        for offset in range(max(self.horizon(topic), self.first_offset(topic)), store.max_offset(topic, 0)):
            entry = store.queue_entry(topic, 0, offset)
            total += entry[1] if entry else 0
        return total

    def kept(self, topic: str) -> tuple[int, dict[int, int | None]]:
        """(horizon, view): below the horizon only the view's offsets are read by a
        readCompacted cursor, a batch with only the indexes of its mask."""
        horizon = self.horizon(topic)
        if horizon <= 0:
            return 0, {}
        view = self._views.get(topic)
        if view is None:
            view = self._views[topic] = self._view_to(topic, horizon)
        return horizon, view

    def forget(self, topic: str) -> None:
        """A deleted topic: its compaction goes with it."""
        self._views.pop(topic, None)
        self._status.pop(topic, None)
        self._grown.pop(topic, None)
        if self._horizons.pop(topic, None) is not None:
            self.store.save_config(COMPACTION_CONFIG, self._horizons)

    def _view_to(self, topic: str, end: int) -> dict[int, int | None]:
        """Phase one (the latest offset and index of each key), then phase two (what is kept)."""
        store = self.store
        entries: list[tuple[int, list | None]] = []
        latest: dict[str, tuple[int, int]] = {}
        for offset in range(self.first_offset(topic), end):
            rec = store.record_at(topic, 0, offset)
            if rec is None:
                continue
            keys = self._keys_of(rec)
            entries.append((offset, keys))
            for index, (key, removes) in enumerate(keys or ()):
                if key is None:
                    continue
                if removes:
                    latest.pop(key, None)
                else:
                    latest[key] = (offset, index)
        winners = set(latest.values())
        view: dict[int, int | None] = {}
        for offset, keys in entries:
            if keys is None:                 # unreadable: kept whole
                view[offset] = None
                continue
            mask = 0
            for index, (key, _) in enumerate(keys):
                if key is not None and (offset, index) in winners:
                    mask |= 1 << index
            if mask:
                view[offset] = None if mask == (1 << len(keys)) - 1 else mask
        return view
