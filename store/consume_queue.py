"""Consume queues: per topic and queue id, the list of its records in the log.

An entry is 20 bytes, big-endian: i64 physical offset, i32 record size, i64 tagsCode
(logical offset = entry index). In memory a queue is one bytearray of entries
[base, max_offset); on disk it is consumequeue/<topic>/<queueId>/<start>, files of
``entries_per_file`` entries named by the byte offset of their first entry (20 digits),
as upstream names them.

Queues are derived data: everything here can be rebuilt from the commit log, so files
are written at flush without fsync, and whatever a crash or damage leaves (a short
file, a zeroed tail, flipped bytes, a missing directory) is repaired on open by
``load_queue`` + a log walk (see opening.recover_queues): entries that point past
the log end are dropped, and a queue whose files do not start with exactly the entries
the checkpoint recorded (their CRC32, ``entries_crc``) is rebuilt from the log.
"""
from __future__ import annotations

import mmap
import os
import re
import struct
import zlib
from pathlib import Path

from .errors import StoreError
from .records import SCHEDULE_TOPIC, RecordError, _topic_field

__all__ = ["ConsumeQueue", "QueueFiles", "ENTRY", "ENTRY_SIZE", "SCHEDULE_TOPIC", "load_queue",
           "write_queue", "list_queue_dirs", "valid_topic_dir"]

ENTRY = struct.Struct(">qiq")
ENTRY_SIZE = 20
_FILE_NAME = re.compile(r"^\d{20}$")


SCHEDULE_TOPIC_FIELD = _topic_field(SCHEDULE_TOPIC)   # the put path knows its queues by this object


def _put_topic_field(topic) -> bytes | None:
    if type(topic) is not str:
        return None
    if topic == SCHEDULE_TOPIC:
        return SCHEDULE_TOPIC_FIELD
    try:
        return _topic_field(topic)
    except (RecordError, UnicodeError):
        return None


def valid_topic_dir(topic: str) -> bool:
    """Whether ``topic`` can name a directory (upstream topics are [%|a-zA-Z0-9_-]+;
    the store only refuses what would break the layout)."""
    return bool(topic) and topic not in (".", "..") and not any(c in topic for c in "/\\\0")


class QueueFiles:
    """Reads of a queue's written entries from its files: one read-only mmap per file,
    made on the first read and remapped when a read reaches past it (files only grow,
    except when cut: ``forget`` first). Maps are dropped at every write, so the pages a
    long run has read do not stay in the process."""

    __slots__ = ("dir", "file_bytes", "_maps")

    def __init__(self, qdir: Path, entries_per_file: int) -> None:
        self.dir = qdir
        self.file_bytes = entries_per_file * ENTRY_SIZE
        self._maps: dict[int, mmap.mmap] = {}

    def read(self, start: int, stop: int) -> bytes:
        """The entries [start, stop) as bytes."""
        pos, end = start * ENTRY_SIZE, stop * ENTRY_SIZE
        parts = []
        while pos < end:
            file_start = pos - pos % self.file_bytes
            upto = min(end, file_start + self.file_bytes)
            mm = self._map(file_start, upto - file_start)
            parts.append(mm[pos - file_start:upto - file_start])
            pos = upto
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def _map(self, file_start: int, need: int) -> mmap.mmap:
        mm = self._maps.get(file_start)
        if mm is not None and len(mm) >= need:
            return mm
        if mm is not None:
            mm.close()
            del self._maps[file_start]
        path = self.dir / f"{file_start:020d}"
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as exc:
            raise StoreError(f"cannot read consume-queue file {str(path)!r}: {exc.strerror}") from exc
        try:
            size = os.fstat(fd).st_size
            if size < need:
                raise StoreError(f"consume-queue file {str(path)!r} has {size} bytes, entries up to {need} "
                                 f"were written there (changed while the store ran?)")
            mm = self._maps[file_start] = mmap.mmap(fd, size, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)
        return mm

    def forget(self) -> None:
        for mm in self._maps.values():
            mm.close()
        self._maps.clear()


