"""Opening a store directory: lock it, recover the commit log (commit_log.py), repair
the consume queues against it and extend them from the log where they are behind,
load the offsets, and make sure no offset a client was given goes to another record
after an unclean end. ``store.recovery`` says what was cut or rebuilt; every repair is
also logged as a warning on the "store" logger.

MessageStore's opening job, split out of message_store.py: functions of the parts they
are given (the log, the queue table, the store's config), which return what they found;
the store keeps the state.
"""
from __future__ import annotations

import logging
from bisect import bisect_right
from dataclasses import dataclass
from pathlib import Path

from . import fsutil
from .checkpoint import Checkpoint, load_checkpoint
from .commit_log import CommitLog, LogRecovery
from .consume_queue import ConsumeQueue, list_queue_dirs, load_queue, valid_topic_dir
from .dispatch import dispatch
from .errors import StoreError
from .fsutil import RootLock, atomic_write
from .record_view import fields
from .segment import segment_name
from .status import Recovery

__all__ = ["open_directory", "Opened", "RUNNING_MARKER"]

log = logging.getLogger("store")

# What a store root may contain; a non-empty directory holding none of it is foreign.
_OURS = {"commitlog", "consumequeue", "config", "checkpoint", "lock", "abort"}
# Present while a store is open (upstream's name): found at open, the last run did not
# close. It holds the boot id of the machine it was opened on (fsutil.boot_id).
RUNNING_MARKER = "abort"


@dataclass
class Opened:
    """What opening a directory found: the store's lock, its recovered log, its queues
    (repaired and caught up with the log), what recovery did and the checkpoint read."""
    lock: RootLock
    log: CommitLog
    queues: dict
    recovery: Recovery
    checkpoint: Checkpoint | None


def open_directory(root: Path, config, new_queue, delays_ms: tuple[int, ...], load_offsets) -> Opened:
    """Open ``root`` for a MessageStore (its __init__): check it is ours, take the lock,
    recover the log, then the queues (``new_queue(topic, queue_id, base)`` makes one),
    ``load_offsets(config dir)``; the store then flushes the repairs and a fresh
    checkpoint. Cost: O(log bytes the checkpoint cannot vouch for) plus one CRC pass over
    the rest and over each queue's files."""
    if root.exists() and not root.is_dir():
        raise StoreError(f"store root {str(root)!r} is a file, not a directory")
    try:
        root.mkdir(parents=True, exist_ok=True)
        present = {p.name for p in root.iterdir() if not p.name.startswith(".")}   # .gitkeep etc.
    except OSError as exc:
        raise StoreError(f"cannot use store root {str(root)!r}: {exc.strerror}") from exc
    if present and not present & _OURS:
        shown = ", ".join(sorted(present)[:5]) + (", ..." if len(present) > 5 else "")
        raise StoreError(f"{str(root)!r} is not a message store (it holds {shown}); "
                         f"use an empty or new directory")
    for sub in ("commitlog", "consumequeue", "config"):
        if (root / sub).exists() and not (root / sub).is_dir():
            raise StoreError(f"{str(root / sub)!r} should be a directory but is a file")
    lock = RootLock(root)
    lg = None
    queues: dict = {}
    try:
        for sub in ("commitlog", "consumequeue", "config"):
            (root / sub).mkdir(exist_ok=True)
        ckpt, why_not = load_checkpoint(root / "checkpoint")
        lg = CommitLog(root / "commitlog", config.segment_size, sync=config.sync_flush, fsync=config.fsync)
        lrep = lg.recover(ckpt)
        # a checkpoint whose segments did not check out says nothing about dispatch
        qnotes, dropped, rebuilt, walked = recover_queues(lg, queues, root, config, new_queue, delays_ms,
                                                          None if lrep.doubted else ckpt)
        load_offsets(root / "config")
        qnotes += continue_past_unsure_end(lg, root, config, ckpt, lrep)
    except BaseException:
        if lg is not None and lg.segments:
            for seg in lg.segments:
                seg.close()
        lock.release()
        raise
    notes = list(lrep.notes) + qnotes
    if ckpt is None and lrep.records_walked + walked:
        notes.insert(0, f"{why_not}: the whole log was walked")
    recovery = Recovery(
        truncated_at=lrep.truncated_at, bytes_cut=lrep.bytes_cut, reason=lrep.reason,
        removed_segments=tuple(lrep.removed_segments), dropped_entries=dropped,
        rebuilt_queues=tuple(sorted(rebuilt)), records_walked=lrep.records_walked + walked,
        used_checkpoint=ckpt is not None, notes=tuple(notes),
        damaged=tuple((d.start, d.end - d.start, segment_name(lg.bases[bisect_right(lg.bases, d.start) - 1]),
                       d.reason) for d in lg.damage.ranges))
    report_recovery(root, recovery)
    return Opened(lock, lg, queues, recovery, ckpt)


