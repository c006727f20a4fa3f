"""store.records: the commit-log record codec (rocketmq-4x.md §3; checklist 42–49)."""
from __future__ import annotations

import ipaddress
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emulator.store.records import (BLANK_MAGIC_CODE, MAGIC_CODE, MessageRecord, RecordError, SysFlag, blank_record,
                           create_offset_msg_id, decode_offset_msg_id, decode_record, encode_record, iter_records,
                           java_string_hash, parse_host, peek_header, properties_to_string, record_size,
                           string_to_properties, tags_code)
from store_testkit import reference_encode

SEP1, SEP2 = "\u0001", "\u0002"


def test_42_upstream_122_byte_example():
    """body "hello!q!", topic "abc", properties a=123,b=hello,c=3.14 → 91 + 8 + 3 + 20 = 122."""
    r = MessageRecord(topic="abc", body=b"hello!q!", properties={"a": "123", "b": "hello", "c": "3.14"})
    raw = encode_record(r)
    assert len(raw) == 122 == r.store_size == record_size(8, 3, 20)
    assert r.properties_text == f"a{SEP1}123{SEP2}b{SEP1}hello{SEP2}c{SEP1}3.14"
    assert struct.unpack_from(">i", raw, 0)[0] == 122
    # the fixed part before BODY is 84 bytes with IPv4 hosts: body length sits at byte 84
    assert struct.unpack_from(">i", raw, 84)[0] == 8 and raw[88:96] == b"hello!q!"


def test_43_magic_and_field_offsets():
    r = MessageRecord(topic="T", body=b"x", queue_offset=0x0102030405060708, commit_log_offset=0x1112131415161718,
                      sys_flag=SysFlag.MULTI_TAGS)
    raw = encode_record(r)
    assert struct.unpack_from(">I", raw, 4)[0] == MAGIC_CODE == 0xDAA320A7
    assert struct.unpack_from(">i", raw, 4)[0] == -626843481
    assert struct.unpack_from(">q", raw, 20)[0] == 0x0102030405060708     # QUEUEOFFSET at byte 20
    assert struct.unpack_from(">q", raw, 28)[0] == 0x1112131415161718     # PHYSICALOFFSET at byte 28
    assert struct.unpack_from(">i", raw, 36)[0] == SysFlag.MULTI_TAGS     # SYSFLAG at byte 36


def test_42_encoding_matches_the_reference_table_byte_for_byte():
    r = MessageRecord(topic="TopicA", body=b"payload", queue_id=3, flag=7, properties={"TAGS": "TagA", "KEYS": "k1 k2"},
                      born_timestamp=1700000000000, born_host=("10.1.2.3", 40000), store_timestamp=1700000000123,
                      store_host=("192.168.0.9", 10911), reconsume_times=2, prepared_transaction_offset=99,
                      queue_offset=5, commit_log_offset=4096)
    want = reference_encode(b"TopicA", b"payload", f"TAGS{SEP1}TagA{SEP2}KEYS{SEP1}k1 k2".encode(), queue_id=3, flag=7,
                            queue_offset=5, phys=4096, born_ts=1700000000000, born=(bytes([10, 1, 2, 3]), 40000),
                            store_ts=1700000000123, store=(bytes([192, 168, 0, 9]), 10911), reconsume=2, prepared=99)
    assert encode_record(r) == want


@pytest.mark.parametrize("born,store,flag,size", [
    (("::1", 1), ("127.0.0.1", 2), SysFlag.BORNHOST_V6, 91 + 12),
    (("127.0.0.1", 1), ("fe80::1", 2), SysFlag.STOREHOST_V6, 91 + 12),
    (("2001:db8::7", 1), ("::1", 2), SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6, 91 + 24),
])
def test_ipv6_hosts_set_the_sysflag_bits_and_widen_the_record(born, store, flag, size):
    r = MessageRecord(topic="", body=b"", born_host=born, store_host=store, sys_flag=SysFlag.MULTI_TAGS | 0x30)
    raw = encode_record(r)
    assert len(raw) == size and r.sys_flag == flag | SysFlag.MULTI_TAGS
    back = decode_record(raw)
    assert back.born_host == born and back.store_host == store and back.sys_flag == r.sys_flag


def test_44_topic_and_properties_limits():
    encode_record(MessageRecord(topic="t" * 127))
    with pytest.raises(RecordError, match="topic"):
        encode_record(MessageRecord(topic="t" * 128))
    with pytest.raises(RecordError, match="topic"):
        encode_record(MessageRecord(topic="é" * 64))            # 128 bytes of UTF-8
    ok = MessageRecord(topic="T", properties_text="p" * 32767)
    assert len(encode_record(ok)) == 91 + 1 + 32767
    with pytest.raises(RecordError, match="properties"):
        encode_record(MessageRecord(topic="T", properties_text="p" * 32768))


