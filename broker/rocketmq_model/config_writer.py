"""Writing topics.json and subscriptionGroup.json when they change.

Theory of operation: a config change (a topic created or updated, a group or a
%RETRY% topic auto-created) is applied in memory and recorded at once, as part of the
operation that made it: ``changed`` appends one line naming the changed entry to the
document's journal (``MessageStore.save_config_changes``), in the OS before the
operation answers, so a killed broker loses no answered change. The whole document is
written at the broker's flush (``save``, at most once per flush interval, and at
shutdown), which empties the journal: creating N groups costs O(N), not O(N^2).

A write that fails (disk full, a read-only directory) must take nothing else down: it
is logged once per failure streak, the change stays in memory and unrecorded, and the
next change (which records the unrecorded ones with it) or the next flush tries again.
``error`` tells an operation whose very purpose was the change (UPDATE_AND_CREATE_TOPIC)
that it could not be recorded.
"""
from __future__ import annotations

import logging
from typing import Callable

from .config_table import ConfigTable

__all__ = ["ConfigWriter"]

log = logging.getLogger("broker")


class ConfigWriter:
    def __init__(self, store, tables: tuple[ConfigTable, ...], on_recorded: Callable[[], None]) -> None:
        self._store = store
        self._tables = tables
        self._on_recorded = on_recorded          # a change is in the journal: a flush should come
        self.error: Exception | None = None      # the last write's failure, None once one works
        self._unrecorded: dict[ConfigTable, dict[str, None]] = {t: {} for t in tables}
        for t in tables:
            t.on_change = self.changed

    @property
    def pending(self) -> bool:
        """Whether a change is in memory only (its write failed)."""
        return any(self._unrecorded.values())

    def changed(self, table: ConfigTable, name: str) -> None:
        """Record the change of ``table``'s entry ``name`` (and any change whose record
        failed before) in the document's journal. Cost: O(the entries recorded)."""
        names = self._unrecorded[table]
        names[name] = None
        ops = []
        for n in names:
            entry = table.table.get(n)
            ops.append(["set", [table.TABLE, n], entry.to_json()] if entry is not None else ["del", [table.TABLE, n]])
        ops.append(["set", ["dataVersion", "counter"], table.data_version])
        try:
            self._store.save_config_changes(table.DOCUMENT, ops)
        except Exception as exc:    # a failed write must not escape into the operation
            self._failed(table.DOCUMENT, exc)
            return
        names.clear()
        self._worked()
        self._on_recorded()

    def save(self) -> Exception | None:
        """Write every document changed since its last whole write (the flush); returns
        the failure (logged) or None."""
        for table in self._tables:
            if not table.dirty:
                continue
            try:
                self._store.save_config(table.DOCUMENT, table.to_json())
            except Exception as exc:    # a failed write must not escape into the flush
                self._failed(table.DOCUMENT, exc)
                return exc
            table.dirty = False
            self._unrecorded[table].clear()
        self._worked()
        return None

    def _worked(self) -> None:
        if self.error is not None:
            log.info("topic and group configs written again (the last write had failed: %s)", self.error)
            self.error = None

    def _failed(self, name: str, exc: Exception) -> None:
        if self.error is None:      # one line per failure streak, not one per change
            if isinstance(exc, OSError):
                log.error("cannot write the %s config: %s; the change is kept in memory and written "
                          "again at the next change or flush", name, exc)
            else:
                log.exception("cannot write the %s config", name)
        self.error = exc
