"""StoreConfig.fsync: False hands flushes to the OS without waiting for the disk."""
from __future__ import annotations

import os

import pytest

from rocketmq_emulator.store import MessageStore, StoreConfig
from rocketmq_emulator.store.records import MessageRecord


def _counting_fsync(monkeypatch) -> list[int]:
    calls = []
    real = os.fsync

    def fsync(fd):
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return calls


def _fill(store: MessageStore, n: int) -> None:
    for i in range(n):
        assert store.put(MessageRecord(topic="T", body=b"m%d" % i, queue_id=i % 2,
                                       properties={"DELAY": "0", "TAGS": "a"}), 1_000 + i).ok
    store.commit_offset("g", "T", 0, 3)
    store.set_delay_offsets({3: 1})


@pytest.mark.parametrize("flush_type", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_without_fsync_nothing_is_fsynced_and_everything_flushed_is_read_back(tmp_path, monkeypatch, flush_type):
    calls = _counting_fsync(monkeypatch)
    store = MessageStore(tmp_path, StoreConfig(fsync=False, flush_disk_type=flush_type))
    _fill(store, 10)
    store.flush()
    store.save_config("topics", {"T": 2})
    store.close()
    assert calls == []
    with MessageStore(tmp_path, StoreConfig(fsync=False)) as again:
        assert again.recovery.clean
        assert [again.max_offset("T", q) for q in (0, 1)] == [5, 5]
        assert again.query_offset("g", "T", 0) == 3 and again.delay_offsets() == {3: 1}
        assert again.load_config("topics") == {"T": 2}
        assert again.look_message_by_offset(again.queue_entry("T", 1, 4)[0]).body == b"m9"


def test_without_fsync_a_process_crash_keeps_what_was_flushed(tmp_path):
    store = MessageStore(tmp_path, StoreConfig(fsync=False))
    _fill(store, 6)
    store.flush()
    store.put(MessageRecord(topic="T", body=b"late", queue_id=0), 9_000)   # appended, not flushed
    store.crash()
    with MessageStore(tmp_path, StoreConfig(fsync=False)) as again:
        # the log keeps every appended record (the page cache survives a process crash),
        # and the offsets saved by the flush are there
        assert again.max_offset("T", 0) == 4 and again.query_offset("g", "T", 0) == 3


def test_the_default_still_fsyncs_log_and_offsets(tmp_path, monkeypatch):
    calls = _counting_fsync(monkeypatch)
    store = MessageStore(tmp_path, StoreConfig())
    _fill(store, 4)
    store.flush()
    # the log segment, then consumerOffset.json and delayOffset.json (file and directory each)
    assert len(calls) >= 5
    store.close()
