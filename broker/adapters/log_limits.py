"""serve's log on stderr: one line per record, whatever a client sent, and bounded under a
flood (issue 34, item 5).

* ``EscapingFormatter`` writes each message with its control characters escaped
  (log_text.printable), so text a client chose — a topic, a group, a header a library
  logs — cannot end the line and forge another. A traceback (a bug of ours) stays as
  Python prints it.
* ``RepeatLimiter`` (a handler filter) passes at most ``burst`` records of one kind (the
  same logger, level and message template) per ``window_s``; the rest of the window's
  are counted, and told in one line, "suppressed N similar lines ...", when the window
  has passed (``flush``, which serve calls every window, or the next record of the
  kind). DEBUG lines are never held back: they are asked for.
"""
from __future__ import annotations

import logging
import time

from ..log_text import printable

__all__ = ["EscapingFormatter", "RepeatLimiter", "install"]


class EscapingFormatter(logging.Formatter):
    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = printable(record.message, limit=None)
        return super().formatMessage(record)


class _Kind:
    __slots__ = ("started", "passed", "suppressed", "example", "record")

    def __init__(self, started: float) -> None:
        self.started = started
        self.passed = 0
        self.suppressed = 0
        self.example = ""
        self.record: logging.LogRecord | None = None


class RepeatLimiter(logging.Filter):
    def __init__(self, handler: logging.Handler, burst: int = 5, window_s: float = 1.0) -> None:
        super().__init__()
        self.handler = handler
        self.burst = burst
        self.window_s = window_s
        self._kinds: dict[tuple, _Kind] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.INFO or getattr(record, "repeat_summary", False):
            return True
        key = (record.name, record.levelno, record.msg if isinstance(record.msg, str) else type(record.msg))
        kind = self._kinds.get(key)
        now = record.created
        if kind is None:
            kind = self._kinds[key] = _Kind(now)
        elif now - kind.started >= self.window_s:
            self._summarize(kind)
            kind.started, kind.passed = now, 0
        if kind.passed < self.burst:
            kind.passed += 1
            return True
        if not kind.suppressed:
            kind.example, kind.record = record.getMessage(), record
        kind.suppressed += 1
        return False

    def flush(self, now: float | None = None) -> None:
        """Tell the suppressed lines of every kind whose window has passed; forget kinds
        quiet for a window (their table stays as small as what is logging now)."""
        now = time.time() if now is None else now
        for key, kind in list(self._kinds.items()):
            if now - kind.started >= self.window_s:
                if kind.suppressed:
                    self._summarize(kind)
                    kind.started, kind.passed = now, 0
                else:
                    del self._kinds[key]

    def _summarize(self, kind: _Kind) -> None:
        if not kind.suppressed:
            return
        like = kind.record
        summary = logging.LogRecord(like.name, like.levelno, like.pathname, like.lineno,
                                    "suppressed %d similar lines (more than %d per %g s), the first of them: %s",
                                    (kind.suppressed, self.burst, self.window_s, printable(kind.example, limit=200)),
                                    None)
        summary.repeat_summary = True
        kind.suppressed, kind.record, kind.example = 0, None, ""
        self.handler.handle(summary)


def install(handler: logging.Handler, fmt: str, burst: int = 5, window_s: float = 1.0) -> RepeatLimiter:
    """Give serve's stderr handler the escaping format and a repeat limiter (returned:
    serve flushes it once per window)."""
    handler.setFormatter(EscapingFormatter(fmt))
    limiter = RepeatLimiter(handler, burst, window_s)
    handler.addFilter(limiter)
    return limiter