def test_a_rejected_record_is_left_unchanged():
    r = MessageRecord(topic="T", properties={"k": "v" * 40000})
    with pytest.raises(RecordError):
        encode_record(r)
    assert r.properties_text is None and r.store_size == 0 and r.body_crc == 0
    r2 = MessageRecord(topic="T", body=b"x", queue_id=1 << 40, born_host=("::1", 1))
    with pytest.raises(struct.error):
        encode_record(r2)
    assert r2.sys_flag == 0 and r2.properties_text is None


def test_45_properties_writer():
    assert properties_to_string({"k1": "v1", "k2": None, "k3": "v3"}) == f"k1{SEP1}v1{SEP2}k3{SEP1}v3"
    assert properties_to_string({}) == ""
    assert not properties_to_string({"a": "b"}).endswith(SEP2)


@pytest.mark.parametrize("text,parsed", [
    (f"k1{SEP1}v1{SEP2}", {"k1": "v1"}),                      # trailing separator is fine
    (f"k1{SEP1}", {}),                                        # empty value dropped
    (f"{SEP1}v1", {}),                                        # empty key dropped
    ("aaa", {}), ("", {}), (" ", {}), (None, {}),
    (f"1{SEP1}1{SEP2}2{SEP1}2", {"1": "1", "2": "2"}),        # upstream MessageDecoderTest
    (f"a{SEP1}b{SEP1}c", {"a": f"b{SEP1}c"}),                # the first char 1 splits
    (f"{SEP1}a{SEP1}b", {}),                                  # ...so a leading char 1 drops the segment
    (f"k{SEP1}old{SEP2}k{SEP1}new", {"k": "new"}),            # last one wins
    (f"k{SEP1}v{SEP2}{SEP2}x{SEP1}y", {"k": "v", "x": "y"}),  # empty segment skipped
])
def test_46_properties_parser_edge_cases(text, parsed):
    assert string_to_properties(text) == parsed


def test_47_offset_msg_id_example():
    assert create_offset_msg_id(("127.0.0.1", 9103), 123456) == "7F0000010000238F000000000001E240"
    assert decode_offset_msg_id("7F0000010000238F000000000001E240") == (("127.0.0.1", 9103), 123456)


def test_offset_msg_id_ipv6_is_56_hex_chars():
    mid = create_offset_msg_id(("fe80::1", 10911), 7)
    assert len(mid) == 56 and mid == mid.upper()
    assert decode_offset_msg_id(mid) == (("fe80::1", 10911), 7)
    with pytest.raises(ValueError):
        decode_offset_msg_id("ABC")


@pytest.mark.parametrize("s,h", [("TagA", 2598919), ("TagB", 2598920), ("*", 42), ("hello", 99162322),
                                 ("polygenelubricants", -2147483648), ("中", 0x4E2D),
                                 ("😀", 31 * 0xD83D + 0xDE00)])       # UTF-16 surrogate pair
def test_49_java_string_hash(s, h):
    assert java_string_hash(s) == h


def test_49_tags_code():
    assert tags_code("TagA") == 2598919
    assert tags_code(None) == 0 and tags_code("") == 0


def test_parse_host():
    assert parse_host("127.0.0.1:10911") == ("127.0.0.1", 10911)
    assert parse_host("[::1]:10911") == ("::1", 10911)
    with pytest.raises(ValueError):
        parse_host("nohost")


def test_blank_and_peek_header():
    b = blank_record(100)
    assert len(b) == 8 and peek_header(b, 0) == (100, BLANK_MAGIC_CODE)
    with pytest.raises(RecordError):
        peek_header(b, 1)


def test_decode_rejects_damage_with_record_error():
    raw = encode_record(MessageRecord(topic="T", body=b"body", properties={"TAGS": "a"}))
    decode_record(raw)
    with pytest.raises(RecordError, match="CRC"):
        decode_record(raw[:88] + b"X" + raw[89:])
    assert decode_record(raw[:88] + b"X" + raw[89:], check_crc=False).body == b"Xody"
    with pytest.raises(RecordError, match="torn"):
        decode_record(raw[:-1])
    with pytest.raises(RecordError, match="magic"):
        decode_record(raw[:4] + b"\0\0\0\0" + raw[8:])
    with pytest.raises(RecordError):                           # body length pointing past the end
        decode_record(raw[:84] + struct.pack(">i", 1000) + raw[88:])


@given(st.binary(max_size=300), st.integers(0, 40))
def test_decode_of_any_bytes_raises_only_record_error(data, pos):
    try:
        decode_record(data, pos)
    except RecordError:
        pass


