"""The RocketMQ 4.x commit-log record, byte-exact, plus properties and message ids.

A record (all big-endian) is: TOTALSIZE i32, MAGICCODE i32 (0xDAA320A7), BODYCRC i32,
QUEUEID i32, FLAG i32, QUEUEOFFSET i64 (byte 20), PHYSICALOFFSET i64 (byte 28),
SYSFLAG i32 (byte 36), BORNTIMESTAMP i64, BORNHOST 4+4 (or 16+4 with sysFlag 0x10),
STORETIMESTAMP i64, STOREHOST 4+4 (or 16+4 with 0x20), RECONSUMETIMES i32,
PREPAREDTRANSACTIONOFFSET i64, BODY i32 len + bytes, TOPIC i8 len + bytes,
PROPERTIES i16 len + bytes. With IPv4 hosts the size is 91 + body + topic + properties.

The store ends the properties of every record it writes with RocketMQ 5.x's CRC
property (MessageConst.PROPERTY_CRC32, ``enabledAppendPropCRC``): ``__CRC32#`` = the CRC32
(& 0x7FFFFFFF) of every byte of the record before its last 20 — header, body, topic and
properties alike — as 10 decimal digits, least significant first. The body CRC of the
4.x format leaves the header and properties unchecked; this covers them in a format any
RocketMQ reader parses (a property is a property). Upstream writes ``k\x01v\x02`` pairs
and reserves ``__CRC32#\x01dddddddddd\x02``; this project writes no trailing separator,
so the same 20 bytes are ``\x02__CRC32#\x01dddddddddd`` (19, without the separator, when it
is the only property) — the CRC covers the same bytes as upstream's.

The same bytes are a PULL_MESSAGE / VIEW_MESSAGE_BY_ID / QUERY_MESSAGE body, so the
store hands records out unchanged and clients decode them with ``decode_record``.
This module is the only format contract between store, broker, client_sdk and
spark_analytics; it imports nothing of the project.
"""
from __future__ import annotations

import ipaddress
import struct
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterator

__all__ = [
    "MAGIC_CODE",
    "BLANK_MAGIC_CODE",
    "NAME_VALUE_SEPARATOR",
    "PROPERTY_SEPARATOR",
    "MAX_TOPIC_LENGTH",
    "MAX_PROPERTIES_LENGTH",
    "SysFlag",
    "Prop",
    "SCHEDULE_TOPIC", "TIMER_TOPIC", "RETRY_PREFIX", "POP_RETRY_SEPARATOR", "DLQ_PREFIX", "AUTO_CREATE_TOPIC_KEY",
    "TRANS_HALF_TOPIC", "TRANS_OP_HALF_TOPIC", "TRANS_CHECK_MAX_TIME_TOPIC",
    "NOT_ALLOWED_SEND_TOPICS", "SYSTEM_TOPICS", "SYSTEM_PREFIXES",
    "Host",
    "MessageRecord",
    "RecordError",
    "encode_record", "encode_usual",
    "decode_record",
    "iter_records",
    "record_size",
    "properties_to_string",
    "string_to_properties",
    "create_offset_msg_id",
    "decode_offset_msg_id",
    "java_string_hash",
    "tags_code",
    "parse_host",
    "blank_record",
    "peek_header",
    "PROP_CRC",
    "without_prop_crc",
    "prop_crc_digits",
    "prop_crc_check",
    "relocated",
    "SYSTEM_PROPERTY_KEYS",
]

MAGIC_CODE = 0xDAA320A7          # -626843481 as a signed int32
BLANK_MAGIC_CODE = 0xCBD43194    # -875286124: end-of-segment filler
NAME_VALUE_SEPARATOR = "\u0001"
PROPERTY_SEPARATOR = "\u0002"
MAX_TOPIC_LENGTH = 127           # the topic length is a signed byte
MAX_PROPERTIES_LENGTH = 32767    # the properties length is a signed int16
PROP_CRC = "__CRC32#"             # MessageConst.PROPERTY_CRC32 (RocketMQ 5.x)
PROP_CRC_NAME = b"\x02__CRC32#\x01"    # what precedes the 10 digits after other properties
PROP_CRC_ONLY = b"__CRC32#\x01"         # ... when it is the only property


