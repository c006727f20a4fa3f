"""MessageStore: the facade the broker codes against (see API.md).

It owns one CommitLog (the truth), the consume queues derived from it, the key index,
consumer and delay offsets, config documents and the checkpoint. Everything is
synchronous and clock-free: ``put`` is told the time.

Its jobs, one module each: opening a directory and recovering (opening.py), writing
(``put``, here; encoding and appending in commit_log.py), reading (here), durability
(``flush``/``close``/``crash``, here) and the invariants (invariants.py).
"""
from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Iterator

from .checkpoint import Checkpoint, QueueMark, save_checkpoint
from .commit_log import CommitLog, RecordTooLarge
from .config import StoreConfig
from .consume_queue import ENTRY, ENTRY_SIZE, ConsumeQueue, QueueFiles, queue_dir, valid_topic_dir, write_queue
from .dispatch import LISTED, entry_tags_code
from .config_journal import JOURNAL_SUFFIX, append_changes, apply_changes, read_changes
from .errors import StoreError, StoreWriteError
from .fsutil import RootLock
from .index import KeyIndex
from .offsets import ConsumerOffsets, DelayOffsets, dump_json_document, load_json_document
from .record_view import RecordHead, head, store_timestamp
from .invariants import check_store
from .opening import RUNNING_MARKER, open_directory
from .records import MAX_TOPIC_LENGTH, MessageRecord, RecordError, create_offset_msg_id, decode_record
from .status import GetResult, GetStatus, PutResult, PutStatus, Recovery, put_failed

__all__ = ["MessageStore"]

log = logging.getLogger("store")

_RESERVED_CONFIGS = {"consumerOffset", "delayOffset"}

