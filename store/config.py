"""StoreConfig: the handful of MessageStoreConfig settings the emulator's store honours."""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["StoreConfig", "DEFAULT_DELAY_LEVELS_MS", "ASYNC_FLUSH", "SYNC_FLUSH"]

ASYNC_FLUSH = "ASYNC_FLUSH"
SYNC_FLUSH = "SYNC_FLUSH"

# messageDelayLevel "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"
DEFAULT_DELAY_LEVELS_MS = (1000, 5000, 10000, 30000, 60000, 120000, 180000, 240000, 300000,
                           360000, 420000, 480000, 540000, 600000, 1200000, 1800000, 3600000, 7200000)

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