class SysFlag:
    """MessageSysFlag bits."""

    COMPRESSED = 0x1
    MULTI_TAGS = 0x2
    TRANSACTION_PREPARED = 0x4
    TRANSACTION_COMMIT = 0x8
    TRANSACTION_ROLLBACK = 0xC
    TRANSACTION_MASK = 0xC
    BORNHOST_V6 = 0x10
    STOREHOST_V6 = 0x20
    NEED_UNWRAP = 0x40
    INNER_BATCH = 0x80


class Prop:
    """MessageConst property keys used by the retry / delay / DLQ machinery."""

    KEYS = "KEYS"
    TAGS = "TAGS"
    WAIT = "WAIT"
    DELAY = "DELAY"
    RETRY_TOPIC = "RETRY_TOPIC"
    REAL_TOPIC = "REAL_TOPIC"
    REAL_QID = "REAL_QID"
    ORIGIN_MESSAGE_ID = "ORIGIN_MESSAGE_ID"
    RECONSUME_TIME = "RECONSUME_TIME"
    MAX_RECONSUME_TIMES = "MAX_RECONSUME_TIMES"
    UNIQ_KEY = "UNIQ_KEY"
    CONSUME_START_TIME = "CONSUME_START_TIME"
    TRAN_MSG = "TRAN_MSG"
    MIN_OFFSET = "MIN_OFFSET"
    MAX_OFFSET = "MAX_OFFSET"
    CLUSTER = "CLUSTER"
    MSG_REGION = "MSG_REGION"
    TRACE_ON = "TRACE_ON"
    PGROUP = "PGROUP"
    # transactions: checks so far, the first check's delay (seconds), the first half's
    # queue offset (on the copies each check stores), the id the broker keeps for it
    TRANSACTION_CHECK_TIMES = "TRANSACTION_CHECK_TIMES"
    CHECK_IMMUNITY_TIME_IN_SECONDS = "CHECK_IMMUNITY_TIME_IN_SECONDS"
    TRAN_PREPARED_QUEUE_OFFSET = "TRAN_PREPARED_QUEUE_OFFSET"
    TRANSACTION_ID = "__transactionId__"
    # RocketMQ 5.x timer messages: an absolute delivery time, or one relative to the send
    TIMER_DELIVER_MS = "TIMER_DELIVER_MS"
    TIMER_DELAY_SEC = "TIMER_DELAY_SEC"
    TIMER_DELAY_MS = "TIMER_DELAY_MS"


# MessageConst.STRING_HASH_SET: names a user property may not take (putUserProperty refuses them).
SYSTEM_PROPERTY_KEYS = frozenset({
    "TRACE_ON", "MSG_REGION", "KEYS", "TAGS", "WAIT", "DELAY", "RETRY_TOPIC", "REAL_TOPIC", "REAL_QID",
    "TRAN_MSG", "PGROUP", "MIN_OFFSET", "MAX_OFFSET", "BUYER_ID", "ORIGIN_MESSAGE_ID", "TRANSFER_FLAG",
    "CORRECTION_FLAG", "MQ2_FLAG", "RECONSUME_TIME", "UNIQ_KEY", "MAX_RECONSUME_TIMES",
    "CONSUME_START_TIME", "TRAN_PREPARED_QUEUE_OFFSET", "TRANSACTION_CHECK_TIMES",
    "CHECK_IMMUNITY_TIME_IN_SECONDS", "INSTANCE_ID", "CORRELATION_ID", "REPLY_TO_CLIENT", "TTL",
    "ARRIVE_TIME", "PUSH_REPLY_TIME", "CLUSTER", "MSG_TYPE", "INNER_MULTI_DISPATCH",
    "INNER_MULTI_QUEUE_OFFSET", "__CRC32#",
})


