"""The checkpoint: what the last flush made durable, so opening need not re-read it.

It is a hint, never the truth — the log is the truth. A missing, unreadable or stale
checkpoint only makes opening slower (more records walked), never wrong. So it is
replaced atomically but not fsync'd: losing the newest one costs a longer walk.

Contents: the log end at that flush; per segment its length, the CRC32 of its last
CRC_WINDOW bytes and whether it was sealed with a BLANK; and per consume queue its entry count (so a
queue whose files are missing or short is known to need entries from the log).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from .fsutil import atomic_write
from .segment import CRC_WINDOW

__all__ = ["Checkpoint", "SegmentMark", "load_checkpoint", "save_checkpoint", "CHECKPOINT_FORMAT"]

CHECKPOINT_FORMAT = "rocketmq-emulator-checkpoint"
_VERSION = 1


@dataclass(frozen=True, slots=True)
class SegmentMark:
    base: int
    length: int
    crc: int
    sealed: bool


@dataclass(frozen=True, slots=True)
class Checkpoint:
    log_end: int
    segments: tuple[SegmentMark, ...]
    queues: dict[tuple[str, int], int]

    def segment(self, base: int) -> SegmentMark | None:
        for m in self.segments:
            if m.base == base:
                return m
        return None


def save_checkpoint(path: Path, ckpt: Checkpoint) -> None:
    queues: dict[str, dict[str, int]] = {}
    for (topic, qid), count in sorted(ckpt.queues.items()):
        queues.setdefault(topic, {})[str(qid)] = count
    doc = {
        "format": CHECKPOINT_FORMAT, "version": _VERSION, "crcWindow": CRC_WINDOW, "logEnd": ckpt.log_end,
        "segments": [[m.base, m.length, m.crc, m.sealed] for m in ckpt.segments],
        "queues": queues,
    }
    atomic_write(path, json.dumps(doc, separators=(",", ":")).encode(), durable=False)


def load_checkpoint(path: Path) -> tuple[Checkpoint | None, str | None]:
    """(checkpoint, None), or (None, why not) when absent or unusable."""
    try:
        doc = json.loads(path.read_bytes())
    except FileNotFoundError:
        return None, "no checkpoint"
    except (OSError, ValueError) as exc:
        return None, f"checkpoint unreadable ({exc})"
    try:
        if doc.get("format") != CHECKPOINT_FORMAT or doc.get("version") != _VERSION:
            return None, "checkpoint of an unknown format"
        if doc.get("crcWindow") != CRC_WINDOW:
            return None, "checkpoint made with another CRC window"
        segments = tuple(SegmentMark(int(b), int(n), int(c), bool(s)) for b, n, c, s in doc["segments"])
        queues = {(topic, int(qid)): int(count)
                  for topic, per in doc["queues"].items() for qid, count in per.items()}
        return Checkpoint(int(doc["logEnd"]), segments, queues), None
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        return None, f"checkpoint malformed ({exc!r})"
