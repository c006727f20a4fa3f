"""Decoding a PULL_MESSAGE body on the consumer side, one record at a time.

Upstream's client (MessageDecoder.decodes, 4.9.8) stops at the first record it cannot
decode, silently, and the consumer pulls on from the broker's nextBeginOffset: that
record and every record after it in the batch are never delivered. Here a record that
cannot be decoded (bad header, lengths that do not add up, text that is not UTF-8, a
COMPRESSED body that is not zlib data) is skipped and reported, and the others are
kept: decoding goes on after it when its own size leads to the next record's header;
when it does not, the body's rest cannot be framed, and the consumer is told to pull
again from just after the bad record (``resume_offset``) instead of from
nextBeginOffset, so the good records behind it are fetched again rather than lost.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass, field

from rocketmq_emulator.store.records import MAGIC_CODE, MessageRecord, RecordError, SysFlag, decode_record

__all__ = ["DamagedRecord", "DecodedBody", "decode_pull_body", "copy_stored"]

_FRAME = struct.Struct(">iI")           # total size, magic code
_QUEUE_OFFSET = struct.Struct(">q")
_QUEUE_OFFSET_AT = 20                   # after total size, magic, body CRC, queue id, flag
_SMALLEST_RECORD = 91                   # an IPv4 record with an empty body, topic and properties


@dataclass(slots=True)
class DamagedRecord:
    position: int                   # byte position in the body
    queue_offset: int | None        # None when its field is unreadable or implausible
    reason: str


@dataclass(slots=True)
class DecodedBody:
    records: list[MessageRecord] = field(default_factory=list)
    damaged: list[DamagedRecord] = field(default_factory=list)
    resume_offset: int | None = None    # pull again from here: the body's rest could not be framed


def decode_pull_body(body: bytes, requested_offset: int, next_begin_offset: int) -> DecodedBody:
    """Decode (and inflate) the records of a FOUND pull of ``requested_offset``; the
    broker said the next pull starts at ``next_begin_offset``."""
    out = DecodedBody()
    records = out.records
    pos, end = 0, len(body)
    past_damage = requested_offset      # no record after a damaged one has a smaller queue offset
    while pos < end:
        try:
            rec = decode_record(body, pos, check_crc=False)
            if rec.sys_flag & SysFlag.COMPRESSED:
                rec.body = zlib.decompress(rec.body)
        except (RecordError, zlib.error) as exc:
            lowest = max(past_damage, records[-1].queue_offset + 1) if records else past_damage
            offset = _queue_offset_at(body, pos, lowest, next_begin_offset)
            out.damaged.append(DamagedRecord(pos, offset, str(exc)))
            past_damage = (offset if offset is not None else lowest) + 1
            pos = _end_of_framed_record(body, pos)
            if pos is None:
                out.resume_offset = past_damage
                return out
            continue
        records.append(rec)
        pos += rec.store_size
    return out


def _queue_offset_at(body: bytes, pos: int, lowest: int, next_begin_offset: int) -> int | None:
    """The damaged record's queue offset field, if it is readable and in the range the
    pull covers."""
    if len(body) - pos < _QUEUE_OFFSET_AT + 8:
        return None
    (offset,) = _QUEUE_OFFSET.unpack_from(body, pos + _QUEUE_OFFSET_AT)
    return offset if lowest <= offset < next_begin_offset else None


def _end_of_framed_record(body: bytes, pos: int) -> int | None:
    """Where the record at ``pos`` ends, if its size can be trusted: its magic code is
    right and it ends at the body's end or at another record's header."""
    end = len(body)
    if end - pos < _FRAME.size:
        return None
    total, magic = _FRAME.unpack_from(body, pos)
    after = pos + total
    if magic != MAGIC_CODE or total < _SMALLEST_RECORD or after > end:
        return None
    if after == end:
        return after
    if end - after < _FRAME.size or _FRAME.unpack_from(body, after)[1] != MAGIC_CODE:
        return None
    return after


def copy_stored(rec: MessageRecord, props: dict) -> MessageRecord:
    """The consumer's own copy of a record an in-process broker keeps (``rec``, stored,
    with ``props`` its property map as stored): what ``decode_record`` of its bytes
    gives — the same fields, a map of its own — inflated like a decoded one."""
    # positional, in MessageRecord's field order (topic, body, queue_id, flag, properties,
    # sys_flag, born_timestamp, born_host, store_timestamp, store_host, reconsume_times,
    # prepared_transaction_offset, queue_offset, commit_log_offset, body_crc, store_size,
    # properties_text)
    copy = MessageRecord(rec.topic, rec.body, rec.queue_id, rec.flag, dict(props), rec.sys_flag, rec.born_timestamp,
                         rec.born_host, rec.store_timestamp, rec.store_host, rec.reconsume_times,
                         rec.prepared_transaction_offset, rec.queue_offset, rec.commit_log_offset, rec.body_crc,
                         rec.store_size, rec.properties_text)
    if rec.sys_flag & SysFlag.COMPRESSED:
        copy.body = zlib.decompress(rec.body)
    return copy
