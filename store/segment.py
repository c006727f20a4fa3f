"""One commit-log segment: the bytes of [base, base + size) of the log.

Two kinds with the same interface, so the commit log behaves identically in memory and
on disk:

* MemorySegment holds its records as a list of the ``bytes`` objects that were
  appended (and the position of each). Appending is two list appends — no copying of a
  growing buffer — and reading a whole record hands back the very object appended, so
  a pull copies nothing. ``view()`` joins them when a caller wants one buffer.
* FileSegment writes every append to its file before returning (one ``pwrite``: the
  bytes are in the OS page cache, where a killed process cannot lose them — RocketMQ
  gets the same from appending through an mmap), keeps the latest ones in a list too
  (``recent``), so reading fresh records copies nothing, and reads older ones through a
  read-only mmap. ``sync()`` makes what was written durable. Sealed segments keep only
  their mmap (no file descriptor), so many small test segments cost no fds.

Reads return immutable ``bytes``, never views of something that may change or be
unmapped.
"""
from __future__ import annotations

import bisect
import errno
import mmap
import os
import struct
import zlib
from pathlib import Path

from .fsutil import fsync_dir

__all__ = ["MemorySegment", "FileSegment", "RecordList", "segment_name", "RECENT_LIMIT", "WALK_RELEASE"]

# A file segment keeps its latest appended chunks in memory up to about this many bytes
# (then reads of them go through the mmap, remapped once per this much growth).
RECENT_LIMIT = 1 << 20
# A walk over a segment's mmap (recovery, whole-store accounting) gives back the pages it
# has passed every this many bytes: they stay in the page cache, but not in this
# process's RSS, so walking a large log costs no more resident memory than this.
WALK_RELEASE = 16 << 20
_PAGE = mmap.PAGESIZE


def _release(mm: mmap.mmap, start: int, upto: int) -> int:
    """Drop this process's mapping of the whole pages in [start, upto) of ``mm`` (a
    read-only shared file map: the bytes are read again from the page cache if needed);
    returns where the next release starts."""
    end = upto - upto % _PAGE
    if end > start:
        mm.madvise(mmap.MADV_DONTNEED, start, end - start)
    return end

_I32 = struct.Struct(">i")
_pwrite = os.pwrite


def segment_name(base: int) -> str:
    """RocketMQ's file name for a segment: its start offset, 20 digits."""
    return f"{base:020d}"


class RecordList:
    """Appended chunks (records, or a BLANK) and their start positions from 0."""

    __slots__ = ("chunks", "starts", "size")

    def __init__(self) -> None:
        self.chunks: list[bytes] = []
        self.starts: list[int] = []
        self.size = 0

    def append(self, data: bytes) -> None:
        self.starts.append(self.size)
        self.chunks.append(data)
        self.size += len(data)

    def clear(self) -> None:
        """Forget every chunk (the object stays the same: the commit log holds on to it)."""
        self.chunks = []
        self.starts = []
        self.size = 0

    def rollback_to(self, size: int) -> None:
        """Forget the chunks from position ``size`` on (``size`` is a chunk start)."""
        i = bisect.bisect_left(self.starts, size)
        del self.chunks[i:], self.starts[i:]
        self.size = size

    def read(self, pos: int, n: int) -> bytes:
        """Bytes [pos, pos + n) (fewer at the end); the stored object itself when that
        is exactly one chunk."""
        if pos < 0 or pos >= self.size or n <= 0:
            return b""
        i = bisect.bisect_right(self.starts, pos) - 1
        chunk = self.chunks[i]
        off = pos - self.starts[i]
        if off + n <= len(chunk):
            return chunk if off == 0 and n == len(chunk) else chunk[off:off + n]
        parts = [chunk[off:]]
        got = len(chunk) - off
        for chunk in self.chunks[i + 1:]:
            if got >= n:
                break
            parts.append(chunk[:n - got])
            got += len(parts[-1])
        return b"".join(parts)

    def walk(self, pos: int, stop: int):
        """(chunk, 0, position) for each chunk starting in [pos, stop); ``pos`` must be
        a chunk start."""
        i = bisect.bisect_left(self.starts, pos)
        starts, chunks = self.starts, self.chunks
        while i < len(starts) and starts[i] < stop:
            yield chunks[i], 0, starts[i]
            i += 1

    def joined(self) -> bytes:
        return b"".join(self.chunks)