def continue_past_unsure_end(lg: CommitLog, root: Path, config, ckpt: Checkpoint | None,
                             lrep: LogRecovery) -> list[str]:
    """After an unclean shutdown that may have lost acknowledged records — the
    machine restarted since (power loss, OS crash: only fsync'd bytes are certain) or
    bytes the checkpoint had recorded are gone — continue the log past every
    segment it had, so no offset a client was given (its offsetMsgId) goes to
    another record. A killed process on the same boot lost nothing it handed to the
    OS: the log continues where it ends. Then mark the store running."""
    marker = root / RUNNING_MARKER
    try:
        last_boot: str | None = marker.read_text(encoding="ascii", errors="replace").strip()
    except FileNotFoundError:
        last_boot = None                     # closed cleanly (or a new store)
    except OSError as exc:
        raise StoreError(f"cannot read {str(marker)!r}: {exc.strerror}") from exc
    boot = fsutil.boot_id()
    notes = []
    if last_boot is not None:
        other_boot = not last_boot or boot is None or last_boot != boot
        lost_flushed = ckpt is not None and lrep.truncated_at is not None and lrep.truncated_at < ckpt.log_end
        end = lg.end
        if (other_boot or lost_flushed) and end < lrep.reach:
            lg.skip_past(lrep.reach)
            why = ("on another boot of the machine (a power loss or an OS crash?)" if other_boot
                   else "and records it had flushed are gone")
            notes.append(f"the last run did not shut down cleanly {why}: the log continues at offset "
                         f"{lg.end} instead of {end}, so no offsetMsgId a client may have been given "
                         f"goes to another message")
    atomic_write(marker, (boot or "").encode("ascii", "replace") + b"\n", durable=config.fsync)
    return notes


def report_recovery(root: Path, rec: Recovery) -> None:
    for offset, length, segment, reason in rec.damaged:
        log.warning("store %s: damaged record(s) at offset %d in segment %s (%d bytes: %s); skipped, the "
                    "records after them are kept", root, offset, segment, length, reason)
    if rec.truncated_at is not None:
        log.warning("store %s: commit log cut at offset %d (%s); %d bytes removed, records before it kept",
                    root, rec.truncated_at, rec.reason, rec.bytes_cut)
    for seg in rec.removed_segments:
        log.warning("store %s: removed commit-log segment %s", root, seg)
    if rec.dropped_entries:
        log.warning("store %s: dropped %d consume-queue entries that pointed past the log end",
                    root, rec.dropped_entries)
    if rec.rebuilt_queues:
        log.warning("store %s: rebuilt consume-queue entries from the log for %d queue(s): %s", root,
                    len(rec.rebuilt_queues), ", ".join(f"{t}/{q}" for t, q in rec.rebuilt_queues[:10]))
    for note in rec.notes:
        log.warning("store %s: %s", root, note)


