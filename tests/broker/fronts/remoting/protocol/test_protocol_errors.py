"""Remote garbage: every way a frame can be wrong raises ProtocolError and kills the decoder."""
import struct

import pytest

from rocketmq_emulator.broker.fronts.remoting.protocol import ProtocolError, RemotingCommand
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import FrameDecoder, decode, encode


def frame(header: bytes, body: bytes = b"", st: int = 0, *, length=None, header_len=None) -> bytes:
    hl = len(header) if header_len is None else header_len
    total = 4 + len(header) + len(body) if length is None else length
    return struct.pack(">iI", total, st << 24 | hl) + header + body


def binary(code=1, lang=0, version=409, opaque=1, flag=0, remark=b"", ext=b"", *, rlen=None, elen=None) -> bytes:
    return (struct.pack(">hbhiii", code, lang, version, opaque, flag, len(remark) if rlen is None else rlen)
            + remark + struct.pack(">i", len(ext) if elen is None else elen) + ext)


def entry(key: bytes, val: bytes, *, kl=None, vl=None) -> bytes:
    return (struct.pack(">h", len(key) if kl is None else kl) + key
            + struct.pack(">i", len(val) if vl is None else vl) + val)


def assert_refused(data: bytes, match: str, **kw):
    dec = FrameDecoder(**kw)
    with pytest.raises(ProtocolError, match=match):
        dec.feed(data)
    assert dec.error is not None
    # dead: even a perfectly good frame is refused afterwards
    with pytest.raises(ProtocolError, match="dead"):
        dec.feed(encode(RemotingCommand(code=1)))


@pytest.mark.parametrize("length", [0, 3, -1, -(2 ** 31)])
def test_length_below_4(length):
    assert_refused(struct.pack(">i", length) + b"\0" * 8, "below the minimum")


def test_length_below_4_is_seen_with_only_the_length_field():
    assert_refused(struct.pack(">i", 2), "below the minimum")


def test_length_above_max_frame_size():
    assert_refused(frame(b"{}", b"x" * 100), "exceeds the maximum", max_frame_size=64)
    assert_refused(struct.pack(">i", 16 * 1024 * 1024 + 1), "exceeds the maximum")


def test_header_length_beyond_frame():
    assert_refused(frame(b'{"code":1}', header_len=11), "bad header length")
    # seen as soon as the two ints are in, without waiting for the rest
    assert_refused(struct.pack(">iI", 100, 97), "bad header length")


@pytest.mark.parametrize("st", [2, 0x7F, 0xFF])
def test_unknown_serialize_type(st):
    assert_refused(frame(b'{"code":1}', st=st), "unknown serialize type")
    assert_refused(frame(b'{"code":1}', st=st)[:9], "unknown serialize type")  # incomplete frame too


@pytest.mark.parametrize("header", [b"", b"{not json", b'{"code":1', b"\xff\xfe", b"[" * 100000 + b"]" * 100000,
                                    b'{"code":1}x', b"NaN-garbage"])
def test_undecodable_json(header):
    assert_refused(frame(header), "undecodable JSON")


@pytest.mark.parametrize("header,match", [
    (b"[1,2]", "not an object"),
    (b'"code"', "not an object"),
    (b"12", "not an object"),
    (b"null", "not an object"),
    (b'{"opaque":1}', "no code"),
    (b'{"code":null}', "no code"),
    (b'{"code":"ten"}', "code is not an integer"),
    (b'{"code":{}}', "code is not an integer"),
    (b'{"code":2147483648}', "code 2147483648 does not fit"),
    (b'{"code":"2147483648"}', "code 2147483648 does not fit"),
    (b'{"code":1,"opaque":"x"}', "opaque is not an integer"),
    (b'{"code":1,"flag":-2147483649}', "flag -2147483649 does not fit"),
    (b'{"code":1,"version":[]}', "version is not an integer"),
    (b'{"code":1,"extFields":[]}', "extFields is not an object"),
    (b'{"code":1,"extFields":"a=b"}', "extFields is not an object"),
    (b'{"code":1,"language":["JAVA"]}', "language"),
    (b'{"code":1,"language":true}', "language"),
])
def test_json_header_of_the_wrong_shape(header, match):
    assert_refused(frame(header), match)


@pytest.mark.parametrize("header,expected", [
    (b'{"code":"10"}', (10, None)),
    (b'{"code":1.0,"opaque":"7"}', (1, None)),
    (b'{"code":true}', (1, None)),
    (b'{"code":1,"remark":{"a":1}}', (1, '{"a":1}')),
    (b'{"code":1,"remark":12}', (1, "12")),
])
def test_json_header_values_fastjson_converts_are_read(header, expected):
    """fastjson reads an int field from digits in a string, a fraction or a boolean, and a
    String field from any value (its text): the Java broker takes these headers."""
    [cmd] = FrameDecoder().feed(frame(header))
    assert (cmd.code, cmd.remark) == expected


@pytest.mark.parametrize("header,match", [
    (b"", "shorter than 21"),
    (binary()[:20], "shorter than 21"),
    (binary(remark=b"abc", rlen=-1), "remark length -1"),
    (binary(remark=b"abc", rlen=50), "remark length 50"),
    (binary(ext=entry(b"k", b"v"), elen=-3), "extFields length -3"),
    (binary(ext=entry(b"k", b"v"), elen=5), "does not match"),
    (binary(ext=entry(b"k", b"v"), elen=100), "does not match"),
    (binary() + b"trailing", "does not match"),
    (binary(ext=b"\x00"), "cut short"),
    (binary(ext=entry(b"k", b"v", kl=-1)), "key length -1"),
    (binary(ext=entry(b"k", b"v", kl=40)), "key length 40"),
    (binary(ext=entry(b"k", b"v", vl=-7)), "value length -7"),
    (binary(ext=entry(b"k", b"v", vl=9)), "value length 9"),
    (binary(ext=entry(b"k", b"v") + entry(b"kk", b"", vl=1)), "value length 1"),
])
def test_bad_binary_header(header, match):
    assert_refused(frame(header, st=1), match)


def test_good_binary_header_built_by_hand_is_accepted():
    h = binary(code=34, lang=9, remark=b"hi", ext=entry(b"k", b"v") + entry(b"e", b""))
    cmd = decode(frame(h, b"body", st=1))
    assert (cmd.code, cmd.language, cmd.remark, cmd.ext_fields, cmd.body) == (34, "GO", "hi", {"k": "v", "e": ""},
                                                                               b"body")


def test_frames_before_the_bad_one_are_lost_with_it_but_earlier_feeds_stand():
    dec = FrameDecoder()
    good = encode(RemotingCommand(code=1))
    assert len(dec.feed(good)) == 1
    with pytest.raises(ProtocolError):
        dec.feed(good + struct.pack(">i", 1))
    assert dec.pending == 0


def test_eof_in_the_middle_of_a_frame():
    dec = FrameDecoder()
    dec.feed(encode(RemotingCommand(code=1))[:-1])
    with pytest.raises(ProtocolError, match="closed with"):
        dec.eof()
    with pytest.raises(ProtocolError, match="dead"):
        dec.feed(b"x")


def test_eof_between_frames_is_clean():
    dec = FrameDecoder()
    dec.feed(encode(RemotingCommand(code=1)))
    dec.eof()
    assert dec.error is None


def test_decode_wants_exactly_one_frame():
    one = encode(RemotingCommand(code=1))
    with pytest.raises(ProtocolError, match="exactly one"):
        decode(one + one)
    with pytest.raises(ProtocolError, match="exactly one"):
        decode(one[:-1])