# System topics whose names are part of the store's format, named once for every package.
SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"      # delay levels: queue L-1 holds level L
TIMER_TOPIC = "rmq_sys_wheel_timer"         # delayed to a timestamp (5.x TimerMessageStore's topic)
RETRY_PREFIX = "%RETRY%"
POP_RETRY_SEPARATOR = "+"                   # 5.x pop retry topics: %RETRY%<group>+<topic> (V2 naming)
DLQ_PREFIX = "%DLQ%"
AUTO_CREATE_TOPIC_KEY = "TBW102"
# Transactions: half messages wait in the half topic; the op topic records which are
# resolved; a half message checked transactionCheckMax times is discarded into the last.
TRANS_HALF_TOPIC = "RMQ_SYS_TRANS_HALF_TOPIC"
TRANS_OP_HALF_TOPIC = "RMQ_SYS_TRANS_OP_HALF_TOPIC"
TRANS_CHECK_MAX_TIME_TOPIC = "TRANS_CHECK_MAX_TIME_TOPIC"
# TopicValidator (4.9.8; 5.x adds the timer topic): topics a client may never send to,
# every system topic, and the prefixes that make a name a system one.
NOT_ALLOWED_SEND_TOPICS = frozenset({SCHEDULE_TOPIC, TIMER_TOPIC, TRANS_HALF_TOPIC, TRANS_OP_HALF_TOPIC,
                                     "RMQ_SYS_TRACE_TOPIC", "BenchmarkTest", "OFFSET_MOVED_EVENT", "SELF_TEST_TOPIC"})
SYSTEM_TOPICS = NOT_ALLOWED_SEND_TOPICS | {AUTO_CREATE_TOPIC_KEY, TRANS_CHECK_MAX_TIME_TOPIC}
SYSTEM_PREFIXES = ("rmq_sys_", "RMQ_SYS_")


# A host is (ip text, port): ("127.0.0.1", 10911). IPv6 sets the V6 sysFlag bits.
Host = tuple[str, int]

_HEAD = struct.Struct(">iIIiiqqiq")      # total, magic, crc, qid, flag, qoff, phys, sysflag, born_ts
_HOST4 = struct.Struct(">4si")
_HOST6 = struct.Struct(">16si")
_TS = struct.Struct(">q")
_MID = struct.Struct(">iq")              # reconsume times, prepared tx offset
_I32 = struct.Struct(">i")
_I16 = struct.Struct(">h")
_U32 = struct.Struct(">I")
_BLANK = struct.Struct(">iI")
_Q64 = struct.Struct(">q")


class RecordError(ValueError):
    """Bytes that are not a valid commit-log record (torn, corrupt, or foreign)."""


@lru_cache(maxsize=1024)
def _ip_bytes(ip: str) -> bytes:
    return ipaddress.ip_address(ip).packed


# IPv4 address text -> its 4 packed bytes, for encode_record and MessageStore.put's
# inlined encoder: a plain dict lookup instead of a call. Filled with the addresses
# encode_record has packed (a put from a new host goes through it once); bounded.
IPV4_PACKED: dict[str, bytes] = {}
_IPV4_PACKED_MAX = 4096


def _packed_ip(ip: str) -> bytes:
    """``_ip_bytes(ip)``, remembered in IPV4_PACKED when it is an IPv4 text."""
    raw = _ip_bytes(ip)
    if len(raw) == 4 and type(ip) is str:
        if len(IPV4_PACKED) >= _IPV4_PACKED_MAX:
            IPV4_PACKED.clear()
        IPV4_PACKED[ip] = raw
    return raw


@lru_cache(maxsize=1024)
def _ip_text(raw: bytes) -> str:
    return str(ipaddress.ip_address(raw))


def parse_host(text: str) -> Host:
    """'127.0.0.1:10911' → ('127.0.0.1', 10911); '[::1]:10911' also works."""
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bad host:port {text!r}")
    return host.strip("[]"), int(port)


def java_string_hash(s: str) -> int:
    """Java ``String.hashCode()`` as a signed 32-bit int (UTF-16 code units)."""
    h = 0
    if s.isascii():
        for ch in s.encode("ascii"):
            h = (31 * h + ch) & 0xFFFFFFFF
    else:
        data = s.encode("utf-16-be")
        for i in range(0, len(data), 2):
            h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


@lru_cache(maxsize=4096)
def tags_code(tags: str | None) -> int:
    """Consume-queue tagsCode: the Java hash of TAGS, 0 without tags."""
    return java_string_hash(tags) if tags else 0


