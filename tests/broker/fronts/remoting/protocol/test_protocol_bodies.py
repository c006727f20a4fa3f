"""headers.py: SEND_MESSAGE_V2 names, the batch body (§2.4) and fastjson bodies."""
import json
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rocketmq_emulator.broker.fronts.remoting.protocol import LocalProtocolError, ProtocolError
from rocketmq_emulator.broker.fronts.remoting.protocol.headers import (SEND_V1_TO_V2, SEND_V2_TO_V1, decode_batch_body, dumps_json,
                                     encode_batch_body, loads_fastjson, send_header_v1_to_v2,
                                     send_header_v2_to_v1)


# -- SEND_MESSAGE_V2 ------------------------------------------------------------------
def test_v2_table_is_a_to_n_and_invertible():
    assert sorted(SEND_V2_TO_V1) == list("abcdefghijklmn")
    assert {v: k for k, v in SEND_V1_TO_V2.items()} == SEND_V2_TO_V1


def test_capture_from_the_reference_maps_to_v1():
    ext = {"a": "yyzGroup2", "b": "yyztest2", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1491978653614",
           "h": "0", "i": "TAGS\x01TAG\x02WAIT\x01true\x02KEYS\x01ffff\x02", "j": "0", "k": "false"}
    v1 = send_header_v2_to_v1(ext)
    assert v1["producerGroup"] == "yyzGroup2" and v1["topic"] == "yyztest2" and v1["unitMode"] == "false"
    assert len(v1) == len(ext)


def test_unknown_keys_pass_through_and_mapped_fields_win():
    assert send_header_v2_to_v1({"a": "G", "AccessKey": "ak", "bname": "old", "n": "new"}) == {
        "AccessKey": "ak", "producerGroup": "G", "bname": "new"}
    assert send_header_v1_to_v2({"topic": "T", "Signature": "s"}) == {"Signature": "s", "b": "T"}
    assert send_header_v2_to_v1(None) == {} == send_header_v1_to_v2({})


def test_mapping_copies():
    ext = {"a": "G"}
    send_header_v2_to_v1(ext)["producerGroup"] = "changed"
    assert ext == {"a": "G"}


# -- batch body -------------------------------------------------------------------------
def test_batch_record_layout():
    data = encode_batch_body([(7, b"hello", "UNIQ_KEY\x01ABC")])
    total, magic, crc, flag, blen = struct.unpack_from(">iiiii", data)
    assert (total, magic, crc, flag, blen) == (len(data), 0, 0, 7, 5)
    assert data[20:25] == b"hello"
    assert struct.unpack_from(">h", data, 25)[0] == len("UNIQ_KEY\x01ABC")
    assert total == 20 + 5 + 2 + 12


def test_batch_round_trip_and_empty():
    msgs = [(0, b"a", "UNIQ_KEY\x01A"), (-1, b"", ""), (2 ** 31 - 1, bytes(range(256)), "K\x01é中")]
    assert decode_batch_body(encode_batch_body(msgs)) == msgs
    assert decode_batch_body(b"") == [] and encode_batch_body([]) == b""


@given(st.lists(st.tuples(st.integers(-2 ** 31, 2 ** 31 - 1), st.binary(max_size=64),
                          st.text(st.characters(exclude_categories=("Cs",)), max_size=40))))
def test_batch_round_trip_property(msgs):
    assert decode_batch_body(encode_batch_body(msgs)) == msgs


@pytest.mark.parametrize("mutate,match", [
    (lambda d: d[:10], "cut short"),
    (lambda d: d[:-1], "totalSize|overruns|cut short"),
    (lambda d: d + b"\0", "cut short"),
    (lambda d: struct.pack(">i", len(d) + 1) + d[4:], "totalSize"),
    (lambda d: struct.pack(">i", 3) + d[4:], "totalSize"),
    (lambda d: d[:16] + struct.pack(">i", -1) + d[20:], "bodyLen -1"),
    (lambda d: d[:16] + struct.pack(">i", 100) + d[20:], "overruns"),
    (lambda d: d[:25] + struct.pack(">h", -2) + d[27:], "disagrees"),
    (lambda d: d[:25] + struct.pack(">h", 1) + d[27:], "disagrees"),
])
def test_batch_garbage(mutate, match):
    data = encode_batch_body([(0, b"hello", "K\x01V")])
    with pytest.raises(ProtocolError, match=match):
        decode_batch_body(mutate(data))


@given(st.binary(max_size=300))
def test_batch_garbage_never_raises_anything_else(data):
    try:
        out = decode_batch_body(data)
    except ProtocolError:
        return
    assert decode_batch_body(encode_batch_body(out)) == out


def test_batch_local_misuse():
    with pytest.raises(LocalProtocolError):
        encode_batch_body([(0, b"", "x" * 40000)])
    with pytest.raises(LocalProtocolError):
        encode_batch_body([(2 ** 31, b"", "")])
    with pytest.raises(LocalProtocolError):
        encode_batch_body([("0", b"", "")])


# -- fastjson bodies ---------------------------------------------------------------------
def test_fastjson_numeric_keys():
    text = ('{"brokerDatas":[{"brokerAddrs":{0:"127.0.0.1:10911",1:"127.0.0.1:10921"},"brokerName":"b",'
            '"cluster":"c"}],"queueDatas":[]}')
    assert loads_fastjson(text) == {"brokerDatas": [{"brokerAddrs": {"0": "127.0.0.1:10911", "1": "127.0.0.1:10921"},
                                                     "brokerName": "b", "cluster": "c"}], "queueDatas": []}
    assert loads_fastjson(b'{"offsetTable":{1:0, 2 : 15,-3:4}}') == {"offsetTable": {"1": 0, "2": 15, "-3": 4}}


def test_fastjson_object_keys_become_their_json_text():
    text = '{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:12,[1]:2}}'
    assert loads_fastjson(text) == {"offsetTable": {'{"brokerName":"b","queueId":0,"topic":"T"}': 12, "[1]": 2}}


def test_fastjson_standard_json_and_escapes():
    doc = {"a": "x\u0001y\"z", "b": [1, 2.5, True, None, {}], "c": "中"}
    assert loads_fastjson(json.dumps(doc)) == doc
    assert loads_fastjson('{0:"q\\"uote\\u0041",1:[{2:null}]}') == {"0": 'q"uoteA', "1": [{"2": None}]}


@pytest.mark.parametrize("text", ["", "{", "{0:}", "{0 1}", '{"a":1,}', "[1,,2]", '{"a":1} x', '{"a"', "{:1}",
                                  '{"a":bogus}', "}", "[" * 100000])
def test_fastjson_garbage_raises_value_error(text):
    with pytest.raises(ValueError):
        loads_fastjson(text)


@given(st.text(alphabet='{}[]:,"0123456789abtruenl \\', max_size=40))
def test_fastjson_never_raises_anything_but_value_error(text):
    try:
        loads_fastjson(text)
    except ValueError:
        pass


def test_dumps_json_is_standard_compact_utf8():
    out = dumps_json({"brokerAddrs": {"0": "h:1"}, "n": "中", "c": "\x01"})
    assert out == '{"brokerAddrs":{"0":"h:1"},"n":"中","c":"\\u0001"}'.encode()
    assert json.loads(out) == loads_fastjson(out)
