"""A full disk (issue 17, item 5, store side): a put that cannot be written is refused with
SERVICE_NOT_AVAILABLE and nothing of it stays in the log; reads go on; the failure is
logged once, not once per put; when space returns, puts work again without a restart;
a config write that fails raises StoreWriteError and keeps the old document.

The real thing runs on a 2 MiB tmpfs (mounted here, unmounted after; skipped where this
process may not mount); the same paths are also driven by an injected OSError."""
from __future__ import annotations

import errno
import logging
import os

import pytest

from rocketmq_emulator.store import MessageStore, PutStatus, StoreConfig, StoreError, StoreWriteError, segment
from store_testkit import bodies, rec
from tests.reliability.tmpfs import small_tmpfs

CFG = StoreConfig(segment_size=256 * 1024)
BALLAST = 400 * 1024                 # taken before the store fills the disk, given back to "free space"


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs at tmp_path/disk."""
    yield from small_tmpfs(tmp_path / "disk")


def _fill_until_refused(store: MessageStore, body_size: int = 1000) -> list[bytes]:
    """Put distinct bodies until the disk refuses one; the bodies acknowledged."""
    acked = []
    for i in range(100_000):
        body = b"%06d|" % i + bytes(body_size)
        res = store.put(rec("T", body, i % 2), i)
        if not res.ok:
            assert res.status is PutStatus.SERVICE_NOT_AVAILABLE, res
            assert "No space left on device" in res.remark and res.msg_id == "" and res.commit_log_offset == -1
            return acked
        acked.append(body)
    raise AssertionError("the disk never filled up")


def _segment_files_match_the_log(root, store: MessageStore) -> None:
    """Nothing half-written: each file holds exactly the bytes the log counts."""
    for seg in store._log.segments:
        assert os.path.getsize(seg.path) == seg.size, f"{seg.path.name} holds bytes the log does not count"
    assert store.commit_log_max_offset == store._log.segments[-1].base + store._log.segments[-1].size


def _store_errors(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "store" and r.levelno >= logging.WARNING]


def test_a_full_disk_refuses_puts_keeps_reads_and_recovers_without_restart(small_disk, caplog):
    (small_disk / "ballast").write_bytes(bytes(BALLAST))
    root = small_disk / "store"
    store = MessageStore(root, CFG)
    acked = _fill_until_refused(store)
    assert len(acked) > 500
    _segment_files_match_the_log(root, store)
    for i in range(20):                              # the disk stays full: refused each time, said once
        res = store.put(rec("T", b"%06d|" % (10**5 + i) + bytes(1000)), 10**6 + i)
        assert res.status is PutStatus.SERVICE_NOT_AVAILABLE
    _segment_files_match_the_log(root, store)
    lines = _store_errors(caplog)
    assert len(lines) == 1 and "cannot write the commit log" in lines[0], lines
    # reads go on
    assert bodies(store, "T", 0) == acked[0::2] and bodies(store, "T", 1) == acked[1::2]
    # space returns: the next put (of the size refused) works, no restart
    (small_disk / "ballast").unlink()
    after = b"after-|" + bytes(1000)
    assert store.put(rec("T", after, 0), 2 * 10**6).ok
    assert "succeed again" in _store_errors(caplog)[-1]
    store.flush()
    store._check()
    store.close()
    with MessageStore(root, CFG) as again:
        assert again.recovery.clean
        assert bodies(again, "T", 0) == acked[0::2] + [after] and bodies(again, "T", 1) == acked[1::2]


def test_a_config_write_on_a_full_disk_raises_and_keeps_the_old_document(small_disk):
    root = small_disk / "store"
    store = MessageStore(root, CFG)
    store.save_config("topics", {"version": 1})
    (small_disk / "ballast").write_bytes(bytes(8192))
    filler = small_disk / "filler"
    with open(filler, "wb", buffering=0) as f:       # take every last block
        try:
            while True:
                f.write(bytes(4096))
                f.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC
    with pytest.raises(StoreWriteError) as info:
        store.save_config("topics", {"version": 2, "big": "x" * 100_000})
    assert isinstance(info.value, StoreError) and isinstance(info.value, OSError)
    assert info.value.errno == errno.ENOSPC and "topics.json" in str(info.value) and "No space" in str(info.value)
    assert store.load_config("topics") == {"version": 1}
    assert not [p.name for p in (root / "config").iterdir() if p.name.endswith(".tmp")]
    filler.unlink()
    store.save_config("topics", {"version": 3})
    assert store.load_config("topics") == {"version": 3}
    store.close()


# -- the same paths, by injection --------------------------------------------------------------
def test_a_short_write_is_cut_back_and_refused(tmp_path, monkeypatch, caplog):
    store = MessageStore(tmp_path, CFG)
    for i in range(3):
        assert store.put(rec("T", b"ok-%d" % i), i).ok
    end = store.commit_log_max_offset
    real = os.pwrite
    calls = []

    def short_then_full(fd, data, at):
        calls.append(len(data))
        if len(calls) == 1:
            return real(fd, bytes(data)[:10], at)    # 10 bytes reach the file
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(segment, "_pwrite", short_then_full)
    res = store.put(rec("T", b"torn"), 9)
    monkeypatch.undo()
    assert res.status is PutStatus.SERVICE_NOT_AVAILABLE and len(calls) == 2
    assert os.path.getsize(tmp_path / "commitlog" / f"{0:020d}") == end == store.commit_log_max_offset
    assert store.put(rec("T", b"ok-3"), 10).ok
    assert bodies(store, "T", 0) == [b"ok-0", b"ok-1", b"ok-2", b"ok-3"]
    store.close()
    with MessageStore(tmp_path, CFG) as again:
        assert again.recovery.clean and bodies(again, "T", 0)[-1] == b"ok-3"


def test_failing_puts_are_logged_once_per_failure_streak(tmp_path, monkeypatch, caplog):
    store = MessageStore(tmp_path, CFG)
    assert store.put(rec("T", b"first"), 1).ok

    def enospc(*_a):
        raise OSError(errno.ENOSPC, "No space left on device")

    for streak in range(2):
        monkeypatch.setattr(segment, "_pwrite", enospc)
        for i in range(50):
            assert store.put(rec("T", b"x"), i).status is PutStatus.SERVICE_NOT_AVAILABLE
        monkeypatch.undo()
        for i in range(5):                            # the first works, and the inlined path is back
            assert store.put(rec("T", b"ok"), i).ok
    lines = _store_errors(caplog)
    assert len(lines) == 4, lines
    assert ["cannot write" in lines[0], "succeed again" in lines[1]] == [True, True] and lines[2:] == lines[:2]
    store._check()
    store.close()


def test_a_failing_flush_raises_store_write_error_and_a_later_flush_works(tmp_path, monkeypatch):
    store = MessageStore(tmp_path, CFG)
    assert store.put(rec("T", b"m"), 1).ok
    store.commit_offset("G", "T", 0, 1)

    def eio(*_a):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", eio)
    with pytest.raises(StoreWriteError) as info:
        store.flush()
    assert info.value.errno == errno.EIO and "Input/output error" in str(info.value)
    monkeypatch.undo()
    store.flush()
    store.close()
    with MessageStore(tmp_path, CFG) as again:
        assert again.query_offset("G", "T", 0) == 1 and bodies(again, "T", 0) == [b"m"]


def test_a_queue_file_write_that_fails_does_not_block_later_puts_to_the_queue(tmp_path, monkeypatch):
    """The failed write's traceback (kept by whoever logs it) must not pin a view of the
    queue's buffer: a bytearray with a live view cannot grow (BufferError on every put)."""
    store = MessageStore(tmp_path, CFG)
    assert store.put(rec("T", b"a"), 1).ok

    def enospc(*_a):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "pwrite", enospc)             # queue files; the log writes through segment._pwrite
    with pytest.raises(StoreWriteError) as info:
        store.flush()
    monkeypatch.undo()
    kept = info.value                                      # (its traceback holds the failed frames)
    assert store.put(rec("T", b"b"), 2).ok, kept
    store.flush()
    assert bodies(store, "T", 0) == [b"a", b"b"]
    store.close()


