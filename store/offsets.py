"""Consumer offsets (config/consumerOffset.json) and delay offsets (config/delayOffset.json).

Both are small tables kept in memory and written whole, atomically (temporary file +
rename), at flush when they changed. The documents are upstream's:
    {"offsetTable": {"topic@group": {"0": 12, "1": 4}}}
    {"offsetTable": {"1": 0, "3": 7}}
Upstream writes them with fastjson, which leaves integer keys unquoted ({1:0}); that is
not JSON, so the loader also accepts it, and a real broker's files can be read.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from .errors import StoreError
from .fsutil import atomic_write

__all__ = ["ConsumerOffsets", "DelayOffsets", "load_json_document", "dump_json_document"]

# an unquoted integer key after "{" or ",": fastjson's map keys
_BARE_INT_KEY = re.compile(r'([{,]\s*)(-?\d+)(\s*:)')


def load_json_document(path: Path):
    """The JSON document at ``path``, None if absent. Raises StoreError if unreadable."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StoreError(f"cannot read {str(path)!r}: {exc}") from exc
    try:
        return json.loads(text)
    except ValueError:
        try:
            return json.loads(_BARE_INT_KEY.sub(r'\1"\2"\3', text))
        except ValueError as exc:
            raise StoreError(f"{str(path)!r} is not valid JSON ({exc}); fix or remove it") from None


def dump_json_document(path: Path, obj, *, durable: bool = True) -> None:
    atomic_write(path, json.dumps(obj, indent=2, sort_keys=False).encode("utf-8") + b"\n", durable=durable)


def _table(doc, path: Path) -> dict:
    if doc is None:
        return {}
    if not isinstance(doc, dict) or not isinstance(doc.get("offsetTable", {}), dict):
        raise StoreError(f"{str(path)!r} has no offsetTable object")
    return doc.get("offsetTable", {})


class ConsumerOffsets:
    """"topic@group" -> {queue id: next offset to consume}, as the broker committed them."""

    FILE = "consumerOffset.json"

    def __init__(self) -> None:
        self.table: dict[str, dict[int, int]] = {}
        self.dirty = False

    def commit(self, group: str, topic: str, queue_id: int, offset: int) -> None:
        per = self.table.setdefault(f"{topic}@{group}", {})
        if per.get(queue_id) != offset:
            per[queue_id] = offset
            self.dirty = True

    def query(self, group: str, topic: str, queue_id: int) -> int:
        per = self.table.get(f"{topic}@{group}")
        if per is None:
            return -1
        return per.get(queue_id, -1)

    def snapshot(self) -> dict[str, dict[int, int]]:
        return {key: dict(per) for key, per in self.table.items()}

    def load(self, config_dir: Path) -> None:
        path = config_dir / self.FILE
        try:
            self.table = {str(key): {int(q): int(o) for q, o in per.items()}
                          for key, per in _table(load_json_document(path), path).items()}
        except (AttributeError, TypeError, ValueError) as exc:
            raise StoreError(f"{str(path)!r}: bad offsetTable ({exc})") from None
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
        path = config_dir / self.FILE
        try:
            self.table = {int(level): int(offset)
                          for level, offset in _table(load_json_document(path), path).items()}
        except (TypeError, ValueError) as exc:
            raise StoreError(f"{str(path)!r}: bad offsetTable ({exc})") from None
        self.dirty = False

    def save(self, config_dir: Path, *, durable: bool = True) -> None:
        doc = {"offsetTable": {str(level): offset for level, offset in sorted(self.table.items())}}
        dump_json_document(config_dir / self.FILE, doc, durable=durable)
        self.dirty = False
