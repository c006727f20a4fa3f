"""Query by key (QUERY_MESSAGE): "topic#key" -> the records carrying that key.

Keys are the words of KEYS (split on spaces, empty words skipped) and UNIQ_KEY, as
upstream's IndexService indexes them; rollback transaction halves are not indexed.

The index lives in memory only and is built lazily: nothing happens on put; a query
first reads the records appended since the previous query (from the log, so a reopened
store indexes its whole log on the first query). Puts stay as cheap as possible and a
store that is never queried by key never pays for it.
"""
from __future__ import annotations

from .record_view import fields, prop_value
from .records import SysFlag

__all__ = ["KeyIndex"]


class KeyIndex:
    def __init__(self) -> None:
        self._postings: dict[str, list[tuple[int, int]]] = {}   # "topic#key" -> [(phys, store ts)]
        self._upto: int | None = None                           # log offset indexed so far

    def catch_up(self, log) -> None:
        """Index the records appended since the last call."""
        start = log.min_offset if self._upto is None else self._upto
        end = log.end
        if start >= end:
            self._upto = end
            return
        postings = self._postings
        for buf, pos, phys in log.records(start, end):
            f = fields(buf, pos)
            if f.sys_flag & SysFlag.TRANSACTION_MASK == SysFlag.TRANSACTION_ROLLBACK:
                continue
            keys = set()
            raw = prop_value(f.properties, "KEYS")
            if raw:
                keys.update(k for k in raw.split(" ") if k)
            uniq = prop_value(f.properties, "UNIQ_KEY")
            if uniq:
                keys.add(uniq)
            for k in keys:
                postings.setdefault(f"{f.topic}#{k}", []).append((phys, f.store_timestamp))
        self._upto = end

    def query(self, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int) -> list[int]:
        """Physical offsets of the newest ``max_num`` records of ``topic`` carrying
        ``key`` with begin_ts <= store time <= end_ts, newest first (as upstream walks
        its hash chains)."""
        out: list[int] = []
        if max_num <= 0:
            return out
        for phys, ts in reversed(self._postings.get(f"{topic}#{key}", ())):
            if begin_ts <= ts <= end_ts:
                out.append(phys)
                if len(out) >= max_num:
                    break
        return out