class MemorySegment(RecordList):
    """A segment in memory: its RecordList is the segment (``append`` is
    RecordList.append itself, one call on the put path)."""

    __slots__ = ("base", "sealed")

    def __init__(self, base: int) -> None:
        super().__init__()
        self.base = base
        self.sealed = False

    # append, rollback_to, read and walk are RecordList's: [0, size) is the segment.

    def view(self) -> bytes:
        """The whole segment as one buffer (a copy; for checks and tests)."""
        return self.joined()

    def prefix_crc(self) -> int:
        return zlib.crc32(self.joined())

    def sync(self) -> None:
        pass

    def seal(self) -> None:
        self.sealed = True

    def close(self) -> None:
        pass

    def abandon(self) -> None:
        pass

    def probe(self, size: int) -> None:
        """Memory takes any write (see FileSegment.probe)."""

    def remove(self) -> None:
        RecordList.__init__(self)


class FileSegment:
    """A segment file. Every append is written to the file (one ``pwrite``) before it
    returns, so what the store acknowledged is in the OS page cache and survives the
    process being killed; ``sync()`` makes it survive a power loss too (fsync). The
    latest chunks stay in ``recent`` (up to RECENT_LIMIT bytes) so reads of fresh records
    — a consumer keeping up — neither copy nor remap; older bytes are read through a
    read-only mmap, remapped only when a read reaches past the mapped length. Sealed
    segments keep only their mmap (no file descriptor), so many small test segments cost
    no fds."""

    __slots__ = ("base", "path", "fd", "written", "synced", "recent", "recent_base", "mm", "sealed", "_crc", "fsync")

    def __init__(self, base: int, path: Path, *, create: bool, fsync: bool = True) -> None:
        self.base = base
        self.fsync = fsync       # False: sync() hands the bytes to the OS only
        self.path = path
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        self.fd: int | None = os.open(path, flags, 0o644)
        if create and fsync:
            try:
                fsync_dir(path.parent)   # the new file's entry survives a power loss
            except OSError:
                os.close(self.fd)
                path.unlink(missing_ok=True)
                raise
        self.written = os.fstat(self.fd).st_size     # bytes the file holds (handed to the OS)
        self.synced = 0 if create else self.written  # bytes known to be on disk
        self.recent = RecordList()                   # the latest chunks, from recent_base
        self.recent_base = self.written
        self.mm: mmap.mmap | None = None
        self.sealed = False
        self._crc: tuple[int, int] = (0, 0)        # (length, CRC32 of [0, length)) last computed

    @property
    def size(self) -> int:
        return self.written

    # -- writing ----------------------------------------------------------------------
    def append(self, data: bytes) -> None:
        """Write ``data`` at the end of the file before returning. On an OSError (disk
        full, I/O error) whatever part of it reached the file is cut off again, so the
        segment is unchanged, and the error is raised."""
        at = self.written
        try:
            done = _pwrite(self.fd, data, at)
            if done != len(data):        # short write (a nearly full disk): finish or fail
                self._write_rest(data, done, at)
        except OSError:
            self._cut_back(at)
            raise
        self.written = at + len(data)
        r = self.recent                  # RecordList.append, inlined: this is the put path
        r.starts.append(r.size)
        r.chunks.append(data)
        r.size += len(data)
        if r.size >= RECENT_LIMIT:
            self._forget_recent()

    def _write_rest(self, data: bytes, done: int, at: int) -> None:
        view = memoryview(data)
        while done < len(data):
            n = _pwrite(self.fd, view[done:], at + done)
            if n == 0:
                raise OSError(errno.ENOSPC, "No space left on device (short write)")
            done += n

    def probe(self, size: int) -> None:
        """Try writing ``size`` bytes past the end, then cut them off again: raises the
        OSError an append of that size would meet (a disk still full). The segment is
        unchanged either way."""
        at = self.written
        try:
            done = _pwrite(self.fd, bytes(size), at)
            if done != size:
                raise OSError(errno.ENOSPC, "No space left on device (short write)")
        finally:
            self._cut_back(at)

    def _cut_back(self, size: int) -> None:
        """Cut the file back to ``size`` after a failed write (best effort: if even this
        fails, recovery cuts the torn record at the next open)."""
        try:
            os.ftruncate(self.fd, size)
        except OSError:
            pass

    def _forget_recent(self) -> None:
        """Read the chunks so far through the mmap from now on (bounded memory)."""
        self.recent.clear()
        self.recent_base = self.written

    def rollback_to(self, size: int) -> None:
        """Forget everything from ``size`` on (a put that failed half way): the file is
        cut back there."""
        if size >= self.recent_base:
            self.recent.rollback_to(size - self.recent_base)
        else:
            self.recent.clear()
            self.recent_base = size
        if size < self.written:
            self.mm = None                   # a map past the new end would fault
            if self._crc[0] > size:          # it covered bytes that are gone
                self._crc = (0, 0)
            os.ftruncate(self.fd, size)
            self.written = size
            self.synced = min(self.synced, size)

    def sync(self) -> None:
        """Make what was written durable (fsync, unless ``fsync`` is off); a sealed
        segment then gives up its descriptor."""
        if self.synced < self.written and self.fd is not None:
            if self.fsync:
                os.fsync(self.fd)
            self.synced = self.written
        if self.sealed and self.fd is not None:
            os.close(self.fd)       # a sealed, durable segment only needs its mmap
            self.fd = None

    def seal(self) -> None:
        self.sealed = True

    # -- reading ----------------------------------------------------------------------
    def _map(self) -> mmap.mmap | None:
        """An mmap covering everything written (remapped only when the file grew)."""
        mm = self.mm
        if mm is None or len(mm) < self.written:
            if self.written == 0:
                return None
            fd = self.fd if self.fd is not None else os.open(self.path, os.O_RDONLY)
            try:
                # the old map is dropped, not closed: a walker may still be reading it
                mm = self.mm = mmap.mmap(fd, self.written, access=mmap.ACCESS_READ)
            finally:
                if fd is not self.fd:
                    os.close(fd)
        return mm

    def read(self, pos: int, n: int) -> bytes:
        rb = self.recent_base
        if pos >= rb:
            return self.recent.read(pos - rb, n)
        end = min(pos + n, self.written)
        mm = self.mm
        if mm is None or len(mm) < min(end, rb):
            mm = self._map()
        if end <= rb:
            return mm[pos:end]
        return mm[pos:rb] + self.recent.read(0, end - rb)

    def walk(self, pos: int, stop: int, skips: dict[int, int] | None = None):
        """(buffer, offset in it, segment position) for each record or BLANK starting in
        [pos, stop); ``pos`` must be a record boundary. ``skips``: damaged ranges
        {start: end} stepped over (they lie in what was on disk when the store opened)."""
        rb = self.recent_base
        if pos < rb:
            mm = self._map()
            end = min(stop, rb)
            released = pos - pos % _PAGE          # pages before this are not the walk's
            while pos < end and pos + 8 <= rb:
                if skips and pos in skips:
                    pos = skips[pos]
                    continue
                yield mm, pos, pos
                total = _I32.unpack_from(mm, pos)[0]
                if total < 8:
                    return
                pos += total
                if pos - released >= WALK_RELEASE:
                    released = _release(mm, released, pos)
        if pos >= rb:
            for chunk, off, p in self.recent.walk(pos - rb, stop - rb):
                yield chunk, off, p + rb

    def view(self):
        """A buffer over [0, size) for walking records."""
        mm = self._map()
        return mm if mm is not None else b""

    def prime_crc(self, length: int, crc: int) -> None:
        """Remember a known CRC of [0, length) (checked on open), so it is not recomputed."""
        self._crc = (length, crc)

    def prefix_crc(self) -> int:
        """CRC32 of the whole segment as written: the last one continued over the bytes
        written since (each flush pays only for its new bytes)."""
        n = self.written
        done, crc = self._crc
        if done > n:
            done, crc = 0, 0
        if done < n:
            with memoryview(self._map()) as v:
                crc = zlib.crc32(v[done:n], crc)
        self._crc = (n, crc)
        return crc

    # -- repair and shutdown ------------------------------------------------------------
    def truncate(self, size: int) -> None:
        """Cut the file to ``size`` bytes, durably (recovery)."""
        self.mm = None
        if self._crc[0] > size:
            self._crc = (0, 0)
        self.recent.clear()
        fd = self.fd if self.fd is not None else os.open(self.path, os.O_RDWR)
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            if fd is not self.fd:
                os.close(fd)
        self.written = self.synced = self.recent_base = size

    def close(self) -> None:
        try:
            self.sync()
        finally:
            self.abandon()

    def abandon(self) -> None:
        """Let go of the file as a killed process does: write nothing, sync nothing."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.mm = None

    def remove(self) -> None:
        self.abandon()
        self.recent.clear()
        self.path.unlink(missing_ok=True)
