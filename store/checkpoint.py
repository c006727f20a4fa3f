"""The checkpoint: what the last flush made durable, so opening need not re-read it.

It is a hint, never the truth — the log is the truth. A missing, unreadable or stale
checkpoint only makes opening slower (more records walked), never wrong.

Contents: the log end at that flush; per segment its length, the CRC32 of all those
bytes (``FileSegment.prefix_crc``, continued by each flush over its new bytes) and
whether it was sealed with a BLANK; the damaged ranges recovery found in them (so a
reopen that trusts the CRC still skips them); and per consume queue its entry count,
first offset and the CRC32 of those entries (so damaged or stale queue files are found
without reading the log).

The file is one header line, ``<crc32 of the document, 8 hex digits> <its length>``, then
the JSON document. Because the header vouches for the document, the file is rewritten
in place at each flush — no temporary file and rename, which on ext4 costs a forced
write-out of the new file each time (auto_da_alloc), a large part of a flush — and not
fsync'd: a write torn by a crash or a failed write, or one read half-done, fails its CRC
and only means a longer walk (the previous checkpoint is gone too, so the next open walks
the whole log); bytes left past the document by a shorter rewrite are ignored.
"""
from __future__ import annotations

import json
import zlib
from dataclasses import dataclass
from pathlib import Path

from .fsutil import overwrite_in_place

__all__ = ["Checkpoint", "SegmentMark", "QueueMark", "Damage", "load_checkpoint", "save_checkpoint",
           "CHECKPOINT_FORMAT"]

CHECKPOINT_FORMAT = "rocketmq-emulator-checkpoint"
_VERSION = 3          # 2: the header line; 3: whole-segment CRCs, damage, queue CRCs


@dataclass(frozen=True, slots=True)
class SegmentMark:
    base: int
    length: int
    crc: int
    sealed: bool


@dataclass(frozen=True, slots=True)
class QueueMark:
    count: int           # max offset: entries [base, count)
    base: int
    crc: int             # CRC32 of those entries' 20-byte records


@dataclass(frozen=True, slots=True)
class Damage:
    """Bytes [start, end) of the log that are not whole, valid records, with records
    after them: skipped, never served."""
    start: int
    end: int
    reason: str


@dataclass(frozen=True, slots=True)
class Checkpoint:
    log_end: int
    segments: tuple[SegmentMark, ...]
    queues: dict[tuple[str, int], QueueMark]
    damage: tuple[Damage, ...] = ()

    def segment(self, base: int) -> SegmentMark | None:
        for m in self.segments:
            if m.base == base:
                return m
        return None


def save_checkpoint(path: Path, ckpt: Checkpoint) -> None:
    queues: dict[str, dict[str, list[int]]] = {}
    for (topic, qid), m in sorted(ckpt.queues.items()):
        queues.setdefault(topic, {})[str(qid)] = [m.count, m.base, m.crc]
    doc = {
        "format": CHECKPOINT_FORMAT, "version": _VERSION, "logEnd": ckpt.log_end,
        "segments": [[m.base, m.length, m.crc, m.sealed] for m in ckpt.segments],
        "damage": [[d.start, d.end, d.reason] for d in ckpt.damage],
        "queues": queues,
    }
    body = json.dumps(doc, separators=(",", ":")).encode()
    data = b"%08x %d\n" % (zlib.crc32(body), len(body)) + body
    overwrite_in_place(path, data)


def load_checkpoint(path: Path) -> tuple[Checkpoint | None, str | None]:
    """(checkpoint, None), or (None, why not) when absent or unusable."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, "no checkpoint"
    except OSError as exc:
        return None, f"checkpoint unreadable ({exc})"
    header, _, rest = raw.partition(b"\n")
    try:
        crc_hex, length = header.split(b" ")
        crc, length = int(crc_hex, 16), int(length)
    except ValueError:
        return None, "checkpoint of an unknown format (no header line)"
    body = rest[:length]
    if len(body) != length or zlib.crc32(body) != crc:
        return None, "checkpoint torn (its CRC or length does not match)"
    try:
        doc = json.loads(body)
    except ValueError as exc:
        return None, f"checkpoint unreadable ({exc})"
    try:
        if doc.get("format") != CHECKPOINT_FORMAT or doc.get("version") != _VERSION:
            return None, "checkpoint of an unknown format"
        segments = tuple(SegmentMark(int(b), int(n), int(c), bool(s)) for b, n, c, s in doc["segments"])
        damage = tuple(Damage(int(a), int(b), str(why)) for a, b, why in doc["damage"])
        queues = {(topic, int(qid)): QueueMark(int(count), int(base), int(crc))
                  for topic, per in doc["queues"].items() for qid, (count, base, crc) in per.items()}
        return Checkpoint(int(doc["logEnd"]), segments, queues, damage), None
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        return None, f"checkpoint malformed ({exc!r})"
