"""CommitLog.append_record encodes the usual record with records.encode_usual and
appends it inline; everything else goes through encode_record + CommitLog.append, the
reference. These tests hold the quick path to the reference byte for byte: the same
log bytes, consume-queue entries, results, record fields and failures, on random
records. The reference store is one whose log never takes the quick path."""
from __future__ import annotations

import dataclasses
import struct
import zlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emulator.store import MessageStore, PutStatus, StoreConfig
from rocketmq_emulator.store.dispatch import entry_tags_code
from rocketmq_emulator.store.record_view import prop_value
from rocketmq_emulator.store.records import MessageRecord, create_offset_msg_id, encode_record, tags_code
from rocketmq_emulator.store import commit_log, segment
from store_testkit import bodies, reference_encode_with_crc

SEP1, SEP2 = "\u0001", "\u0002"
TOPICS = ["T", "Topic-B", "SCHEDULE_TOPIC_XXXX", "t\u00fcpic"]
HOSTS = [("10.0.0.7", 51234), ("127.0.0.1", 10911), ("192.168.1.1", 0), ("::1", 9), ("2001:db8::1", 10911)]


def clone(r: MessageRecord) -> MessageRecord:
    return dataclasses.replace(r, properties=dict(r.properties))


def log_bytes(s: MessageStore) -> bytes:
    return b"".join(bytes(seg.view()) for seg in s._log.segments)


def queue_bytes(s: MessageStore) -> dict:
    return {key: (cq.base, cq.max_offset, cq.read(cq.base, cq.max_offset)) for key, cq in s._queues.items()}


def reference_store(root, cfg=StoreConfig()) -> MessageStore:
    s = MessageStore(root, cfg)
    append = s._log.append_record

    def reference_append(rec, queue_offset, now_ms, *, prop_crc, topic_field=None, body_crc=None):
        return append(rec, queue_offset, now_ms, prop_crc=prop_crc)
    s._log.append_record = reference_append
    return s


def count_general(s: MessageStore, monkeypatch) -> list[int]:
    """Count the appends that take the reference encoder."""
    calls = [0]

    def counted(rec, **kw):
        calls[0] += 1
        return encode_record(rec, **kw)
    monkeypatch.setattr(commit_log, "encode_record", counted)
    return calls


def assert_same_store(fast: MessageStore, ref: MessageStore) -> None:
    assert log_bytes(fast) == log_bytes(ref)
    assert queue_bytes(fast) == queue_bytes(ref)
    assert fast.commit_log_max_offset == ref.commit_log_max_offset
    fast._check()


_prop_text = st.lists(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "a", "3", "é", "\u4e2d", SEP1, SEP2,
                                       f"TAGS{SEP1}", f"{SEP2}TAGS{SEP1}", "Tag1", " "]), max_size=10).map("".join)
# mostly the usual record (so most puts take the inlined path), with every kind of exception
_records = st.builds(
    MessageRecord,
    topic=st.sampled_from(TOPICS[:1] * 3 + TOPICS[1:]),
    body=st.binary(max_size=300),
    queue_id=st.integers(0, 1),
    flag=st.integers(-2**31, 2**31 - 1),
    properties=st.dictionaries(st.sampled_from(["TAGS", "KEYS", "UNIQ_KEY", "DELAY", "x"]),
                               st.sampled_from(["a", "Tag1", "k1 k2", "3", "", "\u00e9"]), max_size=4),
    properties_text=st.one_of(st.none(), _prop_text),
    sys_flag=st.one_of(st.sampled_from([0, 0, 0, 0x2, 0x8, 0x30, 0x1A]), st.integers(0, 0xFF)),
    born_timestamp=st.integers(0, 2**62),
    born_host=st.sampled_from(HOSTS[:3] * 3 + HOSTS[3:]),
    store_host=st.sampled_from(HOSTS[:3] * 3 + HOSTS[3:]),
    reconsume_times=st.integers(0, 2**31 - 1),
    prepared_transaction_offset=st.integers(0, 2**62),
)


