"""Snapshots: consistent while the store is written on, cut at a torn tail, and a
missing or foreign directory is one clear error line."""
from __future__ import annotations

import json
import os
import shutil
import struct

import pytest

from rocketmq_emulator.spark_analytics.store_accounts import account_store
from rocketmq_emulator.spark_analytics.cli import snapshot_main
from rocketmq_emulator.spark_analytics.commitlog import list_segments
from rocketmq_emulator.spark_analytics.errors import SnapshotError
from tests.support.wall import wall_ms
from rocketmq_emulator.store.snapshot import load_manifest, take_snapshot
from rocketmq_emulator.store.records import MessageRecord, encode_record


def test_live_snapshot_holds_what_was_there_when_taken(scenario):
    m = load_manifest(scenario.snap)
    t = scenario.truth
    assert m.commitlog["records"] == t.records_at_snapshot
    assert m.damage is None and m.store_was_live
    assert len(m.commitlog["segments"]) > 1                   # several segments, BLANK-sealed
    # the store kept being written after the snapshot; the snapshot did not move
    later = sum(s.size for s in list_segments(scenario.store / "commitlog"))
    assert later > m.max_offset - m.commitlog["min_offset"]
    assert {f"{k[0]}:{k[1]}": v for k, v in m.queue_max_offsets().items() if k[0] != "SCHEDULE_TOPIC_XXXX"} == \
        {f"{tp}:{q}": v for (tp, q), v in t.max_offset.items()}
    offsets = json.loads((scenario.snap / "config" / "consumerOffset.json").read_text())["offsetTable"]
    assert offsets["payments@audit"]["1"] == 2                # written as 20 after the snapshot
    # the delay table as the store applied it, read back from the schedule queues
    assert m.delay_levels_ms["3"] == 10_000 and m.delay_levels_ms["18"] == 7_200_000
    assert m.took_ms >= 0 and m.taken_at_ms > 0 and m.format_version == 1


def _store_with_torn_tail(root, n=30):
    (root / "commitlog").mkdir(parents=True)
    (root / "config").mkdir()
    buf = bytearray()
    for i in range(n):
        rec = MessageRecord(topic="T", body=b"payload %d" % i, queue_id=0, queue_offset=i,
                            properties={"UNIQ_KEY": f"U{i}"}, commit_log_offset=len(buf), store_timestamp=1000 + i)
        buf += encode_record(rec)
    last = len(encode_record(MessageRecord(topic="T", body=b"payload %d" % (n - 1), queue_id=0,
                                           properties={"UNIQ_KEY": f"U{n - 1}"})))
    (root / "commitlog" / f"{0:020d}").write_bytes(bytes(buf[:-10]))           # the last record is torn
    (root / "config" / "consumerOffset.json").write_text(json.dumps({"offsetTable": {"T@g": {"0": 5}}}))
    return len(buf) - last


def test_torn_tail_cuts_the_snapshot_and_says_so(tmp_path):
    good_end = _store_with_torn_tail(tmp_path / "store")
    m = take_snapshot(tmp_path / "store", tmp_path / "snap", wall_ms=wall_ms)
    assert m.damaged and m.damage["kind"] == "torn" and m.damage["offset"] == good_end
    assert m.max_offset == good_end and m.commitlog["records"] == 29
    assert os.path.getsize(tmp_path / "snap" / "commitlog" / f"{0:020d}") == good_end
    manifest = json.loads((tmp_path / "snap" / "manifest.json").read_text())
    assert manifest["damaged"] is True and manifest["damage"]["kind"] == "torn"
    assert account_store(tmp_path / "snap").produced == 29


def test_missing_and_foreign_directories(tmp_path):
    with pytest.raises(SnapshotError) as e:
        take_snapshot(tmp_path / "nope", tmp_path / "out", wall_ms=wall_ms)
    assert "does not exist" in str(e.value) and "\n" not in str(e.value)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("hello")
    with pytest.raises(SnapshotError) as e:
        take_snapshot(tmp_path / "foreign", tmp_path / "out", wall_ms=wall_ms)
    assert "not a RocketMQ store" in str(e.value) and "no commitlog/" in str(e.value)
    assert not (tmp_path / "out").exists()


