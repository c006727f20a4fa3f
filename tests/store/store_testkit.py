"""Helpers shared by the store tests (imported by name: pytest puts this directory on
sys.path for the test modules here)."""
from __future__ import annotations

import struct
import zlib
from pathlib import Path

from rocketmq_emulator.store import MessageStore, StoreConfig
from rocketmq_emulator.store.records import MessageRecord, decode_record, iter_records

SMALL = StoreConfig(segment_size=4096, consume_queue_entries_per_file=8)


def rec(topic: str = "T", body: bytes = b"m", queue_id: int = 0, *, tags: str | None = None,
        keys: str | None = None, uniq: str | None = None, **props: str) -> MessageRecord:
    p = {}
    if tags is not None:
        p["TAGS"] = tags
    if keys is not None:
        p["KEYS"] = keys
    if uniq is not None:
        p["UNIQ_KEY"] = uniq
    p.update(props)
    return MessageRecord(topic=topic, body=body, queue_id=queue_id, properties=p,
                         born_timestamp=1, born_host=("10.0.0.7", 51000), store_host=("127.0.0.1", 10911))


def fill(store: MessageStore, n: int, topic: str = "T", queues: int = 1, start_ms: int = 1_000, **kw):
    """Put n records round-robin over ``queues`` queues; returns the PutResults."""
    out = []
    for i in range(n):
        r = store.put(rec(topic, f"body-{i}".encode(), i % queues, **kw), start_ms + i)
        assert r.ok, r
        out.append(r)
    return out


def bodies(store: MessageStore, topic: str, queue_id: int) -> list[bytes]:
    """Every body of a queue in order, read through get_message."""
    out, off = [], store.min_offset(topic, queue_id)
    while True:
        res = store.get_message(topic, queue_id, off, 32)
        if not res.records:
            return out
        out += [decode_record(raw).body for raw in res.records]
        off = res.next_begin_offset


def snapshot(store: MessageStore) -> dict:
    """Everything observable, for before/after-reopen comparisons."""
    queues = {}
    for topic, qids in store.queues().items():
        for q in qids:
            entries = [store.queue_entry(topic, q, o) for o in range(store.min_offset(topic, q),
                                                                     store.max_offset(topic, q))]
            queues[(topic, q)] = (store.min_offset(topic, q), store.max_offset(topic, q), entries,
                                  [store.read(e[0]) for e in entries])
    return {"queues": queues, "offsets": store.offset_table(), "delay": store.delay_offsets(),
            "log": (store.commit_log_min_offset, store.commit_log_max_offset)}


def segment_files(root: Path) -> list[Path]:
    return sorted((root / "commitlog").iterdir())


def file_pos(root: Path, phys: int, segment_size: int) -> tuple[Path, int]:
    base = phys - phys % segment_size
    return root / "commitlog" / f"{base:020d}", phys - base


def patch(path: Path, pos: int, data: bytes) -> None:
    with open(path, "r+b") as f:
        f.seek(pos)
        f.write(data)


def reference_encode(topic: bytes, body: bytes, props: bytes, *, queue_id=0, flag=0, queue_offset=0, phys=0,
                     sys_flag=0, born_ts=0, born=(b"\x7f\0\0\1", 0), store_ts=0, store=(b"\x7f\0\0\1", 0),
                     reconsume=0, prepared=0) -> bytes:
    """The record layout of rocketmq-4x.md §3.1, field by field (independent of records.py)."""
    fields = [
        None,                                   # TOTALSIZE, filled below
        struct.pack(">i", -626843481),          # MAGICCODE
        struct.pack(">I", zlib.crc32(body)),    # BODYCRC
        struct.pack(">i", queue_id), struct.pack(">i", flag),
        struct.pack(">q", queue_offset), struct.pack(">q", phys),
        struct.pack(">i", sys_flag), struct.pack(">q", born_ts),
        born[0] + struct.pack(">i", born[1]),
        struct.pack(">q", store_ts),
        store[0] + struct.pack(">i", store[1]),
        struct.pack(">i", reconsume), struct.pack(">q", prepared),
        struct.pack(">i", len(body)) + body,
        struct.pack(">b", len(topic)) + topic,
        struct.pack(">h", len(props)) + props,
    ]
    rest = b"".join(fields[1:])
    return struct.pack(">i", 4 + len(rest)) + rest


def reference_encode_with_crc(topic: bytes, body: bytes, props: bytes, **fields) -> bytes:
    """``reference_encode`` plus RocketMQ 5.x's CRC property as the store appends it: the
    CRC32 & 0x7FFFFFFF of all but the last 20 bytes ("\x02__CRC32#\x01" and 10 digits,
    least significant first; 19 bytes when no other property precedes)."""
    name = b"\x02__CRC32#\x01" if props else b"__CRC32#\x01"
    provisional = reference_encode(topic, body, props + name + b"0" * 10, **fields)
    crc = zlib.crc32(provisional[:-len(name) - 10]) & 0x7FFFFFFF
    return provisional[:-10] + str(crc)[::-1].ljust(10, "0").encode()


__all__ = ["SMALL", "rec", "fill", "bodies", "snapshot", "segment_files", "file_pos",
           "patch", "reference_encode", "reference_encode_with_crc", "iter_records"]
