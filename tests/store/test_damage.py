"""Damage on disk (issue 17, item 6, store side): every segment is checked on open (its
CRC against the checkpoint's, or record by record), a damaged record with valid ones
after it is skipped and reported while they stay served, the ``__CRC32#`` property
catches damage to headers and properties (not only bodies), and consume-queue files
that do not match the log are rebuilt from it."""
from __future__ import annotations

import logging
import os
import struct

import pytest

from rocketmq_emulator.store import MessageStore, StoreConfig
from rocketmq_emulator.store.records import decode_record
from store_testkit import bodies, file_pos, patch, rec, segment_files

CFG = StoreConfig(segment_size=4096, consume_queue_entries_per_file=16)


def _body(i: int) -> bytes:
    return b"body-%03d|" % i + b"." * 150


def _store(root, n=80, queues=2):
    """A closed store of ``n`` records over several segments; (root, PutResults)."""
    with MessageStore(root, CFG) as s:
        results = [s.put(rec("T", _body(i), i % queues, tags=f"t{i % 3}", uniq=f"U{i:04d}"), 1_000 + i)
                   for i in range(n)]
    assert all(r.ok for r in results) and len(segment_files(root)) >= 5
    return results


def _expect_damaged(s, results, victims, *, queues=2):
    """Only the victims are gone; everything else reads as it was stored."""
    for q in range(queues):
        want = [_body(i) for i in range(len(results)) if i % queues == q and i not in victims]
        assert bodies(s, "T", q) == want
        assert s.max_offset("T", q) == len([i for i in range(len(results)) if i % queues == q])
    for i, r in enumerate(results):
        got = s.read(r.commit_log_offset)
        assert (got is None) == (i in victims)
    s._check()


def _flip(root, phys, at):
    path, pos = file_pos(root, phys, CFG.segment_size)
    with open(path, "r+b") as f:
        f.seek(pos + at)
        b = f.read(1)
        f.seek(pos + at)
        f.write(bytes([b[0] ^ 0x40]))
    return path


@pytest.mark.parametrize("checkpoint", [True, False])
@pytest.mark.parametrize("where", ["body", "properties", "queue offset", "store timestamp"])
def test_a_damaged_record_anywhere_in_the_log_is_skipped_and_reported(tmp_path, caplog, checkpoint, where):
    """In an old segment (the second of many), the checkpoint present or not: the body
    has its 4.x CRC; header fields and properties are caught by the CRC property."""
    results = _store(tmp_path)
    victim = next(i for i, r in enumerate(results) if r.commit_log_offset >= CFG.segment_size) + 1
    phys = results[victim].commit_log_offset
    raw = decode_record(_segment_read(tmp_path, phys, results[victim].store_size))
    at = {"body": 84 + 4 + 2, "queue offset": 20 + 7, "store timestamp": 56 + 7,
          "properties": results[victim].store_size - 25}[where]
    path = _flip(tmp_path, phys, at)
    if not checkpoint:
        (tmp_path / "checkpoint").unlink()
    caplog.set_level(logging.WARNING, logger="store")
    with MessageStore(tmp_path, CFG) as s:
        rep = s.recovery
        assert rep.truncated_at is None and not rep.removed_segments and not rep.clean
        assert [(d[0], d[1], d[2]) for d in rep.damaged] == [(phys, results[victim].store_size, path.name)]
        assert ("body CRC" if where == "body" else "CRC property") in rep.damaged[0][3]
        _expect_damaged(s, results, {victim})
    warned = [r.getMessage() for r in caplog.records if "damaged record" in r.getMessage()]
    assert len(warned) == 1 and f"offset {phys} in segment {path.name}" in warned[0]
    assert raw.topic == "T"
    with MessageStore(tmp_path, CFG) as again:           # still damaged, still skipped
        assert [d[0] for d in again.recovery.damaged] == [phys]
        _expect_damaged(again, results, {victim})
        q = victim % 2
        after = again.put(rec("T", b"after", q), 9_999)   # the queue goes on after the lost offset
        assert after.ok and after.queue_offset == again.max_offset("T", q) - 1 == len(results[q::2])
        assert bodies(again, "T", q)[-1] == b"after"
        again._check()


