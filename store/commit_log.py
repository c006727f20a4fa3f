"""The commit log: one append-only sequence of records, cut into segments.

Theory of operation
-------------------
*Layout.* The log is addressed by physical offset. A segment holds [base, base + size)
and is named by its base (20 digits). Segments are not preallocated: a file is as long
as what was written to it. A record never spans segments: when the next record (plus
room for the 8-byte BLANK) does not fit in the active segment, a BLANK header (i32 size
of the unused rest, u32 0xCBD43194) is appended, the segment is *sealed*, and the next
one starts at base + segment_size. Every record says where it is (PHYSICALOFFSET =
base + position), which recovery uses to tell a real record from stray bytes.

*Durability.* Every append is written to its segment file before it returns (one
``pwrite``), so an acknowledged record is in the OS page cache: a killed process loses
nothing it acknowledged (RocketMQ's ASYNC_FLUSH gets the same by appending through an
mmap). ASYNC_FLUSH: ``flush()`` (the broker's tick, every flushIntervalCommitLog) fsyncs;
a power loss can lose what was appended since the last flush. SYNC_FLUSH: each put is
fsync'd before it returns. ``fsync=False`` skips the fsyncs, for stores that only need
to survive a process crash. Creating a segment fsyncs the commitlog directory, so the
file itself survives a power loss. After the data is durable, ``flush()`` writes the
checkpoint: per segment its length, the CRC32 of its last MiB and its sealed flag, and
the log end. The checkpoint is only ever *behind* the durable log.

*The put path.* ``append_record`` encodes and appends; it does the plain case of
``append`` inline (the record fits the active segment and needs no fsync), so
``active``, ``file`` (the active FileSegment; None in memory), ``tail`` (the RecordList
an append goes to: the active MemorySegment, or the FileSegment's ``recent``) and
``fast_limit`` follow every change of the last segment (``_activate``). ``last`` is the
bytes of the record appended last: what a put wrote, for a caller that hands them on.

*Recovery* keeps every whole, valid record, cuts the torn end of the log, skips and
reports damage, and logs what it did:

1. Segment files are listed in base order. A sealed segment must be followed by the
   segment its BLANK points to; anything else means a missing file (StoreError — cutting
   would throw away data that is still there). A segment after an *unsealed* one can
   only be a crash left-over (the log ended in the unsealed one) and is removed.
2. For each segment the checkpoint vouches for (same base, file at least as long), the
   CRC32 of all the bytes it recorded is compared (one C call per segment, ~4 GB/s
   here: opening a 1 GiB log costs about a quarter of a second; every segment, not only
   the last ones — bit rot does not pick the tail). A match trusts those bytes without
   reading a record, and the damage the checkpoint lists in them is still skipped; a
   mismatch, a short file or no checkpoint means that segment is walked from its start.
3. Walking = record by record from the first unvouched byte: every record is checked
   completely (length, magic, inner lengths, body CRC, its own physical offset, and the
   ``__CRC32#`` property that covers header and properties). A record that fails, with
   valid records after it in the segment (``damage.next_valid``), is damage: its bytes
   stay where they are, recorded (offset, segment, reason), and every reader skips them.
   With none after it, the log ends there: a torn write or damaged tail is cut and every
   later segment is deleted — unless the next segment file starts with a valid record
   (only this segment's end, BLANK included, was damaged: it is sealed again). A BLANK
   seals the segment (bytes after it are cut).
4. If the last segment is sealed, an empty next segment is created so that a put never
   has to check for it.

Consume queues are derived from the log and repaired after it (see consume_queue.py).
"""
from __future__ import annotations

import bisect
import os
import re
import struct
import zlib
from dataclasses import dataclass, field
from pathlib import Path

from .checkpoint import Checkpoint, SegmentMark
from .damage import Damage, DamageMap, next_valid
from .errors import StoreError
from .record_view import check_record
from .records import BLANK_MAGIC_CODE, MAGIC_CODE, SysFlag, blank_record, encode_record, encode_usual, relocated
from . import segment
from .segment import FileSegment, MemorySegment, RecordList, segment_name

__all__ = ["CommitLog", "LogRecovery", "RecordTooLarge", "BLANK_SIZE"]