@given(st.lists(_records, min_size=1, max_size=30), st.sampled_from([1024, 4096, 1 << 20]))
def test_inlined_put_writes_what_the_general_path_writes(records, segment_size):
    cfg = StoreConfig(segment_size=segment_size, max_message_size=280)
    fast, ref = MessageStore(None, cfg), reference_store(None, cfg)
    for topic in TOPICS:                                # queues exist: most puts can take the inlined path
        for qid in (0, 1):
            assert fast.put(MessageRecord(topic, b"w", qid), 1) == ref.put(MessageRecord(topic, b"w", qid), 1)
    for i, r in enumerate(records):
        a, b = clone(r), clone(r)
        res_a, res_b = fast.put(a, 1_000 + i), ref.put(b, 1_000 + i)
        assert res_a == res_b
        assert a == b                                  # the fields put assigns, or none on a failure
        if res_a.ok:
            raw = fast.read(res_a.commit_log_offset)
            assert raw == encode_record(clone(a)) and len(raw) == a.store_size
    assert_same_store(fast, ref)


def _usual(i: int, **kw) -> MessageRecord:
    props = {"UNIQ_KEY": f"0A00000100000000{i:016X}", "TAGS": f"Tag{i % 3}", "KEYS": f"order-{i} c-{i % 7}"}
    fields = dict(topic="OrderTopic", body=bytes([i % 251]) * (i % 700), queue_id=i % 4, properties=props,
                  flag=i, born_timestamp=1_700_000_000_000 + i, born_host=("10.0.0.7", 51234),
                  store_host=("10.0.0.1", 10911), reconsume_times=i % 3, prepared_transaction_offset=i * 7)
    fields.update(kw)
    return MessageRecord(**fields)


def test_the_usual_record_takes_the_inlined_path_and_matches_an_independent_encoder(tmp_path, monkeypatch):
    s = MessageStore(tmp_path, StoreConfig(segment_size=64 * 1024))
    calls = count_general(s, monkeypatch)
    results = [s.put(_usual(i), 5_000 + i) for i in range(400)]
    assert calls[0] == 4                               # the first put to each queue only
    for i, res in enumerate(results):
        assert res.ok and res.queue_offset == i // 4 and res.store_timestamp == 5_000 + i
        assert res.msg_id == create_offset_msg_id(("10.0.0.1", 10911), res.commit_log_offset)
        r = _usual(i)
        text = f"UNIQ_KEY{SEP1}{r.properties['UNIQ_KEY']}{SEP2}TAGS{SEP1}Tag{i % 3}{SEP2}KEYS{SEP1}{r.properties['KEYS']}"
        want = reference_encode_with_crc(b"OrderTopic", r.body, text.encode(), queue_id=i % 4, flag=i, queue_offset=i // 4,
                                phys=res.commit_log_offset, born_ts=r.born_timestamp, born=(bytes([10, 0, 0, 7]), 51234),
                                store_ts=5_000 + i, store=(bytes([10, 0, 0, 1]), 10911), reconsume=i % 3,
                                prepared=i * 7)
        assert s.read(res.commit_log_offset) == want and res.store_size == len(want)
    assert len(s._log.segments) > 1                    # records rolled over to new segments on the way
    s._check()
    s.close()
    with MessageStore(tmp_path, StoreConfig(segment_size=64 * 1024)) as again:
        assert again.recovery.clean and again.max_offset("OrderTopic", 3) == 100
        again._check()