def test_write_refusal_says_why_while_the_disk_is_full_and_nothing_once_space_returns(small_disk, caplog):
    """Issue 34, item 6: what /healthz and the Pulsar front ask. It probes the log's end
    (cut off again), so it can tell that space has returned before any put tries."""
    caplog.set_level(logging.INFO, logger="store")
    (small_disk / "ballast").write_bytes(bytes(BALLAST))
    root = small_disk / "store"
    store = MessageStore(root, CFG)
    assert store.write_refusal() is None                          # nothing failed: no probe
    acked = _fill_until_refused(store)
    for _ in range(3):
        assert "No space left on device" in store.write_refusal()
        _segment_files_match_the_log(root, store)                # the probe left nothing behind
    (small_disk / "ballast").unlink()
    assert store.write_refusal() is None
    assert sum("commit-log writes succeed again" in m for m in _store_errors(caplog)) == 1
    assert store.put(rec("T", b"after", 0), 1).ok
    _segment_files_match_the_log(root, store)
    assert len(acked) + 1 == sum(store.max_offset("T", q) for q in (0, 1))
    store.close()


# -- issue 46, item 2: a disk with room for a page but not for the message -------------------
_real_pwrite = segment._pwrite


def _room_for(limit: int):
    """A segment writer that fails every write of more than ``limit`` bytes, as a disk with
    that much room left does."""
    def write(fd, data, at):
        if len(data) > limit:
            raise OSError(errno.ENOSPC, "No space left on device")
        return _real_pwrite(fd, data, at)
    return write


