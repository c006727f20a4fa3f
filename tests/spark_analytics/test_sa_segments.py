"""The numpy-free walk (store.segment_walk.walk_buffer, used by ``snapshot``) finds exactly what the
numpy scan (commitlog.scan_buffer, used by ``analyze``) finds: the same records, end,
seal and damage, on clean, cut, sealed and corrupted segments."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emulator.spark_analytics.commitlog import scan_buffer
from rocketmq_emulator.store.segment_walk import walk_buffer
from rocketmq_emulator.store.records import MAGIC_CODE, MessageRecord, blank_record, encode_record

MAGIC = MAGIC_CODE.to_bytes(4, "big")


def build(bodies: list[bytes], base: int, v6_every: int) -> bytes:
    out = bytearray()
    for i, body in enumerate(bodies):
        v6 = v6_every and i % v6_every == 0
        rec = MessageRecord(topic=f"T{i % 3}", body=body, queue_id=i % 4, queue_offset=i,
                            properties={"UNIQ_KEY": f"U{i}"}, commit_log_offset=base + len(out),
                            born_host=("::1", 5) if v6 else ("127.0.0.1", 5),
                            store_host=("::1", 9) if v6 else ("127.0.0.1", 9))
        out += encode_record(rec)
    return bytes(out)


def same(buf: bytes, base: int, check_crc: bool) -> None:
    s = scan_buffer(np.frombuffer(buf, np.uint8), memoryview(buf), base, check_crc=check_crc)
    w = walk_buffer(memoryview(buf), base, check_crc=check_crc)
    assert (w.count, w.end, w.sealed, w.damage) == (s.count, s.end, s.sealed, s.damage)
    assert w.last_start == (int(s.starts[-1]) if s.count else -1)


bodies = st.lists(st.one_of(st.binary(max_size=60), st.builds(lambda a, b: a + MAGIC + b, st.binary(max_size=8),
                                                                st.binary(max_size=40))), min_size=1, max_size=30)


@settings(max_examples=80, deadline=None)
@given(bodies, st.integers(0, 1 << 40), st.sampled_from([0, 3]), st.data())
def test_walk_equals_scan_on_damaged_segments(bs, base, v6_every, data):
    buf = bytearray(build(bs, base, v6_every))
    how = data.draw(st.sampled_from(["clean", "cut", "flip", "blank", "wrong-base"]))
    if how == "cut":
        buf = buf[:data.draw(st.integers(0, len(buf) - 1))]
    elif how == "flip":                                      # any byte: header, body, topic, properties
        for _ in range(data.draw(st.integers(1, 3))):
            buf[data.draw(st.integers(0, len(buf) - 1))] ^= data.draw(st.integers(1, 255))
    elif how == "blank":
        buf += blank_record(4096) + bytes(data.draw(st.integers(0, 64)))
    elif how == "wrong-base":
        base += data.draw(st.sampled_from([-1, 1, 4096]))
    for check_crc in (False, True):
        same(bytes(buf), max(base, 0), check_crc)


def test_walk_of_nothing():
    w = walk_buffer(memoryview(b""), 0)
    assert (w.count, w.last_start, w.end, w.sealed, w.damage) == (0, -1, 0, False, None)
