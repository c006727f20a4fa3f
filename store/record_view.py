"""Reading fields straight out of raw records, without building a MessageRecord.

Recovery, consume-queue rebuilds, the key index and the timestamp search touch every
record they pass; decoding each into a MessageRecord (and its property dict) would cost
several µs per record. These helpers read only the fields needed, at offsets derived
from the sysFlag host bits, and apply exactly the parser rules of
``records.string_to_properties`` to the one property asked for.
"""
from __future__ import annotations

import struct
import zlib
from typing import NamedTuple

from .records import (_V6_BITS, MAGIC_CODE, MAX_TOPIC_LENGTH, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR,
                      RecordError, SysFlag, prop_crc_check)

__all__ = ["RecordFields", "RecordHead", "check_record", "fields", "head", "store_timestamp", "prop_value",
           "TX_SKIPPED"]

_HDR = struct.Struct(">iI")              # total size, magic
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_Q = struct.Struct(">q")
_QID_QOFF_PHYS_SYS = struct.Struct(">iiqqi")   # bytes 12..40: qid, flag, qoff, phys, sysflag
_CRC = struct.Struct(">I")

# Prepared and rollback transaction halves are logged but never dispatched to a
# consume queue (upstream CommitLogDispatcherBuildConsumeQueue), so their queue offset is 0.
TX_SKIPPED = (SysFlag.TRANSACTION_PREPARED, SysFlag.TRANSACTION_ROLLBACK)


def _body_len_at(sys_flag: int) -> int:
    """Offset of BODY's length field inside a record (84 with IPv4 hosts)."""
    return 84 + (12 if sys_flag & SysFlag.BORNHOST_V6 else 0) + (12 if sys_flag & SysFlag.STOREHOST_V6 else 0)


def _store_ts_at(sys_flag: int) -> int:
    return 56 + (12 if sys_flag & SysFlag.BORNHOST_V6 else 0)


def check_record(buf, pos: int, limit: int, phys: int) -> int:
    """Validate the record at ``buf[pos:]`` completely and return its size.

    ``limit`` is where readable bytes end; ``phys`` the log offset the record must say it
    is at (a record copied or shifted from elsewhere is as wrong as a torn one). Raises
    ValueError with the reason: short read, bad magic, bad length, bad body CRC, a record
    whose inner lengths do not add up, or a CRC property (``__CRC32#``, records.py) that
    does not match the record's other bytes.
    """
    if limit - pos < 8:
        raise ValueError(f"short read: {limit - pos} bytes where a record header should be")
    total, magic = _HDR.unpack_from(buf, pos)
    if magic != MAGIC_CODE:
        raise ValueError(f"bad magic code 0x{magic:08X}")
    if total < 91:
        raise ValueError(f"bad length {total}")
    if total > limit - pos:
        raise ValueError(f"short read: record of {total} bytes, {limit - pos} left")
    _, _, _, rec_phys, sys_flag = _QID_QOFF_PHYS_SYS.unpack_from(buf, pos + 12)
    bl_at = _body_len_at(sys_flag)
    if total < bl_at + 7:                # IPv6 hosts make the fixed part longer
        raise ValueError(f"bad length {total}")
    end = pos + total
    (body_len,) = _I32.unpack_from(buf, pos + bl_at)
    body_at = pos + bl_at + 4
    if body_len < 0 or body_at + body_len + 3 > end:
        raise ValueError(f"bad body length {body_len}")
    t_at = body_at + body_len
    topic_len = buf[t_at]
    if topic_len > MAX_TOPIC_LENGTH or t_at + 1 + topic_len + 2 > end:
        raise ValueError(f"bad topic length {topic_len}")
    (props_len,) = _I16.unpack_from(buf, t_at + 1 + topic_len)
    if t_at + 3 + topic_len + props_len != end:
        raise ValueError(f"lengths do not add up to the record size {total}")
    (crc,) = _CRC.unpack_from(buf, pos + 8)
    if zlib.crc32(memoryview(buf)[body_at:t_at]) != crc:
        raise ValueError("bad body CRC")
    if rec_phys != phys:
        raise ValueError(f"record says it is at offset {rec_phys}")
    if prop_crc_check(buf, pos, end, end - props_len) is False:
        raise ValueError("bad CRC property (__CRC32#): the header or properties are damaged")
    return total


class RecordFields:
    """The fields dispatch and indexing need, read from one record."""

    __slots__ = ("size", "queue_id", "queue_offset", "sys_flag", "store_timestamp", "topic", "properties")

    def __init__(self, size, queue_id, queue_offset, sys_flag, store_timestamp, topic, properties):
        self.size = size
        self.queue_id = queue_id
        self.queue_offset = queue_offset
        self.sys_flag = sys_flag
        self.store_timestamp = store_timestamp
        self.topic = topic
        self.properties = properties


_topic_caches: dict[str, dict[bytes, str]] = {"replace": {}, "strict": {}}


def _topic_text(raw: bytes, errors: str) -> str:
    """A topic's text; a run has few topics, so each is decoded once."""
    cache = _topic_caches[errors]
    topic = cache.get(raw)
    if topic is None:
        topic = raw.decode("utf-8", errors)
        if len(cache) < 65536:
            cache[raw] = topic
    return topic


