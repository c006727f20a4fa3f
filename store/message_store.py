"""MessageStore: the facade the broker codes against (see API.md).

It owns one CommitLog (the truth), the consume queues derived from it, the key index,
consumer and delay offsets, config documents and the checkpoint. Everything is
synchronous and clock-free: ``put`` is told the time.

Opening a directory: check it is ours, take the lock, recover the log (commit_log.py),
then repair the consume queues against the recovered log and extend them from the log
where they are behind (``_recover_queues``), then load offsets. ``store.recovery``
says what was cut or rebuilt; every repair is also logged as a warning on the "store"
logger.
"""
from __future__ import annotations

import json
import logging
import struct
from bisect import bisect_right
from pathlib import Path
from typing import Iterator

from . import fsutil
from .checkpoint import Checkpoint, QueueMark, load_checkpoint, save_checkpoint
from .commit_log import CommitLog, LogRecovery, RecordTooLarge
from .config import StoreConfig
from .consume_queue import (ENTRY, ENTRY_SIZE, ConsumeQueue, QueueFiles, entry_tags_code, list_queue_dirs, load_queue,
                            queue_dir, valid_topic_dir, write_queue)
from .errors import StoreError, StoreWriteError
from .fsutil import RootLock, atomic_write
from .index import KeyIndex
from .offsets import ConsumerOffsets, DelayOffsets, dump_json_document, load_json_document
from .record_view import TX_SKIPPED, RecordHead, check_record, fields, head, store_timestamp
from .records import (MAGIC_CODE, MAX_TOPIC_LENGTH, MessageRecord, RecordError, SysFlag, create_offset_msg_id,
                      decode_record)
from .segment import segment_name
from .status import GetResult, GetStatus, PutStatus, Recovery, put_failed, put_ok

__all__ = ["MessageStore"]

log = logging.getLogger("store")

# What a store root may contain; a non-empty directory holding none of it is foreign.
_OURS = {"commitlog", "consumequeue", "config", "checkpoint", "lock", "abort"}
# Present while a store is open (upstream's name): found at open, the last run did not
# close. It holds the boot id of the machine it was opened on (fsutil.boot_id).
_RUNNING_MARKER = "abort"
_RESERVED_CONFIGS = {"consumerOffset", "delayOffset"}
_TX_MASK = SysFlag.TRANSACTION_MASK
_pack_entry = ENTRY.pack
_TX_PREPARED, _TX_ROLLBACK = TX_SKIPPED
def _vouched_queue(cq: ConsumeQueue, mark) -> bool:
    """Whether the queue loaded from its files starts with the entries the checkpoint
    recorded (same first offset, at least as many, same CRC32: one C call). Entries
    after them were written by a flush whose checkpoint was not: the log walk from the
    checkpoint's end checks them."""
    if mark is None or cq.base != mark.base or cq.max_offset < mark.count:
        return False
    return cq.prime_crc(mark.count, mark.crc)


# Upstream scans at most max(16000 bytes, maxMsgNums * 20) of a queue per pull while
# filtering, i.e. at least 800 entries, before answering NO_MATCHED_MESSAGE.
_MIN_FILTER_SCAN = 800


