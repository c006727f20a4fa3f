"""The SEND_BATCH_MESSAGE body (``MessageDecoder.encodeMessages`` / ``decodesBatch``).

The body is the concatenation of one record per message, big-endian:
int32 totalSize (= 22 + bodyLen + propsLen, itself included), int32 magic (0),
int32 bodyCRC (0), int32 flag, int32 bodyLen + body, int16 propsLen + properties
(UTF-8 ``k\\x01v\\x02...``). Java ignores magic and CRC here, and so do we; a totalSize
that disagrees with the lengths inside the record is refused as garbage.

Cost: O(body bytes) each way; every inner body is copied once.
"""
from __future__ import annotations

from struct import Struct

from .errors import LocalProtocolError, ProtocolError

__all__ = ["encode_batch_body", "decode_batch_body"]

_HEAD = Struct(">iiiii")   # totalSize, magic, bodyCRC, flag, bodyLen
_PROPS_LEN = Struct(">h")
_FIXED = _HEAD.size + _PROPS_LEN.size   # 22


def encode_batch_body(messages) -> bytes:
    """Records for an iterable of (flag, body, properties_str). O(total size).
    LocalProtocolError if a flag is not an int32 or the properties exceed 32767 bytes."""
    parts = []
    for flag, body, props in messages:
        pb = (props or "").encode("utf-8", "replace")
        if len(pb) > 0x7FFF:
            raise LocalProtocolError(f"batch message properties of {len(pb)} bytes exceed 32767")
        body = bytes(body)
        try:
            parts.append(_HEAD.pack(_FIXED + len(body) + len(pb), 0, 0, flag, len(body)))
        except Exception as exc:  # struct.error / TypeError: flag out of range or not an int
            raise LocalProtocolError(f"cannot encode batch message flag {flag!r}: {exc}") from None
        parts += (body, _PROPS_LEN.pack(len(pb)), pb)
    return b"".join(parts)


def decode_batch_body(data: bytes) -> list[tuple[int, bytes, str]]:
    """The (flag, body, properties_str) records of a batch body; [] for an empty body.
    O(len(data)). ProtocolError on a truncated record, a negative length or a
    totalSize that does not match the record."""
    out = []
    pos, n = 0, len(data)
    while pos < n:
        if n - pos < _FIXED:
            raise ProtocolError(f"batch record at byte {pos} is cut short ({n - pos} bytes left)")
        total, _magic, _crc, flag, blen = _HEAD.unpack_from(data, pos)
        if blen < 0 or total < _FIXED or total > n - pos:
            raise ProtocolError(f"batch record at byte {pos}: totalSize {total}, bodyLen {blen}, "
                                f"{n - pos} bytes left")
        bs = pos + _HEAD.size
        ps = bs + blen
        if ps + 2 > pos + total:
            raise ProtocolError(f"batch record at byte {pos}: bodyLen {blen} overruns totalSize {total}")
        (plen,) = _PROPS_LEN.unpack_from(data, ps)
        if plen < 0 or _FIXED + blen + plen != total:
            raise ProtocolError(f"batch record at byte {pos}: totalSize {total} disagrees with bodyLen "
                                f"{blen} and propertiesLen {plen}")
        out.append((flag, bytes(data[bs:ps]), bytes(data[ps + 2:ps + 2 + plen]).decode("utf-8", "replace")))
        pos += total
    return out
