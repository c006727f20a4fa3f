"""Pulsar frames (reference pulsar-protocol.md §1). No I/O: bytes in, frames out.

A simple command is ``[totalSize][commandSize][BaseCommand]``; a payload command (SEND
from a client, MESSAGE from the broker) adds, after the command, an optional broker-entry
metadata block ``[0x0e02][size][BrokerEntryMetadata]``, an optional checksum
``[0x0e01][CRC-32C]``, then ``[metadataSize][MessageMetadata][payload]``. All sizes are
unsigned 32-bit big-endian; the checksum covers everything after itself. The broker
announces its largest message in CONNECTED and accepts frames up to that plus 10 KiB.
"""
from __future__ import annotations

import struct

import google_crc32c

from ...java_fields import as_java_long, as_uint64

__all__ = ["Frame", "FrameDecoder", "FrameError", "FrameTooLarge", "crc32c", "encode_simple", "encode_payload",
           "entry_of", "signed_id", "mask_of_ack_set", "ack_set_of_mask", "MAGIC_CHECKSUM", "MAGIC_BROKER_ENTRY_METADATA", "DEFAULT_MAX_MESSAGE_SIZE", "FRAME_PADDING"]

MAGIC_CHECKSUM = 0x0E01
MAGIC_BROKER_ENTRY_METADATA = 0x0E02
DEFAULT_MAX_MESSAGE_SIZE = 5 * 1024 * 1024     # maxMessageSize, announced in CONNECTED
FRAME_PADDING = 10 * 1024                      # MESSAGE_SIZE_FRAME_PADDING

_U32 = struct.Struct(">I")
_U16 = struct.Struct(">H")


class FrameError(ValueError):
    """Bytes that are not a Pulsar frame; the message says what is wrong in one line."""


class FrameTooLarge(FrameError):
    """A frame over the limit (maxMessageSize + 10 KiB): the connection cannot go on."""


def crc32c(data: bytes | memoryview) -> int:
    """CRC-32C (Castagnoli), as Pulsar checksums a message (zlib.crc32 is another CRC)."""
    return _crc32c_value(bytes(data))


_crc32c_value = google_crc32c.value             # (bytes only)


class Frame:
    """One frame. ``command`` is the serialized BaseCommand; for a payload command,
    ``entry`` is everything after the command and any broker-entry metadata — the
    magic, checksum, metadata and payload as sent — so a broker can store a SEND's
    entry and replay it after a MESSAGE unchanged, as Pulsar does. (A plain class: one
    is made per frame, and a frozen dataclass's __init__ costs a call per field.)"""

    __slots__ = ("command", "entry", "broker_entry_metadata")

    def __init__(self, command: bytes, entry: bytes | None = None, broker_entry_metadata: bytes | None = None):
        self.command = command
        self.entry = entry                      # None: a simple command
        self.broker_entry_metadata = broker_entry_metadata

    def __eq__(self, other) -> bool:
        return isinstance(other, Frame) and (self.command, self.entry, self.broker_entry_metadata) == \
            (other.command, other.entry, other.broker_entry_metadata)

    def __hash__(self) -> int:
        return hash((self.command, self.entry, self.broker_entry_metadata))

    def __repr__(self) -> str:
        return f"Frame(command={self.command!r}, entry={self.entry!r}, broker_entry_metadata=" \
               f"{self.broker_entry_metadata!r})"

    @property
    def has_checksum(self) -> bool:
        return self.entry is not None and len(self.entry) >= 2 and _U16.unpack_from(self.entry)[0] == MAGIC_CHECKSUM

    def checksum_ok(self) -> bool:
        """True when there is no checksum, or it matches what follows it."""
        if not self.has_checksum:
            return True
        if len(self.entry) < 6:
            return False
        return _U32.unpack_from(self.entry, 2)[0] == crc32c(memoryview(self.entry)[6:])

    def metadata_and_payload(self, *, checked: bool = False) -> tuple[bytes, bytes] | None:
        """(serialized MessageMetadata, payload) of a payload command; with ``checked``,
        None when its checksum is wrong. Every SEND takes this: a few calls, one pass of
        the CRC over the entry, two slices."""
        entry = self.entry
        if entry is None:
            raise FrameError("a simple command has no metadata")
        n = len(entry)
        at = 0
        if n >= 6 and entry[0] == 0x0E and entry[1] == 0x01:          # MAGIC_CHECKSUM
            if checked and _U32.unpack_from(entry, 2)[0] != _crc32c_value(entry[6:]):
                return None
            at = 6
        if n - at < 4:
            raise FrameError("payload command shorter than its metadata size")
        start = at + 4
        end = start + _U32.unpack_from(entry, at)[0]
        if end > n:
            raise FrameError(f"metadata size {end - start} runs past the frame ({n - start} bytes left)")
        return entry[start:end], entry[end:]


