"""Frames of the RocketMQ 4.x remoting protocol, sans-I/O (bytes in, commands out).

A frame is ``int32 length | int32 (serializeType << 24 | headerLen) | header | body``,
big-endian, where length = 4 + headerLen + bodyLen counts everything after itself.
The header is JSON (type 0, ``json_header``) or the ROCKETMQ binary form (type 1,
``binary_header``). Nothing here touches a socket: ``encode`` returns bytes to write and
``FrameDecoder.feed`` takes whatever bytes arrived and returns the whole commands in them.

Theory of operation of the decoder: bytes of an unfinished frame wait in one bytearray;
``_need`` says how many must be buffered before parsing can move on (4 to see the
length, 8 to see the header length, then the whole frame), so a 16 MiB frame arriving in
small pieces costs one append per piece and one copy when it completes. The length and
header-length checks run as soon as their 4 bytes are in, so garbage is refused
without waiting for a frame that will never come. The first ProtocolError kills the
decoder: the peer's stream can no longer be re-synchronised.
"""
from __future__ import annotations

from struct import Struct

from .binary_header import decode_rocketmq_header, encode_rocketmq_header
from .command import RemotingCommand
from .errors import LocalProtocolError, ProtocolError
from .json_header import decode_json_header, encode_json_header

__all__ = ["encode", "encode_header", "decode_header", "decode", "mark_protocol_type", "FrameDecoder",
           "DEFAULT_MAX_FRAME_SIZE", "MAX_HEADER_LENGTH"]

DEFAULT_MAX_FRAME_SIZE = 16 * 1024 * 1024   # com.rocketmq.remoting.frameMaxLength
MAX_HEADER_LENGTH = 0xFFFFFF               # 24 bits
_PREFIX = Struct(">iI")                     # length, serialize type << 24 | header length
_I32 = Struct(">i")
_I32_MAX = (1 << 31) - 1


def mark_protocol_type(header_len: int, serialize_type: int) -> bytes:
    """The 4-byte second field of a frame: type in the high byte, length in the low 24
    bits (``RemotingCommand.markProtocolType``). O(1). LocalProtocolError if either
    does not fit."""
    if not 0 <= header_len <= MAX_HEADER_LENGTH:
        raise LocalProtocolError(f"header length {header_len} does not fit in 24 bits")
    if not 0 <= serialize_type <= 0xFF:
        raise LocalProtocolError(f"serialize type {serialize_type} does not fit in a byte")
    return bytes((serialize_type, header_len >> 16 & 0xFF, header_len >> 8 & 0xFF, header_len & 0xFF))


def encode_header(cmd: RemotingCommand) -> bytes:
    """The header bytes of ``cmd`` in its own ``serialize_type``. O(header size)."""
    st = cmd.serialize_type
    if st == 0:
        return encode_json_header(cmd)
    if st == 1:
        return encode_rocketmq_header(cmd)
    raise LocalProtocolError(f"unknown serialize type {st!r}")


def decode_header(header: bytes, serialize_type: int, body: bytes = b"") -> RemotingCommand:
    """The command a header of the given type describes, carrying ``body``. O(header
    size). ProtocolError on garbage or an unknown type."""
    if serialize_type == 0:
        return decode_json_header(header, body)
    if serialize_type == 1:
        return decode_rocketmq_header(header, body)
    raise ProtocolError(f"unknown serialize type {serialize_type}")


def encode(cmd: RemotingCommand) -> bytes:
    """One whole frame for ``cmd``. O(header + body): the body is copied once.

    LocalProtocolError if the command cannot be represented (see the header modules),
    its header exceeds 24 bits of length or the frame exceeds int32. The caller is
    responsible for staying under the peer's max frame size (16 MiB by default)."""
    st = cmd.serialize_type
    header = encode_json_header(cmd) if st == 0 else encode_header(cmd)
    body = cmd.body
    if body.__class__ is not bytes:
        if body is None:
            body = b""
        elif isinstance(body, (bytearray, memoryview)):
            body = bytes(body)
        else:
            raise LocalProtocolError(f"body must be bytes, not {type(body).__name__}")
    hl = len(header)
    if hl > MAX_HEADER_LENGTH:
        raise LocalProtocolError(f"header of {hl} bytes does not fit in 24 bits")
    total = 4 + hl + len(body)
    if total > _I32_MAX:
        raise LocalProtocolError(f"frame of {total} bytes does not fit in an int32 length")
    return b"".join((_PREFIX.pack(total, st << 24 | hl), header, body))