class ConsumeQueue:
    """Entries [base, max_offset) of one queue. ``min_offset`` >= base is the first
    entry whose record is still in the log; ``flushed`` how many are in the files.

    Memory holds the entries [mem_base, max_offset) in ``buf``; with ``files`` (a file
    store) the entries before mem_base are read from the queue's files, and each write
    drops what it wrote from memory (``write_queue``), so memory holds only what was
    put since the last flush. mem_base <= flushed always: what is only in memory is
    never missing from it. Without ``files`` (the in-memory store) mem_base == base."""

    __slots__ = ("topic", "queue_id", "base", "mem_base", "buf", "max_offset", "min_offset", "flushed", "cut",
                 "topic_field", "files", "_crc")

    def __init__(self, topic: str, queue_id: int, base: int = 0, buf: bytearray | None = None,
                 files: QueueFiles | None = None) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.base = self.mem_base = base
        self.buf = buf if buf is not None else bytearray()
        self.max_offset = base + len(self.buf) // ENTRY_SIZE
        self.min_offset = base
        self.flushed = self.max_offset
        self.cut = False        # the files hold more than [.., flushed): cut them on the next write
        self.files = files
        # the record's TOPIC field for MessageStore.put's inlined encoder; None sends the
        # puts of this queue through the general path (a topic that cannot be encoded).
        # The schedule topic's is SCHEDULE_TOPIC_FIELD, by which put knows its tagsCode is a time.
        self.topic_field = _put_topic_field(topic)
        self._crc = (base, 0)       # (offset, CRC32 of the entries [base, offset)) last computed

    # -- reading -------------------------------------------------------------------------
    def read(self, start: int, stop: int) -> bytes:
        """The entries [start, stop) (within [base, max_offset)) as bytes. O(stop - start),
        plus one mmap per file on the first read of a file since the last write."""
        mem = self.mem_base
        if start >= mem:
            return bytes(self.buf[(start - mem) * ENTRY_SIZE:(stop - mem) * ENTRY_SIZE])
        if stop <= mem:
            return self.files.read(start, stop)
        return self.files.read(start, mem) + bytes(self.buf[:(stop - mem) * ENTRY_SIZE])

    def _chunks(self, start: int, stop: int, per: int = 1 << 16):
        """The entries [start, stop) in pieces of at most ``per`` entries (bounded memory)."""
        while start < stop:
            upto = min(stop, start + per)
            yield self.read(start, upto)
            start = upto

    def at(self, offset: int) -> tuple[int, int, int]:
        """(phys, size, tagsCode) of the entry at ``offset`` in [base, max_offset)."""
        if offset >= self.mem_base:
            return ENTRY.unpack_from(self.buf, (offset - self.mem_base) * ENTRY_SIZE)
        return ENTRY.unpack(self.files.read(offset, offset + 1))

    def entry(self, offset: int) -> tuple[int, int, int] | None:
        if self.min_offset <= offset < self.max_offset:
            return self.at(offset)
        return None

    def phys_at(self, offset: int) -> int:
        return self.at(offset)[0]

    def last_end(self) -> int | None:
        """Log offset just past the last entry's record, None when empty."""
        if self.max_offset == self.base:
            return None
        phys, size, _ = self.at(self.max_offset - 1)
        return phys + size

    def count_below(self, log_end: int) -> int:
        """Logical offset of the first entry whose record does not end by ``log_end``
        (entries are in log order, so a binary search)."""
        lo, hi = self.base, self.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            phys, size, _ = self.at(mid)
            if phys + size <= log_end:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def first_at_or_after(self, log_min: int) -> int:
        """Logical offset of the first entry whose record starts at or after ``log_min``."""
        lo, hi = self.base, self.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            if self.phys_at(mid) < log_min:
                lo = mid + 1
            else:
                hi = mid
        return lo

    def entries_crc(self) -> int:
        """CRC32 of the entries [base, max_offset): the last one continued over the
        entries since (a checkpoint records it; opening compares the files against it)."""
        upto, crc = self._crc
        if upto > self.max_offset or upto < self.base:
            upto, crc = self.base, 0
        for chunk in self._chunks(upto, self.max_offset):
            crc = zlib.crc32(chunk, crc)
        self._crc = (self.max_offset, crc)
        return crc

    def prime_crc(self, count: int, crc: int) -> bool:
        """Whether the entries [base, count) have this CRC32; if so it is kept as the
        start of the running one."""
        mine = 0
        for chunk in self._chunks(self.base, count):
            mine = zlib.crc32(chunk, mine)
        if mine != crc:
            return False
        self._crc = (count, crc)
        return True

    # -- changing ------------------------------------------------------------------------
    def append(self, phys: int, size: int, tags: int) -> None:
        self.buf += ENTRY.pack(phys, size, tags)
        self.max_offset += 1

    def replace(self, offset: int, phys: int, size: int, tags: int) -> None:
        """Overwrite the entry at ``offset`` (a repair): the files are rewritten from it."""
        if offset < self.mem_base:         # back into memory, from it on, to be written again
            self.buf[:0] = self.files.read(offset, self.mem_base)
            self.mem_base = offset
        ENTRY.pack_into(self.buf, (offset - self.mem_base) * ENTRY_SIZE, phys, size, tags)
        if offset < self.flushed:
            self.flushed = offset
            self.cut = True
        if offset < self._crc[0]:
            self._crc = (self.base, 0)

    def truncate(self, max_offset: int) -> None:
        """Keep entries below ``max_offset``."""
        max_offset = max(max_offset, self.base)
        if max_offset >= self.mem_base:
            del self.buf[(max_offset - self.mem_base) * ENTRY_SIZE:]
        else:
            self.buf = bytearray()
            self.mem_base = max_offset
        self.max_offset = max_offset
        self.min_offset = min(self.min_offset, max_offset)
        self.flushed = min(self.flushed, max_offset)
        self.cut = True
        self._crc = (self.base, 0)

    def reset(self, base: int) -> None:
        """Empty the queue, its first entry to be ``base``."""
        self.buf = bytearray()
        self.base = self.mem_base = self.max_offset = self.min_offset = base
        self.flushed = base
        self.cut = True
        self._crc = (base, 0)

    def written(self) -> None:
        """The entries up to ``flushed`` are in the files: with ``files``, drop them from
        memory (their CRC is taken first, so the checkpoint never reads them back)."""
        if self.files is None or self.flushed == self.mem_base:
            return
        self.entries_crc()
        self.files.forget()
        del self.buf[:(self.flushed - self.mem_base) * ENTRY_SIZE]
        self.mem_base = self.flushed

    def check(self) -> None:
        """The invariants of the fields (MessageStore._check)."""
        assert self.base <= self.mem_base <= self.flushed <= self.max_offset, \
            (self.base, self.mem_base, self.flushed, self.max_offset)
        assert self.files is not None or self.mem_base == self.base
        assert self.max_offset == self.mem_base + len(self.buf) // ENTRY_SIZE
        assert self.base <= self.min_offset <= self.max_offset