def test_the_store_refuses_until_a_write_of_the_refused_size_fits(tmp_path, monkeypatch, caplog):
    """With room for a page (the old 4 KiB probe) but not for the 32 KiB message that
    failed, the store keeps refusing (it said "writable" before, so a Pulsar producer was
    admitted again into the same failing send); smaller puts that fit are stored but do
    not end the state; once the refused size fits it ends, said once each way."""
    store = MessageStore(tmp_path, CFG)
    assert store.put(rec("T", b"first"), 1).ok
    monkeypatch.setattr(segment, "_pwrite", _room_for(20 * 1024))
    assert store.put(rec("T", bytes(32 * 1024)), 2).status is PutStatus.SERVICE_NOT_AVAILABLE
    for _ in range(3):
        assert "No space left on device" in store.write_refusal()
    assert store.put(rec("T", b"small"), 3).ok
    assert "No space left on device" in store.write_refusal()
    monkeypatch.setattr(segment, "_pwrite", _room_for(40 * 1024))
    assert store.write_refusal() is None
    monkeypatch.undo()
    assert store.put(rec("T", bytes(32 * 1024)), 4).ok
    assert bodies(store, "T", 0) == [b"first", b"small", bytes(32 * 1024)]
    lines = _store_errors(caplog)
    assert len(lines) == 2 and "cannot write" in lines[0] and "succeed again" in lines[1], lines
    store._check()
    store.close()


def test_a_put_of_the_refused_size_that_works_ends_the_refusal(tmp_path, monkeypatch):
    store = MessageStore(tmp_path, CFG)
    monkeypatch.setattr(segment, "_pwrite", _room_for(20 * 1024))
    assert store.put(rec("T", bytes(32 * 1024)), 1).status is PutStatus.SERVICE_NOT_AVAILABLE
    monkeypatch.undo()
    assert store.put(rec("T", bytes(32 * 1024)), 2).ok
    assert store.write_refusal() is None
    store.close()


def test_write_refusal_on_a_tmpfs_with_a_page_free_but_not_the_message(small_disk):
    root = small_disk / "store"
    store = MessageStore(root, CFG)
    (small_disk / "ballast").write_bytes(bytes(BALLAST))
    _fill_until_refused(store, body_size=60 * 1024)
    (small_disk / "ballast").unlink()
    spare = small_disk / "spare"
    with open(spare, "wb", buffering=0) as f:        # take all but about 12 KiB again
        f.write(bytes(BALLAST - 12 * 1024))
    assert "No space left on device" in store.write_refusal()
    _segment_files_match_the_log(root, store)
    spare.unlink()
    assert store.write_refusal() is None
    store.close()
