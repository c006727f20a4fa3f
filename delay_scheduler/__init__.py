"""Time for the emulator: one Clock, RocketMQ delay levels, the per-level scheduler, and
an in-order walk of timer heaps.

Nothing here does I/O or imports another package of the project.
"""
from .clock import Clock, SystemClock, VirtualClock
from .levels import (
    DelayLevelError,
    DelayLevels,
    format_duration,
    parse_duration,
)
from .scheduler import TIMER_LANE, DelayScheduler
from .timer_heap import ascending

__all__ = [
    "Clock",
    "SystemClock",
    "VirtualClock",
    "DelayLevelError",
    "DelayLevels",
    "DelayScheduler",
    "TIMER_LANE",
    "ascending",
    "format_duration",
    "parse_duration",
]
