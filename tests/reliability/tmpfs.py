"""A small tmpfs for disk-full tests: mounted for a test, unmounted after; the test is
skipped (with the reason) where this process may not mount."""
from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path

import pytest

__all__ = ["small_tmpfs", "resize_tmpfs", "take_every_block"]


def small_tmpfs(where: Path, size: str = "2m"):
    """Generator for a fixture: mount a ``size`` tmpfs at ``where``, yield it, unmount."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (the disk-full paths are also tested by injection)")
    where.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", f"tmpfs-{uuid.uuid4().hex[:8]}", str(where)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip() or proc.returncode}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def resize_tmpfs(where: Path, size: str) -> None:
    """Give the tmpfs at ``where`` a new size (``mount -o remount``): what it holds stays."""
    subprocess.run(["mount", "-o", f"remount,size={size}", str(where)], check=True, capture_output=True)


def take_every_block(path: Path) -> None:
    """Write ``path`` until the filesystem is full, to the last block (unbuffered 4 KiB
    writes: a buffered writer may drop the partial one)."""
    with open(path, "ab", buffering=0) as f:
        try:
            while True:
                f.write(bytes(4096))
        except OSError:
            pass                                    # full: that was the point
