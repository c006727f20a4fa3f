"""Recovery on open: a torn or corrupt tail is cut (and logged), everything before it is
kept, and puts continue after it; consume queues are repaired from the log."""
from __future__ import annotations

import logging
import os
import shutil
import struct

import pytest

from rocketmq_emulator.store import GetStatus, MessageStore, StoreError
from rocketmq_emulator.store.records import encode_record
from store_testkit import SMALL, bodies, fill, file_pos, patch, rec, segment_files, snapshot

N = 120


@pytest.fixture
def closed_store(tmp_path):
    """A closed store of N records on queue T/0 spread over several small segments;
    returns (root, PutResults)."""
    root = tmp_path / "s"
    with MessageStore(root, SMALL) as s:
        results = fill(s, N)
    assert len(segment_files(root)) >= 2
    return root, results


def expect_cut(root, results, at_index, reason, caplog):
    """Reopen; the log must end just before record ``at_index`` and say why."""
    caplog.set_level(logging.WARNING, logger="store")
    s = MessageStore(root, SMALL)
    cut_at = results[at_index].commit_log_offset
    rep = s.recovery
    assert rep.truncated_at == cut_at and reason in rep.reason, rep
    assert any(r.name == "store" and "cut at offset" in r.getMessage() for r in caplog.records)
    assert bodies(s, "T", 0) == [f"body-{i}".encode() for i in range(at_index)]
    assert s.max_offset("T", 0) == at_index
    assert s.commit_log_max_offset == cut_at
    s._check()
    res = s.put(rec("T", b"after"), 1)                  # puts continue right there
    assert (res.commit_log_offset, res.queue_offset) == (cut_at, at_index)
    s.close()
    with MessageStore(root, SMALL) as again:            # and the repair itself is durable
        assert again.recovery.clean and again.recovery.records_walked == 0
        assert bodies(again, "T", 0) == [f"body-{i}".encode() for i in range(at_index)] + [b"after"]
        again._check()


def test_truncated_last_record_is_cut_away(closed_store, caplog):
    root, results = closed_store
    path, pos = file_pos(root, results[-1].commit_log_offset, SMALL.segment_size)
    os.truncate(path, pos + results[-1].store_size - 5)
    expect_cut(root, results, N - 1, "short read", caplog)


def test_corrupted_body_crc_is_cut_away(closed_store, caplog):
    root, results = closed_store
    path, pos = file_pos(root, results[-1].commit_log_offset, SMALL.segment_size)
    patch(path, pos + 88, b"X")                          # first body byte
    expect_cut(root, results, N - 1, "bad body CRC", caplog)


@pytest.mark.parametrize("size,reason", [(1 << 20, "short read"), (50, "bad length"), (-7, "bad length")])
def test_bad_length_is_cut_away(closed_store, caplog, size, reason):
    root, results = closed_store
    path, pos = file_pos(root, results[-1].commit_log_offset, SMALL.segment_size)
    patch(path, pos, struct.pack(">i", size))
    expect_cut(root, results, N - 1, reason, caplog)


def test_bad_magic_is_cut_away(closed_store, caplog):
    root, results = closed_store
    path, pos = file_pos(root, results[-1].commit_log_offset, SMALL.segment_size)
    patch(path, pos + 4, b"\0\0\0\0")
    expect_cut(root, results, N - 1, "bad magic", caplog)


def test_record_at_the_wrong_offset_is_cut_away(closed_store, caplog):
    root, results = closed_store
    path, pos = file_pos(root, results[-1].commit_log_offset, SMALL.segment_size)
    patch(path, pos + 28, struct.pack(">q", 12345))
    expect_cut(root, results, N - 1, "says it is at offset 12345", caplog)


def test_garbage_and_zeros_after_the_last_record_are_cut(closed_store, caplog):
    """Bytes past the checkpointed end (a crash after extending the file) are walked."""
    root, results = closed_store
    last = segment_files(root)[-1]
    with open(last, "ab") as f:
        f.write(b"\0" * 300)
    caplog.set_level(logging.WARNING, logger="store")
    with MessageStore(root, SMALL) as s:
        assert s.recovery.truncated_at == results[-1].commit_log_offset + results[-1].store_size
        assert s.recovery.bytes_cut == 300 and "bad magic" in s.recovery.reason
        assert len(bodies(s, "T", 0)) == N
        s._check()