def _segment_read(root, phys, n):
    path, pos = file_pos(root, phys, CFG.segment_size)
    with open(path, "rb") as f:
        f.seek(pos)
        return f.read(n)


def test_a_damaged_length_field_is_skipped_up_to_the_next_valid_record(tmp_path):
    results = _store(tmp_path)
    victim = 20
    path, pos = file_pos(tmp_path, results[victim].commit_log_offset, CFG.segment_size)
    patch(path, pos, struct.pack(">i", 5_000_000))        # the record claims to run past its segment
    with MessageStore(tmp_path, CFG) as s:
        assert [d[:2] for d in s.recovery.damaged] == [(results[victim].commit_log_offset, results[victim].store_size)]
        _expect_damaged(s, results, {victim})


def test_several_damaged_records_in_a_row_are_one_range(tmp_path):
    results = _store(tmp_path)
    first = 30
    while results[first + 2].commit_log_offset // CFG.segment_size != results[first].commit_log_offset // CFG.segment_size:
        first += 1
    for i in (first, first + 1, first + 2):
        _flip(tmp_path, results[i].commit_log_offset, 0)      # the length field of each
    with MessageStore(tmp_path, CFG) as s:
        start = results[first].commit_log_offset
        assert [d[:2] for d in s.recovery.damaged] == [(start, results[first + 3].commit_log_offset - start)]
        _expect_damaged(s, results, {first, first + 1, first + 2})


def test_the_damaged_end_of_a_sealed_segment_is_sealed_again(tmp_path):
    """The last record and the BLANK of a sealed segment are damaged: the next segment's
    records are kept (it starts with a valid record), the segment gets a new BLANK."""
    results = _store(tmp_path)
    files = segment_files(tmp_path)
    second = files[1]
    size = second.stat().st_size
    patch(second, size - 12, b"\xff" * 12)                 # last record's tail and the BLANK
    victim = max(i for i, r in enumerate(results) if r.commit_log_offset < int(files[2].name))
    with MessageStore(tmp_path, CFG) as s:
        assert s.recovery.truncated_at is None and not s.recovery.removed_segments
        assert any("sealed again" in n for n in s.recovery.notes)
        _expect_damaged(s, results, {victim})
    with MessageStore(tmp_path, CFG) as again:
        _expect_damaged(again, results, {victim})


def test_a_damaged_last_record_is_a_torn_end_and_is_cut(tmp_path):
    results = _store(tmp_path)
    _flip(tmp_path, results[-1].commit_log_offset, 90)
    with MessageStore(tmp_path, CFG) as s:
        assert s.recovery.truncated_at == results[-1].commit_log_offset and not s.recovery.damaged
        assert s.max_offset("T", (len(results) - 1) % 2) == (len(results) - 1) // 2


@pytest.mark.parametrize("checkpoint", [True, False])
@pytest.mark.parametrize("damage", ["phys", "size", "tags", "zeros"])
def test_damaged_consume_queue_entries_are_rebuilt_from_the_log(tmp_path, caplog, checkpoint, damage):
    results = _store(tmp_path)
    qfile = tmp_path / "consumequeue" / "T" / "1" / f"{0:020d}"
    entry = 3 * 20
    change = {"phys": (entry + 4, b"\x00\x01"), "size": (entry + 8, b"\x00\x00\x00\x10"),
              "tags": (entry + 19, b"\x55"), "zeros": (entry, bytes(20))}[damage]
    patch(qfile, *change)
    if not checkpoint:
        (tmp_path / "checkpoint").unlink()
    with MessageStore(tmp_path, CFG) as s:
        assert ("T", 1) in s.recovery.rebuilt_queues
        _expect_damaged(s, results, set())
        assert s.queue_entry("T", 1, 3)[:2] == (results[7].commit_log_offset, results[7].store_size)
    assert os.path.getsize(qfile) == 16 * 20            # rewritten whole, as its 16 entries


def test_a_clean_reopen_checks_every_segment_against_the_checkpoint_and_walks_nothing(tmp_path):
    results = _store(tmp_path)
    with MessageStore(tmp_path, CFG) as s:
        assert s.recovery.clean and s.recovery.records_walked == 0 and not s.recovery.rebuilt_queues
        _expect_damaged(s, results, set())