def recover_queues(lg: CommitLog, queues: dict, root: Path, config, new_queue, delays_ms: tuple[int, ...],
                   ckpt: Checkpoint | None) -> tuple[list[str], int, set, int]:
    """Load the queue files and keep the queues the checkpoint vouches for (the CRC32
    of their entries is the one it recorded); rebuild every other one from the log
    (damaged or stale files, no checkpoint). Drop entries past the log end, then walk
    the log from the earliest point some queue needs and append what is missing,
    checking every entry met on the way against its record.
    The queues go into ``queues``. Returns (notes, entries dropped, queues given
    entries, records walked)."""
    end, lmin = lg.end, lg.min_offset
    epf = config.consume_queue_entries_per_file
    found, notes = list_queue_dirs(root / "consumequeue")
    marks = ckpt.queues if ckpt is not None else {}
    dropped = 0
    start = min(ckpt.log_end, end) if ckpt is not None else lmin
    for topic, qid, qdir in found:
        cq, more = load_queue(qdir, topic, qid, epf)
        notes += more
        keep = cq.count_below(end)
        if keep < cq.max_offset:
            dropped += cq.max_offset - keep
            cq.truncate(keep)
        mark = marks.get((topic, qid))
        if not _vouched_queue(cq, mark):
            if cq.max_offset > cq.base and mark is not None:
                notes.append(f"{topic}/{qid}: its files differ from the entries the checkpoint recorded; "
                             f"rebuilding the queue from the log")
            cq.reset(0)
            start = lmin
        if lmin > 0 and cq.max_offset > cq.base:
            cq.min_offset = cq.first_at_or_after(lmin)
        queues[(topic, qid)] = cq
    if any(key not in queues for key in marks):
        start = lmin                    # a queue's files are gone: rebuilt from the log
    rebuilt, walked = dispatch_from(lg, queues, new_queue, delays_ms, max(start, lmin), notes)
    for cq in queues.values():
        cq.files.forget()           # the pages recovery read
    return notes, dropped, rebuilt, walked




def dispatch_from(lg: CommitLog, queues: dict, new_queue, delays_ms: tuple[int, ...], start: int,
                  notes: list[str]) -> tuple[set, int]:
    """Give the queues the entries of the records from ``start``: append those they
    lack, repair those that differ. Queue offsets lost in damaged records (a gap
    before a record's offset, with damage in between) get entries pointing at the
    damage, which reads skip, so the queue's offsets stay those of its records."""
    rebuilt: set[tuple[str, int]] = set()
    walked = repaired = 0
    for buf, pos, phys in lg.records(start):
        walked += 1
        f = fields(buf, pos)
        d = dispatch(f.topic, f.queue_id, f.sys_flag, f.properties, f.store_timestamp, phys, f.size, delays_ms)
        if d is None:
            continue
        key, entry = d
        cq = queues.get(key)
        if cq is None:
            if not valid_topic_dir(f.topic) or f.queue_id < 0:
                notes.append(f"record at {phys} has topic {f.topic!r} queue {f.queue_id}, which cannot "
                             f"have a consume queue; not dispatched")
                continue
            cq = queues[key] = new_queue(f.topic, f.queue_id, f.queue_offset)
            cq.cut = True           # whatever files exist for it are stale
        qoff = f.queue_offset
        if qoff < cq.max_offset:
            if qoff >= cq.base and cq.at(qoff) != entry:
                cq.replace(qoff, *entry)
                repaired += 1
                rebuilt.add(key)
            continue
        if qoff > cq.max_offset:
            if cq.max_offset == cq.base:
                cq.reset(qoff)          # the log begins after this queue's first records
            else:
                hole = damage_between(lg, cq.last_end(), phys)
                if hole is None:
                    notes.append(f"{f.topic}/{f.queue_id}: record at {phys} has queue offset {qoff} "
                                 f"but the queue ends at {cq.max_offset}; not dispatched")
                    continue
                notes.append(f"{f.topic}/{f.queue_id}: offsets {cq.max_offset}..{qoff - 1} were in the damaged "
                             f"bytes at {hole.start}; pulls skip them")
                while cq.max_offset < qoff:
                    cq.append(hole.start, hole.end - hole.start, 0)
        cq.append(*entry)
        rebuilt.add(key)
    if repaired:
        notes.append(f"{repaired} consume-queue entries did not match their records; repaired from the log")
    return rebuilt, walked


def damage_between(lg: CommitLog, after: int | None, before: int):
    """The first damaged range starting in [after, before), or None."""
    for d in lg.damage.ranges:
        if (after is None or d.start >= after) and d.start < before:
            return d
    return None


def _vouched_queue(cq: ConsumeQueue, mark) -> bool:
    """Whether the queue loaded from its files starts with the entries the checkpoint
    recorded (same first offset, at least as many, same CRC32: one C call). Entries
    after them were written by a flush whose checkpoint was not: the log walk from the
    checkpoint's end checks them."""
    if mark is None or cq.base != mark.base or cq.max_offset < mark.count:
        return False
    return cq.prime_crc(mark.count, mark.crc)
