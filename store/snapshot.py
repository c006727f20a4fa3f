"""A consistent, read-only snapshot of a store, live or stopped.

Theory of operation. The store's lock is never taken and nothing is written to the
store: a live broker keeps serving. Consistency comes from the order of copying and
from validating the copy, not the original:

1. config/*.json first. Offsets and delay offsets only ever name records already in
   the log, so offsets copied before the log never point past the copied log.
2. The commit-log segments, listed once; the last one is copied as it is at that
   moment (it may be mid-append). Then the *copies* are walked (``segments.
   walk_buffer``; the last segment with body CRCs too): the cut is the end of the last
   complete record before EOF, a BLANK, or the first torn / corrupt record. A torn or
   corrupt record is reported in the manifest; the copy is truncated at the cut and
   later segments are dropped.
3. Consume-queue entries whose record lies below the cut (they are derived data and
   may lag the log; a partial trailing entry is dropped).
4. manifest.json, then the staging directory is renamed to the output: a snapshot
   directory either is complete or does not exist.

The snapshot has the store's own layout, so the data source (and MessageStore) read it
like a store; the manifest bounds what is read to the cut. Only the standard library
is used (no numpy): ``snapshot`` runs on the base install.
"""
from __future__ import annotations

import json
import os
import shutil
import struct
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from typing import Callable

from .config_journal import JOURNAL_SUFFIX
from .errors import SnapshotError
from .segment_walk import Damage, list_segments, map_file, walk_buffer
from .store_dir import FORMAT_NAME, FORMAT_VERSION, MANIFEST_NAME, resolve_store

__all__ = ["Manifest", "take_snapshot", "load_manifest"]

_CQ_ENTRY = struct.Struct(">qiq")
_SCHEDULE_TOPIC = "SCHEDULE_TOPIC_XXXX"
_COPY_CHUNK = 8 << 20


@dataclass(frozen=True)
class Manifest:
    """What manifest.json says (``to_dict`` is its JSON form)."""

    source: str
    taken_at_ms: int                     # wall clock when the snapshot started
    took_ms: int
    store_was_live: bool                 # a live store held the store's lock
    commitlog: dict                      # min_offset, max_offset, records, segments, last_store_timestamp
    consume_queues: dict                 # topic -> qid -> {min_offset, max_offset}
    config_files: list[str]
    damage: dict | None                  # Damage.to_dict() of the record that stopped the walk
    delay_levels_ms: dict = field(default_factory=dict)   # level -> ms seen in SCHEDULE_TOPIC_XXXX entries
    format: str = FORMAT_NAME
    format_version: int = FORMAT_VERSION

    @property
    def max_offset(self) -> int:
        return int(self.commitlog["max_offset"])

    @property
    def damaged(self) -> bool:
        return self.damage is not None

    def queue_max_offsets(self) -> dict[tuple[str, int], int]:
        return {(t, int(q)): v["max_offset"] for t, qs in self.consume_queues.items() for q, v in qs.items()}

    def to_dict(self) -> dict:
        d = asdict(self)
        d["damaged"] = self.damaged
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Manifest":
        names = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in d.items() if k in names})


def load_manifest(snapshot_dir: str | os.PathLike) -> Manifest:
    sd = resolve_store(snapshot_dir, "snapshot")
    if sd.manifest is None:
        raise SnapshotError(f"{str(snapshot_dir)!r} is a store, not a snapshot (no {MANIFEST_NAME})")
    return Manifest.from_dict(sd.manifest)


def _copy_file(src: Path, dst: Path, limit: int | None = None) -> int:
    """Copy up to ``limit`` bytes (all when None) as they are now; returns bytes copied."""
    n = 0
    with open(src, "rb") as fi, open(dst, "wb") as fo:
        while limit is None or n < limit:
            chunk = fi.read(_COPY_CHUNK if limit is None else min(_COPY_CHUNK, limit - n))
            if not chunk:
                break
            fo.write(chunk)
            n += len(chunk)
    return n


def _copy_config(src: Path, dst: Path) -> list[str]:
    dst.mkdir(parents=True, exist_ok=True)
    names = []
    if src.is_dir():
        for p in sorted(src.iterdir()):
            if p.is_file() and p.suffix in (".json", JOURNAL_SUFFIX):
                _copy_file(p, dst / p.name)
                names.append(p.name)
    return names


def _copy_commitlog(src: Path, dst: Path) -> tuple[dict, Damage | None]:
    dst.mkdir(parents=True)
    segs = list_segments(src)
    kept, records, last_ts, damage = [], 0, None, None
    cut = segs[0].base if segs else 0
    for i, seg in enumerate(segs):
        out = dst / Path(seg.path).name
        size = _copy_file(Path(seg.path), out)
        mv = map_file(out)
        scan = walk_buffer(mv, seg.base, check_crc=(i == len(segs) - 1))
        mv.release()
        records += scan.count
        if scan.count:
            last_ts = _store_timestamp(out, scan.last_start)
        cut = seg.base + scan.end
        kept.append({"name": out.name, "base": seg.base, "bytes": scan.end, "records": scan.count,
                     "sealed": scan.sealed})
        if scan.damage is not None or (not scan.sealed and scan.end < size):
            damage = scan.damage
            os.truncate(out, scan.end)
            break
        if scan.sealed and scan.end < size:
            # keep the BLANK header: a reader of the copy sees the segment end as the store does
            os.truncate(out, scan.end + 8)
    info = {"min_offset": segs[0].base if segs else 0, "max_offset": cut, "records": records,
            "segments": kept, "last_store_timestamp": last_ts}
    return info, damage


