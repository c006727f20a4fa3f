"""rocketmq-4x.md conformance checklist, items 1-12 and 17-18, one test per fact."""
import json
import struct

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import (LanguageCode, RemotingCommand, RequestCode, ResponseCode, SerializeType,
                             mark_protocol_type)
from rocketmq_emulator.broker.fronts.remoting.protocol.binary_header import encode_rocketmq_header
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import FrameDecoder, decode, encode
from rocketmq_emulator.broker.fronts.remoting.protocol.headers import send_header_v1_to_v2, send_header_v2_to_v1

from rocketmq_emulator.broker.core import BrokerCore
from rocketmq_emulator.delay_scheduler import VirtualClock
from tests.support.remoting import front_of


def _cmd(**kw):
    base = dict(code=RequestCode.HEART_BEAT, opaque=7, language="JAVA", version=409)
    base.update(kw)
    return RemotingCommand(**base)


@pytest.mark.parametrize("st", [0, 1])
def test_checklist_1_frame_layout_big_endian(st):
    cmd = _cmd(remark="r", ext_fields={"k": "v"}, body=b"BODY!", serialize_type=st)
    frame = encode(cmd)
    total, typed = struct.unpack(">ii", frame[:8])
    header_len = typed & 0xFFFFFF
    assert total == len(frame) - 4 == 4 + header_len + 5
    assert frame[8 + header_len:] == b"BODY!"
    assert typed == (st << 24) | header_len


def test_checklist_1_public_capture_95_byte_header():
    # a 95-byte JSON response header with an empty body travels as 00 00 00 63 | 00 00 00 5F
    header = b'{"code":0,"flag":1,"language":"JAVA","opaque":1,"serializeTypeCurrentRPC":"JSON","version":121}'
    assert len(header) == 95
    frame = bytes.fromhex("00000063 0000005F") + header
    assert encode(RemotingCommand(code=0, flag=1, opaque=1, language="JAVA", version=121)) == frame
    (cmd,) = FrameDecoder().feed(frame)
    assert (cmd.code, cmd.flag, cmd.opaque, cmd.version, cmd.body) == (0, 1, 1, 121, b"")


def test_checklist_2_serialize_type_is_the_high_byte():
    assert (SerializeType.JSON, SerializeType.ROCKETMQ) == (0, 1)
    json_frame = encode(_cmd(serialize_type=0))
    binary_frame = encode(_cmd(serialize_type=1))
    assert json_frame[4] == 0 and binary_frame[4] == 1
    assert struct.unpack(">i", binary_frame[4:8])[0] & 0xFFFFFF == 21
    assert decode(json_frame).serialize_type == 0
    assert decode(binary_frame).serialize_type == 1


def test_checklist_3_mark_protocol_type():
    assert mark_protocol_type(261, SerializeType.JSON) == bytes.fromhex("00000105")
    assert mark_protocol_type(0xFFFFFF, SerializeType.ROCKETMQ) == bytes.fromhex("01FFFFFF")
    assert mark_protocol_type(16777215, 1) == b"\x01\xff\xff\xff"


def test_checklist_4_flag_bits():
    req = RemotingCommand.request(RequestCode.PULL_MESSAGE)
    oneway = RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET, oneway=True)
    resp = req.response()
    assert (req.flag, resp.flag, oneway.flag) == (0, 1, 2)
    got = FrameDecoder().feed(encode(req) + encode(resp) + encode(oneway))
    assert [(c.is_response, c.is_oneway) for c in got] == [(False, False), (True, False), (False, True)]


@pytest.mark.parametrize("st", [0, 1])
def test_checklist_5_response_carries_the_request_opaque_and_serialize_type(st):
    req = RemotingCommand.request(RequestCode.GET_MAX_OFFSET, {"topic": "T", "queueId": 0})
    req.serialize_type = st
    (decoded,) = FrameDecoder().feed(encode(req))
    reply = decode(encode(decoded.response(ResponseCode.SUCCESS, ext_fields={"offset": 3})))
    assert reply.opaque == req.opaque and reply.is_response
    assert reply.serialize_type == st


def test_checklist_6_oneway_flag_survives_the_wire_and_the_core_stays_silent():
    (decoded,) = FrameDecoder().feed(encode(RemotingCommand.request(RequestCode.UPDATE_CONSUMER_OFFSET,
                                                                    {"topic": "T"}, oneway=True)))
    assert decoded.is_oneway and not decoded.is_response
    core = BrokerCore.in_memory(VirtualClock())
    try:
        chan = core.connect()
        assert front_of(core).handle(decoded, chan) is None  # a known oneway code: no reply at all
        unknown = decode(encode(RemotingCommand.request(9999, oneway=True)))
        reply = front_of(core).handle(unknown, chan)  # the one exception: REQUEST_CODE_NOT_SUPPORTED
        assert reply is not None and reply.code == ResponseCode.REQUEST_CODE_NOT_SUPPORTED
    finally:
        core.close()


