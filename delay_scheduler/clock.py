"""The one Clock of a broker.

The core only *reads* a clock (``now_ms()``); drivers move it. A ``VirtualClock`` is
moved explicitly by tests, hypothesis rules and the simulator, which is what lets a
16-retry ladder of about 4 h 46 min run in milliseconds.
"""
from __future__ import annotations

import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "SystemClock", "VirtualClock"]


@runtime_checkable
class Clock(Protocol):
    """Milliseconds since the Unix epoch, as RocketMQ stores timestamps."""

    def now_ms(self) -> int: ...

    @property
    def is_virtual(self) -> bool: ...


class SystemClock:
    """The wall clock. Used by ``serve --clock real``."""

    is_virtual = False

    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000

    def __repr__(self) -> str:
        return "SystemClock()"


class VirtualClock:
    """A clock that only moves when told to. Never goes backwards.

    The default start, 2024-01-01T00:00:00Z, keeps timestamps realistic (RocketMQ's
    UNIQ_KEY encodes time since the start of the month) and runs reproducible.
    """

    is_virtual = True
    DEFAULT_START_MS = 1_704_067_200_000

    def __init__(self, start_ms: int = DEFAULT_START_MS) -> None:
        if start_ms < 0:
            raise ValueError(f"start_ms must be >= 0, got {start_ms}")
        self._now = int(start_ms)

    def now_ms(self) -> int:
        return self._now

    def advance(self, ms: int) -> int:
        """Move forward by ``ms`` milliseconds; returns the new time."""
        if ms < 0:
            raise ValueError(f"a clock cannot go backwards: advance({ms})")
        self._now += int(ms)
        return self._now

    def advance_to(self, t_ms: int) -> int:
        """Move to ``t_ms`` if it lies ahead; a time in the past is a no-op."""
        if t_ms > self._now:
            self._now = int(t_ms)
        return self._now

    def __repr__(self) -> str:
        return f"VirtualClock(now_ms={self._now})"