def test_schedule_topic_puts_take_the_inlined_path_with_the_delivery_time_as_tags_code(monkeypatch):
    # Every send-back is parked in SCHEDULE_TOPIC_XXXX: its entries' tagsCode is the
    # store time + the level's delay (3 = 10 s; 99 is clamped to the last level, 2 h).
    s = MessageStore(None, StoreConfig())
    calls = count_general(s, monkeypatch)
    levels = [3, 3, 99, 3]
    results = [s.put(_usual(i, topic="SCHEDULE_TOPIC_XXXX", queue_id=2, properties={"DELAY": str(lv)}),
                     1_000 * i) for i, lv in enumerate(levels)]
    assert calls[0] == 1                               # the queue's first put only
    assert [s.queue_entry("SCHEDULE_TOPIC_XXXX", 2, i)[2] for i in range(4)] == [
        0 + 10_000, 1_000 + 10_000, 2_000 + 7_200_000, 3_000 + 10_000]
    assert [r.queue_offset for r in results] == [0, 1, 2, 3]
    s._check()


@pytest.mark.parametrize("flush", ["ASYNC_FLUSH", "SYNC_FLUSH"])
def test_file_stores_match_byte_for_byte(tmp_path, monkeypatch, flush):
    """Same records through put and through the general path into two directories: the
    segment files and queue files are identical. A small RECENT_LIMIT makes the file
    segments move their fresh records to the mmap many times."""
    monkeypatch.setattr(segment, "RECENT_LIMIT", 3000)
    cfg = StoreConfig(segment_size=16 * 1024, flush_disk_type=flush, consume_queue_entries_per_file=16)
    fast, ref = MessageStore(tmp_path / "fast", cfg), reference_store(tmp_path / "ref", cfg)
    for i in range(300):
        kw = {"topic": "SCHEDULE_TOPIC_XXXX", "properties": {"DELAY": "3"}} if i % 50 == 7 else {}
        assert fast.put(_usual(i, **kw), i) == ref.put(_usual(i, **kw), i)
    assert_same_store(fast, ref)
    fast.close()
    ref.close()
    for sub in ("commitlog", "consumequeue/OrderTopic/0", "consumequeue/OrderTopic/3"):
        names = sorted(p.name for p in (tmp_path / "fast" / sub).iterdir())
        assert names == sorted(p.name for p in (tmp_path / "ref" / sub).iterdir()) and names
        for name in names:
            assert (tmp_path / "fast" / sub / name).read_bytes() == (tmp_path / "ref" / sub / name).read_bytes()


@pytest.mark.parametrize("change", [
    {"queue_id": 1.0},                                  # finds queue 1, but is not an int32
    {"born_host": ("10.0.0.7", 51234.0)},               # equal to a known host, but the port is a float
    {"store_host": ("10.0.0.1", 1 << 31)},
    {"born_host": ("10.0.0.7",)},
    {"born_host": None},
    {"flag": 1 << 40},
    {"born_timestamp": -(1 << 63) - 1},
    {"body": "text, not bytes"},
    {"body": None},
    {"body": bytes(5000)},                              # over max_message_size
    {"properties_text": "k\u0001\ud800"},               # not encodable
    {"properties_text": "k\u0001" + "v" * 32766},       # over 32767 bytes
    {"properties_text": b"TAGS\x01a"},
    {"sys_flag": "0"},
])
def test_bad_input_on_a_known_queue_fails_as_the_general_path_does(change):
    cfg = StoreConfig(max_message_size=4096)
    fast, ref = MessageStore(None, cfg), reference_store(None, cfg)
    for s in (fast, ref):
        for i in range(3):
            assert s.put(_usual(i), i).ok                # queues 0..2 exist, the hosts are known
    bad_a, bad_b = _usual(5, **change), _usual(5, **change)
    try:
        res_b = ref.put(bad_b, 10)
    except Exception as exc:                            # (a str sys_flag raises, as it always has)
        with pytest.raises(type(exc)):
            fast.put(bad_a, 10)
    else:
        res_a = fast.put(bad_a, 10)
        assert res_a == res_b and not res_a.ok and res_a.remark
        assert res_a.status in (PutStatus.MESSAGE_ILLEGAL, PutStatus.PROPERTIES_SIZE_EXCEEDED)
    assert bad_a == bad_b == _usual(5, **change)        # left as it was
    assert_same_store(fast, ref)
    assert fast.put(_usual(3), 11) == ref.put(_usual(3), 11)


