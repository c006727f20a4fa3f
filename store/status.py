"""Result types: what ``put`` and ``get_message`` return, and what recovery cut.

Statuses are enums named as upstream's PutMessageStatus / GetMessageStatus, so the
broker maps them to wire codes in one table. Results are immutable: PutResult is a
named tuple (it is built on every put), the others frozen slotted dataclasses.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import NamedTuple

__all__ = ["PutStatus", "GetStatus", "PutResult", "GetResult", "Recovery"]


class PutStatus(enum.Enum):
    PUT_OK = "PUT_OK"
    FLUSH_DISK_TIMEOUT = "FLUSH_DISK_TIMEOUT"          # never produced: the store has no clock
    MESSAGE_ILLEGAL = "MESSAGE_ILLEGAL"
    PROPERTIES_SIZE_EXCEEDED = "PROPERTIES_SIZE_EXCEEDED"
    SERVICE_NOT_AVAILABLE = "SERVICE_NOT_AVAILABLE"
    UNKNOWN_ERROR = "UNKNOWN_ERROR"


class GetStatus(enum.Enum):
    FOUND = "FOUND"
    NO_MATCHED_MESSAGE = "NO_MATCHED_MESSAGE"
    MESSAGE_WAS_REMOVING = "MESSAGE_WAS_REMOVING"
    OFFSET_FOUND_NULL = "OFFSET_FOUND_NULL"
    OFFSET_OVERFLOW_BADLY = "OFFSET_OVERFLOW_BADLY"
    OFFSET_OVERFLOW_ONE = "OFFSET_OVERFLOW_ONE"
    OFFSET_TOO_SMALL = "OFFSET_TOO_SMALL"
    NO_MATCHED_LOGIC_QUEUE = "NO_MATCHED_LOGIC_QUEUE"
    NO_MESSAGE_IN_QUEUE = "NO_MESSAGE_IN_QUEUE"


class PutResult(NamedTuple):
    """What a put did. On failure the offsets are -1, msg_id is "" and remark says why.

    An immutable named tuple rather than a frozen dataclass: a put must cost a few µs in
    all, and a frozen slotted dataclass takes ~0.5 µs to build (every field is set through
    a descriptor call), a tuple ~0.1 µs. Fields, ``ok``, equality between results and
    immutability are as before; being a tuple it also unpacks, and equals a plain tuple
    of the same seven values."""

    status: PutStatus
    commit_log_offset: int
    queue_offset: int
    store_timestamp: int
    store_size: int
    msg_id: str
    remark: str | None = None

    @property
    def ok(self) -> bool:
        return self.status is PutStatus.PUT_OK


_new_tuple = tuple.__new__
_PUT_OK = PutStatus.PUT_OK


def put_ok(commit_log_offset: int, queue_offset: int, store_timestamp: int, store_size: int,
           msg_id: str) -> PutResult:
    """A PUT_OK result, built without the keyword handling of ``PutResult(...)``."""
    return _new_tuple(PutResult, (_PUT_OK, commit_log_offset, queue_offset, store_timestamp, store_size,
                                  msg_id, None))


def put_failed(status: PutStatus, remark: str) -> PutResult:
    return PutResult(status, -1, -1, 0, 0, "", remark)


@dataclass(frozen=True, slots=True)
class GetResult:
    """A pull's worth of raw records (each one whole commit-log record) and where the
    next pull should start; min/max are the queue's bounds at the time."""

    status: GetStatus
    records: list[bytes]
    next_begin_offset: int
    min_offset: int
    max_offset: int

    @property
    def body(self) -> bytes:
        """The PULL_MESSAGE response body: the records back to back."""
        return b"".join(self.records)

    @property
    def found(self) -> bool:
        return self.status is GetStatus.FOUND


@dataclass(frozen=True, slots=True)
class Recovery:
    """What opening the store found and repaired. ``clean`` means nothing was cut."""

    truncated_at: int | None = None          # log offset where a torn/corrupt tail was cut
    bytes_cut: int = 0                       # bytes of the log removed there and after it
    reason: str | None = None                # why the record at truncated_at was refused
    removed_segments: tuple[str, ...] = ()   # segment files deleted because they followed the cut
    dropped_entries: int = 0                 # consume-queue entries that pointed past the log end
    rebuilt_queues: tuple[tuple[str, int], ...] = ()   # queues given entries from the log walk
    records_walked: int = 0                  # records read one by one (0 after a clean close)
    used_checkpoint: bool = False
    notes: tuple[str, ...] = field(default=())          # anything else worth a warning
    # (log offset, length, segment file, reason) of each damaged range: skipped, never served
    damaged: tuple[tuple[int, int, str, str], ...] = ()

    @property
    def clean(self) -> bool:
        return (self.truncated_at is None and not self.removed_segments and not self.dropped_entries
                and not self.damaged)
