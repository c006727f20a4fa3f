"""Commit-log segments with the standard library only: listing them, the damage a walk
stops at, and a plain record-by-record walk.

``snapshot`` walks its copies with ``walk_buffer`` so it runs on the base install (no
numpy). spark_analytics' ``commitlog.scan_buffer`` finds the same records with numpy,
many at a time;
both accept a record by the same rule (``record_fits``) and take the same exact step
(``exact_step``) where that rule refuses one, so they stop at the same place with the
same ``Damage``.
"""
from __future__ import annotations

import mmap
import os
import re
import struct
import zlib
from dataclasses import asdict, dataclass

from .records import BLANK_MAGIC_CODE, MAGIC_CODE, RecordError, decode_record, peek_header

__all__ = ["Segment", "Damage", "Walk", "list_segments", "record_fits", "exact_step", "walk_buffer", "map_file",
           "MIN_RECORD"]

_SEGMENT_NAME = re.compile(r"^\d{20}$")
MIN_RECORD = 91             # IPv4 record with empty body, topic and properties

_HEAD = struct.Struct(">iIIiiqqi")      # total, magic, crc, qid, flag, qoff, phys, sysflag
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")


@dataclass(frozen=True, slots=True)
class Segment:
    base: int               # physical offset of the segment's first byte
    path: str
    size: int               # bytes on disk when listed (a live segment keeps growing)


@dataclass(frozen=True, slots=True)
class Damage:
    """A record that stops a walk: ``torn`` = incomplete at the end of the data (a write
    in progress or a crash), ``corrupt`` = bytes that are not a record with data after."""

    offset: int             # physical offset of the bad record
    segment: int            # base of its segment
    kind: str               # "torn" | "corrupt"
    detail: str

    def to_dict(self) -> dict:
        return asdict(self)

    def describe(self) -> str:
        return f"{self.kind} record at commit-log offset {self.offset} (segment {self.segment:020d}): {self.detail}"


@dataclass(frozen=True, slots=True)
class Walk:
    """What a walk of one segment found."""

    count: int              # good records
    last_start: int         # relative position of the last good record (-1: none)
    end: int                # relative position just after the last good record
    sealed: bool            # ended at a BLANK header (the store rolled to the next segment)
    damage: Damage | None


def list_segments(commitlog_dir: str | os.PathLike) -> list[Segment]:
    """The segment files of a commit-log directory, by start offset. Other names are
    ignored (a snapshot may hold a README, an editor may leave a swap file)."""
    out = []
    for entry in os.scandir(commitlog_dir):
        if entry.is_file() and _SEGMENT_NAME.match(entry.name):
            out.append(Segment(int(entry.name), entry.path, entry.stat().st_size))
    out.sort(key=lambda s: s.base)
    return out


def map_file(path: str | os.PathLike) -> memoryview:
    """The bytes of ``path``, mapped read-only (no copy of a 1 GiB segment)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            return memoryview(b"")
        return memoryview(mmap.mmap(f.fileno(), size, prot=mmap.PROT_READ))


def record_fits(mv, pos: int, n: int, phys: int) -> int:
    """The size of the record at ``pos`` when it is complete within ``n`` bytes, says it
    is at ``phys`` and its length fields add up to its size; else 0. The per-record form
    of ``commitlog._check_candidates`` (which applies the same rule to many at once)."""
    if n - pos < MIN_RECORD:
        return 0
    total, magic, _, _, _, _, rec_phys, sys_flag = _HEAD.unpack_from(mv, pos)
    extra = (12 if sys_flag & 0x10 else 0) + (12 if sys_flag & 0x20 else 0)     # IPv6 born / store host
    if magic != MAGIC_CODE or total < MIN_RECORD + extra or pos + total > n or rec_phys != phys:
        return 0
    bl_at = pos + 84 + extra
    (body_len,) = _I32.unpack_from(mv, bl_at)
    if body_len < 0 or body_len > total - MIN_RECORD - extra:
        return 0
    topic_len = mv[bl_at + 4 + body_len]
    if topic_len > 127 or bl_at + 5 + body_len + topic_len > pos + total - 2:
        return 0
    (props_len,) = _I16.unpack_from(mv, bl_at + 5 + body_len + topic_len)
    if props_len < 0 or MIN_RECORD + extra + body_len + topic_len + props_len != total:
        return 0
    return total


def exact_step(mv, pos: int, n: int, base: int) -> tuple[int, bool, Damage | None]:
    """One careful look at ``pos``, where the fast rule refused a record or found none:
    (size of a good record, 0, None), (0, True, None) at a BLANK, or (0, False, damage)."""
    if n - pos < 8:
        return 0, False, Damage(base + pos, base, "torn", f"{n - pos} bytes left, less than a record header")
    size, magic = peek_header(mv, pos)
    if magic == BLANK_MAGIC_CODE:
        return 0, True, None
    if magic != MAGIC_CODE:
        return 0, False, Damage(base + pos, base, "corrupt", f"bad magic code 0x{magic:08X}")
    try:
        rec = decode_record(mv, pos, check_crc=False, with_body=False)
    except RecordError as exc:
        if size < 0 or pos + size > n:
            return 0, False, Damage(base + pos, base, "torn", f"record size {size}, only {n - pos} bytes written")
        return 0, False, Damage(base + pos, base, "corrupt", str(exc).replace(f" at {pos}", ""))
    if rec.commit_log_offset != base + pos:
        return 0, False, Damage(base + pos, base, "corrupt",
                                f"PHYSICALOFFSET field says {rec.commit_log_offset}, the record is at {base + pos}")
    return size, False, None


def body_crc_ok(mv, pos: int) -> bool:
    """Whether the body CRC of the (well-formed) record at ``pos`` matches its body."""
    (crc,) = _U32.unpack_from(mv, pos + 8)
    (sys_flag,) = _I32.unpack_from(mv, pos + 36)
    bl_at = pos + 84 + (12 if sys_flag & 0x10 else 0) + (12 if sys_flag & 0x20 else 0)
    (body_len,) = _I32.unpack_from(mv, bl_at)
    return zlib.crc32(mv[bl_at + 4:bl_at + 4 + body_len]) == crc


def walk_buffer(mv, base: int, *, check_crc: bool = False) -> Walk:
    """Walk one segment's bytes from its start, record by record: the same records,
    end, seal and damage as ``commitlog.scan_buffer``. ``check_crc`` also verifies every
    body CRC (the snapshot does, for the tail); the first mismatch ends the walk."""
    n = len(mv)
    pos, count, last, sealed, damage = 0, 0, -1, False, None
    while pos < n:
        size = record_fits(mv, pos, n, base + pos)
        if not size:
            size, sealed, damage = exact_step(mv, pos, n, base)
            if not size:
                break
        if check_crc and not body_crc_ok(mv, pos):
            damage = Damage(base + pos, base, "corrupt", "body CRC mismatch")
            break
        count, last = count + 1, pos
        pos += size
    return Walk(count, last, pos, sealed, damage)      # pos: just after the last good record
