"""Small file-system helpers: atomic replacement, in-place overwrite, directory fsync, the
root lock, and the boot id that tells a killed process from a machine that lost power."""
from __future__ import annotations

import errno
import fcntl
import os
from pathlib import Path

from .errors import StoreError

__all__ = ["atomic_write", "overwrite_in_place", "fsync_dir", "RootLock", "boot_id"]

_BOOT_ID = "/proc/sys/kernel/random/boot_id"


def boot_id() -> str | None:
    """This boot of the machine (Linux: a random id drawn at every boot), None when the
    system does not say. Pages a killed process wrote are still in the page cache on
    the same boot; after another boot (a power loss, an OS crash) only what was fsync'd
    is certain."""
    try:
        with open(_BOOT_ID, encoding="ascii") as f:
            return f.read().strip() or None
    except (OSError, UnicodeDecodeError):
        return None


def fsync_dir(path: Path) -> None:
    """Make renames and new entries in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    """Write all of ``data`` at the descriptor's position (os.write may write less)."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def atomic_write(path: Path, data: bytes, *, durable: bool = True, backup: Path | None = None) -> None:
    """Replace ``path`` with ``data`` so a reader (or a crash) sees the old or the new
    content, never a mix: write a temporary file beside it, then rename over. With
    ``backup``, the old content becomes that file first (a hard link: no copy, and
    ``path`` exists at every moment), as upstream keeps ``<config>.json.bak``."""
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        try:
            _write_all(fd, data)
            if durable:
                os.fsync(fd)
        finally:
            os.close(fd)
        if backup is not None and path.exists():
            linked = backup.with_name(backup.name + ".tmp")
            _unlink_quietly(linked)
            os.link(path, linked)
            os.replace(linked, backup)
        os.replace(tmp, path)
    except OSError:
        _unlink_quietly(tmp)      # a half-written temporary file must not stay behind
        raise
    if durable:
        fsync_dir(path.parent)


def _unlink_quietly(path: Path) -> None:
    try:
        path.unlink(missing_ok=True)
    except OSError:
        pass


def overwrite_in_place(path: Path, data: bytes) -> None:
    """Write ``data`` over the start of ``path`` and cut the file there: no temporary
    file, no rename, no fsync. Only for a document that vouches for itself (the
    checkpoint's CRC header): a crash or a reader mid-write sees a torn file."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)     # (a fresh descriptor: at offset 0)
    try:
        _write_all(fd, data)
        os.ftruncate(fd, len(data))
    finally:
        os.close(fd)


class RootLock:
    """One live store per root: an exclusive ``flock`` on ROOT/lock, held while open.

    flock dies with its process, so a crashed store leaves no stale lock; and it is per
    open file description, so a second store in the same process is refused too.
    """

    def __init__(self, root: Path) -> None:
        self.path = root / "lock"
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 64, 0).decode("ascii", "replace").strip() or "unknown"
            os.close(fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise StoreError(f"store {str(root)!r} is locked by another live store "
                                 f"(pid {holder}); close it first") from None
            raise StoreError(f"cannot lock store {str(root)!r}: {exc.strerror}") from exc
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        self.fd: int | None = fd

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None
