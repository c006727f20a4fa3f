"""Frame codec round trips, partial feeds, what real clients send, and local misuse."""
import json
import struct

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import LanguageCode, LocalProtocolError, ProtocolError, RemotingCommand, mark_protocol_type
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import FrameDecoder, decode, decode_header, encode, encode_header


def json_frame(header: dict | bytes, body: bytes = b"") -> bytes:
    h = header if isinstance(header, bytes) else json.dumps(header).encode()
    return struct.pack(">ii", 4 + len(h) + len(body), len(h)) + h + body


FULL = dict(code=310, ext_fields={"a": "PG", "b": "Topic", "i": "TAGS\x01t\x02KEYS\x01k", "n": "é中"},
            body=b"\x00\x01body\xff", opaque=-5, flag=2, remark="remark ü", language="PYTHON", version=409)


@pytest.mark.parametrize("st", [0, 1])
def test_round_trip_with_remark_ext_and_body(st):
    cmd = RemotingCommand(**FULL, serialize_type=st)
    assert decode(encode(cmd)) == cmd


@pytest.mark.parametrize("st", [0, 1])
def test_round_trip_bare(st):
    cmd = RemotingCommand(code=0, serialize_type=st, language="JAVA")
    assert decode(encode(cmd)) == cmd


def test_json_keeps_empty_remark_and_ext_binary_reads_them_as_null():
    cmd = RemotingCommand(code=1, remark="", ext_fields={})
    assert decode(encode(cmd)) == cmd
    cmd.serialize_type = 1
    back = decode(encode(cmd))
    assert back.remark is None and back.ext_fields is None


@pytest.mark.parametrize("st", [0, 1])
def test_byte_by_byte_feed(st):
    cmds = [RemotingCommand(**FULL, serialize_type=st), RemotingCommand(code=11, opaque=9, serialize_type=st)]
    data = b"".join(encode(c) for c in cmds)
    dec, got = FrameDecoder(), []
    first_end = len(encode(cmds[0]))
    for i in range(len(data)):
        got += dec.feed(data[i:i + 1])
        assert len(got) == (i + 1 >= first_end) + (i + 1 == len(data))
    assert got == cmds and dec.pending == 0


def test_several_frames_in_one_feed_and_a_partial_tail():
    cmds = [RemotingCommand(code=c, opaque=c, body=bytes([c]) * c) for c in range(1, 40)]
    data = b"".join(encode(c) for c in cmds)
    tail = encode(RemotingCommand(code=99, opaque=99))
    dec = FrameDecoder()
    assert dec.feed(data + tail[:10]) == cmds
    assert dec.pending == 10
    assert dec.feed(tail[10:]) == [RemotingCommand(code=99, opaque=99)]
    assert dec.pending == 0


def test_large_frame_in_small_pieces():
    body = bytes(range(256)) * 4096  # 1 MiB
    frame = encode(RemotingCommand(code=11, body=body))
    dec = FrameDecoder()
    for i in range(0, len(frame) - 4096, 4096):
        assert dec.feed(frame[i:i + 4096]) == []
    (cmd,) = dec.feed(frame[i + 4096:])
    assert cmd.body == body


def test_feed_accepts_bytearray_and_memoryview_and_empty():
    frame = encode(RemotingCommand(code=5))
    dec = FrameDecoder()
    assert dec.feed(b"") == []
    assert dec.feed(bytearray(frame[:3])) == []
    assert dec.feed(memoryview(frame)[3:]) == [RemotingCommand(code=5)]


def test_frame_of_exactly_max_size_is_accepted():
    frame = encode(RemotingCommand(code=5, body=b"x" * 100))
    assert len(FrameDecoder(max_frame_size=len(frame) - 4).feed(frame)) == 1


def test_real_client_extfields_numbers_and_booleans_become_strings():
    # ali-ons: extFields values as JSON numbers and booleans, version 121, no serializeTypeCurrentRPC
    hdr = {"code": 310, "language": "JAVA", "opaque": 3, "flag": 0, "version": 121, "remark": None,
           "extFields": {"a": "G", "d": 4, "e": 0, "g": 1491978653614, "k": False, "m": True, "x": 1.5,
                         "z": None, "o": {"nested": [1, 2]}}}
    (cmd,) = FrameDecoder().feed(json_frame(hdr, b"hi"))
    assert cmd.ext_fields == {"a": "G", "d": "4", "e": "0", "g": "1491978653614", "k": "false", "m": "true",
                              "x": "1.5", "o": '{"nested":[1,2]}'}
    assert cmd.remark is None and cmd.body == b"hi" and cmd.version == 121
    assert cmd.header_int("d") == 4 and cmd.header_bool("m") is True


