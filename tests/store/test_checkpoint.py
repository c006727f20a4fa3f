"""The checkpoint file (header line + JSON, rewritten in place) and the whole-segment and
queue CRCs that each flush continues instead of recomputing."""
from __future__ import annotations

import random
import zlib

import pytest

from rocketmq_emulator.store import MessageStore, StoreConfig
from rocketmq_emulator.store.checkpoint import (Checkpoint, Damage, QueueMark, SegmentMark, load_checkpoint,
                                                save_checkpoint)
from rocketmq_emulator.store.consume_queue import ConsumeQueue
from rocketmq_emulator.store.segment import FileSegment
from store_testkit import fill, snapshot


def test_the_running_segment_crc_is_the_crc_of_the_bytes(tmp_path):
    """Continued across flushes, forgotten when bytes are cut: always the CRC32 of every
    byte written."""
    rng = random.Random(7)
    seg = FileSegment(0, tmp_path / "seg", create=True, fsync=False)
    data = bytearray()
    while len(data) < 5 << 20:
        for _ in range(rng.randint(1, 40)):
            chunk = rng.randbytes(rng.randint(1, 40_000))
            seg.append(chunk)
            data += chunk
        assert seg.prefix_crc() == zlib.crc32(data)
        if rng.random() < 0.15:                      # a failed put cut back in the file
            # (cut less than is appended again: the new end passes the old one)
            cut = len(data) - rng.randint(1, 500)
            seg.rollback_to(cut)
            del data[cut:]
            again = rng.randbytes(1000)              # other bytes where the old ones were
            seg.append(again)
            data += again
            assert seg.prefix_crc() == zlib.crc32(data)
    seg.close()


def test_the_running_queue_crc_is_the_crc_of_the_entries():
    rng = random.Random(3)
    cq = ConsumeQueue("T", 0)
    for _ in range(200):
        for _ in range(rng.randint(1, 30)):
            cq.append(rng.randrange(1 << 40), rng.randrange(1 << 20), rng.randrange(1 << 40))
        assert cq.entries_crc() == zlib.crc32(cq.read(cq.base, cq.max_offset))
        if rng.random() < 0.1:
            cq.truncate(cq.max_offset - rng.randint(0, cq.max_offset - cq.base))
        if rng.random() < 0.1 and cq.max_offset > cq.base:
            cq.replace(rng.randrange(cq.base, cq.max_offset), 1, 2, 3)
        assert cq.entries_crc() == zlib.crc32(cq.read(cq.base, cq.max_offset))
        if rng.random() < 0.02:
            cq.reset(rng.randrange(100))
            assert cq.entries_crc() == 0


def _checkpoint(n: int) -> Checkpoint:
    return Checkpoint(n * 1000, (SegmentMark(0, n * 1000, 12345 + n, False),),
                      {("T", q): QueueMark(n, q, 777 + q) for q in range(n)},
                      tuple(Damage(i * 10, i * 10 + 5, f"bad body CRC {i}") for i in range(n)))


def test_the_checkpoint_file_round_trips_and_is_rewritten_in_place(tmp_path):
    path = tmp_path / "checkpoint"
    save_checkpoint(path, _checkpoint(9))
    long_size = path.stat().st_size
    save_checkpoint(path, _checkpoint(2))              # shorter: nothing of the old one is left
    assert path.stat().st_size < long_size
    assert load_checkpoint(path) == (_checkpoint(2), None)
    header, _, body = path.read_bytes().partition(b"\n")
    assert header.split(b" ")[1] == str(len(body)).encode()


def test_bytes_after_the_document_are_ignored(tmp_path):
    """A crash between the rewrite and the cut leaves the old file's end behind."""
    path = tmp_path / "checkpoint"
    save_checkpoint(path, _checkpoint(3))
    path.write_bytes(path.read_bytes() + b'"queues":{"old":1}}')
    assert load_checkpoint(path) == (_checkpoint(3), None)


@pytest.mark.parametrize("damage", ["flip", "short", "no_header", "version_1", "version_2"])
def test_a_torn_or_foreign_checkpoint_is_not_used(tmp_path, damage):
    path = tmp_path / "checkpoint"
    save_checkpoint(path, _checkpoint(3))
    raw = path.read_bytes()
    if damage == "flip":                               # half of a rewrite: the CRC fails
        i = raw.index(b"logEnd") + 9
        raw = raw[:i] + (b"7" if raw[i:i + 1] != b"7" else b"8") + raw[i + 1:]
    elif damage == "short":
        raw = raw[:-5]
    elif damage == "no_header":
        raw = raw.partition(b"\n")[2]
    elif damage == "version_1":                        # what version 1 wrote: JSON only
        raw = b'{"format":"rocketmq-emulator-checkpoint","version":1,"crcWindow":1048576,"logEnd":0,' \
              b'"segments":[],"queues":{}}'
    else:                                              # version 2: tail CRCs, plain queue counts
        body = b'{"format":"rocketmq-emulator-checkpoint","version":2,"crcWindow":1048576,"logEnd":0,' \
               b'"segments":[],"queues":{}}'
        raw = b"%08x %d\n" % (zlib.crc32(body), len(body)) + body
    path.write_bytes(raw)
    ckpt, why = load_checkpoint(path)
    assert ckpt is None and why


def test_a_clean_reopen_of_a_log_flushed_many_times_walks_nothing(tmp_path):
    """The CRCs the flushes carried forward must be the ones opening computes."""
    root = tmp_path / "s"
    cfg = StoreConfig(segment_size=16 << 20, fsync=False)
    s = MessageStore(root, cfg)
    for i in range(12):
        fill(s, 300, queues=2, start_ms=1_000 + i * 1_000, pad="x" * 1000)
        s.flush()
    assert s.commit_log_max_offset > 3 << 20
    before = snapshot(s)
    s.close()
    with MessageStore(root, cfg) as again:
        assert again.recovery.used_checkpoint and again.recovery.records_walked == 0, again.recovery.notes
        assert again.recovery.clean and not again.recovery.rebuilt_queues
        assert snapshot(again) == before