_new_tuple = tuple.__new__
_PUT_OK = PutStatus.PUT_OK
# Upstream scans at most max(16000 bytes, maxMsgNums * 20) of a queue per pull while
# filtering, i.e. at least 800 entries, before answering NO_MATCHED_MESSAGE.
_MIN_FILTER_SCAN = 800
# write_refusal's probe is the refused write's size and a page more: a disk still full
# fails it even where the log's last page has room left (a write into that page needs no
# new one) or the write would go to a new segment file (whose first page is a new one)
PROBE_SIZE = 4096


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
        self._config_changes: dict[str, list[str]] = {}     # in-memory mode's journals (JSON lines)
        self._index = KeyIndex()
        self._host_prefix: dict[tuple[str, int], str] = {}
        self._delays = config.delay_levels_ms
        self._max_body = config.max_message_size
        self._checkpointed: tuple[int, int] | None = None   # (log end, entries) at the last checkpoint
        self._write_error: OSError | None = None    # the last commit-log write failed (until one works)
        self._refused_size = 0                      # the largest write refused since then (see write_refusal)
        self._prop_crc = config.prop_crc
        if self._root is None:
            self._log = CommitLog(None, config.segment_size)
            self.recovery = Recovery()
        else:
            self._open(self._root)

    def _open(self, root: Path) -> None:
        """Recover the directory (opening.py) and take what it found; then flush the
        repairs and a fresh checkpoint (unless the one read says it all)."""
        opened = open_directory(root, self.config, self._new_queue, self._delays, self._load_offsets)
        self._lock, self._log, self._queues, self.recovery = opened.lock, opened.log, opened.queues, opened.recovery
        if opened.checkpoint is not None and opened.checkpoint == self._current_checkpoint():
            self._checkpointed = self._checkpoint_state()     # nothing to rewrite
        self.flush()        # persist repairs (cut queue files, new entries) and a fresh checkpoint

    def _load_offsets(self, config_dir: Path) -> None:
        self._offsets.load(config_dir)
        self._delay.load(config_dir)

    def _new_queue(self, topic: str, queue_id: int, base: int = 0) -> ConsumeQueue:
        """An empty queue; a file store's reads its written entries back from its files."""
        files = None
        if self._root is not None:
            files = QueueFiles(queue_dir(self._root / "consumequeue", topic, queue_id),
                               self.config.consume_queue_entries_per_file)
        return ConsumeQueue(topic, queue_id, base, files=files)

    # -- writing -----------------------------------------------------------------------------
    def put(self, rec: MessageRecord, now_ms: int, body_crc: int | None = None):
        """Append ``rec`` (see API.md). Its queue_offset, commit_log_offset,
        store_timestamp and the fields encode_record fills are set on success; on any
        failure ``rec`` is left as it was and nothing is stored. ``body_crc``: the body's
        CRC32 when the caller knows it (a copy of a record this store wrote): not computed
        again.

        Cost: O(record size): one encode, one ``pwrite`` on disk (none in memory), no
        fsync (ASYNC_FLUSH; SYNC_FLUSH adds one), one 20-byte queue entry; the key
        index is built lazily, at the first query. The speed tricks live with the data
        they concern: the known queues in two dicts here, the encoding and append in
        ``CommitLog.append_record``, the entry in ``dispatch``."""
        if self._closed:
            return put_failed(PutStatus.SERVICE_NOT_AVAILABLE, "the store is closed")
        topic = rec.topic
        try:
            cq = self._fast_queues[topic][rec.queue_id]        # a known queue: no checks to redo
            known = True
        except (KeyError, TypeError):
            cq = None
            known = False
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
        listed = LISTED[rec.sys_flag & 0xC]         # (dispatch's rule: its queue offset is written)
        try:
            if listed and cq is not None:
                at = self._log.append_record(rec, cq.max_offset, now_ms, prop_crc=self._prop_crc,
                                             topic_field=cq.topic_field, body_crc=body_crc)
            else:
                at = self._log.append_record(rec, 0, now_ms, prop_crc=self._prop_crc)
        except Exception as exc:           # bad input of any kind is a status, not an exception
            return self._put_failed(rec, exc)
        size = rec.store_size
        if self._write_error is not None and size >= self._refused_size:
            self._writes_work_again()
        if listed:
            if cq is None:
                cq = self._queues[(topic, rec.queue_id)] = self._new_queue(topic, rec.queue_id)
            if not known and cq.topic_field is not None:    # a usual topic: the next put finds it quickly
                self._fast_queues.setdefault(topic, {})[rec.queue_id] = cq
            cq.append(at, size, entry_tags_code(topic, rec.properties_text, now_ms, self._delays))
        try:
            prefix = self._host_prefix[rec.store_host]
        except (KeyError, TypeError):       # first put from this host (or a list, not a tuple)
            prefix = create_offset_msg_id(tuple(rec.store_host), 0)[:-16]
            if isinstance(rec.store_host, tuple):
                self._host_prefix[rec.store_host] = prefix
        # (status.put_ok, inlined)
        return _new_tuple(PutResult, (_PUT_OK, at, rec.queue_offset, now_ms, size, prefix + "%016X" % at, None))

    @property
    def last_put(self) -> bytes:
        """The bytes the last successful put appended (the record as stored): what a
        caller that hands the record on at once (a long poll it wakes) serves without
        reading it back."""
        return self._log.last

    def _body_refused(self, body):
        if not hasattr(body, "__len__"):
            return put_failed(PutStatus.MESSAGE_ILLEGAL, f"the message body is {type(body).__name__}, not bytes")
        return put_failed(PutStatus.MESSAGE_ILLEGAL, f"the message body size {len(body)} is over the "
                          f"max value {self._max_body}")

    def _write_failed(self, exc: OSError) -> None:
        """A commit-log write failed (disk full, I/O error): nothing of it stays in the
        log and the put is refused. The store refuses writes from now until a write of
        the largest size refused meanwhile works (a put of at least that size, or
        write_refusal's probe); logged once each way."""
        if self._write_error is None:
            log.error("store %s: cannot write the commit log (%s); puts are refused with SERVICE_NOT_AVAILABLE "
                      "until a write of %d bytes succeeds (said once)", self._root, exc.strerror or exc,
                      self._log.refused)
        self._write_error = exc
        self._refused_size = max(self._refused_size, self._log.refused)

    def _writes_work_again(self) -> None:
        log.warning("store %s: commit-log writes succeed again (they had failed: %s)", self._root,
                    self._write_error.strerror or self._write_error)
        self._write_error = None
        self._refused_size = 0

    def write_refusal(self) -> str | None:
        """Why the store refuses writes now, None when it takes them. After a commit-log
        write failed, each call tries a write at the log's end (cut off again) of the
        largest size refused since, and a page more: while it fails the reason is
        returned; once it works the store takes writes again (logged as when a put works
        again). A smaller put that fits meanwhile is stored but does not end the state:
        with room for a page and not for the message, the old page-sized probe said
        "writable", and a Pulsar producer was admitted again to the send that fails.
        Cost: nothing while writes work; one write of that size per call while not."""
        if self._write_error is None or self._closed:
            return None
        try:
            self._log.probe(self._refused_size + PROBE_SIZE)
        except OSError as exc:
            self._write_error = exc
            return (f"the store cannot write its commit log: {exc.strerror or exc} "
                    f"(a write of {self._refused_size} bytes failed)")
        self._writes_work_again()
        return None

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
        counted in next_begin_offset); at most max(800, max_msgs) entries are scanned.
        Cost: O(entries scanned) plus one log read per record returned (no copy for
        fresh records); entries already written are read from the queue's files."""
        if self._closed:                    # (_live, inlined: every pull)
            raise StoreError("the store is closed")
        queues, key = self._queues, (topic, queue_id)        # (``in`` and ``[]``: every pull)
        cq = queues[key] if key in queues else None
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
        """The raw record starting exactly at ``phys_offset`` (VIEW_MESSAGE_BY_ID).
        Cost: a segment lookup (bisect) and one read of the record."""
        self._live()
        return self._log.read_record(phys_offset)

    def record_at(self, topic: str, queue_id: int, offset: int) -> MessageRecord | None:
        """The record a queue lists at ``offset``, decoded as ``look_message_by_offset``
        decodes it; None outside the queue's [min, max) or where no record starts (a
        damaged one). The one way from a queue offset to its record. Cost: one entry (from
        memory or a 20-byte read), one log read and a decode, O(record size)."""
        self._live()
        cq = self._queues.get((topic, queue_id))
        entry = cq.entry(offset) if cq is not None else None
        return self.look_message_by_offset(entry[0]) if entry is not None else None

    def look_message_by_offset(self, phys_offset: int) -> MessageRecord | None:
        """The record at ``phys_offset`` decoded (body not CRC-checked, as upstream).
        Cost: ``read`` plus a decode, O(record size)."""
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
        for it. Do not put while iterating. (A closed store raises here, at the call.)
        Cost: O(log size) over the whole iteration."""
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
        """(phys offset, size, tagsCode) of a queue's entry, None outside [min, max).
        Cost: O(1): from memory, or one 20-byte read of the queue's file (mmap)."""
        self._live()
        cq = self._queues.get((topic, queue_id))
        return cq.entry(offset) if cq is not None else None

    def max_offset(self, topic: str, queue_id: int) -> int:
        """The queue's next logical offset, 0 for an unknown queue. Cost: O(1)."""
        self._live()
        cq = self._queues.get((topic, queue_id))
        return cq.max_offset if cq is not None else 0

    def min_offset(self, topic: str, queue_id: int) -> int:
        """The queue's first offset whose record is still in the log. Cost: O(1)."""
        self._live()
        cq = self._queues.get((topic, queue_id))
        return cq.min_offset if cq is not None else 0

    def offset_by_time(self, topic: str, queue_id: int, timestamp: int) -> int:
        """SEARCH_OFFSET_BY_TIMESTAMP (§2.6): binary search on store times; an exact hit
        wins, else the closer neighbour (the left one on a tie), else the side that
        exists; 0 for an unknown or empty queue. Cost: log2(entries) probes, each one
        entry and an 80-byte log read."""
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
        [begin_ts, end_ts], newest first, at most ``max_num`` (QUERY_MESSAGE, §2.10).
        Cost: first indexes the records appended since the last query (O(their bytes)),
        then O(postings of the key) and one read per record returned."""
        self._live()
        self._index.catch_up(self._log)
        out = []
        for phys in self._index.query(topic, key, max_num, begin_ts, end_ts):
            raw = self._log.read_record(phys)
            if raw is not None:
                out.append(raw)
        return out

    def queues(self) -> dict[str, list[int]]:
        """topic -> the queue ids that have a consume queue. Cost: O(q log q), q queues."""
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
    def commit_offset(self, group: str, topic: str, queue_id: int, offset: int) -> bool:
        """Store a consumer group's offset (as upstream 4.x: unconditionally, even
        backwards); True when it changed. Cost: O(1); written at the next flush."""
        if self._closed:                    # (_live, inlined: every offset commit)
            raise StoreError("the store is closed")
        if queue_id.__class__ is not int:
            queue_id = int(queue_id)
        if offset.__class__ is not int:
            offset = int(offset)
        return self._offsets.commit(group, topic, queue_id, offset)

    def replace_offset(self, group: str, topic: str, queue_id: int, offset: int) -> int | None:
        """``commit_offset`` that says what it replaced: the earlier offset (-1: none), or
        None when the offset was already this one. Cost: O(1)."""
        if self._closed:
            raise StoreError("the store is closed")
        if queue_id.__class__ is not int:
            queue_id = int(queue_id)
        if offset.__class__ is not int:
            offset = int(offset)
        return self._offsets.replace(group, topic, queue_id, offset)

    def query_offset(self, group: str, topic: str, queue_id: int) -> int:
        """The committed offset, -1 when none. Cost: O(1)."""
        self._live()
        return self._offsets.query(group, topic, queue_id)

    def delete_offsets(self, group: str, topic: str) -> bool:
        """Forget a group's committed offsets on a topic, every queue (written at the next
        flush); True when it had some. Cost: O(1)."""
        self._live()
        return self._offsets.delete(group, topic)

    def offset_table(self) -> dict[str, dict[int, int]]:
        """Committed offsets, topic@group -> queue id -> offset (a copy). Cost: O(entries)."""
        self._live()
        return self._offsets.snapshot()

    def set_delay_offsets(self, offsets: dict[int, int]) -> None:
        """Replace the delay-level -> next offset table (persisted at flush). Cost: O(levels)."""
        self._live()
        self._delay.replace(offsets)

    def set_delay_offset(self, level: int, offset: int) -> None:
        """One level's next offset (a due message delivered). Cost: O(1)."""
        if self._closed:                    # (_live, inlined: every due message)
            raise StoreError("the store is closed")
        d = self._delay
        table = d.table
        if level not in table or table[level] != offset:
            table[level] = offset
            d.dirty = True

    def delay_offsets(self) -> dict[int, int]:
        """Delay level -> next offset to deliver, a copy. Cost: O(levels)."""
        self._live()
        return dict(self._delay.table)

    def save_config(self, name: str, obj) -> None:
        """Store a JSON document as config/<name>.json (atomically replaced). A write
        that fails raises StoreWriteError (an OSError too) and leaves the old file.
        Cost: a JSON dump and, on disk, one atomic file write (with fsync unless off)."""
        self._live()
        self._config_name(name)
        text = json.dumps(obj)              # fails here, not at flush, if obj is not JSON
        if self._root is None:
            self._configs[name] = text
            self._config_changes.pop(name, None)
            return
        path = self._root / "config" / f"{name}.json"
        try:
            dump_json_document(path, obj, durable=self.config.fsync)
            (self._root / "config" / f"{name}{JOURNAL_SUFFIX}").unlink(missing_ok=True)
        except OSError as exc:
            raise StoreWriteError(f"cannot write {str(path)!r}: {exc.strerror or exc}; the previous version "
                                  f"is kept", exc) from exc

    def save_config_changes(self, name: str, ops: list) -> None:
        """Record changes to the document ``name`` without rewriting it: one line of
        ``["set", [key, ...], value]`` / ``["del", [key, ...]]`` operations appended to
        its journal (store/config_journal.py), in the OS before this returns (fsynced
        with SYNC_FLUSH); ``save_config`` of the whole document empties the journal.
        Raises StoreWriteError when the write fails. Cost: O(the change), one write."""
        self._live()
        self._config_name(name)
        text = json.dumps(ops)              # fails here if ops is not JSON
        if self._root is None:
            self._config_changes.setdefault(name, []).append(text)
            return
        path = self._root / "config" / f"{name}{JOURNAL_SUFFIX}"
        try:
            append_changes(path, ops, durable=self.config.fsync and self.config.sync_flush)
        except OSError as exc:
            raise StoreWriteError(f"cannot write {str(path)!r}: {exc.strerror or exc}", exc) from exc

    def load_config(self, name: str):
        """The document saved under ``name`` with the changes recorded since (a fresh
        object), None if there is none. Cost: one file read and a JSON parse, and the
        journal's lines."""
        self._live()
        self._config_name(name)
        if self._root is None:
            text = self._configs.get(name)
            return apply_changes(json.loads(text) if text is not None else None,
                                 [json.loads(t) for t in self._config_changes.get(name, ())])
        doc = load_json_document(self._root / "config" / f"{name}.json")
        path = self._root / "config" / f"{name}{JOURNAL_SUFFIX}"
        try:
            lines, torn = read_changes(path)
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read the changes to {name}.json in {str(path)!r}: {exc}") from None
        if torn:
            log.warning("store %s: %s: %s; that change was never answered, so it is dropped",
                        self._root, path.name, torn)
        return apply_changes(doc, lines)

    @staticmethod
    def _config_name(name: str) -> None:
        if not isinstance(name, str) or not name or not valid_topic_dir(name) or name.startswith("."):
            raise ValueError(f"bad config name {name!r}")
        if name in _RESERVED_CONFIGS:
            raise ValueError(f"config name {name!r} is the store's own; use commit_offset / set_delay_offsets")

    # -- durability ----------------------------------------------------------------------------
    def flush(self) -> None:
        """Make the log durable, write changed queues, offsets and the checkpoint.
        Cost: one fsync per segment written since (ASYNC_FLUSH), a write per queue that
        changed, O(queues) for the checkpoint; nothing for an in-memory store."""
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
                            (self._root / RUNNING_MARKER).unlink(missing_ok=True)
                        except OSError as exc:
                            log.error("store %s: cannot remove %s: %s", self._root, RUNNING_MARKER, exc)
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
        """Assert the store's invariants (store/invariants.py; reads everything)."""
        check_store(self._log, self._queues, self._offsets.table, self._delay.table, self._delays,
                    on_disk=self._root is not None)
