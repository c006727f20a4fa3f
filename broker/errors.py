"""Errors of the broker package. Wire-visible failures are response codes, not these."""
from __future__ import annotations

__all__ = ["BrokerError", "ConfigError", "ClockError"]


class BrokerError(Exception):
    """A broker misuse by the embedding program (local error)."""


class ConfigError(BrokerError, ValueError):
    """A bad broker.conf key or value; the message names the key."""


class ClockError(BrokerError):
    """Clock control asked of a broker that runs on the real clock."""