def properties_to_string(props: dict[str, str], skip: str | None = None) -> str:
    """``k\\u0001v`` joined by ``\\u0002``, no trailing separator, None values (and the
    key ``skip``) left out."""
    # A list comprehension, not a generator: this runs on every put.
    return PROPERTY_SEPARATOR.join([f"{k}\u0001{v}" for k, v in props.items() if v is not None and k != skip])


def string_to_properties(text: str | None) -> dict[str, str]:
    """Parse a properties string with upstream's rules (``string2messageProperties``):
    split on char 2; in each segment the *first* char 1 must come after the first char
    and before the last one, so empty keys and empty values are dropped (a segment that
    starts with char 1 is dropped even if another char 1 follows). A trailing separator
    is fine; a repeated key keeps its last value."""
    out: dict[str, str] = {}
    if not text:
        return out
    for seg in text.split(PROPERTY_SEPARATOR):
        # partition splits at the first char 1: "k and v" is exactly 0 < i < len - 1
        k, _, v = seg.partition(NAME_VALUE_SEPARATOR)
        if k and v:
            out[k] = v
    return out


def prop_crc_digits(crc: int) -> bytes:
    """The CRC property's value: ``crc & 0x7FFFFFFF`` as 10 decimal digits, least
    significant first, padded with '0' (upstream's MessageDecoder.createCrc32)."""
    return (b"%d" % (crc & 0x7FFFFFFF))[::-1].ljust(10, b"0")


def without_prop_crc(text: str) -> str:
    """``text`` without its ``__CRC32#`` property: the stored string of a record, ready to
    be stored again (a retry, a delayed message due) with a CRC of its own."""
    if len(text) >= 19 and text[-19:-10] == "__CRC32#\u0001":      # where the store puts it
        cut = text[:-19]
        if cut.endswith(PROPERTY_SEPARATOR):
            cut = cut[:-1]
        if PROP_CRC not in cut:
            return cut
    props = string_to_properties(text)                 # anywhere else: set by a client
    props.pop(PROP_CRC, None)
    return properties_to_string(props)


def prop_crc_check(buf, pos: int, end: int, props_at: int) -> bool | None:
    """For a well-formed record at [pos, end) whose properties start at ``props_at``:
    None when they do not end with a CRC property (a record of another writer), else
    whether its CRC matches the record's bytes."""
    name_at = end - 19
    if name_at < props_at or buf[name_at:end - 10] != PROP_CRC_ONLY:
        return None
    if name_at > props_at and buf[name_at - 1] != 2:
        return None                     # "__CRC32#" inside another property's value
    digits = bytes(buf[end - 10:end])
    if not digits.isdigit():
        return False
    covered = name_at - 1 if name_at > props_at else name_at
    with memoryview(buf) as v:
        got = zlib.crc32(v[pos:covered]) & 0x7FFFFFFF
    return int(digits[::-1]) == got


def _props_at(data: bytes) -> int:
    """Where the properties of the (well-formed) encoded record ``data`` start."""
    sys_flag = _I32.unpack_from(data, 36)[0]
    body_len_at = 84 + (12 if sys_flag & SysFlag.BORNHOST_V6 else 0) + (12 if sys_flag & SysFlag.STOREHOST_V6 else 0)
    topic_at = body_len_at + 4 + _I32.unpack_from(data, body_len_at)[0]
    return topic_at + 3 + data[topic_at]


def relocated(data: bytes, phys: int) -> bytes:
    """An encoded record with PHYSICALOFFSET set to ``phys`` (the commit log moves a
    record that does not fit a segment to the next one) and its CRC property redone."""
    out = b"".join((data[:28], _Q64.pack(phys), data[36:]))
    props_at = _props_at(out)
    if prop_crc_check(out, 0, len(out), props_at) is None:
        return out
    name_at = len(out) - 19
    covered = name_at - 1 if name_at > props_at else name_at
    return out[:-10] + prop_crc_digits(zlib.crc32(memoryview(out)[:covered]))


