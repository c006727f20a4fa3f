"""Result types: what ``put`` and ``get_message`` return, and what recovery cut.

Statuses are enums named as upstream's PutMessageStatus / GetMessageStatus, so the
broker maps them to wire codes in one table. Results are frozen slotted dataclasses.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

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


@dataclass(frozen=True, slots=True)
class PutResult:
    """What a put did. On failure the offsets are -1, msg_id is "" and remark says why."""

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


# The generated __init__ of a frozen dataclass sets each field through
# object.__setattr__ (about 1.3 µs for seven fields); a put must cost a few µs in all,
# so the success path fills the slots through their descriptors instead (about 0.6 µs).
_new = object.__new__
_SETTERS = tuple(PutResult.__dict__[name].__set__ for name in PutResult.__slots__)


def put_ok(commit_log_offset: int, queue_offset: int, store_timestamp: int, store_size: int,
           msg_id: str) -> PutResult:
    """A PUT_OK result, built fast (see above); equal to ``PutResult(PUT_OK, ...)``."""
    r = _new(PutResult)
    s0, s1, s2, s3, s4, s5, s6 = _SETTERS
    s0(r, PutStatus.PUT_OK)
    s1(r, commit_log_offset)
    s2(r, queue_offset)
    s3(r, store_timestamp)
    s4(r, store_size)
    s5(r, msg_id)
    s6(r, None)
    return r


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

    @property
    def clean(self) -> bool:
        return self.truncated_at is None and not self.removed_segments and not self.dropped_entries
