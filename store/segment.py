"""One commit-log segment: the bytes of [base, base + size) of the log.

Two kinds with the same interface, so the commit log behaves identically in memory and
on disk:

* MemorySegment holds its records as a list of the ``bytes`` objects that were
  appended (and the position of each). Appending is two list appends — no copying of a
  growing buffer — and reading a whole record hands back the very object appended, so
  a pull copies nothing. ``view()`` joins them when a caller wants one buffer.
* FileSegment keeps records appended since the last write in the same kind of list
  (``pending``), hands them to the OS in one write per ~1 MiB (never one per put), and
  reads what the file holds through a read-only mmap, remapped only when a read reaches
  past the mapped length. ``sync()`` makes what was written durable. Sealed segments
  keep only their mmap (no file descriptor), so many small test segments cost no fds.

Reads return immutable ``bytes``, never views of something that may change or be
unmapped.
"""
from __future__ import annotations

import bisect
import mmap
import os
import struct
import zlib
from pathlib import Path

__all__ = ["MemorySegment", "FileSegment", "RecordList", "segment_name", "WRITE_CHUNK", "CRC_WINDOW", "window_crc",
           "window_start"]

# Pending bytes are handed to the OS once they reach this size: large enough that the
# syscall cost vanishes per record, small enough that little waits in the process.
WRITE_CHUNK = 1 << 20
# The checkpoint vouches for a segment by the CRC32 of its tail: from ``window_start`` —
# the CRC_WINDOW boundary at least CRC_WINDOW before the end — to the end, so between 1
# and 2 MiB (all of a shorter segment). What a crash can tear is the tail, and checking
# only the tail keeps both the put path and opening free of whole-segment CRCs. The
# start moves once per CRC_WINDOW of growth, so each flush continues the last CRC over
# the bytes appended since instead of reading a whole window again.
CRC_WINDOW = 1 << 20
_IOV_MAX = 1024

_I32 = struct.Struct(">i")