def create_offset_msg_id(store_host: Host, phys_offset: int) -> str:
    """offsetMsgId: uppercase hex of store ip + port (i32) + commit-log offset (i64)."""
    ip, port = store_host
    return (_ip_bytes(ip) + struct.pack(">iq", port, phys_offset)).hex().upper()


def decode_offset_msg_id(msg_id: str) -> tuple[Host, int]:
    """Inverse of ``create_offset_msg_id``; 32 hex chars = IPv4, 56 = IPv6."""
    try:
        raw = bytes.fromhex(msg_id)
    except ValueError as exc:
        raise ValueError(f"not an offsetMsgId: {msg_id!r}") from exc
    if len(raw) == 16:
        ip_len = 4
    elif len(raw) == 28:
        ip_len = 16
    else:
        raise ValueError(f"not an offsetMsgId (expected 32 or 56 hex chars): {msg_id!r}")
    port, offset = struct.unpack_from(">iq", raw, ip_len)
    return (_ip_text(raw[:ip_len]), port), offset


@dataclass(slots=True)
class MessageRecord:
    """One commit-log record, decoded. ``properties`` is the parsed map; on encode the
    string form is rebuilt from it unless ``properties_text`` is given (the broker uses
    that to store RocketMQ's 'string computed before the map changed' quirks)."""

    topic: str
    body: bytes = b""
    queue_id: int = 0
    flag: int = 0
    properties: dict[str, str] = field(default_factory=dict)
    sys_flag: int = 0
    born_timestamp: int = 0
    born_host: Host = ("127.0.0.1", 0)
    store_timestamp: int = 0
    store_host: Host = ("127.0.0.1", 10911)
    reconsume_times: int = 0
    prepared_transaction_offset: int = 0
    queue_offset: int = 0
    commit_log_offset: int = 0
    body_crc: int = 0
    store_size: int = 0
    properties_text: str | None = None

    # -- convenient views --------------------------------------------------------
    @property
    def tags(self) -> str | None:
        return self.properties.get(Prop.TAGS)

    @property
    def keys(self) -> str | None:
        return self.properties.get(Prop.KEYS)

    @property
    def uniq_key(self) -> str | None:
        return self.properties.get(Prop.UNIQ_KEY)

    @property
    def offset_msg_id(self) -> str:
        return create_offset_msg_id(self.store_host, self.commit_log_offset)

    @property
    def msg_id(self) -> str:
        """What a client calls msgId: UNIQ_KEY when present, else the offsetMsgId."""
        return self.properties.get(Prop.UNIQ_KEY) or self.offset_msg_id

    def complete_stored_map(self) -> dict[str, str]:
        """``properties`` made the map its stored string parses to, for a record whose
        map the caller knows to be that but for the store's CRC property (a copy made from
        a stored record's map, just stored with the CRC property on): the CRC property set
        to the one the string ends with (the last 10 characters, after its name), or
        removed when the string does not end with it. Returns the map (the same dict).
        Cost: a slice and a comparison."""
        props = self.properties
        text = self.properties_text
        if text[-19:-10] == _PROP_CRC_ONLY_TEXT:     # its name and 10 digits end the string
            props[PROP_CRC] = text[-10:]
        elif PROP_CRC in props:
            del props[PROP_CRC]
        return props

    @property
    def delay_level(self) -> int:
        v = self.properties.get(Prop.DELAY)
        try:
            return int(v) if v else 0
        except ValueError:
            return 0


def _host_bytes(host: Host) -> bytes:
    ip, port = host
    return _ip_bytes(ip) + _I32.pack(port)


def record_size(body_len: int, topic_len: int, props_len: int, sys_flag: int = 0) -> int:
    """Total record size: 91 + body + topic + properties with IPv4 hosts."""
    extra = (12 if sys_flag & SysFlag.BORNHOST_V6 else 0) + (12 if sys_flag & SysFlag.STOREHOST_V6 else 0)
    return 91 + extra + body_len + topic_len + props_len