def test_a_half_written_record_after_the_checkpoint(closed_store, caplog):
    root, results = closed_store
    extra = rec("T", b"torn")
    extra.commit_log_offset = results[-1].commit_log_offset + results[-1].store_size
    extra.queue_offset = N
    raw = encode_record(extra)
    with open(segment_files(root)[-1], "ab") as f:
        f.write(raw[:len(raw) // 2])
    with MessageStore(root, SMALL) as s:
        assert s.recovery.truncated_at == extra.commit_log_offset
        assert s.max_offset("T", 0) == N


def test_a_whole_record_after_the_checkpoint_is_kept_and_queued(closed_store):
    """Written to the log but not yet checkpointed (a crash between the two): the walk
    validates it and the consume queue gets its entry."""
    root, results = closed_store
    extra = rec("T", b"late", tags="TagL")
    extra.commit_log_offset = results[-1].commit_log_offset + results[-1].store_size
    extra.queue_offset = N
    extra.store_timestamp = 77
    with open(segment_files(root)[-1], "ab") as f:
        f.write(encode_record(extra))
    with MessageStore(root, SMALL) as s:
        assert s.recovery.truncated_at is None and s.recovery.records_walked >= 1
        assert ("T", 0) in s.recovery.rebuilt_queues
        assert bodies(s, "T", 0)[-1] == b"late" and s.max_offset("T", 0) == N + 1
        s._check()


def test_a_damaged_record_in_an_earlier_segment_is_skipped_and_the_rest_kept(closed_store, caplog):
    """Damage is not the end of the log: a bad record in segment k is skipped and
    reported (offset, segment, reason); every record after it, in its segment and in
    the later ones, stays served (issue 17: one bad record used to delete them all)."""
    root, results = closed_store
    victim = next(i for i, r in enumerate(results) if r.commit_log_offset >= SMALL.segment_size) + 2
    path, pos = file_pos(root, results[victim].commit_log_offset, SMALL.segment_size)
    patch(path, pos + 88, b"#")
    n_files = len(segment_files(root))
    caplog.set_level(logging.WARNING, logger="store")
    with MessageStore(root, SMALL) as s:
        assert s.recovery.truncated_at is None and not s.recovery.removed_segments
        assert s.recovery.damaged == ((results[victim].commit_log_offset, results[victim].store_size, path.name,
                                       "bad body CRC"),)
        assert bodies(s, "T", 0) == [f"body-{i}".encode() for i in range(len(results)) if i != victim]
        assert s.max_offset("T", 0) == len(results)           # the lost offset is skipped, not reused
        assert s.read(results[victim].commit_log_offset) is None
        assert len(segment_files(root)) >= n_files
        s._check()
    warned = [r.getMessage() for r in caplog.records if "damaged record" in r.getMessage()]
    assert len(warned) == 1 and str(results[victim].commit_log_offset) in warned[0] and path.name in warned[0]


def victim_segment(results, i):
    return results[i].commit_log_offset // SMALL.segment_size


def test_checkpointed_segments_are_verified_by_crc(closed_store):
    root, results = closed_store
    path, pos = file_pos(root, results[-3].commit_log_offset, SMALL.segment_size)
    patch(path, pos + 90, b"!")
    with MessageStore(root, SMALL) as s:
        assert any("differ from the checkpoint's CRC" in n for n in s.recovery.notes)
        assert [d[0] for d in s.recovery.damaged] == [results[-3].commit_log_offset]
        assert s.recovery.truncated_at is None and s.max_offset("T", 0) == len(results)
        s._check()


def test_a_missing_middle_segment_is_refused(closed_store):
    root, _ = closed_store
    files = segment_files(root)
    assert len(files) >= 3
    files[1].unlink()
    with pytest.raises(StoreError, match="missing a segment"):
        MessageStore(root, SMALL)
    files[0].unlink()                 # now it is a log that starts later, which is fine
    with MessageStore(root, SMALL) as s:      # (and the failed open released the lock)
        assert s.commit_log_min_offset == int(files[2].name)


def test_a_segment_after_an_unsealed_one_is_removed(closed_store):
    """A crash around a roll: the older segment lost its tail and BLANK, the newer one
    survived. The log ends in the older one."""
    root, results = closed_store
    files = segment_files(root)
    first_len = files[0].stat().st_size
    os.truncate(files[0], first_len - 8)                 # drop the BLANK
    with MessageStore(root, SMALL) as s:
        assert len(s.recovery.removed_segments) == len(files) - 1
        assert s.commit_log_max_offset == first_len - 8
        in_first = sum(1 for r in results if r.commit_log_offset < SMALL.segment_size)
        assert s.max_offset("T", 0) == in_first
        s._check()


def test_deleted_consume_queue_is_rebuilt_from_the_log(tmp_path):
    root = tmp_path / "s"
    with MessageStore(root, SMALL) as s:
        fill(s, 40, queues=3, tags="TagA")
        fill(s, 5, topic="Other")
        before = snapshot(s)
    qfiles = {p: p.read_bytes() for p in (root / "consumequeue").rglob("*") if p.is_file()}
    shutil.rmtree(root / "consumequeue" / "T" / "1")
    with MessageStore(root, SMALL) as s:
        assert ("T", 1) in s.recovery.rebuilt_queues
        assert snapshot(s) == before
        s._check()
    assert {p: p.read_bytes() for p in (root / "consumequeue").rglob("*") if p.is_file()} == qfiles


@pytest.mark.parametrize("damage", ["truncate_mid_entry", "delete_first_file", "zero_tail", "wrong_entry",
                                    "whole_dir", "no_checkpoint"])
def test_damaged_consume_queues_are_repaired(tmp_path, damage):
    root = tmp_path / "s"
    with MessageStore(root, SMALL) as s:
        fill(s, 40, queues=2)
        before = snapshot(s)
    qdir = root / "consumequeue" / "T" / "0"
    files = sorted(qdir.iterdir())
    if damage == "truncate_mid_entry":
        os.truncate(files[-1], files[-1].stat().st_size - 7)
    elif damage == "delete_first_file":
        files[0].unlink()
    elif damage == "zero_tail":
        with open(files[-1], "ab") as f:
            f.write(bytes(60))
    elif damage == "wrong_entry":
        data = bytearray(files[-1].read_bytes())
        data[-20:-12] = struct.pack(">q", 0)        # last entry now points at record 0
        files[-1].write_bytes(bytes(data))
    elif damage == "whole_dir":
        shutil.rmtree(root / "consumequeue")
    elif damage == "no_checkpoint":
        shutil.rmtree(qdir)
        (root / "checkpoint").unlink()
    with MessageStore(root, SMALL) as s:
        assert snapshot(s) == before
        s._check()
    with MessageStore(root, SMALL) as s:        # repaired on disk as well
        assert s.recovery.clean and not s.recovery.rebuilt_queues
        assert snapshot(s) == before


def test_entries_past_a_cut_log_are_dropped(tmp_path):
    root = tmp_path / "s"
    with MessageStore(root, SMALL) as s:
        early = fill(s, 5, topic="Early")
        fill(s, 5, topic="Late")
    os.truncate(segment_files(root)[-1], early[-1].commit_log_offset + early[-1].store_size)
    with MessageStore(root, SMALL) as s:
        assert s.recovery.dropped_entries == 5
        assert s.max_offset("Early", 0) == 5 and s.max_offset("Late", 0) == 0
        # checklist 28: a queue that exists but is empty answers NO_MESSAGE_IN_QUEUE
        res = s.get_message("Late", 0, 0, 32)
        assert res.status is GetStatus.NO_MESSAGE_IN_QUEUE and res.next_begin_offset == 0
        assert s.get_message("Late", 0, 3, 32).status is GetStatus.NO_MESSAGE_IN_QUEUE
        assert s.put(rec("Late", b"again"), 1).queue_offset == 0
        s._check()


def test_stale_checkpoint_only_costs_a_longer_walk(tmp_path):
    root = tmp_path / "s"
    s = MessageStore(root, SMALL)
    fill(s, 10)
    s.flush()
    old = (root / "checkpoint").read_bytes()
    fill(s, 10, start_ms=5_000)
    before = snapshot(s)
    s.close()
    (root / "checkpoint").write_bytes(old)
    with MessageStore(root, SMALL) as again:
        assert again.recovery.truncated_at is None and again.recovery.records_walked >= 10
        assert snapshot(again) == before


@pytest.mark.parametrize("content", [b"", b"{", b'{"format":"other"}', b'{"format":"rocketmq-emulator-checkpoint",'
                                     b'"version":1,"logEnd":"x","segments":[],"queues":{}}'])
def test_unusable_checkpoint_means_a_full_walk(tmp_path, content):
    root = tmp_path / "s"
    with MessageStore(root, SMALL) as s:
        fill(s, 12, queues=2)
        before = snapshot(s)
    (root / "checkpoint").write_bytes(content)
    with MessageStore(root, SMALL) as again:
        assert not again.recovery.used_checkpoint
        assert snapshot(again) == before
        again._check()


def test_a_log_ending_in_a_sealed_segment_continues_in_the_next(closed_store, caplog):
    """A crash right after a roll can leave the sealed segment as the last file: the
    next segment is recreated where the BLANK points and puts continue there."""
    root, results = closed_store
    last = segment_files(root)[-1]
    base = int(last.name)
    lost = sum(1 for r in results if r.commit_log_offset >= base)
    last.unlink()
    caplog.set_level(logging.WARNING, logger="store")
    with MessageStore(root, SMALL) as s:
        assert s.recovery.dropped_entries == lost and not s.recovery.clean
        assert s.commit_log_max_offset == base
        assert s.max_offset("T", 0) == N - lost
        res = s.put(rec("T", b"next"), 1)
        assert res.commit_log_offset == base and res.queue_offset == N - lost
        s._check()
    assert any("dropped" in r.getMessage() for r in caplog.records)


def test_crash_keeps_every_appended_record_and_loses_what_was_not_persisted(tmp_path):
    """crash() models a killed broker: appended bytes are in the page cache (RocketMQ
    appends through an mmap) and survive; offsets committed since the last flush do not."""
    from rocketmq_emulator.store import MessageStore
    from rocketmq_emulator.store.records import MessageRecord, iter_records

    root = tmp_path / "s"
    store = MessageStore(root)
    for i in range(5):
        store.put(MessageRecord(topic="T", queue_id=0, body=b"m%d" % i, born_timestamp=i), now_ms=i)
    store.commit_offset("G", "T", 0, 2)
    store.flush()
    for i in range(5, 8):                                   # appended, never flushed
        store.put(MessageRecord(topic="T", queue_id=0, body=b"m%d" % i, born_timestamp=i), now_ms=i)
    store.commit_offset("G", "T", 0, 6)                     # committed, never persisted
    store.crash()
    again = MessageStore(root)                              # the lock was released
    assert again.max_offset("T", 0) == 8
    got = again.get_message("T", 0, 0, 32, None)
    assert [r.body for raw in got.records for r in iter_records(raw)] == [b"m%d" % i for i in range(8)]
    assert again.query_offset("G", "T", 0) == 2             # the unpersisted commit is gone
    again.close()


def test_a_rebuilt_timer_queue_has_the_delivery_times_as_tags_codes(tmp_path):
    """The timer topic's tagsCode is TIMER_DELIVER_MS, at put and when a queue is
    rebuilt from the log alike (one tagsCode function for both)."""
    from rocketmq_emulator.store.records import TIMER_TOPIC
    root = tmp_path / "s"
    due = (9_000_000, 2_000, 5_500)
    with MessageStore(root, SMALL) as s:
        for i, t in enumerate(due):
            s.put(rec(TIMER_TOPIC, f"m{i}".encode(), TIMER_DELIVER_MS=str(t), REAL_TOPIC="T", REAL_QID="0"), 1_000)
        assert [s.queue_entry(TIMER_TOPIC, 0, i)[2] for i in range(3)] == list(due)
    shutil.rmtree(root / "consumequeue" / TIMER_TOPIC)
    with MessageStore(root, SMALL) as s:
        assert (TIMER_TOPIC, 0) in s.recovery.rebuilt_queues
        assert [s.queue_entry(TIMER_TOPIC, 0, i)[2] for i in range(3)] == list(due)
        s._check()
