"""RocketMQ ``messageDelayLevel`` tables and duration strings.

A table is a space-separated list of durations with a one-letter unit (s, m, h, d),
level = index + 1. The default has 18 levels; ``CONSUMER_SEND_MSG_BACK`` with
delayLevel 0 picks level ``3 + reconsumeTimes``, so retries use levels 3..18.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "DEFAULT_MESSAGE_DELAY_LEVEL",
    "DelayLevelError",
    "DelayLevels",
    "parse_duration",
    "format_duration",
]

DEFAULT_MESSAGE_DELAY_LEVEL = "1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h"

_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
_DURATION = re.compile(r"^\s*(\d+)\s*(ms|s|m|h|d)\s*$")
# Compound durations such as "1h30m" or "2h 5m 10s" are accepted by parse_duration.
_PART = re.compile(r"(\d+)\s*(ms|s|m|h|d)")


class DelayLevelError(ValueError):
    """A delay table or duration string that cannot be parsed, or an unknown level."""


def parse_duration(text: str) -> int:
    """Parse ``500ms``, ``10s``, ``2h``, ``1d`` or compounds like ``1h30m`` into ms."""
    if not isinstance(text, str) or not text.strip():
        raise DelayLevelError(f"empty duration {text!r}; expected e.g. 500ms, 10s, 2h")
    compact = text.replace(" ", "")
    pos = 0
    total = 0
    for m in _PART.finditer(compact):
        if m.start() != pos:
            break
        total += int(m.group(1)) * _UNIT_MS[m.group(2)]
        pos = m.end()
    if pos != len(compact) or pos == 0:
        raise DelayLevelError(f"bad duration {text!r}; expected e.g. 500ms, 10s, 5m, 2h, 1d")
    return total


def format_duration(ms: int) -> str:
    """The shortest exact RocketMQ-style spelling: 7200000 → '2h', 1500 → '1500ms'."""
    for unit in ("d", "h", "m", "s"):
        size = _UNIT_MS[unit]
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


@dataclass(frozen=True, slots=True)
class DelayLevels:
    """An immutable delay table: ``delay_ms(level)`` for level 1..max_level."""

    delays_ms: tuple[int, ...]

    @classmethod
    def parse(cls, text: str = DEFAULT_MESSAGE_DELAY_LEVEL) -> "DelayLevels":
        """Parse a ``messageDelayLevel`` string the way ScheduleMessageService does.

        Each entry is a number and one unit letter (s, m, h, d); ``ms`` is also
        accepted here for short test tables.
        """
        if not isinstance(text, str) or not text.split():
            raise DelayLevelError("messageDelayLevel is empty; expected e.g. '1s 5s 10s'")
        delays = []
        for i, token in enumerate(text.split(), start=1):
            m = _DURATION.match(token)
            if not m:
                raise DelayLevelError(
                    f"messageDelayLevel entry {i} {token!r} is not <number><s|m|h|d>"
                )
            delays.append(int(m.group(1)) * _UNIT_MS[m.group(2)])
        return cls(tuple(delays))

    @classmethod
    def default(cls) -> "DelayLevels":
        return cls.parse(DEFAULT_MESSAGE_DELAY_LEVEL)

    @property
    def max_level(self) -> int:
        return len(self.delays_ms)

    def delay_ms(self, level: int) -> int:
        """Delay of ``level`` (1-based). Raises DelayLevelError for an unknown level."""
        if not 1 <= level <= len(self.delays_ms):
            raise DelayLevelError(f"unknown delay level {level}; this table has levels 1..{self.max_level}")
        return self.delays_ms[level - 1]

    def clamp(self, level: int) -> int:
        """A level above the table behaves like the last level (CommitLog rewrites it)."""
        return self.max_level if level > self.max_level else level

    def deliver_timestamp(self, level: int, store_ms: int) -> int:
        """``computeDeliverTimestamp``: an unknown level gives store time + 1000 ms."""
        if 1 <= level <= len(self.delays_ms):
            return store_ms + self.delays_ms[level - 1]
        return store_ms + 1000

    @staticmethod
    def queue_id(level: int) -> int:
        """SCHEDULE_TOPIC_XXXX queue of a level (``delayLevel2QueueId``)."""
        return level - 1

    @staticmethod
    def level_of_queue(queue_id: int) -> int:
        return queue_id + 1

    def as_config(self) -> str:
        return " ".join(format_duration(d) for d in self.delays_ms)
