"""Fault rules on the 5.x wire (issue 38): which call is which operation, and how each
action looks to a 5.x client.

* refuse — the reply's status carries the rule's code, else the operation's default
  (INTERNAL_SERVER_ERROR, which the clients retry; TOPIC_NOT_FOUND for a route). A
  ReceiveMessage answers it as the stream's one status; a Telemetry Settings as a
  TelemetryCommand with the status and no settings (what a proxy answers when it cannot
  take them);
* drop — no reply: the call waits out the client's deadline and ends DEADLINE_EXCEEDED
  (a send with ``stored`` is stored first: the client's retry makes a duplicate; a
  receive pops nothing; a Settings is neither taken nor answered);
* delay — the reply comes ``delay_ms`` later on the broker's clock (a send is stored at
  once and acknowledged late, as a slow broker does; a receive pops at once and answers
  late, so the invisible time runs from the pop). The timer is set when the rule fires,
  under the core's lock: a test that sees the hit and moves the clock always moves it
  past the answer's due time. An answer not due before the client's deadline is lost;
* duplicate — a receive hands each message over twice in its stream, with the same
  receipt handle (the store keeps one record; the second ack of it is a stale handle);
* hold — no delivery to the matched group while the rule is active (FaultSet.holds):
  the receive answers as with nothing to deliver; a waiting long poll looks again every
  ``HOLD_RECHECK_S`` so deliveries resume soon after the rule is removed or its window
  ends (neither is an event the poll could wait on).
"""
from __future__ import annotations

import asyncio

import grpc

from ...faults.door import FaultOutcome
from ...faults.rules import Operation, register_error_codes
from .convert import pb, status

__all__ = ["DIALECT", "operation_of", "settings_about", "refusal", "clock_timer", "wait_for_timer",
           "wait_out_deadline", "HOLD_RECHECK_S"]

DIALECT = "5.x"             # what fault rules call this wire's clients

HOLD_RECHECK_S = 0.1

_DEFAULT_REFUSAL = {op: pb.INTERNAL_SERVER_ERROR for op in Operation}
_DEFAULT_REFUSAL[Operation.ROUTE] = pb.TOPIC_NOT_FOUND


def operation_of(method: str, request) -> tuple[Operation, str | None, str | None] | None:
    """(operation, topic, group) of a call a rule can match, None for the others."""
    if method == "SendMessage":
        return Operation.SEND, (request.messages[0].topic.name if request.messages else None), None
    if method == "ReceiveMessage":
        return Operation.PULL, request.message_queue.topic.name or None, request.group.name or None
    if method in ("QueryRoute", "QueryAssignment"):
        return Operation.ROUTE, request.topic.name or None, getattr(request, "group", None) and request.group.name
    if method == "AckMessage":
        return Operation.ACK, request.topic.name or None, request.group.name or None
    if method in ("ChangeInvisibleDuration", "ForwardMessageToDeadLetterQueue"):
        return Operation.SEND_BACK, request.topic.name or None, request.group.name or None
    if method == "Heartbeat":
        return Operation.HEARTBEAT, None, request.group.name or None
    return None


def settings_about(settings) -> tuple[str | None, str | None]:
    """(topic, group) a Telemetry Settings registers: a consumer's group and first
    subscribed topic, a producer's first published topic."""
    if settings.HasField("subscription"):
        sub = settings.subscription
        return (sub.subscriptions[0].topic.name or None if sub.subscriptions else None), sub.group.name or None
    topics = settings.publishing.topics
    return (topics[0].name or None if topics else None), None


def status_code(error) -> int | None:
    """A 5.x status code by name (INTERNAL_SERVER_ERROR) or number, None for neither."""
    if isinstance(error, int) or str(error).isdigit():
        return int(error)
    try:
        return pb.Code.Value(str(error))
    except ValueError:
        return None


register_error_codes(DIALECT, status_code)


def refusal(outcome: FaultOutcome):
    """The status a refused call answers with. An ``error`` that is no 5.x code (a rule
    written for another dialect's wire, say SYSTEM_ERROR) refuses with the default and
    says so in the status's message."""
    code, why = outcome.code, ""
    if outcome.error is not None and code is None:
        why = f"; {outcome.error} is not a 5.x status code"
    if code is None:
        code = _DEFAULT_REFUSAL[outcome.operation]
    return status(code, f"refused by fault rule {outcome.rule_id} ({outcome.operation.value}{why})")


def clock_timer(core, delay_ms: int) -> asyncio.Event:
    """An event of the running loop, set when ``delay_ms`` have passed on the broker's
    clock (virtual: when a `clock advance` moves it past). Call it under the core's lock,
    on the listener's loop; then re-arm the listener's tick timer (``after_activity``)."""
    loop = asyncio.get_running_loop()
    done = asyncio.Event()
    core.call_later(delay_ms, lambda: loop.call_soon_threadsafe(done.set))
    return done


async def wait_for_timer(done: asyncio.Event, context) -> bool:
    """Until ``done`` is set (True) or the client's deadline is near (False)."""
    remaining = context.time_remaining()
    try:
        await asyncio.wait_for(done.wait(), None if remaining is None else max(remaining - 0.05, 0))
    except asyncio.TimeoutError:
        return False
    return True


async def wait_out_deadline(context) -> None:
    """No answer: the call ends when the client's deadline does."""
    remaining = context.time_remaining()
    await asyncio.sleep(30.0 if remaining is None else remaining + 0.05)
    await context.abort(grpc.StatusCode.DEADLINE_EXCEEDED, "dropped by a fault rule")
