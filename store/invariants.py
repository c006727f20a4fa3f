"""MessageStore's invariants, checked after every step of the randomized tests
(``MessageStore._check``): the one place that reads the whole store."""
from __future__ import annotations

import struct

from .consume_queue import ENTRY
from .dispatch import dispatch
from .record_view import check_record, fields
from .records import MAGIC_CODE

__all__ = ["check_store"]


def check_store(lg, queues: dict, offsets: dict, delay_offsets: dict, delays_ms: tuple[int, ...], *,
                on_disk: bool) -> None:
    """Assert the store's invariants (for randomized tests; reads everything):
    the log is a chain of valid records, known damaged ranges and BLANK-sealed
    segments; every queue is exactly what dispatching the log would build (an entry
    may point at damage instead); offsets are ints. The parts are MessageStore's (its
    ``_check`` passes them): the commit log, the queue table, the committed offsets' and
    the delay offsets' tables, the delay levels and whether it lives on disk."""
    assert lg.bases == [s.base for s in lg.segments], "segment index out of date"
    assert lg.bases == sorted(set(lg.bases)), "segments not in order"
    active = lg.segments[-1]
    assert lg.active is active, "put's append target is stale"
    assert (lg.tail, lg.file) == ((active.recent, active) if on_disk else (active, None))
    assert lg.fast_limit == (-1 if lg.sync_each else active.base + lg.segment_size - 8)
    expected: dict[tuple[str, int], dict[int, bytes]] = {}
    for i, seg in enumerate(lg.segments):
        last = i == len(lg.segments) - 1
        buf = seg.view()
        pos, size = 0, seg.size
        skips = lg.damage.skips(seg.base, seg.base + size) or {}
        while pos < size:
            if pos in skips:
                pos = skips[pos]
                continue
            total, magic = struct.unpack_from(">iI", buf, pos)
            if magic != MAGIC_CODE:
                assert not last and pos + 8 == size, f"BLANK at {seg.base + pos} is not the segment's end"
                assert seg.base + pos + total == lg.bases[i + 1], "BLANK does not point at the next segment"
                assert seg.sealed
                break
            assert check_record(buf, pos, size, seg.base + pos) == total
            f = fields(buf, pos)
            d = dispatch(f.topic, f.queue_id, f.sys_flag, f.properties, f.store_timestamp, seg.base + pos, total,
                         delays_ms)
            if d is not None:
                entries = expected.setdefault(d[0], {})
                assert f.queue_offset not in entries, f"queue offset {f.queue_offset} twice in the log"
                entries[f.queue_offset] = ENTRY.pack(*d[1])
            else:
                assert f.queue_offset == 0
            pos += total
        else:
            assert last, f"segment {seg.base} has no BLANK but is not the last one"
    assert lg.end == lg.segments[-1].base + lg.segments[-1].size
    for key, cq in queues.items():
        want = expected.get(key, {})
        for qoff in range(cq.min_offset, cq.max_offset):
            entry = cq.read(qoff, qoff + 1)
            if qoff in want:
                assert entry == want.pop(qoff), f"queue {key} offset {qoff} differs from the log"
            else:
                phys, size, _ = ENTRY.unpack(entry)
                assert lg.damage.hits(phys, size), f"queue {key} offset {qoff} has no record in the log"
        assert not [q for q in want if q >= cq.min_offset], f"queue {key} lacks entries of the log"
        if cq.min_offset > cq.base:        # entries kept for records before the log start
            assert cq.phys_at(cq.min_offset - 1) < lg.min_offset
        cq.check()
        assert (cq.files is not None) == on_disk
    missing = set(expected) - set(queues)
    assert not missing, f"records without a queue: {sorted(missing)[:5]}"
    for key, per in offsets.items():
        assert "@" in key and all(type(q) is int and type(o) is int for q, o in per.items())
    assert all(type(k) is int and type(v) is int for k, v in delay_offsets.items())
