"""Errors of the client SDK, split the h11 way: local (you misused the API or the
client is in the wrong state) versus remote (the broker answered with an error code).

- ``MQClientError``     RocketMQ's MQClientException: bad input, no route, closed client.
- ``MQBrokerError``     RocketMQ's MQBrokerException: the broker answered ``code`` with ``remark``.
- ``RemotingError``     the transport failed (closed connection, timeout); RemotingException.
- ``ListenerResultError`` a listener returned something that is not a consume status.
"""
from __future__ import annotations

__all__ = [
    "MQClientError",
    "MQBrokerError", "ServerClockError",
    "RemotingError",
    "RemotingTimeoutError",
    "RemotingConnectError",
    "ListenerResultError",
]


class MQClientError(Exception):
    """A local error (RocketMQ's MQClientException). ``code`` is a response code when
    the error wraps a broker answer, else -1."""

    def __init__(self, message: str, code: int = -1) -> None:
        super().__init__(message)
        self.code = code


class MQBrokerError(MQClientError):
    """The broker answered with an error code (RocketMQ's MQBrokerException).

    ``code`` is the ResponseCode number, ``code_name`` its name (``TOPIC_NOT_EXIST``),
    ``remark`` the broker's text and ``broker_addr`` who said it."""

    def __init__(self, code: int, remark: str | None, broker_addr: str | None = None,
                 request: str | None = None) -> None:
        self.remark = remark
        self.broker_addr = broker_addr
        self.code_name = _code_name(code)
        context = ", ".join(part for part in (f"broker {broker_addr}" if broker_addr else "",
                                              f"request {request}" if request else "") if part)
        super().__init__(f"CODE: {code} ({self.code_name}) DESC: {remark}" + (f" ({context})" if context else ""),
                         code)


class ServerClockError(MQBrokerError):
    """``advance_server_clock`` on a server whose time is not ours to move: it runs on
    the real clock (``serve`` without ``--clock virtual``)."""

    def __init__(self, code: int, remark: str | None, broker_addr: str) -> None:
        MQBrokerError.__init__(self, code, remark, broker_addr, "EMULATOR_CLOCK_ADVANCE")
        self.args = (f"cannot move the clock of {broker_addr}: {remark}", code)

    def __str__(self) -> str:
        return self.args[0]


class RemotingError(MQClientError):
    """The transport failed: the connection is closed or broken (RemotingException)."""


class RemotingTimeoutError(RemotingError):
    """No response within the request's timeout (RemotingTimeoutException)."""


class RemotingConnectError(RemotingError):
    """The connection could not be made or is already closed (RemotingConnectException)."""


class ListenerResultError(TypeError):
    """A message listener returned something that is not a consume status.

    RocketMQ quietly treats a null result as RECONSUME_LATER (concurrently) or
    SUSPEND_CURRENT_QUEUE_A_MOMENT (orderly). This SDK does the same so the broker-side
    state stays exactly RocketMQ's, and in strict mode also raises this error from the
    ``run_until_idle()`` / ``advance()`` call that ran the listener, so the bug is seen."""


def _code_name(code: int) -> str:
    from rocketmq_emulator.broker.fronts.remoting.protocol import ResponseCode

    try:
        return ResponseCode(code).name
    except ValueError:
        return str(code)
