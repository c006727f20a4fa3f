"""An acknowledged put is in the OS before ``put`` returns (issue 17, item 1): a killed
process loses nothing it acknowledged, ``crash()`` is a real process death (it writes
nothing), segment files are durable entries of their directory, and an offsetMsgId a
client saw is never given to another message after a restart, even after a power loss."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from rocketmq_emulator.store import MessageStore, StoreConfig, fsutil
from rocketmq_emulator.store.records import decode_record
from store_testkit import bodies, rec


def _segment_bytes(root) -> bytes:
    """What the commit-log files hold, read by another descriptor (what survives the process)."""
    return b"".join(p.read_bytes() for p in sorted((root / "commitlog").iterdir()))


@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_an_acknowledged_put_is_in_the_file_before_put_returns(tmp_path, flush):
    store = MessageStore(tmp_path, StoreConfig(flush_disk_type=flush))
    res = store.put(rec("T", b"first"), 1)
    assert res.ok
    data = _segment_bytes(tmp_path)
    assert len(data) == store.commit_log_max_offset == res.store_size
    assert decode_record(data[res.commit_log_offset:res.commit_log_offset + res.store_size]).body == b"first"
    store.close()


_CHILD = textwrap.dedent("""
    import sys
    from rocketmq_emulator.store import MessageStore, StoreConfig
    from rocketmq_emulator.store.records import MessageRecord
    store = MessageStore(sys.argv[1], StoreConfig(flush_disk_type=sys.argv[2]))
    for i in range(int(sys.argv[3])):
        res = store.put(MessageRecord(topic="T", body=b"m%d" % i, queue_id=i % 2), 1_000 + i)
        assert res.ok
        print(res.commit_log_offset, flush=True)      # the acknowledgement leaves the process
    print("done", flush=True)
    sys.stdin.read()                                  # killed here, never flushed nor closed
""")


@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_a_killed_process_loses_no_acknowledged_put(tmp_path, flush):
    proc = subprocess.Popen([sys.executable, "-c", _CHILD, str(tmp_path), flush, "300"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        acked = []
        for line in proc.stdout:
            if line.strip() == "done":
                break
            acked.append(int(line))
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    assert len(acked) == 300
    with MessageStore(tmp_path) as again:
        for i, phys in enumerate(acked):
            got = again.look_message_by_offset(phys)
            assert got is not None and got.body == b"m%d" % i, f"acknowledged put #{i} at {phys} is gone"
        assert [again.max_offset("T", q) for q in (0, 1)] == [150, 150]


def _no_writes(monkeypatch):
    def refuse(*_a, **_k):
        raise AssertionError("crash() wrote to a file")
    for name in ("write", "pwrite", "pwritev", "fsync", "fdatasync", "ftruncate", "truncate", "replace", "rename"):
        monkeypatch.setattr(os, name, refuse)


def test_crash_writes_nothing_and_loses_nothing_acknowledged(tmp_path):
    store = MessageStore(tmp_path, StoreConfig(segment_size=4096))
    for i in range(40):                          # several segments, the last one part full
        assert store.put(rec("T", b"m%d" % i + bytes(100)), i).ok
    store.commit_offset("G", "T", 0, 5)          # committed, never persisted
    with pytest.MonkeyPatch.context() as mp:
        _no_writes(mp)
        store.crash()
    with MessageStore(tmp_path, StoreConfig(segment_size=4096)) as again:
        assert [b[:4].rstrip(b"\0") for b in bodies(again, "T", 0)] == [b"m%d" % i for i in range(40)]
        assert again.query_offset("G", "T", 0) == -1


def test_the_commitlog_directory_is_fsynced_when_a_segment_is_created(tmp_path, monkeypatch):
    synced_dirs = []
    real = os.fsync

    def fsync(fd):
        path = os.readlink(f"/proc/self/fd/{fd}")
        if os.path.isdir(path):
            synced_dirs.append(path)
        real(fd)

    store = MessageStore(tmp_path, StoreConfig(segment_size=4096))
    monkeypatch.setattr(os, "fsync", fsync)
    n_segments = len(os.listdir(tmp_path / "commitlog"))
    i = 0
    while len(os.listdir(tmp_path / "commitlog")) == n_segments:
        assert store.put(rec("T", bytes(300)), i).ok          # no flush: the roll alone
        i += 1
    assert str(tmp_path / "commitlog") in synced_dirs
    store.close()


def _lose_power(root, durable: dict[str, int]) -> None:
    """What a power loss leaves: each segment file as long as it was at the last fsync
    (a file created since is there — its directory was fsynced — but empty)."""
    for p in (root / "commitlog").iterdir():
        os.truncate(p, durable.get(p.name, 0))


@pytest.mark.parametrize("segment_size", [1 << 20, 4096])
def test_an_offset_msg_id_is_not_reused_after_a_power_loss(tmp_path, monkeypatch, segment_size):
    cfg = StoreConfig(segment_size=segment_size)
    monkeypatch.setattr(fsutil, "boot_id", lambda: "boot-1", raising=False)
    store = MessageStore(tmp_path, cfg)
    for i in range(5):
        assert store.put(rec("T", b"durable-%d" % i + bytes(200)), i).ok
    store.flush()                                          # fsynced
    durable = {p.name: p.stat().st_size for p in (tmp_path / "commitlog").iterdir()}
    seen = [store.put(rec("T", b"acked-%d" % i + bytes(200)), 10 + i) for i in range(30)]   # acked, not fsynced
    store.crash()
    _lose_power(tmp_path, durable)
    monkeypatch.setattr(fsutil, "boot_id", lambda: "boot-2", raising=False)      # the machine restarted
    with MessageStore(tmp_path, cfg) as again:
        assert again.max_offset("T", 0) == 5
        later = again.put(rec("T", b"after"), 100)
        assert later.ok
        ends = [r.commit_log_offset + r.store_size for r in seen]
        assert later.commit_log_offset >= max(ends), "a new message took an offset a client was given"
        assert later.msg_id not in {r.msg_id for r in seen}
        again._check()
    with MessageStore(tmp_path, cfg) as reopened:          # the skip is part of the log: a clean reopen keeps it
        assert reopened.recovery.clean and bodies(reopened, "T", 0)[-1] == b"after"


def test_after_a_kill_on_the_same_boot_the_log_continues_where_it_ended(tmp_path, monkeypatch):
    """A killed process loses nothing it handed to the OS: no offsets are skipped."""
    monkeypatch.setattr(fsutil, "boot_id", lambda: "boot-1", raising=False)
    store = MessageStore(tmp_path)
    for i in range(5):
        assert store.put(rec("T", b"m%d" % i), i).ok
    end = store.commit_log_max_offset
    store.crash()
    with MessageStore(tmp_path) as again:
        assert again.commit_log_max_offset == end
        assert again.put(rec("T", b"next"), 9).commit_log_offset == end
