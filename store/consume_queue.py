"""Consume queues: per topic and queue id, the list of its records in the log.

An entry is 20 bytes, big-endian: i64 physical offset, i32 record size, i64 tagsCode
(logical offset = entry index). In memory a queue is one bytearray of entries
[base, max_offset); on disk it is consumequeue/<topic>/<queueId>/<start>, files of
``entries_per_file`` entries named by the byte offset of their first entry (20 digits),
as upstream names them.

Queues are derived data: everything here can be rebuilt from the commit log, so files
are written at flush without fsync, and whatever a crash or damage leaves (a short
file, a zeroed tail, flipped bytes, a missing directory) is repaired on open by
``load_queue`` + a log walk (see MessageStore._recover_queues): entries that point past
the log end are dropped, and a queue whose files do not start with exactly the entries
the checkpoint recorded (their CRC32, ``entries_crc``) is rebuilt from the log.
"""
from __future__ import annotations

import os
import re
import shutil
import struct
import zlib
from pathlib import Path

from .record_view import prop_value
from .records import RecordError, _topic_field, tags_code

__all__ = ["ConsumeQueue", "ENTRY", "ENTRY_SIZE", "SCHEDULE_TOPIC", "entry_tags_code", "load_queue",
           "write_queue", "remove_queue", "list_queue_dirs", "valid_topic_dir"]

ENTRY = struct.Struct(">qiq")
ENTRY_SIZE = 20
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
_FILE_NAME = re.compile(r"^\d{20}$")


def entry_tags_code(topic: str, properties_text: str, store_timestamp: int, delays_ms: tuple[int, ...]) -> int:
    """The tagsCode of a record's entry, from its *stored* properties string (so a queue
    rebuilt from the log is byte-identical to the one written at put time).

    SCHEDULE_TOPIC_XXXX: the delivery time, store time + delay(DELAY) with DELAY clamped
    to the table; a missing, unparsable or non-positive level counts as +1000 ms.
    Any other topic: the Java hash of TAGS (0 without tags).
    """
    if topic == SCHEDULE_TOPIC:
        raw = prop_value(properties_text, "DELAY")
        try:
            level = int(raw) if raw and raw.isascii() else 0
        except ValueError:
            level = 0
        level = min(level, len(delays_ms))
        return store_timestamp + (delays_ms[level - 1] if level > 0 else 1000)
    return tags_code(prop_value(properties_text, "TAGS"))


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