def fields(buf, pos: int) -> RecordFields:
    """Fields of the (already validated) record at ``pos``; topic and properties as str."""
    total = _I32.unpack_from(buf, pos)[0]
    qid, _, qoff, _, sys_flag = _QID_QOFF_PHYS_SYS.unpack_from(buf, pos + 12)
    bl_at = pos + _body_len_at(sys_flag)
    (ts,) = _Q.unpack_from(buf, pos + _store_ts_at(sys_flag))
    t_at = bl_at + 4 + _I32.unpack_from(buf, bl_at)[0]
    tl = buf[t_at]
    topic = _topic_text(bytes(buf[t_at + 1:t_at + 1 + tl]), "replace")
    p_at = t_at + 3 + tl
    props = bytes(buf[p_at:pos + total]).decode("utf-8", "replace")
    return RecordFields(total, qid, qoff, sys_flag, ts, topic, props)


def store_timestamp(buf, pos: int = 0) -> int:
    """STORETIMESTAMP of the record at ``pos`` (its offset depends on the born host)."""
    (sys_flag,) = _I32.unpack_from(buf, pos + 36)
    return _Q.unpack_from(buf, pos + _store_ts_at(sys_flag))[0]


def prop_value(text: str, key: str) -> str | None:
    """``string_to_properties(text).get(key)`` without parsing the whole string.

    The value of the last segment that is exactly ``key`` + char 1 + a non-empty value
    (``key`` never contains the separators, so its first char 1 is right after it); a
    segment with an empty value is dropped by the parser and so is skipped here too.
    """
    needle = key + NAME_VALUE_SEPARATOR
    i = text.rfind(needle)
    while i >= 0:
        if i == 0 or text[i - 1] == PROPERTY_SEPARATOR:
            start = i + len(needle)
            end = text.find(PROPERTY_SEPARATOR, start)
            value = text[start:] if end < 0 else text[start:end]
            if value:
                return value
        i = text.rfind(needle, 0, i) if i > 0 else -1
    return None


class RecordHead(NamedTuple):
    """A record without its body and hosts' text: what accounting reads of every
    record. ``offset_msg_id`` is the broker's id (store host + commit-log offset, as
    ``records.create_offset_msg_id`` writes it); ``properties_text`` is unparsed — look
    values up with ``prop_value``. (A named tuple: one C call builds it.)"""

    size: int
    topic: str
    queue_id: int
    queue_offset: int
    commit_log_offset: int
    sys_flag: int
    reconsume_times: int
    offset_msg_id: str
    properties_text: str


# total, magic, (crc), qid, (flag), qoff, phys, sysflag — and, when both hosts are IPv4
# (no V6 sysFlag bit), the rest of the fixed part: (born timestamp, born host, store
# timestamp), the store host's 8 raw bytes (ip, port: the head of the offsetMsgId),
# reconsume times, (prepared offset), body length. One call for the usual record: the
# layout records._FIXED_V4 packs, with the fields a head does not need skipped.
_HEAD_V4 = struct.Struct(">iI4xi4xqqi8x8x8x8si8xi")
_new_head = tuple.__new__   # RecordHead(*fields) without the generated __new__


def head(buf, pos: int = 0) -> RecordHead:
    """The head of the record at ``buf[pos:]``, a few µs cheaper than ``decode_record``
    (no body copy, no host text, no property map). Raises RecordError on a short buffer,
    a bad magic code or lengths that do not add up; the body CRC is not checked."""
    end = len(buf)
    if pos < 0 or end - pos < 91:
        raise RecordError(f"torn record at {pos}: {end - pos} bytes left")
    total, magic, qid, qoff, phys, sys_flag, host, recon, body_len = _HEAD_V4.unpack_from(buf, pos)
    if magic != MAGIC_CODE:
        raise RecordError(f"bad magic code 0x{magic:08X} at {pos}")
    bl_at = pos + 84
    if sys_flag & _V6_BITS:             # the hosts are longer: read them where they are
        host_at = pos + _store_ts_at(sys_flag) + 8
        bl_at = pos + _body_len_at(sys_flag)
        if bl_at + 4 <= end:
            host = bytes(buf[host_at:bl_at - 12])
            (recon,) = _I32.unpack_from(buf, bl_at - 12)     # before the prepared offset (i64)
            (body_len,) = _I32.unpack_from(buf, bl_at)
    stop = pos + total
    if total < bl_at - pos + 7 or stop > end:
        raise RecordError(f"bad record size {total} at {pos}")
    t_at = bl_at + 4 + body_len
    if t_at < bl_at + 4 or t_at + 3 > stop:
        raise RecordError(f"bad body length at {pos}")
    tl = buf[t_at]
    p_at = t_at + 3 + tl
    if tl > MAX_TOPIC_LENGTH or p_at + _I16.unpack_from(buf, t_at + 1 + tl)[0] != stop:
        raise RecordError(f"record at {pos}: lengths do not add up to its size {total}")
    try:
        topic = _topic_text(bytes(buf[t_at + 1:t_at + 1 + tl]), "strict")
        text = str(buf[p_at:stop], "utf-8")         # (bytes or memoryview alike)
    except UnicodeDecodeError as exc:
        raise RecordError(f"record at {pos}: topic or properties are not UTF-8 ({exc.reason})") from None
    msg_id = (host + buf[pos + 28:pos + 36]).hex().upper()
    return _new_head(RecordHead, (total, topic, qid, qoff, phys, sys_flag, recon, msg_id, text))
