"""The errors of spark_analytics: each carries one line meant for a person."""
from __future__ import annotations

__all__ = ["AnalyticsError", "SnapshotError"]


class AnalyticsError(Exception):
    """Something the user can fix (bad path, bad option); str() is one readable line."""


class SnapshotError(AnalyticsError):
    """A snapshot cannot be taken or read: missing directory, not a store, bad manifest."""