# The whole fixed part of an IPv4/IPv4 record plus the body length, packed in one call
# (the common case on every put): 84 + 4 bytes.
_FIXED_V4 = struct.Struct(">iIIiiqqiq4siq4siiqi")
_V6_BITS = SysFlag.BORNHOST_V6 | SysFlag.STOREHOST_V6
# What follows the head of an IPv4/IPv4 record, up to the body: born host, store
# timestamp, store host, reconsume times, prepared tx offset, body length.
_TAIL_V4 = struct.Struct(">4siq4siiqi")


@lru_cache(maxsize=1024)
def _topic_field(topic: str) -> bytes:
    """The TOPIC field (i8 length + UTF-8 bytes); raises RecordError when too long."""
    raw = topic.encode("utf-8")
    if len(raw) > MAX_TOPIC_LENGTH:
        raise RecordError(f"topic is {len(raw)} bytes; the limit is {MAX_TOPIC_LENGTH}")
    return bytes((len(raw),)) + raw


def encode_record(rec: MessageRecord, *, prop_crc: bool = False) -> bytes:
    """Encode ``rec`` as stored; fills ``body_crc``, ``store_size``, ``properties_text``
    and the V6 flags — only when encoding succeeds, so a rejected record is unchanged.
    ``prop_crc``: end the properties with the ``__CRC32#`` property (module doc), after
    dropping any the text had; ``properties_text`` is then the string with it.

    Raises RecordError when the topic exceeds 127 bytes or the properties 32767 bytes
    (struct.error / ValueError for out-of-range numbers or an unparsable host).
    """
    topic_f = _topic_field(rec.topic)
    text = rec.properties_text if rec.properties_text is not None else properties_to_string(rec.properties)
    crc_name = b""
    if prop_crc and PROP_CRC in text:
        text = without_prop_crc(text)
    props_b = text.encode("utf-8")
    props_len = len(props_b)
    if prop_crc:
        crc_name = PROP_CRC_NAME if props_b else PROP_CRC_ONLY
        if props_len + len(crc_name) + 10 <= MAX_PROPERTIES_LENGTH:
            props_len += len(crc_name) + 10
        else:       # 4.x's limit is on the client's properties: no room, no CRC property
            prop_crc = False
    if props_len > MAX_PROPERTIES_LENGTH:
        raise RecordError(f"properties are {props_len} bytes; the limit is {MAX_PROPERTIES_LENGTH}")
    born_ip, born_port = rec.born_host
    store_ip, store_port = rec.store_host
    try:
        born_raw = IPV4_PACKED[born_ip]
    except (KeyError, TypeError):
        born_raw = _packed_ip(born_ip)
    try:
        store_raw = IPV4_PACKED[store_ip]
    except (KeyError, TypeError):
        store_raw = _packed_ip(store_ip)
    body = rec.body
    body_len = len(body)
    crc = zlib.crc32(body)
    sys_flag = rec.sys_flag & ~_V6_BITS
    hosts_len = len(born_raw) + len(store_raw)
    if hosts_len == 8:
        total = 90 + body_len + len(topic_f) + props_len
        head = _FIXED_V4.pack(total, MAGIC_CODE, crc, rec.queue_id, rec.flag, rec.queue_offset,
                              rec.commit_log_offset, sys_flag, rec.born_timestamp, born_raw, born_port,
                              rec.store_timestamp, store_raw, store_port, rec.reconsume_times,
                              rec.prepared_transaction_offset, body_len)
    else:
        if len(born_raw) == 16:
            sys_flag |= SysFlag.BORNHOST_V6
        if len(store_raw) == 16:
            sys_flag |= SysFlag.STOREHOST_V6
        total = 82 + hosts_len + body_len + len(topic_f) + props_len
        head = b"".join((
            _HEAD.pack(total, MAGIC_CODE, crc, rec.queue_id, rec.flag, rec.queue_offset,
                       rec.commit_log_offset, sys_flag, rec.born_timestamp),
            born_raw, _I32.pack(born_port),
            _TS.pack(rec.store_timestamp),
            store_raw, _I32.pack(store_port),
            _MID.pack(rec.reconsume_times, rec.prepared_transaction_offset),
            _I32.pack(body_len),
        ))
    out = b"".join((head, body, topic_f, _I16.pack(props_len), props_b))
    if prop_crc:
        digits = prop_crc_digits(zlib.crc32(out))
        out = b"".join((out, crc_name, digits))
        text = text + crc_name.decode() + digits.decode()
    rec.sys_flag = sys_flag
    rec.body_crc = crc
    rec.store_size = total
    rec.properties_text = text
    return out


