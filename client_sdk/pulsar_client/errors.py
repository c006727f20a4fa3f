"""The Pulsar client's exceptions: one base, the broker's error codes by name."""
from __future__ import annotations

import rocketmq_emulator.broker.fronts.pulsar.schema as s

__all__ = ["PulsarClientError", "PulsarTimeout", "BrokerError", "server_error"]


class PulsarClientError(Exception):
    """Something the client could not do; the message says what, in one line."""


class PulsarTimeout(PulsarClientError):
    """Nothing came within the time given (``receive``, a request)."""


class BrokerError(PulsarClientError):
    """The broker refused: ``code`` is its ServerError name (ConsumerBusy, TopicNotFound, ...)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.code = code


_NAMES = {v: k for k, v in s.SERVER_ERRORS.items()}


def server_error(code: int, message: str) -> BrokerError:
    return BrokerError(_NAMES.get(code, f"error {code}"), message)
