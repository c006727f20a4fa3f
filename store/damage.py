"""Damaged ranges of the commit log: found on open, skipped by every reader, reported.

A record that fails its checks (length, magic, body CRC, the ``__CRC32#`` property, its
own physical offset) with whole, valid records after it in the same segment is damage,
not a torn end: its bytes [start, end) are left as they are, never served, and the log
goes on at ``end``. ``next_valid`` finds where: the next position whose record says it
is at that position and passes every check (a record copied from elsewhere or stray
magic bytes in a body fail the offset check), or the BLANK that ends a sealed segment.
Nothing valid after it, in the last segment, is the torn end of the log: recovery cuts
it there, as before.

``DamageMap`` is what the commit log consults: ``hits`` for reads (one truth test on the
hot path while there is no damage), ``skips`` for walkers that step record by record.
"""
from __future__ import annotations

import bisect
import struct

from .checkpoint import Damage
from .record_view import check_record
from .records import BLANK_MAGIC_CODE, MAGIC_CODE

__all__ = ["Damage", "DamageMap", "next_valid"]

_MAGIC = struct.pack(">I", MAGIC_CODE)
_HDR = struct.Struct(">iI")
_PHYS = struct.Struct(">q")


def next_valid(buf, pos: int, limit: int, base: int) -> int | None:
    """Where, after ``pos``, the next whole valid record — or a BLANK ending the buffer —
    starts in ``buf[:limit]`` (a segment at log offset ``base``); None if nowhere."""
    at = pos + 5                        # a record after pos has its magic at pos + 1 + 4 or later
    while True:
        j = buf.find(_MAGIC, at, limit)
        if j < 0:
            break
        cand = j - 4
        if cand + 36 <= limit and _PHYS.unpack_from(buf, cand + 28)[0] == base + cand:
            try:
                check_record(buf, cand, limit, base + cand)
                return cand
            except ValueError:
                pass
        at = j + 1
    blank = limit - 8
    if blank > pos and _HDR.unpack_from(buf, blank)[1] == BLANK_MAGIC_CODE and _HDR.unpack_from(buf, blank)[0] >= 8:
        return blank
    return None


class DamageMap:
    """The damaged ranges of one log, by start offset."""

    def __init__(self) -> None:
        self.ranges: list[Damage] = []
        self._starts: list[int] = []

    def __bool__(self) -> bool:
        return bool(self.ranges)

    def add(self, d: Damage) -> None:
        i = bisect.bisect_left(self._starts, d.start)
        if i < len(self._starts) and self._starts[i] == d.start:
            return
        self._starts.insert(i, d.start)
        self.ranges.insert(i, d)

    def hits(self, phys: int, n: int) -> bool:
        """Whether [phys, phys + n) touches a damaged range."""
        i = bisect.bisect_right(self._starts, phys + max(n, 1) - 1) - 1
        return i >= 0 and self.ranges[i].end > phys

    def skips(self, base: int, end: int) -> dict[int, int] | None:
        """{start: end} relative to a segment at ``base`` ending by ``end``, or None."""
        i = bisect.bisect_left(self._starts, base)
        out = {}
        while i < len(self.ranges) and self.ranges[i].start < end:
            d = self.ranges[i]
            out[d.start - base] = d.end - base
            i += 1
        return out or None

    def keep_below(self, end: int) -> None:
        """Forget ranges at or after ``end`` (the log was cut there)."""
        i = bisect.bisect_left(self._starts, end)
        del self._starts[i:], self.ranges[i:]