class MessageStore:
    def __init__(self, root: str | Path | None = None, config: StoreConfig = StoreConfig()) -> None:
        self.config = config
        self._root = Path(root) if root is not None else None
        self._closed = False
        self._lock: RootLock | None = None
        self._queues: dict[tuple[str, int], ConsumeQueue] = {}
        # topic -> queue id -> ConsumeQueue: the queues put's inlined path may use (two
        # lookups by str and int are cheaper than building and hashing a tuple key).
        # Filled by _put_general; a queue's object never changes once the store is open.
        self._fast_queues: dict[str, dict[int, ConsumeQueue]] = {}
        self._offsets = ConsumerOffsets()
        self._delay = DelayOffsets()
        self._configs: dict[str, str] = {}          # in-memory mode's config documents (JSON text)
        self._index = KeyIndex()
        self._host_prefix: dict[tuple[str, int], str] = {}
        self._delays = config.delay_levels_ms
        self._max_body = config.max_message_size
        self._checkpointed: tuple[int, int] | None = None   # (log end, entries) at the last checkpoint
        self._write_error: OSError | None = None    # the last commit-log write failed (until one works)
        self._prop_crc = config.prop_crc
        if self._root is None:
            self._log = CommitLog(None, config.segment_size)
            self.recovery = Recovery()
        else:
            self._open_directory(self._root)

    # -- opening -----------------------------------------------------------------------------
    def _open_directory(self, root: Path) -> None:
        if root.exists() and not root.is_dir():
            raise StoreError(f"store root {str(root)!r} is a file, not a directory")
        try:
            root.mkdir(parents=True, exist_ok=True)
            present = {p.name for p in root.iterdir() if not p.name.startswith(".")}   # .gitkeep etc.
        except OSError as exc:
            raise StoreError(f"cannot use store root {str(root)!r}: {exc.strerror}") from exc
        if present and not present & _OURS:
            shown = ", ".join(sorted(present)[:5]) + (", ..." if len(present) > 5 else "")
            raise StoreError(f"{str(root)!r} is not a message store (it holds {shown}); "
                             f"use an empty or new directory")
        for sub in ("commitlog", "consumequeue", "config"):
            if (root / sub).exists() and not (root / sub).is_dir():
                raise StoreError(f"{str(root / sub)!r} should be a directory but is a file")
        self._lock = RootLock(root)
        try:
            for sub in ("commitlog", "consumequeue", "config"):
                (root / sub).mkdir(exist_ok=True)
            ckpt, why_not = load_checkpoint(root / "checkpoint")
            self._log = CommitLog(root / "commitlog", self.config.segment_size, sync=self.config.sync_flush,
                                  fsync=self.config.fsync)
            lrep = self._log.recover(ckpt)
            # a checkpoint whose segments did not check out says nothing about dispatch
            qnotes, dropped, rebuilt, walked = self._recover_queues(None if lrep.doubted else ckpt)
            self._offsets.load(root / "config")
            self._delay.load(root / "config")
            qnotes += self._skip_unsure_offsets(root, ckpt, lrep)
        except BaseException:
            if getattr(self, "_log", None) is not None and self._log.segments:
                for seg in self._log.segments:
                    seg.close()
            self._lock.release()
            raise
        notes = list(lrep.notes) + qnotes
        if ckpt is None and lrep.records_walked + walked:
            notes.insert(0, f"{why_not}: the whole log was walked")
        self.recovery = Recovery(
            truncated_at=lrep.truncated_at, bytes_cut=lrep.bytes_cut, reason=lrep.reason,
            removed_segments=tuple(lrep.removed_segments), dropped_entries=dropped,
            rebuilt_queues=tuple(sorted(rebuilt)), records_walked=lrep.records_walked + walked,
            used_checkpoint=ckpt is not None, notes=tuple(notes),
            damaged=tuple((d.start, d.end - d.start, segment_name(self._log.bases[bisect_right(self._log.bases, d.start) - 1]),
                           d.reason) for d in self._log.damage.ranges))
        self._report(lrep)
        if ckpt is not None and ckpt == self._current_checkpoint():
            self._checkpointed = self._checkpoint_state()     # nothing to rewrite
        self.flush()        # persist repairs (cut queue files, new entries) and a fresh checkpoint

    def _skip_unsure_offsets(self, root: Path, ckpt: Checkpoint | None, lrep: LogRecovery) -> list[str]:
        """After an unclean shutdown that may have lost acknowledged records — the
        machine restarted since (power loss, OS crash: only fsync'd bytes are certain) or
        bytes the checkpoint had recorded are gone — continue the log past every
        segment it had, so no offset a client was given (its offsetMsgId) goes to
        another record. A killed process on the same boot lost nothing it handed to the
        OS: the log continues where it ends. Then mark the store running."""
        marker = root / _RUNNING_MARKER
        try:
            last_boot: str | None = marker.read_text(encoding="ascii", errors="replace").strip()
        except FileNotFoundError:
            last_boot = None                     # closed cleanly (or a new store)
        except OSError as exc:
            raise StoreError(f"cannot read {str(marker)!r}: {exc.strerror}") from exc
        boot = fsutil.boot_id()
        notes = []
        if last_boot is not None:
            other_boot = not last_boot or boot is None or last_boot != boot
            lost_flushed = ckpt is not None and lrep.truncated_at is not None and lrep.truncated_at < ckpt.log_end
            end = self._log.end
            if (other_boot or lost_flushed) and end < lrep.reach:
                self._log.skip_past(lrep.reach)
                why = ("on another boot of the machine (a power loss or an OS crash?)" if other_boot
                       else "and records it had flushed are gone")
                notes.append(f"the last run did not shut down cleanly {why}: the log continues at offset "
                             f"{self._log.end} instead of {end}, so no offsetMsgId a client may have been given "
                             f"goes to another message")
        atomic_write(marker, (boot or "").encode("ascii", "replace") + b"\n", durable=self.config.fsync)
        return notes

    def _report(self, lrep: LogRecovery) -> None:
        rec = self.recovery
        for offset, length, segment, reason in rec.damaged:
            log.warning("store %s: damaged record(s) at offset %d in segment %s (%d bytes: %s); skipped, the "
                        "records after them are kept", self._root, offset, segment, length, reason)
        if rec.truncated_at is not None:
            log.warning("store %s: commit log cut at offset %d (%s); %d bytes removed, records before it kept",
                        self._root, rec.truncated_at, rec.reason, rec.bytes_cut)
        for seg in rec.removed_segments:
            log.warning("store %s: removed commit-log segment %s", self._root, seg)
        if rec.dropped_entries:
            log.warning("store %s: dropped %d consume-queue entries that pointed past the log end",
                        self._root, rec.dropped_entries)
        if rec.rebuilt_queues:
            log.warning("store %s: rebuilt consume-queue entries from the log for %d queue(s): %s", self._root,
                        len(rec.rebuilt_queues), ", ".join(f"{t}/{q}" for t, q in rec.rebuilt_queues[:10]))
        for note in rec.notes:
            log.warning("store %s: %s", self._root, note)

    def _recover_queues(self, ckpt: Checkpoint | None) -> tuple[list[str], int, set, int]:
        """Load the queue files and keep the queues the checkpoint vouches for (the CRC32
        of their entries is the one it recorded); rebuild every other one from the log
        (damaged or stale files, no checkpoint). Drop entries past the log end, then walk
        the log from the earliest point some queue needs and append what is missing,
        checking every entry met on the way against its record.
        Returns (notes, entries dropped, queues given entries, records walked)."""
        lg = self._log
        end, lmin = lg.end, lg.min_offset
        epf = self.config.consume_queue_entries_per_file
        found, notes = list_queue_dirs(self._root / "consumequeue")
        marks = ckpt.queues if ckpt is not None else {}
        dropped = 0
        start = min(ckpt.log_end, end) if ckpt is not None else lmin
        for topic, qid, qdir in found:
            cq, more = load_queue(qdir, topic, qid, epf)
            notes += more
            keep = cq.count_below(end)
            if keep < cq.max_offset:
                dropped += cq.max_offset - keep
                cq.truncate(keep)
            mark = marks.get((topic, qid))
            if not _vouched_queue(cq, mark):
                if cq.max_offset > cq.base and mark is not None:
                    notes.append(f"{topic}/{qid}: its files differ from the entries the checkpoint recorded; "
                                 f"rebuilding the queue from the log")
                cq.reset(0)
                start = lmin
            if lmin > 0 and cq.max_offset > cq.base:
                cq.min_offset = cq.first_at_or_after(lmin)
            self._queues[(topic, qid)] = cq
        if any(key not in self._queues for key in marks):
            start = lmin                    # a queue's files are gone: rebuilt from the log
        rebuilt, walked = self._dispatch_from(max(start, lmin), notes)
        for cq in self._queues.values():
            cq.files.forget()           # the pages recovery read
        return notes, dropped, rebuilt, walked

    def _new_queue(self, topic: str, queue_id: int, base: int = 0) -> ConsumeQueue:
        """An empty queue; a file store's reads its written entries back from its files."""
        files = None
        if self._root is not None:
            files = QueueFiles(queue_dir(self._root / "consumequeue", topic, queue_id),
                               self.config.consume_queue_entries_per_file)
        return ConsumeQueue(topic, queue_id, base, files=files)

    def _dispatch_from(self, start: int, notes: list[str]) -> tuple[set, int]:
        """Give the queues the entries of the records from ``start``: append those they
        lack, repair those that differ. Queue offsets lost in damaged records (a gap
        before a record's offset, with damage in between) get entries pointing at the
        damage, which reads skip, so the queue's offsets stay those of its records."""
        queues = self._queues
        rebuilt: set[tuple[str, int]] = set()
        walked = repaired = 0
        for buf, pos, phys in self._log.records(start):
            walked += 1
            f = fields(buf, pos)
            if f.sys_flag & _TX_MASK in TX_SKIPPED:
                continue
            key = (f.topic, f.queue_id)
            cq = queues.get(key)
            if cq is None:
                if not valid_topic_dir(f.topic) or f.queue_id < 0:
                    notes.append(f"record at {phys} has topic {f.topic!r} queue {f.queue_id}, which cannot "
                                 f"have a consume queue; not dispatched")
                    continue
                cq = queues[key] = self._new_queue(f.topic, f.queue_id, f.queue_offset)
                cq.cut = True           # whatever files exist for it are stale
            qoff = f.queue_offset
            tags = entry_tags_code(f.topic, f.properties, f.store_timestamp, self._delays)
            if qoff < cq.max_offset:
                if qoff >= cq.base and cq.at(qoff) != (phys, f.size, tags):
                    cq.replace(qoff, phys, f.size, tags)
                    repaired += 1
                    rebuilt.add(key)
                continue
            if qoff > cq.max_offset:
                if cq.max_offset == cq.base:
                    cq.reset(qoff)          # the log begins after this queue's first records
                else:
                    hole = self._damage_between(cq.last_end(), phys)
                    if hole is None:
                        notes.append(f"{f.topic}/{f.queue_id}: record at {phys} has queue offset {qoff} "
                                     f"but the queue ends at {cq.max_offset}; not dispatched")
                        continue
                    notes.append(f"{f.topic}/{f.queue_id}: offsets {cq.max_offset}..{qoff - 1} were in the damaged "
                                 f"bytes at {hole.start}; pulls skip them")
                    while cq.max_offset < qoff:
                        cq.append(hole.start, hole.end - hole.start, 0)
            cq.append(phys, f.size, tags)
            rebuilt.add(key)
        if repaired:
            notes.append(f"{repaired} consume-queue entries did not match their records; repaired from the log")
        return rebuilt, walked

    def _damage_between(self, after: int | None, before: int):
        """The first damaged range starting in [after, before), or None."""
        for d in self._log.damage.ranges:
            if (after is None or d.start >= after) and d.start < before:
                return d
        return None

    # -- writing -----------------------------------------------------------------------------
    def put(self, rec: MessageRecord, now_ms: int):
        """Append ``rec`` (see API.md). Its queue_offset, commit_log_offset,
        store_timestamp and the fields encode_record fills are set on success; on any
        failure ``rec`` is left as it was and nothing is stored.

        Cost: O(record size): one encode, one ``pwrite`` on disk (none in memory), no
        fsync (ASYNC_FLUSH; SYNC_FLUSH adds one), one 20-byte queue entry; the key
        index is built lazily, at the first query. The speed tricks live with the data
        they concern: the known queues in two dicts here, the encoding and append in
        ``CommitLog.append_record``, the tagsCode in ``entry_tags_code``."""
        if self._closed:
            return put_failed(PutStatus.SERVICE_NOT_AVAILABLE, "the store is closed")
        topic = rec.topic
        try:
            cq = self._fast_queues[topic][rec.queue_id]        # a known queue: no checks to redo
        except (KeyError, TypeError):
            cq = None
        if cq is None:
            try:
                cq = self._queues.get((topic, rec.queue_id))
            except TypeError:               # an unhashable topic or queue id
                cq = None
            if cq is None and (bad := self._refuse_new_queue(topic, rec.queue_id)):
                return put_failed(PutStatus.MESSAGE_ILLEGAL, bad)
        try:
            too_big = len(rec.body) > self._max_body
        except TypeError:
            too_big = True
        if too_big:
            return self._body_refused(rec.body)
        tx = rec.sys_flag & 0xC
        dispatch = tx != _TX_PREPARED and tx != _TX_ROLLBACK
        try:
            if dispatch and cq is not None:
                at = self._log.append_record(rec, cq.max_offset, now_ms, prop_crc=self._prop_crc,
                                             topic_field=cq.topic_field)
            else:
                at = self._log.append_record(rec, 0, now_ms, prop_crc=self._prop_crc)
        except Exception as exc:           # bad input of any kind is a status, not an exception
            return self._put_failed(rec, exc)
        if self._write_error is not None:
            self._writes_work_again()
        size = rec.store_size
        if dispatch:
            if cq is None:
                cq = self._queues[(topic, rec.queue_id)] = self._new_queue(topic, rec.queue_id)
            if cq.topic_field is not None:  # a queue with a usual topic: the next put finds it quickly
                self._fast_queues.setdefault(topic, {})[rec.queue_id] = cq
            cq.buf += _pack_entry(at, size, entry_tags_code(topic, rec.properties_text, now_ms, self._delays))
            cq.max_offset += 1              # (ConsumeQueue.append, inlined: the put path)
        try:
            prefix = self._host_prefix[rec.store_host]
        except (KeyError, TypeError):       # first put from this host (or a list, not a tuple)
            prefix = create_offset_msg_id(tuple(rec.store_host), 0)[:-16]
            if isinstance(rec.store_host, tuple):
                self._host_prefix[rec.store_host] = prefix
        return put_ok(at, rec.queue_offset, now_ms, size, prefix + "%016X" % at)

    def _body_refused(self, body):
        if not hasattr(body, "__len__"):
            return put_failed(PutStatus.MESSAGE_ILLEGAL, f"the message body is {type(body).__name__}, not bytes")
        return put_failed(PutStatus.MESSAGE_ILLEGAL, f"the message body size {len(body)} is over the "
                          f"max value {self._max_body}")

    def _write_failed(self, exc: OSError) -> None:
        """A commit-log write failed (disk full, I/O error): nothing of it stays in the
        log and the put is refused. Logged once until a write works again (``put``
        checks after every append)."""
        if self._write_error is None:
            log.error("store %s: cannot write the commit log (%s); puts are refused with SERVICE_NOT_AVAILABLE "
                      "until a write succeeds (said once)", self._root, exc.strerror or exc)
        self._write_error = exc

    def _writes_work_again(self) -> None:
        log.warning("store %s: commit-log writes succeed again (they had failed: %s)", self._root,
                    self._write_error.strerror or self._write_error)
        self._write_error = None

    @staticmethod
    def _refuse_new_queue(topic, queue_id) -> str | None:
        """Why a first put to (topic, queue_id) is refused, or None. Checked once per
        queue, since the queue's name becomes a directory."""
        if not isinstance(topic, str) or not valid_topic_dir(topic):
            return f"topic {topic!r} is not allowed (empty, '.', '..', or has '/', '\\\\' or NUL)"
        if type(queue_id) is not int or not 0 <= queue_id < 1 << 31:
            return f"queue id {queue_id!r} is not an int in [0, 2**31)"
        return None

    def _put_failed(self, rec: MessageRecord, exc: Exception):
        if isinstance(exc, RecordTooLarge):
            return put_failed(PutStatus.MESSAGE_ILLEGAL, str(exc))
        if isinstance(exc, OSError):
            self._write_failed(exc)
            return put_failed(PutStatus.SERVICE_NOT_AVAILABLE,
                              f"the message store cannot write its commit log: {exc.strerror or exc}")
        if isinstance(exc, RecordError):
            try:
                too_long = len(rec.topic.encode("utf-8")) > MAX_TOPIC_LENGTH
            except Exception:
                too_long = True
            if not too_long:
                return put_failed(PutStatus.PROPERTIES_SIZE_EXCEEDED, str(exc))
            return put_failed(PutStatus.MESSAGE_ILLEGAL, str(exc))
        return put_failed(PutStatus.MESSAGE_ILLEGAL, f"cannot encode the record: {type(exc).__name__}: {exc}")

    # -- reading -----------------------------------------------------------------------------
    def _live(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")

    def get_message(self, topic: str, queue_id: int, offset: int, max_msgs: int,
                    tag_codes: set[int] | frozenset[int] | None = None) -> GetResult:
        """Up to ``max_msgs`` raw records of a queue from ``offset`` (rocketmq-4x.md §2.5).
        With ``tag_codes``, entries whose tagsCode is not in it are skipped (and
        counted in next_begin_offset); at most max(800, max_msgs) entries are scanned."""
        self._live()
        cq = self._queues.get((topic, queue_id))
        if cq is None:
            return GetResult(GetStatus.NO_MATCHED_LOGIC_QUEUE, [], 0, 0, 0)
        lo, hi = cq.min_offset, cq.max_offset
        if hi == 0:
            return GetResult(GetStatus.NO_MESSAGE_IN_QUEUE, [], 0, lo, hi)
        if offset < lo:
            return GetResult(GetStatus.OFFSET_TOO_SMALL, [], lo, lo, hi)
        if offset == hi:
            return GetResult(GetStatus.OFFSET_OVERFLOW_ONE, [], offset, lo, hi)
        if offset > hi:
            return GetResult(GetStatus.OFFSET_OVERFLOW_BADLY, [], hi, lo, hi)
        want = min(max_msgs, self.config.max_transfer_count)
        byte_cap = self.config.max_transfer_bytes
        stop = min(hi, offset + max(_MIN_FILTER_SCAN, max_msgs))
        records: list[bytes] = []
        total = 0
        if offset >= cq.mem_base:
            buf, base = cq.buf, cq.mem_base
        else:                           # older entries: from the queue's files
            buf, base = cq.read(offset, stop), offset
        read = self._log.read
        unpack = ENTRY.unpack_from
        status = GetStatus.NO_MATCHED_MESSAGE
        i = offset
        while i < stop:
            if len(records) >= want:
                break
            phys, size, tags = unpack(buf, (i - base) * ENTRY_SIZE)
            if records and total + size > byte_cap:
                break
            i += 1
            if tag_codes is not None and tags not in tag_codes:
                continue
            raw = read(phys, size)
            if raw is None:             # cannot happen after recovery; answered as upstream does
                if not records:
                    status = GetStatus.MESSAGE_WAS_REMOVING
                continue
            records.append(raw)
            total += size
            status = GetStatus.FOUND
        return GetResult(status, records, i, lo, hi)

    def read(self, phys_offset: int) -> bytes | None:
        """The raw record starting exactly at ``phys_offset`` (VIEW_MESSAGE_BY_ID)."""
        self._live()
        return self._log.read_record(phys_offset)

    def look_message_by_offset(self, phys_offset: int) -> MessageRecord | None:
        """The record at ``phys_offset`` decoded (body not CRC-checked, as upstream)."""
        raw = self.read(phys_offset)
        if raw is None:
            return None
        try:
            return decode_record(raw, check_crc=False)
        except RecordError:
            return None

    def heads(self) -> Iterator[RecordHead]:
        """``record_view.head`` of every record in the commit log, in log order — prepared
        and rollback transaction halves included, BLANKs not: one pass over the log, no
        read or copy per record (what whole-store accounting needs). A record whose topic
        or properties are not UTF-8 is skipped, as ``look_message_by_offset`` answers None
        for it. Do not put while iterating. (A closed store raises here, at the call.)"""
        self._live()
        return self._heads()

    def _heads(self) -> Iterator[RecordHead]:
        for buf, off, _ in self._log.records():
            try:
                rec = head(buf, off)
            except RecordError:
                continue
            yield rec

    def queue_entry(self, topic: str, queue_id: int, offset: int) -> tuple[int, int, int] | None:
        self._live()
        cq = self._queues.get((topic, queue_id))
        return cq.entry(offset) if cq is not None else None

    def max_offset(self, topic: str, queue_id: int) -> int:
        self._live()
        cq = self._queues.get((topic, queue_id))
        return cq.max_offset if cq is not None else 0

    def min_offset(self, topic: str, queue_id: int) -> int:
        self._live()
        cq = self._queues.get((topic, queue_id))
        return cq.min_offset if cq is not None else 0

    def offset_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP (§2.6): binary search on store times; an exact hit
        wins, else the closer neighbour (the left one on a tie), else the side that
        exists; 0 for an unknown or empty queue."""
        self._live()
        cq = self._queues.get((topic, queue_id))
        if cq is None or cq.max_offset <= cq.min_offset:
            return 0
        low, high = cq.min_offset, cq.max_offset - 1
        left = right = None            # (offset, store time) of the nearest probes on each side
        while low <= high:
            mid = (low + high) // 2
            phys, _, _ = cq.entry(mid)
            head = self._log.read(phys, 80)       # records are >= 91 bytes; STORETIMESTAMP ends by 76
            if head is None:
                return 0
            ts = store_timestamp(head)
            if ts == timestamp:
                return mid
            if ts > timestamp:
                high = mid - 1
                right = (mid, ts)
            else:
                low = mid + 1
                left = (mid, ts)
        if left is None:
            return right[0]
        if right is None:
            return left[0]
        return right[0] if abs(timestamp - left[1]) > abs(timestamp - right[1]) else left[0]

    def query_by_key(self, topic: str, key: str, max_num: int, begin_ts: int, end_ts: int) -> list[bytes]:
        """Raw records of ``topic`` whose KEYS words or UNIQ_KEY equal ``key``, stored in
        [begin_ts, end_ts], newest first, at most ``max_num`` (QUERY_MESSAGE, §2.10)."""
        self._live()
        self._index.catch_up(self._log)
        out = []
        for phys in self._index.query(topic, key, max_num, begin_ts, end_ts):
            raw = self._log.read_record(phys)
            if raw is not None:
                out.append(raw)
        return out

    def queues(self) -> dict[str, list[int]]:
        """topic -> the queue ids that have a consume queue."""
        self._live()
        out: dict[str, list[int]] = {}
        for topic, qid in sorted(self._queues):
            out.setdefault(topic, []).append(qid)
        return out

    @property
    def commit_log_min_offset(self) -> int:
        return self._log.min_offset

    @property
    def commit_log_max_offset(self) -> int:
        return self._log.end

    @property
    def root(self) -> Path | None:
        """The store directory; None for an in-memory store."""
        return self._root

    @property
    def closed(self) -> bool:
        return self._closed

    # -- offsets and config ------------------------------------------------------------------
    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        """Store a consumer group's offset (as upstream 4.x: unconditionally, even backwards)."""
        self._live()
        self._offsets.commit(group, topic, int(queue_id), int(offset))

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, -1 when none."""
        self._live()
        return self._offsets.query(group, topic, queue_id)

    def offset_table(self) -> dict[str, dict[int, int]]:
        self._live()
        return self._offsets.snapshot()

    def set_delay_offsets(self, offsets: dict[int, int]) -> None:
        """Replace the delay-level -> next offset table (persisted at flush)."""
        self._live()
        self._delay.replace(offsets)

    def delay_offsets(self) -> dict[int, int]:
        self._live()
        return dict(self._delay.table)

    def save_config(self, name: str, obj) -> None:
        """Store a JSON document as config/<name>.json (atomically replaced). A write
        that fails raises StoreWriteError (an OSError too) and leaves the old file."""
        self._live()
        self._config_name(name)
        text = json.dumps(obj)              # fails here, not at flush, if obj is not JSON
        if self._root is None:
            self._configs[name] = text
            return
        path = self._root / "config" / f"{name}.json"
        try:
            dump_json_document(path, obj, durable=self.config.fsync)
        except OSError as exc:
            raise StoreWriteError(f"cannot write {str(path)!r}: {exc.strerror or exc}; the previous version "
                                  f"is kept", exc) from exc

    def load_config(self, name: str):
        """The document saved under ``name`` (a fresh object), None if there is none."""
        self._live()
        self._config_name(name)
        if self._root is None:
            text = self._configs.get(name)
            return json.loads(text) if text is not None else None
        return load_json_document(self._root / "config" / f"{name}.json")

    @staticmethod
    def _config_name(name: str) -> None:
        if not isinstance(name, str) or not name or not valid_topic_dir(name) or name.startswith("."):
            raise ValueError(f"bad config name {name!r}")
        if name in _RESERVED_CONFIGS:
            raise ValueError(f"config name {name!r} is the store's own; use commit_offset / set_delay_offsets")

    # -- durability ----------------------------------------------------------------------------
    def flush(self) -> None:
        """Make the log durable, write changed queues, offsets and the checkpoint."""
        self._live()
        if self._root is None:
            return
        try:
            self._log.flush()
            qroot = self._root / "consumequeue"
            epf = self.config.consume_queue_entries_per_file
            for cq in self._queues.values():
                if cq.flushed != cq.max_offset or cq.cut:
                    write_queue(qroot, cq, epf)
                else:
                    cq.files.forget()       # the pages reads mapped since the last flush
            cdir = self._root / "config"
            if self._offsets.dirty:
                self._offsets.save(cdir, durable=self.config.fsync)
            if self._delay.dirty:
                self._delay.save(cdir, durable=self.config.fsync)
            state = self._checkpoint_state()
            if state != self._checkpointed:
                save_checkpoint(self._root / "checkpoint", self._current_checkpoint())
                self._checkpointed = state
        except OSError as exc:
            raise StoreWriteError(f"flush of store {str(self._root)!r} failed: {exc.strerror or exc}", exc) from exc

    def _checkpoint_state(self) -> tuple[int, int, int]:
        """Cheap summary of what a checkpoint would say (changes whenever it would)."""
        return (self._log.end, sum(cq.max_offset for cq in self._queues.values()), len(self._queues))

    def _current_checkpoint(self) -> Checkpoint:
        return Checkpoint(self._log.end, self._log.marks(),
                          {key: QueueMark(cq.max_offset, cq.base, cq.entries_crc()) for key, cq in self._queues.items()},
                          tuple(self._log.damage.ranges))

    def close(self) -> None:
        """Flush and release the directory. Idempotent; a closed store answers puts
        with SERVICE_NOT_AVAILABLE and raises StoreError for everything else."""
        if self._closed:
            return
        clean = False
        try:
            self.flush()
            clean = True
        finally:
            self._closed = True
            if self._root is not None:
                for seg in self._log.segments:
                    try:
                        seg.close()
                    except OSError as exc:
                        clean = False
                        log.error("store %s: closing segment %d: %s", self._root, seg.base, exc)
                if self._lock is not None:
                    if clean:           # everything is durable: the next open need not doubt it
                        try:
                            (self._root / _RUNNING_MARKER).unlink(missing_ok=True)
                        except OSError as exc:
                            log.error("store %s: cannot remove %s: %s", self._root, _RUNNING_MARKER, exc)
                    self._lock.release()

    def crash(self) -> None:
        """Stop the way a killed broker process stops (for simulations and tests).

        Every acknowledged put is already in the files (``put`` writes it to the OS
        before it returns, as RocketMQ's mmap appends are), so a killed process loses
        none; everything it had not persisted yet — consumer and delay offsets,
        consume-queue files, the checkpoint — is lost. So: write nothing, sync nothing,
        close the files, release the directory. Reopening then runs the unclean-shutdown
        recovery."""
        if self._closed:
            return
        self._closed = True
        if self._root is None:
            return
        for seg in self._log.segments:
            seg.abandon()
        if self._lock is not None:
            self._lock.release()

    def __enter__(self) -> "MessageStore":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        where = str(self._root) if self._root is not None else "memory"
        return (f"<MessageStore {where} log=[{self.commit_log_min_offset}, {self.commit_log_max_offset}) "
                f"queues={len(self._queues)}{' closed' if self._closed else ''}>")

    # -- invariants ----------------------------------------------------------------------------
    def _check(self) -> None:
        """Assert the store's invariants (for randomized tests; reads everything):
        the log is a chain of valid records, known damaged ranges and BLANK-sealed
        segments; every queue is exactly what dispatching the log would build (an entry
        may point at damage instead); offsets are ints."""
        lg = self._log
        assert lg.bases == [s.base for s in lg.segments], "segment index out of date"
        assert lg.bases == sorted(set(lg.bases)), "segments not in order"
        active = lg.segments[-1]
        assert lg.active is active, "put's append target is stale"
        assert (lg.tail, lg.write) == ((None, active.append) if self._root is not None else (active, None))
        assert lg.fast_limit == (-1 if lg.sync_each else active.base + lg.segment_size - 8)
        expected: dict[tuple[str, int], dict[int, bytes]] = {}
        for i, seg in enumerate(lg.segments):
            last = i == len(lg.segments) - 1
            buf = seg.view()
            pos, size = 0, seg.size
            skips = lg.damage.skips(seg.base, seg.base + size) or {}
            while pos < size:
                if pos in skips:
                    pos = skips[pos]
                    continue
                total, magic = struct.unpack_from(">iI", buf, pos)
                if magic != MAGIC_CODE:
                    assert not last and pos + 8 == size, f"BLANK at {seg.base + pos} is not the segment's end"
                    assert seg.base + pos + total == lg.bases[i + 1], "BLANK does not point at the next segment"
                    assert seg.sealed
                    break
                assert check_record(buf, pos, size, seg.base + pos) == total
                f = fields(buf, pos)
                if f.sys_flag & _TX_MASK not in TX_SKIPPED:
                    tags = entry_tags_code(f.topic, f.properties, f.store_timestamp, self._delays)
                    entries = expected.setdefault((f.topic, f.queue_id), {})
                    assert f.queue_offset not in entries, f"queue offset {f.queue_offset} twice in the log"
                    entries[f.queue_offset] = ENTRY.pack(seg.base + pos, total, tags)
                else:
                    assert f.queue_offset == 0
                pos += total
            else:
                assert last, f"segment {seg.base} has no BLANK but is not the last one"
        assert lg.end == lg.segments[-1].base + lg.segments[-1].size
        for key, cq in self._queues.items():
            want = expected.get(key, {})
            for qoff in range(cq.min_offset, cq.max_offset):
                entry = cq.read(qoff, qoff + 1)
                if qoff in want:
                    assert entry == want.pop(qoff), f"queue {key} offset {qoff} differs from the log"
                else:
                    phys, size, _ = ENTRY.unpack(entry)
                    assert lg.damage.hits(phys, size), f"queue {key} offset {qoff} has no record in the log"
            assert not [q for q in want if q >= cq.min_offset], f"queue {key} lacks entries of the log"
            if cq.min_offset > cq.base:        # entries kept for records before the log start
                assert cq.phys_at(cq.min_offset - 1) < lg.min_offset
            cq.check()
            assert (cq.files is not None) == (self._root is not None)
        missing = set(expected) - set(self._queues)
        assert not missing, f"records without a queue: {sorted(missing)[:5]}"
        for key, per in self._offsets.table.items():
            assert "@" in key and all(type(q) is int and type(o) is int for q, o in per.items())
        assert all(type(k) is int and type(v) is int for k, v in self._delay.table.items())