def test_language_by_name_by_int_unknown_and_missing():
    langs = []
    for lang in ("GO", 9, 12, 77, "SOMETHING", None):
        hdr = {"code": 1} if lang is None else {"code": 1, "language": lang}
        langs.append(decode(json_frame(hdr)).language)
    assert langs == ["GO", "GO", "RUST", "OTHER", "SOMETHING", "JAVA"]


def test_missing_int_fields_default_to_zero_and_extra_keys_are_ignored():
    cmd = decode(json_frame({"code": 34, "serializeTypeCurrentRPC": "JSON", "whatever": [1]}))
    assert (cmd.code, cmd.opaque, cmd.flag, cmd.version, cmd.ext_fields) == (34, 0, 0, 0, None)


def test_remark_numbers_are_stringified():
    assert decode(json_frame({"code": 1, "remark": 12})).remark == "12"


def test_invalid_utf8_becomes_replacement_char_like_java():
    h = b'{"code":1,"remark":"a\xffb"}'
    assert decode(json_frame(h)).remark == "a\ufffdb"


def test_binary_header_unknown_language_byte_is_other():
    h = bytearray(encode_header(RemotingCommand(code=1, serialize_type=1)))
    h[2] = 99
    assert decode_header(bytes(h), 1).language == "OTHER"


def test_encode_normalises_ext_values_and_language_enum():
    cmd = RemotingCommand(code=1, ext_fields={"n": 3, "b": True, "gone": None}, language=LanguageCode.GO)
    for st in (0, 1):
        cmd.serialize_type = st
        back = decode(encode(cmd))
        assert back.ext_fields == {"n": "3", "b": "true"} and back.language == "GO"


def test_encode_lone_surrogate_becomes_question_mark_like_java():
    assert decode(encode(RemotingCommand(code=1, remark="a\ud800b"))).remark == "a?b"


def test_encode_accepts_bytearray_body_and_none_body():
    assert decode(encode(RemotingCommand(code=1, body=bytearray(b"ab")))).body == b"ab"
    assert decode(encode(RemotingCommand(code=1, body=None))).body == b""


def test_clock_code_travels_in_json_only():
    from rocketmq_emulator.broker.fronts.remoting.protocol import EMULATOR_CLOCK_ADVANCE
    assert decode(encode(RemotingCommand(code=EMULATOR_CLOCK_ADVANCE))).code == EMULATOR_CLOCK_ADVANCE
    with pytest.raises(LocalProtocolError):
        encode(RemotingCommand(code=EMULATOR_CLOCK_ADVANCE, serialize_type=1))


@pytest.mark.parametrize("kw", [
    dict(serialize_type=5),
    dict(code=2 ** 31),
    dict(code="10"),
    dict(opaque=1.5),
    dict(code=40000, serialize_type=1),
    dict(version=70000, serialize_type=1),
    dict(remark=b"bytes"),
    dict(remark=3, serialize_type=1),
    dict(body="text"),
    dict(ext_fields={1: "x"}),
    dict(ext_fields=[("a", "b")]),
    dict(ext_fields={"k" * 40000: "v"}, serialize_type=1),
    dict(language=99),
    dict(language=3.0, serialize_type=1),
])
def test_local_misuse_raises_local_protocol_error(kw):
    with pytest.raises(LocalProtocolError):
        encode(RemotingCommand(**{"code": 1, **kw}))


def test_local_misuse_of_helpers():
    with pytest.raises(LocalProtocolError):
        mark_protocol_type(1 << 24, 0)
    with pytest.raises(LocalProtocolError):
        mark_protocol_type(1, 256)
    with pytest.raises(LocalProtocolError):
        FrameDecoder(max_frame_size=3)
    with pytest.raises(LocalProtocolError):
        FrameDecoder().feed("text")
    assert not issubclass(LocalProtocolError, ProtocolError) and not issubclass(ProtocolError, LocalProtocolError)