def _store_timestamp(path: Path, pos: int) -> int:
    """STORETIMESTAMP of the record at ``pos`` (it follows a 4- or 16-byte born host)."""
    with open(path, "rb") as f:
        f.seek(pos + 36)
        head = f.read(40)
    (sys_flag,) = struct.unpack_from(">i", head, 0)
    at = 12 + (20 if sys_flag & 0x10 else 8)
    return struct.unpack_from(">q", head, at)[0]


def _copy_consume_queues(src: Path, dst: Path, cut: int) -> dict:
    """Entries below the cut, queue by queue; returns topic -> qid -> offsets."""
    out: dict[str, dict[str, dict]] = {}
    if not src.is_dir():
        return out
    for tdir in sorted(p for p in src.iterdir() if p.is_dir()):
        for qdir in sorted((p for p in tdir.iterdir() if p.is_dir() and p.name.isdigit()), key=lambda p: int(p.name)):
            files = sorted((p for p in qdir.iterdir() if p.is_file() and p.name.isdigit() and len(p.name) == 20),
                           key=lambda p: int(p.name))
            if not files:
                continue
            (dst / tdir.name / qdir.name).mkdir(parents=True, exist_ok=True)
            lo = int(files[0].name) // _CQ_ENTRY.size
            hi = lo
            for f in files:
                data = f.read_bytes()
                start = int(f.name) // _CQ_ENTRY.size
                keep = 0
                for off in range(0, len(data) - _CQ_ENTRY.size + 1, _CQ_ENTRY.size):
                    phys, size, _ = _CQ_ENTRY.unpack_from(data, off)
                    if size <= 0 or phys + size > cut:
                        break
                    keep += 1
                (dst / tdir.name / qdir.name / f.name).write_bytes(data[:keep * _CQ_ENTRY.size])
                if keep:
                    hi = start + keep
                if keep * _CQ_ENTRY.size < len(data):
                    break
            out.setdefault(tdir.name, {})[qdir.name] = {"min_offset": lo, "max_offset": hi}
    return out


def _delay_levels(snap: Path, queues: dict) -> dict[str, int]:
    """level -> delay ms as the store applied it: a SCHEDULE_TOPIC_XXXX entry's tagsCode
    is store time + delay(level), so one entry per level is enough."""
    out = {}
    segs = list_segments(snap / "commitlog")
    for qid, info in sorted(queues.get(_SCHEDULE_TOPIC, {}).items(), key=lambda kv: int(kv[0])):
        if info["max_offset"] <= info["min_offset"]:
            continue
        qdir = snap / "consumequeue" / _SCHEDULE_TOPIC / qid
        first = sorted(qdir.iterdir(), key=lambda p: int(p.name))[0]
        data = first.read_bytes()[:_CQ_ENTRY.size]
        if len(data) < _CQ_ENTRY.size:
            continue
        phys, _, tags_code = _CQ_ENTRY.unpack(data)
        seg = max((s for s in segs if s.base <= phys), key=lambda s: s.base, default=None)
        if seg is None:
            continue
        out[str(int(qid) + 1)] = tags_code - _store_timestamp(Path(seg.path), phys - seg.base)
    return out


def take_snapshot(data_dir: str | os.PathLike, out_dir: str | os.PathLike, *,
                  wall_ms: Callable[[], int]) -> Manifest:
    """Snapshot the store at ``data_dir`` into ``out_dir`` (which must not exist or be
    empty). Raises SnapshotError with one readable line on a missing or foreign
    ``data_dir`` or an unusable ``out_dir``. ``wall_ms`` is the caller's wall clock (ms)
    for the manifest's taken_at_ms / took_ms: the store reads no clock of its own."""
    t0 = wall_ms()
    sd = resolve_store(data_dir, "data")
    out = Path(out_dir)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SnapshotError(f"output {str(out)!r} already exists and is not an empty directory")
    if out.resolve().is_relative_to(sd.root.resolve()):
        raise SnapshotError(f"output {str(out)!r} is inside the store {str(sd.root)!r}")
    stage = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(stage, ignore_errors=True)
    try:
        stage.mkdir(parents=True)
        config_files = _copy_config(sd.config, stage / "config")
        commitlog, damage = _copy_commitlog(sd.commitlog, stage / "commitlog")
        queues = _copy_consume_queues(sd.consumequeue, stage / "consumequeue", commitlog["max_offset"])
        manifest = Manifest(
            source=str(sd.root.resolve()), taken_at_ms=int(t0), took_ms=0,
            store_was_live=sd.is_open, commitlog=commitlog, consume_queues=queues,
            config_files=config_files, damage=damage.to_dict() if damage else None,
            delay_levels_ms=_delay_levels(stage, queues))
        manifest = replace(manifest, took_ms=int(wall_ms() - t0))
        (stage / MANIFEST_NAME).write_text(json.dumps(manifest.to_dict(), indent=2) + "\n")
        if out.exists():
            out.rmdir()
        os.rename(stage, out)
    except OSError as exc:
        shutil.rmtree(stage, ignore_errors=True)
        raise SnapshotError(f"cannot write the snapshot to {str(out)!r}: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    return manifest