def decode(frame: bytes, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> RemotingCommand:
    """The command in ``frame``, which must hold exactly one whole frame. O(frame)."""
    dec = FrameDecoder(max_frame_size)
    cmds = dec.feed(frame)
    if len(cmds) != 1 or dec.pending:
        raise ProtocolError(f"expected exactly one frame, found {len(cmds)} and {dec.pending} bytes more")
    return cmds[0]


class FrameDecoder:
    """Incremental frame decoder for one connection (h11 style: no I/O of its own).

    ``feed(data)`` returns the commands completed by ``data`` (possibly none) and keeps
    any partial frame. Each command carries the frame's ``serialize_type`` so a reply
    goes back in the same form. Raises ProtocolError on a length < 4 or above
    ``max_frame_size``, a header length beyond the frame, an unknown serialize type, or
    a header that does not decode; after that every call raises again. Commands completed
    earlier in the call that raised are dropped with it: the connection is being closed.

    Cost: O(len(data)) per call, amortised; a frame is copied at most twice (out of the
    buffer, then into header and body slices)."""

    __slots__ = ("max_frame_size", "_buf", "_need", "_error")

    def __init__(self, max_frame_size: int = DEFAULT_MAX_FRAME_SIZE) -> None:
        if isinstance(max_frame_size, bool) or not isinstance(max_frame_size, int) or max_frame_size < 4:
            raise LocalProtocolError(f"max_frame_size must be an int >= 4, not {max_frame_size!r}")
        self.max_frame_size = max_frame_size
        self._buf = bytearray()
        self._need = 4
        self._error: ProtocolError | None = None

    @property
    def pending(self) -> int:
        """Bytes of an unfinished frame waiting for more data."""
        return len(self._buf)

    @property
    def error(self) -> ProtocolError | None:
        """The error that killed this decoder, or None while it is alive."""
        return self._error

    def feed(self, data: bytes) -> list[RemotingCommand]:
        if self._error is not None:
            raise ProtocolError(f"decoder is dead after an earlier error: {self._error}")
        if data.__class__ is not bytes:
            if isinstance(data, str):
                raise LocalProtocolError("feed() takes bytes, not str")
            data = bytes(data)
        if not data:
            return []
        buf = self._buf
        if buf:
            buf += data
            if len(buf) < self._need:
                return []
            data = bytes(buf)
            self._buf = bytearray()
        try:
            return self._parse(data)
        except ProtocolError as exc:
            self._error = exc
            self._buf = bytearray()
            raise

    def eof(self) -> None:
        """The peer closed the stream: ProtocolError if it left a frame unfinished."""
        if self._error is None and self._buf:
            self._error = ProtocolError(f"connection closed with {len(self._buf)} bytes of a frame unread")
            self._buf = bytearray()
            raise self._error

    def _check(self) -> None:
        """Invariants between calls, for randomized tests. O(1)."""
        buf = self._buf
        if self._error is not None:
            assert not buf
            return
        assert len(buf) < self._need, (len(buf), self._need)
        if len(buf) < 4:
            assert self._need == 4
        else:
            (total,) = _I32.unpack_from(buf, 0)
            assert 4 <= total <= self.max_frame_size
            assert self._need == (8 if len(buf) < 8 else 4 + total)

    def _parse(self, data: bytes) -> list[RemotingCommand]:
        out = []
        pos, n, limit = 0, len(data), self.max_frame_size
        unpack = _PREFIX.unpack_from
        while n - pos >= 8:
            total, typed = unpack(data, pos)
            if total < 4 or total > limit:
                raise _bad_length(total, limit)
            hl = typed & 0xFFFFFF
            if hl > total - 4:
                raise ProtocolError(f"bad header length {hl} for a frame of length {total}")
            end = pos + 4 + total
            if end > n:
                if typed >> 24 > 1:
                    raise ProtocolError(f"unknown serialize type {typed >> 24}")
                break
            hs = pos + 8
            he = hs + hl
            st = typed >> 24
            if st == 0:
                out.append(decode_json_header(data[hs:he], data[he:end]))
            elif st == 1:
                out.append(decode_rocketmq_header(data[hs:he], data[he:end]))
            else:
                raise ProtocolError(f"unknown serialize type {st}")
            pos = end
        if pos < n:
            self._stash(data[pos:] if pos else data, limit)
        else:
            self._need = 4
        return out

    def _stash(self, rest: bytes, limit: int) -> None:
        self._buf = bytearray(rest)
        if len(rest) < 4:
            self._need = 4
            return
        (total,) = _I32.unpack_from(rest, 0)
        if total < 4 or total > limit:
            raise _bad_length(total, limit)
        self._need = 8 if len(rest) < 8 else 4 + total


def _bad_length(total: int, limit: int) -> ProtocolError:
    if total < 4:
        return ProtocolError(f"frame length {total} is below the minimum of 4")
    return ProtocolError(f"frame length {total} exceeds the maximum frame size {limit}")