_props_len_fields: dict[int, bytes] = {}      # properties length -> its i16 field (<= 32768 entries)
_pack_fixed_v4 = _FIXED_V4.pack
_crc32 = zlib.crc32
_join = b"".join


_PROP_CRC_NAME_TEXT = PROP_CRC_NAME.decode()
_PROP_CRC_ONLY_TEXT = PROP_CRC_ONLY.decode()


def encode_usual(rec: MessageRecord, topic_field: bytes, queue_offset: int, phys: int, now_ms: int,
                 body_crc: int | None = None):
    """``encode_record(rec, prop_crc=True)`` for the usual record, faster: IPv4 hosts
    whose address text was packed before, the topic's field known (``topic_field``),
    properties that fit with the CRC property. Returns (bytes, body CRC, stored
    properties string, the CRC property included), or None for any other record (and any
    input it cannot take: the reference then says what is wrong with it). Reads ``rec``
    only: the caller fills its fields once the bytes are appended
    (tests/store/test_fast_put.py holds the two encoders equal byte for byte).
    ``body_crc``: the body's CRC32, when the caller knows it (not computed again).

    Cost: ten calls, all but this one in C (it runs for every record stored)."""
    try:
        text = rec.properties_text
        if text is None:
            text = properties_to_string(rec.properties)
        if "__CRC32#" in text:                  # a stored record's string, stored again
            text = without_prop_crc(text)
        props_b = text.encode()
        if props_b:
            crc_name, crc_name_text, props_len = PROP_CRC_NAME, _PROP_CRC_NAME_TEXT, len(props_b) + 20
        else:
            crc_name, crc_name_text, props_len = PROP_CRC_ONLY, _PROP_CRC_ONLY_TEXT, 19
        if props_len > MAX_PROPERTIES_LENGTH:
            return None
        born_ip, born_port = rec.born_host
        store_ip, store_port = rec.store_host
        born_raw = IPV4_PACKED[born_ip]         # KeyError: not a known IPv4 address text
        store_raw = IPV4_PACKED[store_ip]
        try:
            props_len_f = _props_len_fields[props_len]
        except KeyError:
            props_len_f = _props_len_fields[props_len] = _I16.pack(props_len)
        body = rec.body
        body_len = len(body)
        crc = _crc32(body) if body_crc is None else body_crc
        data = _join((_pack_fixed_v4(90 + body_len + len(topic_field) + props_len, MAGIC_CODE, crc, rec.queue_id,
                                     rec.flag, queue_offset, phys, rec.sys_flag & ~_V6_BITS, rec.born_timestamp,
                                     born_raw, born_port, now_ms, store_raw, store_port, rec.reconsume_times,
                                     rec.prepared_transaction_offset, body_len),
                      body, topic_field, props_len_f, props_b))
        # the CRC property (prop_crc_digits): every byte so far, least significant digit first
        digits = (b"%010d" % (_crc32(data) & 0x7FFFFFFF))[::-1]
        return data + crc_name + digits, crc, text + crc_name_text + digits.decode()
    except Exception:
        return None


