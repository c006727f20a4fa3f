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
from dataclasses import dataclass

import google_crc32c

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
    return google_crc32c.value(bytes(data))


@dataclass(frozen=True, slots=True)
class Frame:
    """One frame. ``command`` is the serialized BaseCommand; for a payload command,
    ``entry`` is everything after the command and any broker-entry metadata — the
    magic, checksum, metadata and payload as sent — so a broker can store a SEND's
    entry and replay it after a MESSAGE unchanged, as Pulsar does."""

    command: bytes
    entry: bytes | None = None                 # None: a simple command
    broker_entry_metadata: bytes | None = None

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
        None when its checksum is wrong (one pass over the entry: every SEND takes it)."""
        entry = self.entry
        if entry is None:
            raise FrameError("a simple command has no metadata")
        if len(entry) >= 6 and entry[0] == 0x0E and entry[1] == 0x01:          # MAGIC_CHECKSUM
            body = memoryview(entry)[6:]
            if checked and _U32.unpack_from(entry, 2)[0] != crc32c(body):
                return None
        else:
            body = memoryview(entry)
        if len(body) < 4:
            raise FrameError("payload command shorter than its metadata size")
        size = _U32.unpack_from(body)[0]
        if 4 + size > len(body):
            raise FrameError(f"metadata size {size} runs past the frame ({len(body) - 4} bytes left)")
        return bytes(body[4:4 + size]), bytes(body[4 + size:])


def signed_id(v: int) -> int:
    """uint64 ids carry -1 as 2^64 - 1 (reference §1)."""
    return v - (1 << 64) if v >= 1 << 63 else v


def mask_of_ack_set(words) -> int:
    """An ack_set (int64 words, bit i of word k is index 64k + i) as one number."""
    return sum((w & 0xFFFFFFFFFFFFFFFF) << (64 * k) for k, w in enumerate(words))


def ack_set_of_mask(mask: int) -> list[int]:
    words = []
    while mask:
        words.append(signed_id(mask & 0xFFFFFFFFFFFFFFFF))
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
        while len(buf) - pos >= 4:
            total = _U32.unpack_from(buf, pos)[0]
            if total > self.max_frame:
                raise FrameTooLarge(f"frame of {total} bytes is over the limit of {self.max_frame}")
            if len(buf) - pos - 4 < total:
                break
            out.append(_parse(memoryview(buf)[pos + 4:pos + 4 + total]))
            pos += 4 + total
        del buf[:pos]
        return out


def _parse(frame: memoryview) -> Frame:
    if len(frame) < 4:
        raise FrameError(f"frame of {len(frame)} bytes has no command size")
    size = _U32.unpack_from(frame)[0]
    if 4 + size > len(frame):
        raise FrameError(f"command size {size} runs past the frame of {len(frame)} bytes")
    command = bytes(frame[4:4 + size])
    rest = frame[4 + size:]
    if not len(rest):
        return Frame(command)
    broker_meta = None
    if len(rest) >= 6 and _U16.unpack_from(rest)[0] == MAGIC_BROKER_ENTRY_METADATA:
        n = _U32.unpack_from(rest, 2)[0]
        if 6 + n > len(rest):
            raise FrameError(f"broker entry metadata of {n} bytes runs past the frame")
        broker_meta = bytes(rest[6:6 + n])
        rest = rest[6 + n:]
    return Frame(command, bytes(rest), broker_meta)
