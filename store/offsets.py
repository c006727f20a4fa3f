"""Consumer offsets (config/consumerOffset.json) and delay offsets (config/delayOffset.json),
and the JSON documents every config file is.

Both tables are small, kept in memory and written whole, atomically (temporary file +
rename), at flush when they changed. The documents are upstream's:
    {"offsetTable": {"topic@group": {"0": 12, "1": 4}}}
    {"offsetTable": {"1": 0, "3": 7}}
Upstream writes them with fastjson, which leaves integer keys unquoted ({1:0}); that is
not JSON, so the loader also accepts it, and a real broker's files can be read.

Every write keeps the previous version as ``<name>.json.bak`` (upstream's
ConfigManager does the same). Loading a file that is missing, empty or unreadable —
not JSON, or not the shape its reader expects — falls back to the .bak with one
WARNING; when the .bak is no better, StoreError says what is wrong with both.
"""
from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Callable

from .errors import StoreError
from .fsutil import atomic_write

__all__ = ["ConsumerOffsets", "DelayOffsets", "load_json_document", "dump_json_document"]

log = logging.getLogger("store")

# an unquoted integer key after "{" or ",": fastjson's map keys
_BARE_INT_KEY = re.compile(r'([{,]\s*)(-?\d+)(\s*:)')
_BAD_DOCUMENT = (ValueError, TypeError, AttributeError, KeyError, UnicodeDecodeError)


def _backup(path: Path) -> Path:
    return path.with_name(path.name + ".bak")


def _read_json(path: Path):
    """The document at ``path``; None when absent or empty. Raises OSError or ValueError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    if not text.strip():
        return None
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(_BARE_INT_KEY.sub(r'\1"\2"\3', text))


def load_json_document(path: Path, convert: Callable = lambda doc: doc):
    """``convert`` of the JSON document at ``path`` (None if neither it nor its .bak
    exists). A document that cannot be read, parsed or converted (``convert`` raising
    ValueError, TypeError, AttributeError or KeyError) is replaced by its .bak, said in
    one WARNING; if that fails too, StoreError names both problems."""
    problems = []
    for candidate in (path, _backup(path)):
        try:
            doc = _read_json(candidate)
            if doc is None:
                continue
            value = convert(doc)
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append(f"{str(candidate)!r} cannot be read ({exc.strerror or exc})")
            continue
        except _BAD_DOCUMENT as exc:
            problems.append(f"{str(candidate)!r} is not a valid document ({exc})")
            continue
        if candidate != path:
            why = problems[0] if problems else f"{str(path)!r} is missing or empty"
            log.warning("%s; using its backup %s", why, candidate.name)
        return value
    if problems:
        raise StoreError("; ".join(problems) + ("" if len(problems) > 1 else " and it has no usable backup") +
                         "; fix or remove it")
    return None


def dump_json_document(path: Path, obj, *, durable: bool = True) -> None:
    """Write ``obj`` to ``path`` atomically, the previous version kept as the .bak."""
    atomic_write(path, json.dumps(obj, indent=2, sort_keys=False).encode("utf-8") + b"\n", durable=durable,
                 backup=_backup(path))


def _table(doc) -> dict:
    if not isinstance(doc, dict) or not isinstance(doc.get("offsetTable", {}), dict):
        raise ValueError("it has no offsetTable object")
    return doc.get("offsetTable", {})


class ConsumerOffsets:
    """"topic@group" -> {queue id: next offset to consume}, as the broker committed them."""

    FILE = "consumerOffset.json"

    def __init__(self) -> None:
        self.table: dict[str, dict[int, int]] = {}
        self.dirty = False

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> bool:
        """True when the offset changed. (``in`` and ``[]``: every commit.)"""
        key, table = f"{topic}@{group}", self.table
        if key in table:
            per = table[key]
        else:
            per = table[key] = {}
        if queue_id not in per or per[queue_id] != offset:
            per[queue_id] = offset
            self.dirty = True
            return True
        return False

    def replace(self, group: str, topic: str, queue_id: int, offset: int) -> int | None:
        """Commit ``offset``; the offset it replaced (-1: none), None when it was already
        this one. (One look-up for a caller that counts how far a commit moved.)"""
        key, table = f"{topic}@{group}", self.table
        if key in table:
            per = table[key]
        else:
            per = table[key] = {}
        before = per[queue_id] if queue_id in per else -1
        if before == offset:
            return None
        per[queue_id] = offset
        self.dirty = True
        return before

    def query(self, group: str, topic: str, queue_id: int) -> int:
        per = self.table.get(f"{topic}@{group}")
        if per is None:
            return -1
        return per.get(queue_id, -1)

    def delete(self, group: str, topic: str) -> bool:
        """Forget the group's offsets on the topic (a deleted subscription); True if it had some."""
        if self.table.pop(f"{topic}@{group}", None) is None:
            return False
        self.dirty = True
        return True

    def snapshot(self) -> dict[str, dict[int, int]]:
        return {key: dict(per) for key, per in self.table.items()}

    def load(self, config_dir: Path) -> None:
        table = load_json_document(config_dir / self.FILE, lambda doc: {
            str(key): {int(q): int(o) for q, o in per.items()} for key, per in _table(doc).items()})
        self.table = table or {}
        self.dirty = False

    def save(self, config_dir: Path, *, durable: bool = True) -> None:
        doc = {"offsetTable": {key: {str(q): o for q, o in sorted(per.items())}
                               for key, per in self.table.items()}}
        dump_json_document(config_dir / self.FILE, doc, durable=durable)
        self.dirty = False


class DelayOffsets:
    """Delay level -> next schedule-queue offset to deliver (ScheduleMessageService)."""

    FILE = "delayOffset.json"

    def __init__(self) -> None:
        self.table: dict[int, int] = {}
        self.dirty = False

    def replace(self, table: dict[int, int]) -> None:
        new = {int(level): int(offset) for level, offset in table.items()}
        if new != self.table:
            self.table = new
            self.dirty = True

    def load(self, config_dir: Path) -> None:
        table = load_json_document(config_dir / self.FILE, lambda doc: {
            int(level): int(offset) for level, offset in _table(doc).items()})
        self.table = table or {}
        self.dirty = False

    def save(self, config_dir: Path, *, durable: bool = True) -> None:
        doc = {"offsetTable": {str(level): offset for level, offset in sorted(self.table.items())}}
        dump_json_document(config_dir / self.FILE, doc, durable=durable)
        self.dirty = False