@given(st.binary(min_size=1, max_size=200).map(bytearray), st.data())
def test_decode_of_a_corrupted_record_raises_only_record_error(noise, data):
    raw = bytearray(encode_record(MessageRecord(topic="Topic", body=b"0123456789", properties={"TAGS": "x"})))
    at = data.draw(st.integers(0, len(raw) - 1))
    raw[at:at + len(noise)] = noise
    try:
        decode_record(bytes(raw))
    except RecordError:
        pass


_text = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters=SEP1 + SEP2), min_size=1, max_size=8)


@given(topic=st.text(max_size=20).filter(lambda t: len(t.encode()) <= 127), body=st.binary(max_size=64),
       props=st.dictionaries(_text, _text, max_size=4), qid=st.integers(0, 2**31 - 1),
       qoff=st.integers(0, 2**63 - 1), born=st.sampled_from([("1.2.3.4", 1), ("::1", 65535)]),
       store=st.sampled_from([("127.0.0.1", 10911), ("fe80::9", 9876)]))
def test_encode_decode_round_trip(topic, body, props, qid, qoff, born, store):
    r = MessageRecord(topic=topic, body=body, queue_id=qid, properties=props, queue_offset=qoff,
                      born_host=born, store_host=store, store_timestamp=5, born_timestamp=4)
    raw = encode_record(r)
    back = decode_record(raw)
    assert (back.topic, back.body, back.queue_id, back.properties, back.queue_offset, back.born_host,
            back.store_host, back.store_size) == (topic, body, qid, props, qoff, born, store, len(raw))
    assert list(iter_records(raw + raw))[1].body == body


_hosts = st.sampled_from([("1.2.3.4", 1), ("10.0.0.7", 65535), ("::1", 9), ("2001:db8::1", 10911)])


@given(topic=st.text(max_size=10).filter(lambda t: len(t.encode()) <= 127), body=st.binary(max_size=40),
       text=st.text(max_size=20), born=_hosts, store=_hosts, ints=st.tuples(
           st.integers(-2**31, 2**31 - 1), st.integers(-2**31, 2**31 - 1), st.integers(0, 2**63 - 1),
           st.integers(0, 2**63 - 1), st.integers(0, 0xF), st.integers(0, 2**62), st.integers(0, 2**62),
           st.integers(0, 2**31 - 1), st.integers(0, 2**62)))
def test_42_encoding_matches_the_reference_for_any_fields(topic, body, text, born, store, ints):
    qid, flag, qoff, phys, sys_flag, born_ts, store_ts, recon, prep = ints
    r = MessageRecord(topic=topic, body=body, queue_id=qid, flag=flag, properties_text=text, sys_flag=sys_flag,
                      born_timestamp=born_ts, born_host=born, store_timestamp=store_ts, store_host=store,
                      reconsume_times=recon, prepared_transaction_offset=prep, queue_offset=qoff,
                      commit_log_offset=phys)
    v6 = (SysFlag.BORNHOST_V6 if ":" in born[0] else 0) | (SysFlag.STOREHOST_V6 if ":" in store[0] else 0)
    want = reference_encode(topic.encode(), body, text.encode(), queue_id=qid, flag=flag, queue_offset=qoff,
                            phys=phys, sys_flag=sys_flag | v6, born_ts=born_ts,
                            born=(ipaddress.ip_address(born[0]).packed, born[1]), store_ts=store_ts,
                            store=(ipaddress.ip_address(store[0]).packed, store[1]), reconsume=recon,
                            prepared=prep)
    assert encode_record(r) == want and r.store_size == len(want)


@pytest.mark.parametrize("born, store", [(("10.0.0.7", 5), ("10.1.2.3", 10911)), (("fe80::1", 5), ("::1", 10911)),
                                         (("10.0.0.7", 5), ("::1", 7)), (("fe80::1", 5), ("10.1.2.3", 9))])
def test_a_record_head_reads_what_decode_reads(born, store):
    from rocketmq_emulator.store.record_view import head

    rec = MessageRecord(topic="Orders", body=b"xyz", queue_id=2, properties={"UNIQ_KEY": "A", "TAGS": "t"},
                        born_host=born, store_host=store, commit_log_offset=99, reconsume_times=4, queue_offset=3)
    raw = encode_record(rec)
    full, h = decode_record(raw), head(raw)
    assert (h.size, h.topic, h.queue_id, h.queue_offset, h.commit_log_offset, h.sys_flag, h.reconsume_times,
            h.offset_msg_id, h.properties_text) == (
        full.store_size, full.topic, full.queue_id, full.queue_offset, full.commit_log_offset, full.sys_flag,
        full.reconsume_times, full.offset_msg_id, full.properties_text)
    with pytest.raises(RecordError):
        head(raw[:-1])
