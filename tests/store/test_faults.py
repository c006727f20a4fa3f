"""I/O errors during a put are a status with nothing stored; the helpers that read
single properties and validate records agree with the full parsers."""
from __future__ import annotations

import errno
import os

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emulator.store import MessageStore, PutStatus, StoreConfig, segment
from rocketmq_emulator.store.record_view import check_record, prop_value
from rocketmq_emulator.store.records import MessageRecord, RecordError, decode_record, encode_record, string_to_properties, tags_code
from store_testkit import bodies, rec


def _enospc(*_a, **_k):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_sync_flush_put_that_cannot_fsync_stores_nothing(tmp_path, monkeypatch):
    cfg = StoreConfig(segment_size=4096, flush_disk_type="SYNC_FLUSH")
    s = MessageStore(tmp_path, cfg)
    for i in range(3):
        assert s.put(rec("T", f"ok-{i}".encode()), i).ok
    end = s.commit_log_max_offset
    monkeypatch.setattr(os, "fsync", _enospc)
    res = s.put(rec("T", b"lost"), 9)
    monkeypatch.undo()
    assert res.status is PutStatus.SERVICE_NOT_AVAILABLE and "No space" in res.remark
    assert s.commit_log_max_offset == end and s.max_offset("T", 0) == 3
    assert s.put(rec("T", b"ok-3"), 10).ok
    s._check()
    s.close()
    with MessageStore(tmp_path, cfg) as again:
        assert bodies(again, "T", 0) == [b"ok-0", b"ok-1", b"ok-2", b"ok-3"]


def test_async_put_whose_write_fails_stores_nothing(tmp_path, monkeypatch):
    s = MessageStore(tmp_path, StoreConfig(segment_size=8 << 20))
    for i in range(5):
        assert s.put(rec("T", b"ok-%d" % i), i).ok
    end = s.commit_log_max_offset
    monkeypatch.setattr(segment, "_pwrite", _enospc)
    res = s.put(rec("T", b"lost"), 99)
    monkeypatch.undo()
    assert not res.ok and "No space" in res.remark
    assert s.commit_log_max_offset == end and s.max_offset("T", 0) == 5
    assert os.path.getsize(tmp_path / "commitlog" / f"{0:020d}") == end
    s._check()
    assert s.put(rec("T", b"ok-5"), 100).ok
    s.close()
    with MessageStore(tmp_path, StoreConfig(segment_size=8 << 20)) as again:
        assert bodies(again, "T", 0) == [b"ok-%d" % i for i in range(6)] and again.recovery.clean


def test_a_failing_roll_leaves_the_log_as_it_was(tmp_path, monkeypatch):
    cfg = StoreConfig(segment_size=1000)
    s = MessageStore(tmp_path, cfg)
    for i in range(2):                          # two 342-byte records: a third does not fit
        assert s.put(rec("T", bytes(250)), i).ok
    end, n_files = s.commit_log_max_offset, len(os.listdir(tmp_path / "commitlog"))
    monkeypatch.setattr(segment, "_pwrite", _enospc)        # the BLANK that seals the segment
    assert not s.put(rec("T", bytes(250)), 3).ok
    monkeypatch.undo()
    assert s.commit_log_max_offset == end and len(os.listdir(tmp_path / "commitlog")) == n_files
    assert s.put(rec("T", bytes(250)), 4).commit_log_offset == 1000
    s._check()
    s.close()


_alphabet = st.sampled_from(["TAGS", "T", "AGS", "KEYS", "x", "\u0001", "\u0002", "TAGS\u0001", "\u0002TAGS"])


@given(st.lists(_alphabet, max_size=12).map("".join))
def test_prop_value_agrees_with_the_parser(text):
    for key in ("TAGS", "KEYS", "x"):
        assert prop_value(text, key) == string_to_properties(text).get(key)


@given(st.lists(_alphabet, max_size=12).map("".join))
def test_entry_tags_code_follows_the_stored_string(text):
    s = MessageStore()
    r = MessageRecord(topic="T", body=b"b")
    r.properties_text = text
    assert s.put(r, 1).ok
    assert s.queue_entry("T", 0, 0)[2] == tags_code(string_to_properties(text).get("TAGS"))
    s._check()


@given(st.binary(min_size=1, max_size=64), st.integers(0, 200))
def test_check_record_accepts_what_decode_accepts(noise, at):
    raw = bytearray(encode_record(MessageRecord(topic="Topic", body=b"0123456789" * 3, properties={"TAGS": "x"})))
    at %= len(raw)
    raw[at:at + len(noise)] = noise
    raw = bytes(raw)
    try:
        size = check_record(raw, 0, len(raw), 0)
    except ValueError:
        size = None
    try:
        rec_ = decode_record(raw)
        decoded = rec_.store_size if rec_.commit_log_offset == 0 else None
    except RecordError:
        decoded = None
    if decoded is not None:
        assert size == decoded


@pytest.mark.parametrize("text,value", [("TAGS\u0001a\u0002TAGS\u0001", "a"), ("\u0001TAGS\u0001b", None),
                                        ("xTAGS\u0001b", None), ("TAGS\u0001a\u0002TAGS\u0001b", "b")])
def test_prop_value_examples(text, value):
    assert prop_value(text, "TAGS") == value == string_to_properties(text).get("TAGS")
