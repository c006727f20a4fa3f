"""Errors of the broker package. Wire-visible failures are response codes, not these."""
from __future__ import annotations

__all__ = ["BrokerError", "ConfigError", "ClockError", "RequestRefused"]


class BrokerError(Exception):
    """A broker misuse by the embedding program (local error)."""


class ConfigError(BrokerError, ValueError):
    """A bad broker.conf key or value; the message names the key."""


class ClockError(BrokerError):
    """Clock control asked of a broker that runs on the real clock."""


class RequestRefused(ValueError):
    """The peer's request is malformed or not allowed (a body that is not the document
    its operation needs, an illegal name, a setting out of range): each front answers it
    with its dialect's error and the message (4.x: SYSTEM_ERROR with the message as
    remark), logs one line, and serves on; never a traceback. ``code`` is the 4.x
    response code when it is not SYSTEM_ERROR."""

    def __init__(self, remark: str, code: int = 1) -> None:
        super().__init__(remark)
        self.code = code
