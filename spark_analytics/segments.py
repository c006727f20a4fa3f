"""Which parts of a snapshot's or store's commit log a read covers: one partition per
segment, cut where the snapshot's manifest or a live log's consistent end says, after
checking that a snapshot has every segment it names. The data source, the driver's
local read and the columnar form all plan from here."""
from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.datasource import InputPartition

from .commitlog import Damage, list_segments, scan_segment
from rocketmq_emulator.store.errors import SnapshotError
from rocketmq_emulator.store.store_dir import resolve_store

__all__ = ["SegmentPart", "plan_segments", "check_complete"]


@dataclass(frozen=True)
class SegmentPart(InputPartition):
    """One task: one segment file, read up to ``limit`` bytes."""

    path: str
    base: int
    limit: int | None


def plan_segments(path: str) -> tuple[list[SegmentPart], Damage | None]:
    """Partitions for a snapshot or store directory, and the damage known on the
    driver. Raises SnapshotError for a missing or foreign directory."""
    sd = resolve_store(path)
    segs = list_segments(sd.commitlog)
    if sd.manifest is not None:
        _check_complete(sd, segs)
        cut = int(sd.manifest["commitlog"]["max_offset"])
        dmg = sd.manifest.get("damage")
        damage = Damage(**dmg) if dmg else None
        parts = [SegmentPart(s.path, s.base, cut - s.base) for s in segs if s.base < cut]
        return parts, damage
    if not segs:
        return [], None
    last = segs[-1]
    scan = scan_segment(last)            # the consistent end of a possibly live log
    parts = [SegmentPart(s.path, s.base, None) for s in segs[:-1]]
    if scan.end > 0:
        parts.append(SegmentPart(last.path, last.base, scan.end))
    return parts, scan.damage


def check_complete(path: str) -> None:
    """Raise SnapshotError (one line) if the snapshot at ``path`` lacks part of its
    commit log (a store directory, without a manifest, has nothing to check)."""
    sd = resolve_store(path)
    if sd.manifest is not None:
        _check_complete(sd, list_segments(sd.commitlog))


def _check_complete(sd, segs) -> None:
    """A snapshot's segments are all there, each at least as long as its manifest says:
    a segment cut short after the snapshot was taken (a partial copy, a full disk) is
    not damage the log had, and reading up to it would present part of the snapshot
    as all of it."""
    on_disk = {s.base: s.size for s in segs}
    for seg in sd.manifest["commitlog"].get("segments", []):
        have = on_disk.get(int(seg["base"]))
        if have is None:
            raise SnapshotError(f"snapshot {str(sd.root)!r} is incomplete: commit-log segment {seg['name']} "
                                "is missing")
        if have < int(seg["bytes"]):
            raise SnapshotError(f"snapshot {str(sd.root)!r} is incomplete: commit-log segment {seg['name']} is "
                                f"{have:,} bytes, its manifest says {int(seg['bytes']):,} (cut short after the "
                                "snapshot was taken?)")