def test_checklist_7_unknown_code_gets_3_not_supported_through_frames():
    assert ResponseCode.REQUEST_CODE_NOT_SUPPORTED == 3
    core = BrokerCore.in_memory(VirtualClock())
    try:
        req = RemotingCommand.request(4242)
        (decoded,) = FrameDecoder().feed(encode(req))
        reply = decode(encode(front_of(core).handle(decoded, core.connect())))
        assert (reply.code, reply.opaque, reply.is_response) == (3, req.opaque, True)
        assert "not supported" in reply.remark
    finally:
        core.close()


def test_checklist_8_json_header_shape():
    cmd = RemotingCommand(code=15, ext_fields={"queueId": 0, "k": False, "commitOffset": 12},
                          flag=2, language="JAVA", opaque=124131, version=115)
    header = encode(cmd)[8:]
    assert header == (b'{"code":15,"extFields":{"queueId":"0","k":"false","commitOffset":"12"},"flag":2,'
                      b'"language":"JAVA","opaque":124131,"serializeTypeCurrentRPC":"JSON","version":115}')
    obj = json.loads(header)
    assert list(obj) == sorted(obj)  # fastjson's alphabetical top-level keys
    assert all(isinstance(v, str) for v in obj["extFields"].values())
    assert "remark" not in obj  # null fields are omitted
    assert json.loads(encode(_cmd(language=LanguageCode.GO))[8:])["language"] == "GO"


def test_checklist_9_binary_header_21_bytes_bare():
    h = encode_rocketmq_header(_cmd(serialize_type=1))
    assert len(h) == 21
    assert h[13:17] == b"\0\0\0\0" and h[17:21] == b"\0\0\0\0"
    back = decode(encode(_cmd(serialize_type=1)))
    assert back.remark is None and back.ext_fields is None


def test_checklist_10_binary_header_34_bytes_with_remark():
    h = encode_rocketmq_header(_cmd(serialize_type=1, remark="Sample Remark"))
    assert len(h) == 34
    assert struct.unpack(">i", h[13:17])[0] == 13
    assert h[17:30] == b"Sample Remark"
    assert struct.unpack(">i", h[30:34])[0] == 0


def test_checklist_11_binary_header_35_bytes_with_ext():
    h = encode_rocketmq_header(_cmd(serialize_type=1, ext_fields={"key": "value"}))
    assert len(h) == 35
    assert struct.unpack(">i", h[17:21])[0] == 14 == 2 + 3 + 4 + 5
    assert decode(encode(_cmd(serialize_type=1, ext_fields={"key": "value"}))).ext_fields == {"key": "value"}


def test_checklist_12_system_response_codes():
    assert (ResponseCode.SUCCESS, ResponseCode.SYSTEM_ERROR, ResponseCode.SYSTEM_BUSY,
            ResponseCode.REQUEST_CODE_NOT_SUPPORTED) == (0, 1, 2, 3)


def test_checklist_17_send_v2_fields_a_to_g():
    v2 = {"a": "PG", "b": "T", "c": "TBW102", "d": "4", "e": "0", "f": "0", "g": "1491978653614"}
    assert send_header_v2_to_v1(v2) == {"producerGroup": "PG", "topic": "T", "defaultTopic": "TBW102",
                                        "defaultTopicQueueNums": "4", "queueId": "0", "sysFlag": "0",
                                        "bornTimestamp": "1491978653614"}
    assert send_header_v1_to_v2(send_header_v2_to_v1(v2)) == v2


def test_checklist_18_send_v2_fields_h_to_n():
    v2 = {"h": "0", "i": "TAGS\x01TAG\x02WAIT\x01true\x02", "j": "0", "k": "false", "l": "16", "m": "true",
          "n": "broker-a"}
    assert send_header_v2_to_v1(v2) == {"flag": "0", "properties": "TAGS\x01TAG\x02WAIT\x01true\x02",
                                        "reconsumeTimes": "0", "unitMode": "false", "maxReconsumeTimes": "16",
                                        "batch": "true", "bname": "broker-a"}
    assert send_header_v1_to_v2(send_header_v2_to_v1(v2)) == v2
