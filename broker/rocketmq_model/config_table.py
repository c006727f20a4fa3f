"""A config document of named entries — topics.json's topicConfigTable,
subscriptionGroup.json's subscriptionGroupTable — as the broker keeps it in memory: the
table, its dataVersion, and a hook that records every change as it is made
(``ConfigWriter``: one journal line per change, the whole document at the flush)."""
from __future__ import annotations

from typing import Callable

__all__ = ["ConfigTable"]


class ConfigTable:
    """Subclasses name their ``DOCUMENT`` (config/<DOCUMENT>.json), the ``TABLE`` key the
    entries sit under, and how an entry is named and read back (``entry_name``,
    ``entry_from_json``); entries have ``to_json()``. ``dirty``: changed since the
    document was last written whole."""

    DOCUMENT = ""
    TABLE = ""

    def __init__(self, saved: dict | None) -> None:
        self.table: dict = {}
        self.data_version = 0
        self.dirty = False
        # set by ConfigWriter: called with (self, name) after every change
        self.on_change: Callable[["ConfigTable", str], None] | None = None
        if saved:
            for d in (saved.get(self.TABLE) or {}).values():
                entry = self.entry_from_json(d)
                self.table[self.entry_name(entry)] = entry
            self.data_version = int((saved.get("dataVersion") or {}).get("counter", 0))

    @staticmethod
    def entry_name(entry) -> str:
        raise NotImplementedError

    @classmethod
    def entry_from_json(cls, d: dict):
        raise NotImplementedError

    def put(self, entry):
        name = self.entry_name(entry)
        self.table[name] = entry
        self._changed(name)
        return entry

    def delete(self, name: str) -> bool:
        if self.table.pop(name, None) is None:
            return False
        self._changed(name)
        return True

    def _changed(self, name: str) -> None:
        self.data_version += 1
        self.dirty = True
        if self.on_change is not None:
            self.on_change(self, name)

    def to_json(self) -> dict:
        return {self.TABLE: {n: e.to_json() for n, e in sorted(self.table.items())},
                "dataVersion": {"counter": self.data_version}}