class ConsumeQueue:
    """Entries [base, max_offset) of one queue. ``min_offset`` >= base is the first
    entry whose record is still in the log; ``flushed`` how many are in the files."""

    __slots__ = ("topic", "queue_id", "base", "buf", "max_offset", "min_offset", "flushed", "cut", "topic_field",
                 "_crc")

    def __init__(self, topic: str, queue_id: int, base: int = 0, buf: bytearray | None = None) -> None:
        self.topic = topic
        self.queue_id = queue_id
        self.base = base
        self.buf = buf if buf is not None else bytearray()
        self.max_offset = base + len(self.buf) // ENTRY_SIZE
        self.min_offset = base
        self.flushed = self.max_offset
        self.cut = False        # the files hold more than [.., flushed): cut them on the next write
        # the record's TOPIC field for MessageStore.put's inlined encoder; None sends the
        # puts of this queue through the general path (a topic that cannot be encoded).
        # The schedule topic's is SCHEDULE_TOPIC_FIELD, by which put knows its tagsCode is a time.
        self.topic_field = _put_topic_field(topic)
        self._crc = (base, 0)       # (offset, CRC32 of the entries [base, offset)) last computed

    def entries_crc(self) -> int:
        """CRC32 of the entries [base, max_offset): the last one continued over the
        entries since (a checkpoint records it; opening compares the files against it)."""
        upto, crc = self._crc
        if upto > self.max_offset or upto < self.base:
            upto, crc = self.base, 0
        if upto < self.max_offset:
            with memoryview(self.buf) as v:
                crc = zlib.crc32(v[(upto - self.base) * ENTRY_SIZE:], crc)
        self._crc = (self.max_offset, crc)
        return crc

    def prime_crc(self, count: int, crc: int) -> bool:
        """Whether the entries [base, count) have this CRC32; if so it is kept as the
        start of the running one."""
        with memoryview(self.buf) as v:
            if zlib.crc32(v[:(count - self.base) * ENTRY_SIZE]) != crc:
                return False
        self._crc = (count, crc)
        return True

    def replace(self, offset: int, phys: int, size: int, tags: int) -> None:
        """Overwrite the entry at ``offset`` (a repair): the files are rewritten from it."""
        ENTRY.pack_into(self.buf, (offset - self.base) * ENTRY_SIZE, phys, size, tags)
        if offset < self.flushed:
            self.flushed = offset
            self.cut = True
        if offset < self._crc[0]:
            self._crc = (self.base, 0)

    def append(self, phys: int, size: int, tags: int) -> None:
        self.buf += ENTRY.pack(phys, size, tags)
        self.max_offset += 1

    def entry(self, offset: int) -> tuple[int, int, int] | None:
        if self.min_offset <= offset < self.max_offset:
            return ENTRY.unpack_from(self.buf, (offset - self.base) * ENTRY_SIZE)
        return None

    def phys_at(self, offset: int) -> int:
        return ENTRY.unpack_from(self.buf, (offset - self.base) * ENTRY_SIZE)[0]

    def last_end(self) -> int | None:
        """Log offset just past the last entry's record, None when empty."""
        if self.max_offset == self.base:
            return None
        phys, size, _ = ENTRY.unpack_from(self.buf, len(self.buf) - ENTRY_SIZE)
        return phys + size

    def truncate(self, max_offset: int) -> None:
        """Keep entries below ``max_offset``."""
        max_offset = max(max_offset, self.base)
        del self.buf[(max_offset - self.base) * ENTRY_SIZE:]
        self.max_offset = max_offset
        self.min_offset = min(self.min_offset, max_offset)
        self.flushed = min(self.flushed, max_offset)
        self.cut = True
        self._crc = (self.base, 0)

    def reset(self, base: int) -> None:
        """Empty the queue, its first entry to be ``base``."""
        self.buf = bytearray()
        self.base = self.max_offset = self.min_offset = base
        self.flushed = base
        self.cut = True
        self._crc = (base, 0)

    def count_below(self, log_end: int) -> int:
        """Logical offset of the first entry whose record does not end by ``log_end``
        (entries are in log order, so a binary search)."""
        lo, hi = self.base, self.max_offset
        while lo < hi:
            mid = (lo + hi) // 2
            phys, size, _ = ENTRY.unpack_from(self.buf, (mid - self.base) * ENTRY_SIZE)
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
    """Read a queue's files. Files must be contiguous and full except the last; at the
    first irregularity the rest is ignored (the log walk supplies those entries again).
    A partial entry at the end and zeroed entries (size 0) at either end are dropped."""
    notes: list[str] = []
    file_bytes = entries_per_file * ENTRY_SIZE
    names = sorted(p.name for p in qdir.iterdir() if _FILE_NAME.match(p.name))
    chunks: list[bytes] = []
    start = None
    expect = None
    for name in names:
        off = int(name)
        if off % file_bytes:
            notes.append(f"{topic}/{queue_id}: file {name} does not start at a multiple of "
                         f"{file_bytes} bytes (entries per file changed?); rebuilding the queue")
            cq = ConsumeQueue(topic, queue_id)
            cq.cut = True
            return cq, notes
        if expect is not None and off != expect:
            notes.append(f"{topic}/{queue_id}: file {name} does not follow the previous one; ignoring it and later files")
            break
        data = (qdir / name).read_bytes()
        if start is None:
            start = off
        chunks.append(data[:file_bytes])
        if len(data) < file_bytes:
            if name != names[-1]:
                notes.append(f"{topic}/{queue_id}: file {name} is short; ignoring the files after it")
            break
        expect = off + file_bytes
    if start is None:
        return ConsumeQueue(topic, queue_id), notes
    data = b"".join(chunks)
    usable = len(data) - len(data) % ENTRY_SIZE
    if usable != len(data):
        notes.append(f"{topic}/{queue_id}: dropped a partial entry at the end")
    lo, hi = 0, usable
    while lo < hi and ENTRY.unpack_from(data, lo)[1] == 0:      # padding before the first entry
        lo += ENTRY_SIZE
    while hi > lo and ENTRY.unpack_from(data, hi - ENTRY_SIZE)[1] == 0:   # zeroed tail
        hi -= ENTRY_SIZE
    base = (start + lo) // ENTRY_SIZE
    cq = ConsumeQueue(topic, queue_id, base, bytearray(data[lo:hi]))
    # a zeroed tail, a partial entry or ignored files are cut on the next write
    cq.cut = bool(notes) or hi != len(data)
    return cq, notes


def write_queue(root: Path, cq: ConsumeQueue, entries_per_file: int) -> None:
    """Write entries [flushed, max_offset) to the queue's files; if ``flushed`` went
    back (entries dropped), cut the files first. No fsync: queues are rebuildable."""
    qdir = queue_dir(root, cq.topic, cq.queue_id)
    file_bytes = entries_per_file * ENTRY_SIZE
    qdir.mkdir(parents=True, exist_ok=True)
    if cq.cut:
        _cut_files(qdir, cq.flushed * ENTRY_SIZE)
        cq.cut = False
    off = cq.flushed
    while off < cq.max_offset:
        byte_off = off * ENTRY_SIZE
        file_start = byte_off - byte_off % file_bytes
        n = min(cq.max_offset - off, (file_start + file_bytes - byte_off) // ENTRY_SIZE)
        i = (off - cq.base) * ENTRY_SIZE
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
    cq.flushed = cq.max_offset


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


def remove_queue(root: Path, topic: str, queue_id: int) -> None:
    shutil.rmtree(queue_dir(root, topic, queue_id), ignore_errors=True)