# -- files -------------------------------------------------------------------------------
def queue_dir(root: Path, topic: str, queue_id: int) -> Path:
    return root / topic / str(queue_id)


def list_queue_dirs(root: Path) -> tuple[list[tuple[str, int, Path]], list[str]]:
    """(topic, queue id, dir) for every queue directory, and notes about anything else."""
    found, notes = [], []
    if not root.is_dir():
        return found, notes
    for tdir in sorted(root.iterdir()):
        if not tdir.is_dir():
            notes.append(f"ignored consumequeue/{tdir.name} (not a directory)")
            continue
        for qdir in sorted(tdir.iterdir()):
            if qdir.is_dir() and qdir.name.isdigit() and str(int(qdir.name)) == qdir.name:
                found.append((tdir.name, int(qdir.name), qdir))
            else:
                notes.append(f"ignored consumequeue/{tdir.name}/{qdir.name} (not a queue id)")
    return found, notes


def load_queue(qdir: Path, topic: str, queue_id: int, entries_per_file: int) -> tuple[ConsumeQueue, list[str]]:
    """Open a queue's files (entries stay in them: read on demand). Files must be
    contiguous and full except the last; at the first irregularity the rest is ignored
    (the log walk supplies those entries again). A partial entry at the end and zeroed
    entries (size 0) at either end are dropped (cut on the next write)."""
    notes: list[str] = []
    files = QueueFiles(qdir, entries_per_file)
    file_bytes = files.file_bytes
    names = sorted(p.name for p in qdir.iterdir() if _FILE_NAME.match(p.name))
    start = expect = None
    total = 0               # bytes of entries from ``start``
    for name in names:
        off = int(name)
        if off % file_bytes:
            notes.append(f"{topic}/{queue_id}: file {name} does not start at a multiple of "
                         f"{file_bytes} bytes (entries per file changed?); rebuilding the queue")
            cq = ConsumeQueue(topic, queue_id, files=files)
            cq.cut = True
            return cq, notes
        if expect is not None and off != expect:
            notes.append(f"{topic}/{queue_id}: file {name} does not follow the previous one; ignoring it and later files")
            break
        size = (qdir / name).stat().st_size
        if start is None:
            start = off
        total += min(size, file_bytes)
        if size < file_bytes:
            if name != names[-1]:
                notes.append(f"{topic}/{queue_id}: file {name} is short; ignoring the files after it")
            break
        expect = off + file_bytes
    if start is None:
        return ConsumeQueue(topic, queue_id, files=files), notes
    if total % ENTRY_SIZE:
        notes.append(f"{topic}/{queue_id}: dropped a partial entry at the end")
    first = start // ENTRY_SIZE
    end = first + total // ENTRY_SIZE
    lo = _skip_zeroed(files, first, end, forward=True)        # padding before the first entry
    hi = _skip_zeroed(files, lo, end, forward=False)          # a zeroed tail
    cq = ConsumeQueue(topic, queue_id, lo, files=files)
    cq.mem_base = cq.max_offset = cq.flushed = hi
    # a zeroed tail, a partial entry or ignored files are cut on the next write
    cq.cut = bool(notes) or hi != end
    return cq, notes