BLANK_SIZE = 8

_HDR = struct.Struct(">iI")
_PHYS = struct.Struct(">q")
_SEGMENT_NAME = re.compile(r"^\d{20}$")
_NOT_V6 = ~(SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6)


class RecordTooLarge(ValueError):
    """A record that cannot fit any segment (with room for the BLANK)."""


@dataclass(slots=True)
class LogRecovery:
    truncated_at: int | None = None
    reason: str | None = None
    bytes_cut: int = 0
    removed_segments: list[str] = field(default_factory=list)
    records_walked: int = 0
    notes: list[str] = field(default_factory=list)
    doubted: bool = False         # some checkpointed segment was shorter or its CRC differed
    reach: int = 0                # past the nominal end of every segment file found (before any cut)
    damage: list[Damage] = field(default_factory=list)   # skipped ranges (from the walk or the checkpoint)


class CommitLog:
    def __init__(self, directory: Path | None, segment_size: int, *, sync: bool = False, fsync: bool = True) -> None:
        self.dir = directory
        self.fsync = fsync            # False: "durable" means handed to the OS (StoreConfig.fsync)
        self.segment_size = segment_size
        self.sync_each = sync
        self.segments: list[MemorySegment | FileSegment] = []
        self.bases: list[int] = []
        self.end = 0                  # where the next record goes (the log's max offset)
        self.damage = DamageMap()     # ranges recovery found damaged: never read, skipped by walkers
        self._to_sync: list[FileSegment] = []   # sealed segments awaiting their fsync
        # For MessageStore.put's inlined append: the active segment, its ``append`` when
        # it is a file (None in memory), the RecordList an in-memory append goes to (the
        # MemorySegment itself; None for a file), and the log end a record may reach
        # through a plain append (room left for the BLANK; -1 with SYNC_FLUSH: always
        # through ``append``).
        self.active: MemorySegment | FileSegment | None = None
        self.file: FileSegment | None = None
        self.tail: RecordList | None = None
        self.fast_limit = -1
        self.last = b""               # the bytes of the record appended last (what a put wrote)
        self.refused = 0              # the size of the last append an OSError refused (a full disk)
        if directory is None:
            self._add_segment(0)

    # -- bounds --------------------------------------------------------------------------
    @property
    def min_offset(self) -> int:
        return self.bases[0] if self.bases else 0

    # -- appending -----------------------------------------------------------------------
    def append(self, data: bytes) -> int:
        """Append one encoded record whose PHYSICALOFFSET field says ``self.end``; returns
        where it went. If it does not fit the active segment, the segment is sealed and
        the record (its offset field patched) goes to the start of the next one.
        Raises RecordTooLarge, or OSError with the log unchanged (and ``refused`` set to its size)."""
        seg = self.segments[-1]
        phys = self.end
        n = len(data)
        try:                    # (try is free in 3.11 until something raises)
            if phys + n + BLANK_SIZE - seg.base > self.segment_size:
                data, phys = self._make_room(seg, data)
                seg = self.segments[-1]
            try:
                seg.append(data)
                if self.sync_each:
                    seg.sync()
            except OSError:
                seg.rollback_to(phys - seg.base)
                raise
        except OSError:
            self.refused = n
            raise
        self.end = phys + n
        self.last = data
        return phys

    def append_record(self, rec, queue_offset: int, now_ms: int, *, prop_crc: bool,
                      topic_field: bytes | None = None, body_crc: int | None = None) -> int:
        """The one way a record enters the log: encode ``rec`` as stored at the log's end
        with this queue offset and store time, and append it. Returns where it went, and
        fills the fields a stored record has (queue_offset, commit_log_offset,
        store_timestamp, sys_flag, body_crc, store_size, properties_text) — on success
        only: on any error (RecordError, RecordTooLarge, OSError, bad field types) the
        log and ``rec`` are as they were.

        Cost: one encode and, on disk, one ``pwrite``. Speed trick, kept here: with
        ``topic_field`` (the caller's cached TOPIC field) and the CRC property on, the
        usual record is encoded by ``records.encode_usual`` and, when it fits the active
        segment and needs no fsync, appended without ``append``'s checks; anything else
        takes ``encode_record`` + ``append``, the reference (``body_crc``, the body's CRC
        when the caller knows it, is for the quick path only)."""
        phys = self.end
        usual = None
        if topic_field is not None and prop_crc:
            usual = encode_usual(rec, topic_field, queue_offset, phys, now_ms, body_crc)
        if usual is None:
            return self._append_reference(rec, queue_offset, now_ms, prop_crc)
        data, crc, text = usual
        total = len(data)
        if phys + total <= self.fast_limit:     # fits, no fsync: the segment's append, inlined
            file = self.file
            if file is not None:                # FileSegment.append, inlined
                at = file.written
                try:
                    done = segment._pwrite(file.fd, data, at)   # (the segment's writer)
                    if done != total:           # short write (a nearly full disk): finish or fail
                        file._write_rest(data, done, at)
                except OSError:
                    file._cut_back(at)          # nothing of it stays in the file
                    self.refused = total
                    raise
                file.written = at + total
            tail = self.tail                    # RecordList.append, inlined
            tail.starts.append(tail.size)
            tail.chunks.append(data)
            tail.size += total
            if file is not None and tail.size >= segment.RECENT_LIMIT:
                file._forget_recent()
            self.end = phys + total
            self.last = data
            at = phys
        else:
            at = self.append(data)
            if at != phys:                      # moved to the next segment: its CRC was redone
                text = text[:-10] + self.read(at + total - 10, 10).decode()
        rec.queue_offset = queue_offset
        rec.commit_log_offset = at
        rec.store_timestamp = now_ms
        rec.sys_flag &= _NOT_V6
        rec.body_crc = crc
        rec.store_size = total
        rec.properties_text = text
        return at

    def _append_reference(self, rec, queue_offset: int, now_ms: int, prop_crc: bool) -> int:
        saved = (rec.queue_offset, rec.commit_log_offset, rec.store_timestamp, rec.properties_text,
                 rec.sys_flag, rec.body_crc, rec.store_size)
        phys = self.end
        rec.queue_offset = queue_offset
        rec.commit_log_offset = phys
        rec.store_timestamp = now_ms
        try:
            at = self.append(encode_record(rec, prop_crc=prop_crc))
        except BaseException:
            (rec.queue_offset, rec.commit_log_offset, rec.store_timestamp, rec.properties_text,
             rec.sys_flag, rec.body_crc, rec.store_size) = saved
            raise
        if at != phys:                          # rolled over to a new segment
            rec.commit_log_offset = at
            if prop_crc:                        # (its CRC property was redone there)
                rec.properties_text = rec.properties_text[:-10] + self.read(at + rec.store_size - 10, 10).decode()
        return at

    def _make_room(self, seg, data: bytes) -> tuple[bytes, int]:
        n = len(data)
        if n + BLANK_SIZE > self.segment_size:
            raise RecordTooLarge(f"a record of {n} bytes does not fit a segment of {self.segment_size} bytes")
        if self.end == seg.base:      # an oversized segment left by a bigger segment_size: use it
            return data, self.end
        self._roll(seg)
        phys = self.segments[-1].base
        return relocated(data, phys), phys

    def _roll(self, seg) -> None:
        """Seal ``seg`` with a BLANK and start the next segment."""
        pos = seg.size
        nominal_end = max(self.segment_size, pos + BLANK_SIZE)
        nxt = self._add_segment(seg.base + nominal_end)    # first: if this fails, seg is untouched
        try:
            seg.append(blank_record(nominal_end - pos))
            seg.seal()
            if self.sync_each:
                seg.sync()
        except OSError:
            self.segments.pop()
            self.bases.pop()
            nxt.remove()
            seg.rollback_to(pos)
            seg.sealed = False
            self.end = seg.base + pos
            self._activate()
            raise
        if isinstance(seg, FileSegment) and not self.sync_each:
            self._to_sync.append(seg)

    def skip_past(self, floor: int) -> None:
        """Continue the log in a new segment whose base is at least ``floor``: the
        active segment is sealed (and empty ones after it, if ``floor`` is further).
        After a possible power loss this keeps every physical offset — and so every
        offsetMsgId — a client may have been given from going to another record."""
        while self.end < floor:
            self._roll(self.segments[-1])

    def _add_segment(self, base: int):
        if self.dir is None:
            seg = MemorySegment(base)
        else:
            seg = FileSegment(base, self.dir / segment_name(base), create=True, fsync=self.fsync)
        self.segments.append(seg)
        self.bases.append(base)
        self.end = base
        self._activate()
        return seg

    def _activate(self) -> None:
        """Point ``active`` and the rest at the last segment (after any change of it)."""
        seg = self.active = self.segments[-1]
        on_file = isinstance(seg, FileSegment)
        self.file = seg if on_file else None
        self.tail = seg.recent if on_file else seg
        self.fast_limit = -1 if self.sync_each else seg.base + self.segment_size - BLANK_SIZE

    # -- reading -------------------------------------------------------------------------
    def _segment_at(self, phys: int):
        i = bisect.bisect_right(self.bases, phys) - 1
        return self.segments[i] if i >= 0 else None

    def read(self, phys: int, n: int) -> bytes | None:
        """``n`` bytes at ``phys`` (a consume-queue entry's record), or None if absent."""
        seg = self._segment_at(phys)
        if seg is None:
            return None
        pos = phys - seg.base
        if pos + n > seg.size or (self.damage and self.damage.hits(phys, n)):
            return None
        return seg.read(pos, n)

    def read_record(self, phys: int) -> bytes | None:
        """The whole record that starts exactly at ``phys``, else None (a BLANK, a
        position inside a record, or beyond the end)."""
        seg = self._segment_at(phys)
        if seg is None or phys < 0 or (self.damage and self.damage.hits(phys, 36)):
            return None
        pos = phys - seg.base
        head = seg.read(pos, 36)
        if len(head) < 36:
            return None
        total, magic = _HDR.unpack_from(head)
        if magic != MAGIC_CODE or total < 91 or pos + total > seg.size:
            return None
        if _PHYS.unpack_from(head, 28)[0] != phys:
            return None
        return seg.read(pos, total)

    def records(self, start: int | None = None, end: int | None = None):
        """Yield (buffer, offset in it, phys) for each record from ``start`` (a record
        boundary) up to ``end``, skipping BLANKs. Buffers stay valid, but callers must
        not put while iterating."""
        start = self.min_offset if start is None else max(start, self.min_offset)
        end = self.end if end is None else end
        i = max(bisect.bisect_right(self.bases, start) - 1, 0)
        unpack = _HDR.unpack_from
        damage = self.damage
        for seg in self.segments[i:]:
            base = seg.base
            if base >= end:
                return
            stop = min(seg.size, end - base)
            skips = damage.skips(base, base + stop) if damage else None
            walk = seg.walk(max(start - base, 0), stop, skips) if skips else seg.walk(max(start - base, 0), stop)
            for buf, off, pos in walk:
                if unpack(buf, off)[1] != MAGIC_CODE:
                    break             # the BLANK
                yield buf, off, base + pos

    # -- durability ----------------------------------------------------------------------
    def probe(self, size: int) -> None:
        """Raise the OSError an append of ``size`` bytes to the active segment would meet;
        nothing changes (see FileSegment.probe)."""
        self.segments[-1].probe(size)

    def flush(self) -> None:
        """Make everything appended durable: one fsync per touched segment, or with
        ``fsync=False`` only handed to the OS."""
        for seg in self._to_sync:
            seg.sync()
        self._to_sync.clear()
        self.segments[-1].sync()

    def marks(self) -> tuple[SegmentMark, ...]:
        """What a checkpoint records about the (flushed) segments."""
        return tuple(SegmentMark(s.base, s.size, s.prefix_crc(), s.sealed) for s in self.segments)

    def close(self) -> None:
        self.flush()
        for seg in self.segments:
            seg.close()

    # -- recovery ------------------------------------------------------------------------
    def recover(self, ckpt: Checkpoint | None) -> LogRecovery:
        """Open the segments on disk; see the theory of operation above."""
        assert self.dir is not None and not self.segments
        rep = LogRecovery()
        names = []
        for p in sorted(self.dir.iterdir()):
            if _SEGMENT_NAME.match(p.name) and p.is_file():
                names.append(p.name)
            else:
                rep.notes.append(f"ignored {p.name!r} in commitlog/ (not a segment)")
        segs = [FileSegment(int(n), self.dir / n, create=False, fsync=self.fsync) for n in names]
        rep.reach = max((s.base + max(self.segment_size, s.written) for s in segs), default=0)
        marks = {m.base: m for m in ckpt.segments} if ckpt else {}
        known = list(ckpt.damage) if ckpt else []
        kept: list[FileSegment] = []
        next_base: int | None = None      # where the last sealed segment says the next starts
        ended = False                     # the log ended in an earlier segment
        for i, seg in enumerate(segs):
            if ended:
                self._remove(seg, rep, "it follows the end of the log")
                continue
            if kept:
                prev = kept[-1]
                if not prev.sealed:
                    # The log ends inside prev (it has no BLANK): a later file can only be
                    # left over from a crash around a roll.
                    if seg.written:
                        self._cut_at(prev.base + prev.size, "the segment before the next one was never sealed", rep)
                    self._remove(seg, rep, "it follows a segment that was never sealed")
                    ended = True
                    continue
                if seg.base != next_base:
                    for s in segs:
                        s.close()
                    raise StoreError(
                        f"commit log in {str(self.dir)!r} is missing a segment: {segment_name(prev.base)} is "
                        f"sealed and points at {segment_name(next_base)}, but the next file is "
                        f"{segment_name(seg.base)}")
            start = self._vouched(seg, marks.get(seg.base), known, rep)
            ok = self._walk(seg, start, rep, segs[i + 1] if i + 1 < len(segs) else None)
            kept.append(seg)
            if seg.sealed:
                next_base = seg.base + seg.size - BLANK_SIZE + _blank_size(seg)
            ended = not ok
        if kept:
            self.segments = list(kept)
            self.bases = [s.base for s in kept]
            last = kept[-1]
            self.end = last.base + last.size
            self._activate()
            if last.sealed:
                self._add_segment(next_base)
        else:
            self._add_segment(0)          # an empty log starts at 0
        if ckpt is not None and self.end < ckpt.log_end and rep.truncated_at is None:
            # nothing was torn, but bytes once made durable are gone (a file lost its tail)
            self._cut_at(self.end, f"the log ends {ckpt.log_end - self.end} bytes before the end the "
                                   f"checkpoint recorded ({ckpt.log_end})", rep)
        for d in rep.damage:
            if d.end <= self.end:
                self.damage.add(d)
        for seg in self.segments[:-1]:
            seg.sync()      # sealed: closes its fd, reads go through the mmap
        return rep

    def _vouched(self, seg: FileSegment, mark: SegmentMark | None, known: list[Damage], rep: LogRecovery) -> int:
        """How many bytes of ``seg`` the checkpoint vouches for (0: none): all of them if
        their CRC32 (one C call over the segment) is the one the checkpoint recorded. The
        damage the checkpoint lists inside them is still there."""
        if mark is None:
            return 0
        if seg.written < mark.length:
            rep.notes.append(f"segment {segment_name(seg.base)} is shorter than the checkpoint says "
                             f"({seg.written} < {mark.length} bytes)")
            rep.doubted = True
            return 0
        if mark.length:
            with memoryview(seg._map()) as v:
                crc = zlib.crc32(v[:mark.length])
            if crc != mark.crc:
                rep.notes.append(f"segment {segment_name(seg.base)}: its first {mark.length} bytes differ from "
                                 f"the checkpoint's CRC; checking every record")
                rep.doubted = True
                return 0
        seg.sealed = mark.sealed
        seg.prime_crc(mark.length, mark.crc)
        rep.damage += [d for d in known if seg.base <= d.start < seg.base + mark.length]
        return mark.length

    def _walk(self, seg: FileSegment, start: int, rep: LogRecovery, after: FileSegment | None) -> bool:
        """Check the records of ``seg`` from ``start`` to its end. A bad record with valid
        ones after it is damage (kept in place, skipped, reported); with none after it,
        the log ends there and is cut — unless the next segment file (``after``) starts
        with a valid record, when only this segment's end was damaged (it is sealed again).
        Returns False if the log ends inside this segment."""
        limit = seg.written
        if start >= limit:
            return True
        if seg.sealed:     # vouched up to and including its BLANK: what follows is junk
            rep.notes.append(f"segment {segment_name(seg.base)}: {limit - start} bytes after its BLANK cut")
            self._truncate(seg, start, rep)
            return True
        buf = seg._map()
        pos = start
        reason = None
        while pos < limit:
            if limit - pos >= BLANK_SIZE:
                total, magic = _HDR.unpack_from(buf, pos)
                if magic == BLANK_MAGIC_CODE:
                    if total < BLANK_SIZE:
                        reason = f"bad BLANK size {total}"
                        break
                    seg.sealed = True
                    pos += BLANK_SIZE
                    if limit > pos:
                        rep.notes.append(f"segment {segment_name(seg.base)}: {limit - pos} bytes after "
                                         f"its BLANK cut")
                    break
            try:
                pos += check_record(buf, pos, limit, seg.base + pos)
                rep.records_walked += 1
                continue
            except ValueError as exc:
                reason = str(exc)
            resume = next_valid(buf, pos, limit, seg.base)
            if resume is None:
                break
            rep.damage.append(Damage(seg.base + pos, seg.base + resume, reason))
            pos, reason = resume, None
        del buf                 # the map must not be read past the cut below
        if reason is not None and after is not None and _starts_with_a_record(after):
            self._seal_damaged(seg, pos, after.base, reason, rep)
            return True
        if reason is not None:
            self._cut_at(seg.base + pos, reason, rep)
        if pos < limit:
            self._truncate(seg, pos, rep)
        return reason is None

    def _seal_damaged(self, seg: FileSegment, pos: int, next_base: int, reason: str, rep: LogRecovery) -> None:
        """``seg`` is damaged from ``pos`` to its end, BLANK included, and the next
        segment holds records: write a BLANK pointing at it over the last 8 bytes (or at
        ``pos`` when fewer are left), keep what is before as damage."""
        at = max(pos, seg.written - BLANK_SIZE)
        if at > pos:
            rep.damage.append(Damage(seg.base + pos, seg.base + at, reason))
        os.pwrite(seg.fd, blank_record(next_base - seg.base - at), at)
        if at + BLANK_SIZE < seg.written:
            os.ftruncate(seg.fd, at + BLANK_SIZE)
        os.fsync(seg.fd)
        seg.written = seg.synced = seg.recent_base = at + BLANK_SIZE
        seg.mm = None
        seg.sealed = True
        rep.notes.append(f"segment {segment_name(seg.base)}: damaged from offset {seg.base + pos} to its end; "
                         f"sealed again with a BLANK, the next segment's records are kept")

    def _cut_at(self, phys: int, reason: str, rep: LogRecovery) -> None:
        if rep.truncated_at is None:
            rep.truncated_at = phys
            rep.reason = reason

    def _truncate(self, seg: FileSegment, size: int, rep: LogRecovery) -> None:
        rep.bytes_cut += seg.written - size
        seg.truncate(size)

    def _remove(self, seg: FileSegment, rep: LogRecovery, why: str) -> None:
        rep.bytes_cut += seg.written
        rep.removed_segments.append(f"{segment_name(seg.base)} ({why})")
        seg.remove()


def _starts_with_a_record(seg: FileSegment) -> bool:
    """Whether the segment file begins with a whole valid record (or an empty segment's
    BLANK): it was written after the one before it was sealed."""
    if seg.written < BLANK_SIZE:
        return False
    buf = seg._map()
    if _HDR.unpack_from(buf, 0)[1] == BLANK_MAGIC_CODE:
        return seg.written == BLANK_SIZE
    try:
        check_record(buf, 0, seg.written, seg.base)
        return True
    except ValueError:
        return False


def _blank_size(seg) -> int:
    """The size field of the BLANK that ends a sealed segment."""
    return _HDR.unpack_from(seg.read(seg.size - BLANK_SIZE, BLANK_SIZE))[0]
