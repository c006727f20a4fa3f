"""Changes to a config document between two writes of it, as an append-only journal.

Theory of operation: a broker changes its topic and group configs one entry at a time
(a group auto-created by a poll, a %RETRY% topic made by a heartbeat). Rewriting the
whole document for each change costs O(entries) per change, O(N^2) for N new groups.
Instead each change is appended to ``config/<name>.changes`` as one JSON line of
operations on the document — ``["set", [key, ...], value]`` or ``["del", [key, ...]]``
— and the document itself is rewritten at the broker's flush (``save_config``), which
empties the journal. A line is in the OS before the change is answered (as a put's
record is), so a killed process loses no answered change; reading the document
(``load_config``) applies the journal's lines in order. Replaying a line twice gives
the same document (a crash between the rewrite and the journal's removal does that).
A line cut short by a crash is the last one, and was never answered: it is ignored.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["apply_changes", "append_changes", "read_changes", "JOURNAL_SUFFIX"]

JOURNAL_SUFFIX = ".changes"


def apply_changes(doc: dict | None, lines) -> dict | None:
    """``doc`` (changed in place; a new dict when None) with each line's operations
    applied; None when there is neither."""
    for ops in lines:
        if doc is None:
            doc = {}
        for op in ops:
            kind, path = op[0], op[1]
            target = doc
            for key in path[:-1]:
                nxt = target.get(key)
                if not isinstance(nxt, dict):
                    nxt = target[key] = {}
                target = nxt
            if kind == "set":
                target[path[-1]] = op[2]
            else:
                target.pop(path[-1], None)
    return doc


def append_changes(path: Path, ops: list, *, durable: bool) -> None:
    """One line for ``ops``, appended with one write (fsynced when ``durable``)."""
    line = json.dumps(ops, separators=(",", ":")).encode("utf-8") + b"\n"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        view = memoryview(line)
        while view:
            view = view[os.write(fd, view):]
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)


def read_changes(path: Path) -> tuple[list, str | None]:
    """The journal's lines, and why its last line was ignored (cut short by a crash)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return [], None
    lines, torn = [], None
    raw = data.split(b"\n")
    for i, chunk in enumerate(raw):
        if not chunk:
            continue
        try:
            ops = json.loads(chunk)
            if not isinstance(ops, list) or not all(isinstance(op, list) and len(op) >= 2 and op[0] in ("set", "del")
                                                    and isinstance(op[1], list) and op[1] for op in ops):
                raise ValueError("not a list of set/del operations")
        except ValueError as exc:
            if i >= len(raw) - 2 and not data.endswith(b"\n"):
                torn = f"its last line is incomplete ({exc})"
                break
            raise ValueError(f"line {i + 1} of {path.name} is not a change ({exc})") from None
        lines.append(ops)
    return lines, torn