def _skip_zeroed(files: QueueFiles, lo: int, hi: int, *, forward: bool, per: int = 4096) -> int:
    """Forward: the first entry in [lo, hi) whose size is not 0 (hi if none).
    Backward: one past the last such entry (lo if none). Read in pieces."""
    while lo < hi:
        a, b = (lo, min(hi, lo + per)) if forward else (max(lo, hi - per), hi)
        sizes = [size for _, size, _ in ENTRY.iter_unpack(files.read(a, b))]
        if forward:
            for i, size in enumerate(sizes):
                if size:
                    return a + i
            lo = b
        else:
            for i in range(len(sizes) - 1, -1, -1):
                if sizes[i]:
                    return a + i + 1
            hi = a
    return lo if forward else hi


def write_queue(root: Path, cq: ConsumeQueue, entries_per_file: int) -> None:
    """Write entries [flushed, max_offset) to the queue's files; if ``flushed`` went
    back (entries dropped), cut the files first. No fsync: queues are rebuildable.
    Then the entries written leave memory (``ConsumeQueue.written``)."""
    qdir = queue_dir(root, cq.topic, cq.queue_id)
    file_bytes = entries_per_file * ENTRY_SIZE
    qdir.mkdir(parents=True, exist_ok=True)
    if cq.cut:
        if cq.files is not None:
            cq.files.forget()       # no map may outlive the bytes it shows
        _cut_files(qdir, cq.flushed * ENTRY_SIZE)
        cq.cut = False
    off = cq.flushed
    while off < cq.max_offset:
        byte_off = off * ENTRY_SIZE
        file_start = byte_off - byte_off % file_bytes
        n = min(cq.max_offset - off, (file_start + file_bytes - byte_off) // ENTRY_SIZE)
        i = (off - cq.mem_base) * ENTRY_SIZE
        fd = os.open(qdir / f"{file_start:020d}", os.O_WRONLY | os.O_CREAT, 0o644)
        # The view is released even when a write fails (disk full): while it lives, the
        # queue's bytearray cannot grow, and every later put to the queue would fail.
        try:
            with memoryview(cq.buf) as whole:
                view = whole[i:i + n * ENTRY_SIZE]
                pos = byte_off - file_start
                try:
                    while view:
                        w = os.pwrite(fd, view, pos)
                        view, pos = view[w:], pos + w
                finally:
                    view.release()
        finally:
            os.close(fd)
        off += n
        cq.flushed = off
    cq.written()


def _cut_files(qdir: Path, keep_bytes: int) -> None:
    """Cut the queue's files to ``keep_bytes`` bytes of logical content."""
    for p in qdir.iterdir():
        if not _FILE_NAME.match(p.name):
            continue
        start = int(p.name)
        if start >= keep_bytes:
            p.unlink()
        elif start + p.stat().st_size > keep_bytes:
            os.truncate(p, keep_bytes - start)
