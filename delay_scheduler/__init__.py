"""Time for the emulator: one Clock, RocketMQ delay levels, and the per-level scheduler.

Nothing here does I/O or imports another package of the project.
"""
from .clock import Clock, SystemClock, VirtualClock
from .levels import (
    DEFAULT_MESSAGE_DELAY_LEVEL,
    DelayLevelError,
    DelayLevels,
    format_duration,
    parse_duration,
)
from .scheduler import DelayScheduler

__all__ = [
    "Clock",
    "SystemClock",
    "VirtualClock",
    "DEFAULT_MESSAGE_DELAY_LEVEL",
    "DelayLevelError",
    "DelayLevels",
    "DelayScheduler",
    "format_duration",
    "parse_duration",
]
