"""A file store keeps in memory only the consume-queue entries it has not written yet
(issue 17, bounded memory): once a flush has put them in the queue's files, reads come
from the files, so a long-running `serve` does not grow by 20 bytes per message.
The in-memory store keeps every entry (it has nowhere else to keep them)."""
from __future__ import annotations

import random
import tracemalloc
import zlib

from rocketmq_emulator.store import MessageStore, StoreConfig, segment
from rocketmq_emulator.store.consume_queue import ConsumeQueue, QueueFiles, write_queue
from store_testkit import bodies, fill, rec, snapshot

SCHEDULE = "SCHEDULE_TOPIC_XXXX"


def _rounds(store: MessageStore, rounds: int, per_round: int) -> None:
    t = 1_000
    for _ in range(rounds):
        for i in range(per_round):
            r = store.put(rec("T", b"x" * 20, i % 4, tags="a"), t)
            assert r.ok
            t += 1
        store.flush()


def test_flushed_queue_entries_leave_memory(tmp_path, monkeypatch):
    """100,000 puts in 5 flushed rounds after a warm-up: the Python heap grows by less
    than 256 KiB (the entries alone are 2 MB; the old store kept all of them). The
    commit log's cache of recent records (bounded by RECENT_LIMIT, 1 MiB) is made
    small so that what is measured is the queues."""
    monkeypatch.setattr(segment, "RECENT_LIMIT", 16 * 1024)
    store = MessageStore(tmp_path / "s", StoreConfig(fsync=False))
    try:
        _rounds(store, 1, 20_000)          # warm up: queues, caches, segment
        tracemalloc.start()
        try:
            before = tracemalloc.take_snapshot()
            _rounds(store, 5, 20_000)
            after = tracemalloc.take_snapshot()
        finally:
            tracemalloc.stop()
        grown = sum(s.size_diff for s in after.compare_to(before, "filename"))
        assert grown < 256 * 1024, f"heap grew {grown} bytes over 100,000 flushed puts"
        # ... and every entry is still there, read back from the files
        assert store.max_offset("T", 0) == 30_000
        assert len(bodies(store, "T", 1)) == 30_000
    finally:
        store.close()


def test_reads_span_files_and_memory_and_survive_reopen(tmp_path):
    """Small files (8 entries each): pulls and queue_entry that start in flushed files
    and continue into unflushed entries give what an in-memory store gives."""
    cfg = StoreConfig(segment_size=1 << 16, consume_queue_entries_per_file=8, fsync=False)
    on_disk = MessageStore(tmp_path / "s", cfg)
    in_mem = MessageStore(None, cfg)
    rng = random.Random(5)
    t = 1_000
    for _ in range(30):
        for _ in range(rng.randint(1, 25)):
            r = rec("T", rng.randbytes(rng.randint(1, 50)), rng.randrange(3), tags=rng.choice(["a", "b"]))
            t += 1
            assert on_disk.put(r, t).ok
            assert in_mem.put(rec("T", r.body, r.queue_id, tags=r.properties["TAGS"]), t).ok
        if rng.random() < 0.6:
            on_disk.flush()
        for q in range(3):
            assert bodies(on_disk, "T", q) == bodies(in_mem, "T", q)
            start = rng.randrange(0, on_disk.max_offset("T", q) + 1)
            tags = {on_disk.queue_entry("T", q, start)[2]} if start < on_disk.max_offset("T", q) else None
            got = on_disk.get_message("T", q, start, 7, tag_codes=tags)
            want = in_mem.get_message("T", q, start, 7, tag_codes=tags)
            assert (got.status, got.records, got.next_begin_offset) == (want.status, want.records,
                                                                        want.next_begin_offset)
        on_disk._check()
    seen = snapshot(on_disk)
    on_disk.close()
    again = MessageStore(tmp_path / "s", cfg)
    try:
        assert snapshot(again) == seen
        again._check()
    finally:
        again.close()


def test_delayed_entries_are_restored_from_flushed_files(tmp_path):
    """The schedule queue's entries (tagsCode = due time) are read back from the files
    after they left memory, as the delay service does on every due message."""
    cfg = StoreConfig(fsync=False, consume_queue_entries_per_file=8)
    store = MessageStore(tmp_path / "s", cfg)
    try:
        fill(store, 20, topic=SCHEDULE)
        want = [store.queue_entry(SCHEDULE, 0, o) for o in range(20)]
        store.flush()
        assert [store.queue_entry(SCHEDULE, 0, o) for o in range(20)] == want
    finally:
        store.close()


def test_a_repair_of_a_flushed_entry_is_written_back(tmp_path):
    """replace() on an entry only in the files brings it (and those after) back into
    memory, and the next write rewrites the files from it; the running CRC follows."""
    qroot = tmp_path / "cq"
    cq = ConsumeQueue("T", 0, files=QueueFiles(qroot / "T" / "0", 8))
    for i in range(30):
        cq.append(i * 100, 100, i)
    write_queue(qroot, cq, 8)
    assert cq.buf == bytearray()              # all written, none kept
    cq.replace(5, 7, 8, 9)
    assert cq.entry(5) == (7, 8, 9) and cq.entry(6) == (600, 100, 6)
    write_queue(qroot, cq, 8)
    fresh = ConsumeQueue("T", 0, files=QueueFiles(qroot / "T" / "0", 8), base=0)
    fresh.max_offset = fresh.mem_base = fresh.flushed = 30
    assert [fresh.entry(i) for i in range(30)] == [cq.entry(i) for i in range(30)]
    assert cq.entries_crc() == zlib.crc32(cq.read(0, 30))
    cq.truncate(3)
    assert cq.entries_crc() == zlib.crc32(cq.read(0, 3)) and cq.max_offset == 3
    write_queue(qroot, cq, 8)
    assert (qroot / "T" / "0" / f"{0:020d}").stat().st_size == 60


def test_the_in_memory_store_keeps_every_entry():
    store = MessageStore(None, StoreConfig())
    fill(store, 50, queues=2)
    store.flush()
    cq = store._queues[("T", 0)]
    assert len(cq.buf) == 25 * 20 and cq.mem_base == 0