# uint64 ids carry -1 as 2^64 - 1 (reference §1): every uint64 a client sends is read as
# the Java broker reads it, a long
signed_id = as_java_long


def mask_of_ack_set(words) -> int:
    """An ack_set (int64 words, bit i of word k is index 64k + i) as one number."""
    return sum(as_uint64(w) << (64 * k) for k, w in enumerate(words))


def ack_set_of_mask(mask: int) -> list[int]:
    words = []
    while mask:
        words.append(signed_id(mask))
        mask >>= 64
    return words


def encode_simple(command: bytes) -> bytes:
    return _U32.pack(4 + len(command)) + _U32.pack(len(command)) + command


def entry_of(metadata: bytes, payload: bytes, checksum: bool = True) -> bytes:
    """``[0x0e01][crc][metadataSize][metadata][payload]`` (no checksum: from metadataSize on)."""
    body = _U32.pack(len(metadata)) + metadata + payload
    if not checksum:
        return body
    return _U16.pack(MAGIC_CHECKSUM) + _U32.pack(crc32c(body)) + body


def encode_payload(command: bytes, metadata: bytes | None = None, payload: bytes = b"", *, checksum: bool = True,
                   entry: bytes | None = None) -> bytes:
    """A payload command: give ``metadata`` and ``payload``, or a stored ``entry`` as is."""
    if entry is None:
        if metadata is None:
            raise ValueError("a payload command needs metadata or an entry")
        entry = entry_of(metadata, payload, checksum)
    rest = _U32.pack(len(command)) + command + entry
    return _U32.pack(len(rest)) + rest


class FrameDecoder:
    """Incremental: ``feed(bytes)`` returns the frames completed so far. A frame whose
    totalSize is over ``max_frame`` raises FrameTooLarge before its bytes are buffered."""

    def __init__(self, max_frame: int = DEFAULT_MAX_MESSAGE_SIZE + FRAME_PADDING) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()

    @property
    def pending(self) -> int:
        """Bytes of an unfinished frame held."""
        return len(self._buf)

    def feed(self, data: bytes) -> list[Frame]:
        buf = self._buf
        buf += data
        out = []
        pos = 0
        n = len(buf)
        view = memoryview(buf)
        try:
            while n - pos >= 4:
                total = _U32.unpack_from(buf, pos)[0]
                if total > self.max_frame:
                    raise FrameTooLarge(f"frame of {total} bytes is over the limit of {self.max_frame}")
                end = pos + 4 + total
                if end > n:
                    break
                out.append(_parse(view, pos + 4, end))
                pos = end
        finally:
            view.release()                      # (a bytearray with a view on it cannot shrink)
        del buf[:pos]
        return out


def _parse(view: memoryview, start: int, end: int) -> Frame:
    """The frame in ``view[start:end]`` (after its totalSize)."""
    if end - start < 4:
        raise FrameError(f"frame of {end - start} bytes has no command size")
    at = start + 4 + _U32.unpack_from(view, start)[0]
    if at > end:
        raise FrameError(f"command size {at - start - 4} runs past the frame of {end - start} bytes")
    command = bytes(view[start + 4:at])
    if at == end:
        return Frame(command)
    broker_meta = None
    if end - at >= 6 and view[at] == 0x0E and view[at + 1] == 0x02:        # MAGIC_BROKER_ENTRY_METADATA
        n = _U32.unpack_from(view, at + 2)[0]
        if at + 6 + n > end:
            raise FrameError(f"broker entry metadata of {n} bytes runs past the frame")
        broker_meta = bytes(view[at + 6:at + 6 + n])
        at += 6 + n
    return Frame(command, bytes(view[at:end]), broker_meta)
