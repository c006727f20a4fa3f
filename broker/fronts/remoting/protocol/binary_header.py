"""The ROCKETMQ binary remoting header (serialize type 1), ``RocketMQSerializable``.

Layout, big-endian: int16 code, int8 language code, int16 version, int32 opaque,
int32 flag, int32 remark length + UTF-8 remark, int32 extFields length + entries of
[int16 key length, key, int32 value length, value]. 21 bytes with neither remark nor
extFields. A zero length means null, so an empty remark or an empty extFields map
decodes as None.

Stricter than Java on the way in (negative lengths, entries running past their
map, bytes after the map are all ProtocolError) and on the way out (a code or version
outside int16 is a LocalProtocolError instead of being silently truncated; the
emulator's own clock code 91001 therefore travels only in JSON headers). An unknown
language byte decodes as "OTHER"; an unknown language name encodes as OTHER (7).

Cost: O(header bytes), one ``struct`` call per field group plus one per map entry.
"""
from __future__ import annotations

from struct import Struct

from .codes import LanguageCode
from .command import RemotingCommand
from .errors import LocalProtocolError, ProtocolError
from .json_header import LANGUAGE_NAMES, ext_fields_out

__all__ = ["encode_rocketmq_header", "decode_rocketmq_header", "FIXED_SIZE"]

_FIXED = Struct(">hbhiii")   # code, language, version, opaque, flag, remark length
_I32 = Struct(">i")
_I16 = Struct(">h")
FIXED_SIZE = _FIXED.size + 4  # 21: with the extFields length
_CODES = {m.name: m.value for m in LanguageCode}
_OTHER = LanguageCode.OTHER.value


def encode_rocketmq_header(cmd: RemotingCommand) -> bytes:
    """The binary header bytes of ``cmd``. O(header size).

    Raises LocalProtocolError for a code/version outside int16, opaque/flag outside
    int32, a key longer than 32767 bytes, or malformed ext_fields."""
    lang = cmd.language
    lang_code = _CODES.get(lang, _OTHER) if isinstance(lang, str) else _language_code(lang)
    remark = cmd.remark
    if remark is None:
        rb = b""
    elif isinstance(remark, str):
        rb = remark.encode("utf-8", "replace")
    else:
        raise LocalProtocolError(f"remark must be a str or None, not {type(remark).__name__}")
    try:
        fixed = _FIXED.pack(cmd.code, lang_code, cmd.version, cmd.opaque, cmd.flag, len(rb))
    except Exception as exc:  # struct.error or TypeError: a field out of range or of the wrong type
        raise LocalProtocolError(f"cannot pack the binary header (code, version int16; opaque, flag int32): "
                                 f"{exc}") from None
    ext = cmd.ext_fields
    if not ext:
        return b"".join((fixed, rb, b"\0\0\0\0"))
    parts = []
    for k, v in ext_fields_out(ext).items():
        kb, vb = k.encode("utf-8", "replace"), v.encode("utf-8", "replace")
        if len(kb) > 0x7FFF:
            raise LocalProtocolError(f"ext_fields key of {len(kb)} bytes exceeds the int16 length field")
        parts += (_I16.pack(len(kb)), kb, _I32.pack(len(vb)), vb)
    eb = b"".join(parts)
    return b"".join((fixed, rb, _I32.pack(len(eb)), eb))


def _language_code(lang) -> int:
    if isinstance(lang, int) and not isinstance(lang, bool) and int(lang) in LANGUAGE_NAMES:
        return int(lang)
    raise LocalProtocolError(f"language must be a name or a LanguageCode, not {lang!r}")


def decode_rocketmq_header(header: bytes, body: bytes = b"") -> RemotingCommand:
    """The command a binary header describes, carrying ``body``. O(header size).

    Raises ProtocolError on a short header, a negative or overrunning length, or
    bytes left over after the extFields map."""
    n = len(header)
    if n < FIXED_SIZE:
        raise ProtocolError(f"binary header of {n} bytes is shorter than {FIXED_SIZE}")
    code, lang, version, opaque, flag, rlen = _FIXED.unpack_from(header, 0)
    pos = _FIXED.size
    if rlen < 0 or pos + rlen + 4 > n:
        raise ProtocolError(f"binary header remark length {rlen} overruns the header")
    remark = header[pos:pos + rlen].decode("utf-8", "replace") if rlen else None
    pos += rlen
    (elen,) = _I32.unpack_from(header, pos)
    pos += 4
    if elen < 0 or pos + elen != n:
        raise ProtocolError(f"binary header extFields length {elen} does not match the {n - pos} bytes left")
    ext = _decode_map(header, pos, n) if elen else None
    return RemotingCommand(code=code, ext_fields=ext, body=body, opaque=opaque, flag=flag, remark=remark,
                           language=LANGUAGE_NAMES.get(lang, "OTHER"), version=version, serialize_type=1)


def _decode_map(buf: bytes, pos: int, end: int) -> dict[str, str]:
    ext = {}
    while pos < end:
        if pos + 2 > end:
            raise ProtocolError("binary header extFields entry is cut short")
        (kl,) = _I16.unpack_from(buf, pos)
        pos += 2
        if kl < 0 or pos + kl + 4 > end:
            raise ProtocolError(f"binary header extFields key length {kl} overruns the map")
        key = buf[pos:pos + kl].decode("utf-8", "replace")
        pos += kl
        (vl,) = _I32.unpack_from(buf, pos)
        pos += 4
        if vl < 0 or pos + vl > end:
            raise ProtocolError(f"binary header extFields value length {vl} overruns the map")
        ext[key] = buf[pos:pos + vl].decode("utf-8", "replace")
        pos += vl
    return ext
