"""The errors of spark_analytics: each carries one line meant for a person, and the
exit code the command ends with (2: bad usage or input; 1: a failure while running)."""
from __future__ import annotations

from rocketmq_emulator.store.errors import SnapshotError   # (the store's: a snapshot is its format)

__all__ = ["AnalyticsError", "SnapshotError", "SparkStartError"]


class AnalyticsError(Exception):
    """Something the user can fix (bad path, bad option); str() is one readable line."""

    exit_code = 2


class SparkStartError(AnalyticsError):
    """Spark did not start: its JVM exited, or the master did not take the application."""

    exit_code = 1
