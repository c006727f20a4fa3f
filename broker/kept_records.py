"""The records this broker stored lately, kept as objects: what a send-back, a woken long
poll and an in-process consumer read instead of decoding the stored bytes again.

DESIGN.md: a record is encoded once, when it is appended; while it is in memory the
broker carries the record object. The object a put stored is kept here by its commit-log
offset, with its property map *as stored*: what decoding its bytes gives (the stored
properties string parsed — the store's CRC property in it, whatever the string leaves
out missing), so a reader sees exactly what a decode would show. A writer that knows
that map (a copy made from another kept record) hands it over; otherwise it is parsed
from the stored string on first use. The record's own ``properties`` (the map its writer
built) is never read here.

Bounded: the newest ``limit`` records (at most twice that between trims); a record not
kept any more is decoded from the store, as before. About 2 KiB a record.
"""
from __future__ import annotations

from rocketmq_emulator.store.records import SysFlag, string_to_properties

__all__ = ["KeptRecords", "KEPT_RECORDS"]

KEPT_RECORDS = 1024
_V6 = SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6


class KeptRecords:
    __slots__ = ("_by_offset", "_count", "limit")

    def __init__(self, limit: int = KEPT_RECORDS) -> None:
        self._by_offset: dict[int, tuple] = {}
        self._count = 0
        self.limit = limit

    def keep(self, rec, props: dict | None = None) -> tuple | None:
        """``rec`` was just stored (its fields are the stored ones); ``props``: its map as
        stored, when the writer knows it. A record with an IPv6 host is not kept (a
        decode spells its address its own way). Returns what it kept, (rec, props), or
        None (what ``get`` would give at once, but for a map not known yet)."""
        if rec.sys_flag & _V6:
            return None
        entry = self._by_offset[rec.commit_log_offset] = (rec, props)
        self._count += 1
        if self._count > 2 * self.limit:
            items = list(self._by_offset.items())[-self.limit:]
            self._by_offset = dict(items)
            self._count = len(items)
        return entry

    def get(self, offset: int) -> tuple | None:
        """(record, its map as stored) of the record stored at ``offset``, None when it
        is not kept."""
        by_offset = self._by_offset
        if offset not in by_offset:         # (not ``get``: a call fewer, twice per delivery)
            return None
        entry = by_offset[offset]
        rec, props = entry
        if rec.commit_log_offset != offset:         # the object was stored again since
            del self._by_offset[offset]
            return None
        if props is None:
            entry = self._by_offset[offset] = (rec, string_to_properties(rec.properties_text))
        return entry

    def __len__(self) -> int:
        return len(self._by_offset)