def test_output_must_be_new(tmp_path, scenario):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "x").write_text("keep me")
    with pytest.raises(SnapshotError, match="already exists"):
        take_snapshot(scenario.snap, tmp_path / "out", wall_ms=wall_ms)
    assert (tmp_path / "out" / "x").read_text() == "keep me"


def test_snapshot_of_a_snapshot_is_the_same_log(tmp_path, scenario):
    m = take_snapshot(scenario.snap, tmp_path / "again", wall_ms=wall_ms)
    assert m.max_offset == load_manifest(scenario.snap).max_offset
    assert account_store(tmp_path / "again").summary() == account_store(scenario.snap).summary()


def test_snapshot_cli(tmp_path, capsys, scenario):
    assert snapshot_main(["--data-dir", str(tmp_path / "missing"), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "does not exist" in err and err.startswith("rocketmq-emulator snapshot:")
    assert snapshot_main(["--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0
    shutil.copytree(scenario.store, tmp_path / "store")
    assert snapshot_main(["--data-dir", str(tmp_path / "store"), "--out", str(tmp_path / "snap")]) == 0
    out = capsys.readouterr().out
    assert "records" in out and (tmp_path / "snap" / "manifest.json").exists()


def test_consume_queue_entries_beyond_the_cut_are_dropped(tmp_path):
    good_end = _store_with_torn_tail(tmp_path / "store")
    qdir = tmp_path / "store" / "consumequeue" / "T" / "0"
    qdir.mkdir(parents=True)
    entries = b"".join(struct.pack(">qiq", off, 10, 0) for off in (0, good_end - 20, good_end, good_end + 50))
    (qdir / f"{0:020d}").write_bytes(entries + b"\x00" * 7)
    m = take_snapshot(tmp_path / "store", tmp_path / "snap", wall_ms=wall_ms)
    assert m.consume_queues["T"]["0"] == {"min_offset": 0, "max_offset": 2}
    assert os.path.getsize(tmp_path / "snap" / "consumequeue" / "T" / "0" / f"{0:020d}") == 40


def test_snapshots_while_another_thread_appends(tmp_path):
    """A writer appends records in two halves each (so a snapshot can see a torn one)
    while snapshots are taken: each snapshot is a prefix of the final log, cut at a
    record boundary, and at most its last record is reported torn."""
    import threading

    root = tmp_path / "store"
    (root / "commitlog").mkdir(parents=True)
    seg = root / "commitlog" / f"{0:020d}"
    seg.touch()
    done = threading.Event()
    # Every record boundary, known before the writer starts (appending them as it
    # writes would race with the snapshots that check against them).
    ends, raws = [0], []
    for i in range(3000):
        rec = MessageRecord(topic="T", body=b"b" * (i % 50), queue_offset=i, commit_log_offset=ends[-1],
                            properties={"UNIQ_KEY": f"U{i}"})
        raws.append(encode_record(rec))
        ends.append(ends[-1] + len(raws[-1]))

    def writer():
        with open(seg, "ab", buffering=0) as f:
            for raw in raws:
                f.write(raw[:len(raw) // 2])
                f.write(raw[len(raw) // 2:])
        done.set()

    t = threading.Thread(target=writer)
    t.start()
    cuts = []
    k = 0
    while not done.is_set() or k < 2:
        m = take_snapshot(root, tmp_path / f"snap{k}", wall_ms=wall_ms)
        assert m.max_offset in ends                          # a record boundary
        assert m.damage is None or m.damage["kind"] == "torn"
        cuts.append(m.max_offset)
        k += 1
    t.join()
    assert cuts == sorted(cuts) and k >= 2
    assert take_snapshot(root, tmp_path / "final", wall_ms=wall_ms).commitlog["records"] == 3000


def test_a_stopped_store_is_not_reported_live_though_its_lock_file_stays(tmp_path):
    from rocketmq_emulator.store.store_dir import resolve_store
    from rocketmq_emulator.store import MessageStore

    root = tmp_path / "store"
    store = MessageStore(root)
    store.put(MessageRecord(topic="T", queue_id=0, body=b"x", born_timestamp=1), now_ms=1)
    store.flush()
    assert resolve_store(root).is_open
    store.close()
    assert (root / "lock").exists()                  # the file outlives the store ...
    assert not resolve_store(root).is_open           # ... the lock does not
    take_snapshot(root, tmp_path / "snap", wall_ms=wall_ms)
    assert load_manifest(tmp_path / "snap").store_was_live is False
