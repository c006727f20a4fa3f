"""Hypothesis: garbage in any chunking raises ProtocolError or nothing, and finishes;
valid commands round-trip under any chunking; chunking never changes the outcome."""
import json
import struct

from hypothesis import given, settings
from hypothesis import strategies as st

from rocketmq_emulator.broker.fronts.remoting.protocol import LanguageCode, ProtocolError, RemotingCommand
from rocketmq_emulator.broker.fronts.remoting.protocol.codec import FrameDecoder, encode

FUZZ = settings(deadline=2000)  # "never hangs": every example finishes well inside this
TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
I32 = st.integers(-2 ** 31, 2 ** 31 - 1)
I16 = st.integers(-2 ** 15, 2 ** 15 - 1)


@st.composite
def commands(draw, serialize_type=None):
    stype = draw(st.sampled_from([0, 1])) if serialize_type is None else serialize_type
    small = stype == 1
    text = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=30) if small else TEXT
    ext = st.dictionaries(TEXT, TEXT, min_size=1 if small else 0, max_size=6)
    return RemotingCommand(
        code=draw(I16 if small else I32),
        ext_fields=draw(st.none() | ext),
        body=draw(st.binary(max_size=200)),
        opaque=draw(I32),
        flag=draw(st.sampled_from([0, 1, 2, 3]) | I32),
        remark=draw(st.none() | text),
        language=draw(st.sampled_from([m.name for m in LanguageCode])),
        version=draw(I16 if small else I32),
        serialize_type=stype,
    )


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({min(c, len(data)) for c in cuts})
    pieces, last = [], 0
    for p in points + [len(data)]:
        pieces.append(data[last:p])
        last = p
    return pieces


def run(pieces: list[bytes]):
    """(commands decoded before any error, error or None), feeding piece by piece."""
    dec, got = FrameDecoder(max_frame_size=4096), []
    for piece in pieces:
        try:
            got += dec.feed(piece)
            dec._check()
        except ProtocolError as exc:
            dec._check()
            try:
                dec.feed(b"\0\0\0\x10")
            except ProtocolError:
                return got, exc
            raise AssertionError("a dead decoder accepted more data") from None
    return got, None


CUTS = st.lists(st.integers(0, 3000), max_size=12)


@FUZZ
@given(st.lists(commands(), max_size=5), CUTS)
def test_valid_commands_round_trip_under_any_chunking(cmds, cuts):
    data = b"".join(encode(c) for c in cmds)
    got, err = run(split(data, cuts))
    assert err is None
    assert got == cmds


@FUZZ
@given(commands(), st.data())
def test_every_single_byte_boundary(cmd, data):
    frame = encode(cmd)
    cut = data.draw(st.integers(0, len(frame)))
    assert run([frame[:cut], frame[cut:]]) == ([cmd], None)


# -- garbage ---------------------------------------------------------------------------------
JSON_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2 ** 40, 2 ** 40) | st.floats() | TEXT,
                           lambda kids: st.lists(kids, max_size=4) | st.dictionaries(TEXT, kids, max_size=4),
                           max_leaves=12)
JSON_HEADERS = st.fixed_dictionaries({}, optional={
    "code": JSON_VALUES | I32, "extFields": JSON_VALUES | st.dictionaries(TEXT, JSON_VALUES, max_size=4),
    "flag": JSON_VALUES | I32, "language": JSON_VALUES | st.sampled_from(["JAVA", "GO"]),
    "opaque": JSON_VALUES | I32, "remark": JSON_VALUES, "version": JSON_VALUES | I32,
}).map(lambda d: json.dumps(d).encode()) | JSON_VALUES.map(lambda v: json.dumps(v).encode())


@st.composite
def binary_headers(draw):
    fixed = struct.pack(">hbhii", draw(I16), draw(st.integers(-128, 127)), draw(I16), draw(I32), draw(I32))
    remark = draw(st.binary(max_size=12))
    entries = b"".join(struct.pack(">h", draw(st.integers(-2, 12))) + draw(st.binary(max_size=10))
                       + struct.pack(">i", draw(st.integers(-2, 12))) + draw(st.binary(max_size=10))
                       for _ in range(draw(st.integers(0, 3))))
    rlen = draw(st.just(len(remark)) | st.integers(-3, 40))
    elen = draw(st.just(len(entries)) | st.integers(-3, 60))
    return fixed + struct.pack(">i", rlen) + remark + struct.pack(">i", elen) + entries


@st.composite
def plausible_frames(draw):
    """Frames with mostly-right framing and arbitrary headers, to reach the header decoders."""
    stype = draw(st.sampled_from([0, 1, 2]))
    header = draw(JSON_HEADERS if stype == 0 else binary_headers() | st.binary(max_size=40))
    body = draw(st.binary(max_size=20))
    total = draw(st.just(4 + len(header) + len(body)) | st.integers(-5, 5000))
    hl = draw(st.just(len(header)) | st.integers(0, 0xFFFFFF))
    return struct.pack(">iI", total, stype << 24 | hl) + header + body


GARBAGE = st.lists(st.binary(max_size=64) | plausible_frames() | commands().map(encode), min_size=1, max_size=5)


@FUZZ
@given(GARBAGE, CUTS)
def test_garbage_raises_only_protocol_error_and_chunking_does_not_matter(parts, cuts):
    data = b"".join(parts)
    whole = run([data])
    chunked = run(split(data, cuts))
    bytewise = run([data[i:i + 1] for i in range(len(data))])
    assert (whole[1] is None) == (chunked[1] is None) == (bytewise[1] is None)
    # a feed that raises loses the frames completed in it, so byte by byte sees the most
    assert chunked[0] == bytewise[0][:len(chunked[0])]
    assert whole[0] == bytewise[0][:len(whole[0])]
    if bytewise[1] is None:
        assert whole[0] == chunked[0] == bytewise[0]
    for cmd in bytewise[0]:
        assert isinstance(cmd.code, int) and (cmd.ext_fields is None or all(
            isinstance(k, str) and isinstance(v, str) for k, v in cmd.ext_fields.items()))
        assert cmd.remark is None or isinstance(cmd.remark, str)


@FUZZ
@given(st.binary(max_size=2000), CUTS)
def test_arbitrary_bytes_never_raise_anything_else(data, cuts):
    run(split(data, cuts))


@FUZZ
@given(GARBAGE)
def test_whatever_decodes_can_be_encoded_again(parts):
    got, _ = run([b"".join(parts)])
    for cmd in got:
        (back,) = FrameDecoder().feed(encode(cmd))  # a reply built from it never trips the encoder
        assert (back.code, back.opaque, back.flag, back.version, back.body) == (
            cmd.code, cmd.opaque, cmd.flag, cmd.version, cmd.body)



@FUZZ
@given(st.dictionaries(st.text(max_size=12), st.text(max_size=40), max_size=15))
def test_ext_fields_json_is_what_json_dumps_writes_on_both_encoder_paths(ext):
    # The header encoder reuses CPython's C encoder when it can and falls back to a
    # portable one; lone surrogates included, both must write json.dumps's text.
    from rocketmq_emulator.broker.fronts.remoting.protocol.json_header import _object_of_strings, _strings_object, decode_json_header, \
        encode_json_header

    expected = json.dumps(ext, ensure_ascii=False, separators=(",", ":"))
    assert _strings_object(ext) == expected
    assert _object_of_strings(ext) == expected
    if not any(0xD800 <= ord(c) <= 0xDFFF for kv in ext.items() for text in kv for c in text):
        assert decode_json_header(encode_json_header(RemotingCommand(code=1, ext_fields=ext))).ext_fields == ext
