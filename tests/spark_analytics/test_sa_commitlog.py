"""The fast segment walk agrees with a plain record-by-record walk, and stops at the
first torn or corrupt record — also when bodies contain the magic code."""
from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emulator.spark_analytics.commitlog import scan_buffer
from rocketmq_emulator.store.records import MAGIC_CODE, MessageRecord, blank_record, encode_record, peek_header

MAGIC = MAGIC_CODE.to_bytes(4, "big")


def build(bodies: list[bytes], base: int = 0) -> bytes:
    out = bytearray()
    for i, body in enumerate(bodies):
        rec = MessageRecord(topic=f"T{i % 3}", body=body, queue_id=i % 4, queue_offset=i,
                            properties={"UNIQ_KEY": f"U{i}"}, commit_log_offset=base + len(out))
        out += encode_record(rec)
    return bytes(out)


def plain_walk(buf: bytes) -> list[int]:
    pos, out = 0, []
    while pos + 8 <= len(buf):
        size, magic = peek_header(buf, pos)
        if magic != MAGIC_CODE or size < 91 or pos + size > len(buf):
            break
        out.append(pos)
        pos += size
    return out


def scan(buf: bytes, base: int = 0, **kw):
    return scan_buffer(np.frombuffer(buf, np.uint8), memoryview(buf), base, **kw)


bodies = st.lists(st.one_of(st.binary(max_size=60), st.builds(lambda a, b: a + MAGIC + b, st.binary(max_size=8),
                                                                st.binary(max_size=40))), max_size=40)


@settings(max_examples=60, deadline=None)
@given(bodies, st.integers(0, 1 << 40))
def test_fast_walk_equals_plain_walk(bs, base):
    buf = build(bs, base)
    s = scan(buf, base)
    assert s.starts.tolist() == plain_walk(buf)
    assert s.end == len(buf) and s.damage is None and not s.sealed


@settings(max_examples=60, deadline=None)
@given(bodies.filter(lambda b: len(b) > 0), st.data())
def test_torn_tail_stops_at_the_last_complete_record(bs, data):
    buf = build(bs)
    cut = data.draw(st.integers(1, len(buf) - 1))
    starts = plain_walk(buf)
    s = scan(buf[:cut])
    complete = [p for p in starts if p + peek_header(buf, p)[0] <= cut]
    assert s.starts.tolist() == complete
    if cut != s.end:
        assert s.damage is not None and s.damage.kind == "torn" and s.damage.offset == s.end


def test_blank_ends_a_segment():
    buf = build([b"a", b"b"]) + blank_record(500)
    s = scan(buf)
    assert s.count == 2 and s.sealed and s.damage is None


def test_corrupt_record_in_the_middle():
    buf = bytearray(build([b"x" * 10] * 10, base=4096))
    starts = plain_walk(bytes(buf))
    buf[starts[6] + 5] ^= 0xFF                      # break record 6's magic code
    s = scan(bytes(buf), 4096)
    assert s.count == 6 and s.damage.kind == "corrupt" and s.damage.offset == 4096 + starts[6]
    assert "magic" in s.damage.describe()


def test_wrong_physical_offset_is_corrupt():
    buf = build([b"x"] * 3, base=0)
    s = scan(buf, base=1000)                       # records claim offsets 0.., not 1000..
    assert s.count == 0 and s.damage.kind == "corrupt" and "PHYSICALOFFSET" in s.damage.detail


def test_crc_check_finds_a_torn_body():
    buf = bytearray(build([b"hello world"] * 4))
    starts = plain_walk(bytes(buf))
    buf[starts[2] + 90] ^= 0x01                     # inside record 2's body
    assert scan(bytes(buf)).count == 4              # lengths still add up
    s = scan(bytes(buf), check_crc=True)
    assert s.count == 2 and s.damage.detail == "body CRC mismatch" and s.damage.offset == starts[2]
