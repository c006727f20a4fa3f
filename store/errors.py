"""The store's one exception type.

Bad *input* to ``put`` is never an exception (it is a PutStatus), nor is a put the disk
refuses (SERVICE_NOT_AVAILABLE). StoreError is for things a caller cannot fix by
retrying the call: the root is a file, another live store holds the root, the directory
belongs to something else, the segments on disk do not fit together, a config document
(and its .bak) is unreadable, or the store is closed. StoreWriteError, its subclass, is a
write that failed (a flush, a config document) and may work later.
"""
from __future__ import annotations

__all__ = ["StoreError", "StoreWriteError", "SnapshotError"]


class StoreError(Exception):
    """The store cannot be opened or used; the message says why and where."""


class StoreWriteError(StoreError, OSError):
    """A write the store could not make (disk full, read-only, I/O error): a flush or a
    config document. It is also an OSError with the original errno, and the call may
    succeed later (when space returns): nothing written before is lost, and a failed
    write leaves no half-written file behind."""

    def __init__(self, message: str, cause: OSError) -> None:
        super().__init__(cause.errno, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class SnapshotError(StoreError):
    """A snapshot cannot be taken or read, or a path is not a store: a missing
    directory, not a store, a bad manifest, an unusable output. str() is one readable
    line; a command reporting it exits 2 (bad input)."""

    exit_code = 2
