"""StoreConfig: the handful of MessageStoreConfig settings the emulator's store honours."""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["StoreConfig", "DEFAULT_MESSAGE_DELAY_LEVEL", "DEFAULT_DELAY_LEVELS_MS", "DelayTableError",
           "parse_delay_table", "ASYNC_FLUSH", "SYNC_FLUSH"]

ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"

# MessageStoreConfig.messageDelayLevel, as upstream keeps it in the store's config: the
# project's one definition of the delay table (the broker, the scheduler, the simulator
# and the analytics all take it from here). Level = index + 1.
DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_LEVEL = re.compile(r"^(\d+)(ms|s|m|h|d)$")


class DelayTableError(ValueError):
    """A messageDelayLevel string that is not a list of durations."""


def parse_delay_table(text: str) -> tuple[int, ...]:
    """A ``messageDelayLevel`` string -> the delay of each level in ms, the way
    ScheduleMessageService parses it: entries are a number and one unit letter
    (s, m, h, d); ``ms`` is also accepted here, for short test tables."""
    if not isinstance(text, str) or not text.split():
        raise DelayTableError("messageDelayLevel is empty; expected e.g. '1s 5s 10s'")
    delays = []
    for i, token in enumerate(text.split(), start=1):
        m = _LEVEL.match(token)
        if not m:
            raise DelayTableError(f"messageDelayLevel entry {i} {token!r} is not <number><s|m|h|d>")
        delays.append(int(m.group(1)) * _UNIT_MS[m.group(2)])
    return tuple(delays)


DEFAULT_DELAY_LEVELS_MS = parse_delay_table(DEFAULT_MESSAGE_DELAY_LEVEL)

# Smallest segment that holds a minimal record (91 bytes) plus the 8-byte BLANK.
_MIN_SEGMENT = 128


@dataclass(frozen=True, slots=True)
class StoreConfig:
    """``segment_size`` = mapedFileSizeCommitLog, ``max_message_size`` = maxMessageSize
    (a body larger than this is MESSAGE_ILLEGAL), ``flush_disk_type`` = flushDiskType,
    ``delay_levels_ms`` = messageDelayLevel in ms (schedule-queue tagsCode),
    ``consume_queue_entries_per_file`` = mapedFileSizeConsumeQueue / 20,
    ``max_transfer_count`` / ``max_transfer_bytes`` = maxTransferCountOnMessageInMemory /
    maxTransferBytesOnMessageInMemory: one get_message returns at most this many records
    and bytes (the first record always fits), as upstream caps a pull from memory.
    ``fsync=False``: a flush (and a SYNC_FLUSH put) hands everything to the OS but does
    not wait for the disk — what is written survives the process dying, not the machine
    losing power; for simulations and tests, whose crashes are process crashes.
    ``prop_crc`` = upstream 5.x's enabledAppendPropCRC: every record ends its properties
    with ``__CRC32#``, a CRC of all its bytes but the last 20 (records.py), so damage to
    the header or properties is found, not only damage to the body; on by default."""

    segment_size: int = 1 << 30
    max_message_size: int = 4 << 20
    flush_disk_type: str = ASYNC_FLUSH
    delay_levels_ms: tuple[int, ...] = DEFAULT_DELAY_LEVELS_MS
    consume_queue_entries_per_file: int = 300_000
    max_transfer_count: int = 32
    max_transfer_bytes: int = 256 * 1024
    fsync: bool = True
    prop_crc: bool = True

    def __post_init__(self) -> None:
        if self.flush_disk_type not in (ASYNC_FLUSH, SYNC_FLUSH):
            raise ValueError(f"flush_disk_type must be {ASYNC_FLUSH!r} or {SYNC_FLUSH!r}, "
                             f"got {self.flush_disk_type!r}")
        if not _MIN_SEGMENT <= self.segment_size <= (1 << 31) - 1:
            # the BLANK record's size field is an int32
            raise ValueError(f"segment_size must be in [{_MIN_SEGMENT}, 2**31-1], got {self.segment_size}")
        if self.max_message_size < 0:
            raise ValueError(f"max_message_size must be >= 0, got {self.max_message_size}")
        if self.max_transfer_count < 1 or self.max_transfer_bytes < 1:
            raise ValueError("max_transfer_count and max_transfer_bytes must be >= 1")
        if self.consume_queue_entries_per_file < 1:
            raise ValueError("consume_queue_entries_per_file must be >= 1")
        # accept any sequence (the broker may pass a list); keep the frozen value a tuple
        object.__setattr__(self, "delay_levels_ms", tuple(int(ms) for ms in self.delay_levels_ms))

    @property
    def sync_flush(self) -> bool:
        return self.flush_disk_type == SYNC_FLUSH
