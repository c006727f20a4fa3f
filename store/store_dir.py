"""Recognising a store or a snapshot on disk, and reading a snapshot's manifest.

Both share the store's layout (commitlog/, consumequeue/, config/); a snapshot adds
manifest.json, which says where its consistent cut is. Anything else — a missing
path, a file, a directory without commitlog/ — is refused with one readable line.
"""
from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .errors import SnapshotError

__all__ = ["MANIFEST_NAME", "FORMAT_NAME", "FORMAT_VERSION", "StoreDir", "lock_is_held", "resolve_store", "read_json",
           "cluster_members"]

MANIFEST_NAME = "manifest.json"
FORMAT_NAME = "rocketmq-emulator-snapshot"
FORMAT_VERSION = 1


@dataclass(frozen=True, slots=True)
class StoreDir:
    root: Path
    commitlog: Path
    manifest: dict | None          # None: a store directory (live or stopped), not a snapshot

    @property
    def is_snapshot(self) -> bool:
        return self.manifest is not None

    @property
    def config(self) -> Path:
        return self.root / "config"

    @property
    def consumequeue(self) -> Path:
        return self.root / "consumequeue"

    @property
    def is_open(self) -> bool:
        """Whether a live store holds this directory's lock right now."""
        return lock_is_held(self.root / "lock")


def lock_is_held(lock_path: Path) -> bool:
    """True when some process holds a flock on ``lock_path`` (a store open on it).

    The lock file outlives the store that made it, so its existence says nothing; and
    trying the lock ourselves could make a broker starting at that instant fail. Linux
    lists every held flock in /proc/locks by inode: read it, take nothing. Where that
    file is not available, a present lock file is taken as "maybe open".
    """
    try:
        inode = lock_path.stat().st_ino
    except OSError:
        return False
    try:
        text = Path("/proc/locks").read_text()
    except OSError:
        return True
    for line in text.splitlines():
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 4242 08:01:1234567 0 EOF"; blocked waiters add "->"
        if "->" in fields or len(fields) < 6 or fields[1] != "FLOCK":
            continue
        if fields[5].rsplit(":", 1)[-1] == str(inode):
            return True
    return False


# fastjson (upstream's writer, and so the store's) leaves integer map keys unquoted: {1:0}
_BARE_INT_KEY = re.compile(r'([{,]\s*)(-?\d+)(\s*:)')


def read_json(path: Path, default=None):
    """A JSON config document, or ``default`` when absent or (mid-write) unreadable.
    Accepts fastjson's unquoted integer keys."""
    try:
        text = path.read_text(encoding="utf-8")
    except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
        return default
    for candidate in (text, _BARE_INT_KEY.sub(r'\1"\2"\3', text)):
        try:
            return json.loads(candidate)
        except json.JSONDecodeError:
            continue
    return default


def resolve_store(path: str | os.PathLike, what: str = "store") -> StoreDir:
    """The store or snapshot at ``path``. Raises SnapshotError (one line) when ``path``
    is missing or is not a store: no commitlog/ directory inside."""
    root = Path(path)
    if not root.exists():
        raise SnapshotError(f"{what} directory {str(root)!r} does not exist")
    if not root.is_dir():
        raise SnapshotError(f"{what} path {str(root)!r} is not a directory")
    commitlog = root / "commitlog"
    if not commitlog.is_dir():
        raise SnapshotError(f"{str(root)!r} is not a RocketMQ store or snapshot: it has no commitlog/ directory")
    manifest = None
    mpath = root / MANIFEST_NAME
    if mpath.exists():
        manifest = read_json(mpath)
        if not isinstance(manifest, dict) or manifest.get("format") != FORMAT_NAME:
            raise SnapshotError(f"{str(mpath)!r} is not a {FORMAT_NAME} manifest")
        if manifest.get("format_version", 0) > FORMAT_VERSION:
            raise SnapshotError(f"{str(mpath)!r} has format version {manifest.get('format_version')}; "
                                f"this build reads up to {FORMAT_VERSION}")
    return StoreDir(root, commitlog, manifest)


def cluster_members(path: str) -> list[tuple[str, str]]:
    """[(broker name, its snapshot or store directory)]: broker-a at ``path``, then each
    ``path/brokers/NAME`` holding a commit log (a one-broker store: itself alone)."""
    members = [("broker-a", str(path))]
    extra = Path(path) / "brokers"
    if extra.is_dir():
        members += [(d.name, str(d)) for d in sorted(extra.iterdir()) if (d / "commitlog").is_dir()]
    return members
