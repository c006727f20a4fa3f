"""A walk over a segment file's records (recovery, whole-store accounting) gives its
pages back as it goes: they stay in the page cache, not in the process's RSS. Walking
the 100 MB log of a 10,000-message retry ladder used to leave all of it resident."""
from __future__ import annotations

import os

from rocketmq_emulator.store import segment
from rocketmq_emulator.store.segment import FileSegment
from tests.support.memory import status_mib


def test_a_walk_leaves_at_most_a_few_mib_of_the_file_resident(tmp_path, monkeypatch):
    monkeypatch.setattr(segment, "WALK_RELEASE", 1 << 20)
    monkeypatch.setattr(segment, "RECENT_LIMIT", 1 << 16)     # reads go through the mmap
    seg = FileSegment(0, tmp_path / "seg", create=True, fsync=False)
    record = (4096).to_bytes(4, "big") + bytes(4092)            # a 4 KiB "record": size first
    for _ in range(48 * 256):                                  # 48 MiB
        seg.append(record)
    before = status_mib(os.getpid(), "RssFile")
    walked = peak = 0
    for buf, off, pos in seg.walk(0, seg.size):
        walked += 1
        buf[off + 4000]                                         # touch the record's page
        if walked % 256 == 0:
            peak = max(peak, status_mib(os.getpid(), "RssFile") - before)
    seg.close()
    assert walked == 48 * 256
    assert peak < 8, f"the walk kept {peak:.1f} MiB of a 48 MiB file resident"
