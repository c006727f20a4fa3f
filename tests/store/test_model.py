"""The store against a tiny list-based model (hypothesis stateful testing).

Rules put (good and bad records), pull with and without tag filters, commit offsets,
set delay offsets, flush, reopen cleanly, reopen from a crash image, and tear the last
record. After every step ``store._check()`` re-derives the consume queues from the log.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from rocketmq_emulator.store import GetStatus, MessageStore, PutStatus, StoreConfig
from rocketmq_emulator.store.records import MessageRecord, decode_record, tags_code

CFG = StoreConfig(segment_size=1024, consume_queue_entries_per_file=4)
TOPICS = ("A", "B", "%RETRY%G")
TAGS = (None, "TagA", "TagB")


class StoreModel(RuleBasedStateMachine):
    cfg = CFG
    on_disk = True

    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="store-model-"))
        self.root = self.tmp / "store"
        self.store = MessageStore(self.root if self.on_disk else None, self.cfg)
        self.now = 1_000
        self.log: list[tuple[str, int, bytes, str | None, int, int]] = []   # (topic, qid, body, tags, phys, size)
        self.offsets: dict[tuple[str, str, int], int] = {}
        self.delay: dict[int, int] = {}
        self.flushed = 0                       # puts known durable (ASYNC: at the last flush)
        self.flushed_offsets: dict = {}
        self.flushed_delay: dict = {}

    def teardown(self) -> None:
        try:
            self.store.close()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- the model's view --------------------------------------------------------------------
    def queue(self, topic: str, qid: int) -> list[tuple[bytes, str | None]]:
        return [(body, tags) for t, q, body, tags, _, _ in self.log if (t, q) == (topic, qid)]

    # -- rules -----------------------------------------------------------------------------
    @rule(topic=st.sampled_from(TOPICS), qid=st.integers(0, 2), body=st.binary(max_size=300),
          tags=st.sampled_from(TAGS), step=st.integers(0, 50))
    def put(self, topic, qid, body, tags, step):
        self.now += step
        props = {"TAGS": tags} if tags else {}
        res = self.store.put(MessageRecord(topic=topic, body=body, queue_id=qid, properties=props), self.now)
        assert res.status is PutStatus.PUT_OK, res
        assert res.queue_offset == len(self.queue(topic, qid))
        assert res.store_timestamp == self.now
        self.log.append((topic, qid, body, tags, res.commit_log_offset, res.store_size))

    @rule(kind=st.sampled_from(["topic", "props", "body", "segment"]))
    def put_bad(self, kind):
        before = self.store.commit_log_max_offset
        r = {"topic": MessageRecord(topic="x" * 128, body=b"b"),
             "props": MessageRecord(topic="A", properties={"k": "v" * 33000}),
             "body": MessageRecord(topic="A", body=bytes(CFG.max_message_size + 1)),
             "segment": MessageRecord(topic="A", body=bytes(CFG.segment_size))}[kind]
        res = self.store.put(r, self.now)
        assert not res.ok
        assert res.status is (PutStatus.PROPERTIES_SIZE_EXCEEDED if kind == "props" else PutStatus.MESSAGE_ILLEGAL)
        assert self.store.commit_log_max_offset == before

    @rule(topic=st.sampled_from(TOPICS), qid=st.integers(0, 2), offset=st.integers(-2, 12),
          max_msgs=st.integers(1, 6), want=st.sampled_from([None, ("TagA",), ("TagB", "TagA"), ("Nope",)]))
    def get(self, topic, qid, offset, max_msgs, want):
        codes = {tags_code(t) for t in want} if want else None
        res = self.store.get_message(topic, qid, offset, max_msgs, codes)
        q = self.queue(topic, qid)
        hi = len(q)
        if hi == 0:
            assert res.status in (GetStatus.NO_MATCHED_LOGIC_QUEUE, GetStatus.NO_MESSAGE_IN_QUEUE)
            assert res.next_begin_offset == 0 and not res.records
            return
        assert (res.min_offset, res.max_offset) == (0, hi)
        if offset < 0:
            assert (res.status, res.next_begin_offset) == (GetStatus.OFFSET_TOO_SMALL, 0)
        elif offset == hi:
            assert (res.status, res.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_ONE, offset)
        elif offset > hi:
            assert (res.status, res.next_begin_offset) == (GetStatus.OFFSET_OVERFLOW_BADLY, hi)
        else:
            found, i = [], offset
            while i < hi and len(found) < max_msgs:
                body, tags = q[i]
                i += 1
                if codes is None or tags_code(tags) in codes:
                    found.append(body)
            assert [decode_record(r).body for r in res.records] == found
            assert res.next_begin_offset == i
            assert res.status is (GetStatus.FOUND if found else GetStatus.NO_MATCHED_MESSAGE)

    @rule(group=st.sampled_from(["G", "H"]), topic=st.sampled_from(TOPICS), qid=st.integers(0, 2),
          offset=st.integers(0, 20))
    def commit(self, group, topic, qid, offset):
        self.store.commit_offset(group, topic, qid, offset)
        self.offsets[(group, topic, qid)] = offset

    @rule(table=st.dictionaries(st.integers(1, 18), st.integers(0, 30), max_size=3))
    def set_delay(self, table):
        self.store.set_delay_offsets(table)
        self.delay = dict(table)

    @rule()
    def flush(self):
        self.store.flush()
        self._durable()

    def _durable(self):
        self.flushed = len(self.log)
        self.flushed_offsets = dict(self.offsets)
        self.flushed_delay = dict(self.delay)

    @precondition(lambda self: self.on_disk)
    @rule()
    def reopen(self):
        self.store.close()
        self._durable()
        self.store = MessageStore(self.root, self.cfg)
        assert self.store.recovery.clean and self.store.recovery.records_walked == 0

    @precondition(lambda self: self.on_disk)
    @rule()
    def crash_and_reopen(self):
        """Reopen from a copy of the files as they are now, like after a process crash:
        everything flushed survives; later puts may or may not (a roll writes the
        sealed segment out); whatever survives is a prefix of the log."""
        image = self.tmp / "crash"
        shutil.copytree(self.root, image, ignore=shutil.ignore_patterns("lock"))
        self.store.close()
        shutil.rmtree(self.root)
        image.rename(self.root)
        self.store = MessageStore(self.root, self.cfg)
        survived = sum(self.store.max_offset(t, q) for t in TOPICS for q in range(3))
        assert self.flushed <= survived <= len(self.log)
        if self.cfg.sync_flush:
            assert survived == len(self.log)          # every put was durable when it returned
        del self.log[survived:]
        self.offsets = dict(self.flushed_offsets)
        self.delay = dict(self.flushed_delay)
        self._durable()

    @precondition(lambda self: self.log and self.on_disk)
    @rule(keep=st.floats(0.0, 0.99))
    def tear_last_record(self, keep):
        """Close, cut the last record short on disk, reopen: it is cut away, the rest kept."""
        self.store.close()
        self._durable()
        *_, phys, size = self.log[-1]
        seg = self.root / "commitlog" / f"{phys - phys % CFG.segment_size:020d}"
        os.truncate(seg, phys % CFG.segment_size + int(size * keep))
        self.store = MessageStore(self.root, self.cfg)
        assert self.store.recovery.truncated_at == phys or (keep == 0 and self.store.recovery.dropped_entries == 1)
        self.log.pop()
        self._durable()

    # -- invariants ------------------------------------------------------------------------
    @invariant()
    def consistent(self):
        self.store._check()
        for t in TOPICS:
            for q in range(3):
                assert self.store.max_offset(t, q) == len(self.queue(t, q))
        assert self.store.commit_log_max_offset >= (self.log[-1][4] + self.log[-1][5] if self.log else 0)
        want = {}
        for (g, t, q), o in self.offsets.items():
            want.setdefault(f"{t}@{g}", {})[q] = o
        assert self.store.offset_table() == want
        assert self.store.delay_offsets() == self.delay


class SyncFlushStoreModel(StoreModel):
    cfg = StoreConfig(segment_size=1024, consume_queue_entries_per_file=4, flush_disk_type="SYNC_FLUSH")


class MemoryStoreModel(StoreModel):
    on_disk = False


for _machine in (StoreModel, SyncFlushStoreModel, MemoryStoreModel):
    _machine.TestCase.settings = settings(_machine.TestCase.settings, stateful_step_count=30)

TestStoreModel = StoreModel.TestCase
TestSyncFlushStoreModel = SyncFlushStoreModel.TestCase
TestMemoryStoreModel = MemoryStoreModel.TestCase