def decode_record(buf: bytes | bytearray | memoryview, pos: int = 0, *, check_crc: bool = True,
                  with_body: bool = True) -> MessageRecord:
    """Decode the record at ``buf[pos:]``. Raises RecordError — and only RecordError —
    on a short buffer, a bad magic code, inconsistent lengths, undecodable text or
    (with ``check_crc``) a body CRC mismatch."""
    end = len(buf)
    if pos < 0 or end - pos < _HEAD.size:
        raise RecordError(f"torn record at {pos}: {end - pos} bytes left")
    total, magic, crc, qid, flag, qoff, phys, sys_flag, born_ts = _HEAD.unpack_from(buf, pos)
    if magic != MAGIC_CODE:
        raise RecordError(f"bad magic code 0x{magic:08X} at {pos}")
    fixed = 84 + (12 if sys_flag & SysFlag.BORNHOST_V6 else 0) + (12 if sys_flag & SysFlag.STOREHOST_V6 else 0)
    if total < fixed + 7:
        raise RecordError(f"bad record size {total} at {pos} (at least {fixed + 7})")
    if pos + total > end:
        raise RecordError(f"torn record at {pos}: size {total}, {end - pos} bytes left")
    stop = pos + total            # every field below lies inside [pos, stop)
    p = pos + _HEAD.size
    if not sys_flag & _V6_BITS:   # the common case: the rest of the fixed part in one call
        bip, bport, store_ts, sip, sport, recon, prep, body_len = _TAIL_V4.unpack_from(buf, p)
        born_host = (_ip_text(bip), bport)
        store_host = (_ip_text(sip), sport)
        p += _TAIL_V4.size
    else:
        if sys_flag & SysFlag.BORNHOST_V6:
            ip, port = _HOST6.unpack_from(buf, p); p += 20
        else:
            ip, port = _HOST4.unpack_from(buf, p); p += 8
        born_host = (_ip_text(bytes(ip)), port)
        (store_ts,) = _TS.unpack_from(buf, p); p += 8
        if sys_flag & SysFlag.STOREHOST_V6:
            ip, port = _HOST6.unpack_from(buf, p); p += 20
        else:
            ip, port = _HOST4.unpack_from(buf, p); p += 8
        store_host = (_ip_text(bytes(ip)), port)
        recon, prep = _MID.unpack_from(buf, p); p += 12
        (body_len,) = _I32.unpack_from(buf, p); p += 4
    # body, then at least the topic length byte and the properties length (3 bytes)
    if body_len < 0 or p + body_len + 3 > stop:
        raise RecordError(f"bad body length {body_len} at {pos}")
    body = bytes(buf[p:p + body_len]) if with_body or check_crc else b""
    if check_crc and zlib.crc32(body) != crc:
        raise RecordError(f"body CRC mismatch at {pos}")
    p += body_len
    topic_len = buf[p]; p += 1
    if topic_len > MAX_TOPIC_LENGTH or p + topic_len + 2 > stop:
        raise RecordError(f"bad topic length {topic_len} at {pos}")
    topic_raw = bytes(buf[p:p + topic_len]); p += topic_len
    (props_len,) = _I16.unpack_from(buf, p); p += 2
    if p + props_len != stop:
        raise RecordError(f"record at {pos}: lengths do not add up to its size {total}")
    try:
        topic = topic_raw.decode("utf-8")
        text = bytes(buf[p:stop]).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"record at {pos}: topic or properties are not UTF-8 ({exc.reason})") from None
    # positional, in field order (topic, body, queue_id, flag, properties, sys_flag,
    # born_timestamp, born_host, store_timestamp, store_host, reconsume_times,
    # prepared_transaction_offset, queue_offset, commit_log_offset, body_crc, store_size,
    # properties_text): half the cost of keywords, and this runs for every record read
    return MessageRecord(topic, body if with_body else b"", qid, flag, string_to_properties(text), sys_flag,
                         born_ts, born_host, store_ts, store_host, recon, prep, qoff, phys, crc, total, text)


def iter_records(buf: bytes | bytearray | memoryview, *, check_crc: bool = False,
                 with_body: bool = True) -> Iterator[MessageRecord]:
    """Decode concatenated records, e.g. a PULL_MESSAGE response body."""
    pos, end = 0, len(buf)
    while pos < end:
        rec = decode_record(buf, pos, check_crc=check_crc, with_body=with_body)
        pos += rec.store_size
        yield rec


def blank_record(remaining: int) -> bytes:
    """The end-of-segment filler header: size of the unused rest + BLANK magic."""
    return _BLANK.pack(remaining, BLANK_MAGIC_CODE)


def peek_header(buf: bytes | bytearray | memoryview, pos: int) -> tuple[int, int]:
    """(total size, magic code) of whatever starts at ``pos``; raises on < 8 bytes."""
    if len(buf) - pos < 8:
        raise RecordError(f"torn record header at {pos}")
    total, magic = _BLANK.unpack_from(buf, pos)
    return total, magic
