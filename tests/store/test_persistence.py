"""A store on disk: reopen gives everything back, byte for byte; the root is guarded;
segments roll over; offsets and delay offsets persist in upstream's documents."""
from __future__ import annotations

import json
import shutil
import struct

import pytest

from rocketmq_emulator.store import GetStatus, MessageStore, StoreConfig, StoreError
from rocketmq_emulator.store.records import BLANK_MAGIC_CODE, MessageRecord, Prop, decode_record
from store_testkit import SMALL, bodies, fill, rec, segment_files, snapshot


def tree_bytes(root):
    """Every file under root (except the lock) -> its bytes."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and p.name != "lock"}


def populate(store):
    for i in range(120):
        topic = ("OrderTopic", "%RETRY%G", "T")[i % 3]
        store.put(rec(topic, f"{topic}-{i}".encode() * (i % 7 + 1), i % 4, tags=f"Tag{i % 3}",
                      keys=f"order-{i} batch-{i // 10}", uniq=f"U{i:030d}"), 10_000 + i)
    for level in (1, 3, 18):
        store.put(MessageRecord(topic="SCHEDULE_TOPIC_XXXX", body=b"delayed", queue_id=level - 1,
                                properties={Prop.DELAY: str(level), Prop.REAL_TOPIC: "T", Prop.REAL_QID: "0"}),
                  20_000 + level)
    store.commit_offset("G", "OrderTopic", 0, 12)
    store.commit_offset("G", "OrderTopic", 3, 4)
    store.commit_offset("H", "T", 1, 0)
    store.set_delay_offsets({1: 0, 3: 1, 18: 1})
    store.save_config("topics", {"topicConfigTable": {"OrderTopic": {"readQueueNums": 4}}})


def test_write_close_reopen_gives_everything_back_byte_identical(tmp_path):
    root = tmp_path / "s"
    s = MessageStore(root, SMALL)
    populate(s)
    before = snapshot(s)
    s._check()
    s.close()
    files = tree_bytes(root)
    assert len(segment_files(root)) > 3                     # the small segments rolled over

    again = MessageStore(root, SMALL)
    assert again.recovery.clean and again.recovery.records_walked == 0 and again.recovery.used_checkpoint
    assert snapshot(again) == before
    again._check()
    assert again.load_config("topics") == {"topicConfigTable": {"OrderTopic": {"readQueueNums": 4}}}
    assert again.query_offset("G", "OrderTopic", 3) == 4
    assert again.delay_offsets() == {1: 0, 3: 1, 18: 1}
    assert len(again.query_by_key("OrderTopic", "order-3", 10, 0, 1 << 62)) == 1
    again.close()
    assert tree_bytes(root) == files                         # opening and closing changed nothing

    third = MessageStore(root, SMALL)                        # and it carries on where it stopped
    res = third.put(rec("OrderTopic", b"after", 0), 99_999)
    assert res.queue_offset == before["queues"][("OrderTopic", 0)][1]
    assert res.commit_log_offset == before["log"][1] or res.commit_log_offset % SMALL.segment_size == 0
    third._check()
    third.close()


def test_offset_documents_have_upstreams_shape(tmp_path):
    s = MessageStore(tmp_path, SMALL)
    s.commit_offset("G", "T", 0, 12)
    s.commit_offset("G", "T", 1, 4)
    s.set_delay_offsets({1: 0, 3: 7})
    s.flush()
    assert json.loads((tmp_path / "config" / "consumerOffset.json").read_text()) == \
        {"offsetTable": {"T@G": {"0": 12, "1": 4}}}
    # checklist 68: per-level offsets persist as {"offsetTable": {level: offset}}
    assert json.loads((tmp_path / "config" / "delayOffset.json").read_text()) == {"offsetTable": {"1": 0, "3": 7}}
    s.close()


def test_68_delay_and_consumer_offsets_survive_reopen(tmp_path):
    with MessageStore(tmp_path, SMALL) as s:
        s.set_delay_offsets({2: 9})
        s.commit_offset("G", "T", 0, 3)
    with MessageStore(tmp_path, SMALL) as s:
        assert s.delay_offsets() == {2: 9} and s.offset_table() == {"T@G": {0: 3}}


def test_fastjson_documents_with_bare_integer_keys_are_read(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "delayOffset.json").write_text('{"offsetTable":{1:0,3:7}}')
    (tmp_path / "config" / "consumerOffset.json").write_text('{\n\t"offsetTable":{\n\t\t"T@G":{0:12,1:4}\n\t}\n}')
    with MessageStore(tmp_path, SMALL) as s:
        assert s.delay_offsets() == {1: 0, 3: 7}
        assert s.offset_table() == {"T@G": {0: 12, 1: 4}}


def test_unreadable_offsets_document_is_a_store_error(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "consumerOffset.json").write_text("{not json")
    with pytest.raises(StoreError, match="consumerOffset.json"):
        MessageStore(tmp_path, SMALL)
    (tmp_path / "config" / "consumerOffset.json").unlink()
    MessageStore(tmp_path, SMALL).close()          # the failed open released the lock


def test_one_live_store_per_root(tmp_path):
    s = MessageStore(tmp_path, SMALL)
    with pytest.raises(StoreError, match="locked by another live store"):
        MessageStore(tmp_path, SMALL)
    s.close()
    MessageStore(tmp_path, SMALL).close()


def test_root_that_is_a_file(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(StoreError, match="is a file"):
        MessageStore(f)


def test_foreign_directory_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    (tmp_path / "photos").mkdir()
    with pytest.raises(StoreError, match="not a message store"):
        MessageStore(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "photos"]     # untouched


def test_commitlog_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "commitlog").write_text("x")
    with pytest.raises(StoreError, match="should be a directory"):
        MessageStore(tmp_path)


def test_a_new_root_is_created(tmp_path):
    with MessageStore(tmp_path / "a" / "b", SMALL) as s:
        fill(s, 2)
    assert {p.name for p in (tmp_path / "a" / "b").iterdir()} >= {"commitlog", "consumequeue", "config",
                                                                   "checkpoint", "lock"}


def test_segment_rollover_writes_a_blank_and_moves_the_record(tmp_path):
    """A record that does not fit (with 8 bytes to spare for the BLANK) goes whole to the
    next segment, which starts at base + segment_size; the old one ends with a BLANK
    whose size is the unused rest."""
    cfg = StoreConfig(segment_size=1000)
    s = MessageStore(tmp_path, cfg)
    sizes, results = [], []
    for i in range(12):
        r = rec("T", bytes(200 + i))
        results.append(s.put(r, i))
        sizes.append(r.store_size)
    s.flush()
    files = segment_files(tmp_path)
    assert [f.name for f in files][:3] == [f"{b:020d}" for b in (0, 1000, 2000)]
    first = files[0].read_bytes()
    used = sum(sizes[:3])                               # 3 records fit, the 4th does not
    assert used + sizes[3] + 8 > 1000 >= used + 8
    assert len(first) == used + 8
    assert struct.unpack_from(">iI", first, used) == (1000 - used, BLANK_MAGIC_CODE)
    assert results[3].commit_log_offset == 1000
    moved = s.look_message_by_offset(1000)
    assert moved.commit_log_offset == 1000 and moved.queue_offset == 3     # PHYSICALOFFSET patched
    assert [r.commit_log_offset // 1000 for r in results] == [0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3]
    assert bodies(s, "T", 0) == [bytes(200 + i) for i in range(12)]
    s._check()
    s.close()
    with MessageStore(tmp_path, cfg) as again:
        assert again.recovery.clean
        assert bodies(again, "T", 0) == [bytes(200 + i) for i in range(12)]
        again._check()


def test_rollover_is_the_same_in_memory(tmp_path):
    cfg = StoreConfig(segment_size=1000)
    disk, mem = MessageStore(tmp_path, cfg), MessageStore(None, cfg)
    for i in range(30):
        a, b = disk.put(rec("T", bytes(i * 13 % 300)), i), mem.put(rec("T", bytes(i * 13 % 300)), i)
        assert a == b
    assert snapshot(disk) == snapshot(mem)
    disk.flush()
    for seg_file, seg in zip(segment_files(tmp_path), mem._log.segments):
        assert seg_file.read_bytes() == seg.view()
    disk.close()


def test_27_34_a_log_trimmed_past_offset_zero(tmp_path):
    """With the first segments gone (as after upstream's expiry), min offsets move up:
    a pull below min is OFFSET_TOO_SMALL with next = min (checklist 27), and offset 0 is
    no longer resident, so QUERY_CONSUMER_OFFSET would answer 22 (checklist 34)."""
    cfg = StoreConfig(segment_size=1000)
    with MessageStore(tmp_path, cfg) as s:
        fill(s, 40, queues=2)
    (tmp_path / "commitlog" / f"{0:020d}").unlink()
    (tmp_path / "commitlog" / f"{1000:020d}").unlink()
    with MessageStore(tmp_path, cfg) as s:
        assert s.commit_log_min_offset == 2000
        lo = s.min_offset("T", 0)
        assert lo > 0 and s.query_offset("G", "T", 0) == -1
        res = s.get_message("T", 0, 0, 32)
        assert res.status is GetStatus.OFFSET_TOO_SMALL and res.next_begin_offset == lo
        phys = s.queue_entry("T", 0, lo)[0]
        assert phys >= 2000 and s.queue_entry("T", 0, lo - 1) is None
        assert bodies(s, "T", 0)[-1] == b"body-38"
        assert s.max_offset("T", 0) == 20
        s._check()
        assert s.put(rec("T", b"new"), 1).queue_offset == 20


def test_crash_image_keeps_every_acknowledged_put(tmp_path):
    """ASYNC_FLUSH: what a killed process leaves (the files as they are) holds every put
    that returned, flushed or not, and the store opens consistent."""
    root = tmp_path / "live"
    s = MessageStore(root, SMALL)
    fill(s, 10)
    s.flush()
    assert s.put(rec("T", b"unflushed"), 1).ok
    shutil.copytree(root, tmp_path / "crash")
    s.close()
    with MessageStore(tmp_path / "crash", SMALL) as c:
        assert bodies(c, "T", 0) == [f"body-{i}".encode() for i in range(10)] + [b"unflushed"]
        c._check()


def test_sync_flush_makes_each_put_durable(tmp_path):
    cfg = StoreConfig(segment_size=4096, flush_disk_type="SYNC_FLUSH")
    root = tmp_path / "live"
    s = MessageStore(root, cfg)
    fill(s, 25)                                 # rolls over a segment too
    shutil.copytree(root, tmp_path / "crash")   # no flush: the log is on disk anyway
    s.close()
    with MessageStore(tmp_path / "crash", cfg) as c:
        assert bodies(c, "T", 0) == [f"body-{i}".encode() for i in range(25)]
        assert c.recovery.truncated_at is None
        c._check()


def test_memory_store_has_no_root():
    s = MessageStore()
    assert s.root is None and s.recovery.clean
    fill(s, 3)
    s.flush()
    s.close()


def test_records_read_back_decode_with_crc(tmp_path):
    with MessageStore(tmp_path, SMALL) as s:
        fill(s, 50, queues=3)
    with MessageStore(tmp_path, SMALL) as s:
        for q in range(3):
            res = s.get_message("T", q, 0, 32)
            for raw in res.records:
                assert decode_record(raw, check_crc=True).queue_id == q