def window_start(length: int) -> int:
    """Where the checkpointed tail of a segment ``length`` bytes long starts."""
    return max(0, (length - 1) // CRC_WINDOW * CRC_WINDOW - CRC_WINDOW) if length > 0 else 0


def window_crc(buf, length: int) -> int:
    """CRC32 of ``buf[window_start(length):length]``, the tail a checkpoint vouches for."""
    if not length:
        return 0
    with memoryview(buf) as v:
        return zlib.crc32(v[window_start(length):length])


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

    # Where MessageStore.put's inlined append calls ``write_out``: never, in memory.
    write_chunk = 1 << 62

    def __init__(self, base: int) -> None:
        super().__init__()
        self.base = base
        self.sealed = False

    # append, rollback_to, read and walk are RecordList's: [0, size) is the segment.

    def view(self) -> bytes:
        """The whole segment as one buffer (a copy; for checks and tests)."""
        return self.joined()

    def tail_crc(self) -> int:
        return window_crc(self.joined(), self.size)

    def write_out(self) -> None:
        pass

    def sync(self) -> None:
        pass

    def seal(self) -> None:
        self.sealed = True

    def close(self) -> None:
        pass

    def remove(self) -> None:
        RecordList.__init__(self)


class FileSegment:
    __slots__ = ("base", "path", "fd", "written", "pending", "mm", "sealed", "unsynced", "_tail", "fsync")

    # MessageStore.put appends to ``pending`` itself (as ``append`` does) and calls
    # ``write_out`` once it holds this many bytes. ``pending`` is one RecordList for the
    # segment's life (cleared, never replaced), so the commit log can hold on to it.
    write_chunk = WRITE_CHUNK

    def __init__(self, base: int, path: Path, *, create: bool, fsync: bool = True) -> None:
        self.base = base
        self.fsync = fsync       # False: sync() hands the bytes to the OS only
        self.path = path
        flags = os.O_RDWR | (os.O_CREAT | os.O_EXCL if create else 0)
        self.fd: int | None = os.open(path, flags, 0o644)
        self.written = os.fstat(self.fd).st_size     # bytes the file holds
        self.pending = RecordList()                  # appended, not yet handed to the OS
        self.mm: mmap.mmap | None = None
        self.sealed = False
        self.unsynced = create   # written since the last fsync (a new file's entry too)
        self._tail: tuple[int, int] | None = None    # (length, window CRC) last computed

    @property
    def size(self) -> int:
        return self.written + self.pending.size

    # -- writing ----------------------------------------------------------------------
    def append(self, data: bytes) -> None:
        p = self.pending                 # RecordList.append, inlined: this is the put path
        p.starts.append(p.size)
        p.chunks.append(data)
        p.size += len(data)
        if p.size >= WRITE_CHUNK:
            self.write_out()

    def rollback_to(self, size: int) -> None:
        """Forget everything from ``size`` on (a put that failed half way), whether it
        is still pending or already in the file."""
        if size >= self.written:
            self.pending.rollback_to(size - self.written)
            return
        self.pending.clear()
        self.mm = None                       # a map past the new end would fault
        self._tail = None                    # it covered bytes that are gone
        os.ftruncate(self.fd, size)
        self.written = size

    def write_out(self) -> None:
        """Hand pending bytes to the OS (pwritev, no joining copy). On an error the file
        is cut back to what it held before and the pending bytes stay pending, so the
        segment is unchanged."""
        pending = self.pending
        if not pending.size:
            return
        chunks = pending.chunks
        at = self.written
        try:
            for i in range(0, len(chunks), _IOV_MAX):
                batch = chunks[i:i + _IOV_MAX]
                want = sum(map(len, batch))
                done = os.pwritev(self.fd, batch, at)
                if done < want:          # short write (rare): finish it the plain way
                    rest = memoryview(b"".join(batch))[done:]
                    while rest:
                        n = os.pwrite(self.fd, rest, at + done)
                        rest, done = rest[n:], done + n
                at += want
        except OSError:
            try:
                os.ftruncate(self.fd, self.written)
            except OSError:
                pass
            raise
        self.written = at
        pending.clear()
        self.unsynced = True

    def sync(self) -> None:
        self.write_out()
        if self.unsynced and self.fd is not None:
            if self.fsync:
                os.fsync(self.fd)
            self.unsynced = False
        if self.sealed and self.fd is not None:
            os.close(self.fd)       # a sealed, durable segment only needs its mmap
            self.fd = None

    def seal(self) -> None:
        self.write_out()
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
        written = self.written
        if pos >= written:
            return self.pending.read(pos - written, n)
        mm = self._map()
        end = pos + n
        if end <= written:
            return mm[pos:end]
        return mm[pos:written] + self.pending.read(0, end - written)

    def walk(self, pos: int, stop: int):
        """(buffer, offset in it, segment position) for each record or BLANK starting in
        [pos, stop); ``pos`` must be a record boundary."""
        written = self.written
        if pos < written:
            mm = self._map()
            end = min(stop, written)
            while pos < end and pos + 8 <= written:
                yield mm, pos, pos
                total = _I32.unpack_from(mm, pos)[0]
                if total < 8:
                    return
                pos += total
        if pos >= written:
            for chunk, off, p in self.pending.walk(pos - written, stop - written):
                yield chunk, off, p + written

    def view(self):
        """A buffer over [0, size) for walking records; pending bytes are written first."""
        self.write_out()
        mm = self._map()
        return mm if mm is not None else b""

    def prime_tail(self, length: int, crc: int) -> None:
        """Remember a known window CRC (from the checkpoint), so it is not recomputed."""
        self._tail = (length, crc)

    def tail_crc(self) -> int:
        """``window_crc`` of the written bytes (pending ones are written first): the
        last one continued over the bytes since, while the window's start stays."""
        self.write_out()
        n = self.written
        tail = self._tail
        if tail is not None and tail[0] == n:
            return tail[1]
        if tail is not None and tail[0] < n and window_start(tail[0]) == window_start(n):
            with memoryview(self._map()) as v:
                crc = zlib.crc32(v[tail[0]:n], tail[1])
        else:
            crc = window_crc(self._map(), n)
        self._tail = (n, crc)
        return crc

    # -- repair and shutdown ------------------------------------------------------------
    def truncate(self, size: int) -> None:
        """Cut the file to ``size`` bytes, durably (recovery; nothing pending)."""
        self.write_out()
        self.mm = None
        self._tail = None
        fd = self.fd if self.fd is not None else os.open(self.path, os.O_RDWR)
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            if fd is not self.fd:
                os.close(fd)
        self.written = size
        self.unsynced = False

    def close(self) -> None:
        try:
            self.sync()
        finally:
            if self.fd is not None:
                os.close(self.fd)
                self.fd = None
            self.mm = None

    def remove(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None
        self.mm = None
        self.pending.clear()
        self.path.unlink(missing_ok=True)
