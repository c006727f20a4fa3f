"""The vectorised Arrow decoder gives exactly what store.records.decode_record gives."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emulator.spark_analytics.columnar import arrow_schema, decode_batch, decode_slow, iter_batches, parse_int
from rocketmq_emulator.spark_analytics.commitlog import scan_buffer
from rocketmq_emulator.store.records import MessageRecord, encode_record

KEYS = ["UNIQ_KEY", "TAGS", "KEYS", "DELAY", "REAL_TOPIC", "REAL_QID", "RETRY_TOPIC", "ORIGIN_MESSAGE_ID",
        "MAX_RECONSUME_TIMES", "x", "é"]
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
values = st.one_of(text, st.integers(-(1 << 33), 1 << 33).map(str), st.sampled_from(["0x10", "+3", "007", "-1"]))
props = st.dictionaries(st.sampled_from(KEYS), values, max_size=6)
raw_props = st.text(st.sampled_from("ab\u0001\u0002\u0000é"), max_size=12)   # anything at all, parsed upstream's way


def records(draw_props, hosts=False):
    return st.lists(st.tuples(st.binary(max_size=30), draw_props, st.booleans(), st.integers(0, 3)),
                    min_size=1, max_size=25)


def build(items, raw=False, v6=False):
    out = bytearray()
    for i, (body, p, flag, q) in enumerate(items):
        rec = MessageRecord(topic="topic-é" if flag else "T", body=body, queue_id=q, queue_offset=i,
                            reconsume_times=i % 3, store_timestamp=1000 + i, born_timestamp=999 + i,
                            commit_log_offset=len(out) + 7 * 4096,
                            store_host=("::1", 10911) if v6 and i % 2 else ("10.0.0.7", 10911))
        if raw:
            rec.properties_text = p
        else:
            rec.properties = p
        out += encode_record(rec)
    return bytes(out)


def both(buf, columns=None, include_body=True):
    b, mv = np.frombuffer(buf, np.uint8), memoryview(buf)
    s = scan_buffer(b, mv, 7 * 4096)
    assert s.damage is None
    fast = decode_batch(b, mv, 7 * 4096, s.starts, s.totals, include_body, columns)
    slow = decode_slow(mv, 7 * 4096, s.starts, include_body, columns)
    return fast, slow


def assert_same(fast: pa.RecordBatch, slow: pa.RecordBatch):
    assert fast.schema == slow.schema
    for name in fast.schema.names:
        f, s = fast.column(name).to_pylist(), slow.column(name).to_pylist()
        if name == "properties":
            f, s = [dict(x) for x in f], [dict(x) for x in s]
        assert f == s, name


@settings(max_examples=80, deadline=None)
@given(records(props))
def test_fast_decoder_equals_decode_record(items):
    assert_same(*both(build(items)))


@settings(max_examples=80, deadline=None)
@given(records(raw_props))
def test_odd_properties_text_is_parsed_like_upstream(items):
    assert_same(*both(build(items, raw=True)))


@settings(max_examples=20, deadline=None)
@given(records(props))
def test_ipv6_store_hosts(items):
    assert_same(*both(build(items, v6=True)))


def test_column_subset_and_order():
    buf = build([(b"abc", {"TAGS": "t", "DELAY": "3"}, False, 1)] * 3)
    fast, slow = both(buf, columns=["delay_level", "topic", "body"], include_body=False)
    assert fast.schema.names == ["delay_level", "topic", "body"]
    assert_same(fast, slow)
    assert fast.column("delay_level").to_pylist() == [3, 3, 3]


def test_schema_and_batches():
    buf = build([(b"x", {"UNIQ_KEY": "K"}, False, 0)] * 10)
    b, mv = np.frombuffer(buf, np.uint8), memoryview(buf)
    s = scan_buffer(b, mv, 7 * 4096)
    batches = list(iter_batches(b, mv, 7 * 4096, s.starts, s.totals, batch_rows=4))
    assert [x.num_rows for x in batches] == [4, 4, 2]
    assert batches[0].schema == arrow_schema(False)
    row = batches[0].to_pylist()[1]
    assert row["offset_msg_id"] == "0A00000700002A9F" + f"{7 * 4096 + s.starts[1]:016X}"


def test_parse_int():
    assert [parse_int(v) for v in ["3", "-1", "0x10", "+3", "", None, "99999999999", "007"]] == \
        [3, -1, None, None, None, None, None, 7]


def test_read_segment_falls_back_to_the_checked_walk():
    from rocketmq_emulator.spark_analytics.columnar import read_segment

    buf = bytearray(build([(b"x" * 5, {"UNIQ_KEY": f"K{i}"}, False, 0) for i in range(10)]))
    s = scan_buffer(np.frombuffer(bytes(buf), np.uint8), memoryview(bytes(buf)), 7 * 4096)
    at = int(s.starts[6])
    buf[at + 84:at + 88] = (3).to_bytes(4, "big")             # record 6's body length no longer adds up
    data = bytes(buf)
    res, batches = read_segment(np.frombuffer(data, np.uint8), memoryview(data), 7 * 4096, batch_rows=4)
    rows = [r for bt in batches for r in bt.to_pylist()]
    assert [r["uniq_key"] for r in rows] == [f"K{i}" for i in range(6)]
    assert res.scan.damage.kind == "corrupt" and res.scan.damage.offset == 7 * 4096 + at
    good, batches = read_segment(np.frombuffer(bytes(build([(b"y", {}, False, 0)] * 9)), np.uint8),
                                 memoryview(bytes(build([(b"y", {}, False, 0)] * 9))), 7 * 4096, batch_rows=4)
    assert sum(bt.num_rows for bt in batches) == 9 and good.scan.damage is None
