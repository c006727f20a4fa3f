"""Fault rules on the 5.x wire (issue 38): which call is which operation, and how each
action looks to a 5.x client.

* refuse — the reply's status carries the rule's code, else the operation's default
  (INTERNAL_SERVER_ERROR, which the clients retry; TOPIC_NOT_FOUND for a route);
* drop — no reply: the call waits out the client's deadline and ends DEADLINE_EXCEEDED
  (a send with ``stored`` is stored first: the client's retry makes a duplicate);
* delay — the reply comes ``delay_ms`` later on the broker's clock (a send is stored at
  once and acknowledged late, as a slow broker does).
"""
from __future__ import annotations

import asyncio

import grpc

from ...faults import Operation
from .convert import pb, status

__all__ = ["operation_of", "refusal", "wait_on_clock", "wait_out_deadline"]

_DEFAULT_REFUSAL = {op: pb.INTERNAL_SERVER_ERROR for op in Operation}
_DEFAULT_REFUSAL[Operation.ROUTE] = pb.TOPIC_NOT_FOUND


def operation_of(method: str, request) -> tuple[Operation, str | None, str | None] | None:
    """(operation, topic, group) of a unary call a rule can match, None for the others."""
    if method == "SendMessage":
        return Operation.SEND, (request.messages[0].topic.name if request.messages else None), None
    if method in ("QueryRoute", "QueryAssignment"):
        return Operation.ROUTE, request.topic.name or None, getattr(request, "group", None) and request.group.name
    if method == "AckMessage":
        return Operation.ACK, request.topic.name or None, request.group.name or None
    if method in ("ChangeInvisibleDuration", "ForwardMessageToDeadLetterQueue"):
        return Operation.SEND_BACK, request.topic.name or None, request.group.name or None
    if method == "Heartbeat":
        return Operation.HEARTBEAT, None, request.group.name or None
    return None


def refusal(rule):
    """The status a refused call answers with."""
    code = rule.error
    if code is None:
        code = _DEFAULT_REFUSAL[rule.operation]
    elif not isinstance(code, int):
        code = int(code) if str(code).isdigit() else pb.Code.Value(str(code))
    return status(code, f"refused by fault rule {rule.id} ({rule.operation.value})")


async def wait_on_clock(core, delay_ms: int, context) -> None:
    """Until ``delay_ms`` have passed on the broker's clock (virtual: until a `clock
    advance` moves it), or the client's deadline is near."""
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    core.call_later(delay_ms, lambda: loop.call_soon_threadsafe(done.set))
    remaining = context.time_remaining()
    try:
        await asyncio.wait_for(done.wait(), None if remaining is None else max(remaining - 0.05, 0))
    except asyncio.TimeoutError:
        pass


async def wait_out_deadline(context) -> None:
    """No answer: the call ends when the client's deadline does."""
    remaining = context.time_remaining()
    await asyncio.sleep(30.0 if remaining is None else remaining + 0.05)
    await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "dropped by a fault rule")


