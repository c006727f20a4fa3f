"""RocketMQ delay tables and duration strings.

A table gives the delay of each level, level = index + 1. It is built from a
``messageDelayLevel`` string by the store's config (store/config.py:
``parse_delay_table``, ``DEFAULT_MESSAGE_DELAY_LEVEL``, the one definition of the
default table — this package imports nothing of the project, so the broker hands the
parsed table in). The default has 18 levels; ``CONSUMER_SEND_MSG_BACK`` with delayLevel
0 picks level ``3 + reconsumeTimes``, so retries use levels 3..18.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "DelayLevelError",
    "DelayLevels",
    "parse_duration",
    "format_duration",
]

_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
# Compound durations such as "1h30m" or "2h 5m 10s" are accepted by parse_duration.
_PART = re.compile(r"(\d+)\s*(ms|s|m|h|d)")


class DelayLevelError(ValueError):
    """A duration string that cannot be parsed, or an unknown level."""


_MAX_DIGITS = 19                 # a Java long's; (Python refuses to read more than 4300 at all)


def parse_duration(text: str) -> int:
    """Parse ``500ms``, ``10s``, ``2h``, ``1d`` or compounds like ``1h30m`` into ms."""
    if not isinstance(text, str) or not text.strip():
        raise DelayLevelError(f"empty duration {text!r}; expected e.g. 500ms, 10s, 2h")
    shown = repr(text) if len(text) <= 40 else f"{text[:40]!r}...({len(text)} characters)"
    compact = text.replace(" ", "")
    pos = 0
    total = 0
    for m in _PART.finditer(compact):
        if m.start() != pos:
            break
        if len(m.group(1)) > _MAX_DIGITS:
            raise DelayLevelError(f"bad duration {shown}: a number of more than {_MAX_DIGITS} digits")
        total += int(m.group(1)) * _UNIT_MS[m.group(2)]
        pos = m.end()
    if pos != len(compact) or pos == 0:
        raise DelayLevelError(f"bad duration {shown}; expected e.g. 500ms, 10s, 5m, 2h, 1d")
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
    """An immutable delay table: ``delay_ms(level)`` for level 1..max_level, from the
    ms of each level (``DelayLevels(parse_delay_table("1s 5s"))``)."""

    delays_ms: tuple[int, ...]

    def __post_init__(self) -> None:
        if not self.delays_ms or any(not isinstance(d, int) or d < 0 for d in self.delays_ms):
            raise DelayLevelError(f"a delay table needs at least one level of >= 0 ms, got {self.delays_ms!r}")

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