def test_hosts_given_as_lists_and_new_hosts(tmp_path):
    s = MessageStore(None)
    assert s.put(_usual(0), 1).ok
    for i, (born, store) in enumerate([(["10.0.0.7", 51234], ["10.0.0.1", 10911]), (("10.9.9.9", 1), ("10.0.0.1", 10911)),
                                       (("10.0.0.7", 51234), ("::1", 10911)), (("10.0.0.7", 51234), ("10.0.0.2", 7))]):
        r = _usual(4 * (i + 1), born_host=born, store_host=store)
        res = s.put(r, 10 + i)
        assert res.ok and res.msg_id == create_offset_msg_id(tuple(store), res.commit_log_offset)
        assert s.read(res.commit_log_offset) == encode_record(clone(r))
    s._check()


_AWKWARD = ["", "TAGS\u0001a", f"x{SEP1}1{SEP2}TAGS{SEP1}b", f"TAGS{SEP1}a{SEP2}TAGS{SEP1}",
            f"TAGS{SEP1}a{SEP2}TAGS{SEP1}b", f"{SEP2}TAGS{SEP1}c", f"xTAGS{SEP1}d", f"{SEP1}TAGS{SEP1}e",
            f"TAGS{SEP1}{SEP1}", f"a{SEP2}TAGS{SEP1}f{SEP2}", f"TAGS{SEP1}g{SEP2}KEYS{SEP1}k", f"TAGS{SEP1}{SEP2}x{SEP1}1",
            f"TAGS{SEP1}h{SEP1}i{SEP2}x{SEP1}1", f"TAGS{SEP1}j{SEP2}xTAGS{SEP1}k", f"TAGSx{SEP1}l"]


@given(st.one_of(st.sampled_from(_AWKWARD), _prop_text))
def test_the_quick_tags_scan_is_the_java_hash_of_the_tags_property(text):
    """entry_tags_code's quick scan against its definition, on awkward strings, with and
    without the CRC property the store appends."""
    for stored in (text, text + ("\u0002" if text else "") + "__CRC32#\u00010123456789"):
        assert entry_tags_code("T", stored, 0, ()) == tags_code(prop_value(stored, "TAGS"))


def test_tags_codes_of_awkward_properties_strings():
    fast, ref = MessageStore(None), reference_store(None)
    for i, text in enumerate(_AWKWARD * 2):
        r = MessageRecord(topic="T", body=b"b", properties_text=text)
        assert fast.put(clone(r), i) == ref.put(clone(r), i)
    assert_same_store(fast, ref)
    assert bodies(fast, "T", 0) == [b"b"] * 2 * len(_AWKWARD)


def test_a_crc_is_computed_per_record():
    s = MessageStore(None)
    for body in (b"one", b"two", b"two", b""):
        r = MessageRecord(topic="T", body=body)
        res = s.put(r, 1)
        assert r.body_crc == zlib.crc32(body)
        assert struct.unpack_from(">I", s.read(res.commit_log_offset), 8)[0] == zlib.crc32(body)


@given(bodies_=st.lists(st.binary(max_size=200), min_size=1, max_size=8))
def test_a_body_crc_the_caller_knows_writes_the_same_records(bodies_):
    """put(..., body_crc=) (a copy of a stored record's body: the core knows its CRC) is
    the same put, the CRC not computed again."""
    told, computed = MessageStore(None), MessageStore(None)
    for i, body in enumerate(bodies_):
        a = MessageRecord("T", body, properties={"UNIQ_KEY": f"U{i}"}, born_host=("127.0.0.1", 5))
        b = clone(a)
        assert told.put(a, 1_000 + i, body_crc=zlib.crc32(body)) == computed.put(b, 1_000 + i)
        assert a == b
    assert_same_store(told, computed)
